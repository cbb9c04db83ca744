#include "hypatia/rewrite/rewrite_util.h"

#include <algorithm>

#include "hypatia/core/error.h"

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

bool is_constant_value(const Var& v, double value) {
  const auto c = scalar_constant(v);
  return c && *c == value;
}

bool all_broadcastable(const Var& v) {
  return std::all_of(v->type.broadcastable.begin(), v->type.broadcastable.end(), [](bool b) { return b; });
}

std::optional<int64_t> cval(const Var& v) {
  if (!v || !v->is_constant() || v->ndim() != 0) return std::nullopt;
  return v->data.get_flat_int(0);
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

Var retype(Var x, const TensorType& t) {
  if (!x || x->ndim() != t.ndim()) return nullptr;
  if (x->dtype() != t.dtype) x = cast(x, t.dtype);
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

ShapeVars output_shape(const Apply& n) {
  std::vector<ShapeVars> in;
  for (const Var& v : n.inputs) in.push_back(shape_vars(v));
  return broadcast_infer_shape(n, in);
}

Var broadcast_to_output(Var x, const Apply& n) {
  const TensorType& out = n.output_ptr(0)->type;
  if (!x || x->ndim() > out.ndim()) return nullptr;
  if (Var r = as_type(x, out)) return r;
  if (x->dtype() != out.dtype) x = cast(x, out.dtype);
  return retype(alloc(x, output_shape(n)), out);
}

Var filled_output(double value, const Apply& n) {
  const TensorType& out = n.output_ptr(0)->type;
  return retype(alloc(constant(value, out.dtype), output_shape(n)), out);
}

Var resolve_dim(Var d) {
  for (int depth = 0; depth < 16 && d && !d->is_constant(); ++depth) {
    const Apply* p = d->owner;
    if (!p || typeid(*p->op) != typeid(ShapeI)) return d;
    const int k = static_cast<const ShapeI&>(*p->op).i;
    const Var& v = p->inputs[0];
    if (k < 0 || k >= v->ndim()) return d;
    if (v->type.broadcastable[k]) return int_constant(1);
    if (v->is_constant()) return int_constant(v->data.shape(k));
    const Apply* q = v->owner;
    if (!q) return d;
    std::vector<ShapeVars> in_shapes;
    for (const Var& in : q->inputs) in_shapes.push_back(shape_vars(in));
    std::vector<ShapeVars> shapes;
    try {
      shapes = q->op->infer_shape(*q, in_shapes);
    } catch (const Error&) {
      return d;
    }
    if (static_cast<int>(shapes.size()) <= v->index || static_cast<int>(shapes[v->index].size()) != v->ndim()) return d;
    Var r = shapes[v->index][k];
    if (!r || r->ndim() != 0 || !is_integer(r->dtype())) return d;
    if (r->owner && typeid(*r->owner->op) == typeid(ShapeI) && r->owner->inputs[0].get() == v.get()) return d;
    d = r;
  }
  return d;
}

bool same_dim(const Var& a, const Var& b, int depth) {
  if (!a || !b) return false;
  const Var x = resolve_dim(a), y = resolve_dim(b);
  if (x.get() == y.get()) return true;
  const auto cx = cval(x), cy = cval(y);
  if (cx || cy) return cx && cy && *cx == *cy;
  if (depth <= 0 || !x->owner || !y->owner || x->index != y->index) return false;
  const Apply &p = *x->owner, &q = *y->owner;
  if (p.inputs.size() != q.inputs.size() || !p.op->equals(*q.op) || !p.op->destroy_map().empty()) return false;
  for (size_t i = 0; i < p.inputs.size(); ++i)
    if (!same_dim(p.inputs[i], q.inputs[i], depth - 1)) return false;
  return true;
}

std::optional<int64_t> static_dim(const Var& x, int axis) { return cval(resolve_dim(shape_vars(x)[axis])); }

}  // namespace hypatia::rewrite
