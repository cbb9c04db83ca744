// Linear algebra on the GPU: Linalg's Cholesky, Solve (general, symmetric, positive definite and
// triangular A), Inverse, Det, Eig, Eigh (also A v = w B v), Svd, Pinv, Qr, Lstsq and Expm through cuSOLVER (opened
// when first needed, as cuBLAS is) and cuBLAS's trsm and gemm, float32 and float64. Each matrix is copied into a
// column-major work buffer (a C-contiguous copy of its transpose), factored and solved as the CPU's LAPACK calls are
// (backends/linalg_kernels.cpp), and copied back in C order. A matrix that is not positive definite, or singular, is
// found on the device (cuSOLVER's devInfo; a zero on a triangular A's diagonal): a small kernel writes it into the
// node's check block (KernelTraits::device_checks), raised with the CPU's words once the call waits for the device. The
// Eig runs through Xgeev where libcusolver has it (CUDA 12.6 and later), else on the host through the CPU backend.
#include <cusolverDn.h>
#include <dlfcn.h>

#include <atomic>
#include <bit>
#include <cmath>
#include <limits>
#include <mutex>
#include <optional>
#include <type_traits>

#include "hypatia/backends/backend.h"
#include "hypatia/backends/cuda/cuda_api.h"
#include "hypatia/backends/cuda/cuda_kernel_util.h"
#include "hypatia/backends/expm_pade.h"
#include "hypatia/core/error.h"
#include "hypatia/core/messages.h"
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
  X(cusolverDnDsyevd)            \
  X(cusolverDnSsygvd_bufferSize) \
  X(cusolverDnDsygvd_bufferSize) \
  X(cusolverDnSsygvd)            \
  X(cusolverDnDsygvd)            \
  X(cusolverDnSgesvd_bufferSize) \
  X(cusolverDnDgesvd_bufferSize) \
  X(cusolverDnSgesvd)            \
  X(cusolverDnDgesvd)            \
  X(cusolverDnSgeqrf_bufferSize) \
  X(cusolverDnDgeqrf_bufferSize) \
  X(cusolverDnSgeqrf)            \
  X(cusolverDnDgeqrf)            \
  X(cusolverDnSorgqr_bufferSize) \
  X(cusolverDnDorgqr_bufferSize) \
  X(cusolverDnSorgqr)            \
  X(cusolverDnDorgqr)

/// cuSOLVER's functions, from libcusolver, and a handle per queue (as cuBLAS's: cuda_api.h), made
/// when the queue first needs one: a handle's stream, and the internal cuBLAS workspace that
/// setting it resets, belong to one queue's work, which one thread at a time queues.
struct Cusolver {
#define HYP_CUSOLVER_FN(name) decltype(&::name) name = nullptr;
  HYP_CUSOLVER_LIST(HYP_CUSOLVER_FN)
#undef HYP_CUSOLVER_FN
  struct Queue {
    std::mutex mu;
    cusolverDnHandle_t handle = nullptr;
    cudaStream_t stream = nullptr;  // the one set on the handle (when bound)
    bool bound = false;
  };
  Queue queues[kQueues];
  std::string why;  // empty when loaded
  // Eig's (CUDA 12.6 and later; null before: Eig runs on the CPU), and its parameters object
  // (made once, under params_mu; read only afterwards).
  decltype(&::cusolverDnCreateParams) create_params = nullptr;
  decltype(&::cusolverDnXgeev_bufferSize) geev_buffer_size = nullptr;
  decltype(&::cusolverDnXgeev) geev = nullptr;
  std::mutex params_mu;
  cusolverDnParams_t params = nullptr;
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
    x->create_params = reinterpret_cast<decltype(x->create_params)>(dlsym(lib, "cusolverDnCreateParams"));
    x->geev_buffer_size = reinterpret_cast<decltype(x->geev_buffer_size)>(dlsym(lib, "cusolverDnXgeev_bufferSize"));
    x->geev = reinterpret_cast<decltype(x->geev)>(dlsym(lib, "cusolverDnXgeev"));
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

/// The loaded library with the calling thread's queue's handle on stream(), locked for the caller.
class Solver {
 public:
  Solver() : c_(cusolver()), q_(c_.queues[current_queue()]), lock_(q_.mu) {
    if (!c_.why.empty()) fail<NotImplementedError>("CUDA backend: ", c_.why);
    require_available("cuSOLVER");
    if (!q_.handle) {
      DeviceScope on_device;  // (a handle belongs to the device current when it is made)
      check_cusolver(c_.cusolverDnCreate(&q_.handle), "cusolverDnCreate");
    }
    if (!q_.bound || q_.stream != stream()) {
      check_cusolver(c_.cusolverDnSetStream(q_.handle, stream()), "cusolverDnSetStream");
      q_.stream = stream();
      q_.bound = true;
    }
  }
  const Cusolver* operator->() const { return &c_; }
  cusolverDnHandle_t handle() const { return q_.handle; }
  /// Xgeev's parameters object (made on first use).
  cusolverDnParams_t params() {
    std::lock_guard<std::mutex> lock(c_.params_mu);
    if (!c_.params) check_cusolver(c_.create_params(&c_.params), "cusolverDnCreateParams");
    return c_.params;
  }

 private:
  Cusolver& c_;
  Cusolver::Queue& q_;
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

/// Set once Xgeev refused a call: Eig runs on the CPU from then on.
std::atomic<bool> g_geev_refused[2] = {false, false};  // (float32, float64)

/// What a check block's words say failed (word 2).
enum Failure : int64_t {
  kNotPositiveDefinite = 1,
  kSingularLu = 2,
  kZeroDiagonal = 3,
  kNoConvergence = 4,
  kSvdNoConvergence = 5,
  kGeneralizedEigh = 6,  // (info > n: B not positive definite, minor info - n; else no convergence)
  kPadeSingular = 7,
  kNotFinite = 8,
  kComplexEigenvalue = 9,  // (word 3: the value's real and imaginary parts as float32 bits)
  kEigNoConvergence = 10
};

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

  void run(const KernelArgs& a) override {
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
    if (x.shape(0) != x.shape(1))
      fail<ValueError>(op_.name(), ": expected a square matrix, got shape ", x.shape().str());
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

 private:
  /// A workspace of `n` elements of the dtype.
  NDArray workspace(int n, std::optional<DType> dt = std::nullopt) const {
    return NDArray::empty({std::max(1, n)}, dt.value_or(dt_), Device::cuda());
  }

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

  /// sygvd (itype 1: A v = w B v) of the column-major symmetric w and positive definite b, in
  /// place: the eigenvectors in w's columns, the values (ascending) in `values`.
  void sygvd(NDArray& w, NDArray& b, NDArray& values, int n) {
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

  /// getrf of the column-major w, in place: its LU factors and (returned) the pivots.
  NDArray getrf(NDArray& w, int n) {
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

  /// getrf of the column-major w, then getrs of the column-major b (n x nrhs), in place.
  void lu_solve(NDArray& w, NDArray& b, int n, int nrhs) {
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

  /// Fills `out` (rows x cols, C order) with the identity (ones on the diagonal) or zeros.
  void fill(NDArray& out, bool identity) {
    if (out.size() == 0) return;
    if (!identity) {
      check(cudaMemsetAsync(out.raw(), 0, out.nbytes(), stream()), "cudaMemsetAsync (zeros)");
      return;
    }
    std::vector<int64_t> args = {out.shape(0), out.shape(1), 0, ptr(out.raw())};
    launch(eye_kernel_, grid_for(out.size()), args, op_.name().c_str());
  }

  /// gesvd of the column-major M (m x n, m >= n, destroyed): S (n), and U (m x ucols) and VT
  /// (n x n) as column-major buffers (C-order shapes (ucols, m) and (n, n)) unless `uv` is false.
  void gesvd(NDArray& w, int m, int n, bool uv, bool full, NDArray& s, NDArray& u, NDArray& vt) {
    {  // (a NaN or an infinity: the CPU's error, found here, and zeroed in the work copy, which
       // cuSOLVER then factors, its results discarded for the error)
      std::vector<int64_t> args = {int64_t{m} * n, ptr(w.raw()), static_cast<int64_t>(check_.device())};
      launch(finite_kernel_, grid_for(int64_t{m} * n), args, op_.name().c_str());
    }
    const int ucols = full ? m : n;
    const signed char jobu = !uv ? 'N' : full ? 'A' : 'S', jobvt = uv ? 'A' : 'N';
    if (uv) {
      u = NDArray::empty({ucols, m}, dt_, Device::cuda());
      vt = NDArray::empty({n, n}, dt_, Device::cuda());
    }
    by_dtype(dt_, [&]<class T>() {
      Solver sv;
      int lwork = 0;
      check_cusolver(
          pick<T>(sv->cusolverDnSgesvd_bufferSize, sv->cusolverDnDgesvd_bufferSize)(sv.handle(), m, n, &lwork),
          "cusolverDn<t>gesvd_bufferSize");
      NDArray ws = workspace(lwork), rwork = workspace(n - 1);
      check_cusolver(pick<T>(sv->cusolverDnSgesvd, sv->cusolverDnDgesvd)(
                         sv.handle(), jobu, jobvt, m, n, w.data<T>(), m, s.data<T>(), uv ? u.data<T>() : nullptr, m,
                         uv ? vt.data<T>() : nullptr, n, ws.data<T>(), lwork, rwork.data<T>(), info_.data<int>()),
                     "cusolverDn<t>gesvd");
    });
    check_info(kSvdNoConvergence);
  }

  /// Svd (U, s, Vt or s) and Pinv. cuSOLVER's gesvd takes m >= n: a wide matrix is decomposed as
  /// its transpose (A^T = U' S V'^T, so U = V' and Vt = U'^T), whose column-major copy is A's
  /// C-order one. Singular values descend; a singular vector's sign is the library's.
  void svd(const NDArray& x, const KernelArgs& a) {
    const int64_t rows = x.shape(0), cols = x.shape(1);
    const bool wide = rows < cols, pinv = op_.kind == LinalgKind::Pinv;
    const bool uv = pinv || op_.attrs.compute_uv, full = !pinv && op_.attrs.full_matrices;
    const int m = lapack_dim(op_, wide ? cols : rows), n = lapack_dim(op_, wide ? rows : cols);  // M's, m >= n
    const int64_t k = n;
    if (pinv) {
      NDArray& out = prepare_device_output(*a.out[0], Shape{cols, rows}, dt_);
      if (k == 0) return fill(out, false);
      NDArray w = wide ? device_copy(x) : column_major(x), s = NDArray::empty({k}, dt_, Device::cuda()), u, vt;
      gesvd(w, m, n, true, false, s, u, vt);
      // U's columns times 1/s where s > rcond * s[0] (else 0), then V diag U^T as one product,
      // written column-major as A's pinv transposed: C order (cols, rows).
      scale_by_inverse(u, int64_t{m} * k, m, k, s, op_.attrs.rcond < 0 ? 1e-15 : op_.attrs.rcond);
      // Tall: out (rows x cols, col-major) = U_s (m x k) VT (k x n). Wide (M = A^T): out = VT^T U_s^T.
      const bool t = wide;
      gemm(t, t, static_cast<int>(rows), static_cast<int>(cols), static_cast<int>(k), 1, wide ? vt : u, wide ? n : m,
           wide ? u : vt, wide ? m : n, 0, out, static_cast<int>(rows));
      return;
    }
    NDArray& s = prepare_device_output(*a.out[uv ? 1 : 0], Shape{k}, dt_);
    const int64_t ucols = full ? rows : k, vrows = full ? cols : k;
    if (k == 0) {  // an empty matrix: U and Vt are identities of their shapes (the CPU's)
      if (uv) {
        fill(prepare_device_output(*a.out[0], Shape{rows, ucols}, dt_), true);
        fill(prepare_device_output(*a.out[2], Shape{vrows, cols}, dt_), true);
      }
      return;
    }
    NDArray w = wide ? device_copy(x) : column_major(x), u, vt;
    gesvd(w, m, n, uv, full, s, u, vt);
    if (!uv) return;
    if (wide) {  // U = V' (VT' as a C-order buffer), Vt = U'^T (U' as one)
      *a.out[0] = vt;
      *a.out[2] = u;
    } else {
      *a.out[0] = device_copy(u.transpose());
      *a.out[2] = device_copy(vt.transpose());
    }
  }

  /// C (column-major, ldc) = alpha op(A) op(B) + beta C through cuBLAS (m x n, inner k).
  void gemm(bool ta, bool tb, int m, int n, int k, double alpha, const NDArray& A, int lda, const NDArray& B, int ldb,
            double beta, NDArray& C, int ldc) {
    if (m == 0 || n == 0) return;
    const Cublas& cb = cublas();
    by_dtype(C.dtype(), [&]<class T>() {
      const T al = static_cast<T>(alpha), be = static_cast<T>(beta);
      check_cublas(
          pick<T>(cb.sgemm, cb.dgemm)(cublas_handle(), ta ? CUBLAS_OP_T : CUBLAS_OP_N, tb ? CUBLAS_OP_T : CUBLAS_OP_N,
                                      m, n, k, &al, A.data<T>(), std::max(1, lda), B.data<T>(), std::max(1, ldb), &be,
                                      C.data<T>(), std::max(1, ldc)),
          "cublas<t>gemm");
    });
    after_launch("cuBLAS gemm");
  }

  /// The first `count` elements of u times 1/s[l], l = (t / div) % mod, where s[l] > rcond * s[0]
  /// (the largest), else 0: a column-major matrix's columns (div = rows) or rows (div = 1).
  void scale_by_inverse(NDArray& u, int64_t count, int64_t div, int64_t mod, const NDArray& s, double rcond) {
    if (count == 0) return;
    std::vector<int64_t> args = {count, div, mod, ptr(u.raw()), ptr(s.raw()), std::bit_cast<int64_t>(rcond)};
    launch(scale_kernel_, grid_for(count), args, op_.name().c_str());
  }

  /// Lstsq (numpy's lstsq through gelsd): from the SVD, x = V diag(1/s) U^T b over the singular
  /// values above rcond * the largest (rcond < 0: eps * max(M, N)), their count (the rank), s, and
  /// the squared residual norms ||b - A x||^2 when the rank is N and M > N (an empty array
  /// otherwise: the rank is read on the host then, to size it).
  void lstsq(const NDArray& x, const NDArray& y, double rc, const KernelArgs& a) {
    const int64_t rows = x.shape(0), cols = x.shape(1);
    if (y.shape(0) != rows)
      fail<ValueError>(op_.name(), ": a has ", rows, " rows but b has ", y.shape(0), " (shapes ", x.shape().str(),
                       " and ", y.shape().str(), ")");
    const bool vec = y.ndim() == 1, wide = rows < cols;
    const int m = lapack_dim(op_, wide ? cols : rows), n = lapack_dim(op_, wide ? rows : cols);  // M's, m >= n
    const int k = n, nrhs = vec ? 1 : lapack_dim(op_, y.shape(1));
    if (rc < 0) rc = (dt_ == DType::Float32 ? 0x1p-23 : 0x1p-52) * static_cast<double>(std::max(rows, cols));
    // (As gelsd's xLALSD: rcond, in the dtype, outside (0, 1) is the unit roundoff.)
    if (dt_ == DType::Float32) rc = static_cast<float>(rc);
    if (!(rc > 0 && rc < 1)) rc = dt_ == DType::Float32 ? 0x1p-24 : 0x1p-53;
    NDArray& xo = prepare_device_output(*a.out[0], vec ? Shape{cols} : Shape{cols, nrhs}, dt_);
    NDArray& rank = prepare_device_output(*a.out[2], Shape{}, DType::Int64);
    NDArray& s = prepare_device_output(*a.out[3], Shape{k}, dt_);
    const NDArray b = column_major(y);                               // rows x nrhs
    NDArray xc = NDArray::empty({nrhs, cols}, dt_, Device::cuda());  // column-major cols x nrhs
    if (k == 0) {
      fill(xc, false);
      check(cudaMemsetAsync(rank.raw(), 0, sizeof(int64_t), stream()), "cudaMemsetAsync (rank)");
    } else {
      NDArray w = wide ? device_copy(x) : column_major(x), u, vt;
      gesvd(w, m, n, true, false, s, u, vt);
      std::vector<int64_t> args = {k, ptr(s.raw()), std::bit_cast<int64_t>(rc), ptr(rank.raw())};
      launch(rank_kernel_, 1, args, op_.name().c_str());
      // t = U^T b (tall) or VT' b (wide: A = V' S U'^T), its rows over s, then x = V t or U' t.
      NDArray t = NDArray::empty({nrhs, k}, dt_, Device::cuda());
      gemm(!wide, false, k, nrhs, static_cast<int>(rows), 1, wide ? vt : u, wide ? k : m, b, static_cast<int>(rows), 0,
           t, k);
      scale_by_inverse(t, int64_t{k} * nrhs, 1, k, s, rc);
      gemm(!wide, false, static_cast<int>(cols), nrhs, k, 1, wide ? u : vt, wide ? m : n, t, k, 0, xc,
           static_cast<int>(cols));
    }
    xo = vec ? xc.reshape({cols}) : device_copy(xc.transpose());
    // numpy: residuals only when the rank is N and M > N (read on the host: it sizes the output).
    bool res = false;
    if (rows > cols && nrhs > 0) {
      int64_t r = 0;
      device_memory(rank.device()).copy_to_host(&r, rank.raw(), sizeof r);
      res = r == cols;
    }
    NDArray& ro = prepare_device_output(*a.out[1], Shape{res ? int64_t{nrhs} : 0}, dt_);
    if (!res) return;
    NDArray resid = device_copy(b);  // b - A x, column-major rows x nrhs
    gemm(false, false, static_cast<int>(rows), nrhs, static_cast<int>(cols), -1, column_major(x),
         static_cast<int>(rows), xc, static_cast<int>(cols), 1, resid, static_cast<int>(rows));
    std::vector<int64_t> args = {rows, nrhs, ptr(resid.raw()), ptr(ro.raw())};
    launch(sumsq_kernel_, grid_for(nrhs), args, op_.name().c_str());
  }

  /// y += s x (double, `count` elements), and y's diagonal += s (n x n).
  void axpy(NDArray& y, double s, const NDArray& x) {
    std::vector<int64_t> args = {y.size(), std::bit_cast<int64_t>(s), ptr(x.raw()), ptr(y.raw())};
    launch(axpy_kernel_, grid_for(y.size()), args, op_.name().c_str());
  }
  void add_diagonal(NDArray& y, double s) {
    std::vector<int64_t> args = {y.shape(0), std::bit_cast<int64_t>(s), ptr(y.raw())};
    launch(adddiag_kernel_, grid_for(y.shape(0)), args, op_.name().c_str());
  }

  /// Expm as the CPU computes it (scipy's algorithm, Higham 2005: the Pade approximant of degree
  /// 3, 5, 7, 9 or 13 on A / 2^s, squared s times), in double, with cuBLAS products and cuSOLVER's
  /// LU; the 1-norm, which picks the degree and s, is read on the host.
  void expm(const NDArray& x, const KernelArgs& a) {
    const int n = lapack_dim(op_, x.shape(0));
    NDArray& out = prepare_device_output(*a.out[0], x.shape(), dt_);
    if (n == 0) return;
    const int64_t nn = int64_t{n} * n;
    auto mat = [&] { return NDArray::empty({n, n}, DType::Float64, Device::cuda()); };
    auto zeros = [&] {
      NDArray z = mat();
      fill(z, false);
      return z;
    };
    auto mm = [&](const NDArray& l, const NDArray& r) {
      NDArray p = mat();
      gemm(false, false, n, n, n, 1, l, n, r, n, 0, p, n);
      return p;
    };
    const std::string name = op_.name();
    const char* who = name.c_str();
    NDArray A = mat();
    {
      const NDArray w = column_major(x);
      std::vector<int64_t> args = {nn, ptr(w.raw()), ptr(A.raw())};
      launch(f64_kernel_, grid_for(nn), args, who);
    }
    double norm1 = 0;
    {
      NDArray sums = NDArray::empty({n}, DType::Float64, Device::cuda()),
              m = NDArray::empty({1}, DType::Float64, Device::cuda());
      std::vector<int64_t> cs = {n, ptr(A.raw()), ptr(sums.raw())}, mx = {n, ptr(sums.raw()), ptr(m.raw())};
      launch(colsum_kernel_, grid_for(n), cs, who);
      launch(max_kernel_, 1, mx, who);
      device_memory(m.device()).copy_to_host(&norm1, m.raw(), sizeof norm1);
    }
    if (!std::isfinite(norm1)) {
      std::vector<int64_t> args = {nn, std::bit_cast<int64_t>(std::numeric_limits<double>::quiet_NaN()),
                                   ptr(out.raw())};
      launch(fill_kernel_, grid_for(nn), args, who);
      return;
    }
    const int deg_index = expm_pade::degree_index(norm1);
    int squarings = 0;
    NDArray u, v = zeros();
    if (deg_index >= 0) {
      // U = A sum_{odd} b_k A^{k-1}, V = sum_{even} b_k A^k.
      const int deg = expm_pade::kDegrees[deg_index];
      const double* b = expm_pade::kB[deg_index];
      const NDArray a2 = mm(A, A);
      NDArray u_acc = zeros(), pw;  // (pw: A^k; the identity while k = 0)
      for (int k = 0; k <= deg; k += 2) {
        if (k == 0) {
          add_diagonal(v, b[0]);
          add_diagonal(u_acc, b[1]);
        } else {
          axpy(v, b[k], pw);
          axpy(u_acc, b[k + 1], pw);
        }
        if (k + 2 <= deg) pw = k == 0 ? a2 : mm(pw, a2);
      }
      u = mm(A, u_acc);
    } else {
      squarings = expm_pade::squarings(norm1);
      NDArray scaled = zeros();
      axpy(scaled, std::ldexp(1.0, -squarings), A);
      A = scaled;
      const NDArray a2 = mm(A, A), a4 = mm(a2, a2), a6 = mm(a2, a4);
      auto add_powers = [&](NDArray& dst, int k) {
        axpy(dst, expm_pade::kB13[k], a6);
        axpy(dst, expm_pade::kB13[k - 2], a4);
        axpy(dst, expm_pade::kB13[k - 4], a2);
      };
      // U = A [A6 (b13 A6 + b11 A4 + b9 A2) + b7 A6 + b5 A4 + b3 A2 + b1 I]
      NDArray t1 = zeros();
      add_powers(t1, 13);
      NDArray t = mm(a6, t1);
      add_powers(t, 7);
      add_diagonal(t, expm_pade::kB13[1]);
      u = mm(A, t);
      // V = A6 (b12 A6 + b10 A4 + b8 A2) + b6 A6 + b4 A4 + b2 A2 + b0 I
      NDArray t2 = zeros();
      add_powers(t2, 12);
      v = mm(a6, t2);
      add_powers(v, 6);
      add_diagonal(v, expm_pade::kB13[0]);
    }
    // (V - U) R = (V + U)
    NDArray p = zeros(), q = zeros();
    axpy(p, 1.0, v);
    axpy(p, 1.0, u);
    axpy(q, 1.0, v);
    axpy(q, -1.0, u);
    const NDArray pivots = getrf(q, n);
    check_info(kPadeSingular);
    {
      Solver s;
      check_cusolver(s->cusolverDnDgetrs(s.handle(), CUBLAS_OP_N, n, n, q.data<double>(), n, pivots.data<int>(),
                                         p.data<double>(), n, info_.data<int>()),
                     "cusolverDnDgetrs");
    }
    for (int s = 0; s < squarings; ++s) p = mm(p, p);
    std::vector<int64_t> args = {n, ptr(p.raw()), ptr(out.raw())};
    launch(from_f64_kernel_, grid_for(nn), args, who);
  }

  /// Eig of a real matrix through Xgeev with real types (W: the real parts, then the imaginary
  /// ones, as LAPACK's geev gives them; right eigenvectors of unit norm, as LAPACK's): a complex
  /// eigenvalue is refused on the device with the CPU's words (Hypatia has no complex dtype).
  void eig(const NDArray& x, const KernelArgs& a) {
    const int n = lapack_dim(op_, x.shape(0));
    NDArray& wo = prepare_device_output(*a.out[0], Shape{n}, dt_);
    if (n == 0) {
      prepare_device_output(*a.out[1], x.shape(), dt_);
      return;
    }
    std::atomic<bool>& refused = g_geev_refused[dt_ == DType::Float64 ? 1 : 0];
    if (refused.load(std::memory_order_relaxed)) return on_host(a);
    NDArray w = column_major(x), values = NDArray::empty({2 * int64_t{n}}, dt_, Device::cuda()),
            vr = NDArray::empty({n, n}, dt_, Device::cuda());
    const cudaDataType t = dt_ == DType::Float32 ? CUDA_R_32F : CUDA_R_64F;
    cusolverStatus_t st = CUSOLVER_STATUS_SUCCESS;
    {
      Solver s;
      const Cusolver& c = cusolver();
      const cusolverDnParams_t params = s.params();
      size_t dev_bytes = 0, host_bytes = 0;
      st = c.geev_buffer_size(s.handle(), params, CUSOLVER_EIG_MODE_NOVECTOR, CUSOLVER_EIG_MODE_VECTOR, n, t, w.raw(),
                              n, t, values.raw(), t, nullptr, 1, t, vr.raw(), n, t, &dev_bytes, &host_bytes);
      if (st == CUSOLVER_STATUS_SUCCESS) {
        NDArray ws =
            NDArray::empty({static_cast<int64_t>(std::max<size_t>(1, dev_bytes))}, DType::UInt8, Device::cuda());
        if (host_workspace_.size() < host_bytes) host_workspace_.resize(host_bytes);
        st = c.geev(s.handle(), params, CUSOLVER_EIG_MODE_NOVECTOR, CUSOLVER_EIG_MODE_VECTOR, n, t, w.raw(), n, t,
                    values.raw(), t, nullptr, 1, t, vr.raw(), n, t, ws.raw(), dev_bytes,
                    host_workspace_.empty() ? nullptr : host_workspace_.data(), host_bytes, info_.data<int>());
      }
    }
    if (st == CUSOLVER_STATUS_INVALID_VALUE || st == CUSOLVER_STATUS_NOT_SUPPORTED ||
        st == CUSOLVER_STATUS_ARCH_MISMATCH) {
      // This library's Xgeev refuses real matrices of this dtype (another cuSOLVER than the one
      // it was written for): Eig of this dtype runs on the CPU from now on, as without Xgeev.
      if (!refused.exchange(true))
        warn("CUDA backend: cusolverDnXgeev refused a real " + std::string(dtype_name(dt_)) + " matrix (status " +
             std::to_string(static_cast<int>(st)) + "): Eig of " + std::string(dtype_name(dt_)) + " runs on the CPU");
      return on_host(a);
    }
    check_cusolver(st, "cusolverDnXgeev");  // (any other failure is the device's: an error)
    check_info(kEigNoConvergence);
    std::vector<int64_t> args = {n, ptr(values.raw()), static_cast<int64_t>(check_.device())};
    launch(complex_kernel_, 1, args, op_.name().c_str());
    wo = device_copy(values.slice(0, 0, n, 1));
    *a.out[1] = c_order(vr, x.shape());
  }

  /// The call by the CPU's kernel on host copies, its results copied to the device: Eig where
  /// Xgeev refused its dtype, and what cuSOLVER's 32-bit counts cannot hold.
  void on_host(const KernelArgs& a) {
    if (!cpu_) cpu_ = get_backend("cpu").make_kernel(node_);
    std::vector<NDArray> ins, outs(a.out.size());
    for (const NDArray* x : a.in) ins.push_back(x->device().is_host() ? *x : x->to_device(Device::host()));
    std::vector<NDArray*> in, out;
    for (NDArray& x : ins) in.push_back(&x);
    for (NDArray& x : outs) out.push_back(&x);
    cpu_->run(KernelArgs{in, out});
    for (size_t i = 0; i < outs.size(); ++i) *a.out[i] = outs[i].to_device(Device::cuda());
  }

  /// Qr: geqrf of the column-major copy, R from its upper triangle, Q from orgqr over the
  /// reflectors (in an m x m buffer for 'complete'); 'raw': the factors as they are, and tau.
  void qr(const NDArray& x, const KernelArgs& a) {
    const int m = lapack_dim(op_, x.shape(0)), n = lapack_dim(op_, x.shape(1)), k = std::min(m, n);
    const QrMode mode = op_.attrs.qr_mode;
    const bool raw = mode == QrMode::Raw;
    const int rrows = mode == QrMode::Complete ? m : k, qcols = mode == QrMode::Complete ? m : k;
    // The reflectors' buffer: column-major m x max(qcols, n), A in its first n columns.
    const int wcols = mode == QrMode::R || raw ? n : std::max(qcols, n);
    NDArray w = NDArray::empty({wcols, m}, dt_, Device::cuda());
    if (x.size() > 0) {
      const NDArray xt = column_major(x);
      device_memory(w.device()).copy_on_device(w.raw(), xt.raw(), xt.nbytes());
    }
    NDArray tau = NDArray::empty({k}, dt_, Device::cuda());
    if (k > 0)
      by_dtype(dt_, [&]<class T>() {
        Solver s;
        int lwork = 0;
        check_cusolver(pick<T>(s->cusolverDnSgeqrf_bufferSize, s->cusolverDnDgeqrf_bufferSize)(s.handle(), m, n,
                                                                                               w.data<T>(), m, &lwork),
                       "cusolverDn<t>geqrf_bufferSize");
        NDArray ws = workspace(lwork);
        check_cusolver(pick<T>(s->cusolverDnSgeqrf, s->cusolverDnDgeqrf)(
                           s.handle(), m, n, w.data<T>(), m, tau.data<T>(), ws.data<T>(), lwork, info_.data<int>()),
                       "cusolverDn<t>geqrf");
      });
    if (raw) {  // numpy: h is the factored matrix transposed (the column-major buffer in C order), and tau
      *a.out[0] = w;
      *a.out[1] = tau;
      return;
    }
    NDArray& r = prepare_device_output(*a.out[mode == QrMode::R ? 0 : 1], Shape{rrows, n}, dt_);
    if (r.size() > 0) {
      std::vector<int64_t> args = {m, n, rrows, ptr(w.raw()), ptr(r.raw())};
      launch(r_kernel_, grid_for(r.size()), args, op_.name().c_str());
    }
    if (mode == QrMode::R) return;
    NDArray& q = prepare_device_output(*a.out[0], Shape{m, qcols}, dt_);
    if (q.size() == 0) return;
    if (k == 0) return fill(q, true);  // (no reflector: the identity, as orgqr gives)
    by_dtype(dt_, [&]<class T>() {
      Solver s;
      int lwork = 0;
      check_cusolver(pick<T>(s->cusolverDnSorgqr_bufferSize, s->cusolverDnDorgqr_bufferSize)(
                         s.handle(), m, qcols, k, w.data<T>(), m, tau.data<T>(), &lwork),
                     "cusolverDn<t>orgqr_bufferSize");
      NDArray ws = workspace(lwork);
      check_cusolver(
          pick<T>(s->cusolverDnSorgqr, s->cusolverDnDorgqr)(s.handle(), m, qcols, k, w.data<T>(), m, tau.data<T>(),
                                                            ws.data<T>(), lwork, info_.data<int>()),
          "cusolverDn<t>orgqr");
    });
    // Q's C order: the first qcols columns of the column-major buffer, transposed.
    q = device_copy(w.slice(0, 0, qcols, 1).transpose());
  }

  const Apply& node_;
  const Linalg& op_;
  DType dt_;
  KernelRef info_kernel_, tri_kernel_, sym_kernel_, diag_kernel_, eye_kernel_, det_kernel_, r_kernel_, scale_kernel_,
      rank_kernel_, sumsq_kernel_, f64_kernel_, from_f64_kernel_, colsum_kernel_, max_kernel_, axpy_kernel_,
      adddiag_kernel_, fill_kernel_, finite_kernel_, complex_kernel_;
  // Eig's host workspace, kept from call to call (a call's use of it is over by the next call of
  // this kernel: every call of a Linalg node waits for the device before it ends).
  std::vector<char> host_workspace_;
  std::unique_ptr<Kernel> cpu_;  // (on_host's)
  NDArray info_;                 // cuSOLVER's devInfo
  int64_t n_ = 0;                // the last call's order (to read a generalized Eigh's info)
  DeviceCheckBlock check_;
};

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
  const Cusolver& c = cusolver();
  return c.why.empty() && c.create_params && c.geev_buffer_size && c.geev;
}

bool cusolver_loadable(std::string* why) {
  const Cusolver& c = cusolver();
  if (why) *why = c.why;
  return c.why.empty();
}

void register_cuda_linalg_kernels() {
  register_kernel(kCudaBackend, typeid(Linalg), kernel_factory<LinalgKernel>(),
                  KernelTraits{.accepts = linalg_accepts,
                               .host_inputs_of =
                                   [](const Apply& node) {
                                     const auto& op = static_cast<const Linalg&>(*node.op);
                                     return op.kind == LinalgKind::Lstsq ? std::vector<int>{2} : std::vector<int>{};
                                   },
                               .device_checks = true});
}

}  // namespace hypatia::cuda
