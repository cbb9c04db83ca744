// Rewrite rules written in the pattern form (rewrite/pattern.h), added to the phases that
// register_basic creates. Each rule is exact (the same values) or strictly more accurate than the
// graph it replaces. Rules moved from basic.cpp keep the name of the hand-written rewrite they
// came from as a prefix (local_elemwise_canonical_*, local_stabilize_elemwise_*,
// local_pow_specialize_*), so that print_rewrites output stays recognizable.
#include <initializer_list>
#include <string>

#include "hypatia/rewrite/pattern.h"
#include "hypatia/rewrite/rewriter.h"

namespace hypatia::rewrite {
namespace {

void add(std::initializer_list<const char*> phases, const std::string& name, const char* pattern,
         const char* replacement, const PatternConstraint& constraint = {}) {
  for (const char* phase : phases)
    register_local_rewrite(phase, pattern_rewrite(name, pattern, replacement, constraint));
}

/// x is not bool and has the output's dtype (x * x and sqr(x) then agree, wrap-around included).
PatternConstraint non_bool_output_dtype(const char* x) {
  PatternConstraint same = output_dtype_vars({x});
  return
      [same, name = std::string(x)](const PatternMatch& m) { return same(m) && m.get(name)->dtype() != DType::Bool; };
}

}  // namespace

void register_patterns() {
  // ------------------------------------------------------------------------------------------
  // canonicalize (the first four were part of local_elemwise_canonical, which also runs in
  // specialize; x - x, x * 0, x * 1, (a / s) * s and cast to the same dtype stay there).
  add({"canonicalize", "specialize"}, "local_elemwise_canonical_add_zero", "(add x 0)", "x");
  add({"canonicalize", "specialize"}, "local_elemwise_canonical_sub_zero", "(sub x 0)", "x");
  add({"canonicalize", "specialize"}, "local_elemwise_canonical_div_one", "(true_div x 1)", "x");
  add({"canonicalize", "specialize"}, "local_elemwise_canonical_neg_neg", "(neg (neg x))", "x");
  // x - (-y) -> x + y and x + (-y) -> x - y: exact in IEEE arithmetic, and in integer arithmetic
  // when y is negated in the output's dtype (an unsigned y promoted to a wider signed output is not).
  add({"canonicalize"}, "local_sub_neg_to_add", "(sub x (neg y))", "(add x y)", exact_in_output_dtype({"y"}));
  add({"canonicalize"}, "local_add_neg_to_sub", "(add x (neg y))", "(sub x y)", exact_in_output_dtype({"y"}));

  // ------------------------------------------------------------------------------------------
  // stabilize. Moved from local_stabilize_elemwise (which keeps log(erfc), log(softmax) and
  // log(sum(exp))).
  add({"stabilize"}, "local_stabilize_elemwise_log1p", "(log (add 1 x))", "(log1p x)", float_output());
  add({"stabilize"}, "local_stabilize_elemwise_expm1", "(sub (exp x) 1)", "(expm1 x)", float_output());
  add({"stabilize"}, "local_stabilize_elemwise_1msigmoid", "(sub 1 (sigmoid x))", "(sigmoid (neg x))", float_output());
  add({"stabilize"}, "local_stabilize_elemwise_log_sigmoid", "(log (sigmoid x))", "(neg (softplus (neg x)))",
      float_output());
  // Softplus forms (PyTensor's log1p_neg_sigmoid_to_softminus, log1pexp_to_softplus): finite
  // where sigmoid rounds to 1 and exp overflows. (log(1 - sigmoid(x)) needs no rule of its own:
  // 1msigmoid, log_sigmoid and neg_neg make it -softplus(x).)
  add({"stabilize"}, "local_log1p_neg_sigmoid", "(log1p (neg (sigmoid x)))", "(neg (softplus x))", float_output());
  add({"stabilize"}, "local_log1pexp_to_softplus", "(log1p (exp x))", "(softplus x)", float_output());
  // Inverse pairs (PyTensor's local_exp_log): x where the inner function is defined, NaN where it
  // is not (a negative x has no log), as the original graph gives; no overflow or underflow on the way.
  add({"stabilize"}, "local_log_exp", "(log (exp x))", "x", float_output());
  add({"stabilize"}, "local_log1p_expm1", "(log1p (expm1 x))", "x", float_output());
  add({"stabilize"}, "local_exp_log", "(exp (log x))", "(switch (ge x 0) x nan)", float_output());
  add({"stabilize"}, "local_exp_log1p", "(exp (log1p x))", "(switch (ge x -1) (add x 1) nan)", float_output());
  add({"stabilize"}, "local_expm1_log", "(expm1 (log x))", "(switch (ge x 0) (sub x 1) nan)", float_output());
  add({"stabilize"}, "local_expm1_log1p", "(expm1 (log1p x))", "(switch (ge x -1) x nan)", float_output());
  // log(1 - exp(x)) = log1mexp(x): log1p(-exp(x)) below -log(2), log(-expm1(x)) above (Maechler's
  // split); 1 - exp(x) loses everything for x near 0 and rounds to 1 for x below -37.
  add({"stabilize"}, "local_log1mexp", "(log (sub 1 (exp x)))",
      "(switch (lt x -0.69314718055994530942) (log1p (neg (exp x))) (log (neg (expm1 x))))", float_output());
  // log(1 - x) -> log1p(-x), accurate for small x (Theano reached it through its add/neg canonical
  // form; here x + (-y) becomes x - y). After log1mexp, which handles x = exp(y) better. Float x
  // only: 1 - x in an integer dtype wraps around where log1p(-x) would not.
  add({"stabilize"}, "local_log1p_sub", "(log (sub 1 x))", "(log1p (neg x))", float_vars({"x"}));
  // erf complements (Theano's local_one_minus_erf, local_one_minus_erfc, local_erf_minus_one).
  add({"stabilize"}, "local_one_minus_erf", "(sub 1 (erf x))", "(erfc x)", float_output());
  add({"stabilize"}, "local_one_minus_erfc", "(sub 1 (erfc x))", "(erf x)", float_output());
  add({"stabilize"}, "local_erf_minus_one", "(sub (erf x) 1)", "(neg (erfc x))", float_output());
  // sqrt(x^2) = |x| without overflow of x^2 (float x only: an integer square may wrap around).
  // Also in specialize, which turns pow(pow(x, 2), 0.5) into sqrt(sqr(x)).
  add({"stabilize", "specialize"}, "local_sqrt_sqr", "(sqrt (sqr x))", "(abs x)", float_vars({"x"}));

  // ------------------------------------------------------------------------------------------
  // specialize. Moved from local_pow_specialize (which keeps x / c -> x * (1 / c)).
  add({"specialize"}, "local_pow_specialize_sqr", "(pow x 2)", "(sqr x)");
  add({"specialize"}, "local_pow_specialize_one", "(pow x 1)", "x");
  add({"specialize"}, "local_pow_specialize_sqrt", "(pow x 0.5)", "(sqrt x)", float_output());
  add({"specialize"}, "local_pow_specialize_reciprocal", "(pow x -1)", "(reciprocal x)", float_output());
  // -1 * x -> -x (so neg(-1 * x) ends as x through neg_neg), x * x -> sqr(x), 1 / x -> reciprocal(x)
  // (Theano's local_mul_specialize, local_mul_to_sqr, local_div_to_reciprocal).
  add({"specialize"}, "local_mul_minus_one_to_neg", "(mul -1 x)", "(neg x)", exact_in_output_dtype({"x"}));
  add({"specialize"}, "local_mul_to_sqr", "(mul x x)", "(sqr x)", non_bool_output_dtype("x"));
  add({"specialize"}, "local_div_to_reciprocal", "(true_div 1 x)", "(reciprocal x)", output_dtype_vars({"x"}));
}

}  // namespace hypatia::rewrite
