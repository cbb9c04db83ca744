// Pooling geometries the CUDA tests check against the CPU kernels (test_cuda.cpp on a GPU,
// test_cuda_on_host_nnet.cpp on the host): each mode runs over each of them.
#pragma once
#include <array>
#include <string>
#include <vector>

#include "hypatia/hypatia.h"
#include "hypatia/ops/pool.h"
#include "hypatia/testing/opinfo.h"

namespace hypatia::testing {

struct PoolCase {
  int nd;
  std::array<int64_t, 3> ws, stride, pad;
  bool ignore_border;
  Shape x;

  PoolParams params(const std::string& mode) const {
    PoolParams p;
    p.nd = nd;
    p.ws = ws;
    p.stride = stride;
    p.pad = pad;
    p.ignore_border = ignore_border;
    p.mode = mode;
    return p;
  }
};

inline const std::vector<PoolCase>& pool_cases() {
  static const std::vector<PoolCase> cases = {
      {2, {2, 2, 1}, {2, 2, 1}, {0, 0, 0}, true, {2, 3, 9, 10}},    // the usual 2x2 / 2
      {2, {3, 3, 1}, {2, 2, 1}, {1, 1, 0}, true, {2, 2, 11, 9}},    // overlapping, padded
      {2, {3, 2, 1}, {1, 2, 1}, {0, 0, 0}, false, {3, 7, 9}},       // partial windows kept
      {2, {2, 2, 1}, {3, 3, 1}, {0, 0, 0}, false, {2, 2, 10, 11}},  // gaps between windows
      {2, {3, 3, 1}, {1, 1, 1}, {2, 2, 0}, true, {1, 1, 6, 5}},     // padding as wide as the window - 1
      {3, {2, 2, 2}, {1, 2, 2}, {0, 1, 1}, true, {2, 2, 5, 6, 7}},  // pool_3d
  };
  return cases;
}

inline const char* const kPoolModes[] = {"max", "sum", "average_inc_pad", "average_exc_pad"};

/// A pooling test's graph: x, y = pool(x), and gx, the gradient of sum(y * r); random values for x
/// (seed) and r (seed + 1; its shape is y's, computed on the CPU).
struct PoolGraph {
  Var x, y, gx;
  NDArray xv, r;
};
inline PoolGraph pool_graph(const PoolParams& p, const Shape& shape, DType dt, uint64_t seed) {
  PoolGraph g;
  g.x = tensor(dt, std::vector<bool>(static_cast<size_t>(shape.size()), false), "x");
  g.y = pool(g.x, p);
  g.xv = random_array(shape, dt, -2, 2, seed);
  FunctionOptions cpu;
  cpu.backend = "cpu";
  g.r = random_array(function({g.x}, {g.y}, cpu)({g.xv})[0].shape(), dt, -1, 1, seed + 1);
  g.gx = grad(sum(mul(g.y, constant(g.r))), std::vector<Var>{g.x})[0];
  return g;
}

}  // namespace hypatia::testing
