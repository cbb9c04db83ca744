// The OpInfo table and the helpers its conformance tests use: every op's entry gives how to build
// it, sample inputs per dtype (broadcast, non-contiguous, zero-size, 0-d), an optional expected
// value, whether it is differentiable and its tolerances. Test suites (tests/cpp/test_opinfo.cpp)
// run every entry against the reference kernel, infer_shape and finite differences; entries are
// added where each op family is tested (HYP_OPINFO). Also: random and strided arrays, and an
// array comparison that names the first mismatch.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "hypatia/core/ndarray.h"
#include "hypatia/graph/graph.h"

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

inline const std::vector<DType> kFloatTypes = {DType::Float32, DType::Float64};
inline const std::vector<DType> kAllNumeric = {DType::Int8,   DType::Int32,   DType::Int64,  DType::UInt8,
                                               DType::UInt32, DType::Float32, DType::Float64};

}  // namespace hypatia::testing
