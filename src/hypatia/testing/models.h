// Small models the tests and benchmarks build the same way: the MLP training step of seed 003 and
// anchors.py (tanh layers, a softmax output, the mean categorical cross-entropy, SGD).
#pragma once
#include <cstdint>
#include <functional>
#include <vector>

#include "hypatia/compile/function.h"
#include "hypatia/core/ndarray.h"
#include "hypatia/graph/graph.h"

namespace hypatia::testing {

/// An MLP's cost, its parameters (W0, b0, W1, b1, ...: shared variables) and their gradients.
struct Mlp {
  Var cost;
  std::vector<Var> params, grads;
  /// SGD: each parameter's update to itself minus `lr` times its gradient.
  Updates sgd(const Var& lr) const;
};

/// The MLP of layer sizes `sizes` (inputs first) on batch `x` (a matrix) with integer labels `y`
/// (variables or shared): tanh hidden layers, a softmax output, the mean categorical
/// cross-entropy. `init(shape, layer, is_bias)` gives each parameter's initial value.
Mlp mlp(const Var& x, const Var& y, const std::vector<int64_t>& sizes,
        const std::function<NDArray(const Shape& shape, int layer, bool is_bias)>& init);

}  // namespace hypatia::testing
