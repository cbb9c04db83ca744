// Seed 001: exp over a shared float32 vector of 230,400 elements, 1000 calls, with and without
// Out(borrow=true).
#include <chrono>
#include <cstdio>
#include <random>

#include "hypatia/hypatia.h"

using namespace hypatia;

int main() {
  const int64_t vlen = 10 * 30 * 768;
  const int iters = 1000;
  std::mt19937_64 rng(22);
  std::uniform_real_distribution<float> u(0, 1);
  NDArray v = NDArray::empty({vlen}, DType::Float32);
  for (int64_t i = 0; i < vlen; ++i) v.data<float>()[i] = u(rng);
  Var x = shared(v, "x");

  for (bool borrow : {false, true}) {
    Function f = function({}, {Out(exp(x), borrow)});
    NDArray r;
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < iters; ++i) r = f()[0];
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf("seed001 exp%s: looping %d times took %.4f s (%.1f us per call)\n", borrow ? " (borrow)" : "         ",
                iters, s, 1e6 * s / iters);
    std::printf("  result [%.6f %.6f %.6f ... %.6f]\n", r.get_flat(0), r.get_flat(1), r.get_flat(2),
                r.get_flat(vlen - 1));
    if (!borrow) {
      std::printf("  toposort:");
      for (const auto& n : f.toposort()) std::printf(" %s", n->op->name().c_str());
      std::printf("\n");
    }
  }
  return 0;
}
