// merge, constant folding, canonicalize, stabilize and specialize.
#include <cmath>
#include <cstring>
#include <map>
#include <unordered_map>

#include "hypatia/ops/elemwise.h"
#include "hypatia/ops/nnet.h"
#include "hypatia/ops/reduce.h"
#include "hypatia/ops/shape.h"
#include "hypatia/ops/subtensor.h"
#include "hypatia/rewrite/rewrite_util.h"
#include "hypatia/rewrite/target.h"

namespace hypatia::rewrite {

const Elemwise* elemwise_op(const Apply* n) {
  if (!n || typeid(*n->op) != typeid(Elemwise)) return nullptr;
  const auto* e = static_cast<const Elemwise*>(n->op.get());
  return e->inplace < 0 ? e : nullptr;
}

const Elemwise* elemwise_of(const Var& v, ScalarOpKind k) {
  const Elemwise* e = v ? elemwise_op(v->owner) : nullptr;
  return e && e->scalar == k ? e : nullptr;
}

std::optional<double> scalar_constant(const Var& v) {
  Var x = v;
  while (x->owner && typeid(*x->owner->op) == typeid(DimShuffle)) x = x->owner->inputs[0];
  if (!x->is_constant() || x->data.size() == 0 || x->data.size() > 4096) return std::nullopt;
  const double first = x->data.get_flat(0);
  for (int64_t i = 1; i < x->data.size(); ++i)
    if (!(x->data.get_flat(i) == first)) return std::nullopt;
  return first;
}

Var as_type(Var x, const TensorType& t) {
  if (!x) return nullptr;
  if (x->type == t) return x;
  if (x->ndim() != t.ndim()) return nullptr;
  for (int d = 0; d < t.ndim(); ++d)
    if (x->type.broadcastable[d] && !t.broadcastable[d]) return nullptr;  // x would need broadcasting
  if (x->dtype() != t.dtype) x = cast(x, t.dtype);
  if (x->type == t) return x;
  return patternbroadcast(x, t.broadcastable);
}

std::optional<std::vector<Var>> one(Var v) {
  if (!v) return std::nullopt;
  return std::vector<Var>{std::move(v)};
}

Var typed_constant(NDArray value, const TensorType& t) {
  auto v = std::make_shared<Variable>(t, VarKind::Constant);
  v->data = std::move(value);
  return v;
}

namespace {

// ---------------------------------------------------------------------------------------------
// merge: one node per (op, inputs), one constant per value.

std::string constant_key(const Var& v) {
  const NDArray& a = v->data;
  std::string key = v->type.str() + a.shape().str();
  NDArray c = a.ascontiguous();
  key.append(reinterpret_cast<const char*>(c.raw()), static_cast<size_t>(c.nbytes()));
  return key;
}

bool merge_pass(FunctionGraph& fg) {
  bool changed = false;
  std::unordered_map<std::string, Var> consts;
  for (const Var& v : fg.orphans()) {
    if (!v->is_constant() || v->data.size() > 65536) continue;
    auto [it, fresh] = consts.emplace(constant_key(v), v);
    if (!fresh && it->second->type == v->type) {
      replace_by_rewrite(fg, {{v, it->second}}, "merge");
      changed = true;
    }
  }
  std::unordered_map<size_t, std::vector<Apply*>> seen;
  for (const auto& n : fg.toposort()) {
    if (!fg.contains(n.get())) continue;
    if (!n->op->destroy_map().empty()) continue;
    size_t h = n->op->hash();
    for (const auto& in : n->inputs) hash_combine(h, std::hash<const void*>()(in.get()));
    auto& bucket = seen[h];
    Apply* same = nullptr;
    for (Apply* m : bucket) {
      if (!fg.contains(m) || m->inputs.size() != n->inputs.size() || !m->op->equals(*n->op)) continue;
      bool eq = true;
      for (size_t i = 0; i < m->inputs.size() && eq; ++i) eq = m->inputs[i].get() == n->inputs[i].get();
      if (eq) {
        same = m;
        break;
      }
    }
    if (!same) {
      bucket.push_back(n.get());
      continue;
    }
    std::vector<std::pair<Var, Var>> pairs;
    for (int o = 0; o < n->nout(); ++o) pairs.emplace_back(n->output(o), same->output(o));
    replace_by_rewrite(fg, pairs, "merge");
    changed = true;
  }
  return changed;
}

// ---------------------------------------------------------------------------------------------
// constant folding

constexpr int64_t kMaxFoldElements = 65536;

// Whether the node's infer_shape, on its constant inputs, says an output has more than
// kMaxFoldElements elements (or a count past int64, or shape arithmetic that fails): such a node
// is not folded, so that compiling T.alloc(0., 2**40) or T.eye(10**5) allocates nothing.
bool fold_output_too_large(const Apply& n) {
  std::vector<ShapeVars> in_shapes;
  for (const auto& in : n.inputs) in_shapes.push_back(shape_vars(in));
  std::vector<ShapeVars> shapes;
  try {
    shapes = n.op->infer_shape(n, in_shapes);
  } catch (const Error&) {
    return true;
  }
  for (const ShapeVars& s : shapes) {
    int64_t total = 1;
    for (const Var& d : s) {
      if (!d || !d->is_constant() || d->ndim() != 0 || !is_integer(d->dtype())) {
        total = -1;  // unknown: the size check after the kernel decides
        break;
      }
      const int64_t v = d->data.get_flat_int(0);
      if (v < 0) {
        total = -1;  // invalid: the kernel raises, and the error surfaces at run time
        break;
      }
      if (v == 0) {
        total = 0;
        continue;
      }
      auto p = checked_mul(total, v);
      if (!p) return true;
      total = *p;
    }
    if (total > kMaxFoldElements) return true;
  }
  return false;
}

std::optional<std::vector<Var>> constant_fold(FunctionGraph&, Apply& n) {
  const RewriteTarget* target = current_rewrite_target();
  if (!target || !target->evaluate) return std::nullopt;
  if (n.inputs.empty() || !n.op->destroy_map().empty() || n.op->has_side_effects()) return std::nullopt;
  for (const auto& in : n.inputs)
    if (!in->is_constant()) return std::nullopt;
  // Large results are not folded (the graph would hold the big constant, and compiling would
  // allocate it).
  if (fold_output_too_large(n)) return std::nullopt;
  std::vector<NDArray> in_vals, out_vals(n.nout());
  for (const auto& v : n.inputs) in_vals.push_back(v->data);
  std::vector<NDArray*> in_ptrs, out_ptrs;
  for (auto& a : in_vals) in_ptrs.push_back(&a);
  for (auto& a : out_vals) out_ptrs.push_back(&a);
  try {
    target->evaluate(n, in_ptrs, out_ptrs);
  } catch (const Error&) {
    return std::nullopt;  // the error surfaces when the function runs, with its context
  }
  std::vector<Var> r;
  for (int o = 0; o < n.nout(); ++o) {
    NDArray& a = out_vals[o];
    if (!a.valid() || a.size() > kMaxFoldElements) return std::nullopt;
    const TensorType& t = n.output_ptr(o)->type;
    if (!t.check_value(a).empty()) return std::nullopt;
    r.push_back(typed_constant(a.copy(), t));  // a copy: the value must not alias an input constant
  }
  return r;
}

// ---------------------------------------------------------------------------------------------
// canonicalize

bool is_const(const Var& v, double value) {
  auto c = scalar_constant(v);
  return c && *c == value;
}

std::optional<std::vector<Var>> canonical_elemwise(FunctionGraph&, Apply& n) {
  const Elemwise* e = elemwise_op(&n);
  if (!e) return std::nullopt;
  const TensorType& out = n.output_ptr(0)->type;
  const auto& in = n.inputs;
  switch (e->scalar) {
    // x + 0, x - 0, x / 1 and neg(neg(x)) are in the pattern form (patterns.cpp).
    case ScalarOpKind::Sub:
      if (in[0].get() == in[1].get()) return one(as_type(zeros_like(in[0], out.dtype), out));
      break;
    case ScalarOpKind::Mul:
      for (int k = 0; k < 2; ++k) {
        // (a / s) * s -> a: cancels the division the gradients of log and of a quotient leave
        // (log(sigmoid(x)) differentiates to g / sigmoid(x) * sigmoid(x) * (1 - sigmoid(x))).
        if (elemwise_of(in[k], ScalarOpKind::TrueDiv) && in[k]->owner->inputs[1].get() == in[1 - k].get())
          if (Var a = as_type(in[k]->owner->inputs[0], out)) return one(a);
        if (is_const(in[k], 1)) return one(as_type(in[1 - k], out));
        if (is_const(in[k], 0)) return one(as_type(zeros_like(in[1 - k], out.dtype), out));
      }
      break;
    case ScalarOpKind::Cast:
      if (in[0]->dtype() == e->cast_to) return one(as_type(in[0], out));
      break;
    default:
      break;
  }
  return std::nullopt;
}

std::optional<std::vector<Var>> canonical_dimshuffle(FunctionGraph&, Apply& n) {
  const auto& ds = static_cast<const DimShuffle&>(*n.op);
  const Var& x = n.inputs[0];
  // Identity.
  bool identity = static_cast<int>(ds.pattern.size()) == x->ndim();
  for (size_t i = 0; i < ds.pattern.size() && identity; ++i) identity = ds.pattern[i] == static_cast<int>(i);
  if (identity) return one(as_type(x, n.output_ptr(0)->type));
  // DimShuffle of DimShuffle: one DimShuffle of the innermost input.
  if (x->owner && typeid(*x->owner->op) == typeid(DimShuffle)) {
    const auto& inner = static_cast<const DimShuffle&>(*x->owner->op);
    std::vector<int> composed;
    for (int p : ds.pattern) composed.push_back(p < 0 ? -1 : inner.pattern[p]);
    return one(as_type(dimshuffle(x->owner->inputs[0], composed), n.output_ptr(0)->type));
  }
  return std::nullopt;
}

// Shape_i{k}(v) -> the k-th entry of v's producer's infer_shape, in terms of the producer's
// input shapes: the shape of a product is known without computing it, and chains of these fold
// to constants when the inputs' shapes are constants (Theano's ShapeFeature, lazily).
std::optional<std::vector<Var>> shape_i_lift(FunctionGraph&, Apply& n) {
  const int k = static_cast<const ShapeI&>(*n.op).i;
  const Var& v = n.inputs[0];
  const TensorType& out = n.output_ptr(0)->type;
  if (k < 0 || k >= v->ndim()) return std::nullopt;
  if (v->type.broadcastable[k]) return one(typed_constant(NDArray::scalar(1, DType::Int64), out));
  Apply* p = v->owner;
  if (!p) return std::nullopt;
  std::vector<ShapeVars> in_shapes;
  for (const auto& in : p->inputs) {
    ShapeVars sv;
    for (int d = 0; d < in->ndim(); ++d) sv.push_back(shape_i(in, d));
    in_shapes.push_back(std::move(sv));
  }
  std::vector<ShapeVars> shapes;
  try {
    shapes = p->op->infer_shape(*p, in_shapes);
  } catch (const Error&) {
    return std::nullopt;
  }
  if (static_cast<int>(shapes.size()) <= v->index || static_cast<int>(shapes[v->index].size()) != v->ndim())
    return std::nullopt;
  Var r = shapes[v->index][k];
  if (!r) return std::nullopt;
  // A shape that still reads v itself (an op that cannot tell its output shape) is no progress.
  if (r->owner && typeid(*r->owner->op) == typeid(ShapeI) && r->owner->inputs[0].get() == v.get()) return std::nullopt;
  return one(as_type(r, out));
}

// ---------------------------------------------------------------------------------------------
// stabilize

// log(1 + x), exp(x) - 1, 1 - sigmoid(x) and log(sigmoid(x)) are in the pattern form (patterns.cpp).
std::optional<std::vector<Var>> stabilize_elemwise(FunctionGraph&, Apply& n) {
  const Elemwise* e = elemwise_op(&n);
  if (!e || !is_float(n.output_ptr(0)->dtype())) return std::nullopt;
  const TensorType& out = n.output_ptr(0)->type;
  const auto& in = n.inputs;
  switch (e->scalar) {
    case ScalarOpKind::Log: {
      const Var& x = in[0];
      // log(erfc(y)) built without log() (e.g. a Python-defined graph): its stable form
      // (elemwise.h); log(erfc(minimum(y, t))), the form's own low branch, is left alone.
      if (elemwise_of(x, ScalarOpKind::Erfc)) {
        const Var& y = x->owner->inputs[0];
        if (elemwise_of(y, ScalarOpKind::Minimum) && scalar_constant(y->owner->inputs[1])) break;
        return one(as_type(stable_log_erfc(y), out));
      }
      // log(softmax(y)) -> log_softmax(y)
      if (x->owner && typeid(*x->owner->op) == typeid(Softmax)) {
        const auto& sm = static_cast<const Softmax&>(*x->owner->op);
        if (!sm.log)
          return one(as_type(apply_op1(std::make_shared<Softmax>(sm.axis, true), {x->owner->inputs[0]}), out));
      }
      // log(sum(exp(y))) -> max(y) + log(sum(exp(y - max(y))))
      if (x->owner && typeid(*x->owner->op) == typeid(Reduce)) {
        const auto& r = static_cast<const Reduce&>(*x->owner->op);
        const Var& ex = x->owner->inputs[0];
        if (r.kind == ReduceKind::Sum && elemwise_of(ex, ScalarOpKind::Exp)) {
          const Var& y = ex->owner->inputs[0];
          // y - switch(isinf(m), 0, m) is this rewrite's own result: already stable.
          if (elemwise_of(y, ScalarOpKind::Sub) && elemwise_of(y->owner->inputs[1], ScalarOpKind::Switch)) break;
          // The max is added back last, after the log, so the result is rounded once at the end
          // (float32 [1e5, 1e5] gives 1e5 + log 2 to the float). Accurate to about eps in absolute
          // terms: a result much smaller than 1 (logsumexp([0, -40]) = 4.2e-18) is not exact
          // relative to itself, as log1p(rest) would make it; a max - max(log_softmax) form was
          // exact there but 2.4-3.2x slower than this fused sum (measured), so it is not used.
          Var m = max(y, r.axes, /*keepdims=*/true);
          // An infinite max would give inf - inf; use 0 there (the result is then exact anyway).
          Var safe_m = switch_(isinf(m), zeros_like(m), m);
          Var s = sum(exp(y - safe_m), r.axes, false, r.dtype);
          Var m_out = sum(safe_m, r.axes, false, r.dtype);  // drops the kept axes (each has length 1)
          return one(as_type(log(s) + m_out, out));
        }
      }
      break;
    }
    default:
      break;
  }
  return std::nullopt;
}

// CrossentropyCategorical1Hot(softmax(x), y) -> -log_softmax(x)[arange(n), y]: finite values and
// a gradient that does not divide by a probability.
std::optional<std::vector<Var>> stabilize_crossentropy(FunctionGraph&, Apply& n) {
  const Var& coding = n.inputs[0];
  if (!coding->owner || typeid(*coding->owner->op) != typeid(Softmax)) return std::nullopt;
  const auto& sm = static_cast<const Softmax&>(*coding->owner->op);
  if (sm.log || sm.axis != 1 || coding->ndim() != 2) return std::nullopt;
  return one(as_type(softmax_crossentropy_labels(coding->owner->inputs[0], n.inputs[1]), n.output_ptr(0)->type));
}

// ---------------------------------------------------------------------------------------------
// specialize

// pow(x, 2 / 1 / 0.5 / -1) -> sqr / x / sqrt / reciprocal are in the pattern form (patterns.cpp).
std::optional<std::vector<Var>> specialize_elemwise(FunctionGraph&, Apply& n) {
  const Elemwise* e = elemwise_op(&n);
  if (!e) return std::nullopt;
  const TensorType& out = n.output_ptr(0)->type;
  const auto& in = n.inputs;
  if (e->scalar == ScalarOpKind::TrueDiv && is_float(out.dtype) && in[0]->dtype() == out.dtype) {
    // x / c -> x * (1 / c) for a constant c, with 1 / c in the output's dtype (an integer c, like
    // the 4 of int_x / 4.0, would round 1 / c to 0), for an x of that dtype (an integer x times
    // a float would compute in another dtype).
    auto c = scalar_constant(in[1]);
    if (c && *c != 0 && *c != 1 && in[1]->ndim() <= out.ndim()) {
      Var inv = constant(NDArray::scalar(1.0 / *c, out.dtype));
      return one(as_type(mul(in[0], inv), out));
    }
  }
  return std::nullopt;
}

}  // namespace

LocalRewrite constant_folding_rewrite() { return {"constant_folding", {}, constant_fold}; }

void register_basic() {
  register_rewrite_phase({.name = "merge1",
                          .tags = {"merge", "fast_run", "fast_compile"},
                          .modes = {"FAST_RUN", "FAST_COMPILE"},
                          .position = 0,
                          .global = merge_pass});
  register_rewrite_phase({.name = "canonicalize",
                          .tags = {"canonicalize", "fast_run"},
                          .modes = {"FAST_RUN", "FAST_COMPILE"},
                          .position = 1});
  register_local_rewrite("canonicalize", constant_folding_rewrite());
  register_local_rewrite("canonicalize", {"local_elemwise_canonical", {typeid(Elemwise)}, canonical_elemwise});
  register_local_rewrite("canonicalize", {"local_dimshuffle_lift", {typeid(DimShuffle)}, canonical_dimshuffle});
  register_local_rewrite("canonicalize", {"local_shape_i_lift", {typeid(ShapeI)}, shape_i_lift});
  register_rewrite_phase({.name = "merge1.5",
                          .tags = {"merge", "fast_run"},
                          .modes = {"FAST_RUN"},
                          .position = 1.5,
                          .global = merge_pass});
  register_rewrite_phase(
      {.name = "stabilize", .tags = {"stabilize", "fast_run"}, .modes = {"FAST_RUN"}, .position = 2});
  register_local_rewrite("stabilize", {"local_stabilize_elemwise", {typeid(Elemwise)}, stabilize_elemwise});
  register_local_rewrite("stabilize",
                         {"local_softmax_crossentropy", {typeid(CrossentropyCategorical1Hot)}, stabilize_crossentropy});
  register_local_rewrite("stabilize", constant_folding_rewrite());
  register_rewrite_phase(
      {.name = "specialize", .tags = {"specialize", "fast_run"}, .modes = {"FAST_RUN"}, .position = 3});
  register_local_rewrite("specialize", {"local_pow_specialize", {typeid(Elemwise)}, specialize_elemwise});
  register_local_rewrite("specialize", {"local_elemwise_canonical", {typeid(Elemwise)}, canonical_elemwise});
  register_local_rewrite("specialize", {"local_dimshuffle_lift", {typeid(DimShuffle)}, canonical_dimshuffle});
  register_local_rewrite("specialize", constant_folding_rewrite());
  register_rewrite_phase(
      {.name = "merge2", .tags = {"merge", "fast_run"}, .modes = {"FAST_RUN"}, .position = 4.5, .global = merge_pass});
}

}  // namespace hypatia::rewrite
