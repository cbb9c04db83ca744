// Kernels of Linalg: LAPACK (OpenBLAS's, through its Fortran symbols) in the input's precision,
// on a column-major copy of each input (the copies are O(n^2) beside the O(n^3) factorizations).
// The reference backend holds them and the CPU backend falls back to them: there is no second,
// naive implementation to check them against, so the tests compare with numpy and with
// identities (A A^-1 = I, L L^T = A, ...).
#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <limits>
#include <string>
#include <vector>

#include "hypatia/backends/expm_pade.h"
#include "hypatia/backends/reference/nnet_common.h"
#include "hypatia/backends/registry.h"
#include "hypatia/ops/linalg.h"

extern "C" {
// Fortran LAPACK (column-major; every argument by pointer; a hidden length per CHARACTER argument).
using lapack_int = int;
#define HYP_LAPACK_DECL(T, p)                                                                                         \
  void p##getrf_(const lapack_int* m, const lapack_int* n, T* a, const lapack_int* lda, lapack_int* ipiv,             \
                 lapack_int* info);                                                                                   \
  void p##getri_(const lapack_int* n, T* a, const lapack_int* lda, const lapack_int* ipiv, T* work,                   \
                 const lapack_int* lwork, lapack_int* info);                                                          \
  void p##getrs_(const char* trans, const lapack_int* n, const lapack_int* nrhs, const T* a, const lapack_int* lda,   \
                 const lapack_int* ipiv, T* b, const lapack_int* ldb, lapack_int* info, size_t);                      \
  void p##potrf_(const char* uplo, const lapack_int* n, T* a, const lapack_int* lda, lapack_int* info, size_t);       \
  void p##potrs_(const char* uplo, const lapack_int* n, const lapack_int* nrhs, const T* a, const lapack_int* lda,    \
                 T* b, const lapack_int* ldb, lapack_int* info, size_t);                                              \
  void p##sysv_(const char* uplo, const lapack_int* n, const lapack_int* nrhs, T* a, const lapack_int* lda,           \
                lapack_int* ipiv, T* b, const lapack_int* ldb, T* work, const lapack_int* lwork, lapack_int* info,    \
                size_t);                                                                                              \
  void p##trtrs_(const char* uplo, const char* trans, const char* diag, const lapack_int* n, const lapack_int* nrhs,  \
                 const T* a, const lapack_int* lda, T* b, const lapack_int* ldb, lapack_int* info, size_t, size_t,    \
                 size_t);                                                                                             \
  void p##syevd_(const char* jobz, const char* uplo, const lapack_int* n, T* a, const lapack_int* lda, T* w, T* work, \
                 const lapack_int* lwork, lapack_int* iwork, const lapack_int* liwork, lapack_int* info, size_t,      \
                 size_t);                                                                                             \
  void p##sygvd_(const lapack_int* itype, const char* jobz, const char* uplo, const lapack_int* n, T* a,              \
                 const lapack_int* lda, T* b, const lapack_int* ldb, T* w, T* work, const lapack_int* lwork,          \
                 lapack_int* iwork, const lapack_int* liwork, lapack_int* info, size_t, size_t);                      \
  void p##geev_(const char* jobvl, const char* jobvr, const lapack_int* n, T* a, const lapack_int* lda, T* wr, T* wi, \
                T* vl, const lapack_int* ldvl, T* vr, const lapack_int* ldvr, T* work, const lapack_int* lwork,       \
                lapack_int* info, size_t, size_t);                                                                    \
  void p##gesdd_(const char* jobz, const lapack_int* m, const lapack_int* n, T* a, const lapack_int* lda, T* s, T* u, \
                 const lapack_int* ldu, T* vt, const lapack_int* ldvt, T* work, const lapack_int* lwork,              \
                 lapack_int* iwork, lapack_int* info, size_t);                                                        \
  void p##geqrf_(const lapack_int* m, const lapack_int* n, T* a, const lapack_int* lda, T* tau, T* work,              \
                 const lapack_int* lwork, lapack_int* info);                                                          \
  void p##orgqr_(const lapack_int* m, const lapack_int* n, const lapack_int* k, T* a, const lapack_int* lda,          \
                 const T* tau, T* work, const lapack_int* lwork, lapack_int* info);                                   \
  void p##gelsd_(const lapack_int* m, const lapack_int* n, const lapack_int* nrhs, T* a, const lapack_int* lda, T* b, \
                 const lapack_int* ldb, T* s, const T* rcond, lapack_int* rank, T* work, const lapack_int* lwork,     \
                 lapack_int* iwork, lapack_int* info);
HYP_LAPACK_DECL(float, s)
HYP_LAPACK_DECL(double, d)
#undef HYP_LAPACK_DECL
}

namespace hypatia {
namespace {

using nnet_detail::dispatch_float;

// One name per routine for both precisions.
#define HYP_LAPACK_PAIR(name)          \
  struct name##_t {                    \
    template <class... A>              \
    static void call(float, A... a) {  \
      s##name##_(a...);                \
    }                                  \
    template <class... A>              \
    static void call(double, A... a) { \
      d##name##_(a...);                \
    }                                  \
  };
HYP_LAPACK_PAIR(getrf)
HYP_LAPACK_PAIR(getri)
HYP_LAPACK_PAIR(getrs)
HYP_LAPACK_PAIR(potrf)
HYP_LAPACK_PAIR(potrs)
HYP_LAPACK_PAIR(sysv)
HYP_LAPACK_PAIR(trtrs)
HYP_LAPACK_PAIR(syevd)
HYP_LAPACK_PAIR(sygvd)
HYP_LAPACK_PAIR(geev)
HYP_LAPACK_PAIR(gesdd)
HYP_LAPACK_PAIR(geqrf)
HYP_LAPACK_PAIR(orgqr)
HYP_LAPACK_PAIR(gelsd)
#undef HYP_LAPACK_PAIR
#define LAPACK(name, T, ...) name##_t::call(T{}, __VA_ARGS__)

/// A column-major (Fortran) matrix of T, the form LAPACK reads and writes.
template <class T>
struct FMat {
  lapack_int rows = 0, cols = 0;
  std::vector<T> a;
  FMat(lapack_int r, lapack_int c) : rows(r), cols(c), a(static_cast<size_t>(r) * c) {}
  T& operator()(lapack_int i, lapack_int j) { return a[static_cast<size_t>(j) * rows + i]; }
  T operator()(lapack_int i, lapack_int j) const { return a[static_cast<size_t>(j) * rows + i]; }
  T* data() { return a.data(); }
  lapack_int ld() const { return std::max<lapack_int>(1, rows); }
};

lapack_int checked_dim(const Linalg& op, int64_t n) {
  if (n > std::numeric_limits<lapack_int>::max() / 2)
    fail<ValueError>(op.name(), ": a dimension of ", n, " is past LAPACK's 32-bit index range");
  return static_cast<lapack_int>(n);
}

/// The matrix x (any layout, its dtype T) as a column-major copy; a vector as one column.
template <class T>
FMat<T> to_fortran(const Linalg& op, const NDArray& x) {
  const bool vec = x.ndim() == 1;
  FMat<T> f(checked_dim(op, x.shape(0)), vec ? 1 : checked_dim(op, x.shape(1)));
  const int64_t s0 = x.strides()[0] / static_cast<int64_t>(sizeof(T));
  const int64_t s1 = vec ? 0 : x.strides()[1] / static_cast<int64_t>(sizeof(T));
  const T* p = x.data<T>();
  for (lapack_int j = 0; j < f.cols; ++j)
    for (lapack_int i = 0; i < f.rows; ++i) f(i, j) = p[i * s0 + j * s1];
  return f;
}

/// Writes rows x cols of the column-major f (leading dimension f.rows) into out (C order).
template <class T>
void from_fortran(const FMat<T>& f, NDArray& out, lapack_int rows, lapack_int cols) {
  T* o = out.data<T>();
  for (lapack_int i = 0; i < rows; ++i)
    for (lapack_int j = 0; j < cols; ++j) o[static_cast<int64_t>(i) * cols + j] = f(i, j);
}

NDArray& output(const KernelArgs& args, int i, const Shape& shape, DType dt) {
  return prepare_output(*args.out[i], shape, dt);
}

void check_square(const Linalg& op, const NDArray& a) {
  if (a.shape(0) != a.shape(1)) fail<ValueError>(op.name(), ": expected a square matrix, got shape ", a.shape().str());
}

void check_info(const Linalg& op, lapack_int info, const char* routine) {
  if (info < 0) fail<InternalError>(op.name(), ": LAPACK's ", routine, " rejected argument ", -info);
}

// ---- the kernels, one per kind

template <class T>
void inverse(const Linalg& op, const KernelArgs& args) {
  const NDArray& x = *args.in[0];
  check_square(op, x);
  FMat<T> a = to_fortran<T>(op, x);
  const lapack_int n = a.rows, lda = a.ld();
  std::vector<lapack_int> ipiv(std::max(1, n));
  lapack_int info = 0;
  if (n > 0) {
    LAPACK(getrf, T, &n, &n, a.data(), &lda, ipiv.data(), &info);
    check_info(op, info, "getrf");
    if (info > 0)
      fail<ValueError>(op.name(), ": the matrix is singular (U[", info - 1, ", ", info - 1,
                       "] of its LU factorization is exactly zero)");
    T wq;
    lapack_int lwork = -1;
    LAPACK(getri, T, &n, a.data(), &lda, ipiv.data(), &wq, &lwork, &info);
    lwork = std::max<lapack_int>(1, static_cast<lapack_int>(wq));
    std::vector<T> work(lwork);
    LAPACK(getri, T, &n, a.data(), &lda, ipiv.data(), work.data(), &lwork, &info);
    check_info(op, info, "getri");
  }
  from_fortran(a, output(args, 0, x.shape(), x.dtype()), n, n);
}

template <class T>
void determinant(const Linalg& op, const KernelArgs& args) {
  const NDArray& x = *args.in[0];
  check_square(op, x);
  FMat<T> a = to_fortran<T>(op, x);
  const lapack_int n = a.rows, lda = a.ld();
  std::vector<lapack_int> ipiv(std::max(1, n));
  lapack_int info = 0;
  double d = 1;
  if (n > 0) {
    LAPACK(getrf, T, &n, &n, a.data(), &lda, ipiv.data(), &info);
    check_info(op, info, "getrf");
    for (lapack_int i = 0; i < n; ++i) {
      d *= a(i, i);
      if (ipiv[i] != i + 1) d = -d;
    }
  }
  output(args, 0, Shape{}, x.dtype()).data<T>()[0] = static_cast<T>(d);
}

template <class T>
void eigh(const Linalg& op, const KernelArgs& args) {
  const NDArray& x = *args.in[0];
  check_square(op, x);
  FMat<T> a = to_fortran<T>(op, x);
  const lapack_int n = a.rows, lda = a.ld();
  const char jobz = 'V', uplo = op.attrs.lower ? 'L' : 'U';
  std::vector<T> w(std::max(1, n));
  lapack_int info = 0;
  const bool generalized = args.in.size() == 2;
  if (generalized && args.in[1]->shape() != x.shape())  // (an empty A too)
    fail<ValueError>(op.name(), ": expected B of A's shape ", x.shape().str(), ", got ", args.in[1]->shape().str());
  if (n > 0) {
    T wq;
    lapack_int iwq, lwork = -1, liwork = -1;
    if (generalized) {
      const NDArray& y = *args.in[1];
      FMat<T> b = to_fortran<T>(op, y);
      const lapack_int itype = 1, ldb = b.ld();
      LAPACK(sygvd, T, &itype, &jobz, &uplo, &n, a.data(), &lda, b.data(), &ldb, w.data(), &wq, &lwork, &iwq, &liwork,
             &info, 1, 1);
      lwork = std::max<lapack_int>(1, static_cast<lapack_int>(wq));
      liwork = std::max<lapack_int>(1, iwq);
      std::vector<T> work(lwork);
      std::vector<lapack_int> iwork(liwork);
      LAPACK(sygvd, T, &itype, &jobz, &uplo, &n, a.data(), &lda, b.data(), &ldb, w.data(), work.data(), &lwork,
             iwork.data(), &liwork, &info, 1, 1);
      check_info(op, info, "sygvd");
      if (info > n)
        fail<ValueError>(op.name(), ": B is not positive definite (its leading minor of order ", info - n,
                         " is not positive)");
    } else {
      LAPACK(syevd, T, &jobz, &uplo, &n, a.data(), &lda, w.data(), &wq, &lwork, &iwq, &liwork, &info, 1, 1);
      lwork = std::max<lapack_int>(1, static_cast<lapack_int>(wq));
      liwork = std::max<lapack_int>(1, iwq);
      std::vector<T> work(lwork);
      std::vector<lapack_int> iwork(liwork);
      LAPACK(syevd, T, &jobz, &uplo, &n, a.data(), &lda, w.data(), work.data(), &lwork, iwork.data(), &liwork, &info, 1,
             1);
      check_info(op, info, "syevd");
    }
    if (info > 0) fail<ValueError>(op.name(), ": the eigenvalue algorithm did not converge (info ", info, ")");
  }
  NDArray& wo = output(args, 0, Shape{x.shape(0)}, x.dtype());
  std::copy(w.begin(), w.begin() + n, wo.data<T>());
  from_fortran(a, output(args, 1, x.shape(), x.dtype()), n, n);
}

template <class T>
void eig(const Linalg& op, const KernelArgs& args) {
  const NDArray& x = *args.in[0];
  check_square(op, x);
  FMat<T> a = to_fortran<T>(op, x);
  const lapack_int n = a.rows, lda = a.ld();
  FMat<T> vr(n, n);
  std::vector<T> wr(std::max(1, n)), wi(std::max(1, n));
  lapack_int info = 0;
  if (n > 0) {
    const char jobvl = 'N', jobvr = 'V';
    const lapack_int ldvl = 1, ldvr = vr.ld();
    T dummy, wq;
    lapack_int lwork = -1;
    LAPACK(geev, T, &jobvl, &jobvr, &n, a.data(), &lda, wr.data(), wi.data(), &dummy, &ldvl, vr.data(), &ldvr, &wq,
           &lwork, &info, 1, 1);
    lwork = std::max<lapack_int>(1, static_cast<lapack_int>(wq));
    std::vector<T> work(lwork);
    LAPACK(geev, T, &jobvl, &jobvr, &n, a.data(), &lda, wr.data(), wi.data(), &dummy, &ldvl, vr.data(), &ldvr,
           work.data(), &lwork, &info, 1, 1);
    check_info(op, info, "geev");
    if (info > 0) fail<ValueError>(op.name(), ": the QR algorithm did not converge (info ", info, ")");
    for (lapack_int i = 0; i < n; ++i)
      if (wi[i] != 0)
        fail<ValueError>(op.name(), ": eigenvalue ", i, " is complex (", wr[i], (wi[i] < 0 ? " - " : " + "),
                         std::abs(wi[i]), "j); Hypatia has no complex dtype (eigh handles symmetric matrices)");
  }
  NDArray& wo = output(args, 0, Shape{x.shape(0)}, x.dtype());
  std::copy(wr.begin(), wr.begin() + n, wo.data<T>());
  from_fortran(vr, output(args, 1, x.shape(), x.dtype()), n, n);
}

/// numpy's error for a matrix with a NaN or an infinity, whose SVD LAPACK would refuse (gesdd's
/// argument 4) or not converge on.
template <class T>
void require_finite(const Linalg& op, const FMat<T>& a) {
  for (const T v : a.a)
    if (!std::isfinite(v))
      fail<ValueError>(op.name(), ": the SVD did not converge (the matrix has a NaN or an infinity)");
}

/// gesdd on a copy of x: singular values s (descending), and U, Vt when `uv` (full or thin).
template <class T>
void svd_of(const Linalg& op, const NDArray& x, bool uv, bool full, std::vector<T>& s, FMat<T>& u, FMat<T>& vt) {
  FMat<T> a = to_fortran<T>(op, x);
  const lapack_int m = a.rows, n = a.cols, k = std::min(m, n), lda = a.ld();
  require_finite(op, a);
  s.assign(std::max(1, k), T(0));
  const char jobz = !uv ? 'N' : full ? 'A' : 'S';
  u = FMat<T>(m, uv ? (full ? m : k) : 1);
  vt = FMat<T>(uv ? (full ? n : k) : 1, n);
  if (k == 0) {  // an empty matrix: U and Vt are identities of their (full) shapes
    for (lapack_int i = 0; i < std::min(u.rows, u.cols); ++i) u(i, i) = 1;
    for (lapack_int i = 0; i < std::min(vt.rows, vt.cols); ++i) vt(i, i) = 1;
    return;
  }
  const lapack_int ldu = u.ld(), ldvt = vt.ld();
  std::vector<lapack_int> iwork(8 * static_cast<size_t>(k));
  T wq;
  lapack_int lwork = -1, info = 0;
  LAPACK(gesdd, T, &jobz, &m, &n, a.data(), &lda, s.data(), u.data(), &ldu, vt.data(), &ldvt, &wq, &lwork, iwork.data(),
         &info, 1);
  lwork = std::max<lapack_int>(1, static_cast<lapack_int>(wq));
  std::vector<T> work(lwork);
  LAPACK(gesdd, T, &jobz, &m, &n, a.data(), &lda, s.data(), u.data(), &ldu, vt.data(), &ldvt, work.data(), &lwork,
         iwork.data(), &info, 1);
  check_info(op, info, "gesdd");
  if (info > 0) fail<ValueError>(op.name(), ": the SVD did not converge (info ", info, ")");
}

template <class T>
void svd(const Linalg& op, const KernelArgs& args) {
  const NDArray& x = *args.in[0];
  std::vector<T> s;
  FMat<T> u(0, 0), vt(0, 0);
  const bool uv = op.attrs.compute_uv, full = op.attrs.full_matrices;
  svd_of<T>(op, x, uv, full, s, u, vt);
  const int64_t k = std::min(x.shape(0), x.shape(1));
  NDArray& so = output(args, uv ? 1 : 0, Shape{k}, x.dtype());
  std::copy(s.begin(), s.begin() + k, so.data<T>());
  if (!uv) return;
  from_fortran(u, output(args, 0, Shape{u.rows, u.cols}, x.dtype()), u.rows, u.cols);
  from_fortran(vt, output(args, 2, Shape{vt.rows, vt.cols}, x.dtype()), vt.rows, vt.cols);
}

template <class T>
void pinv(const Linalg& op, const KernelArgs& args) {
  const NDArray& x = *args.in[0];
  std::vector<T> s;
  FMat<T> u(0, 0), vt(0, 0);
  svd_of<T>(op, x, true, false, s, u, vt);
  const lapack_int m = u.rows, n = vt.cols, k = std::min(m, n);
  const double rcond = op.attrs.rcond < 0 ? 1e-15 : op.attrs.rcond;
  const double cutoff = k > 0 ? rcond * static_cast<double>(*std::max_element(s.begin(), s.begin() + k)) : 0;
  // pinv = V diag(1/s) U^T: out[j, i] = sum_l vt[l, j] u[i, l] / s[l] over kept l.
  NDArray& out = output(args, 0, Shape{n, m}, x.dtype());
  T* o = out.data<T>();
  std::fill(o, o + static_cast<int64_t>(n) * m, T(0));
  for (lapack_int l = 0; l < k; ++l) {
    if (!(s[l] > cutoff)) continue;
    const double inv = 1.0 / s[l];
    for (lapack_int j = 0; j < n; ++j) {
      const double v = vt(l, j) * inv;
      for (lapack_int i = 0; i < m; ++i) o[static_cast<int64_t>(j) * m + i] += static_cast<T>(v * u(i, l));
    }
  }
}

template <class T>
void qr(const Linalg& op, const KernelArgs& args) {
  const NDArray& x = *args.in[0];
  FMat<T> a = to_fortran<T>(op, x);
  const lapack_int m = a.rows, n = a.cols, k = std::min(m, n), lda = a.ld();
  std::vector<T> tau(std::max(1, k));
  lapack_int info = 0;
  auto query_run = [&](auto&& f) {
    T wq;
    lapack_int lwork = -1;
    f(&wq, &lwork);
    lwork = std::max<lapack_int>(1, static_cast<lapack_int>(wq));
    std::vector<T> work(lwork);
    f(work.data(), &lwork);
  };
  if (k > 0) {
    query_run([&](T* w, lapack_int* lw) { LAPACK(geqrf, T, &m, &n, a.data(), &lda, tau.data(), w, lw, &info); });
    check_info(op, info, "geqrf");
  }
  const QrMode mode = op.attrs.qr_mode;
  if (mode == QrMode::Raw) {  // numpy: h is the factored matrix transposed (its Fortran buffer in C order)
    NDArray& h = output(args, 0, Shape{n, m}, x.dtype());
    std::copy(a.a.begin(), a.a.end(), h.data<T>());
    NDArray& t = output(args, 1, Shape{k}, x.dtype());
    std::copy(tau.begin(), tau.begin() + k, t.data<T>());
    return;
  }
  const lapack_int rrows = mode == QrMode::Complete ? m : k;
  NDArray& r = output(args, mode == QrMode::R ? 0 : 1, Shape{rrows, n}, x.dtype());
  T* ro = r.data<T>();
  for (lapack_int i = 0; i < rrows; ++i)
    for (lapack_int j = 0; j < n; ++j) ro[static_cast<int64_t>(i) * n + j] = j >= i && i < m ? a(i, j) : T(0);
  if (mode == QrMode::R) return;
  const lapack_int qcols = mode == QrMode::Complete ? m : k;
  FMat<T> q(m, std::max(qcols, n));
  for (lapack_int j = 0; j < n; ++j)
    for (lapack_int i = 0; i < m; ++i) q(i, j) = a(i, j);
  if (qcols > 0 && m > 0) {
    const lapack_int ldq = q.ld();
    query_run(
        [&](T* w, lapack_int* lw) { LAPACK(orgqr, T, &m, &qcols, &k, q.data(), &ldq, tau.data(), w, lw, &info); });
    check_info(op, info, "orgqr");
  }
  from_fortran(q, output(args, 0, Shape{m, qcols}, x.dtype()), m, qcols);
}

template <class T>
void lstsq(const Linalg& op, const KernelArgs& args) {
  const NDArray &x = *args.in[0], &y = *args.in[1];
  const bool vec = y.ndim() == 1;
  if (y.shape(0) != x.shape(0))
    fail<ValueError>(op.name(), ": a has ", x.shape(0), " rows but b has ", y.shape(0), " (shapes ", x.shape().str(),
                     " and ", y.shape().str(), ")");
  FMat<T> a = to_fortran<T>(op, x);
  const lapack_int m = a.rows, n = a.cols, k = std::min(m, n), lda = a.ld();
  const lapack_int nrhs = vec ? 1 : checked_dim(op, y.shape(1));
  FMat<T> b(std::max(m, n), nrhs);
  FMat<T> yb = to_fortran<T>(op, y);
  for (lapack_int j = 0; j < nrhs; ++j)
    for (lapack_int i = 0; i < m; ++i) b(i, j) = yb(i, j);
  require_finite(op, a);
  double rc = args.in[2]->get_flat(0);
  if (rc < 0) rc = std::numeric_limits<T>::epsilon() * std::max(m, n);
  // (gelsd, as LAPACK's xLALSD, takes rcond, in the dtype, outside (0, 1) as the unit roundoff.)
  T rcond = static_cast<T>(rc);
  if (!(rcond > 0 && rcond < 1)) rcond = std::numeric_limits<T>::epsilon() / 2;
  std::vector<T> s(std::max(1, k));
  lapack_int rank = 0, info = 0;
  if (k > 0 && nrhs > 0) {
    const lapack_int ldb = b.ld();
    T wq;
    lapack_int iwq = 0, lwork = -1;
    LAPACK(gelsd, T, &m, &n, &nrhs, a.data(), &lda, b.data(), &ldb, s.data(), &rcond, &rank, &wq, &lwork, &iwq, &info);
    lwork = std::max<lapack_int>(1, static_cast<lapack_int>(wq));
    std::vector<T> work(lwork);
    std::vector<lapack_int> iwork(std::max<lapack_int>(1, iwq));
    LAPACK(gelsd, T, &m, &n, &nrhs, a.data(), &lda, b.data(), &ldb, s.data(), &rcond, &rank, work.data(), &lwork,
           iwork.data(), &info);
    check_info(op, info, "gelsd");
    if (info > 0) fail<ValueError>(op.name(), ": the SVD did not converge (info ", info, ")");
  } else if (k > 0) {
    std::vector<T> sv;
    FMat<T> u(0, 0), vt(0, 0);
    svd_of<T>(op, x, false, false, sv, u, vt);
    std::copy(sv.begin(), sv.end(), s.begin());
    for (lapack_int i = 0; i < k; ++i) rank += s[i] > rcond * s[0];
  }
  NDArray& xo = output(args, 0, vec ? Shape{n} : Shape{n, nrhs}, x.dtype());
  from_fortran(b, xo, n, nrhs);
  // numpy: the squared residual norms when rank == n and m > n, else an empty array.
  const bool res = rank == n && m > n;
  NDArray& ro = output(args, 1, Shape{res ? (vec ? 1 : static_cast<int64_t>(nrhs)) : 0}, x.dtype());
  if (res)
    for (lapack_int j = 0; j < nrhs; ++j) {
      double acc = 0;
      for (lapack_int i = n; i < m; ++i) acc += static_cast<double>(b(i, j)) * b(i, j);
      ro.data<T>()[j] = static_cast<T>(acc);
    }
  output(args, 2, Shape{}, DType::Int64).data<int64_t>()[0] = rank;
  NDArray& so = output(args, 3, Shape{k}, x.dtype());
  std::copy(s.begin(), s.begin() + k, so.data<T>());
}

template <class T>
void cholesky(const Linalg& op, const KernelArgs& args) {
  const NDArray& x = *args.in[0];
  check_square(op, x);
  FMat<T> a = to_fortran<T>(op, x);
  const lapack_int n = a.rows, lda = a.ld();
  const char uplo = op.attrs.lower ? 'L' : 'U';
  lapack_int info = 0;
  if (n > 0) LAPACK(potrf, T, &uplo, &n, a.data(), &lda, &info, 1);
  check_info(op, info, "potrf");
  if (info > 0 && op.attrs.nan_on_error) {
    output(args, 0, x.shape(), x.dtype()).fill(std::numeric_limits<double>::quiet_NaN());
    return;
  }
  if (info > 0)
    fail<ValueError>(op.name(), ": the matrix is not positive definite (its leading minor of order ", info,
                     " is not positive)");
  for (lapack_int j = 0; j < n; ++j)  // zero the triangle potrf left untouched
    for (lapack_int i = 0; i < n; ++i)
      if (op.attrs.lower ? j > i : i > j) a(i, j) = 0;
  from_fortran(a, output(args, 0, x.shape(), x.dtype()), n, n);
}

template <class T>
void solve(const Linalg& op, const KernelArgs& args) {
  const NDArray &x = *args.in[0], &y = *args.in[1];
  check_square(op, x);
  if (y.shape(0) != x.shape(0))
    fail<ValueError>(op.name(), ": A is ", x.shape().str(), " but b has ", y.shape(0), " rows (b's shape ",
                     y.shape().str(), ")");
  FMat<T> a = to_fortran<T>(op, x);
  FMat<T> b = to_fortran<T>(op, y);
  const lapack_int n = a.rows, nrhs = b.cols, lda = a.ld(), ldb = b.ld();
  const char uplo = op.attrs.lower ? 'L' : 'U';
  lapack_int info = 0;
  if (n > 0 && nrhs > 0) {
    switch (op.attrs.structure) {
      case SolveStructure::General: {
        std::vector<lapack_int> ipiv(n);
        LAPACK(getrf, T, &n, &n, a.data(), &lda, ipiv.data(), &info);
        check_info(op, info, "getrf");
        if (info > 0)
          fail<ValueError>(op.name(), ": A is singular (U[", info - 1, ", ", info - 1, "] is exactly zero)");
        const char tr = 'N';
        LAPACK(getrs, T, &tr, &n, &nrhs, a.data(), &lda, ipiv.data(), b.data(), &ldb, &info, 1);
        check_info(op, info, "getrs");
        break;
      }
      case SolveStructure::Symmetric: {
        std::vector<lapack_int> ipiv(n);
        T wq;
        lapack_int lwork = -1;
        LAPACK(sysv, T, &uplo, &n, &nrhs, a.data(), &lda, ipiv.data(), b.data(), &ldb, &wq, &lwork, &info, 1);
        lwork = std::max<lapack_int>(1, static_cast<lapack_int>(wq));
        std::vector<T> work(lwork);
        LAPACK(sysv, T, &uplo, &n, &nrhs, a.data(), &lda, ipiv.data(), b.data(), &ldb, work.data(), &lwork, &info, 1);
        check_info(op, info, "sysv");
        if (info > 0)
          fail<ValueError>(op.name(), ": A is singular (D[", info - 1, ", ", info - 1, "] is exactly zero)");
        break;
      }
      case SolveStructure::PositiveDefinite:
        LAPACK(potrf, T, &uplo, &n, a.data(), &lda, &info, 1);
        check_info(op, info, "potrf");
        if (info > 0)
          fail<ValueError>(op.name(), ": A is not positive definite (its leading minor of order ", info,
                           " is not positive)");
        LAPACK(potrs, T, &uplo, &n, &nrhs, a.data(), &lda, b.data(), &ldb, &info, 1);
        check_info(op, info, "potrs");
        break;
      case SolveStructure::Triangular: {
        const char tr = op.attrs.trans ? 'T' : 'N', dg = op.attrs.unit_diagonal ? 'U' : 'N';
        LAPACK(trtrs, T, &uplo, &tr, &dg, &n, &nrhs, a.data(), &lda, b.data(), &ldb, &info, 1, 1, 1);
        check_info(op, info, "trtrs");
        if (info > 0) fail<ValueError>(op.name(), ": A is singular (its diagonal element ", info - 1, " is zero)");
        break;
      }
    }
  }
  from_fortran(b, output(args, 0, y.shape(), x.dtype()), n, nrhs);
}

/// C = A B for column-major n x n matrices (BLAS).
template <class T>
void matmul(const FMat<T>& a, const FMat<T>& b, FMat<T>& c) {
  const int n = a.rows;
  if constexpr (std::is_same_v<T, float>)
    cblas_sgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a.a.data(), n, b.a.data(), n, 0.0f,
                c.a.data(), n);
  else
    cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0, a.a.data(), n, b.a.data(), n, 0.0, c.a.data(),
                n);
}

/// scipy.linalg.expm's algorithm (Higham 2005): the Pade approximant of degree 13 on A / 2^s, with
/// s chosen from the 1-norm, squared s times; degrees 3-9 for small norms. Computed in double.
template <class T>
void expm(const Linalg& op, const KernelArgs& args) {
  const NDArray& x = *args.in[0];
  check_square(op, x);
  FMat<double> a = to_fortran<double>(op, x.dtype() == DType::Float64 ? x : x.astype(DType::Float64));
  const lapack_int n = a.rows;
  NDArray& out = output(args, 0, x.shape(), x.dtype());
  if (n == 0) return;
  double norm1 = 0;
  for (lapack_int j = 0; j < n; ++j) {
    double c = 0;
    for (lapack_int i = 0; i < n; ++i) c += std::abs(a(i, j));
    norm1 = std::isnan(c) || c > norm1 ? c : norm1;  // (a NaN entry: a NaN result)
  }
  if (!std::isfinite(norm1)) {
    std::fill(out.data<T>(), out.data<T>() + static_cast<int64_t>(n) * n, std::numeric_limits<T>::quiet_NaN());
    return;
  }
  FMat<double> ident(n, n);
  for (lapack_int i = 0; i < n; ++i) ident(i, i) = 1;
  auto axpy = [&](FMat<double>& dst, double s, const FMat<double>& m) {
    for (size_t i = 0; i < dst.a.size(); ++i) dst.a[i] += s * m.a[i];
  };
  FMat<double> u(n, n), v(n, n), tmp(n, n);
  int squarings = 0;
  FMat<double> a2(n, n);
  const int deg_index = expm_pade::degree_index(norm1);
  if (deg_index >= 0) {
    // U = A sum_{odd} b_k A^{k-1}, V = sum_{even} b_k A^k.
    const int deg = expm_pade::kDegrees[deg_index];
    const double* b = expm_pade::kB[deg_index];
    matmul(a, a, a2);
    FMat<double> pw = ident, u_acc(n, n);
    for (int k = 0; k <= deg; k += 2) {
      axpy(v, b[k], pw);
      axpy(u_acc, b[k + 1], pw);
      if (k + 2 <= deg) {
        matmul(pw, a2, tmp);
        pw = tmp;
      }
    }
    matmul(a, u_acc, u);
  } else {
    squarings = expm_pade::squarings(norm1);
    const double scale = std::ldexp(1.0, -squarings);
    for (double& e : a.a) e *= scale;
    FMat<double> a4(n, n), a6(n, n);
    matmul(a, a, a2);
    matmul(a2, a2, a4);
    matmul(a2, a4, a6);
    // dst += b13[k] A6 + b13[k - 2] A4 + b13[k - 4] A2
    auto add_powers = [&](FMat<double>& dst, int k) {
      axpy(dst, expm_pade::kB13[k], a6);
      axpy(dst, expm_pade::kB13[k - 2], a4);
      axpy(dst, expm_pade::kB13[k - 4], a2);
    };
    // U = A [A6 (b13 A6 + b11 A4 + b9 A2) + b7 A6 + b5 A4 + b3 A2 + b1 I]
    FMat<double> t1(n, n);
    add_powers(t1, 13);
    matmul(a6, t1, tmp);
    add_powers(tmp, 7);
    axpy(tmp, expm_pade::kB13[1], ident);
    matmul(a, tmp, u);
    // V = A6 (b12 A6 + b10 A4 + b8 A2) + b6 A6 + b4 A4 + b2 A2 + b0 I
    FMat<double> t2(n, n);
    add_powers(t2, 12);
    matmul(a6, t2, v);
    add_powers(v, 6);
    axpy(v, expm_pade::kB13[0], ident);
  }
  // (V - U) R = (V + U)
  FMat<double> p = v, q = v;
  axpy(p, 1.0, u);
  axpy(q, -1.0, u);
  std::vector<lapack_int> ipiv(n);
  lapack_int info = 0;
  const lapack_int ld = n;
  LAPACK(getrf, double, &n, &n, q.data(), &ld, ipiv.data(), &info);
  check_info(op, info, "getrf");
  if (info > 0) fail<ValueError>(op.name(), ": the Pade denominator is singular (the input overflows)");
  const char tr = 'N';
  LAPACK(getrs, double, &tr, &n, &n, q.data(), &ld, ipiv.data(), p.data(), &ld, &info, 1);
  check_info(op, info, "getrs");
  for (int s = 0; s < squarings; ++s) {
    matmul(p, p, tmp);
    p = tmp;
  }
  T* o = out.data<T>();
  for (lapack_int i = 0; i < n; ++i)
    for (lapack_int j = 0; j < n; ++j) o[static_cast<int64_t>(i) * n + j] = static_cast<T>(p(i, j));
}

void linalg_kernel(const Linalg& op, const KernelArgs& args) {
  dispatch_float(args.in[0]->dtype(), op.name(), [&](auto tag) {
    using T = decltype(tag);
    switch (op.kind) {
      case LinalgKind::Inverse:
        return inverse<T>(op, args);
      case LinalgKind::Det:
        return determinant<T>(op, args);
      case LinalgKind::Eig:
        return eig<T>(op, args);
      case LinalgKind::Eigh:
        return eigh<T>(op, args);
      case LinalgKind::Svd:
        return svd<T>(op, args);
      case LinalgKind::Qr:
        return qr<T>(op, args);
      case LinalgKind::Lstsq:
        return lstsq<T>(op, args);
      case LinalgKind::Pinv:
        return pinv<T>(op, args);
      case LinalgKind::Cholesky:
        return cholesky<T>(op, args);
      case LinalgKind::Solve:
        return solve<T>(op, args);
      case LinalgKind::Expm:
        return expm<T>(op, args);
    }
  });
}

}  // namespace

void register_linalg_kernels() { register_simple_kernel<Linalg>(kReferenceBackend, &linalg_kernel); }

}  // namespace hypatia
