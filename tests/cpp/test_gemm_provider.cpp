// The GEMM providers (OpenBLAS, oneDNN) behind the CPU's float32 products: each against the
// reference product on every transpose and beta, the `blas` flag, the measured choice, the
// OpenMP setting of the calling thread, and calls from several threads.
#include <cmath>
#include <optional>
#include <thread>

#include "hypatia/backends/cpu/blas_matmul.h"
#include "hypatia/backends/cpu/gemm_provider.h"
#include "test_util.h"

extern "C" int omp_get_max_threads(void);
extern "C" void omp_set_num_threads(int);

namespace hypatia {
namespace {
using testing::random_array;

/// Sets config().blas for a scope.
class BlasFlag {
 public:
  explicit BlasFlag(const std::string& v) : saved_(config().blas) { config().set("blas", v); }
  ~BlasFlag() { config().blas = saved_; }
  BlasFlag(const BlasFlag&) = delete;
  BlasFlag& operator=(const BlasFlag&) = delete;

 private:
  std::string saved_;
};

/// C (m, n) = alpha op(A) op(B) + beta C through one provider, A and B stored transposed when
/// asked, every matrix with a padded leading dimension; against reference_matmul.
void check_provider(const GemmProvider& p, int64_t m, int64_t n, int64_t k, bool ta, bool tb, float alpha, float beta) {
  const int64_t pad = 3;
  // Stored matrices: A is (m, k) or (k, m), B (k, n) or (n, k); each row padded by `pad`.
  const int64_t ar = ta ? k : m, ac = ta ? m : k, br = tb ? n : k, bc = tb ? k : n;
  NDArray a = random_array({ar, ac + pad}, DType::Float32, -1, 1, 1);
  NDArray b = random_array({br, bc + pad}, DType::Float32, -1, 1, 2);
  NDArray c0 = random_array({m, n + pad}, DType::Float32, -1, 1, 3);
  NDArray c = c0.copy();
  if (beta == 0.0f)  // C is not read: NaN garbage must not leak into the result
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) c.data<float>()[i * (n + pad) + j] = std::nanf("");
  p.sgemm(ta, tb, m, n, k, alpha, a.data<float>(), ac + pad, b.data<float>(), bc + pad, beta, c.data<float>(), n + pad);
  NDArray av = a.slice(1, 0, ac, 1), bv = b.slice(1, 0, bc, 1);
  NDArray want = c0.slice(1, 0, n, 1).copy();
  reference_matmul(ta ? av.transpose() : av, tb ? bv.transpose() : bv, want, alpha, beta);
  EXPECT_ALLCLOSE(c.slice(1, 0, n, 1), want, 1e-4, 1e-4)
      << p.name << " m n k " << m << " " << n << " " << k << " ta " << ta << " tb " << tb << " beta " << beta;
  // The padding after each row is untouched.
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = n; j < n + pad; ++j)
      ASSERT_EQ(c.data<float>()[i * (n + pad) + j], c0.data<float>()[i * (n + pad) + j]) << p.name;
}

TEST(BlasMatmul, EveryProviderMatchesTheReference) {
  for (const GemmProvider* p : {&openblas_gemm(), &onednn_gemm()})
    for (auto [m, n, k] : std::vector<std::array<int64_t, 3>>{{1, 1, 1}, {3, 5, 7}, {17, 33, 65}, {64, 48, 200}})
      for (bool ta : {false, true})
        for (bool tb : {false, true})
          for (float beta : {0.0f, 1.0f, -0.5f}) check_provider(*p, m, n, k, ta, tb, 1.5f, beta);
}

TEST(BlasMatmul, FlagForcesTheProvider) {
  {
    BlasFlag f("onednn");
    EXPECT_STREQ(sgemm_provider(10).name, "onednn");
    EXPECT_STREQ(sgemm_provider(int64_t{1} << 30).name, "onednn");
  }
  {
    BlasFlag f("openblas");
    EXPECT_STREQ(sgemm_provider(10).name, "openblas");
    EXPECT_STREQ(sgemm_provider(int64_t{1} << 30).name, "openblas");
  }
  EXPECT_NE(testing::error_of<ValueError>([] { config().set("blas", "mkl"); }).find("auto, onednn, openblas"),
            std::string::npos);
  EXPECT_EQ(config().get("blas"), "auto");
}

TEST(BlasMatmul, AutoChoosesTheMeasuredFasterProvider) {
  BlasFlag f("auto");
  const std::vector<GemmChoice> choices = gemm_choices();
  ASSERT_EQ(choices.size(), 3u);
  EXPECT_EQ(choices[0].size_class, "tiny");
  EXPECT_EQ(choices[1].size_class, "small");
  EXPECT_EQ(choices[2].size_class, "large");
  for (const GemmChoice& c : choices) {
    EXPECT_GT(c.openblas_gflops, 0.1) << c.size_class;
    EXPECT_GT(c.onednn_gflops, 0.1) << c.size_class;
    EXPECT_EQ(c.chosen, c.onednn_gflops > c.openblas_gflops ? "onednn" : "openblas") << c.size_class;
  }
  EXPECT_EQ(sgemm_provider(1).name, choices[0].chosen);
  for (size_t i = 0; i < choices.size(); ++i) {
    EXPECT_EQ(sgemm_provider(choices[i].max_macs).name, choices[i].chosen) << choices[i].size_class;
    if (i + 1 < choices.size()) {
      EXPECT_EQ(sgemm_provider(choices[i].max_macs + 1).name, choices[i + 1].chosen) << choices[i].size_class;
    }
  }
}

// A product of at least kShapeTrialMacs is decided per shape on its first call (each library
// timed on a scratch output), so that every call of the shape gives the same bits; small products
// and forced flags are never on trial.
TEST(BlasMatmul, AutoDecidesEachLargeShapeOnItsFirstCallAndKeepsIt) {
  BlasFlag f("auto");
  const int64_t m = 96, n = 80, k = 160;  // 1.2M multiply-adds: above the trial bound
  ASSERT_GE(m * n * k, kShapeTrialMacs);
  NDArray a = random_array({m, k}, DType::Float32, -1, 1, 5), b = random_array({n, k}, DType::Float32, -1, 1, 6);
  NDArray want = NDArray::zeros({m, n}, DType::Float32);
  reference_matmul(a, b.transpose(), want, 1.0, 0.0);
  auto decided = [&] {
    for (const GemmShapeChoice& c : gemm_shape_choices())
      if (c.m == m && c.n == n && c.k == k && !c.ta && c.tb) return std::optional<GemmShapeChoice>(c);
    return std::optional<GemmShapeChoice>();
  };
  ASSERT_FALSE(decided());
  NDArray first;
  for (int call = 0; call < 5; ++call) {
    NDArray c = NDArray::full({m, n}, DType::Float32, 7.0);
    cpu_matmul(a, b.transpose(), c, 1.0, 0.0);
    EXPECT_ALLCLOSE(c, want, 1e-4, 1e-4) << "call " << call;
    EXPECT_TRUE(decided()) << "call " << call;
    if (call == 0)
      first = c;
    else
      EXPECT_ALLCLOSE(c, first, 0, 0) << "call " << call << " differs from the first in its bits";
  }
  // A new shape whose first call accumulates (beta 1): the trials write scratch, never C.
  NDArray a90 = a.slice(0, 0, 90, 1);
  ASSERT_GE(90 * n * k, kShapeTrialMacs);
  NDArray w90 = NDArray::zeros({90, n}, DType::Float32);
  reference_matmul(a90, b.transpose(), w90, 1.0, 0.0);
  NDArray c2 = w90.copy();
  cpu_matmul(a90, b.transpose(), c2, 1.0, 1.0);
  for (int64_t i = 0; i < w90.size(); ++i) w90.data<float>()[i] *= 2;
  EXPECT_ALLCLOSE(c2, w90, 1e-4, 1e-4);
  const auto d = decided();
  ASSERT_TRUE(d);
  EXPECT_TRUE(std::isfinite(d->openblas_seconds) && std::isfinite(d->onednn_seconds));
  // The class's choice stays unless the other library was at least 5% faster.
  const bool base_onednn = d->base == "onednn";
  const double base_t = base_onednn ? d->onednn_seconds : d->openblas_seconds;
  const double other_t = base_onednn ? d->openblas_seconds : d->onednn_seconds;
  EXPECT_EQ(d->chosen == d->base, !(other_t < 0.95 * base_t)) << d->chosen << " base " << d->base;
  // Small products and forced flags: no trial record.
  {
    NDArray c = NDArray::empty({8, 8}, DType::Float32);
    for (int i = 0; i < 6; ++i) cpu_matmul(a.slice(0, 0, 8, 1), b.slice(0, 0, 8, 1).transpose(), c, 1.0, 0.0);
    BlasFlag forced("openblas");
    NDArray big = NDArray::empty({m, n}, DType::Float32);
    for (int i = 0; i < 6; ++i) cpu_matmul(a, b.transpose(), big, 1.0, 0.0);
    EXPECT_ALLCLOSE(big, want, 1e-4, 1e-4);
  }
  for (const GemmShapeChoice& c : gemm_shape_choices()) EXPECT_GE(c.m * c.n * c.k, kShapeTrialMacs);
}

// oneDNN (OpenMP in Debian's build) runs on the calling thread only and leaves the thread's own
// OpenMP setting as it found it.
TEST(BlasMatmul, OneDnnKeepsTheCallersOpenMpSetting) {
  const int before = omp_get_max_threads();
  omp_set_num_threads(3);
  check_provider(onednn_gemm(), 40, 50, 60, false, false, 1.0f, 0.0f);
  EXPECT_EQ(omp_get_max_threads(), 3);
  omp_set_num_threads(before);
}

// Products large enough to be cut into panels on the thread pool, under each flag, from several
// threads at once: each thread's result equals the reference.
TEST(BlasMatmul, ProvidersUnderThePoolAndFromSeveralThreads) {
  for (const char* flag : {"onednn", "openblas", "auto"}) {
    BlasFlag f(flag);
    const NDArray a = random_array({192, 160}, DType::Float32, -1, 1, 4);
    const NDArray b = random_array({160, 320}, DType::Float32, -1, 1, 5);
    NDArray want = NDArray::empty({192, 320}, DType::Float32);
    reference_matmul(a, b, want, 1.0, 0.0);
    std::vector<NDArray> got(4);
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t)
      threads.emplace_back([&, t] {
        got[t] = NDArray::empty({192, 320}, DType::Float32);
        cpu_matmul(t % 2 ? a : a.copy(), b, got[t], 1.0, 0.0);
      });
    for (auto& th : threads) th.join();
    for (int t = 0; t < 4; ++t) EXPECT_ALLCLOSE(got[t], want, 1e-4, 1e-4) << flag << " thread " << t;
  }
}

}  // namespace
}  // namespace hypatia
