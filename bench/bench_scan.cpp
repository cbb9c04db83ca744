// scan's per-step cost from C++: x_t = x_{t-1} + 1 on a float64 scalar, 10^6 steps, reported per
// step. Baselines in the same run: the same recurrence as a plain C++ loop (the floor), and one
// call of a compiled x + 1 function per step (what a loop around a function would pay).
#include "bench_util.h"

namespace hypatia::bench {
namespace {

constexpr int64_t kSteps = 1'000'000;

void BM_scan_trivial_per_step(benchmark::State& state) {
  Var x0 = variable(scalar_type(DType::Float64), "x0");
  auto outs =
      scan([](const std::vector<Var>& a) { return std::vector<Var>{a[0] + 1.0}; }, {}, {x0}, {}, int_constant(kSteps));
  Function f = function({x0}, {Out(subtensor(outs[0], {Index(int64_t{-1})}), true)});
  std::vector<NDArray> args{NDArray::scalar(0.0, DType::Float64)}, res(1);
  for (auto _ : state) {
    f.call(args, res);
    benchmark::DoNotOptimize(res[0].raw());
  }
  state.SetItemsProcessed(state.iterations() * kSteps);
}
BENCHMARK(BM_scan_trivial_per_step)->UseRealTime()->Unit(benchmark::kMillisecond);

void BM_function_call_per_step(benchmark::State& state) {
  Var x = variable(scalar_type(DType::Float64), "x");
  Function f = function({x}, {x + 1.0});
  std::vector<NDArray> args{NDArray::scalar(0.0, DType::Float64)}, res(1);
  for (auto _ : state) {
    for (int64_t i = 0; i < kSteps / 100; ++i) {
      f.call(args, res);
      std::swap(args[0], res[0]);
    }
    benchmark::DoNotOptimize(args[0].raw());
  }
  state.SetItemsProcessed(state.iterations() * kSteps / 100);
}
BENCHMARK(BM_function_call_per_step)->UseRealTime()->Unit(benchmark::kMillisecond);

void BM_plain_loop_per_step(benchmark::State& state) {
  for (auto _ : state) {
    double x = 0;
    for (int64_t i = 0; i < kSteps; ++i) {
      x += 1.0;
      benchmark::DoNotOptimize(x);
    }
  }
  state.SetItemsProcessed(state.iterations() * kSteps);
}
BENCHMARK(BM_plain_loop_per_step)->UseRealTime()->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace hypatia::bench

int main(int argc, char** argv) {
  return hypatia::bench::run_with_ratios(argc, argv,
                                         {{"BM_scan_trivial_per_step/real_time", "BM_plain_loop_per_step/real_time"}});
}
