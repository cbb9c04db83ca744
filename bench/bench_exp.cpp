// Seed 001: exp over a 230,400-element float32 shared vector, against a scalar std::exp loop.
#include <cmath>

#include "bench_util.h"

namespace hypatia::bench {
namespace {

constexpr int64_t kLen = 10 * 30 * 768;

const NDArray& input() {
  static const NDArray v = random_f32({kLen}, 0, 1, 22);
  return v;
}

void BM_exp_std_loop(benchmark::State& state) {
  const float* in = input().data<float>();
  NDArray out = NDArray::empty({kLen}, DType::Float32);
  float* o = out.data<float>();
  for (auto _ : state) {
    for (int64_t i = 0; i < kLen; ++i) o[i] = std::exp(in[i]);
    benchmark::DoNotOptimize(o);
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * kLen);
}
BENCHMARK(BM_exp_std_loop)->Unit(benchmark::kMicrosecond)->UseRealTime();

// The seed's loop: a fresh result array per call (operator()).
void BM_exp_hypatia(benchmark::State& state) {
  Var x = shared(input(), "x");
  Function f = function({}, {exp(x)});
  for (auto _ : state) benchmark::DoNotOptimize(f()[0].raw());
  state.SetItemsProcessed(state.iterations() * kLen);
}
BENCHMARK(BM_exp_hypatia)->Unit(benchmark::kMicrosecond)->UseRealTime();

// Out(borrow=true): the function may hand back its internal buffer, reused by the next call.
void BM_exp_hypatia_borrow(benchmark::State& state) {
  Var x = shared(input(), "x");
  Function f = function({}, {Out(exp(x), true)});
  for (auto _ : state) benchmark::DoNotOptimize(f()[0].raw());
  state.SetItemsProcessed(state.iterations() * kLen);
}
BENCHMARK(BM_exp_hypatia_borrow)->Unit(benchmark::kMicrosecond)->UseRealTime();

// Function::call with the previous result passed back: no allocation per call.
void BM_exp_hypatia_call(benchmark::State& state) {
  Var x = shared(input(), "x");
  Function f = function({}, {exp(x)});
  std::vector<NDArray> outs(1);
  for (auto _ : state) {
    f.call({}, outs);
    benchmark::DoNotOptimize(outs[0].raw());
  }
  state.SetItemsProcessed(state.iterations() * kLen);
}
BENCHMARK(BM_exp_hypatia_call)->Unit(benchmark::kMicrosecond)->UseRealTime();

}  // namespace
}  // namespace hypatia::bench

int main(int argc, char** argv) {
  return hypatia::bench::run_with_ratios(argc, argv,
                                         {{"BM_exp_hypatia/real_time", "BM_exp_std_loop/real_time"},
                                          {"BM_exp_hypatia_borrow/real_time", "BM_exp_std_loop/real_time"},
                                          {"BM_exp_hypatia_call/real_time", "BM_exp_std_loop/real_time"}});
}
