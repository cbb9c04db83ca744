// Canonical forms of shapes and their ops (phase canonicalize; the DimShuffle and fill rules run
// again in specialize). Local rules on DimShuffle, Shape, Shape_i, Reshape, Alloc and Elemwise nodes,
// any graph. Guarantees: each replacement has the exact type of what it replaces and the same
// values wherever the replaced graph runs without an error (a merged reshape or alloc no longer
// checks the intermediate shape, and an elementwise op reading a scalar fill no longer checks
// the fill's shape, as in Theano). Afterwards, where the rules could fire: no DimShuffle is the
// identity or reads a DimShuffle; a Shape_i of a computed value is its producer's infer_shape
// (constants where the input shapes are constant: the shape feature, lazily); the Shape of a 0-d
// value is the empty vector; no Reshape reads a
// Reshape or reshapes to the shape its input provably has; no Alloc reads an Alloc or allocates
// the shape its value provably has; a scalar fill read by an elementwise op is moved out of it.
#include <optional>
#include <vector>

#include "hypatia/core/error.h"
#include "hypatia/ops/elemwise.h"
#include "hypatia/ops/shape.h"
#include "hypatia/rewrite/passes.h"
#include "hypatia/rewrite/rewrite_util.h"

namespace hypatia::rewrite {
namespace {

// ---------------------------------------------------------------------------------------------
// DimShuffle and Shape_i

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
/// Shape_i{d} of `in`: the graph's own node when it has one, so that lifting the sizes of one
/// variable through many expressions reads one Shape_i per axis. (Fresh nodes per lift made every
/// lifted size a new tree: a chain of reshapes whose sizes each read every size of the level
/// below grew exponentially with the chain's length before a merge could share them.)
Var graph_shape_i(FunctionGraph& fg, const Var& in, int d) {
  for (const Client& c : fg.clients(in.get()))
    if (c.node && typeid(*c.node->op) == typeid(ShapeI) && static_cast<const ShapeI&>(*c.node->op).i == d)
      return c.node->output(0);
  return shape_i(in, d);
}

std::optional<std::vector<Var>> shape_i_lift(FunctionGraph& fg, Apply& n) {
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
    for (int d = 0; d < in->ndim(); ++d) sv.push_back(graph_shape_i(fg, in, d));
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

// The shape of a 0-d value: the empty vector (the gradient's seed reads its cost's shape).
std::optional<std::vector<Var>> scalar_shape(FunctionGraph&, Apply& n) {
  if (n.inputs[0]->ndim() != 0) return std::nullopt;
  return one(typed_constant(NDArray::empty({0}, DType::Int64), n.output_ptr(0)->type));
}

// ---------------------------------------------------------------------------------------------
// Reshape

// Entry i of a reshape's shape vector as a 0-d integer variable, or null when it is not visible.
Var shape_entry(const Var& s, int i) {
  if (s->is_constant()) return int_constant(s->data.get_flat_int(i));
  if (!s->owner) return nullptr;
  if (typeid(*s->owner->op) == typeid(MakeVector)) return s->owner->inputs[i];
  if (typeid(*s->owner->op) == typeid(ShapeOp)) return shape_vars(s->owner->inputs[0])[i];
  return nullptr;
}

// reshape(reshape(x, s1), s2) -> reshape(x, s2).
std::optional<std::vector<Var>> reshape_chain(FunctionGraph&, Apply& n) {
  const Var& mid = n.inputs[0];
  if (!mid->owner || typeid(*mid->owner->op) != typeid(Reshape)) return std::nullopt;
  return one(retype(apply_op1(n.op, {mid->owner->inputs[0], n.inputs[1]}), n.output_ptr(0)->type));
}

// reshape(x, s) -> x when s is provably x's shape.
std::optional<std::vector<Var>> useless_reshape(FunctionGraph&, Apply& n) {
  const Var &x = n.inputs[0], &s = n.inputs[1];
  const int nd = static_cast<const Reshape&>(*n.op).ndim;
  if (nd != x->ndim()) return std::nullopt;
  const ShapeVars xs = shape_vars(x);
  for (int i = 0; i < nd; ++i) {
    const Var e = shape_entry(s, i);
    if (!e) return std::nullopt;
    if (nd == 1 && cval(e) == -1) continue;  // a vector reshaped to (-1,)
    if (!same_dim(e, xs[i])) return std::nullopt;
  }
  return one(retype(x, n.output_ptr(0)->type));
}

// ---------------------------------------------------------------------------------------------
// Alloc

// alloc(alloc(v, s1...), s2...) -> alloc(v, s2...).
// The inner value v broadcasts to the outer shape wherever the inner result did: a dim where v is
// not broadcastable must not be one the inner result made broadcastable (a length 1 spread out).
std::optional<std::vector<Var>> alloc_alloc(FunctionGraph&, Apply& n) {
  const Var& mid = n.inputs[0];
  if (!mid->owner || typeid(*mid->owner->op) != typeid(Alloc)) return std::nullopt;
  const Var& v = mid->owner->inputs[0];
  const int off = mid->ndim() - v->ndim();
  for (int j = 0; j < v->ndim(); ++j)
    if (!v->type.broadcastable[j] && mid->type.broadcastable[j + off]) return std::nullopt;
  std::vector<Var> in = n.inputs;
  in[0] = v;
  return one(retype(apply_op1(n.op, in), n.output_ptr(0)->type));
}

// alloc(x, s...) -> x when s is provably x's shape.
std::optional<std::vector<Var>> useless_alloc(FunctionGraph&, Apply& n) {
  const Var& x = n.inputs[0];
  const int nd = static_cast<int>(n.inputs.size()) - 1;
  if (nd != x->ndim()) return std::nullopt;
  const ShapeVars xs = shape_vars(x);
  for (int i = 0; i < nd; ++i)
    if (!same_dim(n.inputs[i + 1], xs[i])) return std::nullopt;
  return one(retype(x, n.output_ptr(0)->type));
}

// ---------------------------------------------------------------------------------------------
// Scalar fills read by elementwise ops

/// An Elemwise reading alloc(v, shape) where v is all-broadcastable (a scalar filled out) and
/// another input already has the output's broadcast pattern (so it fixes the output shape) reads v
/// itself: no filled array is materialised (Theano's local_elemwise_alloc; like Theano it drops
/// the alloc's own shape check).
std::optional<std::vector<Var>> elemwise_alloc(FunctionGraph&, Apply& n) {
  const Elemwise* e = elemwise_op(&n);
  if (!e) return std::nullopt;
  const TensorType& out = n.output_ptr(0)->type;
  const int nd = out.ndim();
  bool shape_fixed = false;
  for (const Var& in : n.inputs)
    shape_fixed = shape_fixed || (!(in->owner && typeid(*in->owner->op) == typeid(Alloc)) && in->ndim() == nd &&
                                  in->type.broadcastable == out.broadcastable);
  if (!shape_fixed) return std::nullopt;
  std::vector<Var> inputs = n.inputs;
  bool changed = false;
  for (Var& in : inputs) {
    if (!in->owner || typeid(*in->owner->op) != typeid(Alloc)) continue;
    const Var& v = in->owner->inputs[0];
    if (v->ndim() > nd || !all_broadcastable(v)) continue;
    std::vector<int> pattern(nd - v->ndim(), -1);
    for (int d = 0; d < v->ndim(); ++d) pattern.push_back(d);
    in = v->ndim() == nd ? v : dimshuffle(v, pattern);
    changed = true;
  }
  if (!changed) return std::nullopt;
  return one(as_type(apply_op1(std::make_shared<Elemwise>(e->scalar, e->cast_to), inputs), out));
}

/// op(alloc(s, shape), k...) with s and every k scalars (all-broadcastable) -> alloc(op(s, k...),
/// shape): the fill moves outward until an input that fixes the shape meets it (elemwise_alloc).
std::optional<std::vector<Var>> alloc_lift(FunctionGraph&, Apply& n) {
  const Elemwise* e = elemwise_op(&n);
  if (!e) return std::nullopt;
  int ai = -1;
  for (int i = 0; i < static_cast<int>(n.inputs.size()); ++i) {
    const Var& in = n.inputs[i];
    if (in->owner && typeid(*in->owner->op) == typeid(Alloc) && all_broadcastable(in->owner->inputs[0]) && ai < 0)
      ai = i;
    else if (!all_broadcastable(in))
      return std::nullopt;
  }
  if (ai < 0) return std::nullopt;
  std::vector<Var> scalars;
  for (int i = 0; i < static_cast<int>(n.inputs.size()); ++i)
    scalars.push_back(dimshuffle(i == ai ? n.inputs[i]->owner->inputs[0] : n.inputs[i], {}));
  const auto& alloc_in = n.inputs[ai]->owner->inputs;
  ShapeVars shape(alloc_in.begin() + 1, alloc_in.end());
  Var inner = apply_op1(std::make_shared<Elemwise>(e->scalar, e->cast_to), scalars);
  return one(as_type(alloc(inner, shape), n.output_ptr(0)->type));
}

}  // namespace

std::vector<LocalRewrite> canonicalize_dimshuffle_rules() {
  return {{"local_dimshuffle_lift", {typeid(DimShuffle)}, canonical_dimshuffle}};
}

std::vector<LocalRewrite> canonicalize_fill_rules() {
  return {
      {"local_elemwise_alloc", {typeid(Elemwise)}, elemwise_alloc},
      {"local_alloc_lift", {typeid(Elemwise)}, alloc_lift},
  };
}

std::vector<LocalRewrite> canonicalize_shape_rules() {
  std::vector<LocalRewrite> rules = canonicalize_dimshuffle_rules();
  rules.push_back({"local_shape_i_lift", {typeid(ShapeI)}, shape_i_lift});
  rules.push_back({"local_scalar_shape", {typeid(ShapeOp)}, scalar_shape});
  rules.push_back({"local_reshape_chain", {typeid(Reshape)}, reshape_chain});
  rules.push_back({"local_useless_reshape", {typeid(Reshape)}, useless_reshape});
  rules.push_back({"local_alloc_alloc", {typeid(Alloc)}, alloc_alloc});
  rules.push_back({"local_useless_alloc", {typeid(Alloc)}, useless_alloc});
  for (LocalRewrite& rw : canonicalize_fill_rules()) rules.push_back(std::move(rw));
  return rules;
}

}  // namespace hypatia::rewrite
