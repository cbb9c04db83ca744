// scan's per-step cost from C++: x_t = x_{t-1} + 1 on a float64 scalar, 10^6 steps, reported per
// step. Baselines in the same run: the same recurrence as a plain C++ loop (the floor), and one
// call of a compiled x + 1 function per step (what a loop around a function would pay).
// Also seed 002's recurrence as an RNN (h_t = tanh(h_{t-1} W + x_t U), hidden 256, batch 32, 100
// steps, float32): forward, and forward + BPTT (gradients of sum(h_T) w.r.t. W and U), beside the
// same products called directly through cblas_sgemm with OpenBLAS's own threads (the floor: the
// 2.1 GFLOP of products alone, no tanh, no copies). And an until loop bounded far above the steps
// it runs beside the same loop of exactly its steps (its trace allocated at once).
#include <cblas.h>

#include "bench_util.h"

extern "C" void openblas_set_num_threads(int);

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

/// x_t = x_{t-1} + 1 on a 256 KiB float64 state for 600 steps, traced, with sum(x_t) each step:
/// as an until loop bounded at 2^40 steps (its first call's trace starts at 64 MiB, 256 rows, and
/// doubles; later calls start at the steps the last one ran), and as a loop of exactly 600 steps
/// (the baseline: its trace allocated at once, the sum a second output).
constexpr int64_t kUntilElems = 32768, kUntilSteps = 600;

Function until_loop(bool until) {
  Var x0 = vector("x0", DType::Float64);
  ScanInfo info;
  info.state_taps = {{-1}};
  info.state_traced = {true};
  info.n_nitsot = 1;
  info.until = until;
  Var prev = vector("prev", DType::Float64);
  Var nxt = prev + 1.0, s = sum(nxt);
  std::vector<Var> body = {nxt, s};
  if (until) body.push_back(ge(s, constant(double(kUntilSteps * kUntilElems), DType::Float64)));
  auto outs =
      scan_node(info, {prev}, body, int_constant(until ? int64_t{1} << 40 : kUntilSteps), {}, {expand_dims(x0, 0)}, {});
  return function({In(x0)}, {Out(outs[0], true), Out(outs[1], true)});
}

void run_until(benchmark::State& state, bool until) {
  Function f = until_loop(until);
  std::vector<NDArray> args{NDArray::zeros({kUntilElems}, DType::Float64)}, res(2);
  for (auto _ : state) {
    f.call(args, res);
    if (res[0].shape(0) != kUntilSteps) state.SkipWithError("wrong number of steps");
    res = std::vector<NDArray>(2);  // (a fresh trace each call, as a caller keeping it would get)
  }
  state.SetBytesProcessed(state.iterations() * kUntilSteps * kUntilElems * 8);
}
void BM_until_bounded_at_2e40(benchmark::State& state) { run_until(state, true); }
BENCHMARK(BM_until_bounded_at_2e40)->UseRealTime()->Unit(benchmark::kMillisecond)->MinTime(1.0);
void BM_exact_steps_trace_at_once(benchmark::State& state) { run_until(state, false); }
BENCHMARK(BM_exact_steps_trace_at_once)->UseRealTime()->Unit(benchmark::kMillisecond)->MinTime(1.0);

constexpr int64_t kH = 256, kB = 32, kT = 100;

/// The two functions of the RNN, compiled once.
struct Rnn {
  std::vector<Function> f;  // forward, forward + BPTT
  std::vector<NDArray> args{random_f32({kT, kB, kH}, -1, 1, 1), NDArray::zeros({kB, kH}, DType::Float32)};
  Rnn() {
    Var W = shared(random_f32({kH, kH}, -0.06f, 0.06f, 2), "W"),
        U = shared(random_f32({kH, kH}, -0.06f, 0.06f, 3), "U");
    Var xs = tensor3("X", DType::Float32), h0 = matrix("h0", DType::Float32);
    auto hs = scan([&](const std::vector<Var>& a) { return std::vector<Var>{tanh(dot(a[1], W) + dot(a[0], U))}; }, {xs},
                   {h0});
    Var cost = sum(subtensor(hs[0], {Index(int64_t{-1})}));
    auto g = grad(cost, std::vector<Var>{W, U});
    f.push_back(function({In(xs), In(h0)}, {cost}));
    f.push_back(function({In(xs), In(h0)}, {cost, g[0], g[1]}));
  }
};

Rnn& rnn() {
  static Rnn r;
  return r;
}

void BM_rnn_forward(benchmark::State& state) {
  Rnn& r = rnn();
  std::vector<NDArray> res(1);
  for (auto _ : state) r.f[0].call(r.args, res);
}
BENCHMARK(BM_rnn_forward)->UseRealTime()->Unit(benchmark::kMillisecond)->MinTime(1.0);

void BM_rnn_bptt(benchmark::State& state) {
  Rnn& r = rnn();
  std::vector<NDArray> res(3);
  for (auto _ : state) r.f[1].call(r.args, res);
}
BENCHMARK(BM_rnn_bptt)->UseRealTime()->Unit(benchmark::kMillisecond)->MinTime(1.0);

/// The LSTM of bench/python/bench_scan.py: input 128, hidden 256, batch 32, 100 steps, float32;
/// forward + backward (gradients of sum(h_T) w.r.t. both weight matrices).
struct Lstm {
  std::vector<Function> f;
  std::vector<NDArray> args{random_f32({kT, kB, 128}, -1, 1, 6), NDArray::zeros({kB, kH}, DType::Float32),
                            NDArray::zeros({kB, kH}, DType::Float32)};
  Lstm() {
    Var Wx = shared(random_f32({128, 4 * kH}, -0.06f, 0.06f, 7), "Wx");
    Var Wh = shared(random_f32({kH, 4 * kH}, -0.06f, 0.06f, 8), "Wh");
    Var xs = tensor3("X", DType::Float32), h0 = matrix("h0", DType::Float32), c0 = matrix("c0", DType::Float32);
    auto outs = scan(
        [&](const std::vector<Var>& a) {
          Var z = dot(a[0], Wx) + dot(a[1], Wh);
          auto gate = [&](int64_t k) { return subtensor(z, {all(), sl(k * kH, (k + 1) * kH)}); };
          Var c = sigmoid(gate(1)) * a[2] + sigmoid(gate(0)) * tanh(gate(3));
          return std::vector<Var>{sigmoid(gate(2)) * tanh(c), c};
        },
        {xs}, {h0, c0});
    Var cost = sum(subtensor(outs[0], {Index(int64_t{-1})}));
    auto g = grad(cost, std::vector<Var>{Wx, Wh});
    f.push_back(function({In(xs), In(h0), In(c0)}, {cost, g[0], g[1]}));
  }
};

void BM_lstm_fwd_bwd(benchmark::State& state) {
  static Lstm l;
  std::vector<NDArray> res(3);
  for (auto _ : state) l.f[0].call(l.args, res);
}
BENCHMARK(BM_lstm_fwd_bwd)->UseRealTime()->Unit(benchmark::kMillisecond)->MinTime(1.0);

/// The forward + BPTT's products alone through cblas_sgemm on OpenBLAS's own two threads: x U over
/// the sequence, h W and dz W^T per step, then h^T dz and x^T dz over the sequence. Last: its
/// threads would spin into the benchmarks after it.
void BM_rnn_products_floor(benchmark::State& state) {
  openblas_set_num_threads(0);  // OpenBLAS's default: every core
  const NDArray x = random_f32({kT * kB, kH}, -1, 1, 1), w = random_f32({kH, kH}, -0.06f, 0.06f, 2);
  NDArray xu = NDArray::empty({kT * kB, kH}, DType::Float32), h = random_f32({kT * kB, kH}, -1, 1, 4);
  NDArray dz = random_f32({kT * kB, kH}, -1, 1, 5), dw = NDArray::empty({kH, kH}, DType::Float32);
  const float *X = x.data<float>(), *Wp = w.data<float>();
  float *XU = xu.data<float>(), *Hp = h.data<float>(), *DZ = dz.data<float>(), *DW = dw.data<float>();
  const int n = static_cast<int>(kH), m = static_cast<int>(kT * kB), b = static_cast<int>(kB);
  for (auto _ : state) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, n, 1.f, X, n, Wp, n, 0.f, XU, n);
    for (int64_t t = 1; t < kT; ++t)
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, b, n, n, 1.f, Hp + (t - 1) * kB * kH, n, Wp, n, 1.f,
                  XU + t * kB * kH, n);
    for (int64_t t = kT - 1; t > 0; --t)
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, b, n, n, 1.f, DZ + t * kB * kH, n, Wp, n, 0.f,
                  Hp + (t - 1) * kB * kH, n);
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, n, n, m, 1.f, Hp, n, DZ, n, 0.f, DW, n);
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, n, n, m, 1.f, X, n, DZ, n, 1.f, DW, n);
    benchmark::DoNotOptimize(DW);
  }
}
BENCHMARK(BM_rnn_products_floor)->UseRealTime()->Unit(benchmark::kMillisecond)->MinTime(1.0);

}  // namespace
}  // namespace hypatia::bench

int main(int argc, char** argv) {
  return hypatia::bench::run_with_ratios(
      argc, argv,
      {{"BM_scan_trivial_per_step/real_time", "BM_plain_loop_per_step/real_time"},
       {"BM_rnn_bptt/min_time:1.000/real_time", "BM_rnn_forward/min_time:1.000/real_time"},
       {"BM_rnn_bptt/min_time:1.000/real_time", "BM_rnn_products_floor/min_time:1.000/real_time"}});
}
