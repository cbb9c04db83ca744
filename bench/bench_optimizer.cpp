// Issue 4's benchmarks: a six-op elementwise chain over 16M float32 (fused) against one memcpy
// of the bytes it must read and write; compile time of an MLP training function and of a 200-node
// graph; an MLP training step against the sum of its GEMMs done with raw cblas_sgemm.
#include <cblas.h>

#include <cstring>

#include "bench_util.h"

namespace hypatia::bench {
namespace {

constexpr int64_t kLen = 16 * 1024 * 1024;

// One read and one write of 16M float32: what the fused chain must move.
void BM_memcpy_chain_bytes(benchmark::State& state) {
  NDArray src = random_f32({kLen}, -1, 1, 5), dst = NDArray::empty({kLen}, DType::Float32);
  for (auto _ : state) {
    std::memcpy(dst.raw(), src.raw(), src.nbytes());
    benchmark::ClobberMemory();
  }
}
BENCHMARK(BM_memcpy_chain_bytes)->Unit(benchmark::kMillisecond)->UseRealTime();

// tanh(exp(x * 0.5 + 0.25) - 1.5) * 2: mul, add, exp, sub, tanh, mul.
Var chain6(const Var& x) { return tanh(exp(x * 0.5 + 0.25) - 1.5) * 2.0; }

void BM_chain6_fused(benchmark::State& state) {
  Var x = shared(random_f32({kLen}, -1, 1, 1), "x", true);
  Function f = function({}, {chain6(x)});
  std::vector<NDArray> outs(1);
  for (auto _ : state) {
    f.call({}, outs);
    benchmark::DoNotOptimize(outs[0].raw());
  }
}
BENCHMARK(BM_chain6_fused)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_chain6_unfused(benchmark::State& state) {
  Var x = shared(random_f32({kLen}, -1, 1, 1), "x", true);
  FunctionOptions o;
  o.mode = "FAST_COMPILE";
  Function f = function({}, {chain6(x)}, o);
  std::vector<NDArray> outs(1);
  for (auto _ : state) {
    f.call({}, outs);
    benchmark::DoNotOptimize(outs[0].raw());
  }
}
BENCHMARK(BM_chain6_unfused)->Unit(benchmark::kMillisecond)->UseRealTime();

// The 784-500-500-10 MLP of issue 4: tanh layers, softmax cross-entropy, L2, SGD updates.
struct Mlp {
  Var x = variable(matrix_type(DType::Float32), "x");
  Var y = variable(vector_type(DType::Int64), "y");
  std::vector<Var> params;
  FunctionOptions opts;
  Var cost;
  explicit Mlp(uint64_t seed) {
    const int sizes[] = {784, 500, 500, 10};
    Var h = x;
    Var l2 = constant(NDArray::scalar(0.0, DType::Float32));
    for (int l = 0; l < 3; ++l) {
      const std::string names[] = {"W0", "b0", "W1", "b1", "W2", "b2"};
      Var w = shared(random_f32({sizes[l], sizes[l + 1]}, -0.05f, 0.05f, seed + l), names[2 * l]);
      Var b = shared(NDArray::zeros({sizes[l + 1]}, DType::Float32), names[2 * l + 1]);
      params.push_back(w);
      params.push_back(b);
      Var a = dot(h, w) + b;
      h = l < 2 ? tanh(a) : softmax(a);
      l2 = l2 + sum(sqr(w));
    }
    cost = mean(categorical_crossentropy(h, y)) + l2 * 1e-4;
    std::vector<Var> g = grad(cost, params);
    for (size_t i = 0; i < params.size(); ++i) opts.updates.push_back({params[i], params[i] - g[i] * 0.01});
    opts.name = "mlp_train";
  }
};

void BM_compile_mlp_train(benchmark::State& state) {
  for (auto _ : state) {
    state.PauseTiming();
    Mlp m(1);  // graph building (and grad) excluded
    state.ResumeTiming();
    Function f = function({m.x, m.y}, {m.cost}, m.opts);
    benchmark::DoNotOptimize(&f);
  }
}
BENCHMARK(BM_compile_mlp_train)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_compile_200_nodes(benchmark::State& state) {
  for (auto _ : state) {
    state.PauseTiming();
    Var x = variable(matrix_type(DType::Float32), "x");
    Var w = variable(matrix_type(DType::Float32), "w");
    Var h = x;
    for (int i = 0; i < 40; ++i) h = tanh(dot(h, w) * 0.5 + h) - exp(h * 0.1);  // 5 nodes + constants each
    state.ResumeTiming();
    Function f = function({x, w}, {h});
    benchmark::DoNotOptimize(&f);
  }
}
BENCHMARK(BM_compile_200_nodes)->Unit(benchmark::kMillisecond)->UseRealTime();

constexpr int kBatch = 256;

void BM_mlp_train_step(benchmark::State& state) {
  Mlp m(2);
  Function f = function({m.x, m.y}, {m.cost}, m.opts);
  NDArray xv = random_f32({kBatch, 784}, 0, 1, 3);
  NDArray yv = NDArray::empty({kBatch}, DType::Int64);
  for (int i = 0; i < kBatch; ++i) yv.data<int64_t>()[i] = i % 10;
  std::vector<NDArray> args{xv, yv}, outs(1);
  for (auto _ : state) {
    f.call(args, outs);
    benchmark::DoNotOptimize(outs[0].raw());
  }
}
BENCHMARK(BM_mlp_train_step)->Unit(benchmark::kMillisecond)->UseRealTime();

// The GEMMs of one training step: forward x.W per layer, backward dW = h^T.d per layer and
// dh = d.W^T for layers 2 and 3.
void BM_mlp_gemms_only(benchmark::State& state) {
  const int sizes[] = {784, 500, 500, 10};
  std::vector<NDArray> h, w, dw, d;
  for (int l = 0; l < 3; ++l) {
    h.push_back(random_f32({kBatch, sizes[l]}, -1, 1, 10 + l));
    w.push_back(random_f32({sizes[l], sizes[l + 1]}, -1, 1, 20 + l));
    dw.push_back(NDArray::empty({sizes[l], sizes[l + 1]}, DType::Float32));
    d.push_back(random_f32({kBatch, sizes[l + 1]}, -1, 1, 30 + l));
  }
  NDArray out = NDArray::empty({kBatch, 784}, DType::Float32);
  for (auto _ : state) {
    for (int l = 0; l < 3; ++l) {
      const int k = sizes[l], n = sizes[l + 1];
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, kBatch, n, k, 1.0f, h[l].data<float>(), k,
                  w[l].data<float>(), n, 0.0f, out.data<float>(), n);
      cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, k, n, kBatch, 1.0f, h[l].data<float>(), k,
                  d[l].data<float>(), n, 0.0f, dw[l].data<float>(), n);
      if (l > 0)
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, kBatch, k, n, 1.0f, d[l].data<float>(), n,
                    w[l].data<float>(), n, 0.0f, out.data<float>(), k);
    }
    benchmark::ClobberMemory();
  }
}
BENCHMARK(BM_mlp_gemms_only)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace hypatia::bench

int main(int argc, char** argv) {
  return hypatia::bench::run_with_ratios(argc, argv,
                                         {{"BM_chain6_fused/real_time", "BM_memcpy_chain_bytes/real_time"},
                                          {"BM_chain6_unfused/real_time", "BM_memcpy_chain_bytes/real_time"},
                                          {"BM_compile_mlp_train/real_time", "", 30e6},
                                          {"BM_compile_200_nodes/real_time", "", 100e6},
                                          {"BM_mlp_train_step/real_time", "BM_mlp_gemms_only/real_time"}});
}
