// Reduction fusion: the CompositeReduce op (OpInfo entries for sum over all, last, first and
// middle axes, prod, max, min) and the rewrite that turns sum(elementwise) into it.
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>

#include "hypatia/hypatia.h"
#include "test_util.h"

namespace hypatia {
namespace {

using testing::make_array;
using testing::OpSample;
using testing::random_array;
using testing::random_strided;

NDArray rnd(const Shape& s, DType dt, uint64_t seed) { return random_array(s, dt, -1, 1, seed); }

using S = CompositeStep;

/// add(mul(i0, i1), i2) reduced by `kind` over `axes` (nullopt: all axes).
std::function<Var(const std::vector<Var>&)> build_reduce(ReduceKind kind, std::optional<std::vector<int>> axes,
                                                         bool f64_out = false) {
  return [=](const std::vector<Var>& v) {
    const int nd = v[0]->ndim();
    std::vector<int> ax;
    if (axes) {
      for (int a : *axes) ax.push_back(a < 0 ? a + nd : a);
    } else {
      for (int d = 0; d < nd; ++d) ax.push_back(d);
    }
    std::vector<S> steps{{ScalarOpKind::Mul, {0, 1}}, {ScalarOpKind::Add, {3, 2}}};
    if (kind == ReduceKind::Prod) steps.push_back({ScalarOpKind::Exp, {4}});  // keeps products finite
    if (kind == ReduceKind::Max) steps.push_back({ScalarOpKind::Tanh, {4}});
    const DType dt = v[0]->dtype();
    return apply_op1(std::make_shared<CompositeReduce>(3, dt, steps, kind, ax, f64_out ? DType::Float64 : dt), v);
  };
}

/// Matrix samples: same shape, broadcasting, strided, zero size, several tiles, threads.
std::vector<OpSample> matrix_samples(DType dt) {
  return {
      {"same shape", {rnd({3, 4}, dt, 1), rnd({3, 4}, dt, 2), rnd({3, 4}, dt, 3)}},
      {"broadcast", {rnd({3, 4}, dt, 4), rnd({1, 4}, dt, 5), rnd({3, 1}, dt, 6)}},
      {"strided", {random_strided({5, 3}, dt, -1, 1, 7), rnd({3, 5}, dt, 8).transpose(), rnd({5, 3}, dt, 9)}},
      {"zero size", {rnd({0, 3}, dt, 10), rnd({0, 3}, dt, 11), rnd({1, 3}, dt, 12)}},
      {"several tiles", {rnd({3, 2500}, dt, 13), rnd({3, 2500}, dt, 14), rnd({1, 2500}, dt, 15)}, false},
      {"short rows", {rnd({700, 3}, dt, 16), rnd({700, 3}, dt, 17), rnd({700, 1}, dt, 18)}, false},
      {"threads, long rows", {rnd({3, 90000}, dt, 19), rnd({3, 90000}, dt, 20), rnd({1, 1}, dt, 21)}, false},
      {"threads, short rows", {rnd({90000, 3}, dt, 22), rnd({90000, 3}, dt, 23), rnd({90000, 1}, dt, 24)}, false},
      {"threads, square", {rnd({520, 520}, dt, 25), rnd({520, 520}, dt, 26).transpose(), rnd({1, 520}, dt, 27)}, false},
  };
}

HYP_OPINFO({
    .name = "composite_reduce_sum_all",
    .build = build_reduce(ReduceKind::Sum, std::nullopt),
    .samples =
        [](DType dt) {
          auto s = matrix_samples(dt);
          s.push_back({"vector, threads", {rnd({250001}, dt, 30), rnd({250001}, dt, 31), rnd({1}, dt, 32)}, false});
          s.push_back({"0-d", {rnd({}, dt, 33), rnd({}, dt, 34), rnd({}, dt, 35)}});
          return s;
        },
    .dtypes = testing::kFloatTypes,
});

HYP_OPINFO({
    .name = "composite_reduce_sum_last_axis",
    .build = build_reduce(ReduceKind::Sum, std::vector<int>{-1}),
    .samples = matrix_samples,
    .dtypes = testing::kFloatTypes,
});

HYP_OPINFO({
    .name = "composite_reduce_sum_first_axis_f64",
    .build = build_reduce(ReduceKind::Sum, std::vector<int>{0}, true),
    .samples = matrix_samples,
    .dtypes = testing::kFloatTypes,
});

HYP_OPINFO({
    .name = "composite_reduce_sum_3d",
    .build = build_reduce(ReduceKind::Sum, std::vector<int>{0, 2}),
    .samples =
        [](DType dt) {
          return std::vector<OpSample>{
              {"same shape", {rnd({2, 3, 4}, dt, 1), rnd({2, 3, 4}, dt, 2), rnd({2, 3, 4}, dt, 3)}},
              {"broadcast", {rnd({2, 3, 4}, dt, 4), rnd({1, 3, 1}, dt, 5), rnd({2, 1, 4}, dt, 6)}},
              {"transposed", {rnd({4, 3, 2}, dt, 7).transpose(), rnd({2, 3, 4}, dt, 8), rnd({1, 1, 1}, dt, 9)}},
              {"threads", {rnd({40, 70, 100}, dt, 10), rnd({40, 70, 100}, dt, 11), rnd({40, 1, 100}, dt, 12)}, false},
          };
        },
    .dtypes = testing::kFloatTypes,
});

HYP_OPINFO({
    .name = "composite_reduce_middle_axis",
    .build = build_reduce(ReduceKind::Sum, std::vector<int>{1}),
    .samples =
        [](DType dt) {
          return std::vector<OpSample>{
              {"same shape", {rnd({2, 3, 4}, dt, 1), rnd({2, 3, 4}, dt, 2), rnd({2, 3, 4}, dt, 3)}},
              {"threads", {rnd({30, 90, 100}, dt, 4), rnd({30, 90, 100}, dt, 5), rnd({1, 90, 1}, dt, 6)}, false},
          };
        },
    .dtypes = testing::kFloatTypes,
});

HYP_OPINFO({
    .name = "composite_reduce_prod",
    .build = build_reduce(ReduceKind::Prod, std::vector<int>{1}),
    // Rows of at most 100 elements: a product of n float32 exps differs by up to n ulps between
    // the SIMD and the reference exp.
    .samples =
        [](DType dt) {
          return std::vector<OpSample>{
              {"same shape", {rnd({3, 4}, dt, 1), rnd({3, 4}, dt, 2), rnd({3, 4}, dt, 3)}},
              {"broadcast", {rnd({3, 4}, dt, 4), rnd({1, 4}, dt, 5), rnd({3, 1}, dt, 6)}},
              {"strided", {random_strided({5, 3}, dt, -1, 1, 7), rnd({3, 5}, dt, 8).transpose(), rnd({5, 3}, dt, 9)}},
              {"zero size", {rnd({3, 0}, dt, 10), rnd({3, 0}, dt, 11), rnd({1, 0}, dt, 12)}},
              {"threads", {rnd({3000, 100}, dt, 13), rnd({3000, 100}, dt, 14), rnd({3000, 1}, dt, 15)}, false},
          };
        },
    .dtypes = testing::kFloatTypes,
});

HYP_OPINFO({
    .name = "composite_reduce_max",
    .build = build_reduce(ReduceKind::Max, std::nullopt),
    .samples =
        [](DType dt) {
          auto s = matrix_samples(dt);
          s.erase(s.begin() + 3);  // max of nothing has no identity
          return s;
        },
    .dtypes = testing::kFloatTypes,
});

HYP_OPINFO({
    .name = "composite_reduce_min_first_axis",
    .build = build_reduce(ReduceKind::Min, std::vector<int>{0}),
    .samples =
        [](DType dt) {
          auto s = matrix_samples(dt);
          s.erase(s.begin() + 3);
          s[1].check_grad = false;  // rows within the float32 finite-difference step of each other
          return s;
        },
    .dtypes = testing::kFloatTypes,
});

int count_ops(const Function& f, const std::string& needle) {
  int c = 0;
  for (const auto& n : f.toposort()) c += n->op->name().find(needle) != std::string::npos;
  return c;
}

Function compile_none(std::vector<In> ins, std::vector<Out> outs) {
  FunctionOptions none;
  none.mode = "NONE";
  return function(std::move(ins), std::move(outs), none);
}

TEST(FusionReduce, SumOfProductIsOneNode) {
  Var x = variable(vector_type(DType::Float32), "x");
  Var y = variable(vector_type(DType::Float32), "y");
  Function f = function({x, y}, {sum(x * y)});
  ASSERT_EQ(f.toposort().size(), 1u) << f.debugprint();
  EXPECT_EQ(f.toposort()[0]->op->name(), "Sum{axis=[0], dtype=float32}{Composite{mul(i0, i1)}}");
  Function g = compile_none({x, y}, {sum(x * y)});
  for (int64_t n : {0, 1, 17, 5000, 250001}) {
    SCOPED_TRACE(n);
    std::vector<NDArray> args{rnd({n}, DType::Float32, 1), rnd({n}, DType::Float32, 2)};
    EXPECT_ALLCLOSE(f(args)[0], g(args)[0], 1e-5, 1e-5);
  }
  // A strided argument.
  std::vector<NDArray> args{random_strided({3000}, DType::Float32, -1, 1, 3), rnd({3000}, DType::Float32, 4)};
  EXPECT_ALLCLOSE(f(args)[0], g(args)[0], 1e-5, 1e-5);
}

TEST(FusionReduce, AxesKeepdimsMeanAndDtypes) {
  for (DType dt : testing::kFloatTypes) {
    SCOPED_TRACE(dtype_name(dt));
    Var x = variable(matrix_type(dt), "x");
    Var b = variable(row_type(dt), "b");
    Var c = variable(vector_type(dt), "c");
    std::vector<Var> outs{sum(sqr(x - b)),
                          sum(tanh(x * b), std::vector<int>{1}),
                          sum(exp(x) + c, std::vector<int>{0}, true),
                          mean(sqr(x), std::vector<int>{1}),
                          max(x + b, std::vector<int>{1}),
                          min(x + c, std::vector<int>{0}),
                          prod(exp(x * 0.1), std::vector<int>{0}),
                          sum(x * c, std::nullopt, false, DType::Float64)};
    std::vector<Out> os(outs.begin(), outs.end());
    Function f = function({x, b, c}, os);
    EXPECT_EQ(count_ops(f, "}{Composite{"), static_cast<int>(outs.size())) << f.debugprint();
    Function g = compile_none({x, b, c}, os);
    for (Shape s : {Shape{4, 5}, Shape{0, 5}, Shape{1, 3000}, Shape{3000, 3}, Shape{40000, 9}, Shape{600, 500}}) {
      if (testing::kSanitizerBuild && s[0] * s[1] > 100000) continue;  // the largest under sanitizers
      SCOPED_TRACE(s.str());
      if (s[0] == 0) continue;  // max/min have no identity there (tested below)
      std::vector<NDArray> args{rnd(s, dt, 1), rnd({1, s[1]}, dt, 2), rnd({s[1]}, dt, 3)};
      auto r1 = f(args), r2 = g(args);
      for (size_t k = 0; k < outs.size(); ++k) {
        SCOPED_TRACE(k);
        EXPECT_EQ(r1[k].dtype(), r2[k].dtype());
        // Float32 exp and tanh may differ by an ulp between the SIMD and the reference loops.
        EXPECT_ALLCLOSE(r1[k], r2[k], dt == DType::Float32 ? 1e-3 : 1e-10, dt == DType::Float32 ? 1e-4 : 1e-10);
      }
    }
  }
}

TEST(FusionReduce, SeveralReductionsOfOneProductEachTakeACopy) {
  Var x = variable(matrix_type(DType::Float32), "x");
  Var y = variable(matrix_type(DType::Float32), "y");
  Var p = x * y;
  std::vector<Out> outs{sum(p), sum(p, std::vector<int>{0}), max(p, std::vector<int>{1})};
  Function f = function({x, y}, outs);
  EXPECT_EQ(f.toposort().size(), 3u) << f.debugprint();
  EXPECT_EQ(count_ops(f, "}{Composite{mul(i0, i1)}}"), 3) << f.debugprint();
  Function g = compile_none({x, y}, outs);
  std::vector<NDArray> args{rnd({300, 900}, DType::Float32, 1), rnd({300, 900}, DType::Float32, 2)};
  auto r1 = f(args), r2 = g(args);
  for (size_t k = 0; k < r1.size(); ++k) EXPECT_ALLCLOSE(r1[k], r2[k], 1e-5, 1e-4);
}

TEST(FusionReduce, ZeroSizeInputs) {
  Var x = variable(matrix_type(DType::Float64), "x");
  Var y = variable(matrix_type(DType::Float64), "y");
  Function f = function({x, y}, {sum(x * y), sum(x * y, std::vector<int>{0}), prod(x + y, std::vector<int>{1})});
  EXPECT_EQ(count_ops(f, "}{Composite{"), 3) << f.debugprint();
  auto r = f({rnd({0, 4}, DType::Float64, 1), rnd({0, 4}, DType::Float64, 2)});
  EXPECT_EQ(r[0].get_flat(0), 0.0);
  EXPECT_ALLCLOSE(r[1], make_array({0, 0, 0, 0}, {4}, DType::Float64));
  EXPECT_EQ(r[2].size(), 0);
  Function m = function({x, y}, {max(x * y, std::vector<int>{0})});
  EXPECT_THROW(m({rnd({0, 4}, DType::Float64, 1), rnd({0, 4}, DType::Float64, 2)}), ValueError);
  EXPECT_EQ(m({rnd({3, 0}, DType::Float64, 1), rnd({3, 0}, DType::Float64, 2)})[0].size(), 0);
}

TEST(FusionReduce, Float32SumsAccumulateInFloat64) {
  // 4M times 0.1f: float32 accumulation would be far off; float64 accumulation is exact to ~1e-9.
  const int64_t n = 4 * 1024 * 1024;
  NDArray x = NDArray::empty({n}, DType::Float32);
  NDArray y = NDArray::empty({n}, DType::Float32);
  std::fill(x.data<float>(), x.data<float>() + n, 0.1f);
  std::fill(y.data<float>(), y.data<float>() + n, 1.0f);
  Var vx = variable(vector_type(DType::Float32), "x");
  Var vy = variable(vector_type(DType::Float32), "y");
  Function f = function({vx, vy}, {sum(vx * vy)});
  ASSERT_EQ(f.toposort().size(), 1u);
  const double expected = static_cast<double>(0.1f) * n;
  EXPECT_NEAR(f({x, y})[0].get_flat(0), expected, expected * 1e-7);
}

TEST(FusionReduce, DeterministicForAThreadCount) {
  Var x = variable(matrix_type(DType::Float32), "x");
  Var y = variable(matrix_type(DType::Float32), "y");
  std::vector<Out> outs{sum(x * y), sum(x * y, std::vector<int>{1}), sum(tanh(x) * y, std::vector<int>{0})};
  Function g = compile_none({x, y}, outs);
  // Above the threading threshold either way (300 x 700 under a sanitizer).
  const Shape shape = testing::kSanitizerBuild ? Shape{300, 700} : Shape{700, 900};
  std::vector<NDArray> args{rnd(shape, DType::Float32, 1), rnd(shape, DType::Float32, 2)};
  auto want = g(args);
  Config saved = config();
  for (int threads : testing::kSanitizerBuild ? std::vector<int>{1, 3} : std::vector<int>{1, 2, 3, 4, 7}) {
    SCOPED_TRACE(threads);
    config().num_threads = threads;
    Function f = function({x, y}, outs);
    auto r1 = f(args), r2 = f(args);
    for (size_t k = 0; k < r1.size(); ++k) {
      EXPECT_ALLCLOSE(r1[k], r2[k], 0, 0);  // bitwise the same
      EXPECT_ALLCLOSE(r1[k], want[k], 1e-5, 1e-4);
    }
  }
  config() = saved;
}

TEST(FusionReduce, NotFusedWhenTheElementwiseResultIsReadElsewhere) {
  Var x = variable(vector_type(DType::Float64), "x");
  Var y = variable(vector_type(DType::Float64), "y");
  Var p = x * y;
  Function f = function({x, y}, {sum(p), p});
  EXPECT_EQ(count_ops(f, "}{Composite{"), 0) << f.debugprint();
  EXPECT_EQ(count_ops(f, "Sum{"), 1) << f.debugprint();
  // Integer reductions and all/any stay as they are.
  Var i = variable(vector_type(DType::Int32), "i");
  Function h = function({i, x, y}, {sum(i * i), any(x * y)});
  EXPECT_EQ(count_ops(h, "}{Composite{"), 0) << h.debugprint();
}

TEST(FusionReduce, GradientThroughAFusedGraph) {
  Var x = variable(matrix_type(DType::Float64), "x");
  Var w = variable(matrix_type(DType::Float64), "w");
  Var b = variable(vector_type(DType::Float64), "b");
  Var cost = sum(sqr(tanh(dot(x, w) + b))) + 0.5 * sum(sqr(w));
  std::vector<Var> g = grad(cost, {w, b});
  Function f = function({x, w, b}, {cost, g[0], g[1]});
  // sum(sqr(w)) fuses; sqr(tanh(.)) is also read by the gradient, so its sum does not.
  EXPECT_GE(count_ops(f, "Sum{axis=[0, 1], dtype=float64}{Composite{"), 1) << f.debugprint();
  Function ref = compile_none({x, w, b}, {cost, g[0], g[1]});
  std::vector<NDArray> args{rnd({30, 20}, DType::Float64, 1), rnd({20, 10}, DType::Float64, 2),
                            rnd({10}, DType::Float64, 3)};
  auto r1 = f(args), r2 = ref(args);
  for (size_t k = 0; k < r1.size(); ++k) EXPECT_ALLCLOSE(r1[k], r2[k], 1e-10, 1e-10);
  // The fused op's own gradient (through its unfused graph) against finite differences.
  verify_grad([](const std::vector<Var>& v) { return build_reduce(ReduceKind::Sum, std::vector<int>{1})(v); },
              {rnd({3, 4}, DType::Float64, 4), rnd({1, 4}, DType::Float64, 5), rnd({3, 4}, DType::Float64, 6)});
}

}  // namespace
}  // namespace hypatia
