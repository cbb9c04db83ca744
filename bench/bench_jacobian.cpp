// jacobian of a 200-element vector function, y = tanh(W x) with a 200 x 200 shared W: the MapIndex
// node runs the body once per row. Baseline: the same Jacobian written out by hand,
// (1 - y^2)[:, None] * W, in one function (what a perfect row loop would approach).
#include "bench_util.h"

namespace hypatia::bench {
namespace {

constexpr int64_t kN = 200;

NDArray random_f64(const Shape& shape, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-0.1, 0.1);
  NDArray a = NDArray::empty(shape, DType::Float64);
  for (int64_t i = 0; i < a.size(); ++i) a.data<double>()[i] = u(rng);
  return a;
}

void run(benchmark::State& state, Function f) {
  std::vector<NDArray> args{random_f64({kN}, 2)}, outs(1);
  for (auto _ : state) {
    f.call(args, outs);
    benchmark::DoNotOptimize(outs[0].raw());
  }
}

void BM_jacobian_tanh_200(benchmark::State& state) {
  Var w = shared(random_f64({kN, kN}, 1), "W");
  Var x = variable(vector_type(DType::Float64), "x");
  run(state, function({x}, {Out(jacobian(tanh(dot(w, x)), x), true)}));
}
BENCHMARK(BM_jacobian_tanh_200)->UseRealTime()->Unit(benchmark::kMicrosecond);

void BM_jacobian_by_hand_200(benchmark::State& state) {
  Var w = shared(random_f64({kN, kN}, 1), "W");
  Var x = variable(vector_type(DType::Float64), "x");
  Var y = tanh(dot(w, x));
  Var d = sub(constant(1.0, DType::Float64), sqr(y));
  run(state, function({x}, {Out(mul(dimshuffle(d, {0, -1}), w), true)}));
}
BENCHMARK(BM_jacobian_by_hand_200)->UseRealTime()->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace hypatia::bench

int main(int argc, char** argv) {
  return hypatia::bench::run_with_ratios(argc, argv,
                                         {{"BM_jacobian_tanh_200/real_time", "BM_jacobian_by_hand_200/real_time"}});
}
