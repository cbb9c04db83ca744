// See half_simd.h. Compiled once per Highway target, picked at run time.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "hypatia/backends/cpu/half_simd.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
// Must come after foreach_target.h.
#include <hwy/highway.h>

#include "hypatia/backends/cpu/half_simd.h"

HWY_BEFORE_NAMESPACE();
namespace hypatia {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// F16C (vcvtph2ps / vcvtps2ph, rounding to nearest even) comes with Highway's AVX2 target and
// every better x86 one.
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX2
#define HYPATIA_HAVE_F16C 1
#else
#define HYPATIA_HAVE_F16C 0
#endif

void WidenF16(const half* in, float* out, size_t n) {
  size_t i = 0;
#if HYPATIA_HAVE_F16C
  const hn::ScalableTag<float> df;
  const hn::Rebind<hwy::float16_t, decltype(df)> dh;
  const size_t lanes = hn::Lanes(df);
  const auto* src = reinterpret_cast<const hwy::float16_t*>(in);
  for (; i + lanes <= n; i += lanes) hn::StoreU(hn::PromoteTo(df, hn::LoadU(dh, src + i)), df, out + i);
#endif
  for (; i < n; ++i) out[i] = in[i].to_float();
}

/// ((x + c0) * c1) + c2, rounding each operation (this file is compiled without contraction).
inline float affine1(float x, const float* c) {
  const float s = x + c[0];
  const float p = s * c[1];
  return p + c[2];
}

// Narrows (Round = false) or rounds to float16 and widens back (Round = true), after the affine
// map when `c` is not null.
template <bool Round, class Out>
void ToF16(const float* in, Out* out, size_t n, const float* c) {
  size_t i = 0;
#if HYPATIA_HAVE_F16C
  const hn::ScalableTag<float> df;
  const hn::Rebind<hwy::float16_t, decltype(df)> dh;
  const size_t lanes = hn::Lanes(df);
  auto store = [&](auto v, size_t at) {
    if constexpr (Round)
      hn::StoreU(hn::PromoteTo(df, hn::DemoteTo(dh, v)), df, out + at);
    else
      hn::StoreU(hn::DemoteTo(dh, v), dh, reinterpret_cast<hwy::float16_t*>(out) + at);
  };
  if (c) {
    const auto c0 = hn::Set(df, c[0]), c1 = hn::Set(df, c[1]), c2 = hn::Set(df, c[2]);
    for (; i + lanes <= n; i += lanes) store(hn::Add(hn::Mul(hn::Add(hn::LoadU(df, in + i), c0), c1), c2), i);
  } else {
    for (; i + lanes <= n; i += lanes) store(hn::LoadU(df, in + i), i);
  }
#endif
  for (; i < n; ++i) {
    const half h(c ? affine1(in[i], c) : in[i]);
    if constexpr (Round)
      out[i] = h.to_float();
    else
      out[i] = h;
  }
}

void NarrowF16(const float* in, half* out, size_t n, const float* c) { ToF16<false>(in, out, n, c); }
void RoundF16(const float* in, float* out, size_t n, const float* c) { ToF16<true>(in, out, n, c); }

#undef HYPATIA_HAVE_F16C

}  // namespace HWY_NAMESPACE
}  // namespace hypatia
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace hypatia::cpu {

HWY_EXPORT(WidenF16);
HWY_EXPORT(NarrowF16);
HWY_EXPORT(RoundF16);

void widen_f16(const half* in, float* out, size_t n) { HWY_DYNAMIC_DISPATCH(WidenF16)(in, out, n); }
void narrow_f16(const float* in, half* out, size_t n, const float* affine) {
  HWY_DYNAMIC_DISPATCH(NarrowF16)(in, out, n, affine);
}
void round_f16(const float* in, float* out, size_t n, const float* affine) {
  HWY_DYNAMIC_DISPATCH(RoundF16)(in, out, n, affine);
}

}  // namespace hypatia::cpu
#endif
