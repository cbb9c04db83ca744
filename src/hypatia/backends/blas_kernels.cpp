// Kernels of the blas family. Every op reduces to one matrix-product primitive per backend
// (reference_matmul: the naive oracle; cpu_matmul: OpenBLAS), on 2-d views of its operands.
#include "hypatia/backends/cpu/blas_matmul.h"
#include "hypatia/backends/registry.h"
#include "hypatia/ops/blas.h"

namespace hypatia {
namespace {

NDArray to_dtype(const NDArray& a, DType dt) { return a.dtype() == dt ? a : a.astype(dt); }

// A vector as a (1, n) row or an (n, 1) column view.
NDArray as_row(const NDArray& v) { return v.as_strided({1, v.shape(0)}, {0, v.strides()[0]}); }
NDArray as_col(const NDArray& v) { return v.as_strided({v.shape(0), 1}, {v.strides()[0], 0}); }
NDArray as_matrix(const NDArray& v, bool row) { return v.ndim() == 2 ? v : row ? as_row(v) : as_col(v); }

// A C-contiguous result of shape (M,), (N,), (M, N) or () seen as the (M, N) matrix it fills.
NDArray as_out_matrix(const NDArray& out, int64_t M, int64_t N) {
  const int64_t isz = static_cast<int64_t>(out.itemsize());
  return out.as_strided({M, N}, {N * isz, isz});
}

double scalar_value(const NDArray& a) { return a.get_flat(0); }

template <MatmulFn matmul>
void dot_kernel(const Dot& op, const KernelArgs& args) {
  const NDArray &x0 = *args.in[0], &y0 = *args.in[1];
  const int64_t kx = x0.shape(x0.ndim() - 1), ky = y0.shape(0);
  if (kx != ky)
    fail<ValueError>(op.name(), ": shapes ", x0.shape().str(), " and ", y0.shape().str(), " not aligned: ", kx,
                     " (dim ", x0.ndim() - 1, ") != ", ky, " (dim 0)");
  const DType dt = promote_types(x0.dtype(), y0.dtype());
  const NDArray x = to_dtype(x0, dt), y = to_dtype(y0, dt);
  const int64_t M = x.ndim() == 2 ? x.shape(0) : 1, N = y.ndim() == 2 ? y.shape(1) : 1;
  Shape shape;
  if (x.ndim() == 2) shape.push_back(M);
  if (y.ndim() == 2) shape.push_back(N);
  NDArray& out = prepare_output(*args.out[0], shape, dt);
  matmul(as_matrix(x, true), as_matrix(y, false), as_out_matrix(out, M, N), 1.0, 0.0);
}

// Runs C = alpha A·B + beta C into the output of a (possibly in-place) update op whose input 0 is C.
template <MatmulFn matmul>
void update_into(bool inplace, const KernelArgs& args, const NDArray& A, const NDArray& B, double alpha, double beta,
                 bool z_is_vector) {
  const NDArray& z = *args.in[0];
  auto target = [&](const NDArray& t) { return z_is_vector ? as_col(t) : t; };
  if (inplace) {
    if (z.may_share_memory(A) || z.may_share_memory(B)) {  // the product must read the old values
      NDArray tmp = z.copy();
      matmul(A, B, target(tmp), alpha, beta);
      z.assign(tmp);
    } else {
      matmul(A, B, target(z), alpha, beta);
    }
    *args.out[0] = z;
    return;
  }
  NDArray& out = prepare_output(*args.out[0], z.shape(), z.dtype());
  if (beta != 0) out.assign(z);
  matmul(A, B, target(out), alpha, beta);
}

template <MatmulFn matmul>
void gemm_kernel(const Gemm& op, const KernelArgs& args) {
  const NDArray &z = *args.in[0], &x = *args.in[2], &y = *args.in[3];
  check_gemm_shapes(op, z, x, y);
  update_into<matmul>(op.inplace, args, x, y, scalar_value(*args.in[1]), scalar_value(*args.in[4]), false);
}

template <MatmulFn matmul>
void gemv_kernel(const Gemv& op, const KernelArgs& args) {
  const NDArray &z = *args.in[0], &A = *args.in[2], &x = *args.in[3];
  check_gemv_shapes(op, z, A, x);
  update_into<matmul>(op.inplace, args, A, as_col(x), scalar_value(*args.in[1]), scalar_value(*args.in[4]), true);
}

template <MatmulFn matmul>
void ger_kernel(const Ger& op, const KernelArgs& args) {
  const NDArray &A = *args.in[0], &x = *args.in[2], &y = *args.in[3];
  check_ger_shapes(op, A, x, y);
  update_into<matmul>(op.inplace, args, as_col(x), as_row(y), scalar_value(*args.in[1]), 1.0, false);
}

template <MatmulFn matmul>
void batched_dot_kernel(const BatchedDot& op, const KernelArgs& args) {
  const NDArray &x0 = *args.in[0], &y0 = *args.in[1];
  const int64_t kx = x0.shape(x0.ndim() - 1), ky = y0.shape(1);
  if (x0.shape(0) != y0.shape(0) || kx != ky)
    fail<ValueError>(op.name(), ": shapes ", x0.shape().str(), " and ", y0.shape().str(),
                     " do not fit (batch sizes must match, and x's last dim must equal y's dim 1)");
  const DType dt = promote_types(x0.dtype(), y0.dtype());
  const NDArray x = to_dtype(x0, dt), y = to_dtype(y0, dt);
  const int64_t batch = x.shape(0), M = x.ndim() == 3 ? x.shape(1) : 1, N = y.ndim() == 3 ? y.shape(2) : 1;
  Shape shape{batch};
  if (x.ndim() == 3) shape.push_back(M);
  if (y.ndim() == 3) shape.push_back(N);
  NDArray& out = prepare_output(*args.out[0], shape, dt);
  // (A plain if: gcc does not take the comparison of two functions' addresses as a constant
  // expression in the sanitized build.)
  if (matmul == &cpu_matmul && cpu_batched_matmul(x, y, out)) return;
  for (int64_t b = 0; b < batch; ++b)
    matmul(as_matrix(x.select(0, b), true), as_matrix(y.select(0, b), false), as_out_matrix(out.select(0, b), M, N),
           1.0, 0.0);
}

template <MatmulFn matmul>
void register_blas_on(std::string_view backend) {
  register_simple_kernel<Dot>(backend, &dot_kernel<matmul>);
  register_simple_kernel<Gemm>(backend, &gemm_kernel<matmul>);
  register_simple_kernel<Gemv>(backend, &gemv_kernel<matmul>);
  register_simple_kernel<Ger>(backend, &ger_kernel<matmul>);
  register_simple_kernel<BatchedDot>(backend, &batched_dot_kernel<matmul>);
}

}  // namespace

void register_blas_kernels() {
  register_blas_on<&reference_matmul>(kReferenceBackend);
  register_blas_on<&cpu_matmul>(kCpuBackend);
}

}  // namespace hypatia
