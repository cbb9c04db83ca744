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

void NarrowF16(const float* in, half* out, size_t n) {
  size_t i = 0;
#if HYPATIA_HAVE_F16C
  const hn::ScalableTag<float> df;
  const hn::Rebind<hwy::float16_t, decltype(df)> dh;
  const size_t lanes = hn::Lanes(df);
  auto* dst = reinterpret_cast<hwy::float16_t*>(out);
  for (; i + lanes <= n; i += lanes) hn::StoreU(hn::DemoteTo(dh, hn::LoadU(df, in + i)), dh, dst + i);
#endif
  for (; i < n; ++i) out[i] = half(in[i]);
}

#undef HYPATIA_HAVE_F16C

}  // namespace HWY_NAMESPACE
}  // namespace hypatia
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace hypatia::cpu {

HWY_EXPORT(WidenF16);
HWY_EXPORT(NarrowF16);

void widen_f16(const half* in, float* out, size_t n) { HWY_DYNAMIC_DISPATCH(WidenF16)(in, out, n); }
void narrow_f16(const float* in, half* out, size_t n) { HWY_DYNAMIC_DISPATCH(NarrowF16)(in, out, n); }

}  // namespace hypatia::cpu
#endif
