// Canonical forms of reductions (phase canonicalize). Local rules on Reduce nodes, any graph.
// Guarantees: each replacement has the exact type of what it replaces and the same values
// wherever the replaced graph runs, up to the rounding of a reordered float sum or product.
// Afterwards, where the rules could fire: no Sum, Prod, Max or Min reduces over no axes; no
// reduction reduces dims a DimShuffle only added (they have length 1); no reduction reads a
// reduction of the same kind; sum(c * x) is c * sum(x) and prod(c * x) is c**n * prod(x) for a
// finite scalar constant c (n known statically, c**n far from overflow and underflow); sum(neg x)
// is neg(sum x).
//
// Integer arithmetic wraps around, so sums and products are merged, or moved past a negation,
// only in floats and in 64-bit integer arithmetic throughout (where wrapping gives one result in
// any order), and moved past a constant factor only in floats; max, min, all and any always.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <vector>

#include "hypatia/core/checked.h"
#include "hypatia/ops/elemwise.h"
#include "hypatia/ops/reduce.h"
#include "hypatia/ops/shape.h"
#include "hypatia/rewrite/passes.h"
#include "hypatia/rewrite/rewrite_util.h"

namespace hypatia::rewrite {
namespace {

bool is_int64_like(DType dt) { return dt == DType::Int64 || dt == DType::UInt64; }

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
        const auto d = static_dim(z, a);
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

}  // namespace

std::vector<LocalRewrite> canonicalize_reduce_rules() {
  return {
      {"local_reduce_no_axes", {typeid(Reduce)}, reduce_no_axes},
      {"local_reduce_dimshuffle", {typeid(Reduce)}, reduce_dimshuffle},
      {"local_reduce_merge", {typeid(Reduce)}, reduce_merge},
      {"local_reduce_mul_scalar", {typeid(Reduce)}, reduce_mul_scalar},
      {"local_sum_neg", {typeid(Reduce)}, sum_neg},
  };
}

}  // namespace hypatia::rewrite
