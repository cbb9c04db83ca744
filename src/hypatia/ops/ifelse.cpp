// IfElse: types, gradient, R_op and builders (kernel: backends/ifelse_kernels.cpp).
#include "hypatia/ops/ifelse.h"

#include "hypatia/core/error.h"
#include "hypatia/ops/shape.h"

namespace hypatia {

std::string IfElse::name() const { return n_outs == 1 ? "IfElse" : "IfElse{n_outs=" + std::to_string(n_outs) + "}"; }

std::vector<TensorType> IfElse::make_output_types(const std::vector<Var>& in) const {
  const size_t n = static_cast<size_t>(n_outs);
  if (n_outs < 1 || in.size() != 1 + 2 * n)
    fail<TypeError>(name(), ": expected a condition and ", n_outs, " then and ", n_outs, " else branches (", 1 + 2 * n,
                    " inputs), got ", in.size(), " inputs");
  for (size_t i = 0; i < in.size(); ++i)
    if (!in[i]) fail<TypeError>(name(), ": input ", i, " is null");
  if (in[0]->ndim() != 0)
    fail<TypeError>(name(), ": the condition must be a scalar (0-d), got ", in[0]->type.str(),
                    "; reduce it first (T.any, T.all) or index one element");
  std::vector<TensorType> out;
  for (size_t i = 0; i < n; ++i) {
    const TensorType& a = in[1 + i]->type;
    const TensorType& b = in[1 + n + i]->type;
    if (a.dtype != b.dtype || a.ndim() != b.ndim())
      fail<TypeError>(name(), ": output ", i, ": the then branch is ", a.str(), " but the else branch is ", b.str(),
                      "; both branches must have the same dtype and number of dimensions (cast one with T.cast, ",
                      "or add dimensions with dimshuffle)");
    TensorType t = a;
    for (int d = 0; d < a.ndim(); ++d) t.broadcastable[d] = a.broadcastable[d] && b.broadcastable[d];
    out.push_back(std::move(t));
  }
  return out;
}

std::vector<bool> IfElse::lazy_inputs() const {
  std::vector<bool> lazy(1 + 2 * static_cast<size_t>(n_outs), true);
  lazy[0] = false;
  return lazy;
}

AliasMap IfElse::view_map() const {
  AliasMap m;
  for (int i = 0; i < n_outs; ++i) m.push_back({1 + i, 1 + n_outs + i});
  return m;
}

std::vector<std::vector<bool>> IfElse::connection_pattern(const Apply& node) const {
  std::vector<std::vector<bool>> p(node.inputs.size(), std::vector<bool>(n_outs, false));
  for (int i = 0; i < n_outs; ++i) p[1 + i][i] = p[1 + n_outs + i][i] = true;
  return p;
}

std::vector<Var> IfElse::grad(const Apply& node, const std::vector<Var>& gs) const {
  const Var& cond = node.inputs[0];
  std::vector<Var> grads(node.inputs.size());
  std::vector<Var> g_then, zero_then, g_else, zero_else;
  for (int i = 0; i < n_outs; ++i) {
    const Var& a = node.inputs[1 + i];
    const Var& b = node.inputs[1 + n_outs + i];
    // The output gradient in each branch's own type (a branch broadcastable where the other is
    // not has length 1 there whenever it is the one taken); none: zeros for both.
    zero_then.push_back(zeros_like(a));
    zero_else.push_back(zeros_like(b));
    g_then.push_back(gs[i] ? sum_to_type(gs[i], a->type) : zero_then.back());
    g_else.push_back(gs[i] ? sum_to_type(gs[i], b->type) : zero_else.back());
  }
  const std::vector<Var> to_then = ifelse(cond, g_then, zero_then);
  const std::vector<Var> to_else = ifelse(cond, zero_else, g_else);
  for (int i = 0; i < n_outs; ++i) {
    grads[1 + i] = to_then[i];
    grads[1 + n_outs + i] = to_else[i];
  }
  grads[0] = zeros_like(cond, is_float(cond->dtype()) ? cond->dtype() : DType::Float64);
  return grads;
}

std::vector<Var> IfElse::rop(const Apply& node, const std::vector<Var>& ev) const {
  std::vector<Var> a, b;
  for (int i = 0; i < n_outs; ++i) {
    const Var& ea = ev[1 + i];
    const Var& eb = ev[1 + n_outs + i];
    a.push_back(ea ? ea : zeros_like(node.inputs[1 + i]));
    b.push_back(eb ? eb : zeros_like(node.inputs[1 + n_outs + i]));
  }
  return ifelse(node.inputs[0], a, b);
}

std::vector<Var> ifelse(Var cond, std::vector<Var> then_branches, std::vector<Var> else_branches) {
  if (then_branches.size() != else_branches.size())
    fail<ValueError>("ifelse: the then branch has ", then_branches.size(), " outputs but the else branch has ",
                     else_branches.size(), "; give one value per output to each");
  if (then_branches.empty()) fail<ValueError>("ifelse: no outputs (give each branch at least one value)");
  std::vector<Var> in{std::move(cond)};
  in.insert(in.end(), then_branches.begin(), then_branches.end());
  in.insert(in.end(), else_branches.begin(), else_branches.end());
  return apply_op(std::make_shared<IfElse>(static_cast<int>(then_branches.size())), std::move(in));
}

Var ifelse(Var cond, Var then_branch, Var else_branch) {
  return ifelse(std::move(cond), std::vector<Var>{std::move(then_branch)}, std::vector<Var>{std::move(else_branch)})[0];
}

}  // namespace hypatia
