// Per-call overhead of a compiled one-op function (x + 1 on a 1-element float32 vector), through
// the allocation-free Function::call and through operator(). Target: under 100 ns per call.
#include "bench_util.h"

namespace hypatia::bench {
namespace {

Function make_add_one(bool borrow) {
  Var x = variable(vector_type(DType::Float32), "x");
  return function({x}, {Out(x + 1.0, borrow)});
}

void BM_call_overhead_call(benchmark::State& state) {
  Function f = make_add_one(true);
  std::vector<NDArray> args{NDArray::full({1}, DType::Float32, 2.0)}, outs(1);
  for (auto _ : state) {
    f.call(args, outs);
    benchmark::DoNotOptimize(outs[0].raw());
  }
}
BENCHMARK(BM_call_overhead_call)->UseRealTime();

void BM_call_overhead_operator(benchmark::State& state) {
  Function f = make_add_one(false);
  std::vector<NDArray> args{NDArray::full({1}, DType::Float32, 2.0)};
  for (auto _ : state) benchmark::DoNotOptimize(f(args)[0].raw());
}
BENCHMARK(BM_call_overhead_operator)->UseRealTime();

}  // namespace
}  // namespace hypatia::bench

int main(int argc, char** argv) {
  return hypatia::bench::run_with_ratios(
      argc, argv, {{"BM_call_overhead_call/real_time", "", 100.0}, {"BM_call_overhead_operator/real_time", "", 100.0}});
}
