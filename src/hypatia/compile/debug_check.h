// DebugMode's check of the rewrites (Theano's BadOptimization): every replacement the pipeline
// made is checked, on each call, by computing both sides on the reference kernels without rewrites.
#pragma once
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "hypatia/compile/function.h"
#include "hypatia/graph/fgraph.h"

namespace hypatia {

/// A check run with each call's arguments: it computes the old and new variable of every
/// replacement in `log` (skipping those that involve in-place nodes) from `inputs`, and throws
/// InternalError ("BadOptimization") naming the rewrite when their values differ beyond rounding.
/// A replacement that turns a non-finite value into a finite one (a stability rewrite), or a NaN
/// into anything (an indeterminate form resolved, as x - x -> 0 does for inf), passes.
/// Null when there is nothing to check.
std::function<void(std::span<const NDArray>)> make_rewrite_check(const std::vector<In>& inputs,
                                                                 const std::vector<Replacement>& log,
                                                                 const std::string& label,
                                                                 const std::string& oracle_backend);

}  // namespace hypatia
