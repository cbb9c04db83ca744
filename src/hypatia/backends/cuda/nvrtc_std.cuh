// The part of the C++ standard library that ops/scalar_functors.h and core/half.h use, for NVRTC
// (which has no <cmath> or <type_traits> unless libcu++'s headers are pulled in, ~1 s of compile
// time). The CUDA backend's kernel generator (cuda_codegen.cpp; CMakeLists.txt embeds this file's
// text) renames `std::` to `hstd::` in the table's text and prepends this file. Every function
// here is a device function (NVRTC runs with -default-device).
typedef signed char int8_t;
typedef short int16_t;
typedef int int32_t;
typedef long long int64_t;
typedef unsigned char uint8_t;
typedef unsigned short uint16_t;
typedef unsigned int uint32_t;
typedef unsigned long long uint64_t;
typedef unsigned long size_t;

inline double lgamma_r(double x, int* sign) {
  *sign = 1;
  return lgamma(x);
}

namespace hstd {
template <class A, class B>
inline constexpr bool is_same_v = false;
template <class A>
inline constexpr bool is_same_v<A, A> = true;
template <class T>
inline constexpr bool is_integral_v = false;
template <class T>
inline constexpr bool is_signed_v = false;
template <class T>
inline constexpr bool is_unsigned_v = false;
template <class T>
inline constexpr bool is_floating_point_v = false;
#define HYP_INTEGRAL(T, S)                       \
  template <>                                    \
  inline constexpr bool is_integral_v<T> = true; \
  template <>                                    \
  inline constexpr bool is_signed_v<T> = S;      \
  template <>                                    \
  inline constexpr bool is_unsigned_v<T> = !S;
// clang-format off (one invocation per line; clang-format reflows a run of them differently on each pass)
HYP_INTEGRAL(bool, false)
HYP_INTEGRAL(signed char, true)
HYP_INTEGRAL(unsigned char, false)
HYP_INTEGRAL(char, true)
HYP_INTEGRAL(short, true)
HYP_INTEGRAL(unsigned short, false)
HYP_INTEGRAL(int, true)
HYP_INTEGRAL(unsigned int, false)
HYP_INTEGRAL(long, true)
HYP_INTEGRAL(unsigned long, false)
HYP_INTEGRAL(long long, true)
HYP_INTEGRAL(unsigned long long, false)
// clang-format on
#undef HYP_INTEGRAL
template <>
inline constexpr bool is_floating_point_v<float> = true;
template <>
inline constexpr bool is_floating_point_v<double> = true;
template <>
inline constexpr bool is_signed_v<float> = true;
template <>
inline constexpr bool is_signed_v<double> = true;
template <class T>
inline constexpr bool is_arithmetic_v = is_integral_v<T> || is_floating_point_v<T>;
template <class T>
inline constexpr bool is_trivially_copyable_v = __is_trivially_copyable(T);
template <class To, class From>
constexpr To bit_cast(const From& f) {
  return __builtin_bit_cast(To, f);
}

template <class T>
struct numeric_limits;
#define HYP_INT_LIMITS(T, lo, hi)              \
  template <>                                  \
  struct numeric_limits<T> {                   \
    static constexpr T min() { return lo; }    \
    static constexpr T max() { return hi; }    \
    static constexpr T lowest() { return lo; } \
  };
// clang-format off (one invocation per line; clang-format reflows a run of them differently on each pass)
HYP_INT_LIMITS(bool, false, true)
HYP_INT_LIMITS(signed char, -128, 127)
HYP_INT_LIMITS(unsigned char, 0, 255)
HYP_INT_LIMITS(short, -32768, 32767)
HYP_INT_LIMITS(unsigned short, 0, 65535)
HYP_INT_LIMITS(int, -2147483647 - 1, 2147483647)
HYP_INT_LIMITS(unsigned int, 0u, 4294967295u)
HYP_INT_LIMITS(long, -9223372036854775807L - 1, 9223372036854775807L)
HYP_INT_LIMITS(unsigned long, 0ul, 18446744073709551615ul)
HYP_INT_LIMITS(long long, -9223372036854775807LL - 1, 9223372036854775807LL)
HYP_INT_LIMITS(unsigned long long, 0ull, 18446744073709551615ull)
// clang-format on
#undef HYP_INT_LIMITS
template <>
struct numeric_limits<float> {
  static constexpr float min() { return 1.17549435e-38f; }
  static constexpr float max() { return 3.40282347e+38f; }
  static constexpr float lowest() { return -3.40282347e+38f; }
  static constexpr float infinity() { return __builtin_bit_cast(float, 0x7f800000u); }
  static constexpr float quiet_NaN() { return __builtin_bit_cast(float, 0x7fc00000u); }
};
template <>
struct numeric_limits<double> {
  static constexpr double min() { return 2.2250738585072014e-308; }
  static constexpr double max() { return 1.7976931348623157e+308; }
  static constexpr double lowest() { return -1.7976931348623157e+308; }
  static constexpr double infinity() { return __builtin_bit_cast(double, 0x7ff0000000000000ull); }
  static constexpr double quiet_NaN() { return __builtin_bit_cast(double, 0x7ff8000000000000ull); }
};

// One overload per floating type, forwarding to CUDA's device math (::expf, ::exp, ...).
#define HYP_MATH1(name)                               \
  inline float name(float x) { return ::name##f(x); } \
  inline double name(double x) { return ::name(x); }
#define HYP_MATH2(name)                                           \
  inline float name(float x, float y) { return ::name##f(x, y); } \
  inline double name(double x, double y) { return ::name(x, y); }
// clang-format off (one invocation per line; clang-format reflows a run of them differently on each pass)
HYP_MATH1(exp)
HYP_MATH1(exp2)
HYP_MATH1(expm1)
HYP_MATH1(log)
HYP_MATH1(log2)
HYP_MATH1(log10)
HYP_MATH1(log1p)
HYP_MATH1(sqrt)
HYP_MATH1(sin)
HYP_MATH1(cos)
HYP_MATH1(tan)
HYP_MATH1(asin)
HYP_MATH1(acos)
HYP_MATH1(atan)
HYP_MATH1(sinh)
HYP_MATH1(cosh)
HYP_MATH1(tanh)
HYP_MATH1(asinh)
HYP_MATH1(acosh)
HYP_MATH1(atanh)
HYP_MATH1(erf)
HYP_MATH1(erfc)
HYP_MATH1(tgamma)
HYP_MATH1(lgamma)
HYP_MATH1(floor)
HYP_MATH1(ceil)
HYP_MATH1(trunc)
HYP_MATH1(nearbyint)
HYP_MATH1(fabs)
HYP_MATH2(pow)
HYP_MATH2(atan2)
HYP_MATH2(fmod)
HYP_MATH2(copysign)
// clang-format on
#undef HYP_MATH1
#undef HYP_MATH2
inline bool isnan(float x) { return ::isnan(x); }
inline bool isnan(double x) { return ::isnan(x); }
inline bool isinf(float x) { return ::isinf(x); }
inline bool isinf(double x) { return ::isinf(x); }
}  // namespace hstd
