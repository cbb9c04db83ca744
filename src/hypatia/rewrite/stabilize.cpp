// Numerically stable forms (phase stabilize, after canonicalize has put the arithmetic in its
// canonical form: x + (-y) is x - y, constants are folded). Local rules on Elemwise nodes of a
// float output and on CrossentropyCategorical1Hot. Guarantees: each replacement has the exact
// type of what it replaces and computes the same function, exactly or more accurately: finite
// where the replaced form overflows, underflows or cancels (log1p, expm1, softplus, log1mexp,
// erfc, log_softmax, a logsumexp that subtracts the max, a cross-entropy read from log_softmax),
// and NaN where the replaced form is undefined (exp(log x) for x < 0).
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

}  // namespace

std::vector<LocalRewrite> stabilize_rules() {
  std::vector<LocalRewrite> rules = {
      {"local_stabilize_elemwise", {typeid(Elemwise)}, stabilize_elemwise},
      {"local_softmax_crossentropy", {typeid(CrossentropyCategorical1Hot)}, stabilize_crossentropy},
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
