// Internal: resolution of an index spec against run-time arrays, shared by the subtensor kernels.
#pragma once
#include <span>
#include <string>
#include <vector>

#include "hypatia/backends/registry.h"
#include "hypatia/ops/subtensor.h"

namespace hypatia::subtensor_engine {

/// An index spec applied to an array: the basic part as a view, the advanced part as int64
/// index arrays broadcast together (values normalized and bounds-checked).
struct Resolved {
  /// x after the Int/Slice/NewAxis entries (in advanced mode Int entries stay as axes).
  NDArray view;
  bool advanced = false;
  /// Axes of `view` indexed by `arrays` (one per array, in order).
  std::vector<int> adv_axes;
  /// C-contiguous int64 arrays of shape `bshape`.
  std::vector<NDArray> arrays;
  Shape bshape;
  /// Where the broadcast dims go in the result.
  int insert_pos = 0;
  Shape result_shape;
};

/// Resolves `spec` with index inputs `idx` on `x`; errors (IndexError, ValueError) name `op`.
Resolved resolve(const std::string& op, const IndexSpec& spec, const NDArray& x, std::span<NDArray* const> idx);

/// IncSubtensor's output before the scatter: x itself when the op is in place, else a copy of x
/// in the output cell (y's dtype checked to be x's, ValueError naming the op).
NDArray& inc_subtensor_output(const IncSubtensor& op, const KernelArgs& args);

/// out = x[index] for a resolved advanced index (out is prepared by the call).
void gather(const Resolved& r, NDArray& out);
/// x[index] = y (set) or x[index] += y (inc, repeated indices accumulate) in place on r.view's
/// buffer; y broadcasts to r.result_shape (ValueError naming `op` when it does not).
void scatter(const std::string& op, const Resolved& r, const NDArray& y, bool set);

}  // namespace hypatia::subtensor_engine
