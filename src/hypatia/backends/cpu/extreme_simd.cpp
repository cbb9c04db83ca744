// Highway loops for the extremes of contiguous float32/float64 runs (max, min, argmax, argmin),
// compiled for several x86 targets and picked at run time, as elemwise_simd.cpp's: the largest or
// smallest element with NaN tracked apart (x86's max and min drop a NaN operand), and the first
// position of a value or of a NaN.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "hypatia/backends/cpu/extreme_simd.cpp"
#include "hypatia/backends/cpu/extreme_simd.h"

#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include <cmath>
#include <cstdint>
#include <limits>

HWY_BEFORE_NAMESPACE();
namespace hypatia {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

/// The largest (is_max) or smallest of p[0 .. n) when none is NaN; *any_nan says whether one is
/// (the value is then meaningless). Four vector accumulators hide the max/min latency.
template <bool is_max, class T>
HWY_INLINE T ExtremeT(const T* HWY_RESTRICT p, int64_t n, bool* any_nan) {
  const hn::ScalableTag<T> d;
  const size_t N = hn::Lanes(d);
  const T init = is_max ? -std::numeric_limits<T>::infinity() : std::numeric_limits<T>::infinity();
  auto step = [](auto a, auto x) { return is_max ? hn::Max(a, x) : hn::Min(a, x); };
  auto a0 = hn::Set(d, init), a1 = a0, a2 = a0, a3 = a0;
  auto nan = hn::Zero(d);
  const size_t m = static_cast<size_t>(n);
  size_t i = 0;
  for (; i + 4 * N <= m; i += 4 * N) {
    const auto x0 = hn::LoadU(d, p + i), x1 = hn::LoadU(d, p + i + N);
    const auto x2 = hn::LoadU(d, p + i + 2 * N), x3 = hn::LoadU(d, p + i + 3 * N);
    // A NaN lane makes max / min return either operand; the result is NaN then anyway (the
    // unordered compares see it), so the accumulators matter only where no NaN came.
    a0 = step(a0, x0);
    a1 = step(a1, x1);
    a2 = step(a2, x2);
    a3 = step(a3, x3);
    nan = hn::Or(nan, hn::Or(hn::Or(hn::VecFromMask(d, hn::IsNaN(x0)), hn::VecFromMask(d, hn::IsNaN(x1))),
                             hn::Or(hn::VecFromMask(d, hn::IsNaN(x2)), hn::VecFromMask(d, hn::IsNaN(x3)))));
  }
  for (; i + N <= m; i += N) {
    const auto x = hn::LoadU(d, p + i);
    a0 = step(a0, x);
    nan = hn::Or(nan, hn::VecFromMask(d, hn::IsNaN(x)));
  }
  const auto a = step(step(a0, a1), step(a2, a3));
  T r = is_max ? hn::GetLane(hn::MaxOfLanes(d, a)) : hn::GetLane(hn::MinOfLanes(d, a));
  bool found_nan = !hn::AllFalse(d, hn::MaskFromVec(nan));
  for (; i < m; ++i) {
    const T x = p[i];
    if (x != x)
      found_nan = true;
    else
      r = (is_max ? x > r : x < r) ? x : r;
  }
  *any_nan = found_nan;
  return r;
}

/// The first i with p[i] == value (or p[i] a NaN when `nan`), n when none.
template <class T>
HWY_INLINE int64_t FindFirstT(const T* HWY_RESTRICT p, int64_t n, T value, bool nan) {
  const hn::ScalableTag<T> d;
  const size_t N = hn::Lanes(d);
  const auto v = hn::Set(d, value);
  const size_t m = static_cast<size_t>(n);
  size_t i = 0;
  for (; i + N <= m; i += N) {
    const auto x = hn::LoadU(d, p + i);
    const intptr_t at = hn::FindFirstTrue(d, nan ? hn::IsNaN(x) : hn::Eq(x, v));
    if (at >= 0) return static_cast<int64_t>(i) + at;
  }
  for (; i < m; ++i)
    if (nan ? p[i] != p[i] : p[i] == value) return static_cast<int64_t>(i);
  return n;
}

float ExtremeF32(const float* p, int64_t n, bool is_max, bool* any_nan) {
  return is_max ? ExtremeT<true>(p, n, any_nan) : ExtremeT<false>(p, n, any_nan);
}
double ExtremeF64(const double* p, int64_t n, bool is_max, bool* any_nan) {
  return is_max ? ExtremeT<true>(p, n, any_nan) : ExtremeT<false>(p, n, any_nan);
}
int64_t FindFirstF32(const float* p, int64_t n, float value, bool nan) { return FindFirstT(p, n, value, nan); }
int64_t FindFirstF64(const double* p, int64_t n, double value, bool nan) { return FindFirstT(p, n, value, nan); }

}  // namespace HWY_NAMESPACE
}  // namespace hypatia
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace hypatia {

HWY_EXPORT(ExtremeF32);
HWY_EXPORT(ExtremeF64);
HWY_EXPORT(FindFirstF32);
HWY_EXPORT(FindFirstF64);

float simd_extreme(const float* p, int64_t n, bool is_max, bool* any_nan) {
  return HWY_DYNAMIC_DISPATCH(ExtremeF32)(p, n, is_max, any_nan);
}
double simd_extreme(const double* p, int64_t n, bool is_max, bool* any_nan) {
  return HWY_DYNAMIC_DISPATCH(ExtremeF64)(p, n, is_max, any_nan);
}
int64_t simd_find_first(const float* p, int64_t n, float value, bool nan) {
  return HWY_DYNAMIC_DISPATCH(FindFirstF32)(p, n, value, nan);
}
int64_t simd_find_first(const double* p, int64_t n, double value, bool nan) {
  return HWY_DYNAMIC_DISPATCH(FindFirstF64)(p, n, value, nan);
}

}  // namespace hypatia
#endif  // HWY_ONCE
