// Canonicalize rules on elementwise ops (useless ones, mul/div cancellation) and reductions
// (reductions over no axis, of a DimShuffle that adds broadcastable dims, of a reduction, of a
// product by a scalar constant, of a negation), and the specialize rule sum(x * x) -> sum(sqr(x)).
// Registered by register_canonical_extra (canonical_extra.cpp), which holds the shared helpers.
//
// Integer arithmetic wraps around and integer true_div gives floats, so the algebraic identities
// (x * y) / x = y, sum(c * x) = c * sum(x) … are applied to float graphs only; the identities that
// hold in wrapping arithmetic (neg(x) * neg(y) = x * y in one dtype, sums of 64-bit integers) are
// applied there too. Like Theano's canonical forms, the mul/div cancellations take x / x as 1.
#include <algorithm>
#include <cmath>
#include <optional>
#include <vector>

#include "hypatia/core/checked.h"
#include "hypatia/ops/elemwise.h"
#include "hypatia/ops/reduce.h"
#include "hypatia/ops/shape.h"
#include "hypatia/rewrite/rewrite_util.h"

namespace hypatia::rewrite {

namespace canon {
std::optional<int64_t> cval(const Var& v);
Var retype(Var x, const TensorType& t);
Var broadcast_to_output(Var x, const Apply& n);
Var filled_output(double value, const Apply& n);
std::optional<int64_t> static_dim(const Var& x, int axis);
}  // namespace canon

namespace {

using canon::broadcast_to_output;
using canon::filled_output;

bool is_value(const Var& v, double value) {
  const auto c = scalar_constant(v);
  return c && *c == value;
}

bool all_broadcastable(const Var& v) {
  return std::all_of(v->type.broadcastable.begin(), v->type.broadcastable.end(), [](bool b) { return b; });
}

bool is_int64_like(DType dt) { return dt == DType::Int64 || dt == DType::UInt64; }

// ---------------------------------------------------------------------------------------------
// Elementwise ops applied to the same variable twice.

std::optional<std::vector<Var>> useless_elemwise(FunctionGraph&, Apply& n) {
  const Elemwise* e = elemwise_op(&n);
  if (!e || n.inputs.size() != 2 || n.inputs[0].get() != n.inputs[1].get()) return std::nullopt;
  const Var& x = n.inputs[0];
  const TensorType& out = n.output_ptr(0)->type;
  // NaN compares unequal to itself: comparisons of a float with itself are left alone.
  const bool exact = !is_float(x->dtype());
  switch (e->scalar) {
    case ScalarOpKind::Maximum:
    case ScalarOpKind::Minimum:
      return one(as_type(x, out));
    case ScalarOpKind::And:
    case ScalarOpKind::Or:
      if (exact) return one(as_type(x, out));
      break;
    case ScalarOpKind::Xor:
      if (exact) return one(filled_output(0, n));
      break;
    case ScalarOpKind::Eq:
    case ScalarOpKind::Le:
    case ScalarOpKind::Ge:
      if (exact) return one(filled_output(1, n));
      break;
    case ScalarOpKind::Neq:
    case ScalarOpKind::Lt:
    case ScalarOpKind::Gt:
      if (exact) return one(filled_output(0, n));
      break;
    default:
      break;
  }
  return std::nullopt;
}

// ---------------------------------------------------------------------------------------------
// mul / div canonical forms

// The divisor y of r = 1 / y or r = reciprocal(y), else null.
Var reciprocal_of(const Var& r) {
  if (elemwise_of(r, ScalarOpKind::Reciprocal)) return r->owner->inputs[0];
  if (elemwise_of(r, ScalarOpKind::TrueDiv) && is_value(r->owner->inputs[0], 1)) return r->owner->inputs[1];
  return nullptr;
}

std::optional<std::vector<Var>> mul_div(FunctionGraph&, Apply& n) {
  const Elemwise* e = elemwise_op(&n);
  if (!e) return std::nullopt;
  const TensorType& out = n.output_ptr(0)->type;
  const auto& in = n.inputs;
  if (e->scalar == ScalarOpKind::Mul) {
    // neg(a) * neg(b) -> a * b: exact in floats, and in integers negated in the output's dtype.
    if (out.dtype != DType::Bool && elemwise_of(in[0], ScalarOpKind::Neg) && elemwise_of(in[1], ScalarOpKind::Neg)) {
      const Var &a = in[0]->owner->inputs[0], &b = in[1]->owner->inputs[0];
      auto ok = [&](const Var& v) { return is_float(v->dtype()) || v->dtype() == out.dtype; };
      if (ok(a) && ok(b)) return one(broadcast_to_output(mul(a, b), n));
    }
    // x * (1 / y) -> x / y for a float y that is not a constant (x / c is specialized the other way).
    if (!is_float(out.dtype)) return std::nullopt;
    for (int k = 0; k < 2; ++k) {
      const Var y = reciprocal_of(in[1 - k]);
      if (!y || scalar_constant(y) || !is_float(y->dtype()) || !is_float(in[k]->dtype())) continue;
      return one(broadcast_to_output(true_div(in[k], y), n));
    }
    return std::nullopt;
  }
  if (e->scalar != ScalarOpKind::TrueDiv || !is_float(out.dtype)) return std::nullopt;
  const Var &num = in[0], &den = in[1];
  if (!is_float(num->dtype()) || !is_float(den->dtype())) return std::nullopt;
  // x / x -> 1
  if (num.get() == den.get()) return one(filled_output(1, n));
  // neg(a) / neg(b) -> a / b
  if (elemwise_of(num, ScalarOpKind::Neg) && elemwise_of(den, ScalarOpKind::Neg)) {
    const Var &a = num->owner->inputs[0], &b = den->owner->inputs[0];
    if (is_float(a->dtype()) && is_float(b->dtype())) return one(broadcast_to_output(true_div(a, b), n));
  }
  if (!elemwise_of(num, ScalarOpKind::Mul)) return std::nullopt;
  const Var &a = num->owner->inputs[0], &b = num->owner->inputs[1];
  if (!is_float(a->dtype()) || !is_float(b->dtype())) return std::nullopt;
  // (a * b) / a -> b, (a * b) / b -> a
  if (den.get() == a.get()) return one(broadcast_to_output(b, n));
  if (den.get() == b.get()) return one(broadcast_to_output(a, n));
  // (a * b) / (c * d) with a common factor -> the quotient of the others
  if (!elemwise_of(den, ScalarOpKind::Mul)) return std::nullopt;
  const Var &c = den->owner->inputs[0], &d = den->owner->inputs[1];
  if (!is_float(c->dtype()) || !is_float(d->dtype())) return std::nullopt;
  const Var* nums[2] = {&a, &b};
  const Var* dens[2] = {&c, &d};
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 2; ++j)
      if (nums[i]->get() == dens[j]->get()) return one(broadcast_to_output(true_div(*nums[1 - i], *dens[1 - j]), n));
  return std::nullopt;
}

// ---------------------------------------------------------------------------------------------
// Reductions

Var make_reduce(ReduceKind k, const Var& x, std::vector<int> axes, DType dt) {
  return apply_op1(std::make_shared<Reduce>(k, std::move(axes), dt), {x});
}

// A reduction over no axis -> x (cast to the output dtype).
std::optional<std::vector<Var>> reduce_no_axes(FunctionGraph&, Apply& n) {
  const auto& r = static_cast<const Reduce&>(*n.op);
  if (!r.axes.empty()) return std::nullopt;
  switch (r.kind) {
    case ReduceKind::Sum:
    case ReduceKind::Prod:
    case ReduceKind::Max:
    case ReduceKind::Min:
      return one(as_type(n.inputs[0], n.output_ptr(0)->type));
    default:
      return std::nullopt;
  }
}

// reduce(DimShuffle(y) that only adds broadcastable dims, axes) with some added dims reduced:
// those dims have length 1, so reduce y over the other axes and add back the added dims kept.
std::optional<std::vector<Var>> reduce_dimshuffle(FunctionGraph&, Apply& n) {
  const auto& r = static_cast<const Reduce&>(*n.op);
  const Var& x = n.inputs[0];
  if (!x->owner || typeid(*x->owner->op) != typeid(DimShuffle)) return std::nullopt;
  const std::vector<int>& p = static_cast<const DimShuffle&>(*x->owner->op).pattern;
  const Var& y = x->owner->inputs[0];
  int next = 0;
  for (int q : p)
    if (q >= 0 && q != next++) return std::nullopt;  // drops or permutes an axis
  if (next != y->ndim()) return std::nullopt;
  std::vector<int> y_axes;
  bool any_added = false;
  for (int a : r.axes) {
    if (p[a] < 0)
      any_added = true;
    else
      y_axes.push_back(p[a]);
  }
  if (!any_added) return std::nullopt;
  std::vector<int> pattern;
  for (int i = 0; i < static_cast<int>(p.size()); ++i) {
    if (std::find(r.axes.begin(), r.axes.end(), i) != r.axes.end()) continue;
    if (p[i] < 0) {
      pattern.push_back(-1);
      continue;
    }
    int rank = 0;  // position of y's axis p[i] among y's axes left by the reduction
    for (int d = 0; d < p[i]; ++d) rank += std::find(y_axes.begin(), y_axes.end(), d) == y_axes.end();
    pattern.push_back(rank);
  }
  return one(as_type(dimshuffle(make_reduce(r.kind, y, y_axes, r.dtype), pattern), n.output_ptr(0)->type));
}

// reduce(reduce(y, axes1), axes2) -> reduce(y, axes1 + axes2) for the same kind: max, min, all
// and any always; sums and products of floats, and of integers in 64-bit arithmetic throughout.
std::optional<std::vector<Var>> reduce_merge(FunctionGraph&, Apply& n) {
  const auto& r = static_cast<const Reduce&>(*n.op);
  const Var& x = n.inputs[0];
  if (!x->owner || typeid(*x->owner->op) != typeid(Reduce)) return std::nullopt;
  const auto& ri = static_cast<const Reduce&>(*x->owner->op);
  const Var& y = x->owner->inputs[0];
  if (ri.kind != r.kind || r.kind == ReduceKind::ProdWithoutZeros) return std::nullopt;
  if (r.kind == ReduceKind::Sum || r.kind == ReduceKind::Prod) {
    const bool floats = is_float(ri.dtype) && is_float(r.dtype);
    const bool ints = ri.dtype == r.dtype && is_int64_like(r.dtype) && !is_float(y->dtype());
    if (!floats && !ints) return std::nullopt;
  }
  std::vector<int> kept, axes = ri.axes;
  for (int d = 0; d < y->ndim(); ++d)
    if (std::find(ri.axes.begin(), ri.axes.end(), d) == ri.axes.end()) kept.push_back(d);
  for (int a : r.axes) axes.push_back(kept[a]);
  std::sort(axes.begin(), axes.end());
  return one(as_type(make_reduce(r.kind, y, axes, r.dtype), n.output_ptr(0)->type));
}

// sum(c * x) -> c * sum(x), prod(c * x) -> c**n * prod(x) (n, the number of elements reduced,
// known statically) for a scalar constant c and float x.
std::optional<std::vector<Var>> reduce_mul_scalar(FunctionGraph&, Apply& n) {
  const auto& r = static_cast<const Reduce&>(*n.op);
  if (r.kind != ReduceKind::Sum && r.kind != ReduceKind::Prod) return std::nullopt;
  const Var& x = n.inputs[0];
  if (!elemwise_of(x, ScalarOpKind::Mul) || !is_float(x->dtype()) || !is_float(r.dtype)) return std::nullopt;
  for (int k = 0; k < 2; ++k) {
    const Var &c = x->owner->inputs[k], &z = x->owner->inputs[1 - k];
    const auto cv = scalar_constant(c);
    if (!cv || !std::isfinite(*cv) || !all_broadcastable(c) || !(z->type == x->type)) continue;
    double factor = *cv;
    if (r.kind == ReduceKind::Prod) {
      if (*cv == 0) continue;
      int64_t count = 1;
      bool known = true;
      for (int a : r.axes) {
        const auto d = canon::static_dim(z, a);
        const auto c = d ? checked_mul(count, *d) : std::nullopt;
        if (!c) known = false;  // unknown, or past int64 (no such array: leave the graph as it is)
        count = c.value_or(0);
      }
      if (!known) continue;
      factor = std::pow(*cv, static_cast<double>(count));
      // c**n must stay far from overflow and underflow in the output dtype.
      const double lim = r.dtype == DType::Float64 ? 1e300 : r.dtype == DType::Float32 ? 1e30 : 0;
      if (!(std::abs(factor) <= lim && std::abs(factor) >= 1 / lim)) continue;
    }
    Var red = make_reduce(r.kind, z, r.axes, r.dtype);
    return one(as_type(mul(constant(factor, r.dtype), red), n.output_ptr(0)->type));
  }
  return std::nullopt;
}

// sum(neg(x)) -> neg(sum(x)): exact in floats and in 64-bit integer sums of 64-bit integers.
std::optional<std::vector<Var>> sum_neg(FunctionGraph&, Apply& n) {
  const auto& r = static_cast<const Reduce&>(*n.op);
  const Var& x = n.inputs[0];
  if (r.kind != ReduceKind::Sum || !elemwise_of(x, ScalarOpKind::Neg)) return std::nullopt;
  const Var& y = x->owner->inputs[0];
  const bool ok = (is_float(y->dtype()) && is_float(r.dtype)) || (y->dtype() == r.dtype && is_int64_like(r.dtype));
  if (!ok || !(y->type == x->type)) return std::nullopt;
  return one(as_type(neg(make_reduce(r.kind, y, r.axes, r.dtype)), n.output_ptr(0)->type));
}

// specialize: sum(x * x) and sum(x ** 2) -> sum(sqr(x)), one form for the fusion pass (when the
// square has no other reader).
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

std::optional<std::vector<Var>> sum_sqr(FunctionGraph& fg, Apply& n) {
  const auto& r = static_cast<const Reduce&>(*n.op);
  const Var& x = n.inputs[0];
  if (r.kind != ReduceKind::Sum || x->dtype() == DType::Bool || fg.clients(x.get()).size() != 1) return std::nullopt;
  Var a;
  if (elemwise_of(x, ScalarOpKind::Mul) && x->owner->inputs[0].get() == x->owner->inputs[1].get())
    a = x->owner->inputs[0];
  else if (elemwise_of(x, ScalarOpKind::Pow) && is_value(x->owner->inputs[1], 2))
    a = x->owner->inputs[0];
  if (!a || !(a->type == x->type)) return std::nullopt;
  return one(as_type(apply_op1(n.op, {sqr(a)}), n.output_ptr(0)->type));
}

}  // namespace

void register_canonical_extra2() {
  register_local_rewrite("canonicalize", {"local_useless_elemwise_extra", {typeid(Elemwise)}, useless_elemwise});
  register_local_rewrite("canonicalize", {"local_mul_div_canonical", {typeid(Elemwise)}, mul_div});
  register_local_rewrite("canonicalize", {"local_elemwise_alloc", {typeid(Elemwise)}, elemwise_alloc});
  register_local_rewrite("canonicalize", {"local_alloc_lift", {typeid(Elemwise)}, alloc_lift});
  register_local_rewrite("specialize", {"local_elemwise_alloc", {typeid(Elemwise)}, elemwise_alloc});
  register_local_rewrite("specialize", {"local_alloc_lift", {typeid(Elemwise)}, alloc_lift});
  register_local_rewrite("canonicalize", {"local_reduce_no_axes", {typeid(Reduce)}, reduce_no_axes});
  register_local_rewrite("canonicalize", {"local_reduce_dimshuffle", {typeid(Reduce)}, reduce_dimshuffle});
  register_local_rewrite("canonicalize", {"local_reduce_merge", {typeid(Reduce)}, reduce_merge});
  register_local_rewrite("canonicalize", {"local_reduce_mul_scalar", {typeid(Reduce)}, reduce_mul_scalar});
  register_local_rewrite("canonicalize", {"local_sum_neg", {typeid(Reduce)}, sum_neg});
  register_local_rewrite("specialize", {"local_sum_sqr", {typeid(Reduce)}, sum_sqr});
}

}  // namespace hypatia::rewrite
