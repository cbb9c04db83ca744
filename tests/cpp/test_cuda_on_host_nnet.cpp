// The CUDA backend's generated pooling, one-hot cross-entropy and im2col kernels run on the host
// against the CPU kernels, as in test_cuda_on_host.cpp (cuda_host/host_kernels.h): pooling and its
// gradients bit for bit, the cross-entropy with its check on the device, and the convolutions
// through im2col and a product as the CUDA backend runs them without cuDNN (conv_gemm_run, its
// batch chunks and its limits).
#include <array>
#include <cmath>

#include "cuda_host/host_kernels.h"
#include "hypatia/backends/cuda/cuda_kernel_util.h"
#include "hypatia/backends/pool_geometry.h"
#include "hypatia/hypatia.h"
#include "hypatia/ops/conv.h"
#include "hypatia/ops/pool.h"
#include "hypatia/testing/opinfo.h"
#include "pool_cases.h"
#include "test_util.h"

namespace hypatia {
namespace {

/// The backend's PoolArgs (cuda_pool_kernels.cpp).
struct PoolArgs {
  long long slices, in[3], out[3], ws[3], st[3], pad[3];
  unsigned long long x, m, gz, y;
};

unsigned long long ptr(const NDArray& a) { return reinterpret_cast<unsigned long long>(a.raw()); }

/// The launch arguments the CUDA backend builds for x (cuda_pool_kernels.cpp: the pooling geometry).
PoolArgs pool_args(const PoolParams& p, const Shape& x) {
  const pool_geometry::Geometry g = pool_geometry::geometry(p, x);
  PoolArgs a{};
  a.slices = g.slices;
  for (int i = 0; i < 3; ++i) {
    a.in[i] = g.in[i];
    a.out[i] = g.out[i];
    a.ws[i] = g.ws[i];
    a.st[i] = g.st[i];
    a.pad[i] = g.pad[i];
  }
  return a;
}

void (*pool_kernel(DType dt, const std::string& mode, int which))(const void*) {
  for (const HostPoolKernel& k : kHostPoolKernels)
    if (k.dt == dt && k.mode == mode && k.which == which) return k.run;
  return nullptr;
}

TEST(CudaKernelsOnHost, PoolingAndItsGradientsAreTheCpusBitForBit) {
  uint64_t seed = 1;
  int checked = 0;
  for (DType dt : {DType::Float32, DType::Float64})
    for (const char* mode : testing::kPoolModes)
      for (const testing::PoolCase& c : testing::pool_cases()) {
        const PoolParams p = c.params(mode);
        SCOPED_TRACE(p.str() + " " + c.x.str() + " " + std::string(dtype_name(dt)));
        const testing::PoolGraph pg = testing::pool_graph(p, c.x, dt, seed);
        seed += 2;
        FunctionOptions cpu;
        cpu.backend = "cpu";
        const auto want = function({pg.x}, {pg.y, pg.gx}, cpu)({pg.xv});
        const NDArray &xv = pg.xv, &r = pg.r, &want_y = want[0], &want_g = want[1];

        NDArray got_y = NDArray::zeros(want_y.shape(), dt), got_g = NDArray::zeros(xv.shape(), dt);
        PoolArgs a = pool_args(p, xv.shape());
        a.x = ptr(xv);
        a.y = ptr(got_y);
        pool_kernel(dt, mode, 0)(&a);
        const bool max = std::string(mode) == "max";
        PoolArgs b = pool_args(p, xv.shape());
        b.x = max ? ptr(xv) : 0;
        b.m = max ? ptr(want_y) : 0;
        b.gz = ptr(r);
        b.y = ptr(got_g);
        pool_kernel(dt, mode, max ? 1 : 2)(&b);
        EXPECT_ALLCLOSE(got_y, want_y, 0.0, 0.0);
        EXPECT_ALLCLOSE(got_g, want_g, 0.0, 0.0);
        ++checked;
        if (!max) continue;
        // The second-order gradient (DownsampleFactorMaxGradGrad): ggx at each window's max.
        Var out = variable(TensorType::of_value(want_y), "out"), ggx = variable(TensorType::of_value(xv), "ggx");
        const NDArray ggv = testing::random_array(xv.shape(), dt, -1, 1, seed++);
        const NDArray want_gg =
            function({pg.x, out, ggx}, {max_pool_grad_grad(pg.x, out, ggx, p)}, cpu)({xv, want_y, ggv})[0];
        NDArray got_gg = NDArray::zeros(want_y.shape(), dt);
        PoolArgs c = pool_args(p, xv.shape());
        c.x = ptr(xv);
        c.m = ptr(want_y);
        c.gz = ptr(ggv);
        c.y = ptr(got_gg);
        pool_kernel(dt, mode, 3)(&c);
        EXPECT_ALLCLOSE(got_gg, want_gg, 0.0, 0.0);
        ++checked;
      }
  EXPECT_EQ(checked, 60);  // 48 forward and gradient pairs, 12 second-order gradients
}

TEST(CudaKernelsOnHost, CrossentropyOfOneHotLabelsAndItsGradientAreTheCpus) {
  int checked = 0;
  for (const HostXentKernel& k : kHostXentKernels)
    for (int64_t bad_row : {-1, 2}) {
      SCOPED_TRACE(std::string(dtype_name(k.dt)) + (k.grad ? " gradient" : "") + " bad row " + std::to_string(bad_row));
      const int64_t n = 5, classes = 4;
      // Clipped probabilities: the stability rewrite leaves the cross-entropy as it is.
      const NDArray coding = testing::random_array({n, classes}, k.dt, 0.05, 1.0, 23);
      NDArray labels = NDArray::empty({n}, DType::Int64);
      for (int64_t i = 0; i < n; ++i) labels.data<int64_t>()[i] = (i * 3) % classes;
      if (bad_row >= 0) labels.data<int64_t>()[bad_row] = classes;
      labels = labels.astype(k.label_dt);
      const NDArray r = testing::random_array({n}, k.dt, -1.0, 1.0, 29);
      Var cv = variable(TensorType::of_value(coding), "coding"), lv = variable(TensorType::of_value(labels), "y");
      Var xent = categorical_crossentropy(clip(cv, constant(0.01, k.dt), constant(1.0, k.dt)), lv);
      Var out = k.grad ? grad(sum(mul(xent, constant(r))), cv) : xent;
      FunctionOptions cpu;
      cpu.backend = "cpu";
      Function f = function({cv, lv}, {out}, cpu);
      NDArray got = NDArray::empty(k.grad ? Shape{n, classes} : Shape{n}, k.dt);
      long long err[4] = {0, 0, 0, 0};
      const std::vector<int64_t> a = {n,
                                      classes,
                                      coding.strides()[0],
                                      coding.strides()[1],
                                      labels.strides()[0],
                                      k.grad ? r.strides()[0] : 0,
                                      static_cast<int64_t>(ptr(coding)),
                                      static_cast<int64_t>(ptr(labels)),
                                      k.grad ? static_cast<int64_t>(ptr(r)) : 0,
                                      static_cast<int64_t>(ptr(got)),
                                      static_cast<int64_t>(reinterpret_cast<uintptr_t>(err))};
      k.run(a.data());
      if (bad_row >= 0) {
        EXPECT_ERROR(IndexError, f({coding, labels}), "label 4 at row 2 is out of range for 4 classes");
        EXPECT_EQ(err[0], 1);
        EXPECT_EQ(err[1], bad_row);
        EXPECT_EQ(err[2], classes);
        EXPECT_EQ(err[3], classes);
      } else {
        EXPECT_EQ(err[0], 0);
        EXPECT_ALLCLOSE(got, f({coding, labels})[0], 0.0, 0.0);
      }
      ++checked;
    }
  EXPECT_EQ(checked, 4 * 2);
}

TEST(CudaKernelsOnHost, TheFusedCrossentropyOfASoftmaxAndItsGradientAreTheCpus) {
  // The softmax, its nll at each label and the gradient dy * (softmax - one_hot), against the CPU
  // kernels, on a strided x, a bias of one per class or one for all (stride 0), a NaN row, and a
  // label out of range (the check block; the CPU's IndexError).
  int checked = 0;
  for (const HostXentKernel& k : kHostXentSoftmaxKernels)
    for (bool bias_per_class : {true, false})
      for (int64_t bad_row : {-1, 3}) {
        SCOPED_TRACE(std::string(dtype_name(k.dt)) + (k.grad ? " Dx" : "") + (bias_per_class ? " bias" : " zero") +
                     " bad row " + std::to_string(bad_row));
        const int64_t n = 6, classes = 5;
        NDArray x = testing::random_strided({n, classes}, k.dt, -4.0, 4.0, 31);
        if (!k.grad) x.slice(0, 1, 2, 1).fill(std::nan(""));  // (a NaN row: NaN throughout)
        const NDArray b =
            bias_per_class ? testing::random_array({classes}, k.dt, -1.0, 1.0, 37) : NDArray::zeros({1}, k.dt);
        NDArray labels = NDArray::empty({n}, DType::Int64);
        for (int64_t i = 0; i < n; ++i) labels.data<int64_t>()[i] = (i * 2) % classes;
        if (bad_row >= 0) labels.data<int64_t>()[bad_row] = -1;
        labels = labels.astype(k.label_dt);
        const NDArray dy = testing::random_array({n}, k.dt, -1.0, 1.0, 41);
        Var xv = variable(TensorType::of_value(x), "x"), bv = variable(TensorType::of_value(b), "b");
        Var lv = variable(TensorType::of_value(labels), "y"), dv = variable(TensorType::of_value(dy), "dy");
        const std::vector<Var> outs = crossentropy_softmax_1hot_with_bias(xv, bv, lv);
        FunctionOptions cpu;
        cpu.backend = "cpu";
        long long err[4] = {0, 0, 0, 0};
        const auto e = static_cast<int64_t>(reinterpret_cast<uintptr_t>(err));
        if (!k.grad) {
          Function f = function({xv, bv, lv}, {outs[0], outs[1]}, cpu);
          NDArray nll = NDArray::empty({n}, k.dt), sm = NDArray::empty({n, classes}, k.dt);
          const std::vector<int64_t> a = {n,
                                          classes,
                                          x.strides()[0],
                                          x.strides()[1],
                                          bias_per_class ? b.strides()[0] : 0,
                                          labels.strides()[0],
                                          static_cast<int64_t>(ptr(x)),
                                          static_cast<int64_t>(ptr(b)),
                                          static_cast<int64_t>(ptr(labels)),
                                          static_cast<int64_t>(ptr(nll)),
                                          static_cast<int64_t>(ptr(sm)),
                                          e};
          k.run(a.data());  // (one block of one thread: every row)
          if (bad_row >= 0) {
            EXPECT_ERROR(IndexError, f({x, b, labels}), "label -1 at row 3 is out of range for 5 classes");
            EXPECT_EQ(err[0], 1);
            EXPECT_EQ(err[1], bad_row);
            EXPECT_EQ(err[2], -1);
            EXPECT_EQ(err[3], classes);
          } else {
            EXPECT_EQ(err[0], 0);
            const auto want = f({x, b, labels});
            const double tol = k.dt == DType::Float32 ? 2e-6 : 1e-14;
            EXPECT_ALLCLOSE(nll, want[0], tol, tol);
            EXPECT_ALLCLOSE(sm, want[1], tol, tol);
            EXPECT_TRUE(std::isnan(nll.get_flat(1)) && std::isnan(sm.get_flat(classes)));
          }
        } else {
          // Dx of the CPU's softmax, as the gradient reads it.
          const NDArray sm = function({xv}, {softmax(xv)}, cpu)({x})[0];
          Var smv = variable(TensorType::of_value(sm), "sm");
          Function f = function({dv, smv, lv}, {crossentropy_softmax_1hot_with_bias_dx(dv, smv, lv)}, cpu);
          NDArray got = NDArray::empty({n, classes}, k.dt);
          const std::vector<int64_t> a = {n,
                                          classes,
                                          dy.strides()[0],
                                          sm.strides()[0],
                                          sm.strides()[1],
                                          labels.strides()[0],
                                          static_cast<int64_t>(ptr(dy)),
                                          static_cast<int64_t>(ptr(sm)),
                                          static_cast<int64_t>(ptr(labels)),
                                          static_cast<int64_t>(ptr(got)),
                                          e};
          k.run(a.data());
          if (bad_row >= 0) {
            EXPECT_ERROR(IndexError, f({dy, sm, labels}), "label -1 at row 3 is out of range for 5 classes");
            EXPECT_EQ(err[0], 1);
            EXPECT_EQ(err[1], bad_row);
          } else {
            EXPECT_EQ(err[0], 0);
            EXPECT_ALLCLOSE(got, f({dy, sm, labels})[0], 0.0, 0.0);
          }
        }
        ++checked;
      }
  EXPECT_EQ(checked, 4 * 2 * 2);
}

/// The im2col path's device on the host: its generated kernels run by one thread, the products
/// by plain loops (in the row-major, strided-batched terms cuBLAS is called with).
class HostConvGemmDevice final : public cuda::ConvGemmDevice {
 public:
  explicit HostConvGemmDevice(DType dt) : dt_(dt) {
    for (const HostConvGemmKernels& k : kHostConvGemmKernels)
      if (k.dt == dt) k_ = &k;
  }
  void launch(cuda::ConvGemmKernel which, int64_t, std::vector<int64_t>& args) override {
    (which == cuda::ConvGemmKernel::Im2col   ? k_->im2col
     : which == cuda::ConvGemmKernel::Col2im ? k_->col2im
                                             : k_->swap01)(args.data());
    ++launches;
  }
  void gemm(const cuda::StridedGemm& g) override {
    if (dt_ == DType::Float32)
      product<float>(g);
    else
      product<double>(g);
    ++gemms;
  }
  int launches = 0, gemms = 0;

 private:
  template <class T>
  static void product(const cuda::StridedGemm& g) {
    for (int64_t b = 0; b < g.batch; ++b) {
      const T* A = static_cast<const T*>(g.A) + b * g.sa;
      const T* B = static_cast<const T*>(g.B) + b * g.sb;
      T* C = static_cast<T*>(g.C) + b * g.sc;
      for (int64_t i = 0; i < g.m; ++i)
        for (int64_t j = 0; j < g.n; ++j) {
          double acc = 0;
          for (int64_t l = 0; l < g.k; ++l)
            acc += static_cast<double>(g.ta ? A[l * g.lda + i] : A[i * g.lda + l]) *
                   static_cast<double>(g.tb ? B[j * g.ldb + l] : B[l * g.ldb + j]);
          T& c = C[i * g.ldc + j];
          c = static_cast<T>(acc + (g.beta == 0 ? 0.0 : g.beta * static_cast<double>(c)));
        }
    }
  }
  DType dt_;
  const HostConvGemmKernels* k_ = nullptr;
};

TEST(CudaKernelsOnHost, ConvolutionsThroughIm2colAndAProductAreTheCpus) {
  // 2-d and 3-d convolutions and both gradients by conv_gemm_run (what the CUDA backend runs
  // without cuDNN), with the batch in one chunk, in chunks of two (the last one short) and of one.
  struct Case {
    int nsp;
    std::string border;
    std::array<int64_t, 3> pad, pad_end, stride, dil;
    int64_t groups;
    bool flip;
    Shape img, kern;
  };
  const std::vector<Case> cases = {
      {2, "valid", {}, {}, {1, 1, 1}, {1, 1, 1}, 1, true, {3, 3, 9, 8}, {4, 3, 3, 3}},
      {2, "full", {}, {}, {1, 1, 1}, {1, 1, 1}, 1, false, {2, 3, 7, 7}, {5, 3, 3, 2}},
      {2, "half", {}, {}, {0, 2, 2}, {1, 1, 1}, 1, true, {3, 4, 11, 10}, {6, 4, 5, 5}},
      {2, "pad", {0, 2, 1}, {}, {0, 2, 3}, {0, 2, 1}, 1, false, {3, 2, 12, 13}, {3, 2, 3, 3}},
      {2, "pad", {0, 1, 0}, {0, 2, 3}, {1, 1, 1}, {1, 1, 1}, 1, true, {2, 2, 6, 7}, {2, 2, 3, 2}},  // asymmetric
      {2, "valid", {}, {}, {1, 1, 1}, {1, 1, 1}, 2, true, {3, 4, 8, 8}, {6, 2, 3, 3}},
      {2, "half", {}, {}, {1, 1, 1}, {0, 3, 3}, 1, true, {1, 3, 15, 15}, {2, 3, 3, 3}},
      {2, "valid", {}, {}, {1, 1, 1}, {1, 1, 1}, 2, false, {3, 4, 5, 6}, {4, 2, 1, 1}},  // pointwise: no columns
      {3, "valid", {}, {}, {1, 1, 1}, {1, 1, 1}, 1, true, {3, 3, 5, 6, 7}, {4, 3, 2, 3, 3}},
      {3, "half", {}, {}, {1, 2, 2}, {1, 1, 1}, 2, true, {2, 4, 6, 7, 7}, {4, 2, 3, 3, 3}},
      {3, "pad", {2, 1, 1}, {}, {2, 1, 1}, {1, 1, 1}, 1, false, {3, 2, 6, 6, 5}, {2, 2, 3, 3, 3}},
  };
  FunctionOptions cpu;
  cpu.backend = "cpu";
  uint64_t seed = 700;
  int checked = 0;
  for (DType dt : {DType::Float32, DType::Float64})
    for (const Case& c : cases) {
      Conv2dParams p2;
      p2.border = c.border;
      p2.pad_h = c.pad[1];
      p2.pad_w = c.pad[2];
      if (c.pad_end[1] || c.pad_end[2]) {
        p2.pad_h_end = c.pad_end[1];
        p2.pad_w_end = c.pad_end[2];
      }
      p2.stride_h = c.stride[1];
      p2.stride_w = c.stride[2];
      p2.dil_h = c.dil[1];
      p2.dil_w = c.dil[2];
      p2.groups = c.groups;
      p2.flip = c.flip;
      Conv3dParams p3{.hw = p2, .pad_d = c.pad[0], .stride_d = c.stride[0], .dil_d = c.dil[0]};
      SCOPED_TRACE((c.nsp == 2 ? p2.str() : "3-d " + p2.str()) + " " + c.img.str() + " " + c.kern.str() + " " +
                   std::string(dtype_name(dt)));
      const std::vector<bool> bc(c.img.size(), false);
      Var img = variable(TensorType(dt, bc), "img"), kern = variable(TensorType(dt, bc), "kern");
      const NDArray iv = testing::random_array(c.img, dt, -2, 2, seed++),
                    kv = testing::random_array(c.kern, dt, -2, 2, seed++);
      // The geometry as the backend builds it (cuda_conv_kernels.cpp), from the op's shape function.
      cuda::ConvGemmShape s{.n = c.img[0], .c = c.img[1], .o = c.kern[0], .g = c.groups, .flip = c.flip};
      Var out, gx, gw;
      Var top = variable(TensorType(dt, bc), "top");
      if (c.nsp == 2) {
        const Conv2dShape q = conv2d_shape("test", p2, c.img, c.kern);
        s.in = {1, q.h, q.w};
        s.k = {1, q.kh, q.kw};
        s.out = {1, q.ho, q.wo};
        s.pad = {0, q.ph, q.pw};
        s.stride = {1, p2.stride_h, p2.stride_w};
        s.dil = {1, p2.dil_h, p2.dil_w};
        out = conv2d(img, kern, p2);
        gx = conv2d_grad_wrt_inputs(kern, top, int_constant(q.h), int_constant(q.w), p2);
        gw = conv2d_grad_wrt_weights(img, top, int_constant(q.kh), int_constant(q.kw), p2);
      } else {
        const Conv3dShape q = conv3d_shape("test", p3, c.img, c.kern);
        s.in = {q.d, q.hw.h, q.hw.w};
        s.k = {q.kd, q.hw.kh, q.hw.kw};
        s.out = {q.od, q.hw.ho, q.hw.wo};
        s.pad = {q.pd, q.hw.ph, q.hw.pw};
        s.stride = {p3.stride_d, p2.stride_h, p2.stride_w};
        s.dil = {p3.dil_d, p2.dil_h, p2.dil_w};
        out = conv3d(img, kern, p3);
        gx = conv3d_grad_wrt_inputs(kern, top, int_constant(q.d), int_constant(q.hw.h), int_constant(q.hw.w), p3);
        gw = conv3d_grad_wrt_weights(img, top, int_constant(q.kd), int_constant(q.hw.kh), int_constant(q.hw.kw), p3);
      }
      const NDArray want_y = function({img, kern}, {out}, cpu)({iv, kv})[0];
      const NDArray tv = testing::random_array(want_y.shape(), dt, -2, 2, seed++);
      const NDArray want_gx = function({kern, top}, {gx}, cpu)({kv, tv})[0];
      const NDArray want_gw = function({img, top}, {gw}, cpu)({iv, tv})[0];
      const double tol = dt == DType::Float32 ? 1e-5 : 1e-12;
      const size_t isz = itemsize(dt);
      const int64_t per_image = s.c * s.k[0] * s.k[1] * s.k[2] * s.out[0] * s.out[1] * s.out[2] * int64_t(isz);
      for (int64_t budget :
           {int64_t{1} << 40, 2 * per_image + int64_t(isz) * s.o * 2 * s.out[1] * s.out[2] * s.out[0], int64_t{1}})
        for (cuda::ConvPass pass : {cuda::ConvPass::Forward, cuda::ConvPass::Data, cuda::ConvPass::Filter}) {
          SCOPED_TRACE("pass " + std::to_string(static_cast<int>(pass)) + " budget " + std::to_string(budget));
          const cuda::ConvGemmWork w = cuda::conv_gemm_work(pass, s, budget, isz);
          const NDArray& want = pass == cuda::ConvPass::Forward ? want_y
                                : pass == cuda::ConvPass::Data  ? want_gx
                                                                : want_gw;
          const NDArray& in0 = pass == cuda::ConvPass::Data ? kv : iv;
          const NDArray& in1 = pass == cuda::ConvPass::Forward ? kv : tv;
          NDArray got = NDArray::full(want.shape(), dt, 1e30);  // every element must be written
          NDArray col = NDArray::full({std::max<int64_t>(w.col_elems, 1)}, dt, 7.0),
                  tmp = NDArray::full({std::max<int64_t>(w.tmp_elems, 1)}, dt, 7.0);
          HostConvGemmDevice dev(dt);
          cuda::conv_gemm_run(pass, s, w, in0.raw(), in1.raw(), got.raw(), col.raw(), tmp.raw(), isz, dev);
          EXPECT_ALLCLOSE(got, want, tol, tol);
          const int64_t chunks = (s.n + w.chunk - 1) / w.chunk;
          EXPECT_EQ(dev.gemms, chunks * s.g);  // one product per group and chunk
          if (w.direct) {
            EXPECT_EQ(dev.launches, 0);
          }
          ++checked;
        }
    }
  EXPECT_EQ(checked, 2 * 11 * 3 * 3);
}

TEST(CudaKernelsOnHost, TheIm2colPathCutsTheBatchToItsBudgetAndRefusesSizesBeyondCublas) {
  cuda::ConvGemmShape s{.n = 10, .c = 3, .o = 8, .g = 1};
  s.in = {1, 32, 32};
  s.k = {1, 3, 3};
  s.out = {1, 30, 30};
  const int64_t col = 3 * 9 * 900;  // elements per image
  EXPECT_EQ(cuda::conv_gemm_work(cuda::ConvPass::Forward, s, 4 * col * 4, 4).chunk, 4);
  EXPECT_EQ(cuda::conv_gemm_work(cuda::ConvPass::Forward, s, 4 * col * 4, 4).col_elems, 4 * col);
  EXPECT_EQ(cuda::conv_gemm_work(cuda::ConvPass::Forward, s, 1, 4).chunk, 1);
  EXPECT_EQ(cuda::conv_gemm_work(cuda::ConvPass::Forward, s, int64_t{1} << 40, 4).chunk, 10);
  const cuda::ConvGemmWork f = cuda::conv_gemm_work(cuda::ConvPass::Filter, s, (col + 8 * 900) * 4 * 3, 4);
  EXPECT_EQ(f.chunk, 3);
  EXPECT_EQ(f.tmp_elems, 3 * 8 * 900);
  s.k = {1, 1, 1};
  s.out = s.in;
  EXPECT_TRUE(cuda::conv_gemm_work(cuda::ConvPass::Forward, s, 1, 4).direct);
  EXPECT_EQ(cuda::conv_gemm_work(cuda::ConvPass::Forward, s, 1, 4).chunk, 10);
  EXPECT_FALSE(cuda::conv_gemm_work(cuda::ConvPass::Filter, s, 1, 4).direct);
  s.c = 1 << 20;
  s.k = {1, 50, 50};  // c * kh * kw beyond cuBLAS's int
  s.in = {1, 60, 60};
  s.out = {1, 11, 11};
  EXPECT_ERROR(NotImplementedError, cuda::conv_gemm_work(cuda::ConvPass::Forward, s, 1, 4),
               "filter size 2621440000 exceeds cuBLAS's int sizes");
}

}  // namespace
}  // namespace hypatia
