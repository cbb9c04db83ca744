// Issue 9's threading cases, one per call of this program: prints the per-call time (min and
// median of --reps calls, in microseconds) of a case at one thread count. scripts/bench_threads.py
// runs it with num_threads=1 and the default, on a quiet machine and beside spinning processes,
// and prints each multi-threaded time against the single-threaded one measured under the same load.
//
//   bench_threads CASE [--threads N] [--reps R]     (N: config().num_threads, 0 = every core)
//
// Cases: add1 (x + 1, 4M float32), chain6 (tanh(exp(x * 0.5 + 0.25) - 1.5) * 2, 4M float32),
// sum (x.sum(), 4M float32), sum_axis0 (column sums of 2048x2048 float32), softmax (rows of
// 4096x1024 float32), mlp (a 784-500-500-10 MLP training step, batch 256), seed000
// (dot(m, x) + b, 1000x1000 float32, m and b shared).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "bench_util.h"

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
  std::fprintf(stderr, "bench_threads: unknown case '%s'\n", name.c_str());
  std::exit(2);
}

}  // namespace
}  // namespace hypatia::bench

int main(int argc, char** argv) {
  using namespace hypatia;
  if (argc < 2) {
    std::fprintf(stderr, "usage: bench_threads CASE [--threads N] [--reps R]\n");
    return 2;
  }
  int reps = 30;
  for (int i = 2; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--threads") == 0) config().num_threads = std::atoi(argv[i + 1]);
    if (std::strcmp(argv[i], "--reps") == 0) reps = std::max(1, std::atoi(argv[i + 1]));
  }
  bench::Case c = bench::make_case(argv[1]);
  for (int i = 0; i < 3; ++i) c.step();  // warm up: buffers, pages, worker threads
  std::vector<double> us;
  for (int i = 0; i < reps; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    c.step();
    us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(us.begin(), us.end());
  std::printf("%s threads=%d min_us=%.1f median_us=%.1f\n", argv[1], config().num_threads, us.front(),
              us[us.size() / 2]);
  return 0;
}
