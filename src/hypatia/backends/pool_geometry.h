// The geometry every pooling kernel works on (the CPU's in pool_kernels.cpp, the CUDA backend's
// generated ones): a pooled tensor as (slices, D, H, W), the pooled axes last, D = 1 for pool_2d.
#pragma once
#include <array>
#include <cstdint>

#include "hypatia/ops/pool.h"

namespace hypatia::pool_geometry {

struct Geometry {
  int64_t slices = 1;
  std::array<int64_t, 3> in{1, 1, 1}, out{1, 1, 1};
  std::array<int64_t, 3> ws{1, 1, 1}, st{1, 1, 1}, pad{0, 0, 0};
  int64_t in_size() const { return in[0] * in[1] * in[2]; }
  int64_t out_size() const { return out[0] * out[1] * out[2]; }
};

/// x's geometry under p (the leading axes flattened into slices).
inline Geometry geometry(const PoolParams& p, const Shape& x) {
  Geometry g;
  const int lead = static_cast<int>(x.size()) - p.nd;
  for (int d = 0; d < lead; ++d) g.slices *= x[d];
  for (int d = 0; d < p.nd; ++d) {
    const int a = 3 - p.nd + d;  // pool_2d uses axes 1, 2 of the (D, H, W) triple
    g.in[a] = x[lead + d];
    g.out[a] = g.in[a] == 0 ? 0 : p.out_size(d, g.in[a]);
    g.ws[a] = p.ws[d];
    g.st[a] = p.stride[d];
    g.pad[a] = p.pad[d];
  }
  return g;
}

/// The pooled output's shape: x's with the pooled axes' lengths g.out.
inline Shape pooled_shape(const PoolParams& p, const Shape& x, const Geometry& g) {
  Shape s = x;
  for (int d = 0; d < p.nd; ++d) s[s.size() - p.nd + d] = g.out[3 - p.nd + d];
  return s;
}

}  // namespace hypatia::pool_geometry
