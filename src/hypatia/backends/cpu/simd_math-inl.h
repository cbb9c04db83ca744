// float64 SIMD math within 1 ulp of the correctly rounded result (measured at most ~0.52 ulp from
// the exact value, docs/NUMERICS.md), exact where the function is exact, for every lane whatever
// its neighbours: exp, expm1, log, log1p, tanh, sigmoid, softplus, sin, cos. Also the float32 exp
// core (f32math, < 2 ulp) that the elementwise and softmax kernels share.
//
// Per-target header in Highway's style (included after foreach_target.h). Each function computes
// its result as an unevaluated sum hi + lo (double-double) carrying about 2^-64 relative error and
// rounds once at the end; the special values (overflow, underflow, subnormals, inf, NaN, huge
// sin/cos arguments) are blended in per lane, so a lane's result depends on its input only. The
// algorithms need an exact a * b - p: with FMA where the target has it, else Dekker's product.
#if defined(HYPATIA_BACKENDS_CPU_SIMD_MATH_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef HYPATIA_BACKENDS_CPU_SIMD_MATH_INL_H_
#undef HYPATIA_BACKENDS_CPU_SIMD_MATH_INL_H_
#else
#define HYPATIA_BACKENDS_CPU_SIMD_MATH_INL_H_
#endif

#include <hwy/highway.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "hypatia/backends/cpu/simd_math_tables.h"

HWY_BEFORE_NAMESPACE();
namespace hypatia {
namespace HWY_NAMESPACE {
namespace f64math {
namespace hn = hwy::HWY_NAMESPACE;

#undef HYP_EXACT_FMA
#if HWY_NATIVE_FMA && HWY_TARGET != HWY_EMU128 && HWY_TARGET != HWY_SCALAR
#define HYP_EXACT_FMA 1
#else
#define HYP_EXACT_FMA 0
#endif

// ------------------------------------------------------------------ exact building blocks

/// a * b - p exactly, for p = a * b rounded (|a b| well inside the normal range).
template <class D, class V>
HWY_INLINE V TwoProdErr(D d, V a, V b, V p) {
#if HYP_EXACT_FMA
  (void)d;
  return hn::MulSub(a, b, p);
#else
  // Dekker: split both factors into 26-bit halves whose products are exact.
  const V split = hn::Set(d, 134217729.0);
  const V ca = hn::Mul(a, split), cb = hn::Mul(b, split);
  const V ah = hn::Sub(ca, hn::Sub(ca, a)), bh = hn::Sub(cb, hn::Sub(cb, b));
  const V al = hn::Sub(a, ah), bl = hn::Sub(b, bh);
  return hn::Add(hn::Add(hn::Add(hn::Sub(hn::Mul(ah, bh), p), hn::Mul(ah, bl)), hn::Mul(al, bh)), hn::Mul(al, bl));
#endif
}

/// s + e = a + b exactly (Knuth's TwoSum, any magnitudes).
template <class V>
HWY_INLINE void TwoSum(V a, V b, V& s, V& e) {
  s = hn::Add(a, b);
  const V bb = hn::Sub(s, a);
  e = hn::Add(hn::Sub(a, hn::Sub(s, bb)), hn::Sub(b, bb));
}

/// s + e = a + b exactly when |a| >= |b| or a == 0 (Dekker's Fast2Sum).
template <class V>
HWY_INLINE void FastTwoSum(V a, V b, V& s, V& e) {
  s = hn::Add(a, b);
  e = hn::Sub(b, hn::Sub(s, a));
}

/// table[idx] for idx in [0, 16): one two-register permute on AVX-512, a gather elsewhere.
template <class D, class VI>
HWY_INLINE hn::Vec<D> Lookup16(D d, const double* table, VI idx) {
#if HWY_TARGET <= HWY_AVX3
  if constexpr (sizeof(hn::Vec<D>) == 64) {
    (void)d;
    return hn::Vec<D>{_mm512_permutex2var_pd(_mm512_load_pd(table), idx.raw, _mm512_load_pd(table + 8))};
  }
#endif
  return hn::GatherIndex(d, table, idx);
}

/// 1 / x for x in [1, 2^60] within 2^-28 (kSteps 1) or 2^-54 (kSteps 2): rcp14 and Newton steps
/// on AVX-512 (a division costs 16 cycles per vector there), a division elsewhere. Only ever
/// corrected further.
template <int kSteps, class D, class V>
HWY_INLINE V Recip(D d, V x) {
#if HWY_TARGET <= HWY_AVX3
  if constexpr (sizeof(V) == 64) {
    const V one = hn::Set(d, 1.0);
    V r{_mm512_rcp14_pd(x.raw)};
    for (int i = 0; i < kSteps; ++i) r = hn::MulAdd(r, hn::NegMulAdd(x, r, one), r);
    return r;
  }
#endif
  return hn::Div(hn::Set(d, 1.0), x);
}

/// (nh + nl) / (dh + dl) rounded once: an approximate quotient corrected by its exact residual.
/// With kSteps = 1 the quotient before the last rounding is within 2^-56 (adds at most 1/8 ulp).
template <int kSteps = 2, class D, class V>
HWY_INLINE V DivDD(D d, V nh, V nl, V dh, V dl) {
  const V rcp = Recip<kSteps>(d, dh);
  const V q0 = hn::Mul(nh, rcp);
  const V p = hn::Mul(q0, dh);
  const V pe = TwoProdErr(d, q0, dh, p);
  // nh - p is exact (Sterbenz: q0 is within 2^-27 of nh / dh).
  const V rem = hn::Add(hn::Sub(hn::Sub(nh, p), pe), hn::NegMulAdd(q0, dl, nl));
  return hn::MulAdd(rem, rcp, q0);
}

/// 2^e for integer e in [-1022, 1023].
template <class D, class VI>
HWY_INLINE hn::Vec<D> Pow2(D d, VI e) {
  const hn::RebindToSigned<D> di;
  return hn::BitCast(d, hn::ShiftLeft<52>(hn::Add(e, hn::Set(di, 1023))));
}

// ------------------------------------------------------------------ exp

constexpr double kExpShift = 0x1.8p52;
constexpr int64_t kExpShiftBits = 0x4338000000000000;

/// exp(x) = 2^(k/16) (1 + rh + lo) for x in [-746, 710], k = round(x 16 / ln 2), rh = x - k ln2/16
/// exact (|rh| <= 0.0217), |lo| < 2.5e-4 carrying the rest to about 2^-70. Returns in `ki` the bits
/// of k + 1.5 * 2^52 (k in the low bits) and in `tb` kExpBits[k mod 16].
template <class D, class V = hn::Vec<D>, class VI = hn::Vec<hn::RebindToSigned<D>>>
HWY_INLINE void ExpCore(D d, V x, VI& ki, V& tb, V& rh, V& lo) {
  const hn::RebindToSigned<D> di;
  const V shift = hn::Set(d, kExpShift);
  const V z = hn::MulAdd(x, hn::Set(d, 0x1.71547652b82fep+4), shift);
  ki = hn::BitCast(di, z);
  const V kd = hn::Sub(z, shift);
  // ln2/16 = L1 + L2 with L1 of 36 bits: k L1 is exact and x - k L1 too (Sterbenz).
  rh = hn::NegMulAdd(kd, hn::Set(d, 0x1.62e42fefa0000p-5), x);
  const V rl = hn::Mul(kd, hn::Set(d, -0x1.cf79abc9e3b3ap-44));
  const V r = hn::Add(rh, rl);
  const VI idx = hn::And(ki, hn::Set(di, 15));
  tb = Lookup16(d, simd_tables::kExpBits, idx);
  const V tail = Lookup16(d, simd_tables::kExpTail, idx);
  // e^r = 1 + r + r^2 Q(r), Q of degree 6 (least squares on Chebyshev nodes, 2^-72 relative).
  const V r2 = hn::Mul(r, r);
  const V r4 = hn::Mul(r2, r2);
  const V q01 = hn::MulAdd(hn::Set(d, 0x1.5555555555556p-3), r, hn::Set(d, 0x1.0000000000000p-1));
  const V q23 = hn::MulAdd(hn::Set(d, 0x1.11111110c635ep-7), r, hn::Set(d, 0x1.5555555555556p-5));
  const V q45 = hn::MulAdd(hn::Set(d, 0x1.a01b38ebaaab6p-13), r, hn::Set(d, 0x1.6c16c16bc134ap-10));
  const V q = hn::MulAdd(hn::MulAdd(hn::Set(d, 0x1.a01b1e3cecf9ap-16), r2, q45), r4, hn::MulAdd(q23, r2, q01));
  // 2^(j/16) = T (1 + tail): (1 + tail)(1 + r + r^2 Q) - 1 - rh = rl + tail (1 + r) + r^2 Q.
  lo = hn::MulAdd(r2, q, hn::MulAdd(tail, r, hn::Add(tail, rl)));
}

/// T * 2^e from ExpCore's outputs, for a normal result (e in [-1022, 1023]).
template <class D, class V, class VI>
HWY_INLINE V ExpScale(D d, VI ki, V tb) {
  return hn::BitCast(d, hn::Add(hn::BitCast(hn::RebindToSigned<D>(), tb), hn::ShiftLeft<48>(ki)));
}

/// exp(x) as hi + lo (|lo| <= ulp(hi) / 2), relative error about 2^-64, for x in [-708, 708].
template <class D, class V>
HWY_INLINE void ExpDD(D d, V x, V& hi, V& lo) {
  hn::Vec<hn::RebindToSigned<D>> ki;
  V tb, rh, l;
  ExpCore(d, x, ki, tb, rh, l);
  // s (1 + rh + l) = s + s rh + s l with s rh split exactly; s l (< 2.5e-4 s) is rounded at
  // 2^-65 relative. Normalized at the end so that |lo| <= ulp(hi) / 2.
#if HYP_EXACT_FMA
  const V s = ExpScale(d, ki, tb);
#else
  // Dekker's split overflows near 2^1023: work on T = 2^(j/16) and scale the result by 2^e.
  const hn::RebindToSigned<D> di;
  const auto idx = hn::And(ki, hn::Set(di, 15));
  const V s = hn::BitCast(d, hn::Add(hn::BitCast(di, tb), hn::ShiftLeft<48>(idx)));
#endif
  const V a = hn::Mul(s, rh);
  const V b = hn::MulAdd(s, l, TwoProdErr(d, s, rh, a));
  V h1, h1e;
  FastTwoSum(s, a, h1, h1e);
  FastTwoSum(h1, hn::Add(h1e, b), hi, lo);
#if !HYP_EXACT_FMA
  const V scale = Pow2(d, hn::ShiftRight<4>(hn::Sub(ki, hn::Set(di, kExpShiftBits))));
  hi = hn::Mul(hi, scale);
  lo = hn::Mul(lo, scale);
#endif
}

/// exp(x): 0.51 ulp from the exact value; exp(-inf) = 0, exp(inf) = inf, subnormal results
/// rounded once.
template <class D, class V>
HWY_INLINE V Exp(D d, V x) {
  const hn::RebindToSigned<D> di;
  const V big = hn::Set(d, 708.0);
  const V xc = hn::Min(hn::Max(x, hn::Set(d, -746.0)), hn::Set(d, 710.0));
  hn::Vec<decltype(di)> ki;
  V tb, rh, lo;
  ExpCore(d, xc, ki, tb, rh, lo);
  const V tmp = hn::Add(rh, lo);
  if (HWY_LIKELY(hn::AllTrue(d, hn::Le(hn::Abs(x), big)))) {
    const V s = ExpScale(d, ki, tb);
    return hn::MulAdd(s, tmp, s);
  }
  // Out of the normal range (or NaN): y0 = T (1 + tmp) in [0.97, 2), then two exact-or-final
  // scalings by 2^e1 and 2^e2 (e = e1 + e2), so a subnormal result is rounded once after y0 and
  // an overflow gives inf. For lanes in range this equals the fast form bit for bit.
  const auto idx = hn::And(ki, hn::Set(di, 15));
  const V t = hn::BitCast(d, hn::Add(hn::BitCast(di, tb), hn::ShiftLeft<48>(idx)));
  const V y0 = hn::MulAdd(t, tmp, t);
  const auto e = hn::ShiftRight<4>(hn::Sub(ki, hn::Set(di, kExpShiftBits)));
  const auto e1 = hn::ShiftRight<1>(e);
  V y = hn::Mul(hn::Mul(y0, Pow2(d, e1)), Pow2(d, hn::Sub(e, e1)));
  // A subnormal result: y0 2^(e + 1022) < 1 is rounded once, at the subnormal spacing, by adding
  // it to 1 (whose ulp is 2^-52 = 2^-1074 2^1022) with y0's rounding error carried along.
  const V y0l = hn::MulAdd(t, tmp, hn::Sub(t, y0));
  const V s = Pow2(d, hn::Min(hn::Add(e, hn::Set(di, 1022)), hn::Zero(di)));
  const V ys = hn::Mul(y0, s), ysl = hn::Mul(y0l, s);
  const V one = hn::Set(d, 1.0);
  const V sh = hn::Add(one, ys);
  const V sl = hn::Add(hn::Add(hn::Sub(one, sh), ys), ysl);
  const V sub = hn::Mul(hn::Sub(hn::Add(sh, sl), one), hn::Set(d, 0x1p-1022));
  const auto low = hn::RebindMask(d, hn::Lt(e, hn::Set(di, -1021)));
  y = hn::IfThenElse(hn::And(low, hn::Lt(ys, one)), sub, y);
  return hn::IfThenElse(hn::IsNaN(x), x, y);
}

/// exp(x + xlo) for x in [-708, 708] and |xlo| <= ulp(x) / 2 (a rounding error carried beside x),
/// about 1 ulp, without table lookups: AVX2's gathers make Exp's table cost a quarter of a
/// softmax row. Cody-Waite reduction by ln 2 (fdlibm's split: n ln2hi exact), the degree-12
/// polynomial of Highway's Exp (SLEEF's) in Estrin's scheme, the exponent assembled in the bits.
template <class D, class V>
HWY_INLINE V ExpNoTable(D d, V x, V xlo) {
  const hn::RebindToSigned<D> di;
  const V shift = hn::Set(d, kExpShift);
  const V z = hn::MulAdd(x, hn::Set(d, 0x1.71547652b82fep+0), shift);
  const V n = hn::Sub(z, shift);
  V r = hn::NegMulAdd(n, hn::Set(d, 0x1.62e42fee00000p-1), x);
  r = hn::NegMulAdd(n, hn::Set(d, 0x1.a39ef35793c76p-33), hn::Add(r, xlo));
  const V r2 = hn::Mul(r, r), r4 = hn::Mul(r2, r2), r8 = hn::Mul(r4, r4);
  auto c = [&](double v) { return hn::Set(d, v); };
  const V p01 = hn::MulAdd(c(0.166666666666666851703837), r, c(0.5));
  const V p23 = hn::MulAdd(c(0.00833333333331652721664984), r, c(0.0416666666666665047591422));
  const V p45 = hn::MulAdd(c(0.000198412698960509205564975), r, c(0.00138888888889774492207962));
  const V p67 = hn::MulAdd(c(2.75572362911928827629423e-6), r, c(2.4801587159235472998791e-5));
  const V p89 = hn::MulAdd(c(2.51112930892876518610661e-8), r, c(2.75573911234900471893338e-7));
  const V p03 = hn::MulAdd(p23, r2, p01);
  const V p47 = hn::MulAdd(p67, r2, p45);
  const V p810 = hn::MulAdd(c(2.08860621107283687536341e-9), r2, p89);
  const V p = hn::MulAdd(p810, r8, hn::MulAdd(p47, r4, p03));
  const V e = hn::Add(hn::MulAdd(p, r2, r), hn::Set(d, 1.0));
  return hn::Mul(e, hn::BitCast(d, hn::ShiftLeft<52>(hn::Add(hn::BitCast(di, z), hn::Set(di, 1023)))));
}

/// expm1(x): exact 0 and -0, tiny x returned as x, -1 below -40, inf above 709.78.
template <class D, class V>
HWY_INLINE V Expm1(D d, V x) {
  const V one = hn::Set(d, 1.0);
  const V xc = hn::Min(hn::Max(x, hn::Set(d, -40.0)), hn::Set(d, 708.0));
  V h, l;
  ExpDD(d, xc, h, l);
  // e^x - 1 = (h - 1) + l with h - 1 split exactly; near 0, h - 1 is exact and l holds the rest.
  V s, se;
  TwoSum(h, hn::Neg(one), s, se);
  V r = hn::Add(s, hn::Add(se, l));
  // |x| < 2^-18: x + x^2 (1/2 + x/6) (2^-58 relative), where h - 1 and l would cancel.
  const V small = hn::MulAdd(hn::Mul(x, x), hn::MulAdd(x, hn::Set(d, 1.0 / 6), hn::Set(d, 0.5)), x);
  r = hn::IfThenElse(hn::Lt(hn::Abs(x), hn::Set(d, 0x1p-18)), small, r);
  const auto big = hn::Gt(x, hn::Set(d, 708.0));
  if (HWY_UNLIKELY(!hn::AllFalse(d, big))) r = hn::IfThenElse(big, f64math::Exp(d, x), r);
  // Zeros keep their sign; NaN passes through.
  return hn::IfThenElse(hn::Or(hn::Eq(x, hn::Zero(d)), hn::IsNaN(x)), x, r);
}

// ------------------------------------------------------------------ log

constexpr double kLn2Hi = 0x1.62e42fefa3800p-1;  // 42 bits: k * kLn2Hi is exact
constexpr double kLn2Lo = 0x1.ef35793c76730p-45;

/// log(x + xlo) as hi + lo for a positive normal finite x (|xlo| <= ulp(x), the low part of a
/// double-double argument); with kScaled, x holds the input times 2^52 (a subnormal input).
template <bool kScaled, bool kLo, class D, class V>
HWY_INLINE void LogCore(D d, V x, V xlo, V& hi, V& lo, hn::Mask<D> scaled = hn::Mask<D>()) {
  const hn::RebindToSigned<D> di;
  using VI = hn::Vec<decltype(di)>;
  const V one = hn::Set(d, 1.0);
  // x = 2^k z with z in [0.703125, 1.40625); the top 4 bits of bits(x) - bits(0.703125) pick the
  // subinterval of z.
  const VI ix = hn::BitCast(di, x);
  const VI tmp = hn::Sub(ix, hn::Set(di, 0x3fe6800000000000));
  const VI idx = hn::And(hn::ShiftRight<48>(tmp), hn::Set(di, 15));
  const VI k = hn::ShiftRight<52>(tmp);
  const V z = hn::BitCast(d, hn::Sub(ix, hn::And(tmp, hn::Set(di, static_cast<int64_t>(0xfff0000000000000ull)))));
  V kd = hn::ConvertTo(d, k);
  if constexpr (kScaled) kd = hn::Sub(kd, hn::IfThenElseZero(scaled, hn::Set(d, 52.0)));
  const V invc = Lookup16(d, simd_tables::kLogInvC, idx);
  const V ch = Lookup16(d, simd_tables::kLogCHi, idx);
  const V cl = Lookup16(d, simd_tables::kLogCLo, idx);
  // r = z / c - 1 = z invc - 1 exactly as rh + rl (z invc is within 3.2% of 1: Sterbenz).
  // r = z / c - 1 = z invc - 1 = rh + pe exactly (rh exact by Sterbenz: z invc is within 3.2% of 1).
  const V p = hn::Mul(z, invc);
  const V pe = TwoProdErr(d, z, invc, p);
  const V rh = hn::Sub(p, one);
  // k ln2 + log c + rh, exactly as h + (we + he): |k ln2 + log c| exceeds every |rh| of its
  // subinterval (or is 0), so Fast2Sum is exact.
  V w, we, h, he;
  FastTwoSum(hn::Mul(kd, hn::Set(d, kLn2Hi)), ch, w, we);
  FastTwoSum(w, rh, h, he);
  // log1p(r) - r = r^2 (-1/2 + r P(r)), P of degree 7 on [-0.0286, 0.0313] (2^-66 absolute).
  const V r2 = hn::Mul(rh, rh);
  const V r4 = hn::Mul(r2, r2);
  const V p01 = hn::MulAdd(hn::Set(d, -0x1.00000000002e1p-2), rh, hn::Set(d, 0x1.555555555554ep-2));
  const V p23 = hn::MulAdd(hn::Set(d, -0x1.55555545d2d0ep-3), rh, hn::Set(d, 0x1.9999999a20b58p-3));
  const V p45 = hn::MulAdd(hn::Set(d, -0x1.00009e6bd5ef3p-3), rh, hn::Set(d, 0x1.24923d7c78c56p-3));
  const V p67 = hn::MulAdd(hn::Set(d, -0x1.964f27795fc05p-4), rh, hn::Set(d, 0x1.c7c286b03c17ap-4));
  const V pp = hn::MulAdd(hn::MulAdd(p67, r2, p45), r4, hn::MulAdd(p23, r2, p01));
  const V poly = hn::Mul(r2, hn::MulAdd(rh, pp, hn::Set(d, -0.5)));
  // pe enters log1p as pe / (1 + r) ~ pe (1 - r).
  V l = hn::Add(hn::Add(we, he), hn::Add(hn::NegMulAdd(pe, rh, pe), cl));
  l = hn::MulAdd(kd, hn::Set(d, kLn2Lo), l);
  if constexpr (kLo) {
    // log(x + xlo) - log(x) = t - t^2 / 2 with t = xlo / x, and 1 / x = invc 2^-k / (1 + r)
    // ~ invc 2^-k (1 - r + r^2) (relative error r^3 on a term below 2^-53 of the result).
    const VI kc = hn::Min(k, hn::Set(di, 1000));
    const V inv = hn::Mul(hn::Mul(invc, Pow2(d, hn::Neg(kc))), hn::MulAdd(rh, hn::Sub(rh, one), one));
    const V t = hn::Mul(xlo, inv);
    l = hn::Add(l, hn::NegMulAdd(hn::Mul(t, hn::Set(d, 0.5)), t, t));
  }
  hi = h;
  lo = hn::Add(l, poly);
}

/// log(x): log(1) = +0, log(0) = -inf, log(x < 0) = NaN, log(inf) = inf, subnormals exact-scaled.
template <class D, class V>
HWY_INLINE V Log(D d, V x) {
  const V minn = hn::Set(d, std::numeric_limits<double>::min());
  const V inf = hn::Set(d, std::numeric_limits<double>::infinity());
  V hi, lo;
  if (HWY_LIKELY(hn::AllTrue(d, hn::And(hn::Ge(x, minn), hn::Lt(x, inf))))) {
    LogCore<false, false>(d, x, hn::Zero(d), hi, lo);
    return hn::Add(hi, lo);
  }
  const auto tiny = hn::Lt(x, minn);
  V xs = hn::IfThenElse(tiny, hn::Mul(x, hn::Set(d, 0x1p52)), x);
  const auto ok = hn::And(hn::Gt(xs, hn::Zero(d)), hn::Lt(xs, inf));
  xs = hn::IfThenElse(ok, xs, hn::Set(d, 1.0));
  LogCore<true, false>(d, xs, hn::Zero(d), hi, lo, tiny);
  V r = hn::Add(hi, lo);
  r = hn::IfThenElse(hn::Eq(x, hn::Zero(d)), hn::Neg(inf), r);
  r = hn::IfThenElse(hn::Eq(x, inf), inf, r);
  return hn::IfThenElse(hn::Or(hn::Lt(x, hn::Zero(d)), hn::IsNaN(x)),
                        hn::Set(d, std::numeric_limits<double>::quiet_NaN()), r);
}

/// log1p(x) = log(u + ue) with u + ue = 1 + x exactly: log1p(+-0) = +-0, log1p(-1) = -inf,
/// NaN below -1.
template <class D, class V>
HWY_INLINE V Log1p(D d, V x) {
  const V one = hn::Set(d, 1.0);
  const V inf = hn::Set(d, std::numeric_limits<double>::infinity());
  const auto ok = hn::And(hn::Gt(x, hn::Set(d, -1.0)), hn::Lt(x, inf));
  const V xs = hn::IfThenElseZero(ok, x);
  V u, ue, hi, lo;
  TwoSum(one, xs, u, ue);
  LogCore<false, true>(d, u, ue, hi, lo);
  V r = hn::Add(hi, lo);
  // |x| < 2^-18: x + x^2 (-1/2 + x/3) (2^-56 relative), where u - 1 and ue would cancel.
  const V small = hn::MulAdd(hn::Mul(x, x), hn::MulAdd(x, hn::Set(d, 1.0 / 3), hn::Set(d, -0.5)), x);
  r = hn::IfThenElse(hn::Lt(hn::Abs(x), hn::Set(d, 0x1p-18)), small, r);
  if (HWY_UNLIKELY(!hn::AllTrue(d, ok))) {
    r = hn::IfThenElse(hn::Eq(x, hn::Set(d, -1.0)), hn::Neg(inf), r);
    r = hn::IfThenElse(hn::Eq(x, inf), inf, r);
    r = hn::IfThenElse(hn::Or(hn::Lt(x, hn::Set(d, -1.0)), hn::IsNaN(x)),
                       hn::Set(d, std::numeric_limits<double>::quiet_NaN()), r);
  }
  return hn::IfThenElse(hn::Eq(x, hn::Zero(d)), x, r);
}

/// log(x) * c for c = ch + cl (1 / ln 10 or 1 / ln 2): the double-double log times c, rounded
/// once; exact 0 at 1, the special values as log's.
template <class D, class V>
HWY_INLINE V LogScaled(D d, V x, double ch, double cl) {
  const V minn = hn::Set(d, std::numeric_limits<double>::min());
  const V inf = hn::Set(d, std::numeric_limits<double>::infinity());
  const auto tiny = hn::Lt(x, minn);
  const auto ok = hn::And(hn::Ge(x, minn), hn::Lt(x, inf));
  V xs = hn::IfThenElse(tiny, hn::Mul(x, hn::Set(d, 0x1p52)), x);
  xs = hn::IfThenElse(hn::Or(ok, hn::And(tiny, hn::Gt(x, hn::Zero(d)))), xs, hn::Set(d, 1.0));
  V hi, lo;
  LogCore<true, false>(d, xs, hn::Zero(d), hi, lo, tiny);
  // (hi + lo)(ch + cl) = hi ch (split exactly) + (lo ch + hi cl).
  const V vch = hn::Set(d, ch);
  const V p = hn::Mul(hi, vch);
  const V pe = TwoProdErr(d, hi, vch, p);
  V r = hn::Add(p, hn::Add(pe, hn::MulAdd(lo, vch, hn::Mul(hi, hn::Set(d, cl)))));
  r = hn::IfThenElse(hn::Eq(x, hn::Zero(d)), hn::Neg(inf), r);
  r = hn::IfThenElse(hn::Eq(x, inf), inf, r);
  return hn::IfThenElse(hn::Or(hn::Lt(x, hn::Zero(d)), hn::IsNaN(x)),
                        hn::Set(d, std::numeric_limits<double>::quiet_NaN()), r);
}

/// sinh (kCosh false) or cosh: (E -+ 1/E) / 2 with E = exp(|x|) and 1/E = exp(-|x|) as
/// double-doubles, summed exactly and rounded once; sinh below 2^-7 by its odd Taylor polynomial;
/// from |x| = 708 on, exp(|x|) / 2 with the halving inside the scaling (no early overflow).
template <bool kCosh, class D, class V>
HWY_INLINE V SinhCosh(D d, V x) {
  const V ax = hn::Abs(x);
  const V xc = hn::Min(ax, hn::Set(d, 700.0));
  V eh, el, ih, il;
  ExpDD(d, xc, eh, el);
  ExpDD(d, hn::Neg(xc), ih, il);
  if constexpr (!kCosh) {
    ih = hn::Neg(ih);
    il = hn::Neg(il);
  }
  V s, se;
  TwoSum(eh, ih, s, se);
  V r = hn::Mul(hn::Add(s, hn::Add(se, hn::Add(el, il))), hn::Set(d, 0.5));
  if constexpr (!kCosh) {
    // |x| < 2^-7: x + x^3 (1/6 + x^2 (1/120 + x^2 (1/5040 + x^2 / 362880))).
    const V x2 = hn::Mul(x, x);
    V pz = hn::MulAdd(hn::Set(d, 1.0 / 362880), x2, hn::Set(d, 1.0 / 5040));
    pz = hn::MulAdd(pz, x2, hn::Set(d, 1.0 / 120));
    pz = hn::MulAdd(pz, x2, hn::Set(d, 1.0 / 6));
    r = hn::IfThenElse(hn::Lt(ax, hn::Set(d, 0x1p-7)), hn::MulAdd(hn::Mul(x2, x), pz, x), r);
    r = hn::CopySign(r, x);
  }
  const auto big = hn::Gt(ax, hn::Set(d, 700.0));
  if (HWY_UNLIKELY(!hn::AllFalse(d, big))) {
    // exp(|x|) / 2 = exp(|x| - 700) (e^700 / 2) with |x| - 700 exact and e^700 / 2 = 2^64 (ch + cl):
    // the product is rounded 2^64 below the overflow threshold and scaled exactly (or to inf).
    V bh, bl;
    ExpDD(d, hn::Min(hn::Sub(ax, hn::Set(d, 700.0)), hn::Set(d, 11.0)), bh, bl);
    const V ch = hn::Set(d, 0x1.d945df4f8ec8ep+944);
    const V p = hn::Mul(bh, ch);
    const V corr =
        hn::Add(TwoProdErr(d, bh, ch, p), hn::MulAdd(bl, ch, hn::Mul(bh, hn::Set(d, 0x1.183392684a46ep+889))));
    V h = hn::Mul(hn::Add(p, corr), hn::Set(d, 0x1p64));
    if constexpr (!kCosh) h = hn::CopySign(h, x);
    r = hn::IfThenElse(big, h, r);
  }
  return hn::IfThenElse(hn::IsNaN(x), x, r);
}

/// acosh(x) = log(x + sqrt(x^2 - 1)) with x^2 - 1, its square root and the sum as double-doubles
/// (so that x near 1, where acosh(x) ~ sqrt(2 (x - 1)), keeps its relative accuracy); log(2x)
/// from 2^28 on. NaN below 1, acosh(1) = 0, acosh(inf) = inf.
template <class D, class V>
HWY_INLINE V Acosh(D d, V x) {
  const V one = hn::Set(d, 1.0);
  const V inf = hn::Set(d, std::numeric_limits<double>::infinity());
  const auto huge = hn::Ge(x, hn::Set(d, 0x1p28));
  const V xm = hn::IfThenElse(hn::And(hn::Ge(x, one), hn::Not(huge)), x, one);
  const V a = hn::Mul(xm, xm);
  V s, se;
  TwoSum(a, hn::Neg(one), s, se);
  const V alo = hn::Add(se, TwoProdErr(d, xm, xm, a));
  // sqrt(s + alo) = sh + (s - sh^2 + alo) / (2 sh), s - sh^2 exact.
  const V sh = hn::Sqrt(s);
  const V sh2 = hn::Mul(sh, sh);
  const V res = hn::Add(hn::Sub(hn::Sub(s, sh2), TwoProdErr(d, sh, sh, sh2)), alo);
  const V sl = hn::IfThenZeroElse(hn::Eq(sh, hn::Zero(d)), hn::Div(res, hn::Add(sh, sh)));
  V u, ue, hi, lo;
  TwoSum(xm, sh, u, ue);
  LogCore<false, true>(d, u, hn::Add(ue, sl), hi, lo);
  V r = hn::Add(hi, lo);
  if (HWY_UNLIKELY(!hn::AllFalse(d, huge))) {
    // log(2x) - 1/(4x^2) with the last term below 2^-58 relative: log(x) + ln 2 in double-double.
    const V xh = hn::IfThenElse(hn::And(huge, hn::Lt(x, inf)), x, one);
    LogCore<false, false>(d, xh, hn::Zero(d), hi, lo);
    V t, te;
    TwoSum(hi, hn::Set(d, 0x1.62e42fefa39efp-1), t, te);
    const V big = hn::Add(t, hn::Add(te, hn::Add(lo, hn::Set(d, 0x1.abc9e3b39803fp-56))));
    r = hn::IfThenElse(huge, hn::IfThenElse(hn::Eq(x, inf), inf, big), r);
  }
  return hn::IfThenElse(hn::Or(hn::Lt(x, one), hn::IsNaN(x)), hn::Set(d, std::numeric_limits<double>::quiet_NaN()), r);
}

// ------------------------------------------------------------------ tanh, sigmoid, softplus

/// tanh(x): x below 2^-27 (sign of zero kept), an odd Taylor polynomial below 2^-7, else
/// (E - 1) / (E + 1) with E = exp(2|x|) as a double-double, divided once; +-1 from |x| = 19.1.
template <class D, class V>
HWY_INLINE V Tanh(D d, V x) {
  const V one = hn::Set(d, 1.0);
  const V ax = hn::Abs(x);
  V h, l;
  ExpDD(d, hn::Add(hn::Min(ax, hn::Set(d, 20.0)), hn::Min(ax, hn::Set(d, 20.0))), h, l);
  V nh, nl, dh, dl;
  FastTwoSum(h, hn::Neg(one), nh, nl);
  FastTwoSum(h, one, dh, dl);
  const V q = DivDD<1>(d, nh, hn::Add(nl, l), dh, hn::Add(dl, l));
  V r = hn::CopySignToAbs(q, x);
  const auto small = hn::Lt(ax, hn::Set(d, 0x1p-7));
  if (HWY_UNLIKELY(!hn::AllFalse(d, hn::Or(small, hn::IsNaN(x))))) {
    // |x| < 2^-7: x + x^3 (-1/3 + x^2 (2/15 + x^2 (-17/315 + x^2 62/2835))), 2^-70 relative.
    const V x2 = hn::Mul(x, x);
    V pz = hn::MulAdd(hn::Set(d, 0x1.664f4882c10fap-6), x2, hn::Set(d, -0x1.ba1ba1ba1ba1cp-5));
    pz = hn::MulAdd(pz, x2, hn::Set(d, 0x1.1111111111111p-3));
    pz = hn::MulAdd(pz, x2, hn::Set(d, -0x1.5555555555555p-2));
    r = hn::IfThenElse(small, hn::MulAdd(hn::Mul(x2, x), pz, x), r);
    r = hn::IfThenElse(hn::Or(hn::Lt(ax, hn::Set(d, 0x1p-27)), hn::IsNaN(x)), x, r);
  }
  return r;
}

/// 1 / (1 + exp(-x)) from e = exp(-|x|) as a double-double: 1 / (1 + e) or e / (1 + e), divided
/// once; exp(x) itself below -690 (where the two agree to 2^-995 and the low part of e would be
/// subnormal).
template <class D, class V>
HWY_INLINE V Sigmoid(D d, V x) {
  const V one = hn::Set(d, 1.0);
  V eh, el, dh, dl;
  ExpDD(d, hn::Max(hn::Neg(hn::Abs(x)), hn::Set(d, -690.0)), eh, el);
  FastTwoSum(one, eh, dh, dl);
  dl = hn::Add(dl, el);
  const auto pos = hn::Ge(x, hn::Zero(d));
  V r = DivDD(d, hn::IfThenElse(pos, one, eh), hn::IfThenZeroElse(pos, el), dh, dl);
  const auto far = hn::Lt(x, hn::Set(d, -690.0));
  if (HWY_UNLIKELY(!hn::AllFalse(d, far))) r = hn::IfThenElse(far, f64math::Exp(d, x), r);
  return hn::IfThenElse(hn::IsNaN(x), x, r);
}

/// log(1 + exp(x)) = max(x, 0) + log1p(e), e = exp(-|x|) as a double-double, the sum rounded once;
/// exp(x) below -690.
template <class D, class V>
HWY_INLINE V Softplus(D d, V x) {
  const V one = hn::Set(d, 1.0);
  V eh, el, u, ue, hi, lo;
  ExpDD(d, hn::Max(hn::Neg(hn::Abs(x)), hn::Set(d, -690.0)), eh, el);
  FastTwoSum(one, eh, u, ue);
  LogCore<false, true>(d, u, hn::Add(ue, el), hi, lo);
  // e < 2^-18: log1p(e) = e + (el + e^2 (-1/2 + e/3)), where u - 1 and ue would cancel.
  const auto small = hn::Lt(eh, hn::Set(d, 0x1p-18));
  const V sl = hn::MulAdd(hn::Mul(eh, eh), hn::MulAdd(eh, hn::Set(d, 1.0 / 3), hn::Set(d, -0.5)), el);
  hi = hn::IfThenElse(small, eh, hi);
  lo = hn::IfThenElse(small, sl, lo);
  // x > 0: x + hi + lo with x + hi split exactly.
  const V xp = hn::Max(x, hn::Zero(d));
  V s, se;
  TwoSum(xp, hi, s, se);
  V r = hn::Add(s, hn::Add(se, lo));
  const auto far = hn::Lt(x, hn::Set(d, -690.0));
  if (HWY_UNLIKELY(!hn::AllFalse(d, far))) r = hn::IfThenElse(far, f64math::Exp(d, x), r);
  // From 40 on, log1p(exp(-x)) is below half an ulp of x (and x = inf must not meet inf - inf).
  return hn::IfThenElse(hn::Or(hn::Gt(x, hn::Set(d, 40.0)), hn::IsNaN(x)), x, r);
}

// ------------------------------------------------------------------ sin, cos

/// Below this |x| the vector reduction is exact; beyond it the lane is reduced by the scalar
/// Payne-Hanek routine (simd_tables::reduce_pio2_large) and goes through the same kernel.
constexpr double kTrigMax = 0x1p19;

/// x = n pi/2 + (rh + rl) for |x| < 2^19, exact to 2^-120 relative: pi/2 in three 34-bit parts
/// and a fourth, n < 2^19, so n * part is exact. `ni` holds n in its low bits.
template <class D, class V, class VI>
HWY_INLINE void SinCosReduce(D d, V x, VI& ni, V& rh, V& rl) {
  const V shift = hn::Set(d, kExpShift);
  const V zn = hn::MulAdd(x, hn::Set(d, 0x1.45f306dc9c883p-1), shift);
  ni = hn::BitCast(hn::RebindToSigned<D>(), zn);
  const V n = hn::Sub(zn, shift);
  const V a = hn::NegMulAdd(n, hn::Set(d, 0x1.921fb54480000p+0), x);  // exact
  V s1, e1, s2, e2;
  TwoSum(a, hn::Mul(n, hn::Set(d, 0x1.e973dcb380000p-35)), s1, e1);
  TwoSum(s1, hn::Mul(n, hn::Set(d, 0x1.9cceba3f80000p-70)), s2, e2);
  FastTwoSum(s2, hn::MulAdd(n, hn::Set(d, 0x1.1f1976b7ed8fcp-106), hn::Add(e1, e2)), rh, rl);
}

/// sin or cos of n pi/2 + (rh + rl), |rh| <= pi/4: fdlibm's kernels (2^-58 polynomials) on the
/// double-double r, the quadrant from n.
template <bool kCos, class D, class V, class VI>
HWY_INLINE V SinCosKernel(D d, VI ni, V rh, V rl) {
  const hn::RebindToSigned<D> di;
  const V one = hn::Set(d, 1.0);
  const V half = hn::Set(d, 0.5);
  const V z = hn::Mul(rh, rh);
  const V zl = TwoProdErr(d, rh, rh, z);
  const V z2 = hn::Mul(z, z);
  // sin(rh + rl) = rh + (rh^3 S(z) + rl (1 - z/2)), with rh^3 = v + vl split exactly to 2^-100
  // (its rounding would cost 0.2 ulp near pi/4).
  const V s12 = hn::MulAdd(hn::Set(d, 0x1.111111110f8a6p-7), z, hn::Set(d, -0x1.5555555555549p-3));
  const V s34 = hn::MulAdd(hn::Set(d, 0x1.71de357b1fe7dp-19), z, hn::Set(d, -0x1.a01a019c161d5p-13));
  const V s56 = hn::MulAdd(hn::Set(d, 0x1.5d93a5acfd57cp-33), z, hn::Set(d, -0x1.ae5e68a2b9cebp-26));
  const V sp = hn::MulAdd(hn::MulAdd(s56, z2, s34), z2, s12);
  const V v = hn::Mul(z, rh);
  const V vl = hn::MulAdd(zl, rh, TwoProdErr(d, z, rh, v));
  const V sin_lo = hn::MulAdd(v, sp, hn::MulAdd(vl, sp, hn::NegMulAdd(hn::Mul(half, z), rl, rl)));
  const V sv = hn::Add(rh, sin_lo);
  // cos(rh + rl) = w + ((1 - w) - z/2 - zl/2 + z^2 C(z) - rh rl) with w = 1 - z/2.
  const V c12 = hn::MulAdd(hn::Set(d, -0x1.6c16c16c15177p-10), z, hn::Set(d, 0x1.555555555554cp-5));
  const V c34 = hn::MulAdd(hn::Set(d, -0x1.27e4f809c52adp-22), z, hn::Set(d, 0x1.a01a019cb1590p-16));
  const V c56 = hn::MulAdd(hn::Set(d, -0x1.8fae9be8838d4p-37), z, hn::Set(d, 0x1.1ee9ebdb4b1c4p-29));
  const V cp = hn::MulAdd(hn::MulAdd(c56, z2, c34), z2, c12);
  const V hz = hn::Mul(half, z);
  const V w = hn::Sub(one, hz);
  V cos_lo = hn::Sub(hn::Sub(one, w), hz);
  cos_lo = hn::NegMulAdd(half, zl, cos_lo);
  cos_lo = hn::NegMulAdd(rh, rl, hn::MulAdd(z2, cp, cos_lo));
  const V cv = hn::Add(w, cos_lo);
  // Quadrant: sin uses n, cos n + 1; odd picks the cosine kernel, bit 1 negates.
  const auto q = kCos ? hn::Add(ni, hn::Set(di, 1)) : ni;
  const auto odd = hn::RebindMask(d, hn::Ne(hn::And(q, hn::Set(di, 1)), hn::Zero(di)));
  const auto negate = hn::RebindMask(d, hn::Ne(hn::And(q, hn::Set(di, 2)), hn::Zero(di)));
  const V r = hn::IfThenElse(odd, cv, sv);
  return hn::IfThenElse(negate, hn::Neg(r), r);
}

/// sin(x) / cos(x) for every x; sin(x) = x below 2^-27 (keeps -0 and subnormals), NaN for inf.
template <bool kCos, class D, class V>
HWY_INLINE V SinCos(D d, V x) {
  const hn::RebindToSigned<D> di;
  const V ax = hn::Abs(x);
  hn::Vec<decltype(di)> ni;
  V rh, rl;
  SinCosReduce(d, x, ni, rh, rl);
  const auto far = hn::Not(hn::Lt(ax, hn::Set(d, kTrigMax)));
  if (HWY_UNLIKELY(!hn::AllFalse(d, far))) {
    constexpr size_t kMax = HWY_MAX_BYTES / sizeof(double);
    HWY_ALIGN double xs[kMax], hs[kMax], ls[kMax];
    HWY_ALIGN int64_t ns[kMax];
    hn::Store(x, d, xs);
    hn::Store(rh, d, hs);
    hn::Store(rl, d, ls);
    hn::Store(ni, di, ns);
    for (size_t i = 0; i < hn::Lanes(d); ++i) {
      if (std::fabs(xs[i]) < kTrigMax) continue;
      if (std::isfinite(xs[i])) {
        ns[i] = simd_tables::reduce_pio2_large(xs[i], hs[i], ls[i]);
      } else {
        ns[i] = 0;
        hs[i] = xs[i] - xs[i];  // NaN
        ls[i] = 0;
      }
    }
    ni = hn::Load(di, ns);
    rh = hn::Load(d, hs);
    rl = hn::Load(d, ls);
  }
  const V r = SinCosKernel<kCos>(d, ni, rh, rl);
  if constexpr (kCos) return r;
  return hn::IfThenElse(hn::Lt(ax, hn::Set(d, 0x1p-27)), x, r);
}

#undef HYP_EXACT_FMA

}  // namespace f64math

namespace f32math {
namespace hn = hwy::HWY_NAMESPACE;

/// float32 exp(x + xlo) for x in [-87, 88] (normal results) and |xlo| <= ulp(x) / 2 (a rounding
/// error carried beside x; kLo = false for exp(x) itself): Cody-Waite reduction by ln 2, a
/// degree-5 minimax polynomial (Cephes expf, < 2 ulp) in Estrin's scheme and the exponent
/// assembled in the bits. n = round(x / ln 2) comes from adding 1.5 * 2^23 (its low bits then
/// hold n), which keeps the dependency chain short.
template <bool kLo, class D, class V>
HWY_INLINE V ExpCore(D d, V x, [[maybe_unused]] V xlo) {
  const hn::RebindToSigned<D> di;
  const V magic = hn::Set(d, 12582912.0f);
  const V nm = hn::MulAdd(x, hn::Set(d, 1.44269504088896341f), magic);
  const V n = hn::Sub(nm, magic);
  // x - n * 0.693359375 is exact (the constant has 9 bits); xlo joins it there.
  V r = hn::NegMulAdd(n, hn::Set(d, 0.693359375f), x);
  if constexpr (kLo) r = hn::Add(r, xlo);
  r = hn::NegMulAdd(n, hn::Set(d, -2.12194440e-4f), r);
  const V r2 = hn::Mul(r, r);
  const V r4 = hn::Mul(r2, r2);
  const V p01 = hn::MulAdd(hn::Set(d, 1.6666665459E-1f), r, hn::Set(d, 5.0000001201E-1f));
  const V p23 = hn::MulAdd(hn::Set(d, 8.3334519073E-3f), r, hn::Set(d, 4.1665795894E-2f));
  const V p45 = hn::MulAdd(hn::Set(d, 1.9875691500E-4f), r, hn::Set(d, 1.3981999507E-3f));
  const V p = hn::MulAdd(p45, r4, hn::MulAdd(p23, r2, p01));
  // 1 + (r + r^2 P(r)).
  const V e = hn::Add(hn::MulAdd(p, r2, r), hn::Set(d, 1.0f));
#if HWY_TARGET <= HWY_AVX3
  // AVX-512: e * 2^n in one instruction.
  if constexpr (std::is_same_v<V, hn::Vec512<float>>) return V{_mm512_scalef_ps(e.raw, n.raw)};
#endif
  const auto bits = hn::ShiftLeft<23>(hn::Add(hn::BitCast(di, nm), hn::Set(di, 127)));
  return hn::Mul(e, hn::BitCast(d, bits));
}

}  // namespace f32math
}  // namespace HWY_NAMESPACE
}  // namespace hypatia
HWY_AFTER_NAMESPACE();

#endif  // HYPATIA_BACKENDS_CPU_SIMD_MATH_INL_H_
