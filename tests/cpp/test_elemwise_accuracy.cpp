// Accuracy of the elementwise math (docs/NUMERICS.md): float64 within 1 ulp of the correctly
// rounded result on every compiled SIMD target (measured against long double, whose 11 extra bits
// make the measurement exact to about 2^-10 ulp), exact at the points where the function is exact,
// the same bits whatever the layout, and float32 within its documented per-function bound.
#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "hypatia/backends/cpu/elemwise_simd.h"
#include "test_util.h"

namespace hypatia {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

/// |got - exact| in units of the last place of the correctly rounded result (type T); special
/// values must match exactly (NaN with NaN, inf with inf of the same sign, zeros with their sign).
template <class T>
double ulp_error(T got, long double exact) {
  const T cr = static_cast<T>(exact);
  if (std::isnan(cr) || std::isnan(got)) return std::isnan(cr) && std::isnan(got) ? 0 : 1e30;
  if (std::isinf(cr) || std::isinf(got) || cr == 0 || got == 0) {
    // A result that rounds to 0 or inf must be that value, with its sign.
    if (cr == got && std::signbit(cr) == std::signbit(got)) return 0;
    if (std::isinf(cr) || std::isinf(got)) return 1e30;
  }
  int e;
  std::frexp(cr == 0 ? got : cr, &e);
  const int mant = std::numeric_limits<T>::digits;
  const int min_e = std::numeric_limits<T>::min_exponent;
  const long double ulp = std::ldexp(1.0L, std::max(e, min_e) - mant);
  return static_cast<double>(std::fabs(static_cast<long double>(got) - exact) / ulp);
}

struct MathFn {
  const char* name;
  ScalarOpKind kind;
  long double (*ref)(long double);
  double lo, hi;          // the random range
  bool f64_only = false;  // float32 keeps the C library's function (no SIMD loop)
};

long double ref_sigmoid(long double x) { return 1.0L / (1.0L + expl(-x)); }
long double ref_softplus(long double x) { return x > 0 ? x + log1pl(expl(-x)) : log1pl(expl(x)); }

const MathFn kFns[] = {
    {"exp", ScalarOpKind::Exp, [](long double x) { return expl(x); }, -746, 710},
    {"expm1", ScalarOpKind::Expm1, [](long double x) { return expm1l(x); }, -45, 710},
    {"log", ScalarOpKind::Log, [](long double x) { return logl(x); }, 0, 1e308},
    {"log1p", ScalarOpKind::Log1p, [](long double x) { return log1pl(x); }, -1, 1e308},
    {"tanh", ScalarOpKind::Tanh, [](long double x) { return tanhl(x); }, -25, 25},
    {"sigmoid", ScalarOpKind::Sigmoid, ref_sigmoid, -760, 760},
    {"softplus", ScalarOpKind::Softplus, ref_softplus, -760, 760},
    {"sin", ScalarOpKind::Sin, [](long double x) { return sinl(x); }, -1e6, 1e6},
    {"cos", ScalarOpKind::Cos, [](long double x) { return cosl(x); }, -1e6, 1e6},
    {"sqrt", ScalarOpKind::Sqrt, [](long double x) { return sqrtl(x); }, 0, 1e308},
    {"log10", ScalarOpKind::Log10, [](long double x) { return log10l(x); }, 0, 1e308, true},
    {"log2", ScalarOpKind::Log2, [](long double x) { return log2l(x); }, 0, 1e308, true},
    {"sinh", ScalarOpKind::Sinh, [](long double x) { return sinhl(x); }, -712, 712, true},
    {"cosh", ScalarOpKind::Cosh, [](long double x) { return coshl(x); }, -712, 712, true},
    {"arccosh", ScalarOpKind::ArcCosh, [](long double x) { return acoshl(x); }, 1, 1e308, true},
};

/// Sample points: uniform in the function's range, uniform near 0, random bit patterns in the
/// range (every binade), and the special values.
template <class T>
std::vector<T> sample_points(const MathFn& f, int n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<T> v;
  const double lo = std::max<double>(f.lo, -std::numeric_limits<T>::max());
  const double hi = std::min<double>(f.hi, std::numeric_limits<T>::max());
  std::uniform_real_distribution<double> uni(lo, hi), near(std::max(lo, -4.0), std::min(hi, 4.0));
  using Bits = std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>;
  while (static_cast<int>(v.size()) < n) {
    const int kind = static_cast<int>(v.size() % 3);
    T x;
    if (kind == 0) {
      x = static_cast<T>(uni(rng));
    } else if (kind == 1) {
      x = static_cast<T>(near(rng));
    } else {
      const Bits b = static_cast<Bits>(rng());
      std::memcpy(&x, &b, sizeof x);
      if (!(x >= lo && x <= hi)) continue;
    }
    v.push_back(x);
  }
  const double specials[] = {0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.0, kInf, -kInf, kNaN, 1e-310, -1e-310, 5e-324,
                             0x1p-1022, 1e-30, -1e-30, 1e-8, -1e-8, 0x1p-7, 0x1p-27, 19.1, -19.1, 88.7, -87.3, -103.9,
                             709.78, 709.79, -708.4, -745.13, -745.14, -690.5, 40.5, -36.9, 3.141592653589793,
                             1.5707963267948966, 0.7853981633974483, 39000.5, 0x1p19, -0x1.fffffffffffffp18,
                             // The double closest to a multiple of pi/2 (Muller's worst case).
                             6381956970095103.0 * 0x1p797, 1e300, -1e22, 3.4e38, 1e308};
  for (double s : specials)
    if (std::isnan(s) || (s >= lo && s <= hi) || std::isinf(s)) v.push_back(static_cast<T>(s));
  return v;
}

/// Max ulp error of the SIMD loop of f on dtype T over the sample points, and the worst input.
template <class T>
std::pair<double, T> max_error(const MathFn& f, const std::vector<T>& x) {
  std::vector<T> y(x.size());
  simd_unary(f.kind, dtype_of<T>(), x.data(), y.data(), static_cast<int64_t>(x.size()));
  double worst = 0;
  T at = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const long double exact = f.ref(static_cast<long double>(x[i]));
    const double e = ulp_error<T>(y[i], exact);
    if (e > worst || std::isnan(e)) {
      worst = e;
      at = x[i];
    }
  }
  return {worst, at};
}

/// Restores the best SIMD target when a test ends, whatever happened in it.
struct TargetGuard {
  ~TargetGuard() { simd_force_target(0); }
};

TEST(ElemwiseAccuracy, Float64WithinOneUlpOnEveryTarget) {
  TargetGuard guard;
  ASSERT_FALSE(simd_targets().empty());
  for (int64_t target : simd_targets()) {
    simd_force_target(target);
    for (const MathFn& f : kFns) {
      const std::vector<double> x = sample_points<double>(f, 40000, 7);
      const auto [err, at] = max_error<double>(f, x);
      // Below 1 ulp from the exact value: the result is one of the two doubles around it, so
      // within 1 ulp of the correctly rounded one (measured at most 0.71, sin near pi/4).
      EXPECT_LT(err, 0.75) << simd_target_name(target) << " " << f.name << "(" << at << ")";
      if (f.kind == ScalarOpKind::Sqrt) {
        EXPECT_LE(err, 0.5) << simd_target_name(target);  // correctly rounded
      }
    }
  }
}

/// The documented float32 bounds (docs/NUMERICS.md): the measured maximum plus about half an ulp.
double float32_bound(ScalarOpKind k) {
  switch (k) {
    case ScalarOpKind::Exp:
    case ScalarOpKind::Log:
      return 1.5;
    case ScalarOpKind::Expm1:
      return 3.5;
    case ScalarOpKind::Log1p:
    case ScalarOpKind::Softplus:
      return 3;
    case ScalarOpKind::Tanh:
      return 5.5;
    case ScalarOpKind::Sigmoid:
    case ScalarOpKind::Sin:
    case ScalarOpKind::Cos:
      return 2.5;
    case ScalarOpKind::Sqrt:
      return 0.5;  // correctly rounded
    default:
      return 0;
  }
}

TEST(ElemwiseAccuracy, Float32WithinDocumentedBoundOnEveryTarget) {
  TargetGuard guard;
  const std::vector<int64_t> targets = simd_targets();
  for (int64_t target : targets) {
    simd_force_target(target);
    for (const MathFn& f : kFns) {
      if (f.f64_only) continue;
      const std::vector<float> x = sample_points<float>(f, 40000, 8);
      const auto [err, at] = max_error<float>(f, x);
      EXPECT_LE(err, float32_bound(f.kind)) << simd_target_name(target) << " " << f.name << "(" << at << ")";
      if (target == targets.front())
        std::printf("float32 %-9s max %.3f ulp at %a (%s)\n", f.name, err, static_cast<double>(at),
                    simd_target_name(target).c_str());
    }
  }
}

/// The values every implementation must give exactly.
TEST(ElemwiseAccuracy, ExactPointsOnEveryTarget) {
  TargetGuard guard;
  struct Point {
    ScalarOpKind k;
    double x, want;
  };
  const Point points[] = {
      {ScalarOpKind::Cos, 0.0, 1.0},       {ScalarOpKind::Cos, -0.0, 1.0},       {ScalarOpKind::Sin, 0.0, 0.0},
      {ScalarOpKind::Sin, -0.0, -0.0},     {ScalarOpKind::Sin, 1e-310, 1e-310},  {ScalarOpKind::Exp, 0.0, 1.0},
      {ScalarOpKind::Exp, -0.0, 1.0},      {ScalarOpKind::Exp, -kInf, 0.0},      {ScalarOpKind::Exp, kInf, kInf},
      {ScalarOpKind::Exp, 710.0, kInf},    {ScalarOpKind::Exp, -746.0, 0.0},     {ScalarOpKind::Log, 1.0, 0.0},
      {ScalarOpKind::Log, 0.0, -kInf},     {ScalarOpKind::Log, -0.0, -kInf},     {ScalarOpKind::Log, kInf, kInf},
      {ScalarOpKind::Tanh, 0.0, 0.0},      {ScalarOpKind::Tanh, -0.0, -0.0},     {ScalarOpKind::Tanh, kInf, 1.0},
      {ScalarOpKind::Tanh, -kInf, -1.0},   {ScalarOpKind::Tanh, 30.0, 1.0},      {ScalarOpKind::Expm1, 0.0, 0.0},
      {ScalarOpKind::Expm1, -0.0, -0.0},   {ScalarOpKind::Expm1, -kInf, -1.0},   {ScalarOpKind::Expm1, kInf, kInf},
      {ScalarOpKind::Log1p, 0.0, 0.0},     {ScalarOpKind::Log1p, -0.0, -0.0},    {ScalarOpKind::Log1p, -1.0, -kInf},
      {ScalarOpKind::Sigmoid, 0.0, 0.5},   {ScalarOpKind::Sigmoid, -0.0, 0.5},   {ScalarOpKind::Sigmoid, kInf, 1.0},
      {ScalarOpKind::Sigmoid, -kInf, 0.0}, {ScalarOpKind::Softplus, -kInf, 0.0}, {ScalarOpKind::Softplus, kInf, kInf},
      {ScalarOpKind::Sqrt, 4.0, 2.0},      {ScalarOpKind::Sqrt, -0.0, -0.0},     {ScalarOpKind::Sqrt, kInf, kInf},
  };
  const Point points64[] = {
      {ScalarOpKind::Log10, 1.0, 0.0},          {ScalarOpKind::Log10, 1000.0, 3.0},
      {ScalarOpKind::Log10, 0.0, -kInf},        {ScalarOpKind::Log2, 1.0, 0.0},
      {ScalarOpKind::Log2, 0x1p-1074, -1074.0}, {ScalarOpKind::Log2, 0x1p1000, 1000.0},
      {ScalarOpKind::Sinh, 0.0, 0.0},           {ScalarOpKind::Sinh, -0.0, -0.0},
      {ScalarOpKind::Sinh, kInf, kInf},         {ScalarOpKind::Sinh, -kInf, -kInf},
      {ScalarOpKind::Sinh, 711.0, kInf},        {ScalarOpKind::Cosh, 0.0, 1.0},
      {ScalarOpKind::Cosh, -0.0, 1.0},          {ScalarOpKind::Cosh, -kInf, kInf},
      {ScalarOpKind::ArcCosh, 1.0, 0.0},        {ScalarOpKind::ArcCosh, kInf, kInf},
  };
  const ScalarOpKind all[] = {ScalarOpKind::Exp,  ScalarOpKind::Expm1,   ScalarOpKind::Log,      ScalarOpKind::Log1p,
                              ScalarOpKind::Tanh, ScalarOpKind::Sigmoid, ScalarOpKind::Softplus, ScalarOpKind::Sin,
                              ScalarOpKind::Cos,  ScalarOpKind::Sqrt};
  for (int64_t target : simd_targets()) {
    simd_force_target(target);
    for (DType dt : testing::kFloatTypes) {
      for (const Point& p : points) {
        // Alone (the padded tail) and in the middle of a vector of ordinary values.
        for (int len : {1, 19}) {
          std::vector<double> in(len, 0.37), out(len);
          in[len / 2] = p.x;
          std::vector<float> inf(in.begin(), in.end()), outf(len);
          double got;
          if (dt == DType::Float64) {
            simd_unary(p.k, dt, in.data(), out.data(), len);
            got = out[len / 2];
          } else {
            simd_unary(p.k, dt, inf.data(), outf.data(), len);
            got = outf[len / 2];
          }
          const double want = dt == DType::Float64 ? p.want : static_cast<float>(p.want);
          EXPECT_TRUE(got == want && std::signbit(got) == std::signbit(want))
              << simd_target_name(target) << " " << dtype_name(dt) << " kind " << static_cast<int>(p.k) << "(" << p.x
              << ") = " << got << ", want " << want;
        }
      }
      if (dt == DType::Float64) {
        for (const Point& p : points64) {
          std::vector<double> in(13, 1.37), out(13);
          in[6] = p.x;
          simd_unary(p.k, dt, in.data(), out.data(), 13);
          EXPECT_TRUE(out[6] == p.want && std::signbit(out[6]) == std::signbit(p.want))
              << simd_target_name(target) << " kind " << static_cast<int>(p.k) << "(" << p.x << ") = " << out[6];
        }
      }
      // NaN in, NaN out, for every function.
      for (ScalarOpKind k : all) {
        std::vector<double> in(11, 0.25), out(11);
        in[5] = kNaN;
        std::vector<float> inf(in.begin(), in.end()), outf(11);
        simd_unary(k, dt, dt == DType::Float64 ? static_cast<const void*>(in.data()) : inf.data(),
                   dt == DType::Float64 ? static_cast<void*>(out.data()) : outf.data(), 11);
        const double got = dt == DType::Float64 ? out[5] : outf[5];
        EXPECT_TRUE(std::isnan(got)) << simd_target_name(target) << " kind " << static_cast<int>(k);
      }
    }
  }
}

/// The dispatch really runs the forced target (so the loops above test what they say).
TEST(ElemwiseAccuracy, ForcedTargetIsTheOneThatRuns) {
  TargetGuard guard;
  for (int64_t t : simd_targets()) {
    simd_force_target(t);
    EXPECT_EQ(simd_active_target(), t) << simd_target_name(t);
  }
}

/// The example: float64 cos(0) was 0.9999999999999999, so floor(cos(ceil(x))) gave 0 at
/// x = -0.5 (ceil(-0.5) = -0.0) where numpy gives 1. Checked in every mode and layout.
TEST(ElemwiseAccuracy, FloorCosCeilIsOneThroughFunctions) {
  for (DType dt : testing::kFloatTypes) {
    Var x = variable(tensor_type(dt, 1), "x");
    // ceil gives -0.0 or 0.0 for all of these, and cos(+-0) must be exactly 1.
    const std::vector<double> vals = {-0.5, -0.0, 0.0, -0.25, -1e-300, -0.9, -0.999};
    NDArray xv = testing::make_array(vals, {7}, dt);
    for (const char* mode : {"FAST_RUN", "FAST_COMPILE"}) {
      FunctionOptions opts;
      opts.mode = mode;
      Function f = function({x}, {floor(cos(ceil(x))), cos(x), exp(x * 0.0), tanh(x * 0.0)}, opts);
      const std::vector<NDArray> out = f({xv});
      for (int64_t i = 0; i < 7; ++i) {
        const double fc = dt == DType::Float64 ? out[0].data<double>()[i] : out[0].data<float>()[i];
        EXPECT_EQ(fc, 1.0) << mode << " " << dtype_name(dt) << " x=" << vals[i];
        const double e = dt == DType::Float64 ? out[2].data<double>()[i] : out[2].data<float>()[i];
        EXPECT_EQ(e, 1.0) << mode;
      }
      const double c0 = dt == DType::Float64 ? out[1].data<double>()[1] : out[1].data<float>()[1];
      EXPECT_EQ(c0, 1.0) << mode << " cos(-0)";
    }
  }
}

/// A lane's result depends on its input only: contiguous, strided, broadcast and 1-element runs,
/// and neighbours that take the special paths (huge sin arguments, exp overflow), give the same bits.
TEST(ElemwiseAccuracy, SameBitsWhateverTheLayoutAndNeighbours) {
  using Build = Var (*)(Var);
  const std::pair<const char*, Build> ops[] = {{"exp", exp},           {"log", log},     {"tanh", tanh},
                                               {"sin", sin},           {"cos", cos},     {"sigmoid", sigmoid},
                                               {"softplus", softplus}, {"expm1", expm1}, {"log1p", log1p}};
  std::mt19937_64 rng(5);
  std::uniform_real_distribution<double> u(-30, 30);
  std::vector<double> base(203);
  for (double& v : base) v = u(rng);
  const double spoilers[] = {1e300, 750.0, -800.0, kNaN, kInf, -1e-320};
  for (DType dt : testing::kFloatTypes) {
    Var x = variable(tensor_type(dt, 1), "x");
    for (const auto& [name, build] : ops) {
      Function f = function({x}, {build(x)});
      const NDArray plain = f({testing::make_array(base, {203}, dt)})[0];
      // Each element alone (a padded tail of one lane).
      for (int64_t i = 0; i < 203; i += 17) {
        const NDArray one = f({testing::make_array({base[i]}, {1}, dt)})[0];
        const double a = dt == DType::Float64 ? one.data<double>()[0] : one.data<float>()[0];
        const double b = dt == DType::Float64 ? plain.data<double>()[i] : plain.data<float>()[i];
        EXPECT_EQ(std::memcmp(&a, &b, sizeof a), 0) << name << " element " << i;
      }
      // Strided (every other element of a larger buffer, through the buffered path).
      NDArray big = testing::make_array(std::vector<double>(406, 0.0), {406}, dt);
      NDArray view = big.slice(0, 0, 406, 2);
      view.assign(testing::make_array(base, {203}, dt));
      EXPECT_EQ(testing::compare_arrays(f({view})[0], plain, 0, 0), "") << name << " strided";
      // Neighbours taking the special paths do not change the other lanes.
      std::vector<double> spoiled = base;
      for (size_t k = 0; k < spoiled.size(); k += 5) spoiled[k] = spoilers[(k / 5) % 6];
      const NDArray sp = f({testing::make_array(spoiled, {203}, dt)})[0];
      for (size_t k = 0; k < spoiled.size(); ++k) {
        if (k % 5 == 0) continue;
        const double a = dt == DType::Float64 ? sp.data<double>()[k] : sp.data<float>()[k];
        const double b = dt == DType::Float64 ? plain.data<double>()[k] : plain.data<float>()[k];
        EXPECT_EQ(std::memcmp(&a, &b, sizeof a), 0) << name << " " << dtype_name(dt) << " element " << k;
      }
    }
  }
}

}  // namespace
}  // namespace hypatia
