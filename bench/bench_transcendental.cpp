// float64 transcendental kernels called directly (simd_unary, no graph), on the best SIMD target
// and on AVX2 (the other machines' target), against a scalar C library loop; numpy's times for the
// same functions through compiled functions are bench/python/bench_transcendental.py.
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "bench_util.h"
#include "hypatia/backends/cpu/elemwise_simd.h"

namespace hypatia::bench {
namespace {

struct Fn {
  ScalarOpKind kind;
  double (*libm)(double);
  double lo, hi;
};

const Fn kFns[] = {
    {ScalarOpKind::Exp, [](double x) { return std::exp(x); }, -20, 20},
    {ScalarOpKind::Log, [](double x) { return std::log(x); }, 1e-3, 1e3},
    {ScalarOpKind::Tanh, [](double x) { return std::tanh(x); }, -10, 10},
    {ScalarOpKind::Sin, [](double x) { return std::sin(x); }, -10, 10},
    {ScalarOpKind::Cos, [](double x) { return std::cos(x); }, -10, 10},
    {ScalarOpKind::Sigmoid, [](double x) { return 1 / (1 + std::exp(-x)); }, -20, 20},
    {ScalarOpKind::Softplus, [](double x) { return std::log1p(std::exp(x)); }, -20, 20},
};
const char* const kNames[] = {"exp", "log", "tanh", "sin", "cos", "sigmoid", "softplus"};

NDArray inputs(const Fn& f, int64_t n) {
  std::mt19937_64 rng(5);
  std::uniform_real_distribution<double> u(f.lo, f.hi);
  NDArray a = NDArray::empty({n}, DType::Float64);
  for (int64_t i = 0; i < n; ++i) a.data<double>()[i] = u(rng);
  return a;
}

/// args: function index, length, target (0: best, 1: AVX2 if compiled and supported).
void BM_f64_simd(benchmark::State& state) {
  const Fn& f = kFns[state.range(0)];
  const int64_t n = state.range(1);
  int64_t want = 0;
  if (state.range(2) == 1) {
    for (int64_t t : simd_targets())
      if (simd_target_name(t) == "AVX2") want = t;
    if (want == 0) {
      state.SkipWithError("AVX2 target not available");
      return;
    }
  }
  simd_force_target(want);
  const NDArray x = inputs(f, n);
  NDArray y = NDArray::empty({n}, DType::Float64);
  for (auto _ : state) {
    simd_unary(f.kind, DType::Float64, x.raw(), y.raw(), n);
    benchmark::DoNotOptimize(y.raw());
    benchmark::ClobberMemory();
  }
  simd_force_target(0);
  state.SetItemsProcessed(state.iterations() * n);
  state.SetLabel(std::string(kNames[state.range(0)]) + (want ? " AVX2" : " best"));
}

void BM_f64_libm(benchmark::State& state) {
  const Fn& f = kFns[state.range(0)];
  const int64_t n = state.range(1);
  const NDArray x = inputs(f, n);
  NDArray y = NDArray::empty({n}, DType::Float64);
  const double* in = x.data<double>();
  double* out = y.data<double>();
  for (auto _ : state) {
    for (int64_t i = 0; i < n; ++i) out[i] = f.libm(in[i]);
    benchmark::DoNotOptimize(out);
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * n);
  state.SetLabel(kNames[state.range(0)]);
}

void args(benchmark::internal::Benchmark* b) {
  for (int fn = 0; fn < 7; ++fn)
    for (int64_t n : {1000, 100000}) b->Args({fn, n, 0});
}
void args_avx2(benchmark::internal::Benchmark* b) {
  for (int fn = 0; fn < 7; ++fn) b->Args({fn, 100000, 1});
}
void args_libm(benchmark::internal::Benchmark* b) {
  for (int fn = 0; fn < 7; ++fn) b->Args({fn, 100000});
}

BENCHMARK(BM_f64_simd)->Apply(args)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_f64_simd)->Name("BM_f64_simd_avx2")->Apply(args_avx2)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_f64_libm)->Apply(args_libm)->Unit(benchmark::kMicrosecond)->UseRealTime();

}  // namespace
}  // namespace hypatia::bench

int main(int argc, char** argv) {
  std::vector<hypatia::bench::Ratio> ratios;
  for (int fn = 0; fn < 7; ++fn) {
    // snprintf: GCC 12 warns (-Wrestrict, a false positive) on string concatenation here.
    char simd[64], libm[64];
    std::snprintf(simd, sizeof simd, "BM_f64_simd/%d/100000/0/real_time", fn);
    std::snprintf(libm, sizeof libm, "BM_f64_libm/%d/100000/real_time", fn);
    ratios.push_back({simd, libm});
  }
  return hypatia::bench::run_with_ratios(argc, argv, ratios);
}
