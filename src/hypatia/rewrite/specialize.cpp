// Cheaper forms (phase specialize, after canonicalize and stabilize; blas and fusion read its
// output). Local rules on Elemwise and Reduce nodes. Guarantees: each replacement has the exact
// type of what it replaces and the same values, two rules aside: x / c -> x * (1 / c) rounds 1 / c
// first, and a float's pow(x, n) for an integer n in [3, 8] becomes products, each rounded (a few
// ulp at most; an integer's wraps as pow's). Afterwards, where the rules could fire, no node raises
// to the power 2, 1, 0.5 or -1 (or to another integer power up to 8), multiplies by -1 or a variable by itself, divides
// 1 by a variable or a float by a constant, and a square read only by a sum is sqr(x): the forms the fused kernels and
// the fusion pass know.
//
// Rules in the pattern form (rewrite/pattern.h) that replaced parts of local_pow_specialize keep
// its name as a prefix (local_pow_specialize_*), so that print_rewrites output stays recognizable.
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "hypatia/ops/elemwise.h"
#include "hypatia/ops/reduce.h"
#include "hypatia/rewrite/passes.h"
#include "hypatia/rewrite/pattern.h"
#include "hypatia/rewrite/rewrite_util.h"

namespace hypatia::rewrite {
namespace {

/// The largest n of pow(x, n) that becomes products (Theano's local_pow_specialize_device went to
/// 512, and took negative n as a reciprocal): each product rounds and a squaring doubles the error
/// before it, so x^n is within (n - 1) / 2 ulp: 3.5 at 8 (16 measured 5.3), against pow's 1. A
/// negative n stays pow: 1 / x^|n| is 0 where x^|n| overflows and x^n does not (1e13f ** -3).
constexpr double kMaxPowerByProducts = 8;

/// x ** k for an integer k >= 1 by squaring: sqr steps and products of the set bits' powers.
Var power_by_products(const Var& x, int64_t k) {
  Var result, base = x;
  for (;;) {
    if (k & 1) result = result ? mul(result, base) : base;
    k >>= 1;
    if (k == 0) return result;
    base = sqr(base);
  }
}

// x / c -> x * (1 / c); pow(x, n) for an integer constant n in [3, 8] -> products, which fuse into the neighbouring
// loop where pow was a libm call per element (x ** 3 of 2048 x 2048 float32: 9.2 ms, twice numpy's). (pow(x, 2 / 1 /
// 0.5 / -1) -> sqr / x / sqrt / reciprocal are in the pattern form, specialize_rules.)
std::optional<std::vector<Var>> specialize_elemwise(FunctionGraph&, Apply& n) {
  const Elemwise* e = elemwise_op(&n);
  if (!e) return std::nullopt;
  const TensorType& out = n.output_ptr(0)->type;
  const auto& in = n.inputs;
  if (e->scalar == ScalarOpKind::Pow && in[0]->dtype() == out.dtype && out.dtype != DType::Bool &&
      in[1]->ndim() <= out.ndim()) {
    // x already of the output's dtype (int8 ** 3.0 is a float64 power, not int8's wrapped
    // product). (2 and 1 have forms of their own.)
    auto c = scalar_constant(in[1]);
    if (c && std::nearbyint(*c) == *c && *c >= 3 && *c <= kMaxPowerByProducts)
      return one(as_type(power_by_products(in[0], static_cast<int64_t>(*c)), out));
  }
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

// sum(x * x) and sum(x ** 2) -> sum(sqr(x)), one form for the fusion pass (when the square has no
// other reader).
std::optional<std::vector<Var>> sum_sqr(FunctionGraph& fg, Apply& n) {
  const auto& r = static_cast<const Reduce&>(*n.op);
  const Var& x = n.inputs[0];
  if (r.kind != ReduceKind::Sum || x->dtype() == DType::Bool || fg.clients(x.get()).size() != 1) return std::nullopt;
  Var a;
  if (elemwise_of(x, ScalarOpKind::Mul) && x->owner->inputs[0].get() == x->owner->inputs[1].get())
    a = x->owner->inputs[0];
  else if (elemwise_of(x, ScalarOpKind::Pow) && is_constant_value(x->owner->inputs[1], 2))
    a = x->owner->inputs[0];
  if (!a || !(a->type == x->type)) return std::nullopt;
  return one(as_type(apply_op1(n.op, {sqr(a)}), n.output_ptr(0)->type));
}

/// x is not bool and has the output's dtype (x * x and sqr(x) then agree, wrap-around included).
PatternConstraint non_bool_output_dtype(const char* x) {
  PatternConstraint same = output_dtype_vars({x});
  return
      [same, name = std::string(x)](const PatternMatch& m) { return same(m) && m.get(name)->dtype() != DType::Bool; };
}

/// A float output whose dtype x has: x ** 0.5 and x ** -1 of an integer x are computed in the
/// output's float dtype, which sqrt(x) and reciprocal(x) of x's own would not be.
PatternConstraint float_output_of_x(const char* x) {
  PatternConstraint is_float = float_output(), same = output_dtype_vars({x});
  return [is_float, same](const PatternMatch& m) { return is_float(m) && same(m); };
}

}  // namespace

std::vector<LocalRewrite> specialize_div_rules() {
  return {{"local_pow_specialize", {typeid(Elemwise)}, specialize_elemwise}};
}

std::vector<LocalRewrite> specialize_rules() {
  return {
      // Only where x has the output's dtype: int8 ** 2.0 is a float64 square, not sqr(int8)'s
      // wrapped one cast afterwards (Theano's rule had that bug).
      pattern_rewrite("local_pow_specialize_sqr", "(pow x 2)", "(sqr x)", non_bool_output_dtype("x")),
      pattern_rewrite("local_pow_specialize_one", "(pow x 1)", "x"),
      pattern_rewrite("local_pow_specialize_sqrt", "(pow x 0.5)", "(sqrt x)", float_output_of_x("x")),
      pattern_rewrite("local_pow_specialize_reciprocal", "(pow x -1)", "(reciprocal x)", float_output_of_x("x")),
      // -1 * x -> -x (so neg(-1 * x) ends as x through neg_neg), x * x -> sqr(x), 1 / x ->
      // reciprocal(x) (Theano's local_mul_specialize, local_mul_to_sqr, local_div_to_reciprocal).
      pattern_rewrite("local_mul_minus_one_to_neg", "(mul -1 x)", "(neg x)", exact_in_output_dtype({"x"})),
      pattern_rewrite("local_mul_to_sqr", "(mul x x)", "(sqr x)", non_bool_output_dtype("x")),
      pattern_rewrite("local_div_to_reciprocal", "(true_div 1 x)", "(reciprocal x)", output_dtype_vars({"x"})),
      {"local_sum_sqr", {typeid(Reduce)}, sum_sqr},
      // clip(x, lo, hi) is min(max(x, lo), hi) (its scalar definition): two binary ops with SIMD
      // loops that fuse with their neighbours, where clip's three-operand loop was scalar (5x
      // numpy's time on a 256 x 256 float32).
      pattern_rewrite("local_clip_to_minimum_maximum", "(clip x lo hi)", "(minimum (maximum x lo) hi)",
                      output_dtype_vars({"x", "lo", "hi"})),
  };
}

}  // namespace hypatia::rewrite
