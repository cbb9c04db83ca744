// The CUDA backend's kernels of neural-network layers beyond products and elementwise work:
// convolutions through cuDNN and through im2col and cuBLAS, pooling, MRG random numbers and Join, each against the CPU
// backend (skipped without a GPU; the pooling, im2col and MRG kernels' arithmetic also runs on the
// host in CI: test_cuda_on_host*.cpp).
#include "hypatia/ops/conv.h"
#include "hypatia/ops/pool.h"
#include "hypatia/ops/random.h"
#include "hypatia/ops/scan.h"
#include "hypatia/ops/sort.h"
#include "pool_cases.h"
#include "test_cuda_util.h"

namespace hypatia {
namespace {

using testing::all_on_gpu;
using testing::error_of;
using testing::on;

using testing::seeded_array;

/// Compares a convolution's GPU result `got` with the CPU's `want`: float64 to 1e-10; float32 to
/// 1e-4 relative and 1e-4 of the largest |want| absolute (a weight gradient sums tens of thousands
/// of products in another order than the CPU's: elements far below the array's scale differ by
/// more than 1e-4 of themselves).
void expect_conv_close(const NDArray& got, const NDArray& want, const std::string& what) {
  if (want.dtype() != DType::Float32) {
    EXPECT_ALLCLOSE(got, want, 1e-10, 1e-10) << what;
    return;
  }
  double scale = 1;
  for (int64_t i = 0; i < want.size(); ++i) scale = std::max(scale, std::abs(want.get_flat(i)));
  EXPECT_ALLCLOSE(got, want, 1e-4, 1e-4 * scale) << what;
}

/// 2-d convolutions and both gradients on the GPU against the CPU, in every border mode, with
/// strides, dilation and groups, both dtypes.
void check_convolutions_against_the_cpu() {
  auto params = [](std::string border, int64_t s, int64_t d, int64_t g, bool flip, int64_t pad = 0,
                   int64_t pad_end = -1) {
    Conv2dParams p;
    p.border = std::move(border);
    p.stride_h = p.stride_w = s;
    p.dil_h = p.dil_w = d;
    p.groups = g;
    p.flip = flip;
    p.pad_h = p.pad_w = pad;
    p.pad_h_end = p.pad_w_end = pad_end;
    return p;
  };
  struct Case {
    Conv2dParams p;
    Shape img, kern;
  };
  const std::vector<Case> cases = {
      {params("valid", 1, 1, 1, true), {2, 3, 9, 8}, {4, 3, 3, 3}},
      {params("full", 1, 1, 1, false), {2, 3, 7, 7}, {5, 3, 3, 2}},
      {params("half", 2, 1, 1, true), {3, 4, 11, 10}, {6, 4, 5, 5}},
      {params("pad", 2, 2, 1, false, 2), {2, 2, 12, 13}, {3, 2, 3, 3}},
      {params("valid", 1, 1, 2, true), {2, 4, 8, 8}, {6, 2, 3, 3}},
      {params("half", 1, 3, 1, true), {1, 3, 15, 15}, {2, 3, 3, 3}},
      {params("pad", 1, 1, 1, true, 1, 2), {2, 2, 7, 6}, {3, 2, 3, 3}},  // asymmetric: im2col even with cuDNN
      {params("valid", 1, 1, 2, false), {3, 4, 5, 6}, {4, 2, 1, 1}},     // pointwise
      // Columns of 13 MB per image: the im2col path cuts this batch into chunks (the last short).
      {params("half", 1, 1, 1, true), {24, 128, 32, 32}, {16, 128, 5, 5}},
  };
  uint64_t seed = 60;
  for (DType dt : {DType::Float32, DType::Float64})
    for (const Case& c : cases) {
      SCOPED_TRACE(c.p.str() + " " + c.img.str() + " " + c.kern.str() + " " + std::string(dtype_name(dt)));
      Var img = tensor4("img", dt), kern = tensor4("kern", dt);
      Var out = conv2d(img, kern, c.p);
      const NDArray iv = seeded_array(c.img, dt, seed++), kv = seeded_array(c.kern, dt, seed++);
      Function probe = function({img, kern}, {out}, on("cpu"));
      const NDArray want = probe({iv, kv})[0];
      const NDArray r = seeded_array(want.shape(), dt, seed++);
      Var cost = sum(mul(out, constant(r)));
      std::vector<Var> g = grad(cost, {img, kern});
      Function fc = function({img, kern}, {out, g[0], g[1]}, on("cpu"));
      Function fg = function({img, kern}, {out, g[0], g[1]}, on("cuda"));
      EXPECT_TRUE(all_on_gpu(fg, "Conv2d")) << fg.debugprint();
      const auto a = fc({iv, kv}), b = fg({iv, kv});
      for (int k = 0; k < 3; ++k) expect_conv_close(b[k], a[k], "output " + std::to_string(k));
    }
}

/// Runs `check` and expects cuDNN to have run convolutions and declined none.
template <class F>
void expect_cudnn_ran(F&& check) {
  const cuda::ConvStats s0 = cuda::conv_stats();
  check();
  const cuda::ConvStats s1 = cuda::conv_stats();
  EXPECT_GT(s1.cudnn, s0.cudnn);
  EXPECT_EQ(s1.refused, s0.refused) << s1.last_refusal;
  std::printf("convolution passes: %lld through cuDNN, %lld through im2col (asymmetric padding)\n",
              static_cast<long long>(s1.cudnn - s0.cudnn), static_cast<long long>(s1.im2col - s0.im2col));
}

TEST(CudaRun, ConvolutionsThroughCudnnMatchTheCpu) {
  REQUIRE_GPU();
  std::string why;
  if (!cuda::cudnn_loadable(&why)) GTEST_SKIP() << why;
  expect_cudnn_ran(check_convolutions_against_the_cpu);
}

TEST(CudaRun, ConvolutionsWithTimedAlgorithmsMatchTheCpu) {
  REQUIRE_GPU();
  std::string why;
  if (!cuda::cudnn_loadable(&why)) GTEST_SKIP() << why;
  // Theano's dnn.conv.algo_* = time_once: cuDNN times its candidates on each node's first call.
  testing::ScopedSetting<std::string> fwd(config().dnn_conv_algo_fwd, "time_once"),
      data(config().dnn_conv_algo_bwd_data, "time_once"), filter(config().dnn_conv_algo_bwd_filter, "time_once");
  expect_cudnn_ran(check_convolutions_against_the_cpu);
}

/// 3-d convolutions and both gradients on the GPU against the CPU.
void check_3d_convolutions_against_the_cpu() {
  auto params = [](std::string border, int64_t s, int64_t sd, int64_t g, bool flip, int64_t pad = 0,
                   int64_t pad_d = 0) {
    Conv3dParams p;
    p.hw.border = std::move(border);
    p.hw.stride_h = p.hw.stride_w = s;
    p.stride_d = sd;
    p.hw.groups = g;
    p.hw.flip = flip;
    p.hw.pad_h = p.hw.pad_w = pad;
    p.pad_d = pad_d;
    return p;
  };
  struct Case {
    Conv3dParams p;
    Shape img, kern;
  };
  const std::vector<Case> cases = {
      {params("valid", 1, 1, 1, true), {2, 3, 5, 6, 7}, {4, 3, 2, 3, 3}},
      {params("full", 1, 2, 1, false), {1, 2, 4, 5, 5}, {3, 2, 3, 2, 2}},
      {params("half", 2, 1, 2, true), {2, 4, 6, 7, 7}, {4, 2, 3, 3, 3}},
      {params("pad", 1, 2, 1, false, 1, 2), {2, 2, 6, 6, 5}, {2, 2, 3, 3, 3}},
  };
  uint64_t seed = 160;
  for (DType dt : {DType::Float32, DType::Float64})
    for (const Case& c : cases) {
      SCOPED_TRACE(c.p.str() + " " + c.img.str() + " " + c.kern.str() + " " + std::string(dtype_name(dt)));
      Var img = variable(TensorType(dt, {false, false, false, false, false}), "img");
      Var kern = variable(TensorType(dt, {false, false, false, false, false}), "kern");
      Var out = conv3d(img, kern, c.p);
      const NDArray iv = seeded_array(c.img, dt, seed++), kv = seeded_array(c.kern, dt, seed++);
      const NDArray want = function({img, kern}, {out}, on("cpu"))({iv, kv})[0];
      Var cost = sum(mul(out, constant(seeded_array(want.shape(), dt, seed++))));
      std::vector<Var> g = grad(cost, {img, kern});
      Function fc = function({img, kern}, {out, g[0], g[1]}, on("cpu"));
      Function fg = function({img, kern}, {out, g[0], g[1]}, on("cuda"));
      EXPECT_TRUE(all_on_gpu(fg, "Conv3d")) << fg.debugprint();
      const auto a = fc({iv, kv}), b = fg({iv, kv});
      for (int k = 0; k < 3; ++k) expect_conv_close(b[k], a[k], "output " + std::to_string(k));
    }
}

TEST(CudaRun, ThreeDConvolutionsThroughCudnnMatchTheCpu) {
  REQUIRE_GPU();
  std::string why;
  if (!cuda::cudnn_loadable(&why)) GTEST_SKIP() << why;
  expect_cudnn_ran(check_3d_convolutions_against_the_cpu);
}

TEST(CudaRun, ConvolutionsThroughIm2colAndCublasMatchTheCpu) {
  REQUIRE_GPU();
  // Theano's dnn.enabled=False: the path that runs where libcudnn cannot be loaded.
  testing::ScopedSetting<std::string> no_dnn(config().dnn_enabled, "False");
  const cuda::ConvStats s0 = cuda::conv_stats();
  check_convolutions_against_the_cpu();
  check_3d_convolutions_against_the_cpu();
  EXPECT_EQ(cuda::conv_stats().cudnn, s0.cudnn);
  EXPECT_GT(cuda::conv_stats().im2col, s0.im2col);
}

TEST(CudaRun, CumulativeSumsAndProductsMatchTheCpu) {
  REQUIRE_GPU();
  uint64_t seed = 350;
  for (DType dt : {DType::Float32, DType::Float64, DType::Int64, DType::Int32, DType::Bool})
    for (const Shape& shape : {Shape{1000000}, Shape{7, 300}, Shape{3, 1025, 2}, Shape{20000, 3}})
      for (int axis = 0; axis < shape.size(); ++axis)
        for (bool mul : {false, true}) {
          SCOPED_TRACE(std::string(dtype_name(dt)) + " " + shape.str() + " axis " + std::to_string(axis) +
                       (mul ? " prod" : " sum"));
          NDArray x = seeded_array(shape, DType::Float64, seed++);
          for (int64_t i = 0; i < x.size(); ++i) {
            double& v = x.data<double>()[i];
            v = mul ? (is_float(dt) ? 1 + v * 1e-4 : (i % 5 == 0 ? -1 : 1)) : std::round(v * 3);
          }
          x = x.astype(dt);
          Var xv = variable(TensorType(dt, std::vector<bool>(shape.size(), false)), "x");
          Var y = apply_op1(std::make_shared<CumOp>(mul, axis, axis == 1), {xv});
          Function fg = function({xv}, {y}, on("cuda"));
          EXPECT_TRUE(all_on_gpu(fg, "CumOp")) << fg.debugprint();
          const NDArray want = function({xv}, {y}, on("cpu"))({x})[0], got = fg({x})[0];
          const double tol = dt == DType::Float32 ? 1e-5 : 1e-10;
          EXPECT_ALLCLOSE(got, want, is_float(dt) ? tol : 0, is_float(dt) ? tol : 0);
        }
}

TEST(CudaRun, MultinomialAndChoiceDrawTheCpusSamples) {
  REQUIRE_GPU();
  uint64_t seed = 370;
  for (DType dt : {DType::Float32, DType::Float64})
    for (int kind = 0; kind < 3; ++kind) {
      SCOPED_TRACE(std::string(dtype_name(dt)) + " kind " + std::to_string(kind));
      const int64_t rows = 300, outcomes = 5000, n = 3;
      NDArray p = seeded_array({rows, outcomes}, DType::Float64, seed++);
      for (int64_t r = 0; r < rows; ++r) {
        double s = 0;
        for (int64_t m = 0; m < outcomes; ++m)
          s += (p.data<double>()[r * outcomes + m] = std::abs(p.data<double>()[r * outcomes + m]));
        for (int64_t m = 0; m < outcomes; ++m) p.data<double>()[r * outcomes + m] /= s;
      }
      NDArray u = seeded_array({rows * n}, DType::Float64, seed++);
      for (int64_t i = 0; i < u.size(); ++i) u.data<double>()[i] = std::abs(u.data<double>()[i]) / 2;
      Var P = variable(TensorType(dt, {false, false}), "p"), U = variable(TensorType(dt, {false}), "u");
      std::shared_ptr<Op> op = kind == 0 ? std::shared_ptr<Op>(std::make_shared<MultinomialFromUniform>(DType::Int64))
                                         : std::make_shared<ChoiceFromUniform>(DType::Int64, kind == 1);
      Var z = apply_op1(op, {P, U, int_constant(n)});
      Function fg = function({P, U}, {z}, on("cuda"));
      EXPECT_TRUE(all_on_gpu(fg, "FromUniform")) << fg.debugprint();
      EXPECT_ALLCLOSE(fg({p.astype(dt), u.astype(dt)})[0],
                      function({P, U}, {z}, on("cpu"))({p.astype(dt), u.astype(dt)})[0], 0, 0);
    }
}

TEST(CudaRun, SortAndArgsortMatchTheCpu) {
  REQUIRE_GPU();
  uint64_t seed = 300;
  for (DType dt : {DType::Float32, DType::Float64, DType::Int64, DType::Int32})
    for (const Shape& shape : {Shape{1000}, Shape{7, 300}, Shape{3, 1025, 2}})
      for (int axis = 0; axis < shape.size(); ++axis) {
        SCOPED_TRACE(std::string(dtype_name(dt)) + " " + shape.str() + " axis " + std::to_string(axis));
        // Few distinct values: ties show the stable order.
        NDArray x = seeded_array(shape, DType::Float64, seed++);
        for (int64_t i = 0; i < x.size(); ++i) x.data<double>()[i] = std::round(x.data<double>()[i] * 3);
        x = x.astype(dt);
        Var xv = variable(TensorType::of_value(x), "x");
        std::vector<Var> outs = {sort(xv, axis), argsort(xv, axis)};
        Function fc = function({xv}, std::vector<Out>(outs.begin(), outs.end()), on("cpu"));
        Function fg = function({xv}, std::vector<Out>(outs.begin(), outs.end()), on("cuda"));
        EXPECT_TRUE(all_on_gpu(fg, "SortOp")) << fg.debugprint();
        const auto a = fc({x}), b = fg({x});
        EXPECT_ALLCLOSE(b[0], a[0], 0.0, 0.0);
        EXPECT_ALLCLOSE(b[1], a[1], 0.0, 0.0);
      }
}

TEST(CudaRun, PoolingMatchesTheCpuInEveryMode) {
  REQUIRE_GPU();
  uint64_t seed = 80;
  for (DType dt : {DType::Float32, DType::Float64})
    for (const char* mode : testing::kPoolModes)
      for (const testing::PoolCase& c : testing::pool_cases()) {
        const PoolParams p = c.params(mode);
        SCOPED_TRACE(p.str() + " " + c.x.str() + " " + std::string(dtype_name(dt)));
        const testing::PoolGraph pg = testing::pool_graph(p, c.x, dt, seed);
        seed += 2;
        Function fc = function({pg.x}, {pg.y, pg.gx}, on("cpu")), fg = function({pg.x}, {pg.y, pg.gx}, on("cuda"));
        EXPECT_TRUE(all_on_gpu(fg, "Pool")) << fg.debugprint();
        const auto a = fc({pg.xv}), b = fg({pg.xv});
        EXPECT_ALLCLOSE(b[0], a[0], 1e-6, 1e-7);
        EXPECT_ALLCLOSE(b[1], a[1], 1e-6, 1e-7);
        if (std::string(mode) != "max") continue;
        // The second-order gradient (DownsampleFactorMaxGradGrad) on the device too.
        Var out = variable(TensorType::of_value(a[0]), "out"), ggx = variable(TensorType::of_value(pg.xv), "ggx");
        Var gg = max_pool_grad_grad(pg.x, out, ggx, p);
        const NDArray ggv = seeded_array(pg.xv.shape(), dt, seed++);
        Function hc = function({pg.x, out, ggx}, {gg}, on("cpu")), hg = function({pg.x, out, ggx}, {gg}, on("cuda"));
        EXPECT_TRUE(all_on_gpu(hg, "MaxGradGrad")) << hg.debugprint();
        EXPECT_ALLCLOSE(hg({pg.xv, a[0], ggv})[0], hc({pg.xv, a[0], ggv})[0], 0.0, 0.0);
      }
}

TEST(CudaRun, MrgStreamsGiveTheCpusBitsOnTheDevice) {
  REQUIRE_GPU();
  // The same state on either backend: the same samples, bit for bit, and the same next state,
  // over three calls (the state a shared variable updated in place), for 1 and 37 streams.
  for (int64_t streams : {1, 37})
    for (DType dt : {DType::Float32, DType::Float64}) {
      NDArray seed_state = NDArray::empty({streams, 6}, DType::Int32);
      for (int64_t i = 0; i < seed_state.size(); ++i)
        seed_state.data<int32_t>()[i] = static_cast<int32_t>(12345 + 7919 * i % 1000003);
      auto build = [&](const std::string& backend, Var& st) {
        st = shared(seed_state, "rstate");
        Var size = constant(NDArray::from_vector(std::vector<int64_t>{5, 41}));
        auto [next_state, sample] = mrg_uniform(st, size, dt, 2);
        FunctionOptions o = on(backend);
        o.updates = {{st, next_state}};
        return function({}, {sample}, o);
      };
      Var sc, sg;
      Function fc = build("cpu", sc), fg = build("cuda", sg);
      EXPECT_TRUE(all_on_gpu(fg, "mrg_uniform")) << fg.debugprint();
      for (int call = 0; call < 3; ++call) {
        EXPECT_ALLCLOSE(fg({})[0], fc({})[0], 0.0, 0.0) << "call " << call;
        EXPECT_ALLCLOSE(get_value(sg), get_value(sc), 0.0, 0.0) << "call " << call;
      }
    }
}

TEST(CudaRun, JoinCopiesEachInputIntoItsSlice) {
  REQUIRE_GPU();
  for (int axis : {0, 1})
    for (DType dt : {DType::Float32, DType::Int64}) {
      Var a = matrix("a", dt), b = matrix("b", dt), c = matrix("c", dt);
      Var y = concatenate({a, transpose(b), c}, axis);
      Function fc = function({a, b, c}, {y}, on("cpu")), fg = function({a, b, c}, {y}, on("cuda"));
      EXPECT_TRUE(all_on_gpu(fg, "Join")) << fg.debugprint();
      // b enters transposed (a strided view); c is empty along the axis.
      const Shape sa = {3, 4}, sb = axis == 0 ? Shape{4, 2} : Shape{5, 3}, sc = axis == 0 ? Shape{0, 4} : Shape{3, 0};
      const std::vector<NDArray> v = {seeded_array(sa, dt, 1), seeded_array(sb, dt, 2), seeded_array(sc, dt, 3)};
      EXPECT_ALLCLOSE(fg(v)[0], fc(v)[0], 0.0, 0.0);
      // The CPU's error for inputs that do not line up.
      const std::vector<NDArray> bad = {seeded_array({3, 4}, dt, 4), seeded_array({7, 7}, dt, 5),
                                        seeded_array(sc, dt, 6)};
      const std::string want = error_of<ValueError>([&] { fc(bad); });
      EXPECT_NE(error_of<ValueError>([&] { fg(bad); }).find(want.substr(0, want.find('\n'))), std::string::npos);
    }
}

/// Whether f has a Scan node and the CUDA backend runs it.
bool scan_on_gpu(const Function& f) {
  int found = 0;
  for (const auto& n : f.toposort())
    if (n->op->name() == "Scan" && ++found && get_backend("cuda").provider(*n)->name() != "cuda") return false;
  return found > 0;
}

TEST(CudaRun, AnRnnScanLoopsOnTheGpuAndMatchesTheCpu) {
  REQUIRE_GPU();
  // The body (two products, tanh, a sum) runs on the device step after step, its states and
  // traces in device memory; the gradient (ScanGrad) runs there too and reads the traces. No step,
  // one, and fifty.
  const int H = 64, I = 32;
  Var W = shared(seeded_array({H, H}, DType::Float32, 400), "W");
  Var xs = variable(TensorType(DType::Float32, {false, false}), "xs");
  Var h0 = variable(TensorType(DType::Float32, {false}), "h0");
  Var U = variable(TensorType(DType::Float32, {false, false}), "U");
  auto outs = scan(
      [](const std::vector<Var>& a) {  // x_t, h_{t-1}, W, U
        return std::vector<Var>{tanh(mul(dot(a[2], a[1]), constant(0.1, DType::Float32)) + dot(a[3], a[0])), sum(a[1])};
      },
      {xs}, {h0, nullptr}, {W, U});
  std::vector<Var> g = grad(sum(outs[0]), std::vector<Var>{U});
  Function fg = function({xs, h0, U}, {outs[0], outs[1], g[0]}, on("cuda"));
  Function fc = function({xs, h0, U}, {outs[0], outs[1], g[0]}, on("cpu"));
  EXPECT_TRUE(scan_on_gpu(fg)) << fg.debugprint();
  int grads_on_gpu = 0;
  for (const auto& n : fg.toposort())
    grads_on_gpu += n->op->name() == "ScanGrad" && get_backend("cuda").provider(*n)->name() == "cuda";
  EXPECT_EQ(grads_on_gpu, 1) << fg.debugprint();
  const NDArray hv = seeded_array({H}, DType::Float32, 401), Uv = seeded_array({H, I}, DType::Float32, 402);
  for (int64_t T : {0, 1, 50}) {
    SCOPED_TRACE("steps " + std::to_string(T));
    const NDArray xv = seeded_array({T, I}, DType::Float32, 403);
    const auto a = fc({xv, hv, Uv}), b = fg({xv, hv, Uv});
    for (int k = 0; k < 3; ++k) EXPECT_ALLCLOSE(b[k], a[k], 1e-4, 1e-4) << "output " << k;
  }
  // An until loop: the condition comes back once per step.
  Var x0 = variable(TensorType(DType::Float32, {}), "x0");
  ScanInfo info;
  info.state_taps = {{-1}};
  info.state_traced = {true};
  info.until = true;
  Var prev = variable(TensorType(DType::Float32, {}), "prev");
  Var nxt = mul(prev, constant(2.0, DType::Float32));
  auto doubled = scan_node(info, {prev}, {nxt, gt(nxt, constant(100.0, DType::Float32))}, int_constant(1000), {},
                           {expand_dims(x0, 0)}, {});
  Function fu = function({x0}, {doubled[0]}, on("cuda"));
  EXPECT_TRUE(scan_on_gpu(fu)) << fu.debugprint();
  EXPECT_ALLCLOSE(fu({NDArray::scalar(3.0, DType::Float32)})[0], NDArray::from_vector<float>({6, 12, 24, 48, 96, 192}),
                  0, 0);
}

}  // namespace
}  // namespace hypatia
