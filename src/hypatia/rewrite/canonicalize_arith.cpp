// Canonical forms of elementwise arithmetic (phase canonicalize; the identities run again in
// specialize, whose rewrites can expose them). Local rules on Elemwise nodes, any graph.
// Guarantees: each replacement has the exact type of what it replaces and the same values
// wherever the replaced graph runs (x / x and x - x aside: below). The rules take out adding or
// subtracting 0, multiplying by 1 or 0, dividing by 1, a negated negation, x - x, a cast to the
// dtype it has, adding or subtracting a negation (to subtracting or adding), a switch on a
// constant or between equal branches, max/min (and, in exact dtypes, logical and comparison ops)
// of one variable with itself, and the mul/div cancellations below, wherever the result can keep
// the replaced output's type: the forms the later phases look for.
//
// Integer arithmetic wraps around and integer true_div gives floats, so the algebraic identities
// (x * y) / x = y ... are applied to float graphs only; the identities that hold in wrapping
// arithmetic (neg(x) * neg(y) = x * y in one dtype) are applied there too. Like Theano's
// canonical forms, the mul/div cancellations take x / x as 1, and x - x as 0 (a NaN or inf x
// included).
//
// Rules in the pattern form (rewrite/pattern.h) that replaced parts of local_elemwise_canonical
// keep its name as a prefix (local_elemwise_canonical_*), so that print_rewrites output stays
// recognizable.
#include <optional>
#include <vector>

#include "hypatia/ops/elemwise.h"
#include "hypatia/ops/shape.h"
#include "hypatia/rewrite/passes.h"
#include "hypatia/rewrite/pattern.h"
#include "hypatia/rewrite/rewrite_util.h"

namespace hypatia::rewrite {
namespace {

// x - x, x * 1, x * 0, (a / s) * s and cast to the same dtype. (x + 0, x - 0, x / 1 and
// neg(neg(x)) are in the pattern form, canonicalize_identity_rules.)
std::optional<std::vector<Var>> canonical_elemwise(FunctionGraph&, Apply& n) {
  const Elemwise* e = elemwise_op(&n);
  if (!e) return std::nullopt;
  const TensorType& out = n.output_ptr(0)->type;
  const auto& in = n.inputs;
  switch (e->scalar) {
    case ScalarOpKind::Sub:
      if (in[0].get() == in[1].get()) return one(as_type(zeros_like(in[0], out.dtype), out));
      break;
    case ScalarOpKind::Mul:
      for (int k = 0; k < 2; ++k) {
        // (a / s) * s -> a: cancels the division the gradients of log and of a quotient leave
        // (log(sigmoid(x)) differentiates to g / sigmoid(x) * sigmoid(x) * (1 - sigmoid(x))).
        if (elemwise_of(in[k], ScalarOpKind::TrueDiv) && in[k]->owner->inputs[1].get() == in[1 - k].get())
          if (Var a = as_type(in[k]->owner->inputs[0], out)) return one(a);
        if (is_constant_value(in[k], 1)) return one(as_type(in[1 - k], out));
        if (is_constant_value(in[k], 0)) return one(as_type(zeros_like(in[1 - k], out.dtype), out));
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

// switch(c, a, b) -> a or b for a constant c; switch(c, a, a) -> a (broadcast to the output).
std::optional<std::vector<Var>> useless_switch(FunctionGraph&, Apply& n) {
  const Elemwise* e = elemwise_op(&n);
  if (!e || e->scalar != ScalarOpKind::Switch) return std::nullopt;
  const auto& in = n.inputs;
  if (in[1].get() == in[2].get()) return one(broadcast_to_output(in[1], n));
  if (const auto c = scalar_constant(in[0])) return one(broadcast_to_output(*c != 0 ? in[1] : in[2], n));
  return std::nullopt;
}

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
  if (elemwise_of(r, ScalarOpKind::TrueDiv) && is_constant_value(r->owner->inputs[0], 1)) return r->owner->inputs[1];
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

}  // namespace

std::vector<LocalRewrite> canonicalize_identity_rules() {
  return {
      {"local_elemwise_canonical", {typeid(Elemwise)}, canonical_elemwise},
      pattern_rewrite("local_elemwise_canonical_add_zero", "(add x 0)", "x"),
      pattern_rewrite("local_elemwise_canonical_sub_zero", "(sub x 0)", "x"),
      pattern_rewrite("local_elemwise_canonical_div_one", "(true_div x 1)", "x"),
      pattern_rewrite("local_elemwise_canonical_neg_neg", "(neg (neg x))", "x"),
  };
}

std::vector<LocalRewrite> canonicalize_arith_rules() {
  std::vector<LocalRewrite> rules = canonicalize_identity_rules();
  // x - (-y) -> x + y and x + (-y) -> x - y: exact in IEEE arithmetic, and in integer arithmetic
  // when y is negated in the output's dtype (an unsigned y promoted to a wider signed output is not).
  rules.push_back(
      pattern_rewrite("local_sub_neg_to_add", "(sub x (neg y))", "(add x y)", exact_in_output_dtype({"y"})));
  rules.push_back(
      pattern_rewrite("local_add_neg_to_sub", "(add x (neg y))", "(sub x y)", exact_in_output_dtype({"y"})));
  rules.push_back({"local_useless_switch", {typeid(Elemwise)}, useless_switch});
  rules.push_back({"local_useless_elemwise_extra", {typeid(Elemwise)}, useless_elemwise});
  rules.push_back({"local_mul_div_canonical", {typeid(Elemwise)}, mul_div});
  return rules;
}

}  // namespace hypatia::rewrite
