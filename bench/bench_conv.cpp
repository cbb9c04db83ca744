// Convolutions: a ResNet 3x3 layer (batch 32, 64 -> 64 channels, 56x56, padding 1, float32):
// forward, gradient with respect to the inputs and to the weights, each through a compiled
// function, against its GEMM bound: the same per-image matrix products through cpu_matmul alone
// (no im2col / col2im), measured in the same run. Max pooling 2x2 and its gradient on the same
// activations against a one-pass copy of them.
#include <cstring>

#include "bench_util.h"
#include "hypatia/backends/cpu/blas_matmul.h"

namespace hypatia::bench {
namespace {

constexpr int64_t kN = 32, kC = 64, kHW = 56, kK = 3;

struct Data {
  NDArray img = random_f32({kN, kC, kHW, kHW}, -1, 1, 1);
  NDArray kern = random_f32({kC, kC, kK, kK}, -0.1f, 0.1f, 2);
  NDArray top = random_f32({kN, kC, kHW, kHW}, -1, 1, 3);
};
const Data& data() {
  static const Data d;
  return d;
}

Conv2dParams half() {
  Conv2dParams p;
  p.border = "pad";
  p.pad_h = p.pad_w = 1;
  return p;
}

void set_flops(benchmark::State& state) {
  state.counters["GFLOP/s"] =
      benchmark::Counter(2.0 * kN * kC * kC * kK * kK * kHW * kHW * static_cast<double>(state.iterations()),
                         benchmark::Counter::kIsRate, benchmark::Counter::kIs1000);
}

void BM_conv_forward(benchmark::State& state) {
  Var x = variable(tensor4_type(DType::Float32), "x"), w = variable(tensor4_type(DType::Float32), "w");
  Function f = function({x, w}, {conv2d(x, w, half())});
  std::vector<NDArray> args{data().img, data().kern}, outs(1);
  for (auto _ : state) f.call(args, outs);
  set_flops(state);
}
BENCHMARK(BM_conv_forward)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_conv_grad_inputs(benchmark::State& state) {
  Var w = variable(tensor4_type(DType::Float32), "w"), t = variable(tensor4_type(DType::Float32), "t");
  Function f = function({w, t}, {conv2d_grad_wrt_inputs(w, t, int_constant(kHW), int_constant(kHW), half())});
  std::vector<NDArray> args{data().kern, data().top}, outs(1);
  for (auto _ : state) f.call(args, outs);
  set_flops(state);
}
BENCHMARK(BM_conv_grad_inputs)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_conv_grad_weights(benchmark::State& state) {
  Var x = variable(tensor4_type(DType::Float32), "x"), t = variable(tensor4_type(DType::Float32), "t");
  Function f = function({x, t}, {conv2d_grad_wrt_weights(x, t, int_constant(kK), int_constant(kK), half())});
  std::vector<NDArray> args{data().img, data().top}, outs(1);
  for (auto _ : state) f.call(args, outs);
  set_flops(state);
}
BENCHMARK(BM_conv_grad_weights)->Unit(benchmark::kMillisecond)->UseRealTime();

// The GEMM bound: per image, (64, 576) . (576, 3136) (forward), (576, 64) . (64, 3136) (grad
// inputs), (64, 3136) . (3136, 576) (grad weights), through cpu_matmul (the provider, its panels
// on the pool), one image after the other.
void gemm_bound(benchmark::State& state, int which) {
  const int64_t k = kC * kK * kK, hw = kHW * kHW;
  NDArray a = which == 0   ? random_f32({kC, k}, -1, 1, 4)
              : which == 1 ? random_f32({k, kC}, -1, 1, 4)
                           : random_f32({kC, hw}, -1, 1, 4);
  NDArray b = which == 0   ? random_f32({k, hw}, -1, 1, 5)
              : which == 1 ? random_f32({kC, hw}, -1, 1, 5)
                           : random_f32({hw, k}, -1, 1, 5);
  NDArray c = NDArray::empty({a.shape(0), b.shape(1)}, DType::Float32);
  for (auto _ : state)
    for (int64_t n = 0; n < kN; ++n) cpu_matmul(a, b, c, 1.0, which == 2 && n > 0 ? 1.0 : 0.0);
  set_flops(state);
}
void BM_gemm_bound_forward(benchmark::State& s) { gemm_bound(s, 0); }
void BM_gemm_bound_grad_inputs(benchmark::State& s) { gemm_bound(s, 1); }
void BM_gemm_bound_grad_weights(benchmark::State& s) { gemm_bound(s, 2); }
BENCHMARK(BM_gemm_bound_forward)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_gemm_bound_grad_inputs)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_gemm_bound_grad_weights)->Unit(benchmark::kMillisecond)->UseRealTime();

PoolParams max2x2() {
  PoolParams p;
  p.ws = {2, 2, 1};
  p.stride = {2, 2, 1};
  p.ignore_border = true;
  return p;
}

void BM_maxpool_forward(benchmark::State& state) {
  Var x = variable(tensor4_type(DType::Float32), "x");
  Function f = function({x}, {pool(x, max2x2())});
  std::vector<NDArray> args{data().img}, outs(1);
  for (auto _ : state) f.call(args, outs);
}
BENCHMARK(BM_maxpool_forward)->Unit(benchmark::kMicrosecond)->UseRealTime();

void BM_maxpool_grad(benchmark::State& state) {
  Var x = variable(tensor4_type(DType::Float32), "x"), g = variable(tensor4_type(DType::Float32), "g");
  Var y = pool(x, max2x2());
  Function f = function({x, g}, {max_pool_grad(x, y, g, max2x2())});
  std::vector<NDArray> args{data().img, random_f32({kN, kC, kHW / 2, kHW / 2}, -1, 1, 6)}, outs(1);
  for (auto _ : state) f.call(args, outs);
}
BENCHMARK(BM_maxpool_grad)->Unit(benchmark::kMicrosecond)->UseRealTime();

void BM_copy_activations(benchmark::State& state) {
  NDArray dst = NDArray::empty(data().img.shape(), DType::Float32);
  for (auto _ : state) {
    std::memcpy(dst.data<float>(), data().img.data<float>(), static_cast<size_t>(data().img.size()) * sizeof(float));
    benchmark::DoNotOptimize(dst.data<float>());
  }
}
BENCHMARK(BM_copy_activations)->Unit(benchmark::kMicrosecond)->UseRealTime();

}  // namespace
}  // namespace hypatia::bench

int main(int argc, char** argv) {
  return hypatia::bench::run_with_ratios(argc, argv,
                                         {{"BM_conv_forward/real_time", "BM_gemm_bound_forward/real_time"},
                                          {"BM_conv_grad_inputs/real_time", "BM_gemm_bound_grad_inputs/real_time"},
                                          {"BM_conv_grad_weights/real_time", "BM_gemm_bound_grad_weights/real_time"},
                                          {"BM_maxpool_forward/real_time", "BM_copy_activations/real_time"},
                                          {"BM_maxpool_grad/real_time", "BM_copy_activations/real_time"}});
}
