// float32 matrix products through Hypatia's CPU product (cpu_matmul: the provider blas=auto
// measured, or forced to OpenBLAS / oneDNN, cut into panels on Hypatia's thread pool) against the
// two libraries called directly with their own threads (OpenBLAS's pthreads, oneDNN's OpenMP),
// in the same run. Shape sets: 1000^3; the eight GEMMs of a 784-500-500-10 MLP training step at
// batch 256; the per-step products of an RNN (batch 32, hidden 256: forward and both gradients);
// the RNN's products over its whole sequence (the input projection and the weights' gradients).
#include <cblas.h>
#include <oneapi/dnnl/dnnl.h>

#include <array>
#include <thread>

#include "bench_util.h"
#include "hypatia/backends/cpu/blas_matmul.h"
#include "hypatia/backends/cpu/gemm_provider.h"

extern "C" void omp_set_num_threads(int);

namespace hypatia::bench {
namespace {

struct Product {
  bool ta, tb;
  NDArray a, b, c;  // a, b stored as op() says; c (m, n)
  int64_t m, n, k;
};

/// (m, k, n, trans_a, trans_b) per product.
using ShapeSet = std::vector<std::tuple<int64_t, int64_t, int64_t, bool, bool>>;

const std::vector<std::pair<std::string, ShapeSet>>& shape_sets() {
  static const std::vector<std::pair<std::string, ShapeSet>> s = {
      {"1000", {{1000, 1000, 1000, false, false}}},
      {"mlp",
       {{256, 784, 500, false, false},
        {256, 500, 500, false, false},
        {256, 500, 10, false, false},
        {784, 256, 500, true, false},
        {500, 256, 500, true, false},
        {500, 256, 10, true, false},
        {256, 500, 500, false, true},
        {256, 10, 500, false, true}}},
      {"rnn_step", {{32, 256, 256, false, false}, {32, 256, 256, false, true}, {256, 32, 256, true, false}}},
      {"rnn_seq", {{3200, 256, 256, false, false}, {256, 3200, 256, true, false}, {256, 3200, 256, true, false}}},
  };
  return s;
}

std::vector<Product>& products(int set) {
  static std::array<std::vector<Product>, 4> all;
  std::vector<Product>& p = all[set];
  if (p.empty()) {
    uint64_t seed = 1;
    for (auto [m, k, n, ta, tb] : shape_sets()[set].second)
      p.push_back({ta, tb, random_f32(ta ? Shape{k, m} : Shape{m, k}, -1, 1, seed++),
                   random_f32(tb ? Shape{n, k} : Shape{k, n}, -1, 1, seed++), NDArray::empty({m, n}, DType::Float32), m,
                   n, k});
  }
  return p;
}

double flops(int set) {
  double f = 0;
  for (auto [m, k, n, ta, tb] : shape_sets()[set].second) f += 2.0 * m * n * k;
  return f;
}

void set_flops(benchmark::State& state, int set) {
  state.counters["GFLOP/s"] = benchmark::Counter(flops(set) * static_cast<double>(state.iterations()),
                                                 benchmark::Counter::kIsRate, benchmark::Counter::kIs1000);
}

void hypatia_products(benchmark::State& state, const char* flag) {
  const int set = static_cast<int>(state.range(0));
  const std::string saved = config().blas;
  config().set("blas", flag);
  for (Product& p : products(set)) cpu_matmul(p.ta ? p.a.transpose() : p.a, p.tb ? p.b.transpose() : p.b, p.c, 1, 0);
  for (auto _ : state)
    for (Product& p : products(set)) cpu_matmul(p.ta ? p.a.transpose() : p.a, p.tb ? p.b.transpose() : p.b, p.c, 1, 0);
  config().blas = saved;
  set_flops(state, set);
}
void BM_hypatia_auto(benchmark::State& s) { hypatia_products(s, "auto"); }
void BM_hypatia_openblas(benchmark::State& s) { hypatia_products(s, "openblas"); }
void BM_hypatia_onednn(benchmark::State& s) { hypatia_products(s, "onednn"); }

const int kThreads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));

// The libraries with their own threading. cpu_matmul sets OpenBLAS to one thread once per process;
// the raw benchmarks give it all threads for their loop and set it back.
void BM_raw_openblas(benchmark::State& state) {
  const int set = static_cast<int>(state.range(0));
  {  // cpu_matmul's one-time single-thread setting happens here, not inside the loop
    NDArray t = random_f32({2, 2}, -1, 1, 9), o = NDArray::empty({2, 2}, DType::Float32);
    cpu_matmul(t, t, o, 1, 0);
  }
  openblas_set_num_threads(kThreads);
  for (auto _ : state)
    for (Product& p : products(set))
      cblas_sgemm(CblasRowMajor, p.ta ? CblasTrans : CblasNoTrans, p.tb ? CblasTrans : CblasNoTrans,
                  static_cast<blasint>(p.m), static_cast<blasint>(p.n), static_cast<blasint>(p.k), 1.0f,
                  p.a.data<float>(), static_cast<blasint>(p.a.shape(1)), p.b.data<float>(),
                  static_cast<blasint>(p.b.shape(1)), 0.0f, p.c.data<float>(), static_cast<blasint>(p.n));
  openblas_set_num_threads(1);
  set_flops(state, set);
}

void BM_raw_onednn(benchmark::State& state) {
  const int set = static_cast<int>(state.range(0));
  omp_set_num_threads(kThreads);
  for (auto _ : state)
    for (Product& p : products(set))
      dnnl_sgemm(p.ta ? 'T' : 'N', p.tb ? 'T' : 'N', p.m, p.n, p.k, 1.0f, p.a.data<float>(), p.a.shape(1),
                 p.b.data<float>(), p.b.shape(1), 0.0f, p.c.data<float>(), p.n);
  set_flops(state, set);
}

void shapes(benchmark::internal::Benchmark* b) {
  for (int i = 0; i < static_cast<int>(shape_sets().size()); ++i) b->Arg(i);
  b->Unit(benchmark::kMicrosecond)->UseRealTime();
}
BENCHMARK(BM_raw_openblas)->Apply(shapes);
BENCHMARK(BM_raw_onednn)->Apply(shapes);
BENCHMARK(BM_hypatia_auto)->Apply(shapes);
BENCHMARK(BM_hypatia_openblas)->Apply(shapes);
BENCHMARK(BM_hypatia_onednn)->Apply(shapes);

}  // namespace
}  // namespace hypatia::bench

int main(int argc, char** argv) {
  std::vector<hypatia::bench::Ratio> ratios;
  for (int i = 0; i < 4; ++i) {
    std::string a = "/";  // (not "/" + std::string: GCC 12 warns -Wrestrict falsely)
    a += std::to_string(i);
    a += "/real_time";
    for (const char* who : {"BM_hypatia_auto", "BM_hypatia_openblas", "BM_hypatia_onednn"}) {
      ratios.push_back({std::string(who) + a, "BM_raw_openblas" + a});
      ratios.push_back({std::string(who) + a, "BM_raw_onednn" + a});
    }
  }
  const int rc = hypatia::bench::run_with_ratios(argc, argv, ratios);
  std::printf(
      "\nshape sets: 0 = 1000^3, 1 = MLP 784-500-500-10 step (8 GEMMs, batch 256), 2 = RNN step products "
      "(32x256x256, three layouts), 3 = an RNN's products over its whole sequence (100 steps of batch 32, hidden "
      "256: x U, h^T dz, x^T dz)\nblas=auto measured:\n");
  for (const hypatia::GemmChoice& c : hypatia::gemm_choices())
    std::printf("  %-6s (calls up to %lld MACs, timed %lldx%lldx%lld): openblas %.1f GFLOP/s, onednn %.1f -> %s\n",
                c.size_class.c_str(), static_cast<long long>(c.max_macs), static_cast<long long>(c.m),
                static_cast<long long>(c.n), static_cast<long long>(c.k), c.openblas_gflops, c.onednn_gflops,
                c.chosen.c_str());
  std::printf("blas=auto per shape (products of >= %lld MACs, decided by their own calls):\n",
              static_cast<long long>(hypatia::kShapeTrialMacs));
  for (const hypatia::GemmShapeChoice& c : hypatia::gemm_shape_choices())
    std::printf("  %lldx%lldx%lld%s%s in %lld panels: openblas %.1f us, onednn %.1f us (class: %s) -> %s\n",
                static_cast<long long>(c.m), static_cast<long long>(c.n), static_cast<long long>(c.k),
                c.ta ? " A^T" : "", c.tb ? " B^T" : "", static_cast<long long>(c.tasks), c.openblas_seconds * 1e6,
                c.onednn_seconds * 1e6, c.base.c_str(), c.chosen.c_str());
  return rc;
}
