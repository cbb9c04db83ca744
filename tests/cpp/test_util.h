// Helpers shared by the C++ tests: random arrays, comparisons, and the OpInfo table.
#pragma once
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "hypatia/hypatia.h"

namespace hypatia::testing {

/// Uniform random array in [lo, hi) of dtype dt (integers are rounded).
NDArray random_array(const Shape& shape, DType dt, double lo = -1.0, double hi = 1.0, uint64_t seed = 0);
/// A non-contiguous array with the same values as random_array(shape...): a strided view of a
/// larger buffer (every other element on the last axis, and the first axis reversed).
NDArray random_strided(const Shape& shape, DType dt, double lo = -1.0, double hi = 1.0, uint64_t seed = 0);
/// Array from a flat list of doubles.
NDArray make_array(const std::vector<double>& values, const Shape& shape, DType dt);

/// Empty string when a and b have the same shape and values within tolerance (NaNs must match,
/// infinities must be equal); else a description of the first mismatch.
std::string compare_arrays(const NDArray& a, const NDArray& b, double rtol = 1e-5, double atol = 1e-8);
#define EXPECT_ALLCLOSE(a, b, ...) EXPECT_EQ(::hypatia::testing::compare_arrays(a, b, ##__VA_ARGS__), "")

/// Default tolerances by dtype.
double default_rtol(DType dt);
double default_atol(DType dt);

/// One sample of inputs for an op.
struct OpSample {
  std::string desc;
  std::vector<NDArray> inputs;
  /// Whether verify_grad should run on this sample (skip where the op is not smooth there).
  bool check_grad = true;
};

/// One entry of the op table: everything the generic conformance tests need.
struct OpInfo {
  std::string name;
  /// Builds the op's output from symbolic inputs (one per sample input).
  std::function<Var(const std::vector<Var>&)> build;
  /// Sample inputs for a dtype: should cover broadcast, non-contiguous, zero-size and 0-d cases.
  std::function<std::vector<OpSample>(DType)> samples;
  std::vector<DType> dtypes;
  /// Optional independent expected value (plain C++); the reference kernel is always compared.
  std::function<NDArray(const std::vector<NDArray>&)> expected;
  bool differentiable = true;
  /// Inputs to differentiate (empty: every float input).
  std::vector<int> grad_inputs;
  double rtol = 0;  // 0: default for the dtype
  double atol = 0;
};

/// The global table; entries are added by HYP_OPINFO in each family's test file.
std::vector<OpInfo>& op_infos();
struct OpInfoRegistrar {
  explicit OpInfoRegistrar(OpInfo info) { op_infos().push_back(std::move(info)); }
};
#define HYP_OPINFO_CONCAT2(a, b) a##b
#define HYP_OPINFO_CONCAT(a, b) HYP_OPINFO_CONCAT2(a, b)
/// Adds an OpInfo to the table: HYP_OPINFO({.name = "add", ...});
#define HYP_OPINFO(...)                                                     \
  static ::hypatia::testing::OpInfoRegistrar HYP_OPINFO_CONCAT(hyp_opinfo_, \
                                                               __LINE__)(::hypatia::testing::OpInfo __VA_ARGS__)

/// Runs `f` and returns the message of the exception of type E it throws (a test failure when it
/// throws another type or nothing).
template <class E, class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "wrong exception type: " << e.what();
    return "";
  }
  ADD_FAILURE() << "no exception";
  return "";
}
/// Expects `stmt` to throw E with `substr` in its message (the message is shown when not).
#define EXPECT_ERROR(E, stmt, substr)                                  \
  do {                                                                 \
    std::string msg_ = ::hypatia::testing::error_of<E>([&] { stmt; }); \
    EXPECT_NE(msg_.find(substr), std::string::npos) << msg_;           \
  } while (0)

inline const std::vector<DType> kFloatTypes = {DType::Float32, DType::Float64};
inline const std::vector<DType> kAllNumeric = {DType::Int8,   DType::Int32,   DType::Int64,  DType::UInt8,
                                               DType::UInt32, DType::Float32, DType::Float64};

}  // namespace hypatia::testing
