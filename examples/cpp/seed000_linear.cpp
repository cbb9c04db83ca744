// Seed 000: y = m·x + b on 1000x1000 float32 matrices, 500 iterations, in the blog post's variants:
// all inputs passed, m and b shared, and everything shared with y updated in place of an output.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>

#include "hypatia/hypatia.h"

using namespace hypatia;

static NDArray randn(int64_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> d;
  NDArray a = NDArray::empty({n, n}, DType::Float32);
  for (int64_t i = 0; i < a.size(); ++i) a.data<float>()[i] = d(rng);
  return a;
}

template <class F>
static double seconds(F&& f) {
  auto t0 = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

int main(int argc, char** argv) {
  const int64_t n = argc > 1 ? std::atoll(argv[1]) : 1000;
  const int iters = argc > 2 ? std::atoi(argv[2]) : 500;
  NDArray m = randn(n, 1), x = randn(n, 2), b = randn(n, 3);

  // 1. Every operand is an input.
  Var tm = variable(matrix_type(DType::Float32), "m");
  Var tx = variable(matrix_type(DType::Float32), "x");
  Var tb = variable(matrix_type(DType::Float32), "b");
  Function line = function({tx, tm, tb}, {dot(tm, tx) + tb});
  NDArray y;
  double t1 = seconds([&] {
    for (int i = 0; i < iters; ++i) y = line({x, m, b})[0];
  });
  std::printf("seed000 all inputs:          %.3f s  (%d iterations of %lldx%lld)\n", t1, iters, (long long)n,
              (long long)n);

  // 2. m and b shared: only x is passed.
  Var sm = shared(m, "m"), sb = shared(b, "b");
  Function line2 = function({tx}, {dot(sm, tx) + sb});
  double t2 = seconds([&] {
    for (int i = 0; i < iters; ++i) y = line2({x})[0];
  });
  std::printf("seed000 m, b shared:         %.3f s\n", t2);

  // 3. Everything shared; y is updated, nothing crosses the call boundary.
  Var sx = shared(x, "x");
  Var sy = shared(NDArray::zeros({n, n}, DType::Float32), "y");
  FunctionOptions o;
  o.updates = {{sy, dot(sm, sx) + sb}};
  Function train = function({}, {}, o);
  double t3 = seconds([&] {
    for (int i = 0; i < iters; ++i) train();
  });
  std::printf("seed000 all shared, update:  %.3f s\n", t3);
  std::printf("check: y[0,0] = %.5f (all inputs) vs %.5f (updated shared)\n", y.get_flat(0),
              get_value(sy, true).get_flat(0));
  std::printf("\ncompiled graph of the all-shared function:\n%s", train.debugprint().c_str());
  return 0;
}
