// Elemwise SIMD kernels: float32/float64 results within a few ulps of the C library over sweeps
// that include the special values, and binary ops with scalar operands.
#include <cmath>
#include <cstring>
#include <limits>

#include "hypatia/backends/cpu/elemwise_simd.h"
#include "hypatia/ops/scalar_functors.h"
#include "test_util.h"

namespace hypatia {
namespace {

/// Distance in units in the last place between two finite floats of the same type.
template <class T>
double ulp_distance(T a, T b) {
  if (std::isnan(a) && std::isnan(b)) return 0;
  if (a == b) return 0;
  if (std::isnan(a) || std::isnan(b) || std::isinf(a) || std::isinf(b)) return 1e30;
  using I = std::conditional_t<sizeof(T) == 4, int32_t, int64_t>;
  I ia, ib;
  std::memcpy(&ia, &a, sizeof(T));
  std::memcpy(&ib, &b, sizeof(T));
  // Map the sign-magnitude bit patterns onto a monotonic integer line.
  if (ia < 0) ia = std::numeric_limits<I>::min() - ia;
  if (ib < 0) ib = std::numeric_limits<I>::min() - ib;
  const __int128 diff = static_cast<__int128>(ia) - static_cast<__int128>(ib);
  return static_cast<double>(diff < 0 ? -diff : diff);
}

template <class T>
void check_simd_accuracy(Var (*build)(Var), T (*ref)(T), std::vector<T> values, double max_ulp, const char* what) {
  // Dense sweeps plus the special values, then padded to an odd length to exercise the tail.
  const DType dt = dtype_of<T>();
  Var x = variable(tensor_type(dt, 1), "x");
  values.push_back(std::numeric_limits<T>::quiet_NaN());
  NDArray in = NDArray::from_vector(values);
  NDArray out = eval(build(x), {{x, in}}, kCpuBackend);
  for (size_t i = 0; i < values.size(); ++i) {
    T got = out.data<T>()[i];
    T want = ref(values[i]);
    EXPECT_LE(ulp_distance(got, want), max_ulp) << what << "(" << values[i] << ") = " << got << ", std: " << want;
  }
}

template <class T>
std::vector<T> sweep(double lo, double hi, int n, std::vector<double> extra = {}) {
  std::vector<T> v;
  for (int i = 0; i < n; ++i) v.push_back(static_cast<T>(lo + (hi - lo) * i / (n - 1)));
  for (double e : extra) v.push_back(static_cast<T>(e));
  return v;
}

template <class T>
void simd_accuracy_suite() {
  const double inf = std::numeric_limits<double>::infinity();
  const double big = sizeof(T) == 4 ? 3e38 : 1e308;
  const double tiny = sizeof(T) == 4 ? 1e-40 : 1e-310;
  check_simd_accuracy<T>(
      exp, [](T v) { return std::exp(v); },
      sweep<T>(-110, 110, 4001, {inf, -inf, 0, -0.0, sizeof(T) == 4 ? 88.72 : 709.7, 88.73, 705, 708, -744}), 3, "exp");
  check_simd_accuracy<T>(
      expm1, [](T v) { return std::expm1(v); }, sweep<T>(-60, 60, 2001, {inf, -inf, 1e-7, -1e-7, 0, 705, 709}), 3,
      "expm1");
  check_simd_accuracy<T>(
      log, [](T v) { return std::log(v); }, sweep<T>(1e-3, 1000, 2001, {inf, 0, -1, tiny, big, 1, 1e-30, 1e30}), 3,
      "log");
  check_simd_accuracy<T>(
      log1p, [](T v) { return std::log1p(v); }, sweep<T>(-0.999, 50, 2001, {inf, -1, -2, 1e-9, -1e-9, 0, -0.5, big}), 4,
      "log1p");
  // float32 tanh is a rational approximation (XLA's): 5.2 ulp at most from the correctly rounded
  // result over 20M points of [-12, 12] (mean 0.74), so 6 from glibc's tanhf; float64 is Highway's.
  check_simd_accuracy<T>(
      tanh, [](T v) { return std::tanh(v); },
      sweep<T>(-25, 25, 200001, {inf, -inf, 1e-9, -1e-30, 1e-40, 0, -0.0, 7.9, 7.91, 9.1, big}), sizeof(T) == 4 ? 6 : 4,
      "tanh");
  check_simd_accuracy<T>(
      sin, [](T v) { return std::sin(v); }, sweep<T>(-100, 100, 2001, {inf, 1e5, -4e4, 1e-6}), 4, "sin");
  check_simd_accuracy<T>(
      cos, [](T v) { return std::cos(v); }, sweep<T>(-100, 100, 2001, {inf, 1e5, -4e4, 1e-6}), 4, "cos");
  check_simd_accuracy<T>(
      sqrt, [](T v) { return std::sqrt(v); }, sweep<T>(0, 100, 501, {inf, -1, tiny}), 0, "sqrt");
  check_simd_accuracy<T>(
      sigmoid, [](T v) { return scalar_math::sigmoid(v); }, sweep<T>(-120, 120, 2001, {inf, -inf, 0, 800, -800}), 4,
      "sigmoid");
  check_simd_accuracy<T>(
      softplus, [](T v) { return scalar_math::softplus(v); }, sweep<T>(-120, 120, 2001, {inf, -inf, 0, 1e-3, -1e-3}), 4,
      "softplus");
}

/// floor, ceil, trunc and round (half to even) in SIMD: bit for bit the C library's, the sign of
/// a zero result included, at halves (odd and even), just below them, beyond 2^mantissa, at
/// subnormals, infinities and NaN, in runs long enough for the vector loop and its tail.
template <class T>
void check_rounding_bits() {
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<T> v =
      sweep<T>(-6, 6, 1201, {0.5,  1.5,  2.5,  -0.5,  -1.5,   -2.5,      -0.4,       0.4,     -0.0,
                             0.0,  inf,  -inf, 1e-40, -1e-40, 8388607.5, -8388607.5, 8388609, 4503599627370495.5,
                             1e30, -1e30});
  v.push_back(std::nextafter(T(0.5), T(0)));
  v.push_back(-std::nextafter(T(0.5), T(0)));
  v.push_back(std::nextafter(T(2.5), T(3)));
  v.push_back(std::numeric_limits<T>::quiet_NaN());
  v.push_back(std::numeric_limits<T>::denorm_min());
  const DType dt = dtype_of<T>();
  Var x = variable(tensor_type(dt, 1), "x");
  const NDArray in = NDArray::from_vector(v);
  struct Case {
    Var out;
    T (*ref)(T);
    const char* name;
  };
  for (const Case& c : {Case{floor(x), [](T a) { return std::floor(a); }, "floor"},
                        Case{ceil(x), [](T a) { return std::ceil(a); }, "ceil"},
                        Case{trunc(x), [](T a) { return std::trunc(a); }, "trunc"},
                        Case{round(x), [](T a) { return std::nearbyint(a); }, "round"}}) {
    ASSERT_TRUE(simd_supports(static_cast<const Elemwise&>(*c.out->owner->op).scalar, dt)) << c.name;
    for (int64_t target : simd_targets()) {
      simd_force_target(target);
      const NDArray out = eval(c.out, {{x, in}}, kCpuBackend);
      for (size_t i = 0; i < v.size(); ++i) {
        const T got = out.data<T>()[i], want = c.ref(v[i]);
        EXPECT_TRUE(std::memcmp(&got, &want, sizeof(T)) == 0 || (std::isnan(got) && std::isnan(want)))
            << simd_target_name(target) << " " << c.name << "(" << v[i] << ") = " << got << ", std: " << want;
      }
    }
    simd_force_target(0);
  }
}

TEST(ElemwiseSimd, RoundingMatchesTheCLibraryBitForBitOnEveryTarget) {
  check_rounding_bits<float>();
  check_rounding_bits<double>();
}

TEST(ElemwiseSimd, Float32MatchesStdWithinUlps) { simd_accuracy_suite<float>(); }
TEST(ElemwiseSimd, Float64MatchesStdWithinUlps) { simd_accuracy_suite<double>(); }

TEST(ElemwiseSimd, BinaryOpsAndScalarOperands) {
  for (DType dt : testing::kFloatTypes) {
    Var a = variable(tensor_type(dt, 1), "a"), b = variable(scalar_type(dt), "b");
    NDArray av = testing::random_array({67}, dt, -3, 3, 91), bv = testing::random_array({}, dt, 0.5, 2, 92);
    for (auto f : {add, sub, mul, true_div, maximum, minimum}) {
      for (Var out : {f(a, b), f(b, a), f(a, a)}) {
        NDArray cpu = eval(out, {{a, av}, {b, bv}}, kCpuBackend);
        NDArray ref = eval(out, {{a, av}, {b, bv}}, kReferenceBackend);
        EXPECT_ALLCLOSE(cpu, ref, 1e-6, 0) << out->owner->op->name();
      }
    }
  }
}

}  // namespace
}  // namespace hypatia
