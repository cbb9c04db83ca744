// tanh(a*b + c) - exp(d) on 16M float32 elements (shared inputs; the borrowed output is released
// after each call so the next call reuses its buffer), against a one-pass memcpy of the same bytes
// the expression must read and write (4 inputs + 1 output). sum(x * y) on 16M float32 (one fused
// CompositeReduce node) against one OpenMP pass that only reads the same two arrays.
#include <omp.h>

#include <cstring>

#include "bench_util.h"

namespace hypatia::bench {
namespace {

constexpr int64_t kLen = 16 * 1024 * 1024;

struct FusedData {
  NDArray a = random_f32({kLen}, -1, 1, 1), b = random_f32({kLen}, -1, 1, 2), c = random_f32({kLen}, -1, 1, 3),
          d = random_f32({kLen}, -1, 1, 4);
};
const FusedData& data() {
  static const FusedData d;
  return d;
}

void set_bytes(benchmark::State& state) { state.SetBytesProcessed(state.iterations() * kLen * 5 * 4); }

// Reads 2.5 arrays' worth of bytes and writes as many: the same 5 x 64 MB of traffic.
void BM_memcpy_same_bytes(benchmark::State& state) {
  const int64_t half = kLen * 5 / 2;
  NDArray src = random_f32({half}, -1, 1, 5), dst = NDArray::empty({half}, DType::Float32);
  for (auto _ : state) {
    std::memcpy(dst.raw(), src.raw(), src.nbytes());
    benchmark::ClobberMemory();
  }
  set_bytes(state);
}
BENCHMARK(BM_memcpy_same_bytes)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_fused_tanh_exp(benchmark::State& state) {
  const FusedData& d = data();
  Var a = shared(d.a, "a", true), b = shared(d.b, "b", true), c = shared(d.c, "c", true), e = shared(d.d, "d", true);
  Function f = function({}, {Out(tanh(a * b + c) - exp(e), true)});
  for (auto _ : state) benchmark::DoNotOptimize(f()[0].raw());
  set_bytes(state);
}
BENCHMARK(BM_fused_tanh_exp)->Unit(benchmark::kMillisecond)->UseRealTime();

struct DotData {
  NDArray x = random_f32({kLen}, -1, 1, 6), y = random_f32({kLen}, -1, 1, 7);
};
const DotData& dot_data() {
  static const DotData d;
  return d;
}

void set_read_bytes(benchmark::State& state) { state.SetBytesProcessed(state.iterations() * kLen * 2 * 4); }

// Reads x and y once (vectorized, on every OpenMP thread): the least sum(x * y) must do.
void BM_memread_two_arrays(benchmark::State& state) {
  const float* x = dot_data().x.data<float>();
  const float* y = dot_data().y.data<float>();
  const int nt = omp_get_max_threads();
  for (auto _ : state) {
    double acc = 0;
#pragma omp parallel for num_threads(nt) reduction(+ : acc) schedule(static)
    for (int t = 0; t < nt; ++t) {
      const int64_t b = kLen * t / nt, e = kLen * (t + 1) / nt;
      float s = 0;
#pragma omp simd reduction(+ : s)
      for (int64_t i = b; i < e; ++i) s += x[i] + y[i];
      acc += s;
    }
    benchmark::DoNotOptimize(acc);
  }
  set_read_bytes(state);
}
BENCHMARK(BM_memread_two_arrays)->Unit(benchmark::kMillisecond)->UseRealTime();

void run_sum_xy(benchmark::State& state, const char* mode) {
  Var x = shared(dot_data().x, "x", true), y = shared(dot_data().y, "y", true);
  FunctionOptions o;
  o.mode = mode;
  Function f = function({}, {sum(x * y)}, o);
  for (auto _ : state) benchmark::DoNotOptimize(f()[0].raw());
  set_read_bytes(state);
}

// One CompositeReduce node: the product is never stored.
void BM_fused_sum_xy(benchmark::State& state) { run_sum_xy(state, "FAST_RUN"); }
BENCHMARK(BM_fused_sum_xy)->Unit(benchmark::kMillisecond)->UseRealTime();

// Elemwise{mul} writes 64 MB, then Sum reads it back.
void BM_unfused_sum_xy(benchmark::State& state) { run_sum_xy(state, "FAST_COMPILE"); }
BENCHMARK(BM_unfused_sum_xy)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace hypatia::bench

int main(int argc, char** argv) {
  return hypatia::bench::run_with_ratios(argc, argv,
                                         {{"BM_fused_tanh_exp/real_time", "BM_memcpy_same_bytes/real_time"},
                                          {"BM_fused_sum_xy/real_time", "BM_memread_two_arrays/real_time"},
                                          {"BM_unfused_sum_xy/real_time", "BM_memread_two_arrays/real_time"}});
}
