// DebugMode's checks of one kernel beyond the comparison with its reference kernel (Theano's
// DebugMode stride, preallocated-output and repeated-run checks): the kernel runs again on the same
// inputs into outputs prefilled with garbage, where its result must be the same bit for bit
// (deterministic, and nothing read from a stale output), and on non-contiguous copies of its
// inputs, where it must give the same values within rounding.
#pragma once
#include <span>
#include <vector>

#include "hypatia/backends/registry.h"
#include "hypatia/core/ndarray.h"
#include "hypatia/graph/graph.h"

namespace hypatia {

/// Whether a and b hold the same values (NaN equals NaN): bit for bit when exact, else within the
/// dtype's tolerance (float32: rtol 1e-4, atol 1e-5; float64: 1e-7, 1e-10).
bool values_close(const NDArray& a, const NDArray& b, bool exact);

/// After a run of `kernel` on `inputs` that wrote `outputs`: `before` holds copies of the inputs'
/// values before the run, `destroyed` which inputs the node overwrites. Throws InternalError
/// naming the op, the variation, the output and the first element that differs.
void check_kernel_variations(const Apply& node, Kernel& kernel, std::span<NDArray* const> inputs,
                             const std::vector<NDArray>& before, const std::vector<bool>& destroyed,
                             std::span<NDArray* const> outputs);

/// A copy of x whose last axis has stride 2 elements (a view into a buffer twice as long), or a
/// plain copy where x is 0-d or empty.
NDArray noncontiguous_copy(const NDArray& x);

}  // namespace hypatia
