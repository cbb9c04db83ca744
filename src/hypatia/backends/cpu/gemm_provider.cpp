// OpenBLAS and oneDNN sgemm behind GemmProvider, and the measured choice between them.
//
// Both are called single-threaded (OpenBLAS through openblas_single_threaded(), set at registration;
// oneDNN, built on OpenMP in Debian, with the calling thread's OpenMP thread count set to 1 for
// the call and restored after it, so a user's own OpenMP code keeps its setting). oneDNN has no
// float64 GEMM: float64 products stay with OpenBLAS.
#include "hypatia/backends/cpu/gemm_provider.h"

#include <cblas.h>
#include <oneapi/dnnl/dnnl.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstring>
#include <limits>
#include <map>
#include <mutex>
#include <tuple>

#include "hypatia/backends/cpu/onednn_threads.h"
#include "hypatia/backends/cpu/thread_pool.h"
#include "hypatia/core/config.h"
#include "hypatia/core/error.h"

namespace hypatia {
namespace {

void openblas_sgemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
                    const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, static_cast<blasint>(m),
              static_cast<blasint>(n), static_cast<blasint>(k), alpha, a, static_cast<blasint>(lda), b,
              static_cast<blasint>(ldb), beta, c, static_cast<blasint>(ldc));
}

void onednn_sgemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
                  const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  OneOmpThread one;
  const dnnl_status_t st = dnnl_sgemm(ta ? 'T' : 'N', tb ? 'T' : 'N', m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  if (st != dnnl_success)
    fail<Error>("Gemm (oneDNN dnnl_sgemm): status ", static_cast<int>(st), " for m=", m, " n=", n, " k=", k,
                " lda=", lda, " ldb=", ldb, " ldc=", ldc, " trans_a=", ta, " trans_b=", tb,
                " (set blas=openblas to use OpenBLAS)");
}

const GemmProvider kOpenBlas{"openblas", &openblas_sgemm};
const GemmProvider kOneDnn{"onednn", &onednn_sgemm};

/// Size classes of one GEMM call, each timed on one representative shape. Calls of up to 2^21
/// multiply-adds are single tasks (kGemmTaskWork in blas_cpu.cpp): an RNN step, an MLP's last
/// layer, small panels; larger calls are the panels of the big products. The tiny ones (the
/// matrices of a batched product, up to 32^3) are a class of their own: there a call's fixed cost
/// is the product's (oneDNN's sgemm took 330 ns for 8 x 8 x 8, OpenBLAS's 44, numpy's loop 45),
/// and the small class's shape, where oneDNN wins, chose the slower one.
struct SizeClass {
  const char* name;
  int64_t max_macs;
  int64_t m, n, k;
  int reps;     ///< calls per timed round
  bool pooled;  ///< timed as the panels of a large product are run: one call per pool thread at once
};
constexpr std::array<SizeClass, 3> kClasses{{
    {"tiny", int64_t{1} << 15, 16, 16, 16, 512, false},
    {"small", int64_t{1} << 21, 32, 256, 128, 16, false},
    {"large", std::numeric_limits<int64_t>::max(), 256, 256, 512, 1, true},
}};
constexpr int kRounds = 5;

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

/// Times NN and TN products of the class's shape on both providers, rounds interleaved so that a
/// burst of load hits both; each provider's best round counts. A pooled class runs one product
/// per pool thread at once (the panels of one large product, sharing A; memory bandwidth and
/// caches shared as in a real call).
GemmChoice measure(const SizeClass& sc) {
  const int64_t m = sc.m, n = sc.n, k = sc.k;
  const int threads = sc.pooled ? std::max(1, parallel_threads()) : 1;
  const int64_t ldb = n * threads;
  std::vector<float> a(static_cast<size_t>(m * k)), b(static_cast<size_t>(k * ldb)), c(static_cast<size_t>(m * ldb));
  for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<float>(i % 7) * 0.25f - 0.5f;
  for (size_t i = 0; i < b.size(); ++i) b[i] = static_cast<float>(i % 5) * 0.125f - 0.25f;
  const GemmProvider* providers[2] = {&kOpenBlas, &kOneDnn};
  auto round = [&](const GemmProvider& p) {
    const double t0 = now_seconds();
    for (int r = 0; r < sc.reps; ++r)
      parallel_for(threads, threads, [&](int64_t t) {
        p.sgemm(false, false, m, n, k, 1.0f, a.data(), k, b.data() + t * n, ldb, 0.0f, c.data() + t * n, ldb);
        p.sgemm(true, false, m, n, k, 1.0f, a.data(), m, b.data() + t * n, ldb, 0.0f, c.data() + t * n, ldb);
      });
    return now_seconds() - t0;
  };
  for (const GemmProvider* p : providers) round(*p);  // warm-up: oneDNN generates its kernels here
  double best[2] = {std::numeric_limits<double>::infinity(), std::numeric_limits<double>::infinity()};
  for (int r = 0; r < kRounds; ++r)
    for (int i = 0; i < 2; ++i) best[i] = std::min(best[i], round(*providers[i]));
  const double flop = 2.0 * 2.0 * static_cast<double>(m * n * k) * sc.reps * threads;
  GemmChoice ch{sc.name, sc.max_macs, m, n, k, flop / best[0] * 1e-9, flop / best[1] * 1e-9, ""};
  ch.chosen = best[1] < best[0] ? kOneDnn.name : kOpenBlas.name;
  return ch;
}

struct Measured {
  std::once_flag once;
  GemmChoice choice;
  const GemmProvider* provider = nullptr;
};

std::array<Measured, kClasses.size()>& measured() {
  static std::array<Measured, kClasses.size()> m;
  return m;
}

const GemmProvider& auto_choice(size_t cls) {
  Measured& e = measured()[cls];
  std::call_once(e.once, [&] {
    e.choice = measure(kClasses[cls]);
    e.provider = e.choice.chosen == kOneDnn.name ? &kOneDnn : &kOpenBlas;
  });
  return *e.provider;
}

size_t class_of(int64_t macs) {
  size_t i = 0;
  while (macs > kClasses[i].max_macs) ++i;
  return i;
}

/// One shape's decision: each library's best trial time and the choice.
struct ShapeTrial {
  double best[2] = {std::numeric_limits<double>::infinity(), std::numeric_limits<double>::infinity()};
  int base = 0;  ///< the class's choice [openblas, onednn], kept unless the other is clearly faster
  const GemmProvider* chosen = nullptr;
};
/// The other library must beat the class's choice by this factor to take a shape: near-ties keep
/// one library for the class's products (alternating libraries between the products of one step
/// keeps both libraries' packing buffers warm: the MLP step ran 13-18% slower mixed than on
/// oneDNN alone while each of its shapes timed within 2% either way).
constexpr double kSwitchMargin = 0.95;
using ShapeKey = std::tuple<bool, bool, int64_t, int64_t, int64_t, int64_t>;

struct ShapeTrials {
  std::mutex mu;
  std::map<ShapeKey, ShapeTrial> by_shape;
};
ShapeTrials& shape_trials() {
  static ShapeTrials t;
  return t;
}

int index_of(const GemmProvider* p) { return p == &kOneDnn ? 1 : 0; }

}  // namespace

const GemmProvider& sgemm_pick(bool ta, bool tb, int64_t m, int64_t n, int64_t k, int64_t tasks,
                               const std::function<double(const GemmProvider&)>& time_product) {
  const int64_t macs = m * n * k;
  const GemmProvider& base = sgemm_provider(macs / std::max<int64_t>(tasks, 1));
  if (config().blas != "auto" || macs < kShapeTrialMacs) return base;
  ShapeTrials& st = shape_trials();
  const ShapeKey key{ta, tb, m, n, k, tasks};
  {
    std::lock_guard<std::mutex> lock(st.mu);
    auto it = st.by_shape.find(key);
    if (it != st.by_shape.end()) return *it->second.chosen;
    if (st.by_shape.size() >= kMaxTrialShapes) return base;
  }
  // Decide now, outside the lock (the trials run on the pool); two threads meeting a new shape at
  // once both time it and the first to finish decides for both.
  const GemmProvider* lib[2] = {&kOpenBlas, &kOneDnn};
  const int b = index_of(&base), other = 1 - b;
  time_product(base);  // cold: page faults, caches
  double best[2] = {std::numeric_limits<double>::infinity(), std::numeric_limits<double>::infinity()};
  for (int r = 0; r < kShapeTrials; ++r)
    for (int i : {other, b}) best[i] = std::min(best[i], time_product(*lib[i]));
  std::lock_guard<std::mutex> lock(st.mu);
  ShapeTrial& t = st.by_shape[key];
  if (!t.chosen) {
    t.best[0] = best[0];
    t.best[1] = best[1];
    t.base = b;
    t.chosen = best[other] < kSwitchMargin * best[b] ? lib[other] : &base;
  }
  return *t.chosen;
}

std::vector<GemmShapeChoice> gemm_shape_choices() {
  ShapeTrials& st = shape_trials();
  std::lock_guard<std::mutex> lock(st.mu);
  std::vector<GemmShapeChoice> out;
  for (const auto& [key, t] : st.by_shape) {
    if (!t.chosen) continue;
    const auto& [ta, tb, m, n, k, tasks] = key;
    out.push_back(
        {ta, tb, m, n, k, tasks, t.best[0], t.best[1], t.base == 1 ? kOneDnn.name : kOpenBlas.name, t.chosen->name});
  }
  return out;
}

void openblas_single_threaded() {
  static const bool once = [] {
    openblas_set_num_threads(1);
    return true;
  }();
  (void)once;
}

const GemmProvider& openblas_gemm() { return kOpenBlas; }
const GemmProvider& onednn_gemm() { return kOneDnn; }

const GemmProvider& sgemm_provider(int64_t macs) {
  const std::string& flag = config().blas;
  if (flag == "openblas") return kOpenBlas;
  if (flag == "onednn") return kOneDnn;
  return auto_choice(class_of(macs));
}

std::vector<GemmChoice> gemm_choices() {
  std::vector<GemmChoice> out;
  for (size_t i = 0; i < kClasses.size(); ++i) {
    auto_choice(i);
    out.push_back(measured()[i].choice);
  }
  return out;
}

}  // namespace hypatia
