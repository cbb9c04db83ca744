// Seed 000: y = dot(m, x) + b on 1000x1000 float32 matrices, in three variants (all inputs passed,
// m and b shared, everything shared with y updated), against a raw cblas_sgemm loop of the same size.
#include <cblas.h>

#include "bench_util.h"

namespace hypatia::bench {
namespace {

constexpr int64_t kN = 1000;

struct Seed000Data {
  NDArray m = random_f32({kN, kN}, -1, 1, 1), x = random_f32({kN, kN}, -1, 1, 2), b = random_f32({kN, kN}, -1, 1, 3);
};
const Seed000Data& data() {
  static const Seed000Data d;
  return d;
}

void set_flops(benchmark::State& state) {
  state.counters["GFLOP/s"] = benchmark::Counter(2.0 * kN * kN * kN * static_cast<double>(state.iterations()),
                                                 benchmark::Counter::kIsRate, benchmark::Counter::kIs1000);
}

void BM_raw_sgemm(benchmark::State& state) {
  const Seed000Data& d = data();
  NDArray c = NDArray::empty({kN, kN}, DType::Float32);
  for (auto _ : state) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, kN, kN, kN, 1.0f, d.m.data<float>(), kN, d.x.data<float>(),
                kN, 0.0f, c.data<float>(), kN);
    benchmark::DoNotOptimize(c.data<float>());
  }
  set_flops(state);
}
BENCHMARK(BM_raw_sgemm)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_seed000_all_inputs(benchmark::State& state) {
  const Seed000Data& d = data();
  Var m = variable(matrix_type(DType::Float32), "m"), x = variable(matrix_type(DType::Float32), "x"),
      b = variable(matrix_type(DType::Float32), "b");
  Function f = function({x, m, b}, {dot(m, x) + b});
  std::vector<NDArray> args{d.x, d.m, d.b};
  for (auto _ : state) benchmark::DoNotOptimize(f(args)[0].raw());
  set_flops(state);
}
BENCHMARK(BM_seed000_all_inputs)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_seed000_m_b_shared(benchmark::State& state) {
  const Seed000Data& d = data();
  Var m = shared(d.m, "m"), b = shared(d.b, "b"), x = variable(matrix_type(DType::Float32), "x");
  Function f = function({x}, {dot(m, x) + b});
  std::vector<NDArray> args{d.x};
  for (auto _ : state) benchmark::DoNotOptimize(f(args)[0].raw());
  set_flops(state);
}
BENCHMARK(BM_seed000_m_b_shared)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_seed000_all_shared_update(benchmark::State& state) {
  const Seed000Data& d = data();
  Var m = shared(d.m, "m"), b = shared(d.b, "b"), x = shared(d.x, "x");
  Var y = shared(NDArray::zeros({kN, kN}, DType::Float32), "y");
  FunctionOptions opts;
  opts.updates = {{y, dot(m, x) + b}};
  Function f = function({}, {}, opts);
  std::vector<NDArray> args, outs;
  for (auto _ : state) f.call(args, outs);
  set_flops(state);
}
BENCHMARK(BM_seed000_all_shared_update)->Unit(benchmark::kMillisecond)->UseRealTime();

// What a dot + add -> Gemm rewrite would compile seed 000 to: one Gemm with beta = 1 (m, b shared).
void BM_seed000_explicit_gemm(benchmark::State& state) {
  const Seed000Data& d = data();
  Var m = shared(d.m, "m"), b = shared(d.b, "b"), x = variable(matrix_type(DType::Float32), "x");
  Var one = constant(1.0, DType::Float32);
  Function f = function({x}, {gemm(b, one, m, x, one)});
  std::vector<NDArray> args{d.x};
  for (auto _ : state) benchmark::DoNotOptimize(f(args)[0].raw());
  set_flops(state);
}
BENCHMARK(BM_seed000_explicit_gemm)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace hypatia::bench

int main(int argc, char** argv) {
  return hypatia::bench::run_with_ratios(argc, argv,
                                         {{"BM_seed000_all_inputs/real_time", "BM_raw_sgemm/real_time"},
                                          {"BM_seed000_m_b_shared/real_time", "BM_raw_sgemm/real_time"},
                                          {"BM_seed000_all_shared_update/real_time", "BM_raw_sgemm/real_time"},
                                          {"BM_seed000_explicit_gemm/real_time", "BM_raw_sgemm/real_time"}});
}
