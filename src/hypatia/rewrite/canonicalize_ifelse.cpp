// IfElse rules (phase canonicalize): an IfElse whose condition is a constant becomes the branch it
// takes (Theano's remove_constant_cond), and an output whose two
// branches are one variable becomes that variable (cond_remove_identical). Expects IfElse nodes
// as ifelse() builds them; guarantees each replacement has the replaced output's type (a branch
// broadcastable where the output is not is re-broadcast) and its values.
#include "hypatia/ops/ifelse.h"
#include "hypatia/rewrite/passes.h"
#include "hypatia/rewrite/rewrite_util.h"

namespace hypatia::rewrite {
namespace {

std::optional<std::vector<Var>> constant_condition(FunctionGraph&, Apply& n) {
  const auto c = scalar_constant(n.inputs[0]);
  if (!c) return std::nullopt;
  const int n_outs = static_cast<const IfElse&>(*n.op).n_outs;
  const int first = *c != 0 ? 1 : 1 + n_outs;  // NaN != 0: true, as the kernel reads it
  std::vector<Var> out;
  for (int i = 0; i < n_outs; ++i) out.push_back(retype(n.inputs[first + i], n.output(i)->type));
  return out;
}

std::optional<std::vector<Var>> identical_branches(FunctionGraph&, Apply& n) {
  const int n_outs = static_cast<const IfElse&>(*n.op).n_outs;
  for (int i = 0; i < n_outs; ++i)
    if (n.inputs[1 + i].get() != n.inputs[1 + n_outs + i].get()) return std::nullopt;
  std::vector<Var> out;
  for (int i = 0; i < n_outs; ++i) out.push_back(retype(n.inputs[1 + i], n.output(i)->type));
  return out;
}

}  // namespace

std::vector<LocalRewrite> canonicalize_ifelse_rules() {
  return {{"local_ifelse_constant_condition", {typeid(IfElse)}, constant_condition},
          {"local_ifelse_identical_branches", {typeid(IfElse)}, identical_branches}};
}

}  // namespace hypatia::rewrite
