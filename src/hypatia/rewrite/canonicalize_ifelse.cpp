// IfElse rules (phase canonicalize): an IfElse whose condition is a constant becomes the branch it
// takes (Theano's remove_constant_cond); an output whose two branches are one variable becomes
// that variable (cond_remove_identical); a branch that is itself an IfElse on the same condition
// is replaced by the branch that one takes (cond_merge_ifs_true / _false); and an output whose two
// branches apply the same elementwise op (read by nothing else) chooses the op's inputs instead
// and applies the op once after the choice (the work common to both branches lifted out). The
// merge of IfElses on one condition into one node is a pass (ifelse_merge_pass). Expects IfElse
// nodes as ifelse() builds them; guarantees each replacement has the replaced output's type (a
// branch broadcastable where the output is not is re-broadcast) and its values.
#include <algorithm>
#include <unordered_map>

#include "hypatia/graph/fgraph.h"
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

/// ifelse(c, ifelse(c, a, b), d) -> ifelse(c, a, d); ifelse(c, d, ifelse(c, a, b)) -> ifelse(c, d, b).
std::optional<std::vector<Var>> nested_same_condition(FunctionGraph&, Apply& n) {
  const int n_outs = static_cast<const IfElse&>(*n.op).n_outs;
  std::vector<Var> in = n.inputs;
  bool changed = false;
  for (int i = 1; i < 1 + 2 * n_outs; ++i) {
    const Var& b = in[i];
    if (!b->owner || typeid(*b->owner->op) != typeid(IfElse) || b->owner->inputs[0].get() != n.inputs[0].get())
      continue;
    const int inner_outs = static_cast<const IfElse&>(*b->owner->op).n_outs;
    const bool then_side = i <= n_outs;  // the outer then branch runs when c holds: so does the inner's
    in[i] = b->owner->inputs[(then_side ? 1 : 1 + inner_outs) + b->index];
    changed = true;
  }
  if (!changed) return std::nullopt;
  std::vector<Var> outs = apply_op(n.op, in);
  for (int i = 0; i < n_outs; ++i) outs[i] = retype(outs[i], n.output(i)->type);
  return outs;
}

/// ifelse(c, f(a...), f(b...)) -> f(ifelse(c, a..., b...)) for one output whose branches are
/// single-output results of one elementwise op read by nothing else, on operands of the same
/// types: f runs once, after the choice.
std::optional<std::vector<Var>> lift_common_op(FunctionGraph& fg, Apply& n) {
  const int n_outs = static_cast<const IfElse&>(*n.op).n_outs;
  if (n_outs != 1) return std::nullopt;
  const Var& a = n.inputs[1];
  const Var& b = n.inputs[2];
  if (!a->owner || !b->owner || a->owner == b->owner || !elemwise_op(a->owner) || !elemwise_op(b->owner) ||
      !a->owner->op->equals(*b->owner->op) || a->owner->nout() != 1 || b->owner->nout() != 1 ||
      !a->owner->op->destroy_map().empty())
    return std::nullopt;
  if (fg.clients(a.get()).size() != 1 || fg.clients(b.get()).size() != 1) return std::nullopt;
  const auto& ai = a->owner->inputs;
  const auto& bi = b->owner->inputs;
  if (ai.size() != bi.size()) return std::nullopt;
  // Operands of one type pairwise: a chosen operand broadcastable in one branch only would be a
  // length-1 axis the op (typed not broadcastable there) refuses at run time.
  for (size_t i = 0; i < ai.size(); ++i)
    if (!(ai[i]->type == bi[i]->type)) return std::nullopt;
  std::vector<Var> chosen = ifelse(n.inputs[0], ai, bi);
  Var out = apply_op1(a->owner->op, chosen);
  if (out->dtype() != n.output(0)->dtype() || out->ndim() != n.output(0)->ndim()) return std::nullopt;
  return std::vector<Var>{retype(out, n.output(0)->type)};
}

}  // namespace

std::vector<LocalRewrite> canonicalize_ifelse_rules() {
  return {{"local_ifelse_constant_condition", {typeid(IfElse)}, constant_condition},
          {"local_ifelse_identical_branches", {typeid(IfElse)}, identical_branches},
          {"local_ifelse_nested_same_condition", {typeid(IfElse)}, nested_same_condition},
          {"local_ifelse_lift_common_op", {typeid(IfElse)}, lift_common_op}};
}

bool ifelse_merge_pass(FunctionGraph& fg) {
  // IfElse nodes on one condition, none reading another's output (directly or not), become one
  // node with every output: the condition is tested once and each branch's nodes stay lazy.
  bool changed = false;
  const auto groups = mergeable_groups<const Variable*>(fg, [](const Apply& n) -> std::optional<const Variable*> {
    if (typeid(*n.op) != typeid(IfElse)) return std::nullopt;
    return n.inputs[0].get();  // the condition
  });
  for (const auto& group : groups) {
    std::vector<Var> thens, elses;
    for (Apply* m : group) {
      const int k = static_cast<const IfElse&>(*m->op).n_outs;
      thens.insert(thens.end(), m->inputs.begin() + 1, m->inputs.begin() + 1 + k);
      elses.insert(elses.end(), m->inputs.begin() + 1 + k, m->inputs.end());
    }
    std::vector<Var> outs = ifelse(group[0]->inputs[0], thens, elses);
    std::vector<std::pair<Var, Var>> pairs;
    size_t o = 0;
    for (Apply* m : group)
      for (int i = 0; i < m->nout(); ++i, ++o) pairs.emplace_back(m->output(i), retype(outs[o], m->output(i)->type));
    replace_by_rewrite(fg, pairs, "ifelse_merge");
    changed = true;
  }
  return changed;
}

}  // namespace hypatia::rewrite
