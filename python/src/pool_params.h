// PoolParams as the plain tuple the bindings pass around (and pickle stores):
// (nd, ws, stride, pad, ignore_border, mode), ws/stride/pad as 3-tuples.
#pragma once
#include <nanobind/stl/array.h>

#include <array>
#include <string>
#include <tuple>

#include "hypatia/ops/pool.h"

namespace hypatia::python {

using Int3 = std::array<int64_t, 3>;
using PoolTuple = std::tuple<int, Int3, Int3, Int3, bool, std::string>;

inline PoolParams pool_params(const PoolTuple& t, const char* who) {
  PoolParams p;
  std::tie(p.nd, p.ws, p.stride, p.pad, p.ignore_border, p.mode) = t;
  p.check(who);
  return p;
}

inline PoolTuple pool_tuple(const PoolParams& p) { return {p.nd, p.ws, p.stride, p.pad, p.ignore_border, p.mode}; }

}  // namespace hypatia::python
