// Numerically stable forms (phase stabilize, after canonicalize has put the arithmetic in its
// canonical form: x + (-y) is x - y, constants are folded). Local rules on Elemwise nodes of a
// float output and on CrossentropyCategorical1Hot. Guarantees: each replacement has the exact
// type of what it replaces and computes the same function, exactly or more accurately: finite
// where the replaced form overflows, underflows or cancels (log1p, expm1, softplus, log1mexp,
// erfc, log_softmax, a logsumexp that subtracts the max, a cross-entropy read from log_softmax),
// and NaN where the replaced form is undefined (exp(log x) for x < 0). The gradients T.grad builds
// from the naive forms get their finite forms too (sigmoid for exp / (1 + exp), a max-shifted
// softmax for exp / sum(exp), cancelled reciprocal pairs, a log-softmax gradient without a
// division by the softmax).
//
// Rules in the pattern form (rewrite/pattern.h) that replaced parts of local_stabilize_elemwise
// keep its name as a prefix (local_stabilize_elemwise_*), so that print_rewrites output stays
// recognizable.
#include <optional>
#include <vector>

#include "hypatia/ops/elemwise.h"
#include "hypatia/ops/nnet.h"
#include "hypatia/ops/reduce.h"
#include "hypatia/ops/shape.h"
#include "hypatia/rewrite/passes.h"
#include "hypatia/rewrite/pattern.h"
#include "hypatia/rewrite/rewrite_util.h"

namespace hypatia::rewrite {
namespace {

/// The reduction `r` applied to exp(y) when v is sum(exp(y)) (through a DimShuffle that only adds
/// broadcastable axes), with y.
const Reduce* sum_of_exp(const Var& v, Var& y) {
  Var s = v;
  if (s->owner && typeid(*s->owner->op) == typeid(DimShuffle)) s = s->owner->inputs[0];
  if (!s->owner || typeid(*s->owner->op) != typeid(Reduce)) return nullptr;
  const auto& r = static_cast<const Reduce&>(*s->owner->op);
  if (r.kind != ReduceKind::Sum || !elemwise_of(s->owner->inputs[0], ScalarOpKind::Exp)) return nullptr;
  y = s->owner->inputs[0]->owner->inputs[0];
  return &r;
}

/// Whether y is already y0 - switch(isinf(m), 0, m): the max-shifted form the logsumexp and
/// softmax rules build (they must not shift it again).
bool max_shifted(const Var& y) {
  return elemwise_of(y, ScalarOpKind::Sub) && elemwise_of(y->owner->inputs[1], ScalarOpKind::Switch);
}

/// max(y) over `axes` (kept as length-1 axes), 0 where it is infinite: an infinite max would
/// give inf - inf; with 0 the result is exact anyway.
Var finite_max(const Var& y, const std::vector<int>& axes) {
  Var m = max(y, axes, /*keepdims=*/true);
  return switch_(isinf(m), zeros_like(m), m);
}

// log(erfc(y)), log(softmax(y)) and log(sum(exp(y))). (log(1 + x), exp(x) - 1, 1 - sigmoid(x)
// and log(sigmoid(x)) are in the pattern form, stabilize_rules.)
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
      Var y;
      const Reduce* r = x->owner && typeid(*x->owner->op) == typeid(Reduce) ? sum_of_exp(x, y) : nullptr;
      if (r && !max_shifted(y)) {  // (a shifted y is this rewrite's own result: already stable)
        // The max is added back last, after the log, so the result is rounded once at the end
        // (float32 [1e5, 1e5] gives 1e5 + log 2 to the float). Accurate to about eps in absolute
        // terms: a result much smaller than 1 (logsumexp([0, -40]) = 4.2e-18) is not exact
        // relative to itself, as log1p(rest) would make it; a max - max(log_softmax) form was
        // exact there but 2.4-3.2x slower than this fused sum (measured), so it is not used.
        Var safe_m = finite_max(y, r->axes);
        Var s = sum(exp(y - safe_m), r->axes, false, r->dtype);
        Var m_out = sum(safe_m, r->axes, false, r->dtype);  // drops the kept axes (each has length 1)
        return one(as_type(log(s) + m_out, out));
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

// CrossentropySoftmax1HotWithBias(a + b[None, :], 0, y) -> CrossentropySoftmax1HotWithBias(a, b, y):
// a classifier's bias added in the cross-entropy's own pass over each row (Theano's WithBias),
// where the sum has no other reader. Its gradient (Dx) reads only the softmax, which is the same.
std::optional<std::vector<Var>> crossentropy_fold_bias(FunctionGraph& fg, Apply& n) {
  if (!is_constant_value(n.inputs[1], 0.0)) return std::nullopt;
  const Var& z = n.inputs[0];
  if (!elemwise_of(z, ScalarOpKind::Add) || z->owner->inputs.size() != 2 || fg.clients(z.get()).size() != 1)
    return std::nullopt;
  for (int k = 0; k < 2; ++k) {
    const Var &a = z->owner->inputs[k], &row = z->owner->inputs[1 - k];
    if (!(a->type == z->type) || !row->owner || typeid(*row->owner->op) != typeid(DimShuffle)) continue;
    if (static_cast<const DimShuffle&>(*row->owner->op).pattern != std::vector<int>{-1, 0}) continue;
    const Var& b = row->owner->inputs[0];  // (a vector: DimShuffle{x,0} of a column drops its axis 1)
    if (b->ndim() != 1 || b->dtype() != z->dtype()) continue;
    const std::vector<Var> outs = crossentropy_softmax_1hot_with_bias(a, b, n.inputs[2]);
    return std::vector<Var>{as_type(outs[0], n.output_ptr(0)->type), as_type(outs[1], n.output_ptr(1)->type)};
  }
  return std::nullopt;
}

// CrossentropySoftmax1HotWithBiasDx(Alloc(d, n), sm, y) -> CrossentropySoftmax1HotWithBiasDx(d, sm,
// y) for a d of one element (a mean's gradient, the same for every row) and n provably sm's rows
// (else the Alloc's length check stays): the kernel reads it for every row, and nothing fills a
// vector of n copies first.
std::optional<std::vector<Var>> crossentropy_dx_of_one_value(FunctionGraph&, Apply& n) {
  const Var& dy = n.inputs[0];
  if (!dy->owner || typeid(*dy->owner->op) != typeid(Alloc) || dy->owner->inputs.size() != 2) return std::nullopt;
  const Var& d = dy->owner->inputs[0];
  if (d->ndim() != 1 || !d->type.broadcastable[0] || d->dtype() != dy->dtype()) return std::nullopt;
  if (!same_dim(dy->owner->inputs[1], shape_i(n.inputs[1], 0))) return std::nullopt;
  return one(as_type(crossentropy_softmax_1hot_with_bias_dx(d, n.inputs[1], n.inputs[2]), n.output_ptr(0)->type));
}

// ---------------------------------------------------------------------------------------------
// Stable gradients. T.grad builds the gradient of a stable-looking value from the value's naive
// form (the rules above see only the value): log(1 + exp(x)) differentiates to exp(x) / (1 +
// exp(x)), log(sum(exp(x))) to exp(x) * (1 / sum(exp(x))), log(1 - sigmoid(x)) to a product with
// 1 / sigmoid(-x) and sigmoid(-x) in it, log(softmax(x)) to softmax * (g / softmax - s). Each is
// inf / inf or 0 * inf = NaN where the value is large; the rules below rewrite them to their
// finite forms.

/// Whether a and b compute the same value: the same Var, equal 0-d constants, or equal ops (not
/// random) over inputs that compute the same values, a few levels deep (the rules of this phase
/// build one expression several times before merge2 makes it one node).
bool same_value(const Var& a, const Var& b, int depth = 4) {
  if (a == b) return true;
  if (depth == 0 || !(a->type == b->type)) return false;
  if (!a->owner || !b->owner) {
    if (a->owner || b->owner || a->ndim() != 0) return false;
    const auto ca = scalar_constant(a), cb = scalar_constant(b);
    return ca && cb && *ca == *cb;
  }
  const Apply &na = *a->owner, &nb = *b->owner;
  if (a->index != b->index || na.op->is_random() || na.inputs.size() != nb.inputs.size() || !na.op->equals(*nb.op))
    return false;
  for (size_t i = 0; i < na.inputs.size(); ++i)
    if (!same_value(na.inputs[i], nb.inputs[i], depth - 1)) return false;
  return true;
}

/// The factors of a product: nested mul nodes flattened, negations counted in `negs`.
void mul_factors(const Var& v, std::vector<Var>& out, int& negs, int depth = 0) {
  if (depth < 8) {
    if (elemwise_of(v, ScalarOpKind::Mul)) {
      for (const Var& i : v->owner->inputs) mul_factors(i, out, negs, depth + 1);
      return;
    }
    if (elemwise_of(v, ScalarOpKind::Neg)) {
      ++negs;
      return mul_factors(v->owner->inputs[0], out, negs, depth + 1);
    }
  }
  out.push_back(v);
}

/// The product of `factors` (at least one), negated when `negs` is odd.
Var product_of(const std::vector<Var>& factors, int negs) {
  Var p = factors[0];
  for (size_t i = 1; i < factors.size(); ++i) p = p * factors[i];
  return negs % 2 ? -p : p;
}

/// y * (1 / y) and y * (a / y) in a product (through nested products and negations) -> 1 and a:
/// the gradient of log(1 - sigmoid(x)) is -sigmoid(x) instead of NaN where sigmoid(-x) is 0.
std::optional<std::vector<Var>> cancel_reciprocal(FunctionGraph&, Apply& n) {
  if (!elemwise_of(n.output(0), ScalarOpKind::Mul) || !is_float(n.output_ptr(0)->dtype())) return std::nullopt;
  std::vector<Var> f;
  int negs = 0;
  mul_factors(n.output(0), f, negs);
  for (size_t i = 0; i < f.size(); ++i) {
    Var y, num;
    if (elemwise_of(f[i], ScalarOpKind::Reciprocal)) {
      y = f[i]->owner->inputs[0];
    } else if (elemwise_of(f[i], ScalarOpKind::TrueDiv)) {
      y = f[i]->owner->inputs[1];
      num = f[i]->owner->inputs[0];
    } else {
      continue;
    }
    for (size_t j = 0; j < f.size(); ++j) {
      if (j == i || !same_value(f[j], y)) continue;
      std::vector<Var> rest;
      for (size_t k = 0; k < f.size(); ++k)
        if (k == i) {
          if (num) rest.push_back(num);
        } else if (k != j) {
          rest.push_back(f[k]);
        }
      if (rest.empty()) return std::nullopt;  // the result is all ones: left to the other rules
      if (Var r = as_type(product_of(rest, negs), n.output_ptr(0)->type)) return one(r);
      return std::nullopt;
    }
  }
  return std::nullopt;
}

/// exp(y) * (1 / sum(exp(y))) and exp(y) / sum(exp(y)) (the gradient of log(sum(exp(y)))) ->
/// exp(y - m) / sum(exp(y - m)) with m = max(y) over the summed axes (0 where it is infinite).
std::optional<std::vector<Var>> softmax_of_sum_exp(FunctionGraph&, Apply& n) {
  if (!is_float(n.output_ptr(0)->dtype())) return std::nullopt;
  // e / denom, or e * r with r = [DimShuffle](1 / denom) or [DimShuffle](num / denom), whose
  // num (through the same DimShuffle) stays a factor.
  Var e, denom, factor;
  if (elemwise_of(n.output(0), ScalarOpKind::TrueDiv)) {
    e = n.inputs[0];
    denom = n.inputs[1];
  } else if (elemwise_of(n.output(0), ScalarOpKind::Mul) && n.inputs.size() == 2) {
    for (int i = 0; i < 2 && !denom; ++i) {
      const Var& r = n.inputs[1 - i];
      const bool ds = r->owner && typeid(*r->owner->op) == typeid(DimShuffle);
      const Var& inner = ds ? r->owner->inputs[0] : r;
      if (!elemwise_of(n.inputs[i], ScalarOpKind::Exp)) continue;
      if (elemwise_of(inner, ScalarOpKind::Reciprocal)) {
        denom = inner->owner->inputs[0];
      } else if (elemwise_of(inner, ScalarOpKind::TrueDiv)) {
        denom = inner->owner->inputs[1];
        const Var& num = inner->owner->inputs[0];
        if (!is_constant_value(num, 1.0)) factor = ds ? apply_op1(r->owner->op, {num}) : num;
      } else {
        continue;
      }
      e = n.inputs[i];
    }
  }
  if (!denom || !elemwise_of(e, ScalarOpKind::Exp)) return std::nullopt;
  Var y;
  const Reduce* r = sum_of_exp(denom, y);
  if (!r || !same_value(y, e->owner->inputs[0])) return std::nullopt;
  if (max_shifted(y)) return std::nullopt;  // this rule's own result (or logsumexp's)
  Var ex = exp(y - finite_max(y, r->axes));
  Var sm = ex / sum(ex, r->axes, /*keepdims=*/true, r->dtype);
  return one(as_type(factor ? sm * factor : sm, n.output_ptr(0)->type));
}

}  // namespace

std::vector<LocalRewrite> stabilize_rules() {
  std::vector<LocalRewrite> rules = {
      {"local_stabilize_elemwise", {typeid(Elemwise)}, stabilize_elemwise},
      {"local_softmax_crossentropy", {typeid(CrossentropyCategorical1Hot)}, stabilize_crossentropy},
      {"local_crossentropy_softmax_fold_bias", {typeid(CrossentropySoftmax1HotWithBias)}, crossentropy_fold_bias},
      {"local_crossentropy_dx_of_one_value", {typeid(CrossentropySoftmax1HotWithBiasDx)}, crossentropy_dx_of_one_value},
      {"local_mul_cancel_reciprocal", {typeid(Elemwise)}, cancel_reciprocal},
      {"local_softmax_of_sum_exp", {typeid(Elemwise)}, softmax_of_sum_exp},
  };
  auto add = [&](const char* name, const char* pattern, const char* replacement, PatternConstraint constraint) {
    rules.push_back(pattern_rewrite(name, pattern, replacement, std::move(constraint)));
  };
  add("local_stabilize_elemwise_log1p", "(log (add 1 x))", "(log1p x)", float_output());
  add("local_stabilize_elemwise_expm1", "(sub (exp x) 1)", "(expm1 x)", float_output());
  add("local_stabilize_elemwise_1msigmoid", "(sub 1 (sigmoid x))", "(sigmoid (neg x))", float_output());
  add("local_stabilize_elemwise_log_sigmoid", "(log (sigmoid x))", "(neg (softplus (neg x)))", float_output());
  // Softplus forms (PyTensor's log1p_neg_sigmoid_to_softminus, log1pexp_to_softplus): finite
  // where sigmoid rounds to 1 and exp overflows. (log(1 - sigmoid(x)) needs no rule of its own:
  // 1msigmoid, log_sigmoid and neg_neg make it -softplus(x).)
  add("local_log1p_neg_sigmoid", "(log1p (neg (sigmoid x)))", "(neg (softplus x))", float_output());
  add("local_log1pexp_to_softplus", "(log1p (exp x))", "(softplus x)", float_output());
  // Inverse pairs (PyTensor's local_exp_log): x where the inner function is defined, NaN where it
  // is not (a negative x has no log), as the original graph gives; no overflow or underflow on the way.
  add("local_log_exp", "(log (exp x))", "x", float_output());
  add("local_log1p_expm1", "(log1p (expm1 x))", "x", float_output());
  add("local_exp_log", "(exp (log x))", "(switch (ge x 0) x nan)", float_output());
  add("local_exp_log1p", "(exp (log1p x))", "(switch (ge x -1) (add x 1) nan)", float_output());
  add("local_expm1_log", "(expm1 (log x))", "(switch (ge x 0) (sub x 1) nan)", float_output());
  add("local_expm1_log1p", "(expm1 (log1p x))", "(switch (ge x -1) x nan)", float_output());
  // log(1 - exp(x)) = log1mexp(x): log1p(-exp(x)) below -log(2), log(-expm1(x)) above (Maechler's
  // split); 1 - exp(x) loses everything for x near 0 and rounds to 1 for x below -37.
  add("local_log1mexp", "(log (sub 1 (exp x)))",
      "(switch (lt x -0.69314718055994530942) (log1p (neg (exp x))) (log (neg (expm1 x))))", float_output());
  // log(1 - x) -> log1p(-x), accurate for small x (Theano reached it through its add/neg canonical
  // form; here x + (-y) becomes x - y). After log1mexp, which handles x = exp(y) better. Float x
  // only: 1 - x in an integer dtype wraps around where log1p(-x) would not.
  add("local_log1p_sub", "(log (sub 1 x))", "(log1p (neg x))", float_vars({"x"}));
  // Gradients of softplus forms: exp(x) / (1 + exp(x)) is sigmoid(x) (inf / inf where exp
  // overflows); with the incoming gradient g as a factor too.
  add("local_exp_over_1_plus_exp", "(true_div (exp x) (add 1 (exp x)))", "(sigmoid x)", float_output());
  add("local_exp_over_1_plus_exp_times", "(true_div (mul g (exp x)) (add 1 (exp x)))", "(mul g (sigmoid x))",
      float_output());
  add("local_exp_over_1_plus_exp_by", "(mul (true_div g (add 1 (exp x))) (exp x))", "(mul g (sigmoid x))",
      float_output());
  // The gradient of log(softmax(x)): softmax * (g / softmax - s) -> g - softmax * s, which never
  // divides by a probability that underflowed to 0 (s is sum(g) once g / softmax * softmax in it
  // has cancelled).
  add("local_log_softmax_grad", "(mul a (sub (true_div g a) s))", "(sub g (mul a s))", float_output());
  // erf complements (Theano's local_one_minus_erf, local_one_minus_erfc, local_erf_minus_one).
  add("local_one_minus_erf", "(sub 1 (erf x))", "(erfc x)", float_output());
  add("local_one_minus_erfc", "(sub 1 (erfc x))", "(erf x)", float_output());
  add("local_erf_minus_one", "(sub (erf x) 1)", "(neg (erfc x))", float_output());
  return rules;
}

std::vector<LocalRewrite> stabilize_sqrt_sqr_rules() {
  // sqrt(x^2) = |x| without overflow of x^2 (float x only: an integer square may wrap around).
  // Also in specialize, which turns pow(pow(x, 2), 0.5) into sqrt(sqr(x)).
  return {pattern_rewrite("local_sqrt_sqr", "(sqrt (sqr x))", "(abs x)", float_vars({"x"}))};
}

}  // namespace hypatia::rewrite
