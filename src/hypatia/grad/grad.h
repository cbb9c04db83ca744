// Symbolic differentiation: reverse mode (grad, Lop), forward mode (Rop), jacobian, hessian,
// and the gradient ops (verify_grad, which checks gradients numerically, is in testing/).
#pragma once
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "hypatia/graph/graph.h"

namespace hypatia {

struct GradOptions {
  /// Variables treated as constants: no gradient flows through them.
  std::vector<Var> consider_constant;
  /// What to do when a wrt variable does not reach the cost: "raise", "warn" or "ignore"
  /// (the gradient is then zeros_like(wrt)).
  std::string disconnected_inputs = "raise";
  /// Gradients of the cost w.r.t. intermediate variables, given by the caller (their graphs are
  /// not differentiated further).
  std::vector<std::pair<Var, Var>> known_grads;
};

/// d cost / d wrt for each wrt. `cost` must be 0-d unless known_grads supplies the start
/// (cost may then be null).
std::vector<Var> grad(const Var& cost, const std::vector<Var>& wrt, const GradOptions& opts = {});
Var grad(const Var& cost, const Var& wrt, const GradOptions& opts = {});

/// Vector-Jacobian product: sum_i eval_points[i] * d f[i] / d wrt.
std::vector<Var> Lop(const std::vector<Var>& f, const std::vector<Var>& wrt, const std::vector<Var>& eval_points);
/// Jacobian-vector product: sum_j d f / d wrt[j] * eval_points[j], for each f.
std::vector<Var> Rop(const std::vector<Var>& f, const std::vector<Var>& wrt, const std::vector<Var>& eval_points);

/// d expression / d wrt for a 0-d or 1-d expression: shape expression.shape + wrt.shape.
Var jacobian(const Var& expression, const Var& wrt);
/// d^2 cost / d wrt^2 for a 0-d cost: shape wrt.shape + wrt.shape.
Var hessian(const Var& cost, const Var& wrt);

/// Wrapper that makes a variable's gradient zero (Theano's disconnected_grad / consider_constant op).
Var disconnected_grad(const Var& x);
/// Identity in the forward pass; clips the gradient to [lo, hi] in the backward pass.
Var grad_clip(const Var& x, double lo, double hi);
/// x in the forward pass; its gradient multiplied by `multiplier` (Theano's grad_scale).
Var grad_scale(const Var& x, double multiplier);

}  // namespace hypatia
