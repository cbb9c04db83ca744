#include "hypatia/grad/grad.h"

#include <cmath>
#include <iostream>
#include <random>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "hypatia/core/error.h"
#include "hypatia/core/messages.h"
#include "hypatia/grad/grad_ops.h"
#include "hypatia/graph/fgraph.h"
#include "hypatia/graph/printing.h"
#include "hypatia/ops/elemwise.h"
#include "hypatia/ops/reduce.h"
#include "hypatia/ops/shape.h"

namespace hypatia {
namespace {

/// d cost / d cost = 1, reading the cost's shape, as Theano's fill(cost, 1) reads the cost: a
/// function of the gradient alone then uses every input the cost uses (d(3a)/da compiles with a as
/// its input, not as an unused one); shape inference makes it the constant 1 when compiled.
Var seed_of(const Var& cost) { return reshape(ones({int_constant(1)}, cost->dtype()), shape(cost), 0); }

/// Makes a gradient fit its variable's type: same dtype, and broadcastable where the variable is.
Var fit_grad(const Var& g, const Var& v) {
  Var r = g;
  if (r->ndim() != v->ndim())
    throw InternalError("grad: a gradient of " + v->str() + " has " + std::to_string(r->ndim()) +
                        " dimensions; expected " + std::to_string(v->ndim()));
  if (r->dtype() != v->dtype() && is_float(v->dtype())) r = cast(r, v->dtype());
  std::vector<int> axes;
  for (int d = 0; d < v->ndim(); ++d)
    if (v->type.broadcastable[d] && !r->type.broadcastable[d]) axes.push_back(d);
  if (!axes.empty()) r = sum(r, axes, /*keepdims=*/true);
  return r;
}

Var accumulate(const Var& a, const Var& b) {
  if (!a) return b;
  if (a->kind == VarKind::NullGrad) return a;
  if (b->kind == VarKind::NullGrad) return b;
  return add(a, b);
}

/// `vals`, built on the fresh inputs `ins` of `node`'s inner graph, rebuilt on the node's own
/// inputs (only the nodes between the fresh inputs and `vals` are copied, so the graph above the
/// node is shared, not duplicated).
std::vector<Var> rebind(const Apply& node, const std::vector<Var>& ins, std::vector<Var> vals) {
  std::unordered_map<const Variable*, Var> memo;
  for (size_t i = 0; i < ins.size(); ++i) memo[ins[i].get()] = node.inputs[i];
  for (const auto& n : toposort(vals)) {
    bool touched = false;
    std::vector<Var> args;
    for (const Var& v : n->inputs) {
      auto it = memo.find(v.get());
      touched |= it != memo.end();
      args.push_back(it != memo.end() ? it->second : v);
    }
    if (!touched) continue;
    auto outs2 = apply_op(n->op, args);
    for (int k = 0; k < n->nout(); ++k) memo[n->output_ptr(k)] = outs2[k];
  }
  for (Var& v : vals) {
    auto it = memo.find(v.get());
    if (it != memo.end()) v = it->second;
  }
  return vals;
}

/// The input gradients of a node whose op has an inner graph: that graph differentiated, then
/// rebound to the node's inputs.
std::vector<Var> grad_through(const Apply& node, const std::vector<Var>& ins, const std::vector<Var>& outs,
                              const std::vector<Var>& output_grads) {
  GradOptions o;
  o.disconnected_inputs = "ignore";
  for (size_t k = 0; k < outs.size() && k < output_grads.size(); ++k)
    if (output_grads[k]) o.known_grads.emplace_back(outs[k], output_grads[k]);
  if (o.known_grads.empty()) return std::vector<Var>(node.inputs.size());
  return rebind(node, ins, grad(nullptr, ins, o));
}

/// The forward-mode derivatives of such a node's outputs: Rop through its inner graph, rebound
/// to the node's inputs (the eval points are the caller's variables already).
std::vector<Var> rop_through(const Apply& node, const std::vector<Var>& ins, const std::vector<Var>& outs,
                             const std::vector<Var>& eval_points) {
  std::vector<Var> wrt, pts;
  for (size_t i = 0; i < ins.size() && i < eval_points.size(); ++i)
    if (eval_points[i]) {
      wrt.push_back(ins[i]);
      pts.push_back(eval_points[i]);
    }
  if (wrt.empty()) return std::vector<Var>(outs.size());
  return rebind(node, ins, Rop(outs, wrt, pts));
}

std::vector<Var> op_grad(const Apply& n, const std::vector<Var>& output_grads) {
  if (auto inner = n.op->inner_graph(n)) return grad_through(n, inner->first, inner->second, output_grads);
  return n.op->grad(n, output_grads);
}

std::vector<Var> op_rop(const Apply& n, const std::vector<Var>& eval_points) {
  if (auto inner = n.op->inner_graph(n)) return rop_through(n, inner->first, inner->second, eval_points);
  return n.op->rop(n, eval_points);
}

}  // namespace

std::vector<Var> grad(const Var& cost, const std::vector<Var>& wrt, const GradOptions& opts) {
  if (opts.disconnected_inputs != "raise" && opts.disconnected_inputs != "warn" && opts.disconnected_inputs != "ignore")
    fail<ValueError>("grad: disconnected_inputs must be 'raise', 'warn' or 'ignore', got '", opts.disconnected_inputs,
                     "'");
  if (!cost && opts.known_grads.empty()) fail<ValueError>("grad: cost is null and no known_grads were given");
  if (cost && cost->ndim() != 0)
    fail<TypeError>("grad: cost must be a scalar (0-d); got ", cost->type.str(),
                    ". Sum or average it first, or pass known_grads.");
  if (cost && !is_float(cost->dtype())) fail<TypeError>("grad: cost must have a float dtype; got ", cost->type.str());
  for (size_t i = 0; i < wrt.size(); ++i)
    if (!wrt[i]) fail<TypeError>("grad: wrt[", i, "] is null");

  // Which variables depend on some wrt (through differentiable connections)?
  std::vector<Var> roots;
  if (cost) roots.push_back(cost);
  for (const auto& [v, g] : opts.known_grads) roots.push_back(v);
  auto order = toposort(roots);
  std::unordered_set<const Variable*> blocked;
  for (const auto& v : opts.consider_constant) blocked.insert(v.get());
  std::unordered_set<const Variable*> depends;
  for (const auto& w : wrt)
    if (!blocked.count(w.get())) depends.insert(w.get());
  for (const auto& n : order) {
    auto pattern = n->op->connection_pattern(*n);
    for (int o = 0; o < n->nout(); ++o) {
      if (blocked.count(n->output_ptr(o))) continue;
      for (size_t i = 0; i < n->inputs.size(); ++i)
        if (pattern[i][o] && depends.count(n->inputs[i].get())) {
          depends.insert(n->output_ptr(o));
          break;
        }
    }
  }

  std::unordered_map<const Variable*, Var> grads;
  if (cost) grads[cost.get()] = seed_of(cost);
  for (const auto& [v, g] : opts.known_grads) {
    if (!v || !g) fail<TypeError>("grad: null variable in known_grads");
    if (g->ndim() != v->ndim())
      fail<TypeError>("grad: known gradient of ", v->str(), " has ", g->ndim(), " dimensions; expected ", v->ndim());
    grads[v.get()] = accumulate(grads[v.get()], fit_grad(g, v));
  }
  std::unordered_set<const Variable*> known;
  for (const auto& [v, g] : opts.known_grads) known.insert(v.get());

  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    Apply& n = **it;
    bool any_out = false;
    for (int o = 0; o < n.nout(); ++o) any_out |= grads.count(n.output_ptr(o)) && grads[n.output_ptr(o)];
    bool any_in = false;
    for (const auto& in : n.inputs) any_in |= depends.count(in.get()) > 0;
    if (!any_out || !any_in) continue;
    bool all_known = true;
    for (int o = 0; o < n.nout(); ++o) all_known &= known.count(n.output_ptr(o)) > 0 || !grads.count(n.output_ptr(o));
    std::vector<Var> out_grads(n.nout());
    std::string null_reason;
    for (int o = 0; o < n.nout(); ++o) {
      auto g = grads.find(n.output_ptr(o));
      if (g != grads.end() && g->second) {
        if (g->second->kind == VarKind::NullGrad) null_reason = g->second->null_reason;
        out_grads[o] = g->second;
      } else if (n.nout() > 1) {
        out_grads[o] = zeros_like(n.output(o));
      }
    }
    std::vector<Var> in_grads;
    if (!null_reason.empty()) {
      in_grads.assign(n.inputs.size(), nullptr);
      for (size_t i = 0; i < n.inputs.size(); ++i)
        if (depends.count(n.inputs[i].get()))
          in_grads[i] = grad_undefined(*n.op, static_cast<int>(i), n.inputs[i]->type, null_reason);
    } else {
      in_grads = op_grad(n, out_grads);
    }
    if (in_grads.size() != n.inputs.size())
      throw InternalError(n.op->name() + ": grad returned " + std::to_string(in_grads.size()) + " gradients for " +
                          std::to_string(n.inputs.size()) + " inputs");
    (void)all_known;
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      const Var& in = n.inputs[i];
      if (!depends.count(in.get()) || !in_grads[i]) continue;
      Var g = in_grads[i]->kind == VarKind::NullGrad ? in_grads[i] : fit_grad(in_grads[i], in);
      grads[in.get()] = accumulate(grads[in.get()], g);
    }
  }

  std::vector<Var> result;
  for (size_t i = 0; i < wrt.size(); ++i) {
    const Var& w = wrt[i];
    auto it = grads.find(w.get());
    if (it != grads.end() && it->second) {
      if (it->second->kind == VarKind::NullGrad)
        fail<NotDifferentiableError>("grad: the gradient with respect to ", w->str(),
                                     " is undefined: ", it->second->null_reason);
      result.push_back(it->second);
      continue;
    }
    if (cost && w.get() == cost.get()) {
      result.push_back(seed_of(cost));
      continue;
    }
    std::ostringstream msg;
    msg << "grad method was asked to compute the gradient with respect to a variable that is not part of the "
           "computational graph of the cost, or is used only by a non-differentiable operator: "
        << w->str() << " (wrt[" << i << "], " << w->type.str() << ")";
    if (opts.disconnected_inputs == "raise") throw DisconnectedInputError(msg.str());
    if (opts.disconnected_inputs == "warn") warn(msg.str());
    result.push_back(zeros_like(w, is_float(w->dtype()) ? w->dtype() : DType::Float64));
  }
  return result;
}

Var grad(const Var& cost, const Var& wrt, const GradOptions& opts) {
  return grad(cost, std::vector<Var>{wrt}, opts)[0];
}

std::vector<Var> Lop(const std::vector<Var>& f, const std::vector<Var>& wrt, const std::vector<Var>& eval_points) {
  if (f.size() != eval_points.size())
    fail<ValueError>("Lop: ", f.size(), " expressions but ", eval_points.size(), " eval points");
  GradOptions o;
  for (size_t i = 0; i < f.size(); ++i) {
    if (!f[i] || !eval_points[i]) fail<TypeError>("Lop: null expression or eval point");
    if (f[i]->ndim() != eval_points[i]->ndim())
      fail<TypeError>("Lop: eval point ", i, " has ", eval_points[i]->ndim(), " dimensions; expression ", f[i]->str(),
                      " has ", f[i]->ndim());
    o.known_grads.emplace_back(f[i], eval_points[i]);
  }
  o.disconnected_inputs = "ignore";
  return grad(nullptr, wrt, o);
}

std::vector<Var> Rop(const std::vector<Var>& f, const std::vector<Var>& wrt, const std::vector<Var>& eval_points) {
  if (wrt.size() != eval_points.size())
    fail<ValueError>("Rop: ", wrt.size(), " wrt variables but ", eval_points.size(), " eval points");
  std::unordered_map<const Variable*, Var> tangent;
  for (size_t i = 0; i < wrt.size(); ++i) {
    if (!wrt[i] || !eval_points[i]) fail<TypeError>("Rop: null wrt or eval point");
    if (!(wrt[i]->type.ndim() == eval_points[i]->type.ndim()))
      fail<TypeError>("Rop: eval point ", i, " has type ", eval_points[i]->type.str(), "; wrt has ",
                      wrt[i]->type.str());
    tangent[wrt[i].get()] = eval_points[i];
  }
  for (const auto& n : toposort(f)) {
    std::vector<Var> pts(n->inputs.size());
    bool any = false;
    for (size_t i = 0; i < n->inputs.size(); ++i)
      if (auto it = tangent.find(n->inputs[i].get()); it != tangent.end()) {
        pts[i] = it->second;
        any = true;
      }
    // Integer and boolean values (shapes, indices, comparisons) have no derivative: their nodes
    // carry no tangent (Theano's Shape_i.R_op is None), so an op without an R_op there is no error.
    bool float_out = false;
    for (int o = 0; o < n->nout(); ++o) float_out = float_out || is_float(n->output_ptr(o)->dtype());
    if (!any || !float_out) continue;
    auto outs = op_rop(*n, pts);
    for (int o = 0; o < n->nout(); ++o)
      if (o < static_cast<int>(outs.size()) && outs[o]) tangent[n->output_ptr(o)] = fit_grad(outs[o], n->output(o));
  }
  std::vector<Var> r;
  for (const auto& v : f) {
    auto it = tangent.find(v.get());
    r.push_back(it != tangent.end() ? it->second : zeros_like(v));
  }
  return r;
}

std::vector<TensorType> MapIndexOp::make_output_types(const std::vector<Var>& in) const {
  if (in.empty() || in[0]->ndim() != 0 || !is_integer(in[0]->dtype()))
    fail<TypeError>("MapIndex: input 0 must be a 0-d integer count");
  std::vector<bool> bc{false};
  bc.insert(bc.end(), body->type.broadcastable.begin(), body->type.broadcastable.end());
  return {TensorType(body->dtype(), bc)};
}

Var jacobian(const Var& expression, const Var& wrt) {
  if (!expression || !wrt) fail<TypeError>("jacobian: null variable");
  if (expression->ndim() == 0) return grad(expression, wrt);
  Var flat = expression->ndim() == 1 ? expression : flatten(expression, 1);
  // Row i of the jacobian is the vector-Jacobian product with the i-th unit vector.
  Var i = variable(scalar_type(DType::Int64), "i");
  Var n = shape_i(flat, 0);
  Var onehot = cast(eq(arange(int_constant(0), n, int_constant(1), DType::Int64), i), flat->dtype());
  Var body = Lop({flat}, {wrt}, {onehot})[0];
  // Only what depends on i runs per row: the values the per-row nodes read that do not depend on
  // i (the forward pass, the weights, ...) are computed once in the outer graph and captured as
  // inputs of the body (loop-invariant work pushed out of the loop).
  std::unordered_set<const Variable*> per_row{i.get()};
  const auto order = toposort({body});
  for (const auto& node : order) {
    bool depends = false;
    for (const Var& v : node->inputs) depends = depends || per_row.count(v.get()) > 0;
    if (depends)
      for (int o = 0; o < node->nout(); ++o) per_row.insert(node->output_ptr(o));
  }
  std::vector<Var> outer;  // the invariant values the body reads, in first-read order
  std::unordered_set<const Variable*> seen;
  auto capture = [&](const Var& v) {
    if (per_row.count(v.get()) || v->is_constant() || !seen.insert(v.get()).second) return;
    outer.push_back(v);
  };
  if (!per_row.count(body.get())) capture(body);  // every row is the same value
  for (const auto& node : order)
    if (per_row.count(node->output_ptr(0)))
      for (const Var& v : node->inputs) capture(v);
  std::vector<Var> captured;
  std::vector<std::pair<Var, Var>> replace;
  for (const Var& v : outer) {
    captured.push_back(variable(v->type, v->name));
    replace.emplace_back(v, captured.back());
  }
  Var inner_body = clone_graph({body}, replace)[0];
  auto op = std::make_shared<MapIndexOp>(i, captured, inner_body);
  std::vector<Var> ins{n};
  ins.insert(ins.end(), outer.begin(), outer.end());
  return apply_op1(op, ins);
}

Var hessian(const Var& cost, const Var& wrt) {
  if (!cost || cost->ndim() != 0) fail<TypeError>("hessian: cost must be a scalar (0-d)");
  Var g = grad(cost, wrt);
  return jacobian(g->ndim() <= 1 ? g : flatten(g, 1), wrt);
}

std::vector<TensorType> DisconnectedGradOp::make_output_types(const std::vector<Var>& in) const {
  if (in.size() != 1) fail<TypeError>("DisconnectedGrad: expected 1 input, got ", in.size());
  return {in[0]->type};
}

std::string GradClipOp::name() const {
  std::ostringstream os;
  os << "GradClip{" << lo << "," << hi << "}";
  return os.str();
}

std::vector<TensorType> GradClipOp::make_output_types(const std::vector<Var>& in) const {
  if (in.size() != 1) fail<TypeError>(name(), ": expected 1 input, got ", in.size());
  if (!(lo <= hi)) fail<ValueError>(name(), ": lower bound ", lo, " exceeds upper bound ", hi);
  return {in[0]->type};
}

std::vector<Var> GradClipOp::grad(const Apply& node, const std::vector<Var>& g) const {
  return {clip(g[0], scalar_like(lo, g[0]), scalar_like(hi, g[0]))};
}

std::string GradScaleOp::name() const {
  std::ostringstream os;
  os << "GradScale{" << multiplier << "}";
  return os.str();
}

std::vector<TensorType> GradScaleOp::make_output_types(const std::vector<Var>& in) const {
  if (in.size() != 1) fail<TypeError>(name(), ": expected 1 input, got ", in.size());
  if (!std::isfinite(multiplier)) fail<ValueError>(name(), ": the multiplier must be finite, got ", multiplier);
  return {in[0]->type};
}

std::vector<Var> GradScaleOp::grad(const Apply& node, const std::vector<Var>& g) const {
  return {mul(g[0], scalar_like(multiplier, g[0]))};
}

Var disconnected_grad(const Var& x) { return apply_op1(std::make_shared<DisconnectedGradOp>(), {x}); }
Var grad_clip(const Var& x, double lo, double hi) { return apply_op1(std::make_shared<GradClipOp>(lo, hi), {x}); }
Var grad_scale(const Var& x, double multiplier) { return apply_op1(std::make_shared<GradScaleOp>(multiplier), {x}); }

}  // namespace hypatia
