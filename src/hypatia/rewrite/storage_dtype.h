// Storage-only dtypes: a backend may store arrays of a dtype its kernels do not compute in
// (float16 on the CPU backends: stored as IEEE binary16, computed in float32, Theano's and
// numpy's "arithmetic in float32"). lower_storage_dtypes makes the graph say so, before the
// rewrites see it and again after them (a rewrite may build a node in the storage dtype).
#pragma once
#include <span>

#include "hypatia/core/dtype.h"
#include "hypatia/graph/fgraph.h"

namespace hypatia::rewrite {

/// Arrays of `storage` are kept as they are; arithmetic on them is done in `compute`.
struct StorageDType {
  DType storage;
  DType compute;
};

/// Every node that computes on a storage dtype (an input or output of that dtype) becomes the
/// same computation in the compute dtype: its storage-dtype inputs cast up, the node rebuilt on
/// them (a Reduce, ARange or Eye asked for the storage dtype asks for the compute one instead),
/// each storage-dtype output cast back down, so every op's result is rounded to the storage dtype
/// as the graph says. Nodes that only move or reinterpret elements are left alone: casts, views
/// and reshapes (DimShuffle, Reshape, Rebroadcast, basic Subtensor), Shape and Shape_i, the
/// transfers between devices, fused elementwise programs (fusion builds them from lowered nodes:
/// they store float16 and compute in float32) and ops that run inner functions (whose inner
/// graphs are lowered when they are compiled). Returns whether it changed the graph. Throws InternalError when an op
/// rebuilt on compute-dtype inputs still produces the storage dtype.
bool lower_storage_dtypes(FunctionGraph& fg, std::span<const StorageDType> storage);

}  // namespace hypatia::rewrite
