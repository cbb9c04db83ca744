// Pooling (Theano's signal.pool): hand-computed values for every mode, border rule and padding,
// 3-d pools, gradients and second derivatives by verify_grad, shapes, errors.
#include <algorithm>
#include <random>

#include "test_util.h"

namespace hypatia {
namespace {
using testing::make_array;
using testing::random_array;

PoolParams pp(int64_t ws, int64_t st, bool ignore_border, std::string mode, int64_t pad = 0) {
  PoolParams p;
  p.ws = {ws, ws, 1};
  p.stride = {st, st, 1};
  p.pad = {pad, pad, 0};
  p.ignore_border = ignore_border;
  p.mode = std::move(mode);
  return p;
}

// ------------------------------------------------------------------------------------------------
// OpInfo entries (both backends, inferred shapes, gradients). Distinct random values: max pooling
// is differentiable there.

std::vector<testing::OpSample> pool_samples(DType dt) {
  return {
      {"(2,2,5,6)", {random_array({2, 2, 5, 6}, dt, -1, 1, 1)}},
      {"transposed (6,5,2)", {random_array({6, 5, 2}, dt, -1, 1, 2).transpose()}},
      {"strided (2,5,6)", {testing::random_strided({2, 5, 6}, dt, -1, 1, 3)}},
      {"zero-size (0,3,4)", {NDArray::zeros({0, 3, 4}, dt)}},
  };
}
// Values 0.05 apart in a shuffled order: a finite difference of max pooling's gradient ops does
// not move any window's max.
NDArray distinct(const Shape& shape, DType dt, uint64_t seed) {
  std::vector<double> v(static_cast<size_t>(shape.size() ? shape[0] * shape[1] * shape[2] : 0));
  for (size_t i = 0; i < v.size(); ++i) v[i] = 0.05 * static_cast<double>(i) - 1.0;
  std::mt19937_64 rng(seed);
  std::shuffle(v.begin(), v.end(), rng);
  return make_array(v, shape, dt);
}
// (x, the pooled gradient) for 3x2 windows, stride 2, keeping the border: (2,5,6) pools to (2,2,3).
std::vector<testing::OpSample> pool_grad_samples(DType dt) {
  return {
      {"x (2,5,6), gz (2,2,3)", {distinct({2, 5, 6}, dt, 4), random_array({2, 2, 3}, dt, -1, 1, 5)}},
      {"transposed gz", {distinct({2, 5, 6}, dt, 6), random_array({3, 2, 2}, dt, -1, 1, 7).transpose()}},
  };
}
std::vector<testing::OpSample> pool_gradgrad_samples(DType dt) {
  return {{"x (2,5,6), ggx (2,5,6)", {distinct({2, 5, 6}, dt, 8), random_array({2, 5, 6}, dt, -1, 1, 9)}}};
}
PoolParams opinfo_pool(const char* mode) {
  PoolParams p;
  p.ws = {3, 2, 1};
  p.stride = {2, 2, 1};
  p.mode = mode;
  return p;
}
HYP_OPINFO({
    .name = "pool_max",
    .build = [](const std::vector<Var>& v) { return pool(v[0], opinfo_pool("max")); },
    .samples = pool_samples,
    .dtypes = testing::kFloatTypes,
});
HYP_OPINFO({
    .name = "pool_average_exc_pad",
    .build = [](const std::vector<Var>& v) { return pool(v[0], opinfo_pool("average_exc_pad")); },
    .samples = pool_samples,
    .dtypes = testing::kFloatTypes,
});
HYP_OPINFO({
    .name = "max_pool_grad",
    .build =
        [](const std::vector<Var>& v) {
          return max_pool_grad(v[0], pool(v[0], opinfo_pool("max")), v[1], opinfo_pool("max"));
        },
    .samples = pool_grad_samples,
    .dtypes = testing::kFloatTypes,
});
HYP_OPINFO({
    .name = "average_pool_grad",
    .build = [](const std::vector<Var>& v) { return average_pool_grad(v[0], v[1], opinfo_pool("average_inc_pad")); },
    .samples = pool_grad_samples,
    .dtypes = testing::kFloatTypes,
});
HYP_OPINFO({
    .name = "max_pool_grad_grad",
    .build =
        [](const std::vector<Var>& v) {
          return max_pool_grad_grad(v[0], pool(v[0], opinfo_pool("max")), v[1], opinfo_pool("max"));
        },
    .samples = pool_gradgrad_samples,
    .dtypes = testing::kFloatTypes,
});

NDArray run(const Var& y, const Var& x, const NDArray& v) {
  NDArray cpu = eval(y, {{x, v}}, kCpuBackend);
  EXPECT_ALLCLOSE(cpu, eval(y, {{x, v}}, kReferenceBackend));
  return cpu;
}

TEST(Pool, HandComputedValues) {
  // 1x1x3x3 = 1..9 (a 3x3 image)
  NDArray img = make_array({1, 2, 3, 4, 5, 6, 7, 8, 9}, {1, 1, 3, 3}, DType::Float64);
  Var x = variable(tensor4_type(DType::Float64), "x");
  // 2x2, stride 2: ignore_border drops the last row/col; keeping the border pools the partial windows.
  EXPECT_ALLCLOSE(run(pool(x, pp(2, 2, true, "max")), x, img), make_array({5}, {1, 1, 1, 1}, DType::Float64));
  EXPECT_ALLCLOSE(run(pool(x, pp(2, 2, false, "max")), x, img), make_array({5, 6, 8, 9}, {1, 1, 2, 2}, DType::Float64));
  EXPECT_ALLCLOSE(run(pool(x, pp(2, 2, false, "sum")), x, img),
                  make_array({12, 9, 15, 9}, {1, 1, 2, 2}, DType::Float64));
  // Partial windows: exc_pad divides by the elements present, inc_pad by the window within the
  // (unpadded) image extent — the same without padding.
  EXPECT_ALLCLOSE(run(pool(x, pp(2, 2, false, "average_exc_pad")), x, img),
                  make_array({3, 4.5, 7.5, 9}, {1, 1, 2, 2}, DType::Float64));
  // Overlapping windows, stride 1.
  EXPECT_ALLCLOSE(run(pool(x, pp(2, 1, true, "max")), x, img), make_array({5, 6, 8, 9}, {1, 1, 2, 2}, DType::Float64));
  // Padding 1, window 2, stride 2 (ignore_border): windows {-1,0} and {1,2} per axis.
  EXPECT_ALLCLOSE(run(pool(x, pp(2, 2, true, "max", 1)), x, img),
                  make_array({1, 3, 7, 9}, {1, 1, 2, 2}, DType::Float64));
  EXPECT_ALLCLOSE(run(pool(x, pp(2, 2, true, "average_inc_pad", 1)), x, img),
                  make_array({1.0 / 4, 5.0 / 4, 11.0 / 4, 28.0 / 4}, {1, 1, 2, 2}, DType::Float64));
  EXPECT_ALLCLOSE(run(pool(x, pp(2, 2, true, "average_exc_pad", 1)), x, img),
                  make_array({1, 2.5, 5.5, 7}, {1, 1, 2, 2}, DType::Float64));
  // Integers (max, sum) keep their dtype; NaN propagates through max.
  Var xi = variable(tensor4_type(DType::Int32), "xi");
  EXPECT_ALLCLOSE(run(pool(xi, pp(2, 2, false, "max")), xi, img.astype(DType::Int32)),
                  make_array({5, 6, 8, 9}, {1, 1, 2, 2}, DType::Int32));
  NDArray withnan = make_array({1, NAN, 3, 4}, {1, 1, 2, 2}, DType::Float64);
  EXPECT_TRUE(std::isnan(run(pool(x, pp(2, 2, true, "max")), x, withnan).get_flat(0)));
  // A window of -inf pools to -inf (the window loop once gave the lowest finite value).
  NDArray ninf = make_array({-INFINITY, -INFINITY, -INFINITY, -INFINITY}, {1, 1, 2, 2}, DType::Float64);
  EXPECT_EQ(run(pool(x, pp(2, 2, true, "max")), x, ninf).get_flat(0), -INFINITY);
}

TEST(Pool, ThreeDimensionalAndLeadingAxes) {
  PoolParams p;
  p.nd = 3;
  p.ws = {2, 1, 2};
  p.stride = {1, 1, 2};
  p.ignore_border = true;
  Var x = variable(tensor_type(DType::Float32, 5), "x");
  NDArray v = random_array({2, 3, 3, 4, 5}, DType::Float32, -1, 1, 1);
  NDArray r = run(pool(x, p), x, v);
  EXPECT_EQ(r.shape(), (Shape{2, 3, 2, 4, 2}));
  // out[..., d, h, w] = max over v[..., d:d+2, h, 2w:2w+2]
  for (int64_t d = 0; d < 2; ++d) {
    float m = -1e9f;
    for (int64_t dd = 0; dd < 2; ++dd)
      for (int64_t ww = 0; ww < 2; ++ww) m = std::max(m, static_cast<float>(v.get_flat(((d + dd) * 4 + 1) * 5 + ww)));
    EXPECT_EQ(r.get_flat((d * 4 + 1) * 2), m);
  }
  // pool_2d of a 3-d tensor pools its last two axes.
  Var y = variable(tensor3_type(DType::Float32), "y");
  EXPECT_EQ(run(pool(y, pp(2, 2, false, "max")), y, random_array({3, 5, 5}, DType::Float32)).shape(), (Shape{3, 3, 3}));
}

// The CPU backend's separable max pool and its row form of the gradient (windows that do not
// overlap) against the reference backend's window loop, value for value (NaN where it has NaN; the
// sign of a zero picked among tied +0 and -0 may differ, as the two visit a window in different
// orders), over windows, strides, padding, both border rules, 2-d and 3-d pools, ties, NaN,
// infinities (a window of -inf pools to -inf, not to the lowest finite value) and -0.
bool same_bits(const NDArray& a, const NDArray& b) {
  if (!(a.shape() == b.shape()) || a.dtype() != b.dtype()) return false;
  for (int64_t i = 0; i < a.size(); ++i) {
    const double x = a.get_flat(i), y = b.get_flat(i);
    if (std::isnan(x) != std::isnan(y) || (!std::isnan(x) && x != y)) return false;
  }
  return true;
}

TEST(Pool, CpuMaxPathsMatchTheWindowLoop) {
  std::mt19937_64 rng(11);
  for (DType dt : {DType::Float32, DType::Float64, DType::Int32}) {
    const bool fl = dt != DType::Int32;
    // Few distinct values (ties), and for floats NaN, +-inf and -0 among them.
    std::vector<double> pick = {-2, -1, 0, 1, 2, 3};
    if (fl) pick.insert(pick.end(), {NAN, INFINITY, -INFINITY, -0.0});
    for (int nd : {2, 3}) {
      const Shape shape = nd == 2 ? Shape{2, 3, 7, 9} : Shape{2, 5, 6, 7};
      Var x = variable(tensor_type(dt, 4), "x"), gz = variable(tensor_type(dt, 4), "gz");
      std::vector<double> v(static_cast<size_t>(shape.prod()));
      for (double& e : v) e = pick[rng() % pick.size()];
      const NDArray xv = make_array(v, shape, dt);
      for (int64_t ws = 1; ws <= 3; ++ws)
        for (int64_t st = 1; st <= 3; ++st)
          for (int64_t pad = 0; pad < ws; ++pad)
            for (bool ib : {true, false}) {
              if (pad > 0 && !ib) continue;  // Theano's rule: padding needs ignore_border
              PoolParams p;
              p.nd = nd;
              // 2-d: (H, W) windows; 3-d: (D, H, W) with a window of 1 on H.
              p.ws = nd == 2 ? std::array<int64_t, 3>{ws, ws, 1} : std::array<int64_t, 3>{ws, 1, ws};
              p.stride = nd == 2 ? std::array<int64_t, 3>{st, st, 1} : std::array<int64_t, 3>{st, 1, st};
              p.pad = nd == 2 ? std::array<int64_t, 3>{pad, pad, 0} : std::array<int64_t, 3>{pad, 0, pad};
              p.ignore_border = ib;
              Var y = pool(x, p);
              const NDArray cpu = eval(y, {{x, xv}}, kCpuBackend), ref = eval(y, {{x, xv}}, kReferenceBackend);
              ASSERT_TRUE(same_bits(cpu, ref)) << p.str() << " " << dtype_name(dt);
              const NDArray gv = random_array(cpu.shape(), dt, -3, 3, static_cast<uint64_t>(ws * 10 + st));
              Var gx = max_pool_grad(x, y, gz, p);
              const NDArray gcpu = eval(gx, {{x, xv}, {gz, gv}}, kCpuBackend),
                            gref = eval(gx, {{x, xv}, {gz, gv}}, kReferenceBackend);
              ASSERT_TRUE(same_bits(gcpu, gref)) << "grad " << p.str() << " " << dtype_name(dt);
            }
    }
  }
}

TEST(Pool, GradientsAndSecondDerivatives) {
  // Distinct values (no ties) so that max pooling is differentiable at the point.
  NDArray v = random_array({2, 2, 5, 6}, DType::Float64, -1, 1, 3);
  for (const PoolParams& p :
       {pp(2, 2, true, "max"), pp(3, 2, false, "max"), pp(2, 1, true, "sum"), pp(3, 2, false, "average_exc_pad"),
        pp(2, 2, true, "average_inc_pad", 1), pp(3, 2, true, "max", 1)}) {
    verify_grad([&](const std::vector<Var>& x) { return pool(x[0], p); }, {v});
    // Second order: the gradient op's own gradient, through the incoming gradient.
    verify_grad(
        [&](const std::vector<Var>& x) {
          Var y = pool(x[0], p);
          Var g = grad(sum(y * y * y), x[0]);
          return sum(g * g);
        },
        {v});
  }
}

TEST(Pool, ShapesAndErrors) {
  Var x = variable(tensor4_type(DType::Float32), "x");
  for (const PoolParams& p :
       {pp(3, 2, false, "max"), pp(3, 2, true, "max"), pp(2, 3, false, "sum"), pp(3, 1, true, "average_inc_pad", 2)}) {
    Var y = pool(x, p);
    Function f = function({x}, {shape_i(y, 2), shape_i(y, 3)});
    EXPECT_EQ(f.debugprint().find("Pool"), std::string::npos) << f.debugprint();
    for (int64_t n : {0, 1, 2, 3, 7, 8}) {
      NDArray v = random_array({1, 1, n, n + 1}, DType::Float32);
      auto s = f({v});
      NDArray r = eval(y, {{x, v}});
      EXPECT_EQ(s[0].get_flat(0), r.shape(2)) << p.str() << " n " << n;
      EXPECT_EQ(s[1].get_flat(0), r.shape(3)) << p.str() << " n " << n;
    }
  }
  EXPECT_NE(testing::error_of<NotImplementedError>([&] { pool(x, pp(2, 2, false, "max", 1)); }).find("ignore_border"),
            std::string::npos);
  EXPECT_NE(testing::error_of<ValueError>([&] { pool(x, pp(2, 2, true, "max", 2)); }).find("smaller than the window"),
            std::string::npos);
  EXPECT_NE(testing::error_of<ValueError>([&] { pool(x, pp(2, 2, true, "median")); }).find("mode must be"),
            std::string::npos);
  Var v = variable(vector_type(DType::Float32), "v");
  EXPECT_NE(testing::error_of<TypeError>([&] { pool(v, pp(2, 2, true, "max")); }).find("at least 2"),
            std::string::npos);
  Var xi = variable(tensor4_type(DType::Int32), "xi");
  EXPECT_NE(testing::error_of<TypeError>([&] { pool(xi, pp(2, 2, true, "average_exc_pad")); }).find("float"),
            std::string::npos);
}

}  // namespace
}  // namespace hypatia
