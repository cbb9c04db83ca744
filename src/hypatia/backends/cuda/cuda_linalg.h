// The CUDA backend's Linalg kernel (internal to backends/cuda): cuSOLVER, loaded when first
// needed, with a handle per queue; the column-major work copies; the check block's failure codes;
// and the kernel, whose factorizations and solves (Cholesky, Solve, Inverse, Det, Eigh) are in
// cuda_linalg_kernels.cpp with its registration, and whose decompositions (Svd, Pinv, Lstsq, Qr,
// Eig) and Expm are in cuda_linalg_decompositions.cpp.
#pragma once

#include <cusolverDn.h>

#include <atomic>
#include <cstdint>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "hypatia/backends/backend.h"
#include "hypatia/backends/cuda/cuda_api.h"
#include "hypatia/backends/cuda/cuda_kernel_util.h"
#include "hypatia/core/error.h"
#include "hypatia/ops/linalg.h"

namespace hypatia::cuda::la {

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

/// The library, loaded on first use (never unloaded).
Cusolver& cusolver();

inline void check_cusolver(cusolverStatus_t s, const char* what) {
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

inline int64_t ptr(const void* p) { return static_cast<int64_t>(reinterpret_cast<uintptr_t>(p)); }

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
inline std::atomic<bool> g_geev_refused[2] = {false, false};  // (float32, float64)

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

inline int lapack_dim(const Op& op, int64_t n) {
  if (n > std::numeric_limits<int>::max() / 2)
    fail<ValueError>(op.name(), ": a dimension of ", n, " is past cuSOLVER's 32-bit index range");
  return static_cast<int>(n);
}

/// The column-major work copy of a matrix (a C-contiguous copy of its transpose), or of a vector.
inline NDArray column_major(const NDArray& x) { return device_copy(x.ndim() == 2 ? x.transpose() : x); }
/// The C-order result of a column-major work buffer of shape `like` (its transpose's copy).
inline NDArray c_order(const NDArray& w, const Shape& like) {
  if (like.size() == 1) return w;
  return device_copy(w.transpose());
}

class LinalgKernel final : public Kernel {
 public:
  explicit LinalgKernel(const Apply& node);
  void run(const KernelArgs& a) override;
  void raise_device_errors() override;

 private:
  /// A workspace of `n` elements of the dtype.
  NDArray workspace(int n, std::optional<DType> dt = std::nullopt) const;

  /// The info word into the check block (as `code`) when it is not zero.
  void check_info(Failure code);

  /// potrf of the column-major w, in place: the factor in its `lower` (or upper) triangle.
  void potrf(NDArray& w, int n, cublasFillMode_t uplo);
  void cholesky(NDArray& w, int n);

  /// syevd of the column-major symmetric w, in place: its eigenvectors in w's columns, the values
  /// (ascending) in `values`.
  void syevd(NDArray& w, NDArray& values, int n);

  /// sygvd (itype 1: A v = w B v) of the column-major symmetric w and positive definite b, in
  /// place: the eigenvectors in w's columns, the values (ascending) in `values`.
  void sygvd(NDArray& w, NDArray& b, NDArray& values, int n);

  /// getrf of the column-major w, in place: its LU factors and (returned) the pivots.
  NDArray getrf(NDArray& w, int n);

  /// getrf of the column-major w, then getrs of the column-major b (n x nrhs), in place.
  void lu_solve(NDArray& w, NDArray& b, int n, int nrhs);
  void solve(NDArray& w, NDArray& b, int n, int nrhs);

  /// Fills `out` (rows x cols, C order) with the identity (ones on the diagonal) or zeros.
  void fill(NDArray& out, bool identity);

  /// gesvd of the column-major M (m x n, m >= n, destroyed): S (n), and U (m x ucols) and VT
  /// (n x n) as column-major buffers (C-order shapes (ucols, m) and (n, n)) unless `uv` is false.
  void gesvd(NDArray& w, int m, int n, bool uv, bool full, NDArray& s, NDArray& u, NDArray& vt);

  /// Svd (U, s, Vt or s) and Pinv. cuSOLVER's gesvd takes m >= n: a wide matrix is decomposed as
  /// its transpose (A^T = U' S V'^T, so U = V' and Vt = U'^T), whose column-major copy is A's
  /// C-order one. Singular values descend; a singular vector's sign is the library's.
  void svd(const NDArray& x, const KernelArgs& a);

  /// C (column-major, ldc) = alpha op(A) op(B) + beta C through cuBLAS (m x n, inner k).
  void gemm(bool ta, bool tb, int m, int n, int k, double alpha, const NDArray& A, int lda, const NDArray& B, int ldb,
            double beta, NDArray& C, int ldc);

  /// The first `count` elements of u times 1/s[l], l = (t / div) % mod, where s[l] > rcond * s[0]
  /// (the largest), else 0: a column-major matrix's columns (div = rows) or rows (div = 1).
  void scale_by_inverse(NDArray& u, int64_t count, int64_t div, int64_t mod, const NDArray& s, double rcond);

  /// Lstsq (numpy's lstsq through gelsd): from the SVD, x = V diag(1/s) U^T b over the singular
  /// values above rcond * the largest (rcond < 0: eps * max(M, N)), their count (the rank), s, and
  /// the squared residual norms ||b - A x||^2 when the rank is N and M > N (an empty array
  /// otherwise: the rank is read on the host then, to size it).
  void lstsq(const NDArray& x, const NDArray& y, double rc, const KernelArgs& a);

  /// y += s x (double, `count` elements), and y's diagonal += s (n x n).
  void axpy(NDArray& y, double s, const NDArray& x);
  void add_diagonal(NDArray& y, double s);

  /// Expm as the CPU computes it (scipy's algorithm, Higham 2005: the Pade approximant of degree
  /// 3, 5, 7, 9 or 13 on A / 2^s, squared s times), in double, with cuBLAS products and cuSOLVER's
  /// LU; the 1-norm, which picks the degree and s, is read on the host.
  void expm(const NDArray& x, const KernelArgs& a);

  /// Eig of a real matrix through Xgeev with real types (W: the real parts, then the imaginary
  /// ones, as LAPACK's geev gives them; right eigenvectors of unit norm, as LAPACK's): a complex
  /// eigenvalue is refused on the device with the CPU's words (Hypatia has no complex dtype).
  void eig(const NDArray& x, const KernelArgs& a);

  /// The call by the CPU's kernel on host copies, its results copied to the device: Eig where
  /// Xgeev refused its dtype, and what cuSOLVER's 32-bit counts cannot hold.
  void on_host(const KernelArgs& a);

  /// Qr: geqrf of the column-major copy, R from its upper triangle, Q from orgqr over the
  /// reflectors (in an m x m buffer for 'complete'); 'raw': the factors as they are, and tau.
  void qr(const NDArray& x, const KernelArgs& a);

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

}  // namespace hypatia::cuda::la
