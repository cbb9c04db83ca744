// IfElse: Theano's lazy conditional (theano.ifelse.ifelse). Only the taken branch is computed:
// the branches are lazy inputs (Op::lazy_inputs), so the runtime runs the nodes that only one
// branch needs when, and if, the kernel asks for them.
#pragma once
#include <vector>

#include "hypatia/graph/graph.h"

namespace hypatia {

/// Inputs (cond, then_0 .. then_{n-1}, else_0 .. else_{n-1}); n outputs. cond is a 0-d value of
/// any dtype (true when nonzero; NaN is true, as in numpy). then_i and else_i have the same dtype
/// and ndim, and may differ in shape; output i has that dtype and is broadcastable where both
/// branches are. Output i is a view of the taken branch's value (no copy).
/// Gradient: the output gradient goes to the taken branch, zeros to the other (each an IfElse
/// again, so the gradient is lazy too); cond is not differentiable (disconnected). R_op: the
/// eval points chosen the same way.
class IfElse : public OpWithProps<IfElse> {
 public:
  int n_outs;

  explicit IfElse(int n) : n_outs(n) {}
  auto props() const { return std::make_tuple(n_outs); }
  /// "IfElse" (Theano's name), "IfElse{n_outs=2}" for several outputs.
  std::string name() const override;
  std::vector<TensorType> make_output_types(const std::vector<Var>& inputs) const override;
  std::vector<Var> grad(const Apply& node, const std::vector<Var>& output_grads) const override;
  std::vector<Var> rop(const Apply& node, const std::vector<Var>& eval_points) const override;
  std::vector<std::vector<bool>> connection_pattern(const Apply& node) const override;
  std::vector<bool> lazy_inputs() const override;
  AliasMap view_map() const override;
};

/// The values of `then_branches` when cond is true (nonzero), else those of `else_branches`;
/// only the chosen branch is computed. TypeError naming the output and both types when a pair
/// differs in dtype or ndim.
std::vector<Var> ifelse(Var cond, std::vector<Var> then_branches, std::vector<Var> else_branches);
/// ifelse with one output.
Var ifelse(Var cond, Var then_branch, Var else_branch);

}  // namespace hypatia
