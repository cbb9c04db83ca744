// Highway loops (dynamic dispatch) for the extremes of contiguous float32/float64 runs: the
// reductions' max and min and the first step of argmax and argmin (backends/cpu/reduce_cpu.cpp).
#pragma once
#include <cstdint>

namespace hypatia {

/// The largest (is_max) or smallest of p[0 .. n) when none is NaN; *any_nan says whether one is
/// (the returned value is then meaningless). n >= 0; +-infinity for n == 0.
float simd_extreme(const float* p, int64_t n, bool is_max, bool* any_nan);
double simd_extreme(const double* p, int64_t n, bool is_max, bool* any_nan);

/// The first i in [0, n) with p[i] == value, or with p[i] a NaN when `nan`; n when there is none.
int64_t simd_find_first(const float* p, int64_t n, float value, bool nan);
int64_t simd_find_first(const double* p, int64_t n, double value, bool nan);

}  // namespace hypatia
