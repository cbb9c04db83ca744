// The scalar functions behind every Elemwise op, written once: the reference kernel, the CPU
// kernel (scalar tails and non-SIMD ops), the fusion pass and code generators all use these.
//
// ScalarFn<K>::apply(args...) computes one element. Its arguments have the op's compute type T
// (see elemwise_compute_dtype in elemwise.h: the promoted/upcast type the inputs are cast to),
// except Switch whose condition is a bool; it returns the output element (bool for comparisons,
// isnan and isinf, else T). ScalarFn<K>::supports<T> says whether T is a valid compute type.
// Integer arithmetic wraps like numpy (no signed-overflow UB); integer division and modulo by
// zero give 0 (numpy gives 0 with a warning).
#pragma once
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <utility>

#include "hypatia/core/error.h"
#include "hypatia/ops/elemwise.h"

namespace hypatia {

namespace scalar_math {

template <class T>
inline constexpr bool is_bool_v = std::is_same_v<T, bool>;
template <class T>
inline constexpr bool is_int_v = std::is_integral_v<T> && !is_bool_v<T>;
template <class T>
inline constexpr bool is_float_v = std::is_floating_point_v<T>;

/// a + b wrapping on integer overflow (logical or for bool, like numpy).
template <class T>
inline T add(T a, T b) {
  if constexpr (is_bool_v<T>)
    return a || b;
  else if constexpr (is_int_v<T>)
    return static_cast<T>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
  else
    return a + b;
}
template <class T>
inline T sub(T a, T b) {
  if constexpr (is_int_v<T>)
    return static_cast<T>(static_cast<uint64_t>(a) - static_cast<uint64_t>(b));
  else
    return a - b;
}
/// a * b wrapping on integer overflow (logical and for bool).
template <class T>
inline T mul(T a, T b) {
  if constexpr (is_bool_v<T>)
    return a && b;
  else if constexpr (is_int_v<T>)
    return static_cast<T>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
  else
    return a * b;
}
template <class T>
inline T neg(T a) {
  if constexpr (is_int_v<T>)
    return static_cast<T>(uint64_t{0} - static_cast<uint64_t>(a));
  else
    return -a;
}

/// Integer types whose floor division is computed through a floating-point quotient: int8 to
/// int16 in float32, int32 in float64. Exact: a quotient that is not an integer is at least 1/|b|
/// from one, which is at least 1/|a| of its size, more than its rounding error (2^-24 or 2^-53
/// of it) for |a| < 2^24 or 2^53; an integer quotient is exact. No branch, no integer divide: the
/// loops vectorize (an int8 // 3 took 32x numpy's time).
template <class T>
inline constexpr bool kDivThroughFloat = is_int_v<T> && (sizeof(T) <= 2 || std::is_same_v<T, int32_t>);
/// The floating-point type of that quotient (spelled without <type_traits>' conditional, which
/// the NVRTC texts lack).
template <size_t Bytes>
struct DivQuotient {
  using type = double;
};
template <>
struct DivQuotient<1> {
  using type = float;
};
template <>
struct DivQuotient<2> {
  using type = float;
};

/// numpy floor_divide: rounds toward minus infinity; integer division by zero gives 0.
template <class T>
inline T int_div(T a, T b) {
  if constexpr (kDivThroughFloat<T>) {
    using F = typename DivQuotient<sizeof(T)>::type;
    // b == 0 gives 0 and a signed b == -1 gives -a (wrapping at the minimum, whose quotient would
    // not fit in int32); both divide by 1 meanwhile.
    const bool minus_one = std::is_signed_v<T> && b == T(-1);
    const bool special = b == 0 || minus_one;
    const F q = static_cast<F>(a) / static_cast<F>(special ? T(1) : b);
    int32_t t = static_cast<int32_t>(q);  // toward zero, then down for a negative fraction
    t -= static_cast<int32_t>(static_cast<F>(t) > q);
    const T r = static_cast<T>(t);
    return b == 0 ? T(0) : minus_one ? neg(a) : r;
  } else if constexpr (is_int_v<T>) {
    if (b == 0) return 0;
    if constexpr (std::is_signed_v<T>) {
      if (b == -1) return neg(a);
      T q = static_cast<T>(a / b);
      if (static_cast<T>(a % b) != 0 && ((a < 0) != (b < 0))) q = static_cast<T>(q - 1);
      return q;
    } else {
      return static_cast<T>(a / b);
    }
  } else {
    // numpy's npy_divmod: exact floor of the quotient, consistent with mod().
    if (b == 0) return a / b;
    T m = std::fmod(a, b);
    T div = (a - m) / b;
    if (m != 0 && ((b < 0) != (m < 0))) div -= 1;
    if (div == 0) return std::copysign(T(0), a / b);
    T fl = std::floor(div);
    if (div - fl > T(0.5)) fl += 1;
    return fl;
  }
}

/// numpy remainder: the result has the divisor's sign; integer modulo by zero gives 0.
template <class T>
inline T mod(T a, T b) {
  if constexpr (kDivThroughFloat<T>) {
    // a - b * floor(a / b), in the type's wrapping arithmetic (b == 0: 0; b == -1: 0).
    const T r =
        static_cast<T>(static_cast<uint32_t>(a) - static_cast<uint32_t>(b) * static_cast<uint32_t>(int_div(a, b)));
    return b == 0 ? T(0) : r;
  } else if constexpr (is_int_v<T>) {
    if (b == 0) return 0;
    if constexpr (std::is_signed_v<T>) {
      if (b == -1) return 0;
      T r = static_cast<T>(a % b);
      if (r != 0 && ((r < 0) != (b < 0))) r = static_cast<T>(r + b);
      return r;
    } else {
      return static_cast<T>(a % b);
    }
  } else {
    T m = std::fmod(a, b);
    if (b == 0) return m;
    if (m != 0) {
      if ((b < 0) != (m < 0)) m += b;
    } else {
      m = std::copysign(T(0), b);
    }
    return m;
  }
}

/// a ** b; integers stay integers (wrapping), a negative integer exponent gives 1/a^|b| truncated.
template <class T>
inline T pow(T a, T b) {
  if constexpr (is_int_v<T>) {
    if constexpr (std::is_signed_v<T>) {
      if (b < 0) {
        if (a == 1) return 1;
        if (a == -1) return (b & 1) ? T(-1) : T(1);
        return 0;
      }
    }
    uint64_t r = 1, base = static_cast<uint64_t>(a);
    for (uint64_t e = static_cast<uint64_t>(b); e != 0; e >>= 1) {
      if (e & 1) r *= base;
      base *= base;
    }
    return static_cast<T>(r);
  } else {
    return std::pow(a, b);
  }
}

/// numpy maximum/minimum: NaN propagates.
template <class T>
inline T maximum(T a, T b) {
  if constexpr (is_float_v<T>) {
    if (std::isnan(a) || std::isnan(b)) return a + b;
  }
  return a < b ? b : a;
}
template <class T>
inline T minimum(T a, T b) {
  if constexpr (is_float_v<T>) {
    if (std::isnan(a) || std::isnan(b)) return a + b;
  }
  return b < a ? b : a;
}

template <class T>
inline T abs(T x) {
  if constexpr (is_bool_v<T> || std::is_unsigned_v<T>)
    return x;
  else if constexpr (is_int_v<T>)
    return x < 0 ? neg(x) : x;
  else
    return std::fabs(x);
}

template <class T>
inline T sign(T x) {
  if constexpr (std::is_unsigned_v<T>)
    return x > 0 ? T(1) : T(0);
  else if constexpr (is_int_v<T>)
    return x > 0 ? T(1) : (x < 0 ? T(-1) : T(0));
  else {
    if (std::isnan(x)) return x;
    return x > 0 ? T(1) : (x < 0 ? T(-1) : T(0));
  }
}

/// Logistic function 1 / (1 + exp(-x)), without overflow for large |x|.
template <class T>
inline T sigmoid(T x) {
  if (x >= 0) return T(1) / (T(1) + std::exp(-x));
  T e = std::exp(x);
  return e / (T(1) + e);
}

/// log(1 + exp(x)), accurate for large |x|.
template <class T>
inline T softplus(T x) {
  if (x > 0) return x + std::log1p(std::exp(-x));
  return std::log1p(std::exp(x));
}

/// Inverse error function in float64: a float32-accurate initial guess refined by Newton steps
/// (on erfc in the tails, where 1 - |y| is exact).
inline double erfinv(double y) {
  if (std::isnan(y) || y < -1 || y > 1) return std::numeric_limits<double>::quiet_NaN();
  if (y == 1) return std::numeric_limits<double>::infinity();
  if (y == -1) return -std::numeric_limits<double>::infinity();
  if (y == 0) return y;
  double w = -std::log((1.0 - y) * (1.0 + y));
  double p;
  if (w < 5.0) {
    w -= 2.5;
    p = 2.81022636e-08;
    p = 3.43273939e-07 + p * w;
    p = -3.5233877e-06 + p * w;
    p = -4.39150654e-06 + p * w;
    p = 0.00021858087 + p * w;
    p = -0.00125372503 + p * w;
    p = -0.00417768164 + p * w;
    p = 0.246640727 + p * w;
    p = 1.50140941 + p * w;
  } else {
    w = std::sqrt(w) - 3.0;
    p = -0.000200214257;
    p = 0.000100950558 + p * w;
    p = 0.00134934322 + p * w;
    p = -0.00367342844 + p * w;
    p = 0.00573950773 + p * w;
    p = -0.0076224613 + p * w;
    p = 0.00943887047 + p * w;
    p = 1.00167406 + p * w;
    p = 2.83297682 + p * w;
  }
  const double ay = std::fabs(y);
  double x = std::fabs(p * y);
  const double two_over_sqrt_pi = 1.1283791670955126;
  if (ay <= 0.5) {
    for (int it = 0; it < 4; ++it) {
      const double dx = (std::erf(x) - ay) / (two_over_sqrt_pi * std::exp(-x * x));
      x -= dx;
      if (std::fabs(dx) <= 1e-17 * x) break;
    }
  } else {
    // In the tail solve log(erfc(x)) = log(1 - |y|) (1 - |y| is exact): nearly quadratic in x, so
    // Newton converges fast even from a rough guess.
    const double target = std::log(1.0 - ay);
    for (int it = 0; it < 40; ++it) {
      const double ec = std::erfc(x);
      if (ec == 0) break;
      const double dx = (std::log(ec) - target) / (-two_over_sqrt_pi * std::exp(-x * x) / ec);
      x -= dx;
      if (std::fabs(dx) <= 1e-16 * x) break;
    }
  }
  return y < 0 ? -x : x;
}

/// Digamma (psi) in float64: reflection for x < 0, recurrence up to x >= 10, asymptotic series.
/// psi(+0) = -inf, psi(-0) = +inf, NaN at negative integers (like scipy).
inline double digamma(double x) {
  constexpr double kPi = 3.141592653589793238;
  if (std::isnan(x)) return x;
  if (x == 0) return std::copysign(std::numeric_limits<double>::infinity(), -x);
  if (std::isinf(x)) return x > 0 ? x : std::numeric_limits<double>::quiet_NaN();
  double r = 0;
  if (x < 0) {
    double fl = std::floor(x);
    if (x == fl) return std::numeric_limits<double>::quiet_NaN();
    // psi(x) = psi(1 - x) - pi / tan(pi x); tan has period pi so reduce x by its integer part.
    r = -kPi / std::tan(kPi * (x - fl));
    x = 1 - x;
  }
  while (x < 10) {
    r -= 1 / x;
    x += 1;
  }
  double f = 1 / (x * x);
  double t =
      f *
      (-1.0 / 12 +
       f * (1.0 / 120 + f * (-1.0 / 252 + f * (1.0 / 240 + f * (-1.0 / 132 + f * (691.0 / 32760 + f * (-1.0 / 12)))))));
  return r + std::log(x) - 0.5 / x + t;
}

/// Trigamma (psi') in float64: reflection for x < 0, recurrence up to x >= 10, asymptotic series.
/// +inf at the poles (x = 0, -1, -2 ...).
inline double trigamma(double x) {
  constexpr double kPi = 3.141592653589793238;
  if (std::isnan(x)) return x;
  if (x == -std::numeric_limits<double>::infinity()) return std::numeric_limits<double>::quiet_NaN();
  if (x <= 0 && x == std::floor(x)) return std::numeric_limits<double>::infinity();
  if (x < 0) {
    // psi1(x) + psi1(1 - x) = pi^2 / sin^2(pi x); sin^2 has period 1 so reduce x first.
    const double s = std::sin(kPi * (x - std::floor(x)));
    return kPi * kPi / (s * s) - trigamma(1 - x);
  }
  double r = 0;
  while (x < 10) {
    r += 1 / (x * x);
    x += 1;
  }
  const double f = 1 / (x * x);
  const double t =
      f * (1.0 / 6 +
           f * (-1.0 / 30 + f * (1.0 / 42 + f * (-1.0 / 30 + f * (5.0 / 66 + f * (-691.0 / 2730 + f * (7.0 / 6)))))));
  return r + 1 / x + 0.5 * f + t / x;
}

/// log|gamma(x)| without touching the global signgam (thread-safe).
inline double gammaln(double x) {
  int sign;
  return ::lgamma_r(x, &sign);
}

/// Bitwise and / or / xor / not of integers (logical for bool).
template <class T>
inline T bit_and(T a, T b) {
  if constexpr (is_bool_v<T>)
    return a && b;
  else
    return static_cast<T>(a & b);
}
template <class T>
inline T bit_or(T a, T b) {
  if constexpr (is_bool_v<T>)
    return a || b;
  else
    return static_cast<T>(a | b);
}
template <class T>
inline T bit_xor(T a, T b) {
  if constexpr (is_bool_v<T>)
    return a != b;
  else
    return static_cast<T>(a ^ b);
}
template <class T>
inline T bit_not(T x) {
  if constexpr (is_bool_v<T>)
    return !x;
  else
    return static_cast<T>(~x);
}

/// Half to even (the default rounding mode); integers are already round.
template <class T>
inline T round_half_even(T x) {
  if constexpr (is_float_v<T>)
    return std::nearbyint(x);
  else
    return x;
}

/// isnan / isinf for any type (false for integers and bool).
template <class T>
inline bool is_nan(T x) {
  if constexpr (is_float_v<T>)
    return std::isnan(x);
  else
    return false;
}
template <class T>
inline bool is_inf(T x) {
  if constexpr (is_float_v<T>)
    return std::isinf(x);
  else
    return false;
}

/// Conversion for Cast, float16 (storage) included. Float -> integer conversion without UB: NaN and out-of-range values
/// give the type's minimum for signed types (what x86 gives numpy) and 0 for unsigned ones.
template <class To, class From>
inline To convert(From x) {
  if constexpr (std::is_same_v<From, half>) {
    return convert<To>(x.to_float());
  } else if constexpr (std::is_same_v<To, half>) {
    return half(x);  // round to nearest even; NaN stays NaN, overflow gives infinity
  } else if constexpr (is_float_v<From> && is_int_v<To>) {
    constexpr double lo = static_cast<double>(std::numeric_limits<To>::min());
    constexpr double hi = static_cast<double>(std::numeric_limits<To>::max()) + 1.0;
    double d = static_cast<double>(x);
    if (!(d > lo - 1.0 && d < hi)) return std::is_signed_v<To> ? std::numeric_limits<To>::min() : To(0);
    return static_cast<To>(d);
  } else if constexpr (is_bool_v<To>) {
    return x != From(0);
  } else {
    return static_cast<To>(x);
  }
}

}  // namespace scalar_math

/// The scalar function of op kind K (specialized below).
template <ScalarOpKind K>
struct ScalarFn;

// One specialization per row of scalar_ops.def (Cast has none: its output type is an attribute).
// The Rule column gives the valid compute types and the result type; the Fn column the body.
#define HYP_SUPPORTS_Same true
#define HYP_SUPPORTS_Select true
#define HYP_SUPPORTS_Compare true
#define HYP_SUPPORTS_Predicate true
#define HYP_SUPPORTS_NoBool (!scalar_math::is_bool_v<T>)
#define HYP_SUPPORTS_BoolToInt8 (!scalar_math::is_bool_v<T>)
#define HYP_SUPPORTS_Bitwise (std::is_integral_v<T>)
#define HYP_SUPPORTS_Float (std::is_floating_point_v<T>)
#define HYP_RESULT_Compare bool
#define HYP_RESULT_Predicate bool
#define HYP_RESULT_Same T
#define HYP_RESULT_Select T
#define HYP_RESULT_NoBool T
#define HYP_RESULT_BoolToInt8 T
#define HYP_RESULT_Bitwise T
#define HYP_RESULT_Float T
#define HYP_FIRST_ARG_Select bool
#define HYP_FIRST_ARG_Same T
#define HYP_APPLY_1(Rule, Fn)           \
  template <class T>                    \
  static HYP_RESULT_##Rule apply(T x) { \
    return Fn;                          \
  }
#define HYP_APPLY_2(Rule, Fn)                \
  template <class T>                         \
  static HYP_RESULT_##Rule apply(T a, T b) { \
    return Fn;                               \
  }
#define HYP_APPLY_3(Rule, Fn)                                        \
  template <class T>                                                 \
  static HYP_RESULT_##Rule apply(HYP_FIRST_ARG_##Rule a, T b, T c) { \
    return Fn;                                                       \
  }
#define HYP_SCALAR_FN(Kind, Arity, Rule, Fn)              \
  template <>                                             \
  struct ScalarFn<ScalarOpKind::Kind> {                   \
    static constexpr int arity = Arity;                   \
    template <class T>                                    \
    static constexpr bool supports = HYP_SUPPORTS_##Rule; \
    HYP_APPLY_##Arity(Rule, Fn)                           \
  };
#define HYP_SCALAR_FN_Cast(Kind, Arity, Rule, Fn)
#define HYP_SCALAR_FN_Same HYP_SCALAR_FN
#define HYP_SCALAR_FN_NoBool HYP_SCALAR_FN
#define HYP_SCALAR_FN_BoolToInt8 HYP_SCALAR_FN
#define HYP_SCALAR_FN_Float HYP_SCALAR_FN
#define HYP_SCALAR_FN_Bitwise HYP_SCALAR_FN
#define HYP_SCALAR_FN_Compare HYP_SCALAR_FN
#define HYP_SCALAR_FN_Predicate HYP_SCALAR_FN
#define HYP_SCALAR_FN_Select HYP_SCALAR_FN
#define HYP_SCALAR_OP(Kind, Name, Arity, Rule, Cost, Simd, Build, Cpp, Core, Py, Doc, Fn, Grad) \
  HYP_SCALAR_FN_##Rule(Kind, Arity, Rule, Fn)
#include "hypatia/ops/scalar_ops.def"
#undef HYP_SCALAR_FN_Select
#undef HYP_SCALAR_FN_Predicate
#undef HYP_SCALAR_FN_Compare
#undef HYP_SCALAR_FN_Bitwise
#undef HYP_SCALAR_FN_Float
#undef HYP_SCALAR_FN_BoolToInt8
#undef HYP_SCALAR_FN_NoBool
#undef HYP_SCALAR_FN_Same
#undef HYP_SCALAR_FN_Cast
#undef HYP_SCALAR_FN
#undef HYP_APPLY_3
#undef HYP_APPLY_2
#undef HYP_APPLY_1
#undef HYP_FIRST_ARG_Same
#undef HYP_FIRST_ARG_Select
#undef HYP_RESULT_Float
#undef HYP_RESULT_Bitwise
#undef HYP_RESULT_BoolToInt8
#undef HYP_RESULT_NoBool
#undef HYP_RESULT_Select
#undef HYP_RESULT_Same
#undef HYP_RESULT_Predicate
#undef HYP_RESULT_Compare
#undef HYP_SUPPORTS_Float
#undef HYP_SUPPORTS_Bitwise
#undef HYP_SUPPORTS_BoolToInt8
#undef HYP_SUPPORTS_NoBool
#undef HYP_SUPPORTS_Predicate
#undef HYP_SUPPORTS_Compare
#undef HYP_SUPPORTS_Select
#undef HYP_SUPPORTS_Same

namespace scalar_detail {
template <ScalarOpKind K, class T>
auto result_probe() {
  using Fn = ScalarFn<K>;
  if constexpr (scalar_op_info(K).rule == ScalarDTypeRule::Select)
    return Fn::apply(false, T{}, T{});
  else if constexpr (Fn::arity == 1)
    return Fn::apply(T{});
  else if constexpr (Fn::arity == 2)
    return Fn::apply(T{}, T{});
  else
    return Fn::apply(T{}, T{}, T{});
}
}  // namespace scalar_detail

/// The output element type of ScalarFn<K> on compute type T.
template <ScalarOpKind K, class T>
using scalar_result_t = decltype(scalar_detail::result_probe<K, T>());

/// How ScalarFn<K>'s input i is read: bool for Switch's condition, else the compute type T.
template <ScalarOpKind K, class T, int I>
using scalar_input_t = std::conditional_t<scalar_op_info(K).rule == ScalarDTypeRule::Select && I == 0, bool, T>;

/// Loads an element; a bool is read as a byte != 0, so any non-zero byte is true.
template <class T>
inline T load_element(const std::byte* p) {
  if constexpr (std::is_same_v<T, bool>)
    return *reinterpret_cast<const uint8_t*>(p) != 0;
  else
    return *reinterpret_cast<const T*>(p);
}

/// Calls f(std::integral_constant<ScalarOpKind, k>{}). Cast has no ScalarFn (its output type is an
/// attribute): callers handle it first, and passing it throws InternalError.
template <class F>
decltype(auto) dispatch_scalar_kind(ScalarOpKind k, F&& f) {
  switch (k) {
#define HYP_KIND_CASE_Cast(K) \
  case ScalarOpKind::K:       \
    break;
#define HYP_KIND_CASE(K) \
  case ScalarOpKind::K:  \
    return f(std::integral_constant<ScalarOpKind, ScalarOpKind::K>{});
#define HYP_KIND_CASE_Same HYP_KIND_CASE
#define HYP_KIND_CASE_NoBool HYP_KIND_CASE
#define HYP_KIND_CASE_BoolToInt8 HYP_KIND_CASE
#define HYP_KIND_CASE_Float HYP_KIND_CASE
#define HYP_KIND_CASE_Bitwise HYP_KIND_CASE
#define HYP_KIND_CASE_Compare HYP_KIND_CASE
#define HYP_KIND_CASE_Predicate HYP_KIND_CASE
#define HYP_KIND_CASE_Select HYP_KIND_CASE
#define HYP_SCALAR_OP(Kind, Name, Arity, Rule, ...) HYP_KIND_CASE_##Rule(Kind)
#include "hypatia/ops/scalar_ops.def"
#undef HYP_KIND_CASE_Select
#undef HYP_KIND_CASE_Predicate
#undef HYP_KIND_CASE_Compare
#undef HYP_KIND_CASE_Bitwise
#undef HYP_KIND_CASE_Float
#undef HYP_KIND_CASE_BoolToInt8
#undef HYP_KIND_CASE_NoBool
#undef HYP_KIND_CASE_Same
#undef HYP_KIND_CASE
#undef HYP_KIND_CASE_Cast
  }
  throw InternalError("dispatch_scalar_kind: Cast has no ScalarFn");
}

}  // namespace hypatia
