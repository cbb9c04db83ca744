// The libraries behind the CPU's matrix products: OpenBLAS and oneDNN behind one interface, the
// faster one for a product's size class chosen by measurement (or forced with the `blas` flag).
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace hypatia {

/// One library's row-major GEMM, C = alpha op(A) op(B) + beta C, run on the calling thread only:
/// Hypatia's thread pool supplies the threads (one call per output panel, blas_cpu.cpp), so a
/// provider never starts threads of its own. C is not read when beta == 0.
struct GemmProvider {
  const char* name;
  void (*sgemm)(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
                const float* b, int64_t ldb, float beta, float* c, int64_t ldc);
};

/// OpenBLAS (its BLAS and its LAPACK) single-threaded, once per process: Hypatia's thread pool
/// supplies the threads. Set when the backends register, before any kernel runs: a LAPACK call
/// made before it ran on OpenBLAS's own threads, beside the pool's, with other blocking (its first
/// results differed in the last bits from the same call's later ones).
void openblas_single_threaded();

const GemmProvider& openblas_gemm();
const GemmProvider& onednn_gemm();

/// The provider for one float32 GEMM call of `macs` multiply-adds, as config().blas says:
/// "openblas", "onednn", or "auto": the faster of the two for the call's size class, timed once
/// per process the first time a call of that class is made (a representative shape of the class,
/// min over interleaved rounds; the large class as panels, one per pool thread at once, as large
/// products run).
const GemmProvider& sgemm_provider(int64_t macs);

/// The provider for one float32 product m x n x k (ta, tb: A, B transposed) cut into `tasks`
/// panels, as config().blas says. Under "auto", a product of at least kShapeTrialMacs
/// multiply-adds is decided per shape on its first call, before the product is computed:
/// `time_product(provider)` runs the product with that library into a scratch output and returns
/// its wall seconds; after one cold run, each library runs kShapeTrials times, interleaved, and the
/// other library takes the shape only when its best time beats the size class's choice by 5%.
/// Every call of a shape then runs one library: a function gives the same bits on every call (when
/// the trials were the user's own calls, alternating libraries, the first calls' results differed
/// in rounding; DebugMode's repeated-run check found it). Forced flags and small products use the
/// class's choice and never call `time_product`.
const GemmProvider& sgemm_pick(bool ta, bool tb, int64_t m, int64_t n, int64_t k, int64_t tasks,
                               const std::function<double(const GemmProvider&)>& time_product);
constexpr int64_t kShapeTrialMacs = int64_t{1} << 20;
constexpr int kShapeTrials = 2;

/// A shape decided by its trials.
struct GemmShapeChoice {
  bool ta, tb;
  int64_t m, n, k, tasks;
  double openblas_seconds, onednn_seconds;  ///< each library's best timed product
  std::string base;                         ///< the size class's choice
  std::string chosen;
};
/// The shapes decided so far in this process (at most kMaxTrialShapes are tracked; later shapes
/// use their class's choice).
std::vector<GemmShapeChoice> gemm_shape_choices();
constexpr size_t kMaxTrialShapes = 512;

/// What "auto" measured for one size class.
struct GemmChoice {
  std::string size_class;  ///< "tiny", "small" or "large"
  int64_t max_macs;        ///< calls up to this many multiply-adds belong to the class
  int64_t m, n, k;         ///< the shape that was timed (NN and TN; per thread for the large class)
  double openblas_gflops, onednn_gflops;
  std::string chosen;
};

/// The measured choice of every size class (measuring the classes not yet used).
std::vector<GemmChoice> gemm_choices();

}  // namespace hypatia
