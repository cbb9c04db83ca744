// Issue 9's threading cases, one per call of this program: prints the per-call time (min and
// median of --reps calls, in microseconds) of a case at one thread count. scripts/bench_threads.py
// runs it with num_threads=1 and the default, on a quiet machine and beside spinning processes,
// and prints each multi-threaded time against the single-threaded one measured under the same load.
//
//   bench_threads CASE [--threads N] [--reps R] [--gap-us G]   (N: config().num_threads, 0 = every
//   core; G: microseconds of busy work on the calling thread before each call)
//
// Cases: add1 (x + 1, 4M float32), chain6 (tanh(exp(x * 0.5 + 0.25) - 1.5) * 2, 4M float32),
// sum (x.sum(), 4M float32), sum_axis0 (column sums of 2048x2048 float32), softmax (rows of
// 4096x1024 float32), mlp (a 784-500-500-10 MLP training step, batch 256), seed000
// (dot(m, x) + b, 1000x1000 float32, m and b shared); gemm1000 and gemm_mlp (1000^3, and the 8
// GEMMs of one MLP step, through the CPU kernels' cpu_matmul) and raw_gemm1000 and raw_gemm_mlp
// (the same with cblas_sgemm called directly: OpenBLAS's own threading).
#include <cblas.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "bench_util.h"
#include "hypatia/backends/cpu/blas_matmul.h"

namespace hypatia::bench {
namespace {

constexpr int64_t kLen = 4 * 1024 * 1024;

// A compiled case: `step` makes one call.
struct Case {
  std::function<void()> step;
};

Case elemwise_case(Var out, Var x, NDArray xv) {
  auto f = std::make_shared<Function>(function({x}, {out}));
  auto args = std::make_shared<std::vector<NDArray>>(std::vector<NDArray>{std::move(xv)});
  auto outs = std::make_shared<std::vector<NDArray>>(1);
  return {[f, args, outs] { f->call(*args, *outs); }};
}

Case mlp_case() {
  Var x = variable(matrix_type(DType::Float32), "x");
  Var y = variable(vector_type(DType::Int64), "y");
  const int sizes[] = {784, 500, 500, 10};
  std::vector<Var> params;
  Var h = x;
  Var l2 = constant(NDArray::scalar(0.0, DType::Float32));
  for (int l = 0; l < 3; ++l) {
    Var w = shared(random_f32({sizes[l], sizes[l + 1]}, -0.05f, 0.05f, 2 + l), "W");
    Var b = shared(NDArray::zeros({sizes[l + 1]}, DType::Float32), "b");
    params.push_back(w);
    params.push_back(b);
    Var a = dot(h, w) + b;
    h = l < 2 ? tanh(a) : softmax(a);
    l2 = l2 + sum(sqr(w));
  }
  Var cost = mean(categorical_crossentropy(h, y)) + l2 * 1e-4;
  std::vector<Var> g = grad(cost, params);
  FunctionOptions opts;
  for (size_t i = 0; i < params.size(); ++i) opts.updates.push_back({params[i], params[i] - g[i] * 0.01});
  auto f = std::make_shared<Function>(function({x, y}, {cost}, opts));
  constexpr int kBatch = 256;
  NDArray yv = NDArray::empty({kBatch}, DType::Int64);
  for (int i = 0; i < kBatch; ++i) yv.data<int64_t>()[i] = i % 10;
  auto args = std::make_shared<std::vector<NDArray>>(std::vector<NDArray>{random_f32({kBatch, 784}, 0, 1, 3), yv});
  auto outs = std::make_shared<std::vector<NDArray>>(1);
  return {[f, args, outs] { f->call(*args, *outs); }};
}

Case seed000_case() {
  constexpr int64_t n = 1000;
  Var m = shared(random_f32({n, n}, -1, 1, 1), "m"), b = shared(random_f32({n, n}, -1, 1, 3), "b");
  Var x = variable(matrix_type(DType::Float32), "x");
  auto f = std::make_shared<Function>(function({x}, {dot(m, x) + b}));
  auto args = std::make_shared<std::vector<NDArray>>(std::vector<NDArray>{random_f32({n, n}, -1, 1, 2)});
  auto outs = std::make_shared<std::vector<NDArray>>(1);
  return {[f, args, outs] { f->call(*args, *outs); }};
}

// C = A.B for (m, k, n) shapes, through cpu_matmul or cblas_sgemm.
Case gemm_case(std::vector<std::array<int64_t, 3>> shapes, bool raw) {
  struct Op {
    NDArray a, b, c;
  };
  auto ops = std::make_shared<std::vector<Op>>();
  uint64_t seed = 1;
  for (auto [m, k, n] : shapes)
    ops->push_back(
        {random_f32({m, k}, -1, 1, seed++), random_f32({k, n}, -1, 1, seed++), NDArray::empty({m, n}, DType::Float32)});
  return {[ops, raw] {
    for (Op& o : *ops) {
      if (!raw) {
        cpu_matmul(o.a, o.b, o.c, 1.0, 0.0);
        continue;
      }
      const int m = static_cast<int>(o.a.shape(0)), k = static_cast<int>(o.a.shape(1)),
                n = static_cast<int>(o.b.shape(1));
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0f, o.a.data<float>(), k, o.b.data<float>(), n,
                  0.0f, o.c.data<float>(), n);
    }
  }};
}

// The GEMM shapes of one 784-500-500-10 training step, batch 256: forward x.W per layer, dW =
// h^T.d per layer, dh = d.W^T for layers 2 and 3 (all as plain products of the same sizes).
std::vector<std::array<int64_t, 3>> mlp_shapes() {
  return {{256, 784, 500}, {256, 500, 500}, {256, 500, 10},  {784, 256, 500},
          {500, 256, 500}, {500, 256, 10},  {256, 500, 500}, {256, 10, 500}};
}

Case make_case(const std::string& name) {
  Var v = variable(vector_type(DType::Float32), "x");
  Var m = variable(matrix_type(DType::Float32), "x");
  if (name == "add1") return elemwise_case(v + 1.0, v, random_f32({kLen}, -1, 1, 1));
  if (name == "chain6") return elemwise_case(tanh(exp(v * 0.5 + 0.25) - 1.5) * 2.0, v, random_f32({kLen}, -1, 1, 1));
  if (name == "sum") return elemwise_case(sum(v), v, random_f32({kLen}, -1, 1, 1));
  if (name == "sum_axis0") return elemwise_case(sum(m, std::vector<int>{0}), m, random_f32({2048, 2048}, -1, 1, 1));
  if (name == "softmax") return elemwise_case(softmax(m), m, random_f32({4096, 1024}, -4, 4, 1));
  if (name == "mlp") return mlp_case();
  if (name == "seed000") return seed000_case();
  if (name == "gemm1000") return gemm_case({{1000, 1000, 1000}}, false);
  if (name == "raw_gemm1000") return gemm_case({{1000, 1000, 1000}}, true);
  if (name == "gemm_mlp") return gemm_case(mlp_shapes(), false);
  if (name == "raw_gemm_mlp") return gemm_case(mlp_shapes(), true);
  std::fprintf(stderr, "bench_threads: unknown case '%s'\n", name.c_str());
  std::exit(2);
}

}  // namespace
}  // namespace hypatia::bench

int main(int argc, char** argv) {
  using namespace hypatia;
  if (argc < 2) {
    std::fprintf(stderr, "usage: bench_threads CASE [--threads N] [--reps R] [--gap-us G]\n");
    return 2;
  }
  int reps = 30;
  double gap_us = 0;
  for (int i = 2; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--gap-us") == 0) gap_us = std::atof(argv[i + 1]);
    if (std::strcmp(argv[i], "--threads") == 0) config().num_threads = std::atoi(argv[i + 1]);
    if (std::strcmp(argv[i], "--reps") == 0) reps = std::max(1, std::atoi(argv[i + 1]));
  }
  bench::Case c = bench::make_case(argv[1]);
  // Warm up (buffers, pages, worker threads) for 3 calls and 100 ms: the first ~30 parallel jobs
  // of a process can run as if on one core (a worker woken after the first calls' page faults is
  // placed on the caller's core until the scheduler balances), which is start-up, not steady state.
  const auto warm0 = std::chrono::steady_clock::now();
  for (int i = 0; i < 3 || std::chrono::steady_clock::now() - warm0 < std::chrono::milliseconds(100); ++i) c.step();
  std::vector<double> us;
  for (int i = 0; i < reps; ++i) {
    // Other work of the caller's between calls (a training loop's Python code, data loading):
    // busy, on the calling thread, so that the pool's workers see the gap.
    for (auto g0 = std::chrono::steady_clock::now();
         std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - g0).count() < gap_us;) {
    }
    auto t0 = std::chrono::steady_clock::now();
    c.step();
    us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(us.begin(), us.end());
  std::printf("%s threads=%d min_us=%.1f median_us=%.1f\n", argv[1], config().num_threads, us.front(),
              us[us.size() / 2]);
  return 0;
}
