// Linear algebra on the GPU: Linalg's Cholesky, Solve (general, symmetric, positive definite and
// triangular A), Inverse, Det and Eigh (the standard problem) through cuSOLVER (opened when first needed, as cuBLAS is)
// and cuBLAS's trsm, float32 and float64. Each matrix is copied into a column-major work buffer (a C-contiguous copy of
// its transpose), factored and solved as the CPU's LAPACK calls are (backends/linalg_kernels.cpp), and copied back in C
// order. A matrix that is not positive definite, or singular, is found on the device (cuSOLVER's devInfo; a zero on a
// triangular A's diagonal): a small kernel writes it into the node's check block (KernelTraits::device_checks), raised
// with the CPU's words once the call waits for the device. The other kinds (Eig, the generalized Eigh, Svd, Qr, Lstsq,
// Pinv, Expm) run on the host through the CPU backend.
#include <cusolverDn.h>
#include <dlfcn.h>

#include <limits>
#include <mutex>
#include <type_traits>

#include "hypatia/backends/cuda/cuda_api.h"
#include "hypatia/backends/cuda/cuda_kernel_util.h"
#include "hypatia/core/error.h"
#include "hypatia/ops/linalg.h"

namespace hypatia::cuda {
namespace {

#define HYP_CUSOLVER_LIST(X)     \
  X(cusolverDnCreate)            \
  X(cusolverDnSetStream)         \
  X(cusolverDnSpotrf_bufferSize) \
  X(cusolverDnDpotrf_bufferSize) \
  X(cusolverDnSpotrf)            \
  X(cusolverDnDpotrf)            \
  X(cusolverDnSpotrs)            \
  X(cusolverDnDpotrs)            \
  X(cusolverDnSgetrf_bufferSize) \
  X(cusolverDnDgetrf_bufferSize) \
  X(cusolverDnSgetrf)            \
  X(cusolverDnDgetrf)            \
  X(cusolverDnSgetrs)            \
  X(cusolverDnDgetrs)            \
  X(cusolverDnSsyevd_bufferSize) \
  X(cusolverDnDsyevd_bufferSize) \
  X(cusolverDnSsyevd)            \
  X(cusolverDnDsyevd)

/// cuSOLVER's functions, from libcusolver, and one handle, which one thread at a time uses (its
/// stream set to the backend's before each call).
struct Cusolver {
#define HYP_CUSOLVER_FN(name) decltype(&::name) name = nullptr;
  HYP_CUSOLVER_LIST(HYP_CUSOLVER_FN)
#undef HYP_CUSOLVER_FN
  cusolverDnHandle_t handle = nullptr;
  std::mutex mu;
  std::string why;  // empty when loaded
};

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
    return x;
  }();
  return *s;
}

void check_cusolver(cusolverStatus_t s, const char* what) {
  if (s == CUSOLVER_STATUS_SUCCESS) [[likely]]
    return;
  if (s == CUSOLVER_STATUS_ALLOC_FAILED) fail<MemoryError>("cuSOLVER: ", what, " failed: out of device memory");
  fail<Error>("cuSOLVER: ", what, " failed with status ", static_cast<int>(s));
}

/// The loaded library with its handle on the backend's stream, locked for the caller.
class Solver {
 public:
  Solver() : c_(cusolver()), lock_(c_.mu) {
    if (!c_.why.empty()) fail<NotImplementedError>("CUDA backend: ", c_.why);
    require_available("cuSOLVER");
    if (!c_.handle) check_cusolver(c_.cusolverDnCreate(&c_.handle), "cusolverDnCreate");
    check_cusolver(c_.cusolverDnSetStream(c_.handle, stream()), "cusolverDnSetStream");
  }
  const Cusolver* operator->() const { return &c_; }
  cusolverDnHandle_t handle() const { return c_.handle; }

 private:
  Cusolver& c_;
  std::unique_lock<std::mutex> lock_;
};

int64_t ptr(const void* p) { return static_cast<int64_t>(reinterpret_cast<uintptr_t>(p)); }

/// The float (s) or double (d) form of a library function, for element type T.
template <class T, class S, class D>
auto pick(S s, D d) {
  if constexpr (std::is_same_v<T, float>)
    return s;
  else
    return d;
}

/// f.operator()<T>() for the element type of dt (float32 or float64).
template <class F>
void by_dtype(DType dt, F&& f) {
  if (dt == DType::Float32)
    f.template operator()<float>();
  else
    f.template operator()<double>();
}

/// What a check block's words say failed (word 2).
enum Failure : int64_t { kNotPositiveDefinite = 1, kSingularLu = 2, kZeroDiagonal = 3, kNoConvergence = 4 };

int lapack_dim(const Op& op, int64_t n) {
  if (n > std::numeric_limits<int>::max() / 2)
    fail<ValueError>(op.name(), ": a dimension of ", n, " is past cuSOLVER's 32-bit index range");
  return static_cast<int>(n);
}

/// The column-major work copy of a matrix (a C-contiguous copy of its transpose), or of a vector.
NDArray column_major(const NDArray& x) { return device_copy(x.ndim() == 2 ? x.transpose() : x); }
/// The C-order result of a column-major work buffer of shape `like` (its transpose's copy).
NDArray c_order(const NDArray& w, const Shape& like) {
  if (like.size() == 1) return w;
  return device_copy(w.transpose());
}

class LinalgKernel final : public Kernel {
 public:
  explicit LinalgKernel(const Apply& node)
      : op_(static_cast<const Linalg&>(*node.op)), dt_(node.inputs[0]->type.dtype) {
    const std::string src = linalg_source(dt_);
    info_kernel_ = request_kernel(src, "hyp_la_info");
    tri_kernel_ = request_kernel(src, "hyp_la_tri");
    sym_kernel_ = request_kernel(src, "hyp_la_sym");
    diag_kernel_ = request_kernel(src, "hyp_la_diag");
    if (op_.kind == LinalgKind::Inverse) eye_kernel_ = request_kernel(eye_source(dt_), "hyp_eye");
    if (op_.kind == LinalgKind::Det) det_kernel_ = request_kernel(src, "hyp_la_det");
  }

  void run(const KernelArgs& a) override {
    const NDArray& x = *a.in[0];
    if (x.shape(0) != x.shape(1))
      fail<ValueError>(op_.name(), ": expected a square matrix, got shape ", x.shape().str());
    const int n = lapack_dim(op_, x.shape(0));
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
    if (!info_.valid()) info_ = NDArray::empty({1}, DType::Int32, Device::cuda(0));
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
        // an eigenvector's sign is the library's (cuSOLVER's may differ from LAPACK's).
        NDArray& values = prepare_device_output(*a.out[0], Shape{n}, dt_);
        syevd(w, values, n);
        check_info(kNoConvergence);
        *a.out[1] = c_order(w, x.shape());
        break;
      }
      case LinalgKind::Inverse: {
        NDArray b = NDArray::empty({n, n}, dt_, Device::cuda(0));
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

  void raise_device_errors() override {
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
      case kSingularLu:
        fail<ValueError>(who, solve ? ": A is singular (U[" : ": the matrix is singular (U[", w[1] - 1, ", ", w[1] - 1,
                         solve ? "] is exactly zero)" : "] of its LU factorization is exactly zero)");
      default:
        fail<ValueError>(who, ": A is singular (its diagonal element ", w[1] - 1, " is zero)");
    }
  }

 private:
  /// A workspace of `n` elements of the dtype.
  NDArray workspace(int n) const { return NDArray::empty({std::max(1, n)}, dt_, Device::cuda(0)); }

  /// The info word into the check block (as `code`) when it is not zero.
  void check_info(Failure code) {
    std::vector<int64_t> args = {ptr(info_.raw()), static_cast<int64_t>(check_.device()), code};
    launch(info_kernel_, 1, args, op_.name().c_str());
  }

  /// potrf of the column-major w, in place: the factor in its `lower` (or upper) triangle.
  void potrf(NDArray& w, int n, cublasFillMode_t uplo) {
    by_dtype(dt_, [&]<class T>() {
      Solver s;
      int lwork = 0;
      check_cusolver(pick<T>(s->cusolverDnSpotrf_bufferSize, s->cusolverDnDpotrf_bufferSize)(s.handle(), uplo, n,
                                                                                             w.data<T>(), n, &lwork),
                     "cusolverDn<t>potrf_bufferSize");
      NDArray ws = workspace(lwork);
      check_cusolver(pick<T>(s->cusolverDnSpotrf, s->cusolverDnDpotrf)(s.handle(), uplo, n, w.data<T>(), n,
                                                                       ws.data<T>(), lwork, info_.data<int>()),
                     "cusolverDn<t>potrf");
    });
  }

  void cholesky(NDArray& w, int n) {
    const bool lower = op_.attrs.lower;
    potrf(w, n, lower ? CUBLAS_FILL_MODE_LOWER : CUBLAS_FILL_MODE_UPPER);
    // The triangle potrf left untouched is zeroed; with nan_on_error a failed factor is NaN
    // instead of an error.
    const bool nan = op_.attrs.nan_on_error;
    std::vector<int64_t> args = {n, lower ? 1 : 0, nan ? 1 : 0, ptr(w.raw()), ptr(info_.raw())};
    launch(tri_kernel_, grid_for(int64_t{n} * n), args, op_.name().c_str());
    if (!nan) check_info(kNotPositiveDefinite);
  }

  /// syevd of the column-major symmetric w, in place: its eigenvectors in w's columns, the values
  /// (ascending) in `values`.
  void syevd(NDArray& w, NDArray& values, int n) {
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

  /// getrf of the column-major w, in place: its LU factors and (returned) the pivots.
  NDArray getrf(NDArray& w, int n) {
    NDArray pivots = NDArray::empty({n}, DType::Int32, Device::cuda(0));
    by_dtype(dt_, [&]<class T>() {
      Solver s;
      int lwork = 0;
      check_cusolver(pick<T>(s->cusolverDnSgetrf_bufferSize, s->cusolverDnDgetrf_bufferSize)(s.handle(), n, n,
                                                                                             w.data<T>(), n, &lwork),
                     "cusolverDn<t>getrf_bufferSize");
      NDArray ws = workspace(lwork);
      check_cusolver(pick<T>(s->cusolverDnSgetrf, s->cusolverDnDgetrf)(s.handle(), n, n, w.data<T>(), n, ws.data<T>(),
                                                                       pivots.data<int>(), info_.data<int>()),
                     "cusolverDn<t>getrf");
    });
    return pivots;
  }

  /// getrf of the column-major w, then getrs of the column-major b (n x nrhs), in place.
  void lu_solve(NDArray& w, NDArray& b, int n, int nrhs) {
    const NDArray pivots = getrf(w, n);
    check_info(kSingularLu);
    by_dtype(dt_, [&]<class T>() {
      Solver s;
      check_cusolver(
          pick<T>(s->cusolverDnSgetrs, s->cusolverDnDgetrs)(s.handle(), CUBLAS_OP_N, n, nrhs, w.data<T>(), n,
                                                            pivots.data<int>(), b.data<T>(), n, info_.data<int>()),
          "cusolverDn<t>getrs");
    });
  }

  void solve(NDArray& w, NDArray& b, int n, int nrhs) {
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

  const Linalg& op_;
  DType dt_;
  KernelRef info_kernel_, tri_kernel_, sym_kernel_, diag_kernel_, eye_kernel_, det_kernel_;
  NDArray info_;  // cuSOLVER's devInfo
  DeviceCheckBlock check_;
};

bool linalg_accepts(const Apply& node) {
  const auto& op = static_cast<const Linalg&>(*node.op);
  // Without libcusolver (and its own dependencies) they run on the CPU, as before it was used;
  // a triangular Solve needs only cuBLAS.
  const bool triangular = op.kind == LinalgKind::Solve && op.attrs.structure == SolveStructure::Triangular;
  if (!triangular && !cusolver_loadable(nullptr)) return false;
  const bool standard_eigh = op.kind == LinalgKind::Eigh && node.inputs.size() == 1;  // (not A v = w B v)
  if (op.kind != LinalgKind::Cholesky && op.kind != LinalgKind::Solve && op.kind != LinalgKind::Inverse &&
      op.kind != LinalgKind::Det && !standard_eigh)
    return false;
  for (const Var& v : node.inputs)
    if (v->type.dtype != DType::Float32 && v->type.dtype != DType::Float64) return false;
  return node.inputs.size() == 1 || node.inputs[1]->type.dtype == node.inputs[0]->type.dtype;
}

}  // namespace

bool cusolver_loadable(std::string* why) {
  const Cusolver& c = cusolver();
  if (why) *why = c.why;
  return c.why.empty();
}

std::string linalg_source(DType dt) {
  const std::string T = cuda_type(dt);
  std::string s = kCheckFailed;
  // devInfo into the check block (word 1 the info, word 2 what failed).
  s += "struct LaInfoArgs { unsigned long long info, err; long long code; };\n"
       "extern \"C\" __global__ void hyp_la_info(const LaInfoArgs a) {\n"
       "  if (blockIdx.x == 0 && threadIdx.x == 0) {\n"
       "    const int v = *(const int*)a.info;\n"
       "    if (v != 0) hyp_check_failed(a.err, v, a.code, 0);\n  }\n}\n";
  // Column-major n x n: element (i, j) at j * n + i. The triangle a factor does not use is
  // zeroed, or everything is NaN when the factorization failed and nan_on_error says so.
  s += "struct LaTriArgs { long long n, lower, nan; unsigned long long a, info; };\n";
  s += grid_stride_head("hyp_la_tri", "LaTriArgs", "a.n * a.n");
  s += "    " + T + "* m = (" + T + "*)a.a;\n    const long long i = t % a.n, j = t / a.n;\n";
  s += "    if (a.nan && *(const int*)a.info > 0) m[t] = (" + T + ")0 / (" + T + ")0;\n";
  s += "    else if (a.lower ? j > i : i > j) m[t] = (" + T + ")0;\n  }\n}\n";
  // The other triangle from the `lower` (or upper) one: a symmetric matrix in full.
  s += "struct LaSymArgs { long long n, lower; unsigned long long a; };\n";
  s += grid_stride_head("hyp_la_sym", "LaSymArgs", "a.n * a.n");
  s += "    " + T + "* m = (" + T + "*)a.a;\n    const long long i = t % a.n, j = t / a.n;\n";
  s += "    if (a.lower ? j > i : i > j) m[t] = m[i * a.n + j];\n  }\n}\n";
  // The determinant from getrf's factors and pivots (one thread, in double as the CPU).
  s += "struct LaDetArgs { long long n; unsigned long long a, piv, out; };\n"
       "extern \"C\" __global__ void hyp_la_det(const LaDetArgs a) {\n"
       "  if (blockIdx.x != 0 || threadIdx.x != 0) return;\n"
       "  const " +
       T + "* m = (const " + T +
       "*)a.a;\n"
       "  const int* piv = (const int*)a.piv;\n"
       "  double d = 1;\n"
       "  for (long long i = 0; i < a.n; ++i) {\n"
       "    d *= (double)m[i * a.n + i];\n"
       "    if (piv[i] != i + 1) d = -d;\n  }\n"
       "  *(" +
       T + "*)a.out = (" + T + ")d;\n}\n";
  // The first zero on a triangular matrix's diagonal (one thread: trtrs reports the first).
  s += "struct LaDiagArgs { long long n; unsigned long long a, err; };\n"
       "extern \"C\" __global__ void hyp_la_diag(const LaDiagArgs a) {\n"
       "  if (blockIdx.x != 0 || threadIdx.x != 0) return;\n"
       "  const " +
       T + "* m = (const " + T +
       "*)a.a;\n"
       "  for (long long i = 0; i < a.n; ++i)\n"
       "    if (m[i * a.n + i] == (" +
       T + ")0) { hyp_check_failed(a.err, i + 1, 3, 0); return; }\n}\n";
  return s;
}

void register_cuda_linalg_kernels() {
  register_kernel(kCudaBackend, typeid(Linalg), kernel_factory<LinalgKernel>(),
                  KernelTraits{.accepts = linalg_accepts, .device_checks = true});
}

}  // namespace hypatia::cuda
