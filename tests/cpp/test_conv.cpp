// 2-d convolution: the forward op and its two gradient ops on the CPU (im2col + GEMM) against
// the reference kernels (direct loops) over border modes, strides, dilations, groups, flips,
// dtypes and layouts; hand-computed values; gradients and second derivatives by verify_grad;
// shapes; errors naming both shapes.
#include <array>
#include <cmath>

#include "test_util.h"

namespace hypatia {
namespace {
using testing::make_array;
using testing::random_array;

Conv2dParams params(std::string border, int64_t ph, int64_t pw, int64_t sh, int64_t sw, int64_t dh, int64_t dw,
                    int64_t groups, bool flip) {
  Conv2dParams p;
  p.border = std::move(border);
  p.pad_h = ph, p.pad_w = pw, p.stride_h = sh, p.stride_w = sw, p.dil_h = dh, p.dil_w = dw, p.groups = groups;
  p.flip = flip;
  return p;
}

std::vector<Conv2dParams> param_grid() {
  std::vector<Conv2dParams> g;
  for (const char* border : {"valid", "full", "half", "pad"})
    for (auto [sh, sw] : std::vector<std::pair<int64_t, int64_t>>{{1, 1}, {2, 3}})
      for (auto [dh, dw] : std::vector<std::pair<int64_t, int64_t>>{{1, 1}, {2, 1}})
        for (int64_t groups : {1, 2})
          for (bool flip : {true, false}) g.push_back(params(border, 1, 2, sh, sw, dh, dw, groups, flip));
  // Asymmetric padding (Theano's ((top, bottom), (left, right))): only the output size and the
  // kernels' first offsets depend on it.
  for (auto [sh, sw] : std::vector<std::pair<int64_t, int64_t>>{{1, 1}, {2, 3}}) {
    Conv2dParams p = params("pad", 0, 3, sh, sw, 1, 2, 1, true);
    p.pad_h_end = 2, p.pad_w_end = 1;
    g.push_back(p);
  }
  return g;
}

// ------------------------------------------------------------------------------------------------
// OpInfo entries: each op on both backends, its inferred shape and its gradient (verify_grad) on
// contiguous, transposed, strided and zero-size samples.

std::vector<testing::OpSample> conv_samples(DType dt) {
  return {
      {"(2,2,5,6) * (3,2,2,3)", {random_array({2, 2, 5, 6}, dt, -1, 1, 1), random_array({3, 2, 2, 3}, dt, -1, 1, 2)}},
      {"transposed image",
       {random_array({6, 5, 2, 2}, dt, -1, 1, 3).transpose(), random_array({3, 2, 2, 3}, dt, -1, 1, 4)}},
      {"strided filters",
       {random_array({1, 2, 4, 4}, dt, -1, 1, 5), testing::random_strided({3, 2, 2, 2}, dt, -1, 1, 6)}},
      {"empty batch (0,2,4,4)", {NDArray::zeros({0, 2, 4, 4}, dt), random_array({3, 2, 2, 2}, dt, -1, 1, 7)}},
  };
}
// A gradient op's samples: (filters or image, output gradient) pairs of matching shapes for the
// image (N, 2, 5, 6) and filters (3, 2, 2, 3) of the 'half'-padded, stride (2, 1) convolution
// below (output (N, 3, 3, 6)).
Conv2dParams opinfo_params() { return params("half", 0, 0, 2, 1, 1, 1, 1, true); }
std::vector<testing::OpSample> grad_inputs_samples(DType dt) {
  return {
      {"kern (3,2,2,3), top (2,3,3,6)",
       {random_array({3, 2, 2, 3}, dt, -1, 1, 1), random_array({2, 3, 3, 6}, dt, -1, 1, 2)}},
      {"transposed top",
       {random_array({3, 2, 2, 3}, dt, -1, 1, 3), random_array({6, 3, 3, 1}, dt, -1, 1, 4).transpose()}},
  };
}
std::vector<testing::OpSample> grad_weights_samples(DType dt) {
  return {
      {"img (2,2,5,6), top (2,3,3,6)",
       {random_array({2, 2, 5, 6}, dt, -1, 1, 5), random_array({2, 3, 3, 6}, dt, -1, 1, 6)}},
      {"strided image",
       {testing::random_strided({1, 2, 5, 6}, dt, -1, 1, 7), random_array({1, 3, 3, 6}, dt, -1, 1, 8)}},
  };
}
HYP_OPINFO({
    .name = "conv2d",
    .build = [](const std::vector<Var>& v) { return conv2d(v[0], v[1], params("pad", 1, 0, 1, 2, 1, 1, 1, true)); },
    .samples = conv_samples,
    .dtypes = testing::kFloatTypes,
});
HYP_OPINFO({
    .name = "conv2d_grad_wrt_inputs",
    .build =
        [](const std::vector<Var>& v) {
          return conv2d_grad_wrt_inputs(v[0], v[1], int_constant(5), int_constant(6), opinfo_params());
        },
    .samples = grad_inputs_samples,
    .dtypes = testing::kFloatTypes,
});
HYP_OPINFO({
    .name = "conv2d_grad_wrt_weights",
    .build =
        [](const std::vector<Var>& v) {
          return conv2d_grad_wrt_weights(v[0], v[1], int_constant(2), int_constant(3), opinfo_params());
        },
    .samples = grad_weights_samples,
    .dtypes = testing::kFloatTypes,
});

TEST(Conv, HandComputedValues) {
  // image 1x1x3x3 = 1..9, filter 1x1x2x2 = [[1, 2], [3, 4]]
  NDArray img = make_array({1, 2, 3, 4, 5, 6, 7, 8, 9}, {1, 1, 3, 3}, DType::Float64);
  NDArray k = make_array({1, 2, 3, 4}, {1, 1, 2, 2}, DType::Float64);
  Var x = variable(tensor4_type(DType::Float64), "x"), w = variable(tensor4_type(DType::Float64), "w");
  // correlation: out[0,0] = 1*1 + 2*2 + 4*3 + 5*4 = 37
  Conv2dParams corr;
  corr.flip = false;
  EXPECT_ALLCLOSE(eval(conv2d(x, w, corr), {{x, img}, {w, k}}),
                  make_array({37, 47, 67, 77}, {1, 1, 2, 2}, DType::Float64));
  // convolution (flipped filter [[4, 3], [2, 1]]): out[0,0] = 1*4 + 2*3 + 4*2 + 5*1 = 23
  EXPECT_ALLCLOSE(eval(conv2d(x, w), {{x, img}, {w, k}}), make_array({23, 33, 53, 63}, {1, 1, 2, 2}, DType::Float64));
  // full convolution: the 4x4 output's corner is img[0,0] * k[0,0] = 1
  NDArray full = eval(conv2d(x, w, params("full", 0, 0, 1, 1, 1, 1, 1, true)), {{x, img}, {w, k}});
  EXPECT_EQ(full.shape(), (Shape{1, 1, 4, 4}));
  EXPECT_EQ(full.get_flat(0), 1);
  EXPECT_EQ(full.get_flat(15), 36);  // img[2,2] * k[1,1]
  // stride 2 on the padded image (pad 1): 2x2 output
  NDArray st = eval(conv2d(x, w, params("pad", 1, 1, 2, 2, 1, 1, 1, false)), {{x, img}, {w, k}});
  EXPECT_ALLCLOSE(st, make_array({4, 6 + 12, 8 + 28, 5 + 12 + 24 + 36}, {1, 1, 2, 2}, DType::Float64));
  // asymmetric padding, one row on top and one column on the right: a 3x3 correlation output
  Conv2dParams asym = params("pad", 1, 0, 1, 1, 1, 1, 1, false);
  asym.pad_h_end = 0, asym.pad_w_end = 1;
  EXPECT_EQ(asym.str(), "pad ((1, 0), (0, 1)), no flip");
  NDArray as = eval(conv2d(x, w, asym), {{x, img}, {w, k}});
  EXPECT_EQ(as.shape(), (Shape{1, 1, 3, 3}));
  EXPECT_EQ(as.get_flat(0), 0 + 0 + 1 * 3 + 2 * 4);
  EXPECT_EQ(as.get_flat(2), 3 * 3);
  EXPECT_EQ(as.get_flat(8), 6 * 1 + 9 * 3);
}

TEST(Conv, CpuMatchesReferenceOnEveryParameterAndLayout) {
  for (DType dt : testing::kFloatTypes)
    for (const Conv2dParams& p : param_grid()) {
      // image (2, 4, 7, 8), filters (4, 4 / groups, 3, 2)
      NDArray img = random_array({2, 4, 7, 8}, dt, -1, 1, 1);
      NDArray k = random_array({4, 4 / p.groups, 3, 2}, dt, -1, 1, 2);
      NDArray img_t = random_array({8, 7, 4, 2}, dt, -1, 1, 3).transpose();  // non-contiguous
      Var x = variable(tensor4_type(dt), "x"), w = variable(tensor4_type(dt), "w");
      Var y = conv2d(x, w, p);
      const std::string what = p.str() + " " + std::string(dtype_name(dt));
      for (const NDArray& iv : {img, img_t}) {
        NDArray ref = eval(y, {{x, iv}, {w, k}}, kReferenceBackend);
        NDArray cpu = eval(y, {{x, iv}, {w, k}}, kCpuBackend);
        EXPECT_ALLCLOSE(cpu, ref, testing::default_rtol(dt), testing::default_atol(dt)) << what;
        // The gradients of sum(y * r): both gradient ops against their reference kernels.
        NDArray r = random_array(ref.shape(), dt, -1, 1, 4);
        Var rv = constant(r);
        auto g = grad(sum(y * rv), {x, w});
        for (int i = 0; i < 2; ++i) {
          NDArray gr = eval(g[i], {{x, iv}, {w, k}}, kReferenceBackend);
          NDArray gc = eval(g[i], {{x, iv}, {w, k}}, kCpuBackend);
          EXPECT_ALLCLOSE(gc, gr, testing::default_rtol(dt), testing::default_atol(dt)) << what << " grad " << i;
        }
      }
    }
}

/// Sets config().conv for a scope.
class ConvFlag {
 public:
  explicit ConvFlag(const std::string& v) : saved_(config().conv) { config().set("conv", v); }
  ~ConvFlag() { config().conv = saved_; }
  ConvFlag(const ConvFlag&) = delete;
  ConvFlag& operator=(const ConvFlag&) = delete;

 private:
  std::string saved_;
};

// oneDNN's primitives (forced) and im2col (forced) against the reference on the parameter grid,
// float32 (the only dtype oneDNN runs), batches that split over the pool included.
TEST(Conv, OnednnAndIm2colBothMatchTheReference) {
  for (const char* mode : {"onednn", "im2col", "auto"}) {
    ConvFlag flag(mode);
    for (const Conv2dParams& p : param_grid()) {
      NDArray img = random_array({5, 4, 7, 8}, DType::Float32, -1, 1, 21);
      NDArray k = random_array({4, 4 / p.groups, 3, 2}, DType::Float32, -1, 1, 22);
      NDArray k_t = random_array({2, 3, 4 / p.groups, 4}, DType::Float32, -1, 1, 23).transpose();
      Var x = variable(tensor4_type(DType::Float32), "x"), w = variable(tensor4_type(DType::Float32), "w");
      Var y = conv2d(x, w, p);
      for (const NDArray& kv : {k, k_t}) {
        NDArray ref = eval(y, {{x, img}, {w, kv}}, kReferenceBackend);
        EXPECT_ALLCLOSE(eval(y, {{x, img}, {w, kv}}, kCpuBackend), ref, 1e-4, 1e-4) << mode << " " << p.str();
        Var rv = constant(random_array(ref.shape(), DType::Float32, -1, 1, 24));
        Var gx = grad(sum(y * rv), std::vector<Var>{x})[0];
        EXPECT_ALLCLOSE(eval(gx, {{x, img}, {w, kv}}, kCpuBackend), eval(gx, {{x, img}, {w, kv}}, kReferenceBackend),
                        1e-4, 1e-4)
            << mode << " grad inputs " << p.str();
      }
    }
  }
  EXPECT_ERROR(ValueError, config().set("conv", "cudnn"), "conv");
}

TEST(Conv, PointwiseFiltersAndLargeBatchesTakeTheFastPaths) {
  // 1x1 filters (no im2col), and a batch large enough to be split over the thread pool.
  for (int64_t groups : {1, 3}) {
    Conv2dParams p;
    p.groups = groups;
    NDArray img = random_array({16, 6, 12, 12}, DType::Float32, -1, 1, 5);
    NDArray k1 = random_array({9, 6 / groups, 1, 1}, DType::Float32, -1, 1, 6);
    NDArray k3 = random_array({9, 6 / groups, 3, 3}, DType::Float32, -1, 1, 7);
    Var x = variable(tensor4_type(DType::Float32), "x"), w = variable(tensor4_type(DType::Float32), "w");
    for (const NDArray& k : {k1, k3}) {
      Var y = conv2d(x, w, p);
      auto g = grad(sum(y * y), {x, w});
      for (const Var& v : {y, g[0], g[1]})
        EXPECT_ALLCLOSE(eval(v, {{x, img}, {w, k}}, kCpuBackend), eval(v, {{x, img}, {w, k}}, kReferenceBackend), 1e-4,
                        1e-4)
            << k.shape().str() << " groups " << groups;
    }
  }
}

TEST(Conv, GradientsAndSecondDerivatives) {
  const DType f = DType::Float64;
  for (const Conv2dParams& p :
       {params("valid", 0, 0, 1, 1, 1, 1, 1, true), params("half", 0, 0, 2, 1, 1, 1, 2, true),
        params("pad", 1, 0, 1, 2, 2, 1, 1, false), params("full", 0, 0, 1, 1, 1, 2, 2, false), [] {
          Conv2dParams a = params("pad", 2, 0, 1, 2, 1, 1, 1, true);
          a.pad_h_end = 0, a.pad_w_end = 3;
          return a;
        }()}) {
    // Under the sanitizers (about 20x slower) one image of 4 x 5 and the second order for the
    // first two settings only: the same code paths, a sixth of the finite differences.
    const Shape ishape = testing::kSanitizerBuild ? Shape{1, 4, 4, 5} : Shape{2, 4, 5, 6};
    NDArray img = random_array(ishape, f, -1, 1, 8), k = random_array({2, 4 / p.groups, 2, 3}, f, -1, 1, 9);
    verify_grad([&](const std::vector<Var>& v) { return conv2d(v[0], v[1], p); }, {img, k});
    if (testing::kSanitizerBuild && p.border != "valid" && p.border != "half") continue;
    // Second order: the gradient ops' own gradients (through a squared output).
    verify_grad(
        [&](const std::vector<Var>& v) {
          Var y = conv2d(v[0], v[1], p);
          auto g = grad(sum(y * y), {v[0], v[1]});
          return sum(g[0] * g[0]) + sum(g[1] * g[1]);
        },
        {img, k});
  }
}

TEST(Conv, RopMatchesTheLinearization) {
  const DType f = DType::Float64;
  Var x = variable(tensor4_type(f), "x"), w = variable(tensor4_type(f), "w");
  Var ex = variable(tensor4_type(f), "ex"), ew = variable(tensor4_type(f), "ew");
  std::vector<std::pair<Var, NDArray>> in{{x, random_array({1, 2, 4, 4}, f, -1, 1, 1)},
                                          {w, random_array({3, 2, 2, 2}, f, -1, 1, 2)},
                                          {ex, random_array({1, 2, 4, 4}, f, -1, 1, 3)},
                                          {ew, random_array({3, 2, 2, 2}, f, -1, 1, 4)}};
  Var r = Rop({conv2d(x, w)}, {x, w}, {ex, ew})[0];
  EXPECT_ALLCLOSE(eval(r, in), eval(conv2d(ex, w) + conv2d(x, ew), in));
}

TEST(Conv, ShapesAreInferredWithoutRunningTheConvolution) {
  Var x = variable(tensor4_type(DType::Float32), "x"), w = variable(tensor4_type(DType::Float32), "w");
  Var y = conv2d(x, w, params("pad", 2, 1, 3, 2, 2, 1, 1, true));
  Function f = function({x, w}, {shape_i(y, 0), shape_i(y, 1), shape_i(y, 2), shape_i(y, 3)});
  EXPECT_EQ(f.debugprint().find("Conv2d"), std::string::npos) << f.debugprint();
  auto s = f({random_array({5, 3, 20, 11}, DType::Float32), random_array({7, 3, 4, 3}, DType::Float32)});
  // rows: (20 + 4 - 2*3 - 1) / 3 + 1 = 6; cols: (11 + 2 - 3) / 2 + 1 = 6
  const std::vector<double> want = {5, 7, 6, 6};
  for (int i = 0; i < 4; ++i) EXPECT_EQ(s[i].get_flat(0), want[i]) << i;
  // The gradient ops' shapes too.
  auto g = grad(sum(y), {x, w});
  Function fg = function({x, w}, {shape_i(g[0], 1), shape_i(g[0], 3), shape_i(g[1], 0), shape_i(g[1], 2)});
  EXPECT_EQ(fg.debugprint().find("Conv2dGrad"), std::string::npos) << fg.debugprint();
  auto sg = fg({random_array({5, 3, 20, 11}, DType::Float32), random_array({7, 3, 4, 3}, DType::Float32)});
  const std::vector<double> want_g = {3, 11, 7, 4};
  for (int i = 0; i < 4; ++i) EXPECT_EQ(sg[i].get_flat(0), want_g[i]) << i;
}

TEST(Conv, HalfPaddingIsTheanosForEvenDilatedFilters) {
  // Theano pads 'half' by half the dilated filter's span, ((k - 1) * dilation + 1) // 2 on each
  // side: a 2-wide filter dilated by 2 spans 3 and gets 1 (a 'same' output), a 4-wide one dilated
  // by 3 spans 10 and gets 5. The same as border "pad" with those pads, values, inferred shapes and
  // gradients alike; conv3d's depth too.
  Var x = variable(tensor4_type(DType::Float64), "x"), w = variable(tensor4_type(DType::Float64), "w");
  for (auto [kh, dh, kw, dw, ph, pw] :
       std::vector<std::array<int64_t, 6>>{{2, 2, 4, 3, 1, 5}, {3, 2, 2, 1, 2, 1}, {4, 2, 5, 1, 3, 2}}) {
    SCOPED_TRACE("k " + std::to_string(kh) + "x" + std::to_string(kw) + " dilation " + std::to_string(dh) + "x" +
                 std::to_string(dw));
    Conv2dParams half = params("half", 0, 0, 1, 1, dh, dw, 1, true), pad = params("pad", ph, pw, 1, 1, dh, dw, 1, true);
    Var yh = conv2d(x, w, half), yp = conv2d(x, w, pad);
    Var cost = sum(mul(yh, yh));
    Function f = function({x, w}, {yh, yp, shape_i(yh, 2), shape_i(yh, 3), grad(cost, x), grad(sum(mul(yp, yp)), x)});
    const NDArray xv = random_array({2, 1, 9, 12}, DType::Float64, -1, 1, 31),
                  wv = random_array({2, 1, kh, kw}, DType::Float64, -1, 1, 32);
    const auto r = f({xv, wv});
    EXPECT_EQ(r[0].shape(), Shape({2, 2, 9 + 2 * ph - dh * (kh - 1), 12 + 2 * pw - dw * (kw - 1)}));
    EXPECT_ALLCLOSE(r[0], r[1], 0.0, 0.0);
    EXPECT_EQ(r[2].get_flat(0), r[0].shape(2));
    EXPECT_EQ(r[3].get_flat(0), r[0].shape(3));
    EXPECT_ALLCLOSE(r[4], r[5], 0.0, 0.0);
  }
  EXPECT_EQ(params("half", 0, 0, 1, 1, 2, 3, 1, true).pads(2, 4), std::make_pair(int64_t{1}, int64_t{5}));
  Conv3dParams p3;
  p3.hw = params("half", 0, 0, 1, 1, 1, 1, 1, true);
  p3.dil_d = 2;
  EXPECT_EQ(p3.depth_pad(2), 1);
  EXPECT_EQ(p3.depth_pad(3), 2);
}

TEST(Conv, ErrorsNameBothShapes) {
  Var x = variable(tensor4_type(DType::Float32), "x"), w = variable(tensor4_type(DType::Float32), "w");
  Function f = function({x, w}, {conv2d(x, w)});
  std::string msg = testing::error_of<ValueError>([&] {
    f({random_array({1, 3, 5, 5}, DType::Float32), random_array({2, 4, 3, 3}, DType::Float32)});
  });
  EXPECT_NE(msg.find("Conv2d"), std::string::npos) << msg;
  EXPECT_NE(msg.find("(1, 3, 5, 5)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("(2, 4, 3, 3)"), std::string::npos) << msg;
  msg = testing::error_of<ValueError>([&] {
    f({random_array({1, 3, 2, 5}, DType::Float32), random_array({2, 3, 3, 3}, DType::Float32)});
  });
  EXPECT_NE(msg.find("do not fit"), std::string::npos) << msg;
  Conv2dParams g2;
  g2.groups = 2;
  Function fg = function({x, w}, {conv2d(x, w, g2)});
  msg = testing::error_of<ValueError>([&] {
    fg({random_array({1, 4, 5, 5}, DType::Float32), random_array({3, 2, 3, 3}, DType::Float32)});
  });
  EXPECT_NE(msg.find("do not split into 2 groups"), std::string::npos) << msg;
  Conv2dParams bad;
  bad.stride_h = 0;
  msg = testing::error_of<ValueError>([&] { conv2d(x, w, bad); });
  EXPECT_NE(msg.find("subsample must be positive"), std::string::npos) << msg;
  Var xi = variable(tensor4_type(DType::Int32), "xi");
  msg = testing::error_of<TypeError>([&] { conv2d(xi, w); });
  EXPECT_NE(msg.find("float dtype"), std::string::npos) << msg;
}

// ------------------------------------------------------------------------------------------------
// conv3d

TensorType tensor5_type(DType dt) { return TensorType(dt, {false, false, false, false, false}); }

Conv3dParams params3(std::string border, int64_t pd, int64_t ph, int64_t pw, int64_t sd, int64_t sh, int64_t sw,
                     int64_t dd, int64_t groups, bool flip) {
  Conv3dParams p;
  p.hw = params(std::move(border), ph, pw, sd == 1 ? 1 : 2, sw, 1, 1, groups, flip);
  p.hw.stride_h = sh;
  p.pad_d = pd, p.stride_d = sd, p.dil_d = dd;
  return p;
}

HYP_OPINFO({
    .name = "conv3d",
    .build = [](const std::vector<Var>& v) { return conv3d(v[0], v[1], params3("pad", 1, 0, 1, 2, 1, 2, 1, 1, true)); },
    .samples = [](DType dt) -> std::vector<testing::OpSample> {
      return {{"(2,2,4,4,5) * (3,2,2,2,3)",
               {random_array({2, 2, 4, 4, 5}, dt, -1, 1, 1), random_array({3, 2, 2, 2, 3}, dt, -1, 1, 2)}},
              {"transposed image",
               {random_array({5, 4, 4, 2, 1}, dt, -1, 1, 3).transpose(), random_array({3, 2, 2, 2, 3}, dt, -1, 1, 4)}}};
    },
    .dtypes = testing::kFloatTypes,
});
HYP_OPINFO({
    .name = "conv3d_grad_wrt_inputs",
    .build =
        [](const std::vector<Var>& v) {
          return conv3d_grad_wrt_inputs(v[0], v[1], int_constant(4), int_constant(5), int_constant(5),
                                        params3("half", 0, 0, 0, 2, 1, 2, 1, 1, false));
        },
    .samples = [](DType dt) -> std::vector<testing::OpSample> {
      // image (N, 2, 4, 5, 5), filters (3, 2, 3, 2, 3), 'half', strides (2, 1, 2): top (N, 3, 2, 6, 3)
      return {{"kern (3,2,3,2,3), top (2,3,2,6,3)",
               {random_array({3, 2, 3, 2, 3}, dt, -1, 1, 5), random_array({2, 3, 2, 6, 3}, dt, -1, 1, 6)}}};
    },
    .dtypes = testing::kFloatTypes,
});
HYP_OPINFO({
    .name = "conv3d_grad_wrt_weights",
    .build =
        [](const std::vector<Var>& v) {
          return conv3d_grad_wrt_weights(v[0], v[1], int_constant(3), int_constant(2), int_constant(3),
                                         params3("half", 0, 0, 0, 2, 1, 2, 1, 1, false));
        },
    .samples = [](DType dt) -> std::vector<testing::OpSample> {
      return {{"img (2,2,4,5,5), top (2,3,2,6,3)",
               {random_array({2, 2, 4, 5, 5}, dt, -1, 1, 7), random_array({2, 3, 2, 6, 3}, dt, -1, 1, 8)}}};
    },
    .dtypes = testing::kFloatTypes,
});

TEST(Conv3d, HandComputedValueAndShapes) {
  // A 1x1x2x2x2 image of 1..8 and a 1x1x2x2x2 filter of ones: the valid output is the sum, 36;
  // the 'full' output's corner is image[0,0,0] times the (flipped) filter's last tap.
  std::vector<double> v(8);
  for (int i = 0; i < 8; ++i) v[i] = i + 1;
  NDArray img = make_array(v, {1, 1, 2, 2, 2}, DType::Float64);
  std::vector<double> kv(8);
  for (int i = 0; i < 8; ++i) kv[i] = i + 1;
  NDArray k = make_array(kv, {1, 1, 2, 2, 2}, DType::Float64);
  Var x = variable(tensor5_type(DType::Float64), "x"), w = variable(tensor5_type(DType::Float64), "w");
  // convolution flips: out = sum_i img[i] * k[7 - i]
  double conv = 0, corr = 0;
  for (int i = 0; i < 8; ++i) conv += v[i] * kv[7 - i], corr += v[i] * kv[i];
  EXPECT_EQ(eval(conv3d(x, w), {{x, img}, {w, k}}).get_flat(0), conv);
  Conv3dParams nf;
  nf.hw.flip = false;
  EXPECT_EQ(eval(conv3d(x, w, nf), {{x, img}, {w, k}}).get_flat(0), corr);
  Conv3dParams full;
  full.hw.border = "full";
  NDArray f = eval(conv3d(x, w, full), {{x, img}, {w, k}});
  EXPECT_EQ(f.shape(), (Shape{1, 1, 3, 3, 3}));
  EXPECT_EQ(f.get_flat(0), 1 * 1);   // img[0,0,0] * k[0,0,0] (the flipped filter's last tap)
  EXPECT_EQ(f.get_flat(26), 8 * 8);  // img[1,1,1] * k[1,1,1]
  EXPECT_EQ(full.str(), "full");
  EXPECT_EQ(params3("pad", 1, 2, 3, 2, 1, 1, 2, 1, false).str(),
            "pad (1, 2, 3), stride (2, 1, 1), dilation (2, 1, 1), no flip");
}

TEST(Conv3d, CpuMatchesReferenceWithGradients) {
  for (DType dt : testing::kFloatTypes)
    for (const Conv3dParams& p :
         {params3("valid", 0, 0, 0, 1, 1, 1, 1, 1, true), params3("full", 0, 0, 0, 2, 1, 2, 1, 2, false),
          params3("half", 0, 0, 0, 1, 2, 1, 2, 1, true), params3("pad", 2, 1, 0, 3, 1, 1, 1, 2, true)}) {
      NDArray img = random_array({3, 4, 5, 6, 5}, dt, -1, 1, 11);
      NDArray img_t = random_array({5, 6, 5, 4, 3}, dt, -1, 1, 12).transpose();
      NDArray k = random_array({4, 4 / p.hw.groups, 3, 2, 2}, dt, -1, 1, 13);
      Var x = variable(tensor5_type(dt), "x"), w = variable(tensor5_type(dt), "w");
      Var y = conv3d(x, w, p);
      for (const NDArray& iv : {img, img_t}) {
        NDArray ref = eval(y, {{x, iv}, {w, k}}, kReferenceBackend);
        NDArray cpu = eval(y, {{x, iv}, {w, k}}, kCpuBackend);
        EXPECT_ALLCLOSE(cpu, ref, testing::default_rtol(dt), testing::default_atol(dt)) << p.str();
        Var rv = constant(random_array(ref.shape(), dt, -1, 1, 14));
        auto g = grad(sum(y * rv), {x, w});
        for (int i = 0; i < 2; ++i)
          EXPECT_ALLCLOSE(eval(g[i], {{x, iv}, {w, k}}, kCpuBackend), eval(g[i], {{x, iv}, {w, k}}, kReferenceBackend),
                          testing::default_rtol(dt), testing::default_atol(dt))
              << p.str() << " grad " << i;
      }
    }
}

TEST(Conv3d, GradientsSecondDerivativesAndErrors) {
  const DType f = DType::Float64;
  const Conv3dParams p = params3("pad", 1, 0, 1, 2, 1, 1, 1, 1, true);
  NDArray img = random_array({1, 2, 4, 3, 4}, f, -1, 1, 15), k = random_array({2, 2, 2, 2, 2}, f, -1, 1, 16);
  verify_grad([&](const std::vector<Var>& v) { return conv3d(v[0], v[1], p); }, {img, k});
  verify_grad(
      [&](const std::vector<Var>& v) {
        Var y = conv3d(v[0], v[1], p);
        auto g = grad(sum(y * y), {v[0], v[1]});
        return sum(g[0] * g[0]) + sum(g[1] * g[1]);
      },
      {img, k});
  Var x = variable(tensor5_type(DType::Float32), "x"), w = variable(tensor5_type(DType::Float32), "w");
  Function fn = function({x, w}, {conv3d(x, w)});
  std::string msg = testing::error_of<ValueError>([&] {
    fn({random_array({1, 3, 4, 4, 4}, DType::Float32), random_array({2, 2, 2, 2, 2}, DType::Float32)});
  });
  EXPECT_NE(msg.find("(1, 3, 4, 4, 4)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("(2, 2, 2, 2, 2)"), std::string::npos) << msg;
  msg = testing::error_of<ValueError>([&] {
    fn({random_array({1, 2, 1, 4, 4}, DType::Float32), random_array({2, 2, 2, 2, 2}, DType::Float32)});
  });
  EXPECT_NE(msg.find("do not fit"), std::string::npos) << msg;
  msg = testing::error_of<TypeError>([&] { conv3d(variable(tensor4_type(DType::Float32), "x4"), w); });
  EXPECT_NE(msg.find("5-d"), std::string::npos) << msg;
  // Shapes are inferred without running the convolution.
  Var y = conv3d(x, w, params3("pad", 1, 1, 0, 2, 1, 1, 1, 1, true));
  Function fs = function({x, w}, {shape_i(y, 2), shape_i(y, 3), shape_i(y, 4)});
  EXPECT_EQ(fs.debugprint().find("Conv3d"), std::string::npos) << fs.debugprint();
  auto s = fs({random_array({1, 2, 7, 5, 6}, DType::Float32), random_array({3, 2, 3, 3, 2}, DType::Float32)});
  // depth (7 + 2 - 3) / 2 + 1 = 4, rows 5 + 2 - 3 + 1 = 5, cols 6 - 2 + 1 = 5
  EXPECT_EQ(s[0].get_flat(0), 4);
  EXPECT_EQ(s[1].get_flat(0), 5);
  EXPECT_EQ(s[2].get_flat(0), 5);
}

}  // namespace
}  // namespace hypatia
