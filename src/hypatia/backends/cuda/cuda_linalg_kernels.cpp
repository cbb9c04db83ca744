// Linear algebra on the GPU: Linalg's Cholesky, Solve (general, symmetric, positive definite and
// triangular A), Inverse, Det, Eig, Eigh (also A v = w B v), Svd, Pinv, Qr, Lstsq and Expm through cuSOLVER (opened
// when first needed, as cuBLAS is) and cuBLAS's trsm and gemm, float32 and float64. Each matrix is copied into a
// column-major work buffer (a C-contiguous copy of its transpose), factored and solved as the CPU's LAPACK calls are
// (backends/linalg_kernels.cpp), and copied back in C order. A matrix that is not positive definite, or singular, is
// found on the device (cuSOLVER's devInfo; a zero on a triangular A's diagonal): a small kernel writes it into the
// node's check block (KernelTraits::device_checks), raised with the CPU's words once the call waits for the device. The
// Eig runs through Xgeev where libcusolver has it (CUDA 12.6 and later), else on the host through the CPU backend.
//
// This file: cuSOLVER's loading, the kernel's run, its factorizations and solves, and its
// registration; the decompositions and Expm: cuda_linalg_decompositions.cpp (cuda_linalg.h).
#include <dlfcn.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>

#include "hypatia/backends/cuda/cuda_linalg.h"
#include "hypatia/core/messages.h"

namespace hypatia::cuda {
namespace la {

Cusolver& cusolver() {
  static Cusolver* s = [] {
    auto* x = new Cusolver();  // never destroyed (arrays freed at exit may still run kernels)
    void* lib = nullptr;
    for (const char* n : {"libcusolver.so.12", "libcusolver.so.11", "libcusolver.so"})
      if ((lib = dlopen(n, RTLD_NOW | RTLD_LOCAL))) break;
    if (!lib) {
      x->why = "libcusolver could not be loaded (put the CUDA toolkit's lib64 folder on LD_LIBRARY_PATH)";
      return x;
    }
#define HYP_CUSOLVER_BIND(name)                                     \
  x->name = reinterpret_cast<decltype(&::name)>(dlsym(lib, #name)); \
  if (!x->name && x->why.empty()) x->why = "libcusolver has no " #name;
    HYP_CUSOLVER_LIST(HYP_CUSOLVER_BIND)
#undef HYP_CUSOLVER_BIND
    x->create_params = reinterpret_cast<decltype(x->create_params)>(dlsym(lib, "cusolverDnCreateParams"));
    x->geev_buffer_size = reinterpret_cast<decltype(x->geev_buffer_size)>(dlsym(lib, "cusolverDnXgeev_bufferSize"));
    x->geev = reinterpret_cast<decltype(x->geev)>(dlsym(lib, "cusolverDnXgeev"));
    return x;
  }();
  return *s;
}

LinalgKernel::LinalgKernel(const Apply& node)
    : node_(node), op_(static_cast<const Linalg&>(*node.op)), dt_(node.inputs[0]->type.dtype) {
  const std::string src = linalg_source(dt_);
  info_kernel_ = request_kernel(src, "hyp_la_info");
  tri_kernel_ = request_kernel(src, "hyp_la_tri");
  sym_kernel_ = request_kernel(src, "hyp_la_sym");
  diag_kernel_ = request_kernel(src, "hyp_la_diag");
  if (op_.kind == LinalgKind::Inverse || op_.kind == LinalgKind::Svd || op_.kind == LinalgKind::Qr)
    eye_kernel_ = request_kernel(eye_source(dt_), "hyp_eye");
  if (op_.kind == LinalgKind::Det) det_kernel_ = request_kernel(src, "hyp_la_det");
  if (op_.kind == LinalgKind::Qr) r_kernel_ = request_kernel(src, "hyp_la_r");
  if (op_.kind == LinalgKind::Eig) complex_kernel_ = request_kernel(src, "hyp_la_complex");
  if (op_.kind == LinalgKind::Svd || op_.kind == LinalgKind::Pinv || op_.kind == LinalgKind::Lstsq)
    finite_kernel_ = request_kernel(src, "hyp_la_finite");
  if (op_.kind == LinalgKind::Pinv || op_.kind == LinalgKind::Lstsq)
    scale_kernel_ = request_kernel(src, "hyp_la_scale");
  if (op_.kind == LinalgKind::Expm)
    for (auto& [ref, name] : {std::pair{&f64_kernel_, "hyp_la_to_f64"},
                              {&from_f64_kernel_, "hyp_la_from_f64_t"},
                              {&colsum_kernel_, "hyp_la_colsum"},
                              {&max_kernel_, "hyp_la_max"},
                              {&axpy_kernel_, "hyp_la_axpy"},
                              {&adddiag_kernel_, "hyp_la_adddiag"},
                              {&fill_kernel_, "hyp_la_fill"}})
      *ref = request_kernel(src, name);
  if (op_.kind == LinalgKind::Lstsq) {
    rank_kernel_ = request_kernel(src, "hyp_la_rank");
    sumsq_kernel_ = request_kernel(src, "hyp_la_sumsq");
  }
}

void LinalgKernel::run(const KernelArgs& a) {
  const NDArray& x = *a.in[0];
  std::vector<Shape> shapes;
  for (const NDArray* in : a.in) shapes.push_back(in->shape());
  if (beyond_cusolver_counts(op_, shapes)) {  // (that call only)
    check_.clear();
    check_.fetch();
    return on_host(a);
  }
  if (op_.kind == LinalgKind::Eig) {
    if (x.shape(0) != x.shape(1))
      fail<ValueError>(op_.name(), ": expected a square matrix, got shape ", x.shape().str());
    if (!info_.valid()) info_ = NDArray::empty({1}, DType::Int32, Device::cuda());
    check_.clear();
    eig(x, a);
    check_.fetch();
    return;
  }
  if (op_.kind == LinalgKind::Expm) {
    if (x.shape(0) != x.shape(1))
      fail<ValueError>(op_.name(), ": expected a square matrix, got shape ", x.shape().str());
    if (!info_.valid()) info_ = NDArray::empty({1}, DType::Int32, Device::cuda());
    check_.clear();
    expm(x, a);
    check_.fetch();
    return;
  }
  if (op_.kind == LinalgKind::Svd || op_.kind == LinalgKind::Qr || op_.kind == LinalgKind::Pinv ||
      op_.kind == LinalgKind::Lstsq) {
    if (!info_.valid()) info_ = NDArray::empty({1}, DType::Int32, Device::cuda());
    check_.clear();
    if (op_.kind == LinalgKind::Qr)
      qr(x, a);
    else if (op_.kind == LinalgKind::Lstsq)
      lstsq(x, *a.in[1], a.in[2]->get_flat(0), a);
    else
      svd(x, a);
    check_.fetch();
    return;
  }
  if (x.shape(0) != x.shape(1)) fail<ValueError>(op_.name(), ": expected a square matrix, got shape ", x.shape().str());
  const int n = lapack_dim(op_, x.shape(0));
  if (op_.kind == LinalgKind::Eigh && a.in.size() == 2 && a.in[1]->shape() != x.shape())
    fail<ValueError>(op_.name(), ": expected B of A's shape ", x.shape().str(), ", got ", a.in[1]->shape().str());
  n_ = n;
  if (op_.kind == LinalgKind::Solve && a.in[1]->shape(0) != x.shape(0))
    fail<ValueError>(op_.name(), ": A is ", x.shape().str(), " but b has ", a.in[1]->shape(0), " rows (b's shape ",
                     a.in[1]->shape().str(), ")");
  // (Empty matrices run no check: the check words are cleared anyway, so that no earlier call's
  // failure is read for this one.)
  if (n == 0 || (op_.kind == LinalgKind::Solve && a.in[1]->size() == 0)) {
    check_.clear();
    check_.fetch();
  }
  if (n == 0 && op_.kind == LinalgKind::Det) {  // (the empty product)
    NDArray& out = prepare_device_output(*a.out[0], Shape{}, dt_);
    const NDArray one = NDArray::scalar(1.0, dt_);
    device_memory(out.device()).copy_from_host(out.raw(), one.raw(), one.nbytes());
    return;
  }
  if (n == 0 && op_.kind == LinalgKind::Eigh) {
    prepare_device_output(*a.out[0], Shape{0}, dt_);
    prepare_device_output(*a.out[1], x.shape(), dt_);
    return;
  }
  if (n == 0 || (op_.kind == LinalgKind::Solve && a.in[1]->size() == 0)) {
    const Shape& s = op_.kind == LinalgKind::Solve ? a.in[1]->shape() : x.shape();
    prepare_device_output(*a.out[0], s, dt_);
    return;
  }
  NDArray w = column_major(x);
  if (!info_.valid()) info_ = NDArray::empty({1}, DType::Int32, Device::cuda());
  check_.clear();
  switch (op_.kind) {
    case LinalgKind::Cholesky:
      cholesky(w, n);
      *a.out[0] = c_order(w, x.shape());
      break;
    case LinalgKind::Det: {
      // The product of U's diagonal, negated per row exchange (in double, as the CPU): 0 for
      // a singular matrix.
      const NDArray pivots = getrf(w, n);
      NDArray& out = prepare_device_output(*a.out[0], Shape{}, dt_);
      std::vector<int64_t> args = {n, ptr(w.raw()), ptr(pivots.raw()), ptr(out.raw())};
      launch(det_kernel_, 1, args, op_.name().c_str());
      break;
    }
    case LinalgKind::Eigh: {
      // Eigenvalues ascending and eigenvectors as columns, from the `lower` (or upper) triangle;
      // an eigenvector's sign is the library's (cuSOLVER's may differ from LAPACK's). With B:
      // A v = w B v (B positive definite; v normalized so that V^T B V = I).
      NDArray& values = prepare_device_output(*a.out[0], Shape{n}, dt_);
      if (a.in.size() == 2) {
        NDArray b = column_major(*a.in[1]);
        sygvd(w, b, values, n);
        check_info(kGeneralizedEigh);
      } else {
        syevd(w, values, n);
        check_info(kNoConvergence);
      }
      *a.out[1] = c_order(w, x.shape());
      break;
    }
    case LinalgKind::Inverse: {
      NDArray b = NDArray::empty({n, n}, dt_, Device::cuda());
      std::vector<int64_t> args = {n, n, 0, ptr(b.raw())};
      launch(eye_kernel_, grid_for(int64_t{n} * n), args, op_.name().c_str());
      lu_solve(w, b, n, n);
      *a.out[0] = c_order(b, x.shape());
      break;
    }
    case LinalgKind::Solve: {
      const NDArray& y = *a.in[1];
      NDArray b = column_major(y);
      const int nrhs = y.ndim() == 1 ? 1 : lapack_dim(op_, y.shape(1));
      solve(w, b, n, nrhs);
      *a.out[0] = c_order(b, y.shape());
      break;
    }
    default:
      fail<InternalError>(op_.name(), ": the CUDA backend's Linalg kernel does not run this kind");
  }
  check_.fetch();
}

void LinalgKernel::raise_device_errors() {
  long long w[DeviceCheckBlock::kWords];
  if (!check_.take_failure(w)) return;
  const std::string who = op_.name();
  const bool solve = op_.kind == LinalgKind::Solve;
  if (w[1] < 0) fail<InternalError>(who, ": cuSOLVER rejected argument ", -w[1]);
  switch (w[2]) {
    case kNotPositiveDefinite:
      fail<ValueError>(who, solve ? ": A is not positive definite" : ": the matrix is not positive definite",
                       " (its leading minor of order ", w[1], " is not positive)");
    case kNoConvergence:
      fail<ValueError>(who, ": the eigenvalue algorithm did not converge (info ", w[1], ")");
    case kSvdNoConvergence:
      fail<ValueError>(who, ": the SVD did not converge (info ", w[1], ")");
    case kComplexEigenvalue: {
      const auto bits = static_cast<uint64_t>(w[3]);
      const float re = std::bit_cast<float>(static_cast<uint32_t>(bits >> 32)),
                  im = std::bit_cast<float>(static_cast<uint32_t>(bits));
      fail<ValueError>(who, ": eigenvalue ", w[1], " is complex (", re, im < 0 ? " - " : " + ", std::abs(im),
                       "j); Hypatia has no complex dtype (eigh handles symmetric matrices)");
    }
    case kEigNoConvergence:
      fail<ValueError>(who, ": the QR algorithm did not converge (info ", w[1], ")");
    case kNotFinite:
      fail<ValueError>(who, ": the SVD did not converge (the matrix has a NaN or an infinity)");
    case kPadeSingular:
      fail<ValueError>(who, ": the Pade denominator is singular (the input overflows)");
    case kGeneralizedEigh:
      if (w[1] > n_)
        fail<ValueError>(who, ": B is not positive definite (its leading minor of order ", w[1] - n_,
                         " is not positive)");
      fail<ValueError>(who, ": the eigenvalue algorithm did not converge (info ", w[1], ")");
    case kSingularLu:
      fail<ValueError>(who, solve ? ": A is singular (U[" : ": the matrix is singular (U[", w[1] - 1, ", ", w[1] - 1,
                       solve ? "] is exactly zero)" : "] of its LU factorization is exactly zero)");
    default:
      fail<ValueError>(who, ": A is singular (its diagonal element ", w[1] - 1, " is zero)");
  }
}

NDArray LinalgKernel::workspace(int n, std::optional<DType> dt) const {
  return NDArray::empty({std::max(1, n)}, dt.value_or(dt_), Device::cuda());
}

void LinalgKernel::check_info(Failure code) {
  std::vector<int64_t> args = {ptr(info_.raw()), static_cast<int64_t>(check_.device()), code};
  launch(info_kernel_, 1, args, op_.name().c_str());
}

void LinalgKernel::potrf(NDArray& w, int n, cublasFillMode_t uplo) {
  by_dtype(dt_, [&]<class T>() {
    Solver s;
    int lwork = 0;
    check_cusolver(pick<T>(s->cusolverDnSpotrf_bufferSize, s->cusolverDnDpotrf_bufferSize)(s.handle(), uplo, n,
                                                                                           w.data<T>(), n, &lwork),
                   "cusolverDn<t>potrf_bufferSize");
    NDArray ws = workspace(lwork);
    check_cusolver(pick<T>(s->cusolverDnSpotrf, s->cusolverDnDpotrf)(s.handle(), uplo, n, w.data<T>(), n, ws.data<T>(),
                                                                     lwork, info_.data<int>()),
                   "cusolverDn<t>potrf");
  });
}

void LinalgKernel::cholesky(NDArray& w, int n) {
  const bool lower = op_.attrs.lower;
  potrf(w, n, lower ? CUBLAS_FILL_MODE_LOWER : CUBLAS_FILL_MODE_UPPER);
  // The triangle potrf left untouched is zeroed; with nan_on_error a failed factor is NaN
  // instead of an error.
  const bool nan = op_.attrs.nan_on_error;
  std::vector<int64_t> args = {n, lower ? 1 : 0, nan ? 1 : 0, ptr(w.raw()), ptr(info_.raw())};
  launch(tri_kernel_, grid_for(int64_t{n} * n), args, op_.name().c_str());
  if (!nan) check_info(kNotPositiveDefinite);
}

void LinalgKernel::syevd(NDArray& w, NDArray& values, int n) {
  const cublasFillMode_t uplo = op_.attrs.lower ? CUBLAS_FILL_MODE_LOWER : CUBLAS_FILL_MODE_UPPER;
  const cusolverEigMode_t job = CUSOLVER_EIG_MODE_VECTOR;
  by_dtype(dt_, [&]<class T>() {
    Solver s;
    int lwork = 0;
    check_cusolver(pick<T>(s->cusolverDnSsyevd_bufferSize, s->cusolverDnDsyevd_bufferSize)(
                       s.handle(), job, uplo, n, w.data<T>(), n, values.data<T>(), &lwork),
                   "cusolverDn<t>syevd_bufferSize");
    NDArray ws = workspace(lwork);
    check_cusolver(
        pick<T>(s->cusolverDnSsyevd, s->cusolverDnDsyevd)(s.handle(), job, uplo, n, w.data<T>(), n, values.data<T>(),
                                                          ws.data<T>(), lwork, info_.data<int>()),
        "cusolverDn<t>syevd");
  });
}

void LinalgKernel::sygvd(NDArray& w, NDArray& b, NDArray& values, int n) {
  const cublasFillMode_t uplo = op_.attrs.lower ? CUBLAS_FILL_MODE_LOWER : CUBLAS_FILL_MODE_UPPER;
  const cusolverEigMode_t job = CUSOLVER_EIG_MODE_VECTOR;
  by_dtype(dt_, [&]<class T>() {
    Solver s;
    int lwork = 0;
    check_cusolver(
        pick<T>(s->cusolverDnSsygvd_bufferSize, s->cusolverDnDsygvd_bufferSize)(
            s.handle(), CUSOLVER_EIG_TYPE_1, job, uplo, n, w.data<T>(), n, b.data<T>(), n, values.data<T>(), &lwork),
        "cusolverDn<t>sygvd_bufferSize");
    NDArray ws = workspace(lwork);
    check_cusolver(pick<T>(s->cusolverDnSsygvd, s->cusolverDnDsygvd)(s.handle(), CUSOLVER_EIG_TYPE_1, job, uplo, n,
                                                                     w.data<T>(), n, b.data<T>(), n, values.data<T>(),
                                                                     ws.data<T>(), lwork, info_.data<int>()),
                   "cusolverDn<t>sygvd");
  });
}

NDArray LinalgKernel::getrf(NDArray& w, int n) {
  NDArray pivots = NDArray::empty({n}, DType::Int32, Device::cuda());
  by_dtype(w.dtype(), [&]<class T>() {
    Solver s;
    int lwork = 0;
    check_cusolver(pick<T>(s->cusolverDnSgetrf_bufferSize, s->cusolverDnDgetrf_bufferSize)(s.handle(), n, n,
                                                                                           w.data<T>(), n, &lwork),
                   "cusolverDn<t>getrf_bufferSize");
    NDArray ws = workspace(lwork, w.dtype());
    check_cusolver(pick<T>(s->cusolverDnSgetrf, s->cusolverDnDgetrf)(s.handle(), n, n, w.data<T>(), n, ws.data<T>(),
                                                                     pivots.data<int>(), info_.data<int>()),
                   "cusolverDn<t>getrf");
  });
  return pivots;
}

void LinalgKernel::lu_solve(NDArray& w, NDArray& b, int n, int nrhs) {
  const NDArray pivots = getrf(w, n);
  check_info(kSingularLu);
  by_dtype(w.dtype(), [&]<class T>() {
    Solver s;
    check_cusolver(
        pick<T>(s->cusolverDnSgetrs, s->cusolverDnDgetrs)(s.handle(), CUBLAS_OP_N, n, nrhs, w.data<T>(), n,
                                                          pivots.data<int>(), b.data<T>(), n, info_.data<int>()),
        "cusolverDn<t>getrs");
  });
}

void LinalgKernel::solve(NDArray& w, NDArray& b, int n, int nrhs) {
  const bool lower = op_.attrs.lower;
  const cublasFillMode_t uplo = lower ? CUBLAS_FILL_MODE_LOWER : CUBLAS_FILL_MODE_UPPER;
  switch (op_.attrs.structure) {
    case SolveStructure::General:
      return lu_solve(w, b, n, nrhs);
    case SolveStructure::Symmetric: {
      // The `lower` (or upper) triangle mirrored into the other, then LU (LAPACK's sysv uses a
      // symmetric indefinite factorization instead: the same solution, other rounding).
      std::vector<int64_t> args = {n, lower ? 1 : 0, ptr(w.raw())};
      launch(sym_kernel_, grid_for(int64_t{n} * n), args, op_.name().c_str());
      return lu_solve(w, b, n, nrhs);
    }
    case SolveStructure::PositiveDefinite: {
      potrf(w, n, uplo);
      check_info(kNotPositiveDefinite);
      by_dtype(dt_, [&]<class T>() {
        Solver s;
        check_cusolver(pick<T>(s->cusolverDnSpotrs, s->cusolverDnDpotrs)(s.handle(), uplo, n, nrhs, w.data<T>(), n,
                                                                         b.data<T>(), n, info_.data<int>()),
                       "cusolverDn<t>potrs");
      });
      return;
    }
    case SolveStructure::Triangular: {
      const bool unit = op_.attrs.unit_diagonal;
      if (!unit) {
        std::vector<int64_t> args = {n, ptr(w.raw()), static_cast<int64_t>(check_.device())};
        launch(diag_kernel_, 1, args, op_.name().c_str());
      }
      const Cublas& cb = cublas();
      const cublasOperation_t tr = op_.attrs.trans ? CUBLAS_OP_T : CUBLAS_OP_N;
      const cublasDiagType_t dg = unit ? CUBLAS_DIAG_UNIT : CUBLAS_DIAG_NON_UNIT;
      by_dtype(dt_, [&]<class T>() {
        const T one = 1;
        check_cublas(pick<T>(cb.strsm, cb.dtrsm)(cublas_handle(), CUBLAS_SIDE_LEFT, uplo, tr, dg, n, nrhs, &one,
                                                 w.data<T>(), n, b.data<T>(), n),
                     "cublas<t>trsm");
      });
      after_launch("cuBLAS trsm");
      return;
    }
  }
}

void LinalgKernel::on_host(const KernelArgs& a) {
  if (!cpu_) cpu_ = get_backend("cpu").make_kernel(node_);
  std::vector<NDArray> ins, outs(a.out.size());
  for (const NDArray* x : a.in) ins.push_back(x->device().is_host() ? *x : x->to_device(Device::host()));
  std::vector<NDArray*> in, out;
  for (NDArray& x : ins) in.push_back(&x);
  for (NDArray& x : outs) out.push_back(&x);
  cpu_->run(KernelArgs{in, out});
  for (size_t i = 0; i < outs.size(); ++i) *a.out[i] = outs[i].to_device(Device::cuda());
}

namespace {

bool linalg_accepts(const Apply& node) {
  const auto& op = static_cast<const Linalg&>(*node.op);
  // Without libcusolver (and its own dependencies) they run on the CPU, as before it was used;
  // a triangular Solve needs only cuBLAS.
  const bool triangular = op.kind == LinalgKind::Solve && op.attrs.structure == SolveStructure::Triangular;
  if (!triangular && !cusolver_loadable(nullptr)) return false;
  const bool qr = op.kind == LinalgKind::Qr;
  if (op.kind == LinalgKind::Eig && !cusolver_has_geev()) return false;  // (Xgeev: CUDA 12.6 and later)
  if (op.kind != LinalgKind::Cholesky && op.kind != LinalgKind::Solve && op.kind != LinalgKind::Inverse &&
      op.kind != LinalgKind::Det && op.kind != LinalgKind::Svd && op.kind != LinalgKind::Pinv &&
      op.kind != LinalgKind::Eigh && op.kind != LinalgKind::Lstsq && op.kind != LinalgKind::Expm &&
      op.kind != LinalgKind::Eig && !qr)
    return false;
  for (const Var& v : node.inputs)
    if (v->type.dtype != DType::Float32 && v->type.dtype != DType::Float64) return false;
  // (Lstsq's rcond is read on the host: host_inputs_of.)
  return node.inputs.size() == 1 || node.inputs[1]->type.dtype == node.inputs[0]->type.dtype;
}

}  // namespace
}  // namespace la

bool beyond_cusolver_counts(const Linalg& op, std::span<const Shape> inputs) {
  constexpr int64_t kMax = std::numeric_limits<int32_t>::max();
  for (const Shape& s : inputs)
    if (s.prod() > kMax) return true;
  if (inputs.empty() || inputs[0].size() != 2) return false;
  const int64_t big = std::max(inputs[0][0], inputs[0][1]);
  const bool square_factor = (op.kind == LinalgKind::Svd && op.attrs.full_matrices && op.attrs.compute_uv) ||
                             (op.kind == LinalgKind::Qr && op.attrs.qr_mode == QrMode::Complete);
  return square_factor && big > kMax / std::max<int64_t>(1, big);
}

bool cusolver_has_geev() {
  const la::Cusolver& c = la::cusolver();
  return c.why.empty() && c.create_params && c.geev_buffer_size && c.geev;
}

bool cusolver_loadable(std::string* why) {
  const la::Cusolver& c = la::cusolver();
  if (why) *why = c.why;
  return c.why.empty();
}

void register_cuda_linalg_kernels() {
  register_kernel(kCudaBackend, typeid(Linalg), kernel_factory<la::LinalgKernel>(),
                  KernelTraits{.accepts = la::linalg_accepts,
                               .host_inputs_of =
                                   [](const Apply& node) {
                                     const auto& op = static_cast<const Linalg&>(*node.op);
                                     return op.kind == LinalgKind::Lstsq ? std::vector<int>{2} : std::vector<int>{};
                                   },
                               .device_checks = true});
}

}  // namespace hypatia::cuda
