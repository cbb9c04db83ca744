// See mrg_simd.h. Compiled once per Highway target, picked at run time.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "hypatia/backends/cpu/mrg_simd.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
// Must come after foreach_target.h.
#include <hwy/highway.h>

#include "hypatia/backends/cpu/mrg_simd.h"
#include "hypatia/backends/mrg_generate.h"

HWY_BEFORE_NAMESPACE();
namespace hypatia {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

void MrgRound(int32_t* const x[6], size_t count, int32_t* k) {
  const hn::ScalableTag<int32_t> d;
  const size_t lanes = hn::Lanes(d);
  const auto m1 = hn::Set(d, kMrgM1), m2 = hn::Set(d, kMrgM2);
  const auto m1_minus_1 = hn::Set(d, kMrgM1 - 1), m2_minus_1 = hn::Set(d, kMrgM2 - 1);
  const auto zero = hn::Zero(d);
  const auto mask12 = hn::Set(d, 511), mask13 = hn::Set(d, 16777215), mask2 = hn::Set(d, 65535);
  const auto mult2 = hn::Set(d, 21069);
  // Lanes wrap on overflow as mrg::next's unsigned sums do; a wrapped sum reads negative and the
  // modulus brings it back.
  auto reduce = [&](auto y, auto m, auto m_minus_1) {
    return hn::IfThenElse(hn::Or(hn::Lt(y, zero), hn::Gt(y, m_minus_1)), hn::Sub(y, m), y);
  };
  size_t j = 0;
  for (; j + lanes <= count; j += lanes) {
    auto x11 = hn::LoadU(d, x[0] + j), x12 = hn::LoadU(d, x[1] + j), x13 = hn::LoadU(d, x[2] + j);
    auto x21 = hn::LoadU(d, x[3] + j), x22 = hn::LoadU(d, x[4] + j), x23 = hn::LoadU(d, x[5] + j);
    auto y1 = hn::Add(hn::Add(hn::ShiftLeft<22>(hn::And(x12, mask12)), hn::ShiftRight<9>(x12)),
                      hn::Add(hn::ShiftLeft<7>(hn::And(x13, mask13)), hn::ShiftRight<24>(x13)));
    y1 = reduce(y1, m1, m1_minus_1);
    y1 = reduce(hn::Add(y1, x13), m1, m1_minus_1);
    hn::StoreU(x12, d, x[2] + j);
    hn::StoreU(x11, d, x[1] + j);
    hn::StoreU(y1, d, x[0] + j);
    auto z1 = reduce(hn::Add(hn::ShiftLeft<15>(hn::And(x21, mask2)), hn::Mul(mult2, hn::ShiftRight<16>(x21))), m2,
                     m2_minus_1);
    auto z2 = reduce(hn::Add(hn::ShiftLeft<15>(hn::And(x23, mask2)), hn::Mul(mult2, hn::ShiftRight<16>(x23))), m2,
                     m2_minus_1);
    z2 = reduce(hn::Add(z2, x23), m2, m2_minus_1);
    z2 = reduce(hn::Add(z2, z1), m2, m2_minus_1);
    hn::StoreU(x22, d, x[5] + j);
    hn::StoreU(x21, d, x[4] + j);
    hn::StoreU(z2, d, x[3] + j);
    const auto diff = hn::Sub(y1, z2);
    hn::StoreU(hn::IfThenElse(hn::Gt(y1, z2), diff, hn::Add(diff, m1)), d, k + j);
  }
  for (; j < count; ++j) {
    int32_t s[6] = {x[0][j], x[1][j], x[2][j], x[3][j], x[4][j], x[5][j]};
    k[j] = mrg::next(s);
    for (int w = 0; w < 6; ++w) x[w][j] = s[w];
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace hypatia
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace hypatia::cpu {

HWY_EXPORT(MrgRound);

void mrg_round(int32_t* const x[6], size_t count, int32_t* k) { HWY_DYNAMIC_DISPATCH(MrgRound)(x, count, k); }

}  // namespace hypatia::cpu
#endif
