// The CUDA backend's products through cuBLAS: Dot, Gemm, Gemv, Ger and BatchedDot, float32
// (without TF32) and float64. A row-major matrix is handed over as its column-major transpose; a
// view cuBLAS cannot read is copied first; Gemm, Gemv and Ger write in place into a shared variable
// where its layout allows.
#include <algorithm>
#include <optional>

#include "hypatia/backends/cuda/cuda_api.h"
#include "hypatia/backends/cuda/cuda_kernel_util.h"
#include "hypatia/core/error.h"
#include "hypatia/ops/blas.h"

namespace hypatia::cuda {
namespace {

// ---- products (cuBLAS)

/// A row-major matrix view as cuBLAS (column-major) sees it: the pointer, whether cuBLAS must
/// transpose it to get the row-major matrix's transpose... see gemm() below.
struct BlasMat {
  const void* ptr;
  bool transpose;  // false: memory holds M^T column-major with leading dim ld
  int64_t ld;
};

/// M (rows x cols, row-major semantics) as cuBLAS sees it, or nullopt when its strides need a copy.
std::optional<BlasMat> as_blas(const NDArray& m) {
  const int64_t it = static_cast<int64_t>(m.itemsize());
  const int64_t r = m.shape(0), c = m.shape(1);
  int64_t s0 = m.strides()[0], s1 = m.strides()[1];
  if (c <= 1) s1 = it;  // a length-1 dim's stride is irrelevant
  if (r <= 1) s0 = std::max<int64_t>(c, 1) * it;
  if (s1 == it && s0 % it == 0 && s0 / it >= std::max<int64_t>(c, 1)) return BlasMat{m.raw(), false, s0 / it};
  if (s0 == it && s1 % it == 0 && s1 / it >= std::max<int64_t>(r, 1)) return BlasMat{m.raw(), true, s1 / it};
  return std::nullopt;
}

/// The per-batch matrices of a 3-d array (batch, rows, cols) as cuBLAS's strided-batched calls
/// read them: as_blas of the first, and the distance between consecutive ones in elements; a
/// copy is made when they cannot be read so (`keep` holds it).
std::pair<BlasMat, int64_t> as_blas_batch(const NDArray& m, NDArray& keep) {
  const int64_t it = static_cast<int64_t>(m.itemsize());
  auto try_view = [&](const NDArray& v) -> std::optional<std::pair<BlasMat, int64_t>> {
    const auto b = as_blas(v.select(0, 0));
    if (!b || v.strides()[0] % it != 0 || (v.shape(0) > 1 && v.strides()[0] < 0)) return std::nullopt;
    return std::pair{*b, v.shape(0) <= 1 ? 0 : v.strides()[0] / it};
  };
  if (auto r = try_view(m)) return *r;
  keep = device_copy(m);
  return *try_view(keep);
}

/// BatchedDot: out[b] = x[b] @ y[b] for every b, one cuBLAS strided-batched gemm (a 2-d operand
/// is a batch of rows (x) or columns (y)).
class BatchedDotKernel final : public Kernel {
 public:
  explicit BatchedDotKernel(const Apply& node) : op_(*node.op) {}
  void run(const KernelArgs& a) override {
    const NDArray &x0 = *a.in[0], &y0 = *a.in[1];
    const int64_t kx = x0.shape(x0.ndim() - 1), ky = y0.shape(1);
    if (x0.shape(0) != y0.shape(0) || kx != ky)
      fail<ValueError>(op_.name(), ": shapes ", x0.shape().str(), " and ", y0.shape().str(),
                       " do not fit (batch sizes must match, and x's last dim must equal y's dim 1)");
    const int64_t batch = x0.shape(0), M = x0.ndim() == 3 ? x0.shape(1) : 1, N = y0.ndim() == 3 ? y0.shape(2) : 1;
    const int64_t it = static_cast<int64_t>(x0.itemsize());
    // Both as 3-d: x (batch, M, K), y (batch, K, N).
    const NDArray x =
        x0.ndim() == 3 ? x0 : x0.as_strided(Shape{batch, 1, kx}, Strides{x0.strides()[0], kx * it, x0.strides()[1]});
    const NDArray y =
        y0.ndim() == 3 ? y0 : y0.as_strided(Shape{batch, ky, 1}, Strides{y0.strides()[0], y0.strides()[1], it});
    Shape shape{batch};
    if (x0.ndim() == 3) shape.push_back(M);
    if (y0.ndim() == 3) shape.push_back(N);
    NDArray& out = prepare_device_output(*a.out[0], shape, x0.dtype());
    if (batch == 0 || M == 0 || N == 0) return;
    NDArray xc, yc;
    const auto [A, sa] = as_blas_batch(x, xc);
    const auto [B, sb] = as_blas_batch(y, yc);
    // Row-major C_b = A_b B_b is column-major C_b^T = B_b^T A_b^T (as gemm() below).
    const cublasOperation_t opb = B.transpose ? CUBLAS_OP_T : CUBLAS_OP_N,
                            opa = A.transpose ? CUBLAS_OP_T : CUBLAS_OP_N;
    const int ik = static_cast<int>(kx), in = static_cast<int>(N), im = static_cast<int>(M),
              ib = static_cast<int>(batch);
    const Cublas& cb = cublas();
    if (out.dtype() == DType::Float32) {
      const float al = 1, be = 0;
      check_cublas(
          cb.sgemm_strided_batched(cublas_handle(), opb, opa, in, im, ik, &al, static_cast<const float*>(B.ptr),
                                   static_cast<int>(B.ld), sb, static_cast<const float*>(A.ptr), static_cast<int>(A.ld),
                                   sa, &be, out.data<float>(), in, M * N, ib),
          "cublasSgemmStridedBatched");
    } else {
      const double al = 1, be = 0;
      check_cublas(
          cb.dgemm_strided_batched(cublas_handle(), opb, opa, in, im, ik, &al, static_cast<const double*>(B.ptr),
                                   static_cast<int>(B.ld), sb, static_cast<const double*>(A.ptr),
                                   static_cast<int>(A.ld), sa, &be, out.data<double>(), in, M * N, ib),
          "cublasDgemmStridedBatched");
    }
    after_launch("cuBLAS strided-batched gemm");
  }

 private:
  const Op& op_;
};

/// C (m x n, row-major, C-contiguous rows: stride[1] == itemsize) = alpha * A @ B + beta * C.
void gemm(const NDArray& A, const NDArray& B, NDArray& C, double alpha, double beta) {
  const int64_t m = A.shape(0), k = A.shape(1), n = B.shape(1);
  if (m == 0 || n == 0) return;
  NDArray Ac, Bc;
  auto a = as_blas(A);
  if (!a) a = as_blas(Ac = device_copy(A));
  auto b = as_blas(B);
  if (!b) b = as_blas(Bc = device_copy(B));
  const int64_t it = static_cast<int64_t>(C.itemsize());
  const int64_t ldc = m <= 1 ? std::max<int64_t>(n, 1) : C.strides()[0] / it;
  const Cublas& cb = cublas();
  // Row-major C = A B is column-major C^T = B^T A^T.
  const cublasOperation_t opb = b->transpose ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t opa = a->transpose ? CUBLAS_OP_T : CUBLAS_OP_N;
  const int ik = static_cast<int>(std::max<int64_t>(k, 0));
  if (C.dtype() == DType::Float32) {
    const float al = static_cast<float>(alpha), be = static_cast<float>(beta);
    check_cublas(cb.sgemm(cublas_handle(), opb, opa, static_cast<int>(n), static_cast<int>(m), ik, &al,
                          static_cast<const float*>(b->ptr), static_cast<int>(b->ld), static_cast<const float*>(a->ptr),
                          static_cast<int>(a->ld), &be, C.data<float>(), static_cast<int>(ldc)),
                 "cublasSgemm");
  } else {
    check_cublas(
        cb.dgemm(cublas_handle(), opb, opa, static_cast<int>(n), static_cast<int>(m), ik, &alpha,
                 static_cast<const double*>(b->ptr), static_cast<int>(b->ld), static_cast<const double*>(a->ptr),
                 static_cast<int>(a->ld), &beta, C.data<double>(), static_cast<int>(ldc)),
        "cublasDgemm");
  }
  after_launch("cuBLAS gemm");
}

bool rows_contiguous(const NDArray& c) {
  return c.ndim() == 2 && (c.shape(1) <= 1 || c.strides()[1] == static_cast<int64_t>(c.itemsize())) &&
         (c.shape(0) <= 1 || c.strides()[0] >= c.shape(1) * static_cast<int64_t>(c.itemsize()));
}

/// A 1-d array as a column (n x 1) or row (1 x n) matrix view.
NDArray as_column(const NDArray& v) {
  return v.as_strided(Shape{v.shape(0), 1}, Strides{v.strides()[0], static_cast<int64_t>(v.itemsize())});
}
NDArray as_row(const NDArray& v) {
  return v.as_strided(Shape{1, v.shape(0)}, Strides{v.shape(0) * static_cast<int64_t>(v.itemsize()), v.strides()[0]});
}

double read_scalar(const NDArray& s, const Op& op, const char* role) {
  if (!s.on_host()) fail<InternalError>(op.name(), ": ", role, " must be a host scalar");
  if (s.size() != 1) fail<ValueError>(op.name(), ": ", role, " must hold one element, got ", s.describe());
  return s.get_flat(0);
}

void dot_kernel(const Dot& op, const KernelArgs& a) {
  const NDArray& x = *a.in[0];
  const NDArray& y = *a.in[1];
  const DType dt = x.dtype();
  // Matrices of the operands (a vector as a row on the left, a column on the right).
  const NDArray X = x.ndim() == 2 ? x : as_row(x);
  const NDArray Y = y.ndim() == 2 ? y : as_column(y);
  if (X.shape(1) != Y.shape(0))
    fail<ValueError>(op.name(), ": shapes ", x.shape().str(), " and ", y.shape().str(), " not aligned: ", X.shape(1),
                     " (dim ", x.ndim() - 1, ") != ", Y.shape(0), " (dim 0)");
  Shape out_shape;
  if (x.ndim() == 2) out_shape.push_back(x.shape(0));
  if (y.ndim() == 2) out_shape.push_back(y.shape(1));
  NDArray& out = prepare_device_output(*a.out[0], out_shape, dt);
  NDArray C = out.as_strided(Shape{X.shape(0), Y.shape(1)}, Strides{Y.shape(1) * static_cast<int64_t>(out.itemsize()),
                                                                    static_cast<int64_t>(out.itemsize())});
  gemm(X, Y, C, 1.0, 0.0);
}

bool same_float(const Apply& node) {
  const DType dt = node.output_ptr(0)->type.dtype;
  if (dt != DType::Float32 && dt != DType::Float64) return false;
  for (const Var& v : node.inputs)
    if (v->type.ndim() > 0 && v->type.dtype != dt) return false;
  return true;
}

class GemmKernel final : public Kernel {
 public:
  explicit GemmKernel(const Apply& node) : op_(static_cast<const Gemm&>(*node.op)) {}
  void run(const KernelArgs& a) override {
    const NDArray &z = *a.in[0], &x = *a.in[2], &y = *a.in[3];
    check_gemm_shapes(op_, z, x, y);
    const double alpha = read_scalar(*a.in[1], op_, "alpha"), beta = read_scalar(*a.in[4], op_, "beta");
    NDArray* out = &update_output(*a.out[0], z, op_.inplace, rows_contiguous(z), beta != 0);
    gemm(x, y, *out, alpha, beta);
  }

 private:
  const Gemm& op_;
};

class GemvKernel final : public Kernel {
 public:
  explicit GemvKernel(const Apply& node) : op_(static_cast<const Gemv&>(*node.op)) {}
  void run(const KernelArgs& a) override {
    const NDArray &z = *a.in[0], &A = *a.in[2], &x = *a.in[3];
    check_gemv_shapes(op_, z, A, x);
    const double alpha = read_scalar(*a.in[1], op_, "alpha"), beta = read_scalar(*a.in[4], op_, "beta");
    NDArray* out = &update_output(*a.out[0], z, op_.inplace, true, beta != 0);
    // z as an (m x 1) column, x as a (k x 1) one: a gemm with n = 1.
    if (out->shape(0) <= 1 || out->strides()[0] == static_cast<int64_t>(out->itemsize())) {
      NDArray Z = as_column(*out);
      gemm(A, as_column(x), Z, alpha, beta);
      return;
    }
    NDArray tmp = device_copy(*out);
    NDArray T = as_column(tmp);
    gemm(A, as_column(x), T, alpha, beta);
    copy_into(*out, tmp);
  }

 private:
  const Gemv& op_;
};

class GerKernel final : public Kernel {
 public:
  explicit GerKernel(const Apply& node) : op_(static_cast<const Ger&>(*node.op)) {}
  void run(const KernelArgs& a) override {
    const NDArray &A = *a.in[0], &x = *a.in[2], &y = *a.in[3];
    check_ger_shapes(op_, A, x, y);
    const double alpha = read_scalar(*a.in[1], op_, "alpha");
    NDArray* out = &update_output(*a.out[0], A, op_.inplace, rows_contiguous(A), true);
    // A + alpha x y^T: a rank-1 gemm with beta = 1.
    gemm(as_column(x), as_row(y), *out, alpha, 1.0);
  }

 private:
  const Ger& op_;
};

}  // namespace

void register_cuda_blas_kernels() {
  register_kernel(kCudaBackend, typeid(BatchedDot), kernel_factory<BatchedDotKernel>(),
                  KernelTraits{.accepts =
                                   [](const Apply& node) {
                                     return same_float(node) &&
                                            node.inputs[0]->type.dtype == node.inputs[1]->type.dtype;
                                   },
                               .recordable = true});
  register_kernel(kCudaBackend, typeid(Gemm), kernel_factory<GemmKernel>(),
                  KernelTraits{.accepts = same_float, .host_inputs = {1, 4}, .recordable = true});
  register_kernel(kCudaBackend, typeid(Gemv), kernel_factory<GemvKernel>(),
                  KernelTraits{.accepts = same_float, .host_inputs = {1, 4}, .recordable = true});
  register_kernel(kCudaBackend, typeid(Ger), kernel_factory<GerKernel>(),
                  KernelTraits{.accepts = same_float, .host_inputs = {1}, .recordable = true});
  register_simple_kernel<Dot>(kCudaBackend, dot_kernel,
                              KernelTraits{.accepts =
                                               [](const Apply& node) {
                                                 return same_float(node) &&
                                                        node.inputs[0]->type.dtype == node.inputs[1]->type.dtype;
                                               },
                                           .recordable = true});
}

}  // namespace hypatia::cuda
