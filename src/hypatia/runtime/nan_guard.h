// NanGuardMode's check (Theano's compile.nanguardmode): after a node runs, its floating outputs
// must hold no NaN, no infinity and no value of magnitude above `big` (each check optional). A
// function input that already holds one is named as the culprit instead of the node that read it.
#pragma once
#include "hypatia/backends/registry.h"

namespace hypatia {

struct NanGuardOptions {
  bool nan = true, inf = true, big = true;
  double big_threshold = 1e10;  ///< Theano's: |x| > 1e10 is "big"
};

/// Throws NanGuardError naming the input (a function input or shared variable) or the
/// output that breaks a check: the first bad element, what it is, and the statistics (min, max,
/// mean, NaN and infinity counts) of every input of the node.
void nan_guard_check(const Apply& node, const KernelArgs& args, const NanGuardOptions& opts);

}  // namespace hypatia
