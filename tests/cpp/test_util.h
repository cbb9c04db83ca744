// Helpers shared by the C++ tests: gtest forms of the testing/ helpers (EXPECT_ALLCLOSE,
// EXPECT_ERROR); random arrays, comparisons and the OpInfo table are in hypatia/testing/opinfo.h.
#pragma once
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "hypatia/hypatia.h"
#include "hypatia/testing/opinfo.h"

namespace hypatia::testing {

/// Whether this binary runs under a sanitizer (the ASan + UBSan and the TSan builds): the heaviest
/// tests run a subset of their cases there, so that CI stays well under its time budget; the
/// Release suite runs every case.
inline constexpr bool kSanitizerBuild =
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
    true;
#else
    false;
#endif

/// Sets a setting (a field of config()) for a scope, and restores it after.
template <class T>
class ScopedSetting {
 public:
  ScopedSetting(T& setting, T value) : setting_(setting), saved_(setting) { setting_ = std::move(value); }
  ~ScopedSetting() { setting_ = saved_; }
  ScopedSetting(const ScopedSetting&) = delete;
  ScopedSetting& operator=(const ScopedSetting&) = delete;

 private:
  T& setting_;
  T saved_;
};

/// Sets config().debug_checks for a scope. The suite runs with it on (every function in DebugMode,
/// checked against the reference kernels); tests of the fast paths that DebugMode replaces (the
/// scalar loop of scan, Function::runner) turn it off.
class DebugChecks : public ScopedSetting<bool> {
 public:
  explicit DebugChecks(bool on) : ScopedSetting<bool>(config().debug_checks, on) {}
};

/// Expects a and b to have the same shape and values within tolerance (compare_arrays).
#define EXPECT_ALLCLOSE(a, b, ...) EXPECT_EQ(::hypatia::testing::compare_arrays(a, b, ##__VA_ARGS__), "")

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

/// Whether the pipeline's phase `phase` has the local rule named `rule`.
inline bool phase_has_rule(const std::string& phase, const std::string& rule) {
  for (const RewritePhase& p : rewrite_phases())
    if (p.name == phase)
      for (const LocalRewrite& rw : p.locals)
        if (rw.name == rule) return true;
  return false;
}

}  // namespace hypatia::testing
