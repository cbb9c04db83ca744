// The CUDA backend's convolutions without cuDNN (Theano's GpuCorrMM): im2col into a column
// buffer, then cuBLAS (cuda_conv_kernels.cpp chooses this path where libcudnn cannot be loaded,
// with dnn.enabled=False, for padding cuDNN cannot take, and for a shape cuDNN has no float
// algorithm for). 2-d convolutions are 3-d ones of depth 1. Per group gi, with K = kd * kh * kw
// taps, P output positions and the batch cut into chunks whose columns fit a budget:
//   forward       Y[n, gi] (og, P) = W[gi] (og, cg K) . col[n, gi] (cg K, P)    strided-batched over n
//   grad inputs   col[n, gi] = W[gi]^T . dY[n, gi];  col2im sums col into dX   strided-batched over n
//   grad weights  dW[gi] (og, cg K) += dY^T[gi] (og, nb P) . col[gi]^T         one gemm per chunk
// where the weight gradient's columns are laid out (C K, nb, P) and dY's chunk is transposed to
// (o, nb, P), so that the sum over the batch is the gemm's own. The filters are never flipped:
// im2col and col2im read tap k of a convolving node at k' = K - 1 - k. col2im gathers (a thread
// per image element summing its taps in order): no atomics, the same sum on every run. A 1x1
// filter of stride 1 without padding needs no columns (the image is the column matrix).
#include <algorithm>
#include <atomic>
#include <climits>
#include <string>

#include "hypatia/backends/cuda/cuda_api.h"
#include "hypatia/backends/cuda/cuda_kernel_util.h"
#include "hypatia/core/error.h"

namespace hypatia::cuda {

std::string conv_gemm_source(DType dt, ConvGemmKernel which) {
  const std::string T = cuda_type(dt);
  if (which == ConvGemmKernel::Swap01)  // dst (b, a, c) = src (a, b, c) with its first two axes exchanged
    return "struct SwapArgs { long long a, b, c; unsigned long long src, dst; };\n" +
           grid_stride_head("hyp_swap01", "SwapArgs", "a.a * a.b * a.c") +
           "    const long long k = t % a.c, i = (t / a.c) % a.a, j = t / (a.c * a.a);\n"
           "    ((" +
           T + "*)a.dst)[t] = ((const " + T + "*)a.src)[(i * a.b + j) * a.c + k];\n  }\n}\n";
  std::string s =
      "struct ColArgs { long long nb, c, in[3], k[3], out[3], pad[3], st[3], dil[3], flip, bstride, rstride; "
      "unsigned long long x, col; };\n";
  // Where tap k of axis ax reads, relative to the output position's origin.
  s += "__device__ inline long long tap_offset(const ColArgs& a, int ax, long long k) {\n"
       "  return (a.flip ? a.k[ax] - 1 - k : k) * a.dil[ax];\n}\n";
  if (which == ConvGemmKernel::Im2col)  // col[b * bstride + (c K + tap) * rstride + p] = x[b, c, p * stride - pad +
                                        // offset(tap)], 0 outside the image
    return s +
           grid_stride_head("hyp_im2col", "ColArgs",
                            "a.nb * a.c * a.k[0] * a.k[1] * a.k[2] * a.out[0] * a.out[1] * a.out[2]") +
           "    const long long P = a.out[0] * a.out[1] * a.out[2], K = a.k[0] * a.k[1] * a.k[2];\n"
           "    const long long bp = t / P, b = bp / (a.c * K), r = bp - b * a.c * K, c = r / K;\n"
           // Within an image, taps and output positions fit an int (conv_gemm_work checks): 32-bit division.
           "    const int p = (int)(t - bp * P), tap = (int)(r - c * K);\n"
           "    const int k2 = tap % (int)a.k[2], k1 = (tap / (int)a.k[2]) % (int)a.k[1], k0 = tap / (int)(a.k[1] * "
           "a.k[2]);\n"
           "    const int o2 = p % (int)a.out[2], o1 = (p / (int)a.out[2]) % (int)a.out[1], o0 = p / (int)(a.out[1] * "
           "a.out[2]);\n"
           "    const long long i0 = o0 * a.st[0] - a.pad[0] + tap_offset(a, 0, k0);\n"
           "    const long long i1 = o1 * a.st[1] - a.pad[1] + tap_offset(a, 1, k1);\n"
           "    const long long i2 = o2 * a.st[2] - a.pad[2] + tap_offset(a, 2, k2);\n    " +
           T + " v = 0;\n" +
           "    if (i0 >= 0 && i0 < a.in[0] && i1 >= 0 && i1 < a.in[1] && i2 >= 0 && i2 < a.in[2])\n"
           "      v = ((const " +
           T +
           "*)a.x)[((b * a.c + c) * a.in[0] + i0) * a.in[1] * a.in[2] + i1 * a.in[2] + i2];\n"
           "    ((" +
           T + "*)a.col)[b * a.bstride + r * a.rstride + p] = v;\n  }\n}\n";
  // col2im: x[b, c, i] = the sum, over the taps in order, of the column entries that read i.
  return s + grid_stride_head("hyp_col2im", "ColArgs", "a.nb * a.c * a.in[0] * a.in[1] * a.in[2]") +
         "    const long long S = a.in[0] * a.in[1] * a.in[2], K = a.k[0] * a.k[1] * a.k[2];\n"
         "    const long long i = t % S, c = (t / S) % a.c, b = t / (S * a.c);\n"
         "    const long long ix[3] = {i / (a.in[1] * a.in[2]), (i / a.in[2]) % a.in[1], i % a.in[2]};\n"
         // Per axis, output positions and taps fit an int (conv_gemm_work checks): 32-bit division.
         "    const int st0 = (int)a.st[0], st1 = (int)a.st[1], st2 = (int)a.st[2];\n"
         "    const " +
         T + "* col = (const " + T + "*)a.col + b * a.bstride + c * K * a.rstride;\n    " + T + " acc = 0;\n" +
         "#pragma unroll 1\n"
         "    for (int k0 = 0; k0 < (int)a.k[0]; ++k0) {\n"
         "      const int q0 = (int)(ix[0] + a.pad[0] - tap_offset(a, 0, k0));\n"
         "      if (q0 < 0 || q0 % st0 != 0 || q0 / st0 >= a.out[0]) continue;\n"
         "#pragma unroll 1\n"
         "      for (int k1 = 0; k1 < (int)a.k[1]; ++k1) {\n"
         "        const int q1 = (int)(ix[1] + a.pad[1] - tap_offset(a, 1, k1));\n"
         "        if (q1 < 0 || q1 % st1 != 0 || q1 / st1 >= a.out[1]) continue;\n"
         "#pragma unroll 1\n"
         "        for (int k2 = 0; k2 < (int)a.k[2]; ++k2) {\n"
         "          const int q2 = (int)(ix[2] + a.pad[2] - tap_offset(a, 2, k2));\n"
         "          if (q2 < 0 || q2 % st2 != 0 || q2 / st2 >= a.out[2]) continue;\n"
         "          const long long tap = ((long long)k0 * a.k[1] + k1) * a.k[2] + k2;\n"
         "          const long long p = ((long long)(q0 / st0) * a.out[1] + q1 / st1) * a.out[2] + q2 / st2;\n"
         "          acc += col[tap * a.rstride + p];\n"
         "        }\n      }\n    }\n"
         "    ((" +
         T + "*)a.x)[t] = acc;\n  }\n}\n";
}

namespace {

int64_t prod3(const std::array<int64_t, 3>& v) { return v[0] * v[1] * v[2]; }

bool pointwise(const ConvGemmShape& s) {
  for (int i = 0; i < 3; ++i)
    if (s.k[i] != 1 || s.stride[i] != 1 || s.pad[i] != 0 || s.in[i] != s.out[i]) return false;
  return true;
}

void check_int(int64_t v, const char* what) {
  if (v > INT_MAX)
    fail<NotImplementedError>("CUDA convolution (im2col and cuBLAS): ", what, " ", v, " exceeds cuBLAS's int sizes");
}

std::vector<int64_t> col_args(const ConvGemmShape& s, int64_t nb, int64_t bstride, int64_t rstride, const void* x,
                              const void* col) {
  std::vector<int64_t> a = {nb, s.c};
  for (const auto* v : {&s.in, &s.k, &s.out, &s.pad, &s.stride, &s.dil}) a.insert(a.end(), v->begin(), v->end());
  a.insert(a.end(), {s.flip ? 1 : 0, bstride, rstride, static_cast<int64_t>(reinterpret_cast<uintptr_t>(x)),
                     static_cast<int64_t>(reinterpret_cast<uintptr_t>(col))});
  return a;
}

}  // namespace

ConvGemmWork conv_gemm_work(ConvPass pass, const ConvGemmShape& s, int64_t budget_bytes, size_t itemsize) {
  const int64_t K = prod3(s.k), P = prod3(s.out), S = prod3(s.in);
  ConvGemmWork w;
  w.direct = pointwise(s) && pass != ConvPass::Filter;
  const int64_t col = w.direct ? 0 : s.c * K * P;              // per image
  const int64_t tmp = pass == ConvPass::Filter ? s.o * P : 0;  // per image
  const int64_t per_image = (col + tmp) * static_cast<int64_t>(itemsize);
  w.chunk = per_image == 0 ? s.n : std::clamp<int64_t>(budget_bytes / per_image, 1, s.n);
  // The weight gradient's gemm sums over chunk * P: keep it within cuBLAS's int.
  if (pass == ConvPass::Filter) w.chunk = std::max<int64_t>(1, std::min(w.chunk, INT_MAX / std::max<int64_t>(P, 1)));
  w.col_elems = col * w.chunk;
  w.tmp_elems = tmp * w.chunk;
  const int64_t cgK = s.c / s.g * K;
  check_int(cgK, "filter size");
  check_int(P, "output size");
  check_int(S, "image size");
  check_int(s.o, "filters");
  return w;
}

void conv_gemm_run(ConvPass pass, const ConvGemmShape& s, const ConvGemmWork& w, const void* in0, const void* in1,
                   void* out, void* col, void* tmp, size_t itemsize, ConvGemmDevice& dev) {
  const int64_t K = prod3(s.k), P = prod3(s.out), S = prod3(s.in);
  const int64_t cg = s.c / s.g, og = s.o / s.g, cgK = cg * K, CK = s.c * K;
  const auto* a = static_cast<const std::byte*>(in0);
  const auto* b = static_cast<const std::byte*>(in1);
  auto* y = static_cast<std::byte*>(out);
  auto* c = static_cast<std::byte*>(col);
  const auto at = [itemsize](auto* base, int64_t elems) { return base + elems * static_cast<int64_t>(itemsize); };
  for (int64_t n0 = 0; n0 < s.n; n0 += w.chunk) {
    const int64_t nb = std::min(w.chunk, s.n - n0);
    if (pass == ConvPass::Forward) {  // in0 x (n, c, S), in1 w (o, cg K), out y (n, o, P)
      if (!w.direct) {
        std::vector<int64_t> args = col_args(s, nb, CK * P, P, at(a, n0 * s.c * S), c);
        dev.launch(ConvGemmKernel::Im2col, nb * CK * P, args);
      }
      for (int64_t gi = 0; gi < s.g; ++gi)
        dev.gemm({.m = og,
                  .n = P,
                  .k = cgK,
                  .A = at(b, gi * og * cgK),
                  .lda = cgK,
                  .sa = 0,
                  .B = w.direct ? at(a, (n0 * s.c + gi * cg) * S) : at(c, gi * cgK * P),
                  .ldb = P,
                  .sb = w.direct ? s.c * S : CK * P,
                  .C = at(y, (n0 * s.o + gi * og) * P),
                  .ldc = P,
                  .sc = s.o * P,
                  .batch = nb});
    } else if (pass == ConvPass::Data) {  // in0 w (o, cg K), in1 dy (n, o, P), out dx (n, c, S)
      for (int64_t gi = 0; gi < s.g; ++gi)
        dev.gemm({.ta = true,
                  .m = cgK,
                  .n = P,
                  .k = og,
                  .A = at(a, gi * og * cgK),
                  .lda = cgK,
                  .sa = 0,
                  .B = at(b, (n0 * s.o + gi * og) * P),
                  .ldb = P,
                  .sb = s.o * P,
                  .C = w.direct ? at(y, (n0 * s.c + gi * cg) * S) : at(c, gi * cgK * P),
                  .ldc = P,
                  .sc = w.direct ? s.c * S : CK * P,
                  .batch = nb});
      if (!w.direct) {
        std::vector<int64_t> args = col_args(s, nb, CK * P, P, at(y, n0 * s.c * S), c);
        dev.launch(ConvGemmKernel::Col2im, nb * s.c * S, args);
      }
    } else {  // in0 x (n, c, S), in1 dy (n, o, P), out dw (o, cg K); columns (C K, nb, P)
      std::vector<int64_t> args = col_args(s, nb, P, nb * P, at(a, n0 * s.c * S), c);
      dev.launch(ConvGemmKernel::Im2col, nb * CK * P, args);
      const std::byte* dyt = at(b, n0 * s.o * P);
      if (nb > 1) {  // dy's chunk (nb, o, P) as (o, nb, P)
        std::vector<int64_t> swap = {nb, s.o, P, static_cast<int64_t>(reinterpret_cast<uintptr_t>(dyt)),
                                     static_cast<int64_t>(reinterpret_cast<uintptr_t>(tmp))};
        dev.launch(ConvGemmKernel::Swap01, nb * s.o * P, swap);
        dyt = static_cast<const std::byte*>(tmp);
      }
      for (int64_t gi = 0; gi < s.g; ++gi)
        dev.gemm({.tb = true,
                  .m = og,
                  .n = cgK,
                  .k = nb * P,
                  .A = at(dyt, gi * og * nb * P),
                  .lda = nb * P,
                  .B = at(c, gi * cgK * nb * P),
                  .ldb = nb * P,
                  .beta = n0 == 0 ? 0.0 : 1.0,
                  .C = at(y, gi * og * cgK),
                  .ldc = cgK});
    }
  }
}

namespace {

/// The device's side: the generated kernels and cuBLAS's strided-batched gemm on stream().
class CudaConvGemmDevice final : public ConvGemmDevice {
 public:
  explicit CudaConvGemmDevice(DType dt) : dt_(dt) {}
  /// Each kernel is compiled (or found in the module caches) when a pass first needs it: a
  /// forward-only function never compiles col2im.
  void launch(ConvGemmKernel which, int64_t n, std::vector<int64_t>& args) override {
    static const char* const name[] = {"hyp_im2col", "hyp_col2im", "hyp_swap01"};
    static const char* const what[] = {"CUDA im2col", "CUDA col2im", "CUDA transpose"};
    const int i = static_cast<int>(which);
    if (n == 0) return;
    cudaKernel_t k = kernels_[i].load(std::memory_order_acquire);
    if (!k) {
      k = get_kernel(conv_gemm_source(dt_, which), name[i]);
      kernels_[i].store(k, std::memory_order_release);
    }
    cuda::launch(k, grid_for(n), args, what[i]);
  }
  void gemm(const StridedGemm& g) override {
    if (g.m == 0 || g.n == 0 || g.batch == 0) return;
    check_int(g.m, "rows");
    check_int(g.n, "columns");
    check_int(g.k, "inner size");
    check_int(g.batch, "batch");
    const Cublas& cb = cublas();
    // Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T.
    const cublasOperation_t opb = g.tb ? CUBLAS_OP_T : CUBLAS_OP_N, opa = g.ta ? CUBLAS_OP_T : CUBLAS_OP_N;
    const int m = static_cast<int>(g.m), n = static_cast<int>(g.n), k = static_cast<int>(g.k),
              batch = static_cast<int>(g.batch);
    if (dt_ == DType::Float32) {
      const float al = 1, be = static_cast<float>(g.beta);
      check_cublas(cb.sgemm_strided_batched(cublas_handle(), opb, opa, n, m, k, &al, static_cast<const float*>(g.B),
                                            static_cast<int>(g.ldb), g.sb, static_cast<const float*>(g.A),
                                            static_cast<int>(g.lda), g.sa, &be, static_cast<float*>(g.C),
                                            static_cast<int>(g.ldc), g.sc, batch),
                   "cublasSgemmStridedBatched");
    } else {
      const double al = 1, be = g.beta;
      check_cublas(cb.dgemm_strided_batched(cublas_handle(), opb, opa, n, m, k, &al, static_cast<const double*>(g.B),
                                            static_cast<int>(g.ldb), g.sb, static_cast<const double*>(g.A),
                                            static_cast<int>(g.lda), g.sa, &be, static_cast<double*>(g.C),
                                            static_cast<int>(g.ldc), g.sc, batch),
                   "cublasDgemmStridedBatched");
    }
    after_launch("cuBLAS strided-batched gemm (convolution)");
  }

 private:
  DType dt_;
  std::atomic<cudaKernel_t> kernels_[3] = {};
};

}  // namespace

CudaConvGemm::CudaConvGemm(DType dt) : dev_(std::make_unique<CudaConvGemmDevice>(dt)), dt_(dt) {}
CudaConvGemm::~CudaConvGemm() = default;

void CudaConvGemm::run(ConvPass pass, const ConvGemmShape& s, const NDArray& in0, const NDArray& in1, NDArray& out) {
  constexpr int64_t kBudget = int64_t{128} << 20;  // bytes of columns (and dy's transpose) per chunk
  const ConvGemmWork w = conv_gemm_work(pass, s, kBudget, itemsize(dt_));
  NDArray col, tmp;
  if (w.col_elems > 0) col = NDArray::empty({w.col_elems}, dt_, Device::cuda());
  if (w.tmp_elems > 0) tmp = NDArray::empty({w.tmp_elems}, dt_, Device::cuda());
  conv_gemm_run(pass, s, w, in0.raw(), in1.raw(), out.raw(), w.col_elems > 0 ? col.raw() : nullptr,
                w.tmp_elems > 0 ? tmp.raw() : nullptr, itemsize(dt_), *dev_);
}

}  // namespace hypatia::cuda
