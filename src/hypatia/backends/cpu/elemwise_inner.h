// The per-(scalar op, compute type) inner loops of the CPU Elemwise kernel, shared with the
// fused Composite kernel.
#pragma once
#include <cstddef>
#include <cstdint>
#include <utility>

#include "hypatia/ops/elemwise.h"

namespace hypatia {

/// Computes n elements: out (byte stride os) from up to 3 inputs (byte strides is[k]) of the
/// compute type; `simd` allows the Highway loops on flat runs.
using InnerFn = void (*)(std::byte* out, int64_t os, const std::byte* const* in, const int64_t* is, int64_t n,
                         bool simd);

/// The inner loop of `op` reading inputs of type `compute`, and the dtype it writes (null when
/// the scalar op does not support that type).
std::pair<InnerFn, DType> elemwise_inner_fn(const Elemwise& op, DType compute);

}  // namespace hypatia
