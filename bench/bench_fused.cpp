// tanh(a*b + c) - exp(d) on 16M float32 elements (shared inputs; the borrowed output is released
// after each call so the next call reuses its buffer), against a one-pass memcpy of the same bytes
// the expression must read and write (4 inputs + 1 output).
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

}  // namespace
}  // namespace hypatia::bench

int main(int argc, char** argv) {
  return hypatia::bench::run_with_ratios(argc, argv,
                                         {{"BM_fused_tanh_exp/real_time", "BM_memcpy_same_bytes/real_time"}});
}
