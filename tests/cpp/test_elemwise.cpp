// Elemwise: OpInfo entries for every scalar op, dtype rules, exact values, broadcasting and its
// errors, gradients and R-ops (the CPU kernel's in-place, layouts and threading:
// test_elemwise_kernels.cpp; SIMD accuracy: test_elemwise_simd.cpp).
#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "hypatia/ops/scalar_functors.h"
#include "test_util.h"

namespace hypatia {
namespace {

using testing::OpInfo;
using testing::OpSample;
using testing::random_array;
using testing::random_strided;

const std::vector<DType> kF = {DType::Float32, DType::Float64};
const std::vector<DType> kSignedAndFloat = {DType::Int8, DType::Int32, DType::Int64, DType::Float32, DType::Float64};
const std::vector<DType> kInts = {DType::Bool, DType::Int8, DType::Int32, DType::Int64, DType::UInt8, DType::UInt32};

NDArray rnd(const Shape& s, DType dt, uint64_t seed, double lo, double hi) { return random_array(s, dt, lo, hi, seed); }

/// numpy broadcasting of the inputs (left padding), then f on each element in double.
NDArray expected_nary(const std::vector<NDArray>& xs, const std::function<double(const std::vector<double>&)>& f) {
  int nd = 0;
  for (const auto& a : xs) nd = std::max(nd, a.ndim());
  Shape out;
  out.resize(nd, 1);
  std::vector<NDArray> padded;
  for (const auto& a : xs) {
    Shape s;
    s.resize(nd - a.ndim(), 1);
    for (int64_t v : a.shape()) s.push_back(v);
    padded.push_back(a.reshape(s));
    for (int d = 0; d < nd; ++d)
      if (s[d] != 1) out[d] = s[d];
  }
  NDArray r = NDArray::empty(out, DType::Float64);
  std::vector<NDArray> b;
  for (const auto& p : padded) b.push_back(p.broadcast_to(out));
  std::vector<double> v(xs.size());
  for (int64_t i = 0; i < r.size(); ++i) {
    for (size_t k = 0; k < b.size(); ++k) v[k] = b[k].get_flat(i);
    r.data<double>()[i] = f(v);
  }
  return r;
}

struct Domain {
  double lo, hi;
};

std::vector<OpSample> unary_samples(DType dt, Domain d) {
  return {
      {"(3,4)", {rnd({3, 4}, dt, 1, d.lo, d.hi)}},       {"strided (3,4)", {random_strided({3, 4}, dt, d.lo, d.hi, 2)}},
      {"vector (37,)", {rnd({37}, dt, 3, d.lo, d.hi)}},  {"row (1,5)", {rnd({1, 5}, dt, 4, d.lo, d.hi)}},
      {"zero-size (0,3)", {NDArray::zeros({0, 3}, dt)}}, {"0-d", {rnd({}, dt, 5, d.lo, d.hi)}}};
}

std::vector<OpSample> binary_samples(DType dt, Domain a, Domain b) {
  return {{"same (3,4)", {rnd({3, 4}, dt, 11, a.lo, a.hi), rnd({3, 4}, dt, 12, b.lo, b.hi)}},
          {"row+col (1,4)+(3,1)", {rnd({1, 4}, dt, 13, a.lo, a.hi), rnd({3, 1}, dt, 14, b.lo, b.hi)}},
          {"0-d + (2,3)", {rnd({}, dt, 15, a.lo, a.hi), rnd({2, 3}, dt, 16, b.lo, b.hi)}},
          {"(2,3) + 0-d", {rnd({2, 3}, dt, 17, a.lo, a.hi), rnd({}, dt, 18, b.lo, b.hi)}},
          {"strided (3,4)", {random_strided({3, 4}, dt, a.lo, a.hi, 19), random_strided({3, 4}, dt, b.lo, b.hi, 20)}},
          {"(4,) + (2,3,4)", {rnd({4}, dt, 21, a.lo, a.hi), rnd({2, 3, 4}, dt, 22, b.lo, b.hi)}},
          {"vector (37,)", {rnd({37}, dt, 23, a.lo, a.hi), rnd({37}, dt, 24, b.lo, b.hi)}},
          {"zero-size (0,3)+(1,3)", {NDArray::zeros({0, 3}, dt), rnd({1, 3}, dt, 25, b.lo, b.hi)}},
          {"0-d + 0-d", {rnd({}, dt, 26, a.lo, a.hi), rnd({}, dt, 27, b.lo, b.hi)}}};
}

bool is_int_dtype(DType dt) { return !is_float(dt); }

struct UnarySpec {
  std::string name;
  Var (*build)(Var);
  double (*ref)(double);
  Domain dom;
  std::vector<DType> dtypes = kF;
  bool differentiable = true;
  Domain int_dom = {-5, 5};
};

struct BinarySpec {
  std::string name;
  Var (*build)(Var, Var);
  double (*ref)(double, double);
  Domain a, b;
  std::vector<DType> dtypes = kF;
  bool differentiable = true;
  Domain int_a = {-5, 5}, int_b = {-5, 5};
};

double py_floordiv(double a, double b) { return b == 0 ? 0 : std::floor(a / b); }
double py_mod(double a, double b) { return b == 0 ? 0 : a - std::floor(a / b) * b; }
double sigmoid_ref(double x) { return 1 / (1 + std::exp(-x)); }
double softplus_ref(double x) { return std::log1p(std::exp(x)); }
double sign_ref(double x) { return x > 0 ? 1 : x < 0 ? -1 : 0; }

const bool kRegistered = [] {
  const std::vector<UnarySpec> unary = {
      {"neg", neg, [](double x) { return -x; }, {-3, 3}, kSignedAndFloat},
      {"abs", abs, [](double x) { return std::fabs(x); }, {-3, 3}, kSignedAndFloat},
      {"sign", sign, sign_ref, {-3, 3}, kSignedAndFloat, false},
      {"reciprocal", reciprocal, [](double x) { return 1 / x; }, {0.5, 3}},
      {"sqr", sqr, [](double x) { return x * x; }, {-3, 3}, kSignedAndFloat},
      {"sqrt",
       sqrt,
       [](double x) { return std::sqrt(x); },
       {0.2, 4},
       {DType::Int32, DType::Float32, DType::Float64},
       true,
       {0, 9}},
      {"exp",
       exp,
       [](double x) { return std::exp(x); },
       {-3, 3},
       {DType::Int8, DType::Int64, DType::Float32, DType::Float64}},
      {"exp2", exp2, [](double x) { return std::exp2(x); }, {-3, 3}},
      {"expm1", expm1, [](double x) { return std::expm1(x); }, {-2, 2}},
      {"log",
       log,
       [](double x) { return std::log(x); },
       {0.1, 5},
       {DType::UInt8, DType::Float32, DType::Float64},
       true,
       {1, 9}},
      {"log2", log2, [](double x) { return std::log2(x); }, {0.1, 5}},
      {"log10", log10, [](double x) { return std::log10(x); }, {0.1, 5}},
      {"log1p", log1p, [](double x) { return std::log1p(x); }, {-0.5, 3}},
      {"log1mexp", log1mexp, [](double x) { return std::log(1 - std::exp(x)); }, {-3, -0.05}},
      {"sin", sin, [](double x) { return std::sin(x); }, {-3, 3}},
      {"cos", cos, [](double x) { return std::cos(x); }, {-3, 3}},
      {"tan", tan, [](double x) { return std::tan(x); }, {-1.2, 1.2}},
      {"arcsin", arcsin, [](double x) { return std::asin(x); }, {-0.9, 0.9}},
      {"arccos", arccos, [](double x) { return std::acos(x); }, {-0.9, 0.9}},
      {"arctan", arctan, [](double x) { return std::atan(x); }, {-3, 3}},
      {"sinh", sinh, [](double x) { return std::sinh(x); }, {-2, 2}},
      {"cosh", cosh, [](double x) { return std::cosh(x); }, {-2, 2}},
      {"tanh", tanh, [](double x) { return std::tanh(x); }, {-3, 3}},
      {"arcsinh", arcsinh, [](double x) { return std::asinh(x); }, {-3, 3}},
      {"arccosh", arccosh, [](double x) { return std::acosh(x); }, {1.2, 4}},
      {"arctanh", arctanh, [](double x) { return std::atanh(x); }, {-0.9, 0.9}},
      {"sigmoid", sigmoid, sigmoid_ref, {-5, 5}},
      {"softplus", softplus, softplus_ref, {-5, 5}},
      {"erf", erf, [](double x) { return std::erf(x); }, {-2, 2}},
      {"erfc", erfc, [](double x) { return std::erfc(x); }, {-2, 2}},
      {"erfinv", erfinv, nullptr, {-0.9, 0.9}},
      {"gamma", gamma, [](double x) { return std::tgamma(x); }, {0.5, 4}},
      {"gammaln", gammaln, [](double x) { return std::lgamma(x); }, {0.5, 5}},
      {"psi", psi, nullptr, {0.5, 5}},
      {"trigamma", trigamma, nullptr, {0.5, 5}, kF, false},
      {"floor", floor, [](double x) { return std::floor(x); }, {-3, 3}, kF, false},
      {"ceil", ceil, [](double x) { return std::ceil(x); }, {-3, 3}, kF, false},
      {"trunc", trunc, [](double x) { return std::trunc(x); }, {-3, 3}, kF, false},
      {"round", round, [](double x) { return std::nearbyint(x); }, {-3, 3}, kSignedAndFloat, false},
      {"invert", invert, nullptr, {0, 9}, kInts, false, {0, 9}},
      {"isnan",
       isnan,
       [](double x) { return std::isnan(x) ? 1.0 : 0.0; },
       {-3, 3},
       testing::kAllNumeric,
       false,
       {0, 9}},
      {"isinf",
       isinf,
       [](double x) { return std::isinf(x) ? 1.0 : 0.0; },
       {-3, 3},
       testing::kAllNumeric,
       false,
       {0, 9}},
  };
  for (const UnarySpec& s : unary) {
    OpInfo info{.name = s.name,
                .build = [f = s.build](const std::vector<Var>& x) { return f(x[0]); },
                .samples = [dom = s.dom,
                            idom = s.int_dom](DType dt) { return unary_samples(dt, is_int_dtype(dt) ? idom : dom); },
                .dtypes = s.dtypes,
                .differentiable = s.differentiable};
    if (s.ref)
      info.expected = [f = s.ref](const std::vector<NDArray>& x) {
        return expected_nary(x, [f](const std::vector<double>& v) { return f(v[0]); });
      };
    testing::op_infos().push_back(std::move(info));
  }

  const std::vector<BinarySpec> binary = {
      {"add", add, [](double a, double b) { return a + b; }, {-2, 2}, {-2, 2}, kSignedAndFloat},
      {"sub", sub, [](double a, double b) { return a - b; }, {-2, 2}, {-2, 2}, kSignedAndFloat},
      {"mul",
       mul,
       [](double a, double b) { return a * b; },
       {-2, 2},
       {-2, 2},
       testing::kAllNumeric,
       true,
       {0, 5},
       {0, 5}},
      {"true_div",
       true_div,
       [](double a, double b) { return a / b; },
       {-2, 2},
       {0.5, 2},
       kSignedAndFloat,
       true,
       {-5, 5},
       {1, 5}},
      {"int_div", int_div, py_floordiv, {-4, 4}, {0.5, 2}, kSignedAndFloat, false, {-9, 9}, {1, 5}},
      {"mod", mod, py_mod, {-4, 4}, {0.5, 2}, kSignedAndFloat, false, {-9, 9}, {1, 5}},
      {"pow",
       pow,
       [](double a, double b) { return std::pow(a, b); },
       {0.5, 2},
       {-2, 2},
       kSignedAndFloat,
       true,
       {-3, 4},
       {0, 4}},
      {"maximum",
       maximum,
       [](double a, double b) { return std::max(a, b); },
       {-2, 2},
       {-2, 2},
       testing::kAllNumeric,
       true,
       {0, 9},
       {0, 9}},
      {"minimum",
       minimum,
       [](double a, double b) { return std::min(a, b); },
       {-2, 2},
       {-2, 2},
       testing::kAllNumeric,
       true,
       {0, 9},
       {0, 9}},
      {"arctan2", arctan2, [](double a, double b) { return std::atan2(a, b); }, {-2, 2}, {0.5, 2}},
      {"eq",
       eq,
       [](double a, double b) { return double(a == b); },
       {-2, 2},
       {-2, 2},
       testing::kAllNumeric,
       false,
       {0, 3},
       {0, 3}},
      {"neq",
       neq,
       [](double a, double b) { return double(a != b); },
       {-2, 2},
       {-2, 2},
       testing::kAllNumeric,
       false,
       {0, 3},
       {0, 3}},
      {"lt",
       lt,
       [](double a, double b) { return double(a < b); },
       {-2, 2},
       {-2, 2},
       testing::kAllNumeric,
       false,
       {0, 3},
       {0, 3}},
      {"le",
       le,
       [](double a, double b) { return double(a <= b); },
       {-2, 2},
       {-2, 2},
       testing::kAllNumeric,
       false,
       {0, 3},
       {0, 3}},
      {"gt",
       gt,
       [](double a, double b) { return double(a > b); },
       {-2, 2},
       {-2, 2},
       testing::kAllNumeric,
       false,
       {0, 3},
       {0, 3}},
      {"ge",
       ge,
       [](double a, double b) { return double(a >= b); },
       {-2, 2},
       {-2, 2},
       testing::kAllNumeric,
       false,
       {0, 3},
       {0, 3}},
      {"and_", and_, nullptr, {0, 9}, {0, 9}, kInts, false, {0, 9}, {0, 9}},
      {"or_", or_, nullptr, {0, 9}, {0, 9}, kInts, false, {0, 9}, {0, 9}},
      {"xor", xor_, nullptr, {0, 9}, {0, 9}, kInts, false, {0, 9}, {0, 9}},
  };
  for (const BinarySpec& s : binary) {
    OpInfo info{
        .name = s.name,
        .build = [f = s.build](const std::vector<Var>& x) { return f(x[0], x[1]); },
        .samples = [a = s.a, b = s.b, ia = s.int_a, ib = s.int_b](
                       DType dt) { return is_int_dtype(dt) ? binary_samples(dt, ia, ib) : binary_samples(dt, a, b); },
        .dtypes = s.dtypes,
        .differentiable = s.differentiable};
    if (s.ref)
      info.expected = [f = s.ref](const std::vector<NDArray>& x) {
        return expected_nary(x, [f](const std::vector<double>& v) { return f(v[0], v[1]); });
      };
    testing::op_infos().push_back(std::move(info));
  }
  return true;
}();

HYP_OPINFO(
    {.name = "clip",
     .build = [](const std::vector<Var>& x) { return clip(x[0], x[1], x[2]); },
     .samples =
         [](DType dt) {
           return std::vector<OpSample>{
               {"(3,4) with 0-d bounds", {rnd({3, 4}, dt, 31, -3, 3), rnd({}, dt, 32, -2, -1), rnd({}, dt, 33, 1, 2)}},
               {"row bounds", {rnd({3, 4}, dt, 34, -3, 3), rnd({1, 4}, dt, 35, -2, -1), rnd({1, 4}, dt, 36, 1, 2)}},
               {"strided", {random_strided({2, 5}, dt, -3, 3, 37), rnd({}, dt, 38, -2, -1), rnd({}, dt, 39, 1, 2)}},
               {"zero-size", {NDArray::zeros({0, 2}, dt), rnd({}, dt, 40, -2, -1), rnd({}, dt, 41, 1, 2)}}};
         },
     .dtypes = kSignedAndFloat,
     .expected =
         [](const std::vector<NDArray>& x) {
           return expected_nary(x, [](const std::vector<double>& v) { return std::min(std::max(v[0], v[1]), v[2]); });
         }});

HYP_OPINFO({.name = "switch",
            .build = [](const std::vector<Var>& x) { return switch_(x[0], x[1], x[2]); },
            .samples =
                [](DType dt) {
                  return std::vector<OpSample>{
                      {"bool cond (3,4)",
                       {rnd({3, 4}, DType::Bool, 51, 0, 1), rnd({3, 4}, dt, 52, -3, 3), rnd({3, 4}, dt, 53, -3, 3)}},
                      {"int cond broadcast",
                       {rnd({1, 4}, DType::Int32, 54, -1, 2), rnd({3, 4}, dt, 55, -3, 3), rnd({}, dt, 56, -3, 3)}},
                      {"strided",
                       {random_strided({2, 5}, DType::Bool, 0, 1, 57), random_strided({2, 5}, dt, -3, 3, 58),
                        rnd({2, 1}, dt, 59, -3, 3)}},
                      {"0-d", {rnd({}, DType::Bool, 60, 0, 1), rnd({}, dt, 61, -3, 3), rnd({}, dt, 62, -3, 3)}}};
                },
            .dtypes = kSignedAndFloat,
            .expected =
                [](const std::vector<NDArray>& x) {
                  return expected_nary(x, [](const std::vector<double>& v) { return v[0] != 0 ? v[1] : v[2]; });
                },
            .grad_inputs = {1, 2}});

HYP_OPINFO({.name = "identity",
            .build = [](const std::vector<Var>& x) { return elemwise(ScalarOpKind::Identity, {x[0]}); },
            .samples =
                [](DType dt) {
                  return unary_samples(dt, {-3, 3});
                },
            .dtypes = kSignedAndFloat,
            .expected = [](const std::vector<NDArray>& x) { return x[0]; }});

HYP_OPINFO({.name = "cast_to_float32",
            .build = [](const std::vector<Var>& x) { return cast(x[0], DType::Float32); },
            .samples =
                [](DType dt) {
                  return std::vector<OpSample>{{"(3,4)", {rnd({3, 4}, dt, 71, -5, 5)}},
                                               {"strided", {random_strided({3, 4}, dt, -5, 5, 72)}},
                                               {"0-d", {rnd({}, dt, 73, -5, 5)}}};
                },
            .dtypes = {DType::Bool, DType::Int8, DType::Int64, DType::Float64},
            .expected = [](const std::vector<NDArray>& x) { return x[0].astype(DType::Float32); }});

HYP_OPINFO({.name = "cast_to_int32",
            .build = [](const std::vector<Var>& x) { return cast(x[0], DType::Int32); },
            .samples =
                [](DType dt) {
                  return std::vector<OpSample>{{"(3,4)", {rnd({3, 4}, dt, 74, -5, 5)}},
                                               {"zero-size", {NDArray::zeros({2, 0}, dt)}}};
                },
            .dtypes = {DType::Float32, DType::Float64, DType::Int8},
            .expected =
                [](const std::vector<NDArray>& x) {
                  return expected_nary(x, [](const std::vector<double>& v) { return std::trunc(v[0]); });
                },
            .differentiable = false});

HYP_OPINFO({.name = "mixed_dtype_add",
            .build = [](const std::vector<Var>& x) { return add(x[0], cast(x[1], DType::Int16)) * x[0]; },
            .samples =
                [](DType dt) {
                  return std::vector<OpSample>{{"(3,4)+(4,)", {rnd({3, 4}, dt, 81, -3, 3), rnd({4}, dt, 82, -3, 3)}}};
                },
            .dtypes = {DType::Float32, DType::Int8},
            .grad_inputs = {0}});

// ------------------------------------------------------------------------------------------------
// Targeted tests.

Var fvar(int nd, DType dt = DType::Float64, const std::string& name = "x") {
  return variable(tensor_type(dt, nd), name);
}

NDArray run1(const Var& out, const std::vector<std::pair<Var, NDArray>>& in, std::string_view b = kCpuBackend) {
  return eval(out, in, b);
}

TEST(Elemwise, NamesAndProps) {
  Var x = fvar(2), y = fvar(2, DType::Float64, "y");
  Var s = add(x, y);
  EXPECT_EQ(s->owner->op->name(), "Elemwise{add,no_inplace}");
  EXPECT_EQ(Elemwise(ScalarOpKind::Mul, DType::Float64, 0).name(), "Elemwise{mul,inplace}");
  EXPECT_EQ(cast(x, DType::Float32)->owner->op->name(), "Elemwise{Cast{float32}}");
  EXPECT_EQ(cast(x, DType::Float64), x);
  EXPECT_TRUE(Elemwise(ScalarOpKind::Add).equals(Elemwise(ScalarOpKind::Add)));
  EXPECT_FALSE(Elemwise(ScalarOpKind::Add).equals(Elemwise(ScalarOpKind::Sub)));
  EXPECT_FALSE(Elemwise(ScalarOpKind::Cast, DType::Int8).equals(Elemwise(ScalarOpKind::Cast, DType::Int16)));
  EXPECT_EQ(Elemwise(ScalarOpKind::Add).hash(), Elemwise(ScalarOpKind::Add).hash());
  EXPECT_EQ(scalar_op_arity(ScalarOpKind::Switch), 3);
  EXPECT_EQ(scalar_op_name(ScalarOpKind::TrueDiv), "true_div");
  EXPECT_EQ(Elemwise(ScalarOpKind::Add, DType::Float64, 1).destroy_map(), (AliasMap{{1}}));
  EXPECT_TRUE(Elemwise(ScalarOpKind::Add).destroy_map().empty());
}

TEST(Elemwise, DtypeRulesFollowNumpy) {
  using D = DType;
  auto out = [](ScalarOpKind k, std::vector<D> in) { return elemwise_output_dtype(k, in); };
  EXPECT_EQ(out(ScalarOpKind::Add, {D::Int8, D::UInt8}), D::Int16);
  EXPECT_EQ(out(ScalarOpKind::Add, {D::Int32, D::Float32}), D::Float64);
  EXPECT_EQ(out(ScalarOpKind::Add, {D::Bool, D::Bool}), D::Bool);
  EXPECT_EQ(out(ScalarOpKind::TrueDiv, {D::Int32, D::Int32}), D::Float64);
  EXPECT_EQ(out(ScalarOpKind::TrueDiv, {D::Int8, D::Int8}), D::Float32);
  EXPECT_EQ(out(ScalarOpKind::IntDiv, {D::Int32, D::Int32}), D::Int32);
  EXPECT_EQ(out(ScalarOpKind::Pow, {D::Int32, D::Int64}), D::Int64);
  EXPECT_EQ(out(ScalarOpKind::Lt, {D::Float32, D::Int64}), D::Bool);
  EXPECT_EQ(out(ScalarOpKind::Exp, {D::Int16}), D::Float32);
  EXPECT_EQ(out(ScalarOpKind::Exp, {D::Int64}), D::Float64);
  EXPECT_EQ(out(ScalarOpKind::Sqr, {D::Bool}), D::Int8);
  EXPECT_EQ(out(ScalarOpKind::Switch, {D::Bool, D::Int8, D::Float32}), D::Float32);
  EXPECT_EQ(out(ScalarOpKind::Cast, {D::Float64}), D::Float64);
  EXPECT_EQ(elemwise_output_dtype(ScalarOpKind::Cast, {D::Float64}, D::UInt8), D::UInt8);
  EXPECT_EQ(out(ScalarOpKind::Xor, {D::Bool, D::Bool}), D::Bool);
  EXPECT_EQ(elemwise_compute_dtype(ScalarOpKind::Lt, {D::Int8, D::Float32}, D::Bool), D::Float32);
  EXPECT_EQ(elemwise_compute_dtype(ScalarOpKind::Exp, {D::Int8}, D::Float32), D::Float32);
}

template <class F>
void expect_type_error(F&& f, const std::string& who) {
  try {
    f();
    ADD_FAILURE() << "no TypeError";
  } catch (const TypeError& e) {
    EXPECT_NE(std::string(e.what()).find(who), std::string::npos) << e.what();
  }
}

TEST(Elemwise, TypeErrors) {
  Var b = fvar(1, DType::Bool), f = fvar(1), m = fvar(2);
  expect_type_error([&] { sub(b, b); }, "Elemwise{sub");
  expect_type_error([&] { neg(b); }, "Elemwise{neg");
  expect_type_error([&] { and_(f, f); }, "Elemwise{and_");
  expect_type_error([&] { invert(f); }, "Elemwise{invert");
  expect_type_error([&] { elemwise(ScalarOpKind::Add, {f}); }, "Elemwise{add}: expects 2 inputs, got 1");
  expect_type_error([&] { elemwise(ScalarOpKind::Clip, {f, f}); }, "Elemwise{clip}");
  expect_type_error(
      [&] {
        apply_op1(std::make_shared<Elemwise>(ScalarOpKind::Add), {f, m});
      },
      "Elemwise{add,no_inplace}: all inputs must have the same ndim");
  // In-place needs the output's type on the overwritten input.
  Var row = variable(row_type(DType::Float64), "r");
  expect_type_error(
      [&] {
        apply_op1(std::make_shared<Elemwise>(ScalarOpKind::Add, DType::Float64, 0), {row, m});
      },
      "Elemwise{add,inplace}");
  Var i32 = fvar(1, DType::Int32);
  expect_type_error(
      [&] {
        apply_op1(std::make_shared<Elemwise>(ScalarOpKind::TrueDiv, DType::Float64, 0), {i32, i32});
      },
      "overwritten input 0");
}

TEST(Elemwise, BroadcastPatternsAndPadding) {
  Var r = variable(row_type(DType::Float32), "r");
  Var c = variable(col_type(DType::Float32), "c");
  Var s = variable(scalar_type(DType::Float64), "s");
  Var v = fvar(1, DType::Float32, "v");
  EXPECT_EQ((r + c)->type.broadcastable, (std::vector<bool>{false, false}));
  EXPECT_EQ((r * s)->type.broadcastable, (std::vector<bool>{true, false}));
  EXPECT_EQ((r * s)->dtype(), DType::Float64);
  Var t = add(v, fvar(3, DType::Float32));
  EXPECT_EQ(t->ndim(), 3);
  NDArray out = run1(r + c, {{r, testing::make_array({1, 2, 3}, {1, 3}, DType::Float32)},
                             {c, testing::make_array({10, 20}, {2, 1}, DType::Float32)}});
  EXPECT_ALLCLOSE(out, testing::make_array({11, 12, 13, 21, 22, 23}, {2, 3}, DType::Float32));
}

TEST(Elemwise, ScalarLikeAndOperators) {
  Var f32 = fvar(1, DType::Float32), i32 = fvar(1, DType::Int32), u8 = fvar(1, DType::UInt8), b = fvar(1, DType::Bool);
  EXPECT_EQ((f32 + 1.0)->dtype(), DType::Float32);
  EXPECT_EQ((i32 * 2.0)->dtype(), DType::Int32);
  EXPECT_EQ((i32 + 1.5)->dtype(), config().floatX == DType::Float32 ? DType::Float32 : DType::Float64);
  EXPECT_EQ((u8 + 300.0)->dtype(), DType::Int64);
  EXPECT_EQ((b + 1.0)->dtype(), DType::Int64);
  EXPECT_EQ((2.0 - f32)->dtype(), DType::Float32);
  EXPECT_EQ((i32 / i32)->dtype(), DType::Float64);
  EXPECT_EQ((i32 % i32)->dtype(), DType::Int32);
  NDArray x = testing::make_array({1, 2, 4}, {3}, DType::Float32);
  EXPECT_ALLCLOSE(run1(1.0 / f32 - f32 * 2.0 + (-f32) / 4.0, {{f32, x}}),
                  testing::make_array({1 - 2 - 0.25, 0.5 - 4 - 0.5, 0.25 - 8 - 1}, {3}, DType::Float32));
}

TEST(Elemwise, IntegerDivisionAndModuloFollowPython) {
  Var a = fvar(1, DType::Int32, "a"), b = fvar(1, DType::Int32, "b");
  NDArray av = testing::make_array({-7, 7, -7, 7, 5, -5, 0, -2147483648.0}, {8}, DType::Int32);
  NDArray bv = testing::make_array({2, -2, -2, 2, 0, 0, 3, -1}, {8}, DType::Int32);
  for (std::string_view be : {kReferenceBackend, kCpuBackend}) {
    EXPECT_ALLCLOSE(run1(int_div(a, b), {{a, av}, {b, bv}}, be),
                    testing::make_array({-4, -4, 3, 3, 0, 0, 0, -2147483648.0}, {8}, DType::Int32));
    EXPECT_ALLCLOSE(run1(mod(a, b), {{a, av}, {b, bv}}, be),
                    testing::make_array({1, -1, -1, 1, 0, 0, 0, 0}, {8}, DType::Int32));
  }
  Var x = fvar(1), y = fvar(1, DType::Float64, "y");
  NDArray xv = testing::make_array({-7.5, 7.5, 1, -1}, {4}, DType::Float64);
  NDArray yv = testing::make_array({2, -2, 0, 0}, {4}, DType::Float64);
  NDArray m = run1(mod(x, y), {{x, xv}, {y, yv}});
  EXPECT_DOUBLE_EQ(m.get_flat(0), 0.5);
  EXPECT_DOUBLE_EQ(m.get_flat(1), -0.5);
  EXPECT_TRUE(std::isnan(m.get_flat(2)));
  NDArray q = run1(int_div(x, y), {{x, xv}, {y, yv}});
  EXPECT_DOUBLE_EQ(q.get_flat(0), -4);
  EXPECT_DOUBLE_EQ(q.get_flat(1), -4);
  EXPECT_EQ(q.get_flat(2), std::numeric_limits<double>::infinity());
  // Integer pow stays integer, negative exponents truncate like C.
  NDArray p = run1(pow(a, b), {{a, testing::make_array({2, -3, 2, 1, -1}, {5}, DType::Int32)},
                               {b, testing::make_array({10, 3, -1, -5, -3}, {5}, DType::Int32)}});
  EXPECT_EQ(p.dtype(), DType::Int32);
  EXPECT_ALLCLOSE(p, testing::make_array({1024, -27, 0, 1, -1}, {5}, DType::Int32));
}

/// Python's a // b and a % b in 64-bit integers (b != 0), wrapped to T as numpy's.
template <class T>
std::pair<T, T> python_divmod(int64_t a, int64_t b) {
  int64_t q = a / b, r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) {
    q -= 1;
    r += b;
  }
  return {static_cast<T>(q), static_cast<T>(r)};
}

// int8 to int32 divide through a floating-point quotient (scalar_functors.h kDivThroughFloat):
// every pair of 8-bit values, 16-bit ones in a grid that holds every extreme, int32 at its
// extremes and at random, against Python's integer rule; 0 for b == 0, wrapping for min // -1.
TEST(Elemwise, IntegerFloorDivisionThroughAFloatQuotientIsExact) {
  auto check = [](auto a, auto b) {
    using T = decltype(a);
    const T q = scalar_math::int_div(a, b), r = scalar_math::mod(a, b);
    if (b == 0) {
      ASSERT_EQ(q, T(0)) << +a << " // 0";
      ASSERT_EQ(r, T(0)) << +a << " % 0";
      return;
    }
    const auto [wq, wr] = python_divmod<T>(a, b);
    ASSERT_EQ(q, wq) << +a << " // " << +b;
    ASSERT_EQ(r, wr) << +a << " % " << +b;
  };
  for (int a = -128; a < 128; ++a)
    for (int b = -128; b < 128; ++b) check(static_cast<int8_t>(a), static_cast<int8_t>(b));
  for (int a = 0; a < 256; ++a)
    for (int b = 0; b < 256; ++b) check(static_cast<uint8_t>(a), static_cast<uint8_t>(b));
  std::vector<int> v16;
  for (int k = -32768; k < 32768; k += 97) v16.push_back(k);
  for (int k : {-32768, -32767, -2, -1, 0, 1, 2, 3, 32766, 32767}) v16.push_back(k);
  for (int a : v16)
    for (int b : v16) {
      check(static_cast<int16_t>(a), static_cast<int16_t>(b));
      check(static_cast<uint16_t>(a + 32768), static_cast<uint16_t>(b + 32768));
    }
  std::vector<int64_t> v32 = {INT32_MIN, INT32_MIN + 1, -65537,        -3,       -2, -1, 0, 1, 2, 3,
                              7,         65536,         INT32_MAX - 1, INT32_MAX};
  std::mt19937_64 rng(5);
  for (int k = 0; k < 2000; ++k) v32.push_back(static_cast<int32_t>(rng()));
  for (int k = 0; k < 200; ++k) v32.push_back(static_cast<int32_t>(rng()) >> (rng() % 31));
  for (int64_t a : v32)
    for (int64_t b : v32) check(static_cast<int32_t>(a), static_cast<int32_t>(b));
}

TEST(Elemwise, ExactSpecialValues) {
  Var x = fvar(1);
  auto ev = [&](Var out, std::vector<double> in) {
    return run1(out, {{x, testing::make_array(in, {static_cast<int64_t>(in.size())}, DType::Float64)}});
  };
  EXPECT_ALLCLOSE(ev(round(x), {0.5, 1.5, 2.5, -0.5, -1.5, 2.4}),
                  testing::make_array({0, 2, 2, -0.0, -2, 2}, {6}, DType::Float64));
  NDArray g = ev(gamma(x), {5, 0.5, 1});
  EXPECT_NEAR(g.get_flat(0), 24, 1e-12);
  EXPECT_NEAR(g.get_flat(1), std::sqrt(M_PI), 1e-14);
  EXPECT_NEAR(ev(gammaln(x), {10}).get_flat(0), std::log(362880.0), 1e-12);
  const double euler = 0.57721566490153286061;
  NDArray ps = ev(psi(x), {1, 0.5, -0.5, 100, 1e-8});
  EXPECT_NEAR(ps.get_flat(0), -euler, 1e-15);
  EXPECT_NEAR(ps.get_flat(1), -euler - 2 * std::log(2.0), 1e-14);
  EXPECT_NEAR(ps.get_flat(2), 0.03648997397857652, 1e-14);
  EXPECT_NEAR(ps.get_flat(3), 4.600161852738087, 1e-14);
  EXPECT_NEAR(ps.get_flat(4), -100000000.57721566, 1e-6);
  NDArray pz = ev(psi(x), {0, -2});
  EXPECT_EQ(pz.get_flat(0), -std::numeric_limits<double>::infinity());
  EXPECT_TRUE(std::isnan(pz.get_flat(1)));
  // erfinv inverts erf to float64 accuracy, also deep in the tails.
  std::vector<double> xs = {-5.5, -3, -1, -0.3, 1e-10, 0.2, 0.9, 2.5, 5.0};
  std::vector<double> ys;
  for (double v : xs) ys.push_back(std::erf(v));
  NDArray inv = ev(erfinv(x), ys);
  for (size_t i = 0; i < xs.size(); ++i) {
    const double got = inv.get_flat(i), ay = std::fabs(ys[i]);
    // The tails are ill-conditioned (y is rounded near +-1): check the residual of 1 - |y| instead.
    if (std::fabs(xs[i]) <= 1) {
      EXPECT_NEAR(got, xs[i], 4e-16 + 4e-16 * std::fabs(xs[i])) << i;
    }
    if (ay > 0.5) {
      EXPECT_NEAR(std::erfc(std::fabs(got)), 1 - ay, 1e-14 * (1 - ay)) << i;
    }
    EXPECT_EQ(std::signbit(got), std::signbit(xs[i])) << i;
  }
  NDArray e1 = ev(erfinv(x), {1, -1, 1.5, 0});
  EXPECT_EQ(e1.get_flat(0), std::numeric_limits<double>::infinity());
  EXPECT_EQ(e1.get_flat(1), -std::numeric_limits<double>::infinity());
  EXPECT_TRUE(std::isnan(e1.get_flat(2)));
  EXPECT_EQ(e1.get_flat(3), 0);
  NDArray sg = ev(sigmoid(x), {-800, 800, 0});
  EXPECT_EQ(sg.get_flat(0), 0);
  EXPECT_EQ(sg.get_flat(1), 1);
  EXPECT_EQ(sg.get_flat(2), 0.5);
  NDArray sp = ev(softplus(x), {1000, -1000, 0});
  EXPECT_EQ(sp.get_flat(0), 1000);
  EXPECT_EQ(sp.get_flat(1), 0);
  EXPECT_NEAR(sp.get_flat(2), std::log(2.0), 1e-15);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  Var y = fvar(1, DType::Float64, "y");
  NDArray mx = run1(maximum(x, y), {{x, testing::make_array({nan, 1, 2}, {3}, DType::Float64)},
                                    {y, testing::make_array({0, nan, 1}, {3}, DType::Float64)}});
  EXPECT_TRUE(std::isnan(mx.get_flat(0)));
  EXPECT_TRUE(std::isnan(mx.get_flat(1)));
  EXPECT_EQ(mx.get_flat(2), 2);
  NDArray isn = ev(isnan(x), {nan, 1, std::numeric_limits<double>::infinity()});
  EXPECT_EQ(isn.dtype(), DType::Bool);
  EXPECT_EQ(isn.get_flat(0), 1);
  EXPECT_EQ(isn.get_flat(2), 0);
  // Float -> int casts of NaN and out-of-range values do not hit UB.
  NDArray ci = ev(cast(x, DType::Int32), {nan, 1e20, -3.7, 3.7});
  EXPECT_EQ(ci.get_flat(2), -3);
  EXPECT_EQ(ci.get_flat(3), 3);
  NDArray cb = ev(cast(x, DType::Bool), {nan, 0, -0.0, 2});
  EXPECT_EQ(cb.get_flat(0), 1);
  EXPECT_EQ(cb.get_flat(1), 0);
  EXPECT_EQ(cb.get_flat(2), 0);
  // Integer overflow wraps like numpy.
  Var i8 = fvar(1, DType::Int8);
  NDArray w = run1(add(i8, i8), {{i8, testing::make_array({100, -128}, {2}, DType::Int8)}});
  EXPECT_EQ(w.get_flat(0), -56);
  EXPECT_EQ(w.get_flat(1), 0);
  NDArray na = run1(abs(i8), {{i8, testing::make_array({-128, -3}, {2}, DType::Int8)}});
  EXPECT_EQ(na.get_flat(0), -128);
  EXPECT_EQ(na.get_flat(1), 3);
}

TEST(Elemwise, RuntimeBroadcastErrors) {
  Var x = fvar(2, DType::Float64, "x"), y = fvar(2, DType::Float64, "y");
  NDArray a = rnd({3, 4}, DType::Float64, 1, -1, 1);
  for (std::string_view be : {kReferenceBackend, kCpuBackend}) {
    try {
      run1(x + y, {{x, a}, {y, rnd({1, 4}, DType::Float64, 2, -1, 1)}}, be);
      ADD_FAILURE() << "no error";
    } catch (const ValueError& e) {
      std::string m = e.what();
      EXPECT_EQ(m.rfind("Elemwise{add,no_inplace}", 0), 0u) << m;
      EXPECT_NE(m.find("(3, 4)"), std::string::npos) << m;
      EXPECT_NE(m.find("(1, 4)"), std::string::npos) << m;
      EXPECT_NE(m.find("input 1"), std::string::npos) << m;
      EXPECT_NE(m.find("axis 0"), std::string::npos) << m;
      EXPECT_NE(m.find("broadcastable"), std::string::npos) << m;
    }
    try {
      run1(x * y, {{x, a}, {y, rnd({3, 5}, DType::Float64, 2, -1, 1)}}, be);
      ADD_FAILURE() << "no error";
    } catch (const ValueError& e) {
      std::string m = e.what();
      EXPECT_EQ(m.rfind("Elemwise{mul,no_inplace}", 0), 0u) << m;
      EXPECT_NE(m.find("(3, 4), (3, 5)"), std::string::npos) << m;
    }
  }
  // A broadcastable dim broadcasts.
  Var r = variable(row_type(DType::Float64), "r");
  EXPECT_EQ(run1(x + r, {{x, a}, {r, rnd({1, 4}, DType::Float64, 2, -1, 1)}}).shape(), (Shape{3, 4}));
}

TEST(Elemwise, InferShape) {
  Var x = fvar(2, DType::Float64, "x"), r = variable(row_type(DType::Float64), "r");
  Var out = x * r;
  const Apply& node = *out->owner;
  auto shapes = node.op->infer_shape(node, {shape_vars(node.inputs[0]), shape_vars(node.inputs[1])});
  ASSERT_EQ(shapes.size(), 1u);
  ASSERT_EQ(shapes[0].size(), 2u);
  NDArray xv = rnd({3, 5}, DType::Float64, 1, 0, 1);
  EXPECT_EQ(run1(shapes[0][0], {{x, xv}}).get_flat(0), 3);
  EXPECT_EQ(run1(shapes[0][1], {{x, xv}}).get_flat(0), 5);
}

TEST(ElemwiseGrad, BroadcastInputsSumTheirGradient) {
  NDArray m = rnd({3, 4}, DType::Float64, 1, -1, 1), rw = rnd({1, 4}, DType::Float64, 2, -1, 1);
  verify_grad([](const std::vector<Var>& v) { return v[0] * v[1] + exp(v[1]); }, {m, rw});
  Var x = fvar(2), r = variable(row_type(DType::Float64), "r");
  Var g = grad(sum(x * r), r);
  EXPECT_EQ(g->type, r->type);
  NDArray gv = run1(g, {{x, m}, {r, rw}});
  for (int j = 0; j < 4; ++j) EXPECT_NEAR(gv.get_flat(j), m.get_flat(j) + m.get_flat(4 + j) + m.get_flat(8 + j), 1e-12);
}

TEST(ElemwiseGrad, MixedPrecisionAndIntegerInputs) {
  Var x = fvar(1, DType::Float32, "x"), y = fvar(1, DType::Float64, "y"), i = fvar(1, DType::Int32, "i");
  Var gx = grad(sum(x * y), x);
  EXPECT_EQ(gx->dtype(), DType::Float32);
  auto gs = grad(sum(x * i), std::vector<Var>{x});
  EXPECT_EQ(gs[0]->dtype(), DType::Float32);
  Var xi = x * i;
  const Apply& node = *xi->owner;
  auto cp = node.op->connection_pattern(node);
  EXPECT_TRUE(cp[0][0]);
  EXPECT_FALSE(cp[1][0]);
  auto gi = node.op->grad(node, {ones_like(xi)});
  EXPECT_EQ(gi[1], nullptr);
  // Piecewise-constant ops give zero gradients.
  NDArray xv = testing::make_array({0.3, 1.7, -2.2}, {3}, DType::Float32);
  for (Var out : {floor(x), ceil(x), round(x), sign(x), trunc(x)}) {
    NDArray g = run1(grad(sum(out), x), {{x, xv}});
    EXPECT_EQ(g.get_flat(0), 0);
    EXPECT_EQ(g.get_flat(2), 0);
  }
  // Switch's condition is disconnected.
  Var c = fvar(1, DType::Bool, "c");
  Var swv = switch_(c, x, y);
  const Apply& sw = *swv->owner;
  EXPECT_FALSE(sw.op->connection_pattern(sw)[0][0]);
}

TEST(ElemwiseGrad, ModAndIntDivWhereSmooth) {
  NDArray a = testing::make_array({3.5, -2.7, 5.1}, {3}, DType::Float64);
  NDArray b = testing::make_array({1.1, 0.8, -1.3}, {3}, DType::Float64);
  verify_grad([](const std::vector<Var>& v) { return mod(v[0], v[1]); }, {a, b});
  Var x = fvar(1);
  EXPECT_EQ(run1(grad(sum(int_div(x, scalar_like(2, x))), x), {{x, a}}).get_flat(0), 0);
}

TEST(ElemwiseGrad, PsiUsesTrigammaWhoseGradientIsUndefined) {
  Var x = fvar(1);
  NDArray xv = testing::make_array({1, 0.5, -0.5, 30, -2.5}, {5}, DType::Float64);
  NDArray g = run1(grad(sum(psi(x)), x), {{x, xv}});
  const double pi2 = M_PI * M_PI;
  EXPECT_NEAR(g.get_flat(0), pi2 / 6, 1e-14);
  EXPECT_NEAR(g.get_flat(1), pi2 / 2, 1e-14);
  EXPECT_NEAR(g.get_flat(2), pi2 / 2 + 4, 1e-13);  // psi1(-1/2) = pi^2/2 + 4
  EXPECT_NEAR(g.get_flat(3), 0.033895060357616, 1e-12);
  EXPECT_NEAR(g.get_flat(4), pi2 / 2 + 4 + 4.0 / 9 + 4.0 / 25, 1e-12);
  EXPECT_EQ(run1(trigamma(x), {{x, testing::make_array({0, -3}, {2}, DType::Float64)}}).get_flat(1),
            std::numeric_limits<double>::infinity());
  EXPECT_THROW(grad(sum(trigamma(x)), x), NotDifferentiableError);
}

TEST(ElemwiseRop, MatchesDirectionalDerivative) {
  Var x = fvar(2, DType::Float64, "x"), y = fvar(2, DType::Float64, "y"), vx = fvar(2, DType::Float64, "vx");
  Var f = exp(x) * y;
  Var jv = Rop({f}, {x}, {vx})[0];
  NDArray xv = rnd({2, 3}, DType::Float64, 1, -1, 1), yv = rnd({2, 3}, DType::Float64, 2, -1, 1);
  NDArray v = rnd({2, 3}, DType::Float64, 3, -1, 1);
  NDArray got = run1(jv, {{x, xv}, {y, yv}, {vx, v}});
  for (int64_t i = 0; i < 6; ++i)
    EXPECT_NEAR(got.get_flat(i), std::exp(xv.get_flat(i)) * yv.get_flat(i) * v.get_flat(i), 1e-12);
  // A broadcast input's tangent is broadcast to the output's shape.
  Var r = variable(row_type(DType::Float64), "r"), vr = variable(row_type(DType::Float64), "vr");
  Var jr = Rop({x + r}, {r}, {vr})[0];
  NDArray rr = rnd({1, 3}, DType::Float64, 4, -1, 1);
  NDArray got2 = run1(jr, {{x, xv}, {r, rr}, {vr, rr}});
  EXPECT_EQ(got2.shape(), (Shape{2, 3}));
  EXPECT_EQ(got2.get_flat(4), rr.get_flat(1));
}

}  // namespace
}  // namespace hypatia
