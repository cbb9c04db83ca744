// Subtensor of Subtensor -> one Subtensor (phase canonicalize). A local rule on Subtensor
// nodes whose input is a Subtensor, with constant or symbolic bounds and steps of any sign.
// Also local_add_of_inc_subtensor_of_zeros: p + (zeros with v added at idx), where p is itself
// zeros of the same shape variables with values added elsewhere, is p with v added at idx (the
// gradient of several slices of one value, an LSTM's four gates: one buffer, no sum).
// Guarantees: the replacement has the exact type of what it replaces and the same values wherever
// the replaced graph runs without an error; an index out of range still raises IndexError (the
// merged index is one past the axis there). Nothing overflows for any int64 bounds and steps
// (Python's slice.indices arithmetic, with a value that could wrap only computed in a switch
// branch that is discarded). Index arithmetic is built on 0-d int64 variables and folds where the
// operands are constant. Afterwards, where the rule could fire, no Subtensor reads a Subtensor.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>
#include <vector>

#include "hypatia/core/checked.h"
#include "hypatia/ops/elemwise.h"
#include "hypatia/ops/shape.h"
#include "hypatia/ops/subtensor.h"
#include "hypatia/rewrite/passes.h"
#include "hypatia/rewrite/rewrite_util.h"

namespace hypatia::rewrite {
namespace {

using Kind = IndexEntry::Kind;
using Bound = IndexEntry::Bound;

// ---------------------------------------------------------------------------------------------
// 0-d int64 arithmetic that folds constants (and the identities x + 0, x * 1, x * 0). A constant
// result past int64 is not folded: the op wraps like numpy at run time, and the compositions
// below only use such values in branches a switch discards.

Var I(int64_t v) { return int_constant(v); }
Var B(bool v) { return constant(v ? 1.0 : 0.0, DType::Bool); }
Var i64(const Var& v) { return v->dtype() == DType::Int64 ? v : cast(v, DType::Int64); }

Var iadd(const Var& a, const Var& b) {
  const auto x = cval(a), y = cval(b);
  if (x && y)
    if (auto r = checked_add(*x, *y)) return I(*r);
  if (x && *x == 0) return b;
  if (y && *y == 0) return a;
  return add(a, b);
}
Var isub(const Var& a, const Var& b) {
  const auto x = cval(a), y = cval(b);
  if (x && y)
    if (auto r = checked_sub(*x, *y)) return I(*r);
  if (y && *y == 0) return a;
  if (a.get() == b.get()) return I(0);
  return sub(a, b);
}
Var imul(const Var& a, const Var& b) {
  const auto x = cval(a), y = cval(b);
  if (x && y)
    if (auto r = checked_mul(*x, *y)) return I(*r);
  if ((x && *x == 0) || (y && *y == 0)) return I(0);
  if (x && *x == 1) return b;
  if (y && *y == 1) return a;
  return mul(a, b);
}
Var imax(const Var& a, const Var& b) {
  const auto x = cval(a), y = cval(b);
  if (x && y) return I(std::max(*x, *y));
  if (a.get() == b.get()) return a;
  return maximum(a, b);
}
Var imin(const Var& a, const Var& b) {
  const auto x = cval(a), y = cval(b);
  if (x && y) return I(std::min(*x, *y));
  if (a.get() == b.get()) return a;
  return minimum(a, b);
}
// Floor division (Python's //); the divisor is never 0 where the result is used.
Var ifloordiv(const Var& a, const Var& b) {
  const auto x = cval(a), y = cval(b);
  if (y && *y == 1) return a;
  if (x && y && *y != 0)
    if (auto q = checked_floor_div(*x, *y)) return I(*q);
  return int_div(a, b);
}
Var ilt(const Var& a, const Var& b) {
  const auto x = cval(a), y = cval(b);
  if (x && y) return B(*x < *y);
  return lt(a, b);
}
Var iand(const Var& a, const Var& b) {
  const auto x = cval(a), y = cval(b);
  if (x) return *x ? b : B(false);
  if (y) return *y ? a : B(false);
  return and_(a, b);
}
Var isel(const Var& cond, const Var& a, const Var& b) {
  if (const auto c = cval(cond)) return *c ? a : b;
  const auto x = cval(a), y = cval(b);
  if (a.get() == b.get() || (x && y && *x == *y)) return a;
  return switch_(cond, a, b);
}

// ---------------------------------------------------------------------------------------------
// Subtensor of Subtensor -> one Subtensor.

// One index entry with its bounds as 0-d int64 variables (null: absent).
struct MEntry {
  Kind kind = Kind::Slice;
  Var a, b, c;
  bool full() const { return kind == Kind::Slice && !a && !b && !c; }
};

std::vector<MEntry> read_spec(const IndexSpec& spec, const std::vector<Var>& inputs) {
  size_t k = 1;
  auto get = [&](Bound b, int64_t v) -> Var {
    if (b == Bound::None) return nullptr;
    if (b == Bound::Const) return I(v);
    return i64(inputs[k++]);
  };
  std::vector<MEntry> r;
  for (const IndexEntry& e : spec) {
    MEntry m;
    m.kind = e.kind;
    if (e.kind == Kind::Int) {
      m.a = get(e.a, e.av);
    } else if (e.kind == Kind::Slice) {
      m.a = get(e.a, e.av);
      m.b = get(e.b, e.bv);
      m.c = get(e.c, e.cv);
    }
    r.push_back(std::move(m));
  }
  return r;
}

Var build_subtensor(const Var& x, const std::vector<MEntry>& es) {
  IndexSpec spec;
  std::vector<Var> in{x};
  auto put = [&](const Var& v, Bound& b, int64_t& value) {
    if (!v) {
      b = Bound::None;
    } else if (auto c = cval(v)) {
      b = Bound::Const;
      value = *c;
    } else {
      b = Bound::Input;
      in.push_back(v);
    }
  };
  for (const MEntry& m : es) {
    IndexEntry e;
    e.kind = m.kind;
    if (m.kind == Kind::Int) {
      put(m.a, e.a, e.av);
    } else if (m.kind == Kind::Slice) {
      put(m.a, e.a, e.av);
      put(m.b, e.b, e.bv);
      put(m.c, e.c, e.cv);
      if (e.c == Bound::Const && e.cv == 1) e.c = Bound::None;
    }
    spec.push_back(e);
  }
  while (!spec.empty() && spec.back().kind == Kind::Slice && spec.back().a == Bound::None &&
         spec.back().b == Bound::None && spec.back().c == Bound::None)
    spec.pop_back();
  if (spec.empty()) return x;
  return apply_op1(std::make_shared<Subtensor>(spec), in);
}

// The first index a slice takes and its length, on an axis of length n (Python's slice.indices).
struct NormSlice {
  Var start, len;
};

// A slice's step as Python uses it: INT64_MIN acts as -INT64_MAX (so that -step fits).
Var slice_step(const MEntry& s) { return s.c ? imax(s.c, I(-std::numeric_limits<int64_t>::max())) : I(1); }

// No step, bound or length overflows int64 for any int64 start/stop/step: the bounds are clamped
// to [-1, n] first, and the length is (d - 1) // step + 1 rather than (d + step - 1) // step.
NormSlice normalize_slice(const Var& n, const MEntry& s) {
  const Var step = slice_step(s);
  const Var pos = ilt(I(0), step);
  const Var lower = isel(pos, I(0), I(-1));
  const Var upper = isel(pos, n, isub(n, I(1)));
  auto clamp = [&](const Var& v) { return isel(ilt(v, I(0)), imax(iadd(v, n), lower), imin(v, upper)); };
  const Var start = s.a ? clamp(s.a) : isel(pos, I(0), isub(n, I(1)));
  const Var stop = s.b ? clamp(s.b) : isel(pos, n, I(-1));
  const auto sign = cval(pos);
  Var len_pos, len_neg;
  if (!sign || *sign) len_pos = imax(I(0), iadd(ifloordiv(isub(isub(stop, start), I(1)), step), I(1)));
  if (!sign || !*sign) len_neg = imax(I(0), iadd(ifloordiv(isub(isub(start, stop), I(1)), isub(I(0), step)), I(1)));
  return {start, sign ? (*sign ? len_pos : len_neg) : isel(pos, len_pos, len_neg)};
}

bool nonneg_const_or_none(const Var& v) { return !v || (cval(v) && *cval(v) >= 0); }

// s2 applied to the axis that slice s1 leaves of an axis of length n: one slice of that axis.
// Nothing overflows for any int64 bounds and steps: the bounds are built from the first and last
// elements taken (indices of the axis) and the merged step is only a product where the result has
// two elements (so it is less than n); a value that could wrap is only computed in a switch
// branch that is discarded.
MEntry compose_slices(const Var& n, const MEntry& s1, const MEntry& s2) {
  const auto c1 = s1.c ? cval(s1.c) : std::optional<int64_t>(1);
  const auto c2 = s2.c ? cval(s2.c) : std::optional<int64_t>(1);
  MEntry r;
  // Positive constant steps and non-negative constant bounds: no need for the axis length.
  if (c1 && c2 && *c1 > 0 && *c2 > 0 && nonneg_const_or_none(s1.a) && nonneg_const_or_none(s1.b) &&
      nonneg_const_or_none(s2.a) && nonneg_const_or_none(s2.b)) {
    const int64_t a1 = s1.a ? *cval(s1.a) : 0, a2 = s2.a ? *cval(s2.a) : 0;
    const auto off = checked_mul(a2, *c1);
    const auto start = off ? checked_add(a1, *off) : std::nullopt;
    const auto step = checked_mul(*c1, *c2);
    std::optional<int64_t> stop2;
    if (s2.b)
      if (const auto p = checked_mul(*cval(s2.b), *c1)) stop2 = checked_add(a1, *p);
    // A bound or step past int64 takes the general path below.
    if (start && step && (!s2.b || stop2)) {
      if (*start != 0) r.a = I(*start);
      std::optional<int64_t> stop;
      if (s1.b) stop = *cval(s1.b);
      if (s2.b) stop = std::min(stop.value_or(std::numeric_limits<int64_t>::max()), *stop2);
      if (stop) r.b = I(*stop);
      if (*step != 1) r.c = I(*step);
      return r;
    }
  }
  const Var step1 = slice_step(s1), step2 = slice_step(s2);
  const NormSlice n1 = normalize_slice(n, s1);
  const NormSlice n2 = normalize_slice(n1.len, s2);
  const Var& len = n2.len;
  const Var nonempty = ilt(I(0), len);
  // The first and last elements taken, as indices of the axis (exact when the result is not empty).
  const Var first = iadd(n1.start, imul(n2.start, step1));
  const auto ps = c1 && c2 ? checked_mul(*c1, *c2) : std::nullopt;
  const Var pos = ilt(I(0), step1), pos2 = ilt(I(0), step2);
  const auto cp = cval(pos), cp2 = cval(pos2);
  // The merged step's sign; its value matters only where the result has two elements or more.
  const Var positive = cp && cp2 ? B(*cp == *cp2) : eq(pos, pos2);
  const auto cpos = cval(positive);
  const Var sign = isel(positive, I(1), I(-1));
  const Var step = ps ? I(*ps) : (c1 && c2) ? sign : isel(ilt(I(1), len), imul(step1, step2), sign);
  const Var last = iadd(first, imul(isub(len, I(1)), step));
  // An empty result is [0:0].
  r.a = isel(nonempty, first, I(0));
  if (cpos && *cpos) {
    r.b = isel(nonempty, iadd(last, I(1)), I(0));
    if (ps && *c1 > 0 && *c2 > 0) {
      // Positive steps: an outer slice from the first element starts where the inner one does,
      // and one to the end stops where the inner one does (the same bounds on the same axis, with
      // the exact product step; a step standing for an overflowing one must keep first/last).
      const bool from_first = !s2.a || cval(s2.a) == 0;
      if (from_first) r.a = s1.a;  // empty: [s1.a:0]
      if (!s2.b) {
        r.b = s1.b;
        // empty: [s1.b:s1.b], or [INT64_MAX:] when the inner slice runs to the end.
        if (!from_first) r.a = isel(nonempty, first, s1.b ? s1.b : I(std::numeric_limits<int64_t>::max()));
      }
    }
  } else {
    // A negative bound would count from the end: -n - 1 stands for "before the first element".
    const Var before = isub(I(-1), n);
    const Var stop_neg = isel(ilt(last, I(1)), before, isub(last, I(1)));
    const Var stop = cpos ? stop_neg : isel(positive, iadd(last, I(1)), stop_neg);
    r.b = isel(nonempty, stop, I(0));
  }
  r.c = step;
  return r;
}

// Index i of the axis that slice s leaves of an axis of length n: an index of that axis, or n
// (out of range: the merged subtensor raises where the original did) when i is out of range.
Var compose_index(const Var& n, const MEntry& s, const Var& i) {
  const auto c = s.c ? cval(s.c) : std::optional<int64_t>(1);
  const auto ci = cval(i);
  if (c && ci && *ci >= 0) {
    // x[a::c][i] = x[a + i*c] for a >= 0, c > 0 (and below b); x[a::c][i] = x[a + i*c] for a < 0, c < 0.
    const auto off = checked_mul(*ci, *c);
    if (*c > 0 && off && nonneg_const_or_none(s.a) && nonneg_const_or_none(s.b)) {
      const auto idx = checked_add(s.a ? *cval(s.a) : 0, *off);
      if (idx && (!s.b || *idx < *cval(s.b))) return I(*idx);
    }
    if (*c < 0 && off && !s.b && (!s.a || (cval(s.a) && *cval(s.a) < 0)))
      if (const auto idx = checked_add(s.a ? *cval(s.a) : -1, *off)) return I(*idx);
  }
  const NormSlice ns = normalize_slice(n, s);
  const Var inorm = isel(ilt(i, I(0)), iadd(i, ns.len), i);
  const Var valid = iand(ilt(I(-1), inorm), ilt(inorm, ns.len));
  // inorm * step is exact where valid (it spans elements of the axis).
  return isel(valid, iadd(ns.start, imul(inorm, slice_step(s))), n);
}

std::optional<std::vector<Var>> subtensor_merge(FunctionGraph&, Apply& node) {
  const Var& mid = node.inputs[0];
  if (!mid->owner || typeid(*mid->owner->op) != typeid(Subtensor)) return std::nullopt;
  const Apply& inner = *mid->owner;
  const Var& x = inner.inputs[0];
  const std::vector<MEntry> e1 = read_spec(static_cast<const Subtensor&>(*inner.op).spec, inner.inputs);
  const std::vector<MEntry> e2 = read_spec(static_cast<const Subtensor&>(*node.op).spec, node.inputs);
  const ShapeVars xs = shape_vars(x);

  // The axes of the inner output ("slots"): a Slice or NewAxis entry, or a trailing axis of x.
  struct Slot {
    const MEntry* entry;  // null: a trailing axis of x
    int axis;             // the axis of x (-1 for NewAxis)
  };
  struct Item {
    const MEntry* int_entry = nullptr;  // an Int entry of the inner spec (no output axis)
    Slot slot{nullptr, -1};
  };
  std::vector<Item> items;
  int ax = 0;
  for (const MEntry& m : e1) {
    if (m.kind == Kind::Int) {
      items.push_back({&m, {}});
      ++ax;
    } else if (m.kind == Kind::Slice) {
      items.push_back({nullptr, {&m, ax++}});
    } else if (m.kind == Kind::NewAxis) {
      items.push_back({nullptr, {&m, -1}});
    } else {
      return std::nullopt;
    }
  }
  for (; ax < x->ndim(); ++ax) items.push_back({nullptr, {nullptr, ax}});

  std::vector<MEntry> merged;
  size_t p = 0;
  auto own_entry = [](const Slot& s) { return s.entry ? *s.entry : MEntry{}; };
  for (const Item& it : items) {
    if (it.int_entry) {
      merged.push_back(*it.int_entry);
      continue;
    }
    while (p < e2.size() && e2[p].kind == Kind::NewAxis) merged.push_back(e2[p++]);
    if (p >= e2.size()) {
      merged.push_back(own_entry(it.slot));
      continue;
    }
    const MEntry& o = e2[p++];
    if (o.kind != Kind::Int && o.kind != Kind::Slice) return std::nullopt;
    const Slot& s = it.slot;
    if (o.full()) {
      merged.push_back(own_entry(s));
    } else if (!s.entry || s.entry->full()) {
      merged.push_back(o);  // a whole axis of x: the outer entry applies to x directly
    } else if (s.entry->kind == Kind::NewAxis) {
      // A length-1 axis: index 0 or -1 drops it; a slice keeping its element keeps it.
      if (o.kind == Kind::Int) {
        const auto i = cval(o.a);
        if (!i || (*i != 0 && *i != -1)) return std::nullopt;
        continue;
      }
      if ((o.a && !cval(o.a)) || (o.b && !cval(o.b)) || (o.c && !cval(o.c))) return std::nullopt;
      const int64_t step = o.c ? *cval(o.c) : 1;
      if (step == 0 || slice_length(1, o.a ? cval(o.a) : std::nullopt, o.b ? cval(o.b) : std::nullopt, step) != 1)
        return std::nullopt;
      merged.push_back(*s.entry);
    } else if (o.kind == Kind::Int) {
      MEntry m;
      m.kind = Kind::Int;
      m.a = compose_index(xs[s.axis], *s.entry, o.a);
      merged.push_back(std::move(m));
    } else {
      merged.push_back(compose_slices(xs[s.axis], *s.entry, o));
    }
  }
  while (p < e2.size()) {
    if (e2[p].kind != Kind::NewAxis) return std::nullopt;
    merged.push_back(e2[p++]);
  }
  return one(retype(build_subtensor(x, merged), node.output_ptr(0)->type));
}

/// The Alloc of zeros that v is, or that a chain of basic IncSubtensors starts from.
const Apply* zeros_base(Var v) {
  while (v->owner && typeid(*v->owner->op) == typeid(IncSubtensor) &&
         !static_cast<const IncSubtensor&>(*v->owner->op).advanced)
    v = v->owner->inputs[0];
  const Apply* a = v->owner;
  return a && typeid(*a->op) == typeid(Alloc) && is_constant_value(a->inputs[0], 0) ? a : nullptr;
}

std::optional<std::vector<Var>> add_of_inc_subtensor_of_zeros(FunctionGraph&, Apply& node) {
  const auto* e = dynamic_cast<const Elemwise*>(node.op.get());
  if (!e || e->scalar != ScalarOpKind::Add || node.inputs.size() != 2) return std::nullopt;
  const TensorType& t = node.output_ptr(0)->type;
  for (size_t k = 0; k < 2; ++k) {
    const Var& q = node.inputs[k];
    const Var& p = node.inputs[1 - k];
    const Apply* inc = q->owner;
    if (!inc || typeid(*inc->op) != typeid(IncSubtensor) || !(q->type == t) || !(p->type == t)) continue;
    const auto& op = static_cast<const IncSubtensor&>(*inc->op);
    const Apply* zq = inc->inputs[0]->owner;
    if (op.advanced || !zq || zeros_base(inc->inputs[0]) != zq) continue;  // q: zeros with v at idx
    const Apply* zp = zeros_base(p);
    if (!zp || zp->inputs.size() != zq->inputs.size()) continue;
    bool same_shape = true;  // the same shape variables (merged), so the same shape at run time
    for (size_t i = 1; i < zp->inputs.size(); ++i)
      same_shape = same_shape && zp->inputs[i].get() == zq->inputs[i].get();
    if (!same_shape) continue;
    std::vector<Var> ins(inc->inputs.begin(), inc->inputs.end());
    ins[0] = p;
    return one(retype(apply_op(std::make_shared<IncSubtensor>(op.spec, false), ins)[0], t));
  }
  return std::nullopt;
}

}  // namespace

std::vector<LocalRewrite> canonicalize_subtensor_rules() {
  return {{"local_subtensor_merge", {typeid(Subtensor)}, subtensor_merge},
          {"local_add_of_inc_subtensor_of_zeros", {typeid(Elemwise)}, add_of_inc_subtensor_of_zeros}};
}

}  // namespace hypatia::rewrite
