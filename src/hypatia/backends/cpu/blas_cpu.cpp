// The CPU matrix product: OpenBLAS (sdot/ddot, sgemv/dgemv, sger/dger, dgemm) for floats, and for
// float32 GEMMs the provider (OpenBLAS or oneDNN) that gemm_provider.h chooses. They run single-threaded; large
// products are cut into panels of the output (row or column blocks of C, ranges of y or of A's rows, pieces of a dot)
// that run as thread pool tasks, so a product tolerates a descheduled thread like Hypatia's own kernels
// (thread_pool.h).
#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdint>
#include <memory>
#include <type_traits>
#include <vector>

#include "hypatia/backends/cpu/blas_matmul.h"
#include "hypatia/backends/cpu/gemm_provider.h"
#include "hypatia/backends/cpu/thread_pool.h"

namespace hypatia {
namespace {

// A matrix operand as BLAS sees it (row-major): the stored matrix is the operand itself (NoTrans)
// or its transpose (Trans), with leading dimension ld; `hold` keeps a contiguous copy alive.
template <class T>
struct MatRef {
  const T* p;
  CBLAS_TRANSPOSE trans;
  blasint ld;
  NDArray hold;
};

// A vector operand: pointer and positive increment (`hold` keeps a copy alive).
template <class T>
struct VecRef {
  const T* p;
  blasint inc;
  NDArray hold;
};

// Whether a byte stride is usable by BLAS: positive, whole elements, at least min_elems, fits blasint.
bool blas_stride(int64_t bytes, int64_t isz, int64_t min_elems) {
  return bytes > 0 && bytes % isz == 0 && bytes / isz >= min_elems && bytes / isz <= INT_MAX;
}

template <class T>
bool aligned(const NDArray& a) {
  return reinterpret_cast<uintptr_t>(a.raw()) % alignof(T) == 0;
}

// Leading dimension of a 2-d array laid out row-major with unit stride along dim 1 (strides of
// length-1 dims do not matter), or 0 when the layout does not fit BLAS.
template <class T>
blasint row_major_ld(const NDArray& a) {
  const int64_t r = a.shape(0), c = a.shape(1), isz = sizeof(T);
  if (!aligned<T>(a)) return 0;
  if (c != 1 && a.strides()[1] != isz) return 0;
  if (r == 1) return static_cast<blasint>(std::max<int64_t>(c, 1));
  return blas_stride(a.strides()[0], isz, std::max<int64_t>(c, 1)) ? static_cast<blasint>(a.strides()[0] / isz) : 0;
}

// Folds a transposed layout into the trans flag; copies layouts BLAS cannot read.
template <class T>
MatRef<T> as_mat(const NDArray& a) {
  if (blasint ld = row_major_ld<T>(a)) return {a.data<T>(), CblasNoTrans, ld, {}};
  if (blasint ld = row_major_ld<T>(a.transpose())) return {a.data<T>(), CblasTrans, ld, {}};
  NDArray c = a.copy();
  return {c.data<T>(), CblasNoTrans, static_cast<blasint>(std::max<int64_t>(a.shape(1), 1)), c};
}

// Negative and zero strides are copied (BLAS reads a negative increment from the other end).
template <class T>
VecRef<T> as_vec(const NDArray& v) {
  if (aligned<T>(v) && v.shape(0) <= 1) return {v.data<T>(), 1, {}};
  if (aligned<T>(v) && blas_stride(v.strides()[0], sizeof(T), 1))
    return {v.data<T>(), static_cast<blasint>(v.strides()[0] / static_cast<int64_t>(sizeof(T))), {}};
  NDArray c = v.copy();
  return {c.data<T>(), 1, c};
}

float blas_dot(blasint n, const float* x, blasint ix, const float* y, blasint iy) {
  return cblas_sdot(n, x, ix, y, iy);
}
double blas_dot(blasint n, const double* x, blasint ix, const double* y, blasint iy) {
  return cblas_ddot(n, x, ix, y, iy);
}
void blas_gemv(CBLAS_TRANSPOSE t, blasint m, blasint n, float alpha, const float* a, blasint lda, const float* x,
               blasint ix, float beta, float* y, blasint iy) {
  cblas_sgemv(CblasRowMajor, t, m, n, alpha, a, lda, x, ix, beta, y, iy);
}
void blas_gemv(CBLAS_TRANSPOSE t, blasint m, blasint n, double alpha, const double* a, blasint lda, const double* x,
               blasint ix, double beta, double* y, blasint iy) {
  cblas_dgemv(CblasRowMajor, t, m, n, alpha, a, lda, x, ix, beta, y, iy);
}
void blas_ger(blasint m, blasint n, float alpha, const float* x, blasint ix, const float* y, blasint iy, float* a,
              blasint lda) {
  cblas_sger(CblasRowMajor, m, n, alpha, x, ix, y, iy, a, lda);
}
void blas_ger(blasint m, blasint n, double alpha, const double* x, blasint ix, const double* y, blasint iy, double* a,
              blasint lda) {
  cblas_dger(CblasRowMajor, m, n, alpha, x, ix, y, iy, a, lda);
}
void blas_gemm(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, blasint m, blasint n, blasint k, double alpha, const double* a,
               blasint lda, const double* b, blasint ldb, double beta, double* c, blasint ldc) {
  cblas_dgemm(CblasRowMajor, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

/// A GEMM worth a task: about 2M multiply-adds (~40 us on one core), so a task's start
/// (claiming it, waking a worker) and its own packing of the operands stay small beside it.
constexpr int64_t kGemmTaskWork = int64_t{1} << 20;
/// The same for the memory-bound products (gemv, ger, dot): 64K matrix elements, as for the
/// elementwise kernels (parallel_task_count).
constexpr int64_t kStreamTaskWork = int64_t{1} << 16;
/// GEMM tasks per thread: one. Each GEMM task packs its own copy of the shared operand (1000^3 in
/// 8 column panels repacks the 4 MB left operand 8 times: 20-30% slower than OpenBLAS's own two
/// threads on the 2-core VM; 2 per thread still ~15% slower on seed000's 784x500 layers, 1 per
/// thread as fast). Under load the back-off in thread_pool.cpp, not finer panels, keeps a
/// descheduled helper from holding the call up.
constexpr int64_t kBlasTasksPerThread = 1;
/// Panel widths are multiples of this (OpenBLAS's micro-kernels work on 16- to 32-wide blocks).
constexpr int64_t kPanelAlign = 64;

/// Tasks for a product of `work` multiply-adds (`per_task` of them at least per task) whose output
/// splits along `len`: 1 (run it directly) for small products or one thread.
int64_t blas_tasks(int64_t work, int64_t per_task, int64_t len, int threads) {
  if (threads <= 1) return 1;
  return std::max<int64_t>(1, std::min({work / per_task, int64_t{threads} * kBlasTasksPerThread, len / kPanelAlign}));
}

/// Runs body(lo, hi) for `tasks` consecutive panels of [0, len), bounds at multiples of
/// kPanelAlign (the last panel takes the rest), on the thread pool.
template <class Body>
void for_panels(int64_t len, int64_t tasks, int threads, const Body& body) {
  if (tasks <= 1) return body(int64_t{0}, len);
  const int64_t units = (len + kPanelAlign - 1) / kPanelAlign;
  parallel_for(tasks, threads, [&](int64_t t) {
    const int64_t lo = std::min(len, units * t / tasks * kPanelAlign);
    const int64_t hi = t + 1 == tasks ? len : std::min(len, units * (t + 1) / tasks * kPanelAlign);
    if (hi > lo) body(lo, hi);
  });
}

/// y = alpha op(A) x + beta y (row-major A of rows x cols), y cut into ranges.
template <class T>
void gemv_tasks(CBLAS_TRANSPOSE t, blasint rows, blasint cols, T alpha, const T* a, blasint lda, const T* x, blasint ix,
                T beta, T* y, blasint iy) {
  const bool nt = t == CblasNoTrans;
  const int threads = parallel_threads();
  const int64_t tasks = blas_tasks(int64_t{rows} * cols, kStreamTaskWork, nt ? rows : cols, threads);
  for_panels(nt ? rows : cols, tasks, threads, [&](int64_t lo, int64_t hi) {
    const blasint len = static_cast<blasint>(hi - lo);
    if (nt)
      blas_gemv(t, len, cols, alpha, a + lo * lda, lda, x, ix, beta, y + lo * iy, iy);
    else
      blas_gemv(t, rows, len, alpha, a + lo, lda, x, ix, beta, y + lo * iy, iy);
  });
}

/// C = alpha op(A) op(B) + beta C (row-major), C cut into column blocks (or row blocks when it is
/// taller than wide): each task is an independent GEMM on a panel of C.
template <class T>
void gemm_tasks(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, blasint m, blasint n, blasint k, T alpha, const T* a,
                blasint lda, const T* b, blasint ldb, T beta, T* c, blasint ldc) {
  const int threads = parallel_threads();
  const bool by_cols = n >= m;
  const int64_t tasks = blas_tasks(int64_t{m} * n * k, kGemmTaskWork, by_cols ? n : m, threads);
  // The product, on panels of C (or of a scratch output of ldc n for the provider's trials).
  const auto run_panels = [&](const auto& gemm, T* cc, blasint ldcc) {
    for_panels(by_cols ? n : m, tasks, threads, [&](int64_t lo, int64_t hi) {
      const blasint len = static_cast<blasint>(hi - lo);
      if (by_cols)
        gemm(m, len, a, tb == CblasNoTrans ? b + lo : b + lo * ldb, cc + lo, ldcc);
      else
        gemm(len, n, ta == CblasNoTrans ? a + lo * lda : a + lo, b, cc + lo * ldcc, ldcc);
    });
  };
  if constexpr (std::is_same_v<float, T>) {
    // float32: the provider (OpenBLAS or oneDNN) chosen for this product (gemm_provider.h); a new
    // large shape is timed on each first, into scratch.
    std::unique_ptr<float[]> scratch;
    const GemmProvider& sp = sgemm_pick(ta == CblasTrans, tb == CblasTrans, m, n, k, tasks, [&](const GemmProvider& p) {
      if (!scratch) scratch.reset(new float[static_cast<size_t>(m) * n]);
      const auto t0 = std::chrono::steady_clock::now();
      run_panels(
          [&](blasint mm, blasint nn, const T* pa, const T* pb, T* pc, blasint l) {
            p.sgemm(ta == CblasTrans, tb == CblasTrans, mm, nn, k, alpha, pa, lda, pb, ldb, 0.0f, pc, l);
          },
          scratch.get(), n);
      return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    });
    run_panels(
        [&](blasint mm, blasint nn, const T* pa, const T* pb, T* pc, blasint l) {
          sp.sgemm(ta == CblasTrans, tb == CblasTrans, mm, nn, k, alpha, pa, lda, pb, ldb, beta, pc, l);
        },
        c, ldc);
  } else {
    run_panels([&](blasint mm, blasint nn, const T* pa, const T* pb, T* pc,
                   blasint l) { blas_gemm(ta, tb, mm, nn, k, alpha, pa, lda, pb, ldb, beta, pc, l); },
               c, ldc);
  }
}

/// A += alpha x y^T (row-major m x n), A cut into row blocks.
template <class T>
void ger_tasks(blasint m, blasint n, T alpha, const T* x, blasint ix, const T* y, blasint iy, T* a, blasint lda) {
  const int threads = parallel_threads();
  const int64_t tasks = blas_tasks(int64_t{m} * n, kStreamTaskWork, m, threads);
  for_panels(m, tasks, threads, [&](int64_t lo, int64_t hi) {
    blas_ger(static_cast<blasint>(hi - lo), n, alpha, x + lo * ix, ix, y, iy, a + lo * lda, lda);
  });
}

/// x . y, cut into pieces whose partial sums are added in order.
template <class T>
T dot_tasks(blasint n, const T* x, blasint ix, const T* y, blasint iy) {
  const int threads = parallel_threads();
  const int64_t tasks = blas_tasks(n, kStreamTaskWork, n, threads);
  if (tasks <= 1) return blas_dot(n, x, ix, y, iy);
  std::vector<T> part(tasks);
  const int64_t units = (int64_t{n} + kPanelAlign - 1) / kPanelAlign;
  parallel_for(tasks, threads, [&](int64_t t) {
    const int64_t lo = std::min<int64_t>(n, units * t / tasks * kPanelAlign);
    const int64_t hi = t + 1 == tasks ? n : std::min<int64_t>(n, units * (t + 1) / tasks * kPanelAlign);
    part[t] = hi > lo ? blas_dot(static_cast<blasint>(hi - lo), x + lo * ix, ix, y + lo * iy, iy) : T(0);
  });
  T r = 0;
  for (T v : part) r += v;
  return r;
}

template <class T>
void matmul_blas(const NDArray& A, const NDArray& B, const NDArray& C, double alpha, double beta) {
  const int64_t M = C.shape(0), N = C.shape(1), K = A.shape(1);
  if (M == 0 || N == 0) return;
  // K == 0 is beta * C (BLAS would reject the leading dimensions); huge dims exceed blasint.
  if (K == 0 || M > INT_MAX || N > INT_MAX || K > INT_MAX) return reference_matmul(A, B, C, alpha, beta);
  const blasint ldc = row_major_ld<T>(C);
  if (ldc == 0) {
    // A column-major C is the row-major transpose: C^T = B^T A^T. Other layouts go through a copy.
    if (row_major_ld<T>(C.transpose())) return matmul_blas<T>(B.transpose(), A.transpose(), C.transpose(), alpha, beta);
    NDArray tmp = beta != 0 ? C.copy() : NDArray::empty(C.shape(), C.dtype());
    matmul_blas<T>(A, B, tmp, alpha, beta);
    C.assign(tmp);
    return;
  }
  T* c = C.data<T>();
  const T a = static_cast<T>(alpha), b = static_cast<T>(beta);
  const blasint m = static_cast<blasint>(M), n = static_cast<blasint>(N), k = static_cast<blasint>(K);
  if (M == 1 && N == 1) {
    VecRef<T> x = as_vec<T>(A.select(0, 0)), y = as_vec<T>(B.select(1, 0));
    const T r = dot_tasks(k, x.p, x.inc, y.p, y.inc);
    c[0] = beta != 0 ? a * r + b * c[0] : a * r;
    return;
  }
  if (N == 1) {  // C[:, 0] = alpha A·B[:, 0] + beta C[:, 0]
    MatRef<T> ma = as_mat<T>(A);
    VecRef<T> x = as_vec<T>(B.select(1, 0));
    if (beta == 0)  // BLAS may scale NaN garbage by 0 instead of overwriting it
      for (int64_t i = 0; i < M; ++i) c[i * ldc] = T(0);
    const bool nt = ma.trans == CblasNoTrans;
    gemv_tasks(ma.trans, nt ? m : k, nt ? k : m, a, ma.p, ma.ld, x.p, x.inc, b, c, ldc);
    return;
  }
  if (M == 1) {  // C[0, :] = alpha B^T·A[0, :] + beta C[0, :]
    MatRef<T> mb = as_mat<T>(B);
    VecRef<T> x = as_vec<T>(A.select(0, 0));
    if (beta == 0) std::fill(c, c + N, T(0));
    const bool nt = mb.trans == CblasNoTrans;
    gemv_tasks(nt ? CblasTrans : CblasNoTrans, nt ? k : n, nt ? n : k, a, mb.p, mb.ld, x.p, x.inc, b, c, 1);
    return;
  }
  if (K == 1 && beta == 1) {  // rank-1 update (Ger)
    VecRef<T> x = as_vec<T>(A.select(1, 0)), y = as_vec<T>(B.select(0, 0));
    ger_tasks(m, n, a, x.p, x.inc, y.p, y.inc, c, ldc);
    return;
  }
  MatRef<T> ma = as_mat<T>(A), mb = as_mat<T>(B);
  gemm_tasks(ma.trans, mb.trans, m, n, k, a, ma.p, ma.ld, mb.p, mb.ld, b, c, ldc);
}

/// Products of at most this many multiply-adds each go through cpu_batched_matmul's one loop.
constexpr int64_t kSmallBatchedMacs = 32 * 32 * 32;
/// Multiply-adds per element of the threading threshold (parallel_worth counts elementwise
/// elements): a small product's multiply-add costs about an eighth of an add's element.
constexpr int64_t kMacsPerElement = 8;

template <class T>
bool batched_blas(const NDArray& X, const NDArray& Y, const NDArray& Z) {
  const int64_t batch = Z.shape(0), M = Z.shape(1), N = Z.shape(2), K = X.shape(2);
  if (batch < 2 || M == 0 || N == 0 || K == 0 || M * N * K > kSmallBatchedMacs) return false;
  // One layout for every matrix: batch 0's operands as BLAS takes them, and whole-element batch
  // strides (a layout BLAS cannot take goes per matrix, through copies).
  const MatRef<T> ma = as_mat<T>(X.select(0, 0)), mb = as_mat<T>(Y.select(0, 0));
  const blasint ldc = row_major_ld<T>(Z.select(0, 0));
  const int64_t isz = sizeof(T);
  if (ma.hold.valid() || mb.hold.valid() || ldc == 0 || X.strides()[0] % isz || Y.strides()[0] % isz ||
      Z.strides()[0] % isz)
    return false;
  const int64_t sx = X.strides()[0] / isz, sy = Y.strides()[0] / isz, sz = Z.strides()[0] / isz;
  const blasint m = static_cast<blasint>(M), n = static_cast<blasint>(N), k = static_cast<blasint>(K);
  const bool ta = ma.trans == CblasTrans, tb = mb.trans == CblasTrans;
  T* z = Z.data<T>();
  // The provider before the tasks: its first use times the size class, which must not run inside
  // one task while the others wait (or on a loaded machine).
  const GemmProvider* provider = std::is_same_v<T, float> ? &sgemm_provider(M * N * K) : nullptr;
  auto run = [&](int64_t lo, int64_t hi) {
    if constexpr (std::is_same_v<T, float>) {
      const GemmProvider& p = *provider;
      for (int64_t b = lo; b < hi; ++b)
        p.sgemm(ta, tb, m, n, k, 1.0f, ma.p + b * sx, ma.ld, mb.p + b * sy, mb.ld, 0.0f, z + b * sz, ldc);
    } else {
      for (int64_t b = lo; b < hi; ++b)
        cblas_dgemm(CblasRowMajor, ma.trans, mb.trans, m, n, k, 1.0, ma.p + b * sx, ma.ld, mb.p + b * sy, mb.ld, 0.0,
                    z + b * sz, ldc);
    }
  };
  const int64_t work = batch * M * N * K / kMacsPerElement;
  const int threads = parallel_worth(work) ? parallel_threads() : 1;
  if (threads == 1) {
    run(0, batch);
  } else {
    parallel_ranges(batch, parallel_task_count(work, threads), threads, run);
  }
  return true;
}

}  // namespace

bool cpu_batched_matmul(const NDArray& X, const NDArray& Y, const NDArray& Z) {
  if (X.ndim() != 3 || Y.ndim() != 3 || Z.ndim() != 3 || X.dtype() != Z.dtype() || Y.dtype() != Z.dtype()) return false;
  openblas_single_threaded();
  if (Z.dtype() == DType::Float32) return batched_blas<float>(X, Y, Z);
  if (Z.dtype() == DType::Float64) return batched_blas<double>(X, Y, Z);
  return false;
}

void cpu_matmul(const NDArray& A, const NDArray& B, const NDArray& C, double alpha, double beta) {
  openblas_single_threaded();
  switch (C.dtype()) {
    case DType::Float32:
      return matmul_blas<float>(A, B, C, alpha, beta);
    case DType::Float64:
      return matmul_blas<double>(A, B, C, alpha, beta);
    default:
      return reference_matmul(A, B, C, alpha, beta);
  }
}

}  // namespace hypatia
