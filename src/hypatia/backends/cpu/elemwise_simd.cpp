// Highway SIMD loops for float32/float64 elementwise ops, compiled for several x86 targets and
// picked at run time (HWY_DYNAMIC_DISPATCH). float64 math is simd_math-inl.h (within 1 ulp of the
// correctly rounded result). float32 uses Highway's contrib math, valid on part of the real line
// only: the fix-ups below give numpy's results outside it (inf, 0, NaN), lane by lane, so that a
// lane's result never depends on its neighbours (docs/NUMERICS.md has the measured errors).
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "hypatia/backends/cpu/elemwise_simd.cpp"
// HWY_DISABLED_TARGETS comes from CMake, the same for every TU (CMakeLists.txt says why).
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/targets.h>
// Must come after foreach_target.h.
#include <hwy/contrib/math/math-inl.h>
#include <hwy/highway.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>
#include <utility>

#include "hypatia/backends/cpu/elemwise_simd.h"
#include "hypatia/backends/cpu/simd_math-inl.h"

HWY_BEFORE_NAMESPACE();
namespace hypatia {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

template <class T>
struct Limits {
  // exp(x) overflows above hi and is 0 below lo.
  static constexpr T exp_hi = sizeof(T) == 4 ? T(88.72283935546875) : T(709.782712893384);
  static constexpr T exp_lo = sizeof(T) == 4 ? T(-103.972084045410) : T(-745.1332191019412);
  static constexpr T trig_max = T(39000);
};

/// float32 exp by Highway's Exp with numpy's results outside its range (the lanes f32math::ExpCore
/// leaves: subnormal results, overflow, NaN). float64 has f64math::Exp.
template <class D, class V>
HWY_INLINE V ExpFixed(D d, V x) {
  using T = hn::TFromD<D>;
  const V inf = hn::Set(d, std::numeric_limits<T>::infinity());
  const V xc = hn::Min(hn::Max(x, hn::Set(d, Limits<T>::exp_lo)), hn::Set(d, T(Limits<T>::exp_hi)));
  V r = hn::Exp(d, xc);
  r = hn::IfThenElse(hn::Gt(x, hn::Set(d, Limits<T>::exp_hi)), inf, r);
  r = hn::IfThenZeroElse(hn::Lt(x, hn::Set(d, Limits<T>::exp_lo)), r);
  return hn::IfThenElse(hn::IsNaN(x), x, r);
}

/// exp: float64 from simd_math-inl.h; float32 by f32math::ExpCore where the result is normal, lanes
/// beyond (and NaN) by ExpFixed, so that each lane's formula depends on its own input only.
template <class D, class V>
HWY_INLINE V ExpFast(D d, V x) {
  using T = hn::TFromD<D>;
  if constexpr (sizeof(T) == 8) {
    return f64math::Exp(d, x);
  } else {
    const auto in = hn::Le(hn::Abs(x), hn::Set(d, 87.0f));
    const V r = f32math::ExpCore<false>(d, hn::IfThenElseZero(in, x), hn::Zero(d));
    if (HWY_LIKELY(hn::AllTrue(d, in))) return r;
    return hn::IfThenElse(in, r, ExpFixed(d, x));
  }
}

template <class D, class V>
HWY_INLINE V Expm1Fixed(D d, V x) {
  using T = hn::TFromD<D>;
  const V lo = hn::Set(d, T(-50));
  const V hi = hn::Set(d, T(50));
  V r = hn::Expm1(d, hn::Min(hn::Max(x, lo), hi));
  // Beyond +-50, expm1(x) rounds to exp(x) (or -1) in both precisions.
  const auto big = hn::Gt(x, hi);
  if (!hn::AllFalse(d, big)) r = hn::IfThenElse(big, ExpFixed(d, x), r);
  r = hn::IfThenElse(hn::Lt(x, lo), hn::Set(d, T(-1)), r);
  // NaN passes through; zeros keep their sign.
  return hn::IfThenElse(hn::Or(hn::IsNaN(x), hn::Eq(x, hn::Zero(d))), x, r);
}

/// log for x > 0 including subnormals; log(0) = -inf, log(x < 0) = NaN, log(inf) = inf.
template <class D, class V>
HWY_INLINE V LogFixed(D d, V x) {
  using T = hn::TFromD<D>;
  const V zero = hn::Zero(d);
  const V inf = hn::Set(d, std::numeric_limits<T>::infinity());
  const auto tiny = hn::Lt(x, hn::Set(d, std::numeric_limits<T>::min()));
  // Scale subnormals into the normal range: log(x) = log(x * 2^s) - s log 2.
  const T scale_exp = sizeof(T) == 4 ? T(32) : T(64);
  const V xs = hn::IfThenElse(tiny, hn::Mul(x, hn::Set(d, std::ldexp(T(1), static_cast<int>(scale_exp)))), x);
  const V safe =
      hn::IfThenElse(hn::Gt(xs, zero), hn::Min(xs, hn::Set(d, std::numeric_limits<T>::max())), hn::Set(d, T(1)));
  V r = hn::Log(d, safe);
  r = hn::Sub(r, hn::IfThenElseZero(tiny, hn::Set(d, scale_exp * T(0.693147180559945309417232121458))));
  r = hn::IfThenElse(hn::Eq(x, zero), hn::Neg(inf), r);
  r = hn::IfThenElse(hn::Eq(x, inf), inf, r);
  const auto bad = hn::Or(hn::Lt(x, zero), hn::IsNaN(x));
  return hn::IfThenElse(bad, hn::Set(d, std::numeric_limits<T>::quiet_NaN()), r);
}

/// log1p on [-1, inf]: Highway's Log1p is documented for x >= 0; below 0 use log(1 + x) corrected
/// for the rounding of 1 + x.
template <class D, class V>
HWY_INLINE V Log1pFixed(D d, V x) {
  using T = hn::TFromD<D>;
  const V zero = hn::Zero(d);
  const V one = hn::Set(d, T(1));
  const V inf = hn::Set(d, std::numeric_limits<T>::infinity());
  const V pos = hn::Log1p(d, hn::Min(hn::Max(x, zero), hn::Set(d, std::numeric_limits<T>::max())));
  // u = 1 + x rounded; log(u) * x / (u - 1) corrects the rounding error (Goldberg's trick).
  const V u = hn::Add(one, x);
  const V um1 = hn::Sub(u, one);
  const V lu = hn::Log(d, hn::IfThenElse(hn::Gt(u, zero), u, one));
  const V neg =
      hn::IfThenElse(hn::Eq(um1, zero), x, hn::Div(hn::Mul(lu, x), hn::IfThenElse(hn::Eq(um1, zero), one, um1)));
  V r = hn::IfThenElse(hn::Lt(x, zero), neg, pos);
  r = hn::IfThenElse(hn::Eq(x, hn::Set(d, T(-1))), hn::Neg(inf), r);
  r = hn::IfThenElse(hn::Eq(x, inf), inf, r);
  r = hn::IfThenElse(hn::Eq(x, zero), x, r);  // log1p(-0) = -0
  const auto bad = hn::Or(hn::Lt(x, hn::Set(d, T(-1))), hn::IsNaN(x));
  return hn::IfThenElse(bad, hn::Set(d, std::numeric_limits<T>::quiet_NaN()), r);
}

/// float32 tanh as x P(x^2) / Q(x^2) on |x| <= 7.9 (saturated beyond), the rational minimax form
/// XLA and Eigen use (at most 5.2 ulp from the correctly rounded result over 20M points of
/// [-12, 12], mean 0.74 ulp), with the polynomials in Estrin's scheme: no exp, one division and
/// short dependency chains; half the instructions of the exp-based Cephes form it replaced (< 2
/// ulp), which made tanh the bottleneck of fused chains.
template <class D, class V>
HWY_INLINE V TanhF32(D d, V x) {
  const V z = hn::Mul(x, x);
  const V z2 = hn::Mul(z, z);
  const V z4 = hn::Mul(z2, z2);
  const V p01 = hn::MulAdd(hn::Set(d, 6.37261928875436e-04f), z, hn::Set(d, 4.89352455891786e-03f));
  const V p23 = hn::MulAdd(hn::Set(d, 5.12229709037114e-08f), z, hn::Set(d, 1.48572235717979e-05f));
  const V p45 = hn::MulAdd(hn::Set(d, 2.00018790482477e-13f), z, hn::Set(d, -8.60467152213735e-11f));
  const V p6 = hn::Set(d, -2.76076847742355e-16f);
  const V p = hn::MulAdd(hn::MulAdd(p6, z2, p45), z4, hn::MulAdd(p23, z2, p01));
  const V q01 = hn::MulAdd(hn::Set(d, 2.26843463243900e-03f), z, hn::Set(d, 4.89352518554385e-03f));
  const V q23 = hn::MulAdd(hn::Set(d, 1.19825839466702e-06f), z, hn::Set(d, 1.18534705686654e-04f));
  const V q = hn::MulAdd(q23, z2, q01);
  // x (P / Q) rather than (x P) / Q: no underflow for tiny x, where P / Q is 1 within an ulp.
  const V r = hn::Mul(x, hn::Div(p, q));
  // From 7.9 on tanh is 1 within an ulp (the polynomials would overflow further out); NaN
  // fails the comparison and flows through r.
  return hn::IfThenElse(hn::Ge(hn::Abs(x), hn::Set(d, 7.90531110763549805f)), hn::CopySignToAbs(hn::Set(d, 1.0f), x),
                        r);
}

/// float32 1 / (1 + exp(-x)) as exp(-|x|) based forms that never overflow.
template <class D, class V>
HWY_INLINE V SigmoidV(D d, V x) {
  using T = hn::TFromD<D>;
  const V one = hn::Set(d, T(1));
  const V e = ExpFast(d, hn::Neg(hn::Abs(x)));
  const V den = hn::Add(one, e);
  V r = hn::IfThenElse(hn::Ge(x, hn::Zero(d)), hn::Div(one, den), hn::Div(e, den));
  return hn::IfThenElse(hn::IsNaN(x), x, r);
}

/// float32 log(1 + exp(x)) = max(x, 0) + log1p(exp(-|x|)).
template <class D, class V>
HWY_INLINE V SoftplusV(D d, V x) {
  const V e = ExpFast(d, hn::Neg(hn::Abs(x)));
  V r = hn::Add(hn::Max(x, hn::Zero(d)), hn::Log1p(d, e));
  return hn::IfThenElse(hn::IsNaN(x), x, r);
}

/// float32 sin/cos: Highway's below |x| = 39000 (its valid range), the C library's per lane above.
template <bool kCos, class D, class V>
HWY_INLINE V SinCosF32(D d, V x) {
  using T = hn::TFromD<D>;
  const auto in = hn::Le(hn::Abs(x), hn::Set(d, Limits<T>::trig_max));
  const V xs = hn::IfThenElseZero(in, x);
  V r = kCos ? hn::Cos(d, xs) : hn::Sin(d, xs);
  if (HWY_UNLIKELY(!hn::AllTrue(d, in))) {
    HWY_ALIGN T xv[HWY_MAX_BYTES / sizeof(T)];
    HWY_ALIGN T rv[HWY_MAX_BYTES / sizeof(T)];
    hn::Store(x, d, xv);
    hn::Store(r, d, rv);
    for (size_t i = 0; i < hn::Lanes(d); ++i)
      if (!(std::fabs(xv[i]) <= Limits<T>::trig_max)) rv[i] = kCos ? std::cos(xv[i]) : std::sin(xv[i]);
    r = hn::Load(d, rv);
  }
  if constexpr (!kCos) r = hn::IfThenElse(hn::Eq(x, hn::Zero(d)), x, r);  // sin(-0) = -0
  return r;
}

template <ScalarOpKind K, class D, class V>
HWY_INLINE V ApplyUnary(D d, V x) {
  if constexpr (sizeof(hn::TFromD<D>) == 8 && K != ScalarOpKind::Exp) {
    // float64: the accurate kernels (exp goes through ExpFast below).
    if constexpr (K == ScalarOpKind::Expm1) return f64math::Expm1(d, x);
    if constexpr (K == ScalarOpKind::Log) return f64math::Log(d, x);
    if constexpr (K == ScalarOpKind::Log1p) return f64math::Log1p(d, x);
    if constexpr (K == ScalarOpKind::Tanh) return f64math::Tanh(d, x);
    if constexpr (K == ScalarOpKind::Sigmoid) return f64math::Sigmoid(d, x);
    if constexpr (K == ScalarOpKind::Softplus) return f64math::Softplus(d, x);
    if constexpr (K == ScalarOpKind::Sin) return f64math::SinCos<false>(d, x);
    if constexpr (K == ScalarOpKind::Cos) return f64math::SinCos<true>(d, x);
    if constexpr (K == ScalarOpKind::Log10)
      return f64math::LogScaled(d, x, 0x1.bcb7b1526e50ep-2, 0x1.95355baaafad3p-57);
    if constexpr (K == ScalarOpKind::Log2) return f64math::LogScaled(d, x, 0x1.71547652b82fep+0, 0x1.777d0ffda0d24p-56);
    if constexpr (K == ScalarOpKind::Sinh) return f64math::SinhCosh<false>(d, x);
    if constexpr (K == ScalarOpKind::Cosh) return f64math::SinhCosh<true>(d, x);
    if constexpr (K == ScalarOpKind::ArcCosh) return f64math::Acosh(d, x);
  }
  if constexpr (K == ScalarOpKind::Exp)
    return ExpFast(d, x);
  else if constexpr (K == ScalarOpKind::Identity)
    return x;
  else if constexpr (K == ScalarOpKind::Expm1)
    return Expm1Fixed(d, x);
  else if constexpr (K == ScalarOpKind::Log)
    return LogFixed(d, x);
  else if constexpr (K == ScalarOpKind::Log1p)
    return Log1pFixed(d, x);
  else if constexpr (K == ScalarOpKind::Tanh)
    return TanhF32(d, x);
  else if constexpr (K == ScalarOpKind::Sigmoid)
    return SigmoidV(d, x);
  else if constexpr (K == ScalarOpKind::Softplus)
    return SoftplusV(d, x);
  else if constexpr (K == ScalarOpKind::Sqrt)
    return hn::Sqrt(x);
  else if constexpr (K == ScalarOpKind::Neg)
    return hn::Neg(x);
  else if constexpr (K == ScalarOpKind::Abs)
    return hn::Abs(x);
  else if constexpr (K == ScalarOpKind::Sqr)
    return hn::Mul(x, x);
  // The roundings: each result has x's sign (a zero result too: ceil(-0.5) = -0), which the
  // emulated targets' forms do not all keep, so it is copied back.
  else if constexpr (K == ScalarOpKind::Floor)
    return hn::CopySign(hn::Floor(x), x);
  else if constexpr (K == ScalarOpKind::Ceil)
    return hn::CopySign(hn::Ceil(x), x);
  else if constexpr (K == ScalarOpKind::Trunc)
    return hn::CopySign(hn::Trunc(x), x);
  else if constexpr (K == ScalarOpKind::Round)
    return hn::CopySign(hn::Round(x), x);  // half to even, as nearbyint in the default rounding mode
  else if constexpr (K == ScalarOpKind::Sin)
    return SinCosF32<false>(d, x);
  else
    return SinCosF32<true>(d, x);
}

/// ((x + a[0]) * a[1]) + a[2]: the scalar mul/add steps a fused program folds into its neighbours,
/// applied in the order the unfused steps apply them (identity: -0, 1, -0). Mode 1 leaves out the
/// multiplication by 1 (it would take an FMA-port slot from the math), mode 2 is the whole map.
/// Skipping identity constants with branches measured slower (the loops lose their straight-line
/// schedule).
template <int Mode, class D, class V, class T>
HWY_INLINE V ApplyAffine(D d, V x, const T* a) {
  if constexpr (Mode == 0) return x;
  if constexpr (Mode == 1) return hn::Add(hn::Add(x, hn::Set(d, a[0])), hn::Set(d, a[2]));
  return hn::Add(hn::Mul(hn::Add(x, hn::Set(d, a[0])), hn::Set(d, a[1])), hn::Set(d, a[2]));
}

/// out = post(K(pre(in))) (aff: pre then post, 3 values each; Pre / Post: the ApplyAffine mode
/// of each).
template <ScalarOpKind K, class T, int Pre, int Post>
HWY_NOINLINE void UnaryLoop(const T* in, T* out, size_t n, const T* aff) {
  const hn::ScalableTag<T> d;
  const size_t N = hn::Lanes(d);
  auto pre = [&](auto x) { return ApplyAffine<Pre>(d, x, aff); };
  auto post = [&](auto y) { return ApplyAffine<Post>(d, y, aff + 3); };
  size_t i = 0;
  // Four independent vectors per step, so that the long dependency chains of the polynomial
  // approximations overlap (the loops are latency-bound with fewer).
  for (; i + 4 * N <= n; i += 4 * N) {
    const auto x0 = pre(hn::LoadU(d, in + i));
    const auto x1 = pre(hn::LoadU(d, in + i + N));
    const auto x2 = pre(hn::LoadU(d, in + i + 2 * N));
    const auto x3 = pre(hn::LoadU(d, in + i + 3 * N));
    const auto y0 = post(ApplyUnary<K>(d, x0));
    const auto y1 = post(ApplyUnary<K>(d, x1));
    const auto y2 = post(ApplyUnary<K>(d, x2));
    const auto y3 = post(ApplyUnary<K>(d, x3));
    hn::StoreU(y0, d, out + i);
    hn::StoreU(y1, d, out + i + N);
    hn::StoreU(y2, d, out + i + 2 * N);
    hn::StoreU(y3, d, out + i + 3 * N);
  }
  for (; i + N <= n; i += N) {
    const auto x = pre(hn::LoadU(d, in + i));
    hn::StoreU(post(ApplyUnary<K>(d, x)), d, out + i);
  }
  if (i < n) {
    // The tail goes through the same vector code on a padded copy.
    HWY_ALIGN T buf[HWY_MAX_BYTES / sizeof(T)] = {};
    std::memcpy(buf, in + i, (n - i) * sizeof(T));
    const auto x = pre(hn::Load(d, buf));
    hn::Store(post(ApplyUnary<K>(d, x)), d, buf);
    std::memcpy(out + i, buf, (n - i) * sizeof(T));
  }
}

template <ScalarOpKind K, class D, class V>
HWY_INLINE V ApplyBinary(D d, V a, V b) {
  if constexpr (K == ScalarOpKind::Add)
    return hn::Add(a, b);
  else if constexpr (K == ScalarOpKind::Sub)
    return hn::Sub(a, b);
  else if constexpr (K == ScalarOpKind::Mul)
    return hn::Mul(a, b);
  else if constexpr (K == ScalarOpKind::TrueDiv)
    return hn::Div(a, b);
  else {
    // numpy's maximum/minimum propagate NaN; x86 max/min do not.
    const V r = K == ScalarOpKind::Maximum ? hn::Max(a, b) : hn::Min(a, b);
    return hn::IfThenElse(hn::Or(hn::IsNaN(a), hn::IsNaN(b)), hn::Add(a, b), r);
  }
}

/// out = post(K(a, b)) when Aff (post: 3 values), else K(a, b); a flagged-scalar operand is one
/// element broadcast.
template <ScalarOpKind K, class T, bool Aff>
HWY_NOINLINE void BinaryLoop(const T* a, bool a_scalar, const T* b, bool b_scalar, T* out, size_t n, const T* post) {
  const hn::ScalableTag<T> d;
  const size_t N = hn::Lanes(d);
  const auto av = hn::Set(d, a[0]);
  const auto bv = hn::Set(d, b[0]);
  auto apply = [&](auto x, auto y) {
    if constexpr (Aff) return ApplyAffine<2>(d, ApplyBinary<K>(d, x, y), post);
    return ApplyBinary<K>(d, x, y);
  };
  size_t i = 0;
  for (; i + N <= n; i += N) {
    const auto x = a_scalar ? av : hn::LoadU(d, a + i);
    const auto y = b_scalar ? bv : hn::LoadU(d, b + i);
    hn::StoreU(apply(x, y), d, out + i);
  }
  if (i < n) {
    HWY_ALIGN T ba[HWY_MAX_BYTES / sizeof(T)] = {};
    HWY_ALIGN T bb[HWY_MAX_BYTES / sizeof(T)] = {};
    if (!a_scalar) std::memcpy(ba, a + i, (n - i) * sizeof(T));
    if (!b_scalar) std::memcpy(bb, b + i, (n - i) * sizeof(T));
    const auto x = a_scalar ? av : hn::Load(d, ba);
    const auto y = b_scalar ? bv : hn::Load(d, bb);
    hn::Store(apply(x, y), d, ba);
    std::memcpy(out + i, ba, (n - i) * sizeof(T));
  }
}

/// The affine constants as T (null: none).
template <class T>
struct AffineT {
  T v[6];
  bool on;
  AffineT(const double* a, int count) : v{}, on(a != nullptr) {
    for (int k = 0; on && k < count; ++k) v[k] = static_cast<T>(a[k]);
  }
};

/// UnaryLoop with the affine modes (each 0-2) picked at run time.
template <ScalarOpKind K, class T, size_t... I>
void unary_modes(int pre, int post, const T* x, T* y, size_t m, const T* aff, std::index_sequence<I...>) {
  using Fn = void (*)(const T*, T*, size_t, const T*);
  static constexpr Fn table[] = {&UnaryLoop<K, T, static_cast<int>(I / 3), static_cast<int>(I % 3)>...};
  table[pre * 3 + post](x, y, m, aff);
}

/// The float64 kernels of simd_math-inl.h are large: rather than nine affine variants each, they
/// get two, no maps or both maps in full (an identity map (-0, 1, -0) leaves every value, -0 and NaN
/// included, as it is), which keeps elemwise_simd.cpp's compile time in bounds.
constexpr bool two_modes_only(ScalarOpKind k, size_t size) {
  if (size != 8) return false;
  switch (k) {
    case ScalarOpKind::Exp:
    case ScalarOpKind::Expm1:
    case ScalarOpKind::Log:
    case ScalarOpKind::Log1p:
    case ScalarOpKind::Tanh:
    case ScalarOpKind::Sigmoid:
    case ScalarOpKind::Softplus:
    case ScalarOpKind::Sin:
    case ScalarOpKind::Cos:
      return true;
    default:
      return false;
  }
}

template <ScalarOpKind K, class T>
void unary_two_modes(int pre, int post, const T* x, T* y, size_t m, const T* aff) {
  if (pre == 0 && post == 0) return UnaryLoop<K, T, 0, 0>(x, y, m, aff);
  UnaryLoop<K, T, 2, 2>(x, y, m, aff);
}

template <class T>
void UnaryT(ScalarOpKind k, const void* in, void* out, int64_t n, const double* aff) {
  const T* x = static_cast<const T*>(in);
  T* y = static_cast<T*>(out);
  const size_t m = static_cast<size_t>(n);
  const AffineT<T> a(aff, 6);
  // Per map: 0 when it is the identity (-0, 1, -0), 1 when its factor is 1, else 2.
  auto mode = [&](const double* c) {
    if (!a.on) return 0;
    const bool add0 = !(c[0] == 0 && std::signbit(c[0])), add2 = !(c[2] == 0 && std::signbit(c[2]));
    if (c[1] != 1) return 2;
    return add0 || add2 ? 1 : 0;
  };
  const int pre = mode(aff), post = a.on ? mode(aff + 3) : 0;
  switch (k) {
#define HYP_SIMD_UNARY(KIND)                                                  \
  case ScalarOpKind::KIND:                                                    \
    if constexpr (two_modes_only(ScalarOpKind::KIND, sizeof(T)))              \
      return unary_two_modes<ScalarOpKind::KIND, T>(pre, post, x, y, m, a.v); \
    else                                                                      \
      return unary_modes<ScalarOpKind::KIND, T>(pre, post, x, y, m, a.v, std::make_index_sequence<9>());
    // The unary rows of scalar_ops.def with Simd = All.
#define HYP_SIMD_CASE_All_1(KIND) HYP_SIMD_UNARY(KIND)
#define HYP_SIMD_CASE_All_2(KIND)
#define HYP_SIMD_CASE_All_3(KIND)
#define HYP_SIMD_CASE_F64_1(KIND)
#define HYP_SIMD_CASE_None_1(KIND)
#define HYP_SIMD_CASE_None_2(KIND)
#define HYP_SIMD_CASE_None_3(KIND)
#define HYP_SCALAR_OP(Kind, Name, Arity, Rule, Cost, Simd, ...) HYP_SIMD_CASE_##Simd##_##Arity(Kind)
#include "hypatia/ops/scalar_ops.def"
    default:
      break;
  }
  if constexpr (sizeof(T) == 8) {
    // float64-only kernels (float32 keeps the C library's): no affine variants; a map a fused
    // program folds into them runs as a pass of its own over a buffer, in the same order.
    const bool has_aff = pre != 0 || post != 0;
    auto run = [&](auto kc) {
      constexpr ScalarOpKind K = decltype(kc)::value;
      if (!has_aff) return UnaryLoop<K, T, 0, 0>(x, y, m, a.v);
      for (size_t i0 = 0; i0 < m; i0 += 512) {
        alignas(64) T buf[512];
        const size_t c = std::min<size_t>(512, m - i0);
        for (size_t i = 0; i < c; ++i) buf[i] = ((x[i0 + i] + a.v[0]) * a.v[1]) + a.v[2];
        UnaryLoop<K, T, 0, 0>(buf, buf, c, a.v);
        for (size_t i = 0; i < c; ++i) y[i0 + i] = ((buf[i] + a.v[3]) * a.v[4]) + a.v[5];
      }
    };
    switch (k) {
      // The rows of scalar_ops.def with Simd = F64.
#undef HYP_SIMD_CASE_All_1
#undef HYP_SIMD_CASE_F64_1
#define HYP_SIMD_CASE_All_1(KIND)
#define HYP_SIMD_CASE_F64_1(KIND) \
  case ScalarOpKind::KIND:        \
    return run(std::integral_constant<ScalarOpKind, ScalarOpKind::KIND>{});
#define HYP_SCALAR_OP(Kind, Name, Arity, Rule, Cost, Simd, ...) HYP_SIMD_CASE_##Simd##_##Arity(Kind)
#include "hypatia/ops/scalar_ops.def"
      default:
        return;
    }
  }
#undef HYP_SIMD_UNARY
}

template <class T>
void BinaryT(ScalarOpKind k, const void* a, bool as, const void* b, bool bs, void* out, int64_t n, const double* post) {
  const T* x = static_cast<const T*>(a);
  const T* y = static_cast<const T*>(b);
  T* z = static_cast<T*>(out);
  const size_t m = static_cast<size_t>(n);
  const AffineT<T> p(post, 3);
  switch (k) {
#define HYP_SIMD_BINARY(KIND)                                                      \
  case ScalarOpKind::KIND:                                                         \
    return p.on ? BinaryLoop<ScalarOpKind::KIND, T, true>(x, as, y, bs, z, m, p.v) \
                : BinaryLoop<ScalarOpKind::KIND, T, false>(x, as, y, bs, z, m, nullptr);
    // The binary rows of scalar_ops.def with Simd = All.
#undef HYP_SIMD_CASE_All_1
#undef HYP_SIMD_CASE_All_2
#undef HYP_SIMD_CASE_F64_1
#define HYP_SIMD_CASE_All_1(KIND)
#define HYP_SIMD_CASE_All_2(KIND) HYP_SIMD_BINARY(KIND)
#define HYP_SIMD_CASE_F64_1(KIND)
#define HYP_SCALAR_OP(Kind, Name, Arity, Rule, Cost, Simd, ...) HYP_SIMD_CASE_##Simd##_##Arity(Kind)
#include "hypatia/ops/scalar_ops.def"
#undef HYP_SIMD_CASE_None_3
#undef HYP_SIMD_CASE_None_2
#undef HYP_SIMD_CASE_None_1
#undef HYP_SIMD_CASE_F64_1
#undef HYP_SIMD_CASE_All_3
#undef HYP_SIMD_CASE_All_2
#undef HYP_SIMD_CASE_All_1
#undef HYP_SIMD_BINARY
    default:
      return;
  }
}

int64_t ActiveTarget() { return HWY_TARGET; }

void UnaryF32(ScalarOpKind k, const void* in, void* out, int64_t n, const double* aff) {
  UnaryT<float>(k, in, out, n, aff);
}
void UnaryF64(ScalarOpKind k, const void* in, void* out, int64_t n, const double* aff) {
  UnaryT<double>(k, in, out, n, aff);
}
void BinaryF32(ScalarOpKind k, const void* a, bool as, const void* b, bool bs, void* out, int64_t n,
               const double* post) {
  BinaryT<float>(k, a, as, b, bs, out, n, post);
}
void BinaryF64(ScalarOpKind k, const void* a, bool as, const void* b, bool bs, void* out, int64_t n,
               const double* post) {
  BinaryT<double>(k, a, as, b, bs, out, n, post);
}

}  // namespace HWY_NAMESPACE
}  // namespace hypatia
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace hypatia {

HWY_EXPORT(ActiveTarget);
HWY_EXPORT(UnaryF32);
HWY_EXPORT(UnaryF64);
HWY_EXPORT(BinaryF32);
HWY_EXPORT(BinaryF64);

bool simd_supports(ScalarOpKind k, DType dt) {
  if (dt != DType::Float32 && dt != DType::Float64) return false;
  switch (scalar_op_info(k).simd) {
    case ScalarSimd::All:
      return true;
    case ScalarSimd::F64:
      return dt == DType::Float64;
    default:
      return false;
  }
}

std::vector<int64_t> simd_targets() {
  // Not hwy::SupportedAndGeneratedTargets: an inline function, whose one linked copy may come from
  // another TU; HWY_TARGETS here is the set this file's dispatch tables hold.
  std::vector<int64_t> out;
  for (int64_t ts = hwy::SupportedTargets() & HWY_TARGETS; ts != 0; ts &= ts - 1) out.push_back(ts & -ts);
  return out;
}

void simd_force_target(int64_t target) { hwy::SetSupportedTargetsForTest(target); }

std::string simd_target_name(int64_t target) { return hwy::TargetName(target); }

int64_t simd_active_target() { return HWY_DYNAMIC_DISPATCH(ActiveTarget)(); }

void simd_unary(ScalarOpKind k, DType dt, const void* in, void* out, int64_t n, const double* affine) {
  if (dt == DType::Float32)
    HWY_DYNAMIC_DISPATCH(UnaryF32)(k, in, out, n, affine);
  else
    HWY_DYNAMIC_DISPATCH(UnaryF64)(k, in, out, n, affine);
}

void simd_binary(ScalarOpKind k, DType dt, const void* a, bool a_scalar, const void* b, bool b_scalar, void* out,
                 int64_t n, const double* post) {
  if (dt == DType::Float32)
    HWY_DYNAMIC_DISPATCH(BinaryF32)(k, a, a_scalar, b, b_scalar, out, n, post);
  else
    HWY_DYNAMIC_DISPATCH(BinaryF64)(k, a, a_scalar, b, b_scalar, out, n, post);
}

}  // namespace hypatia
#endif  // HWY_ONCE
