// The pattern form of local rewrites (rewrite/pattern.h): parser and its errors, matching
// (commutative add/mul with backtracking, repeated variables, constants), the rewrite it makes,
// and each rule written in that form: compiled with FAST_RUN (fusion and in-place excluded so
// every node stays visible), its structure checked, its values compared with the unoptimized graph
// on the reference kernels, and its values at extreme inputs checked against known results.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <optional>
#include <sstream>

#include "hypatia/hypatia.h"
#include "hypatia/rewrite/pattern.h"
#include "hypatia/rewrite/rewrite_util.h"
#include "test_util.h"

namespace hypatia {
namespace {

using rewrite::match_pattern;
using rewrite::parse_pattern;
using rewrite::pattern_rewrite;
using rewrite::PatternExpr;
using rewrite::PatternMatch;
using testing::make_array;
using K = ScalarOpKind;

constexpr double kNan = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// ---------------------------------------------------------------------------------------------
// Parser

TEST(Pattern, ParsesAndPrintsCanonically) {
  EXPECT_EQ(parse_pattern("(log (add 1 x))").str(), "(log (add 1 x))");
  EXPECT_EQ(parse_pattern("  ( log(add   1\tx) )\n").str(), "(log (add 1 x))");
  EXPECT_EQ(parse_pattern("(mul -1 x)").str(), "(mul -1 x)");
  EXPECT_EQ(parse_pattern("(add 1e3 (true_div x_1 0.5))").str(), "(add 1000 (true_div x_1 0.5))");
  EXPECT_EQ(parse_pattern("(switch (ge x 0) x nan)").str(), "(switch (ge x 0) x nan)");
  EXPECT_EQ(parse_pattern("(sub inf y)").str(), "(sub inf y)");
  EXPECT_EQ(parse_pattern("x").str(), "x");
  PatternExpr e = parse_pattern("(log (add 1 x))");
  ASSERT_EQ(e.kind, PatternExpr::Kind::Op);
  EXPECT_EQ(e.op, K::Log);
  ASSERT_EQ(e.args.size(), 1u);
  const PatternExpr& add = e.args[0];
  EXPECT_EQ(add.op, K::Add);
  EXPECT_EQ(add.pos, 5u);
  EXPECT_EQ(add.args[0].kind, PatternExpr::Kind::Constant);
  EXPECT_EQ(add.args[0].value, 1.0);
  EXPECT_EQ(add.args[1].kind, PatternExpr::Kind::Variable);
  EXPECT_EQ(add.args[1].name, "x");
  EXPECT_EQ(add.args[1].pos, 12u);
}

/// The message pattern_rewrite("my_rule", pattern, replacement) fails with (a ValueError).
std::string registration_error(const std::string& pattern, const std::string& replacement = "x") {
  try {
    pattern_rewrite("my_rule", pattern, replacement);
  } catch (const ValueError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(Pattern, MalformedPatternsFailAtRegistrationWithRuleAndPosition) {
  EXPECT_EQ(registration_error("(lgo x)"),
            "pattern_rewrite 'my_rule': unknown op 'lgo' (expected an Elemwise scalar op name such as add, mul, "
            "log1p, sigmoid) at position 1 of the pattern \"(lgo x)\"");
  struct Case {
    std::string pattern, replacement, message;
  };
  const std::vector<Case> cases = {
      {"", "x", "empty pattern at position 0 of the pattern \"\""},
      {"   ", "x", "empty pattern at position 3 of the pattern"},
      {"(log", "x", "unclosed '(' at position 0 of the pattern"},
      {"(log (add 1 x)", "x", "unclosed '(' at position 0 of the pattern"},
      {"(log (add 1 x", "x", "unclosed '(' at position 5 of the pattern"},
      {"(log x))", "x", "unexpected text after the end of the expression at position 7 of the pattern"},
      {"(add x y) z", "x", "unexpected text after the end of the expression at position 10"},
      {")", "x", "unexpected ')' at position 0"},
      {"(log x y)", "x", "'log' takes 1 argument, got 2 at position 0"},
      {"(log (add x))", "x", "'add' takes 2 arguments, got 1 at position 5"},
      {"()", "x", "empty application '()' at position 0"},
      {"((log x))", "x", "expected an op name after '(' at position 1"},
      {"(log X)", "x", "unexpected 'X' (expected '(', a number or a variable: a lower-case identifier) at position 5"},
      {"(log 1.2.3)", "x", "bad number '1.2.3' at position 5"},
      {"(log -x)", "x", "bad number '-x' at position 5"},
      {"(log exp)", "x",
       "op name 'exp' used as a variable (apply it: (exp ...), or rename the variable) at position 5"},
      {"(cast x)", "x", "cast is not available in patterns (its dtype is an attribute) at position 1"},
      {"x", "x", "the pattern must be an op application such as (log x), got 'x' at position 0"},
      {"1", "x", "the pattern must be an op application such as (log x), got '1'"},
      // Errors in the replacement name it.
      {"(log (add 1 x))", "(log1p y)",
       "variable 'y' at position 7 of the replacement \"(log1p y)\" does not appear in the pattern \"(log (add 1 "
       "x))\""},
      {"(log (add 1 x))", "(log1p x", "unclosed '(' at position 0 of the replacement \"(log1p x\""},
      {"(log (add 1 x))", "(lg1p x)", "unknown op 'lg1p'"},
      {"(sub x x)", "0", "the replacement \"0\" uses no variable of the pattern"},
      {"(add x 1)", "(add  x 1)", "the replacement equals the pattern \"(add x 1)\""},
  };
  for (const Case& c : cases) {
    const std::string msg = registration_error(c.pattern, c.replacement);
    EXPECT_EQ(msg.rfind("pattern_rewrite 'my_rule': ", 0), 0u) << msg;
    EXPECT_NE(msg.find(c.message), std::string::npos)
        << "pattern " << c.pattern << " -> " << c.replacement << "\n got: " << msg << "\n want: " << c.message;
  }
}

// ---------------------------------------------------------------------------------------------
// Matching

bool matches(const std::string& pattern, const Var& v) { return match_pattern(parse_pattern(pattern), v).has_value(); }

TEST(Pattern, AddAndMulMatchInEitherArgumentOrder) {
  Var a = variable(vector_type(DType::Float64), "a");
  Var b = variable(vector_type(DType::Float64), "b");
  const PatternExpr p = parse_pattern("(log (add 1 x))");
  for (const Var& v : {log(1.0 + a), log(a + 1.0)}) {
    auto m = match_pattern(p, v);
    ASSERT_TRUE(m.has_value());
    EXPECT_EQ(m->get("x").get(), a.get());
    EXPECT_EQ(m->node, v->owner);
    EXPECT_EQ(m->get("y"), nullptr);
  }
  EXPECT_TRUE(matches("(mul 2 x)", a * 2.0));
  EXPECT_TRUE(matches("(mul 2 x)", 2.0 * a));
  // sub and true_div are not commutative.
  EXPECT_TRUE(matches("(sub 1 x)", 1.0 - a));
  EXPECT_FALSE(matches("(sub 1 x)", a - 1.0));
  EXPECT_FALSE(matches("(true_div 1 x)", a / 1.0));
  // Backtracking: the outer order that binds x first must try the inner mul's other order too.
  auto m = match_pattern(parse_pattern("(add (mul x y) x)"), (a * b) + b);
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->get("x").get(), b.get());
  EXPECT_EQ(m->get("y").get(), a.get());
  EXPECT_TRUE(matches("(add (mul x y) x)", b + (a * b)));
  EXPECT_FALSE(matches("(add (mul x y) x)", (a * b) + (a * a)));
}

TEST(Pattern, RepeatedVariableBindsTheSameVar) {
  Var a = variable(vector_type(DType::Float64), "a");
  Var b = variable(vector_type(DType::Float64), "b");
  EXPECT_TRUE(matches("(sub x x)", a - a));
  EXPECT_FALSE(matches("(sub x x)", a - b));
  EXPECT_TRUE(matches("(mul x x)", a * a));
  EXPECT_FALSE(matches("(mul x x)", a * b));
  EXPECT_TRUE(matches("(sub x y)", a - a));  // different names may bind the same Var
  EXPECT_FALSE(matches("(add (exp x) (log x))", exp(a) + log(b)));
  EXPECT_TRUE(matches("(add (exp x) (log x))", log(a) + exp(a)));
}

TEST(Pattern, ConstantsMatchByValueThroughDimShuffles) {
  Var a = variable(vector_type(DType::Float64), "a");
  Var m = variable(matrix_type(DType::Float64), "m");
  Var f = variable(vector_type(DType::Float32), "f");
  EXPECT_TRUE(matches("(add x 1)", m + 1.0));  // the 1 is a DimShuffle of a 0-d constant
  EXPECT_FALSE(matches("(add x 2)", m + 1.0));
  EXPECT_TRUE(matches("(add x 1)", a + constant(make_array({1, 1, 1}, {3}, DType::Float64))));
  EXPECT_FALSE(matches("(add x 1)", a + constant(make_array({1, 2, 1}, {3}, DType::Float64))));
  EXPECT_TRUE(matches("(add x 1)", a + constant(1.0, DType::Int8)));
  EXPECT_TRUE(matches("(mul x 0.1)", f * 0.1));  // a float32 constant holds 0.1 rounded to float32
  EXPECT_TRUE(matches("(add x nan)", a + kNan));
  EXPECT_FALSE(matches("(add x 1)", a + kNan));
  EXPECT_TRUE(matches("(sub x -inf)", a - constant(-kInf, DType::Float64)));
  // A variable binds a constant too.
  auto r = match_pattern(parse_pattern("(add x y)"), a + 3.0);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(rewrite::scalar_constant(r->get("y")).value_or(0), 3.0);
}

TEST(Pattern, NoMatchOnOtherOpsInPlaceNodesOrLeaves) {
  Var a = variable(vector_type(DType::Float64), "a");
  const PatternExpr p = parse_pattern("(log (add 1 x))");
  EXPECT_FALSE(match_pattern(p, a).has_value());               // a leaf
  EXPECT_FALSE(match_pattern(p, log(1.0 - a)).has_value());    // other inner op
  EXPECT_FALSE(match_pattern(p, log1p(1.0 + a)).has_value());  // other root op
  EXPECT_FALSE(match_pattern(p, log(2.0 + a)).has_value());    // other constant
  Var m = variable(matrix_type(DType::Float64), "m");
  EXPECT_FALSE(matches("(log (add 1 x))", log(transpose(1.0 + m))));  // a DimShuffle between
  // In-place nodes (root or intermediate) are not matched.
  auto log_inplace = std::make_shared<Elemwise>(K::Log, DType::Float64, 0);
  EXPECT_FALSE(match_pattern(p, apply_op1(log_inplace, {1.0 + a})).has_value());
  auto add_inplace = std::make_shared<Elemwise>(K::Add, DType::Float64, 0);
  Var one = dimshuffle(constant(1.0, DType::Float64), {-1});
  EXPECT_FALSE(match_pattern(p, log(apply_op1(add_inplace, {a, one}))).has_value());
  EXPECT_TRUE(match_pattern(p, log(add(a, one))).has_value());
}

TEST(Pattern, ConstraintRejectionTriesTheOtherArgumentOrder) {
  Var a = variable(vector_type(DType::Float64), "a");
  Var b = variable(vector_type(DType::Float64), "b");
  Var s = a + b;
  int calls = 0;
  Var bound;
  bool ok = match_pattern(parse_pattern("(add x y)"), *s->owner, [&](const PatternMatch& m) {
    ++calls;
    bound = m.get("x");
    return m.get("x")->name == "b";
  });
  EXPECT_TRUE(ok);
  EXPECT_EQ(calls, 2);
  EXPECT_EQ(bound.get(), b.get());
  EXPECT_FALSE(match_pattern(parse_pattern("(add x y)"), *s->owner, [](const PatternMatch&) { return false; }));
}

// ---------------------------------------------------------------------------------------------
// The rewrite a pattern makes

int count_kind(const std::vector<std::shared_ptr<Apply>>& nodes, K k) {
  int c = 0;
  for (const auto& n : nodes)
    if (typeid(*n->op) == typeid(Elemwise) && static_cast<const Elemwise&>(*n->op).scalar == k) ++c;
  return c;
}

TEST(Pattern, RewriteBuildsTheReplacementWithTheOutputType) {
  // Constants of the replacement take the matched output's dtype.
  Var i8 = variable(vector_type(DType::Int8), "i8");
  FunctionGraph fg({i8}, {i8 - 1.0});
  ASSERT_EQ(fg.outputs()[0]->dtype(), DType::Int8);
  LocalRewrite rw = pattern_rewrite("local_test_sub_one", "(sub x 1)", "(add x -1)");
  EXPECT_EQ(rw.tracks.size(), 1u);
  EXPECT_EQ(apply_local_rewrites(fg, {&rw}), 1);
  const Var& out = fg.outputs()[0];
  ASSERT_TRUE(out->owner);
  EXPECT_EQ(out->type, vector_type(DType::Int8));
  EXPECT_EQ(count_kind(fg.toposort(), K::Add), 1);
  EXPECT_EQ(out->owner->inputs[1]->dtype(), DType::Int8);
  EXPECT_EQ(rewrite::scalar_constant(out->owner->inputs[1]).value_or(0), -1.0);
  // A constraint keeps the rule from firing.
  Var f = variable(vector_type(DType::Float32), "f");
  FunctionGraph fg2({f}, {f * 2.0});
  LocalRewrite twice = pattern_rewrite("local_test_twice", "(mul 2 x)", "(add x x)", rewrite::float_vars({"x"}));
  LocalRewrite never = pattern_rewrite("local_test_never", "(mul 2 x)", "(add x x)", rewrite::output_dtype_vars({"z"}));
  EXPECT_EQ(apply_local_rewrites(fg2, {&never}), 0);
  EXPECT_EQ(apply_local_rewrites(fg2, {&twice}), 1);
  EXPECT_EQ(fg2.outputs()[0]->type, vector_type(DType::Float32));
  EXPECT_EQ(count_kind(fg2.toposort(), K::Mul), 0);
}

TEST(Pattern, RewriteDoesNotFireWhereTheResultWouldNeedBroadcasting) {
  // log(ones(3, 4) + row) -> log1p(row) would have the row's shape: no rewrite.
  Var row = variable(row_type(DType::Float64), "row");
  Var ones = constant(make_array(std::vector<double>(12, 1.0), {3, 4}, DType::Float64));
  FunctionGraph fg({row}, {log(ones + row)});
  LocalRewrite rw = pattern_rewrite("local_test_log1p", "(log (add 1 x))", "(log1p x)");
  EXPECT_EQ(apply_local_rewrites(fg, {&rw}), 0);
  EXPECT_EQ(count_kind(fg.toposort(), K::Log), 1);
  // Compiled: the stabilize rule leaves it too, and the values are right.
  FunctionOptions o;
  o.mode = "FAST_RUN";
  Function f = function({row}, {log(ones + row)}, o);
  EXPECT_EQ(count_kind(f.toposort(), K::Log1p), 0);
  auto r = f({make_array({0, 1, 2, 3}, {1, 4}, DType::Float64)});
  EXPECT_TRUE(r[0].shape() == Shape({3, 4}));
  EXPECT_NEAR(r[0].get_flat(11), std::log(4.0), 1e-12);
}

TEST(Pattern, IntermediateNodesWithOtherReadersStayForThem) {
  Var a = variable(vector_type(DType::Float64), "a");
  Var s = 1.0 + a;
  FunctionGraph fg({a}, {log(s), s * 3.0});
  LocalRewrite rw = pattern_rewrite("local_test_log1p", "(log (add 1 x))", "(log1p x)");
  EXPECT_EQ(apply_local_rewrites(fg, {&rw}), 1);
  auto nodes = fg.toposort();
  EXPECT_EQ(count_kind(nodes, K::Log1p), 1);
  EXPECT_EQ(count_kind(nodes, K::Log), 0);
  EXPECT_EQ(count_kind(nodes, K::Add), 1);  // still read by s * 3
}

TEST(Pattern, RulesAreRegisteredInTheirPhases) {
  const auto has = testing::phase_has_rule;
  EXPECT_TRUE(has("canonicalize", "local_elemwise_canonical_neg_neg"));
  EXPECT_TRUE(has("specialize", "local_elemwise_canonical_neg_neg"));
  EXPECT_TRUE(has("canonicalize", "local_add_neg_to_sub"));
  EXPECT_TRUE(has("stabilize", "local_stabilize_elemwise_log1p"));
  EXPECT_TRUE(has("stabilize", "local_log1mexp"));
  EXPECT_TRUE(has("stabilize", "local_sqrt_sqr"));
  EXPECT_TRUE(has("specialize", "local_sqrt_sqr"));
  EXPECT_TRUE(has("specialize", "local_pow_specialize_sqr"));
  EXPECT_TRUE(has("specialize", "local_mul_to_sqr"));
  EXPECT_FALSE(has("canonicalize", "local_stabilize_elemwise_log1p"));
}

// ---------------------------------------------------------------------------------------------
// Each registered rule, compiled

/// FAST_RUN without fusion and in-place (so that every Elemwise node stays visible), with the
/// rewrites that fired (print_rewrites' log).
struct Compiled {
  std::optional<Function> f;
  std::string log;
  std::vector<std::shared_ptr<Apply>> nodes() const { return f->toposort(); }
  bool fired(const std::string& rule) const { return log.find("rewrite " + rule + " ") != std::string::npos; }
  std::string describe() const {
    std::string s;
    for (const auto& n : nodes()) s += n->op->name() + " ";
    return s + "\n" + log;
  }
};

Compiled compile_fast(const std::vector<Var>& ins, const std::vector<Var>& outs) {
  const Config saved = config();
  config().optimizer_excluding = "elemwise_fusion:inplace_elemwise";
  config().print_rewrites = true;
  FunctionOptions o;
  o.mode = "FAST_RUN";
  o.on_unused_input = "ignore";
  Compiled c;
  ::testing::internal::CaptureStderr();
  try {
    c.f.emplace(function(std::vector<In>(ins.begin(), ins.end()), std::vector<Out>(outs.begin(), outs.end()), o));
  } catch (...) {
    ::testing::internal::GetCapturedStderr();
    config() = saved;
    throw;
  }
  c.log = ::testing::internal::GetCapturedStderr();
  config() = saved;
  return c;
}

/// The unoptimized graph on the reference kernels.
Function compile_none(const std::vector<Var>& ins, const std::vector<Var>& outs) {
  FunctionOptions o;
  o.mode = "NONE";
  o.backend = kReferenceBackend;
  o.on_unused_input = "ignore";
  return function(std::vector<In>(ins.begin(), ins.end()), std::vector<Out>(outs.begin(), outs.end()), o);
}

void expect_value(double got, double want, double rtol, double atol, const std::string& what) {
  if (std::isnan(want)) {
    EXPECT_TRUE(std::isnan(got)) << what << ": got " << got << ", want nan";
  } else if (std::isinf(want)) {
    EXPECT_EQ(got, want) << what;
  } else {
    EXPECT_NEAR(got, want, rtol * std::abs(want) + atol) << what;
  }
}

/// One rule on a one-input graph.
struct RuleCase {
  std::vector<std::string> rules;  // the rewrites that must fire
  std::function<Var(const Var&)> build;
  std::vector<K> present, absent;                   // Elemwise ops in the compiled graph
  std::vector<double> ordinary;                     // inputs where the original graph is accurate: values must agree
  std::vector<std::pair<double, double>> extremes;  // input -> value the rewritten graph must give
  DType dt = DType::Float64;
};

void check_rule(const RuleCase& c) {
  Var x = variable(vector_type(c.dt), "x");
  Var y = c.build(x);
  const std::string name = c.rules.empty() ? "(no rule)" : c.rules[0];
  Compiled fast = compile_fast({x}, {y});
  for (const auto& r : c.rules) EXPECT_TRUE(fast.fired(r)) << name << ": " << r << " did not fire\n" << fast.describe();
  for (K k : c.present)
    EXPECT_GE(count_kind(fast.nodes(), k), 1) << name << ": no " << scalar_op_name(k) << "\n" << fast.describe();
  for (K k : c.absent)
    EXPECT_EQ(count_kind(fast.nodes(), k), 0) << name << ": " << scalar_op_name(k) << " left\n" << fast.describe();
  const bool f32 = c.dt == DType::Float32;
  if (!c.ordinary.empty()) {
    NDArray in = make_array(c.ordinary, {static_cast<int64_t>(c.ordinary.size())}, c.dt);
    auto a = (*fast.f)({in});
    auto b = compile_none({x}, {y})({in});
    EXPECT_ALLCLOSE(a[0], b[0], f32 ? 1e-5 : 1e-9, f32 ? 1e-6 : 1e-12) << name;
  }
  for (const auto& [in, want] : c.extremes) {
    auto r = (*fast.f)({make_array({in}, {1}, c.dt)});
    std::ostringstream what;
    what << name << " at x = " << in;
    expect_value(r[0].get_flat(0), want, f32 ? 1e-5 : 1e-10, f32 ? 1e-30 : 1e-300, what.str());
  }
}

Var c64(double v) { return constant(v, DType::Float64); }

TEST(PatternRules, Canonicalize) {
  check_rule({{"local_elemwise_canonical_add_zero"},
              [](const Var& x) { return exp(x + 0.0); },
              {K::Exp},
              {K::Add},
              {-1.5, 0, 2}});
  check_rule({{"local_elemwise_canonical_sub_zero"},
              [](const Var& x) { return exp(x - 0.0); },
              {K::Exp},
              {K::Sub},
              {-1.5, 0, 2}});
  check_rule({{"local_elemwise_canonical_div_one"},
              [](const Var& x) { return exp(x / 1.0); },
              {K::Exp},
              {K::TrueDiv, K::Mul},
              {-1.5, 0, 2}});
  check_rule({{"local_elemwise_canonical_neg_neg"},
              [](const Var& x) { return exp(neg(neg(x))); },
              {K::Exp},
              {K::Neg},
              {-1.5, 0, 2}});
}

TEST(PatternRules, AddAndSubOfANegation) {
  for (DType dt : {DType::Float64, DType::Int32}) {
    Var x = variable(vector_type(dt), "x");
    Var y = variable(vector_type(dt), "y");
    Compiled fast = compile_fast({x, y}, {x - neg(y), x + neg(y), neg(y) + x});
    EXPECT_TRUE(fast.fired("local_sub_neg_to_add")) << fast.describe();
    EXPECT_TRUE(fast.fired("local_add_neg_to_sub")) << fast.describe();
    EXPECT_EQ(count_kind(fast.nodes(), K::Neg), 0) << fast.describe();
    EXPECT_EQ(count_kind(fast.nodes(), K::Add), 1) << fast.describe();
    EXPECT_EQ(count_kind(fast.nodes(), K::Sub), 1) << fast.describe();  // x - y, merged
    std::vector<NDArray> args = {make_array({1.5, -2, 0, 7, -0.0}, {5}, dt),
                                 make_array({0.25, 3, -0.0, -7, 0}, {5}, dt)};
    auto a = (*fast.f)(args);
    auto b = compile_none({x, y}, {x - neg(y), x + neg(y), neg(y) + x})(args);
    for (int i = 0; i < 3; ++i) EXPECT_ALLCLOSE(a[i], b[i], 0, 0);
  }
  // An unsigned y negated in its own dtype wraps around differently from the int16 output: kept.
  Var x = variable(vector_type(DType::Int16), "x");
  Var y = variable(vector_type(DType::UInt8), "y");
  Compiled fast = compile_fast({x, y}, {x - neg(y), x + neg(y)});
  EXPECT_FALSE(fast.fired("local_sub_neg_to_add"));
  EXPECT_FALSE(fast.fired("local_add_neg_to_sub"));
  std::vector<NDArray> args = {make_array({1, -2, 300}, {3}, DType::Int16), make_array({0, 3, 255}, {3}, DType::UInt8)};
  auto a = (*fast.f)(args);
  auto b = compile_none({x, y}, {x - neg(y), x + neg(y)})(args);
  for (int i = 0; i < 2; ++i) EXPECT_ALLCLOSE(a[i], b[i], 0, 0);
}

TEST(PatternRules, StabilizeMovedFromBasic) {
  check_rule({{"local_stabilize_elemwise_log1p"},
              [](const Var& x) { return log(1.0 + x); },
              {K::Log1p},
              {K::Log, K::Add},
              {-0.5, 0, 0.5, 3},
              {{1e-17, 1e-17}, {-1, -kInf}, {-2, kNan}}});
  check_rule(
      {{"local_stabilize_elemwise_log1p"}, [](const Var& x) { return log(x + 1.0); }, {K::Log1p}, {K::Log}, {0.5}});
  check_rule({{"local_stabilize_elemwise_expm1"},
              [](const Var& x) { return exp(x) - 1.0; },
              {K::Expm1},
              {K::Exp, K::Sub},
              {-3, -0.5, 0, 0.5, 3},
              {{1e-17, 1e-17}, {-1000, -1}, {1000, kInf}}});
  check_rule({{"local_stabilize_elemwise_1msigmoid"},
              [](const Var& x) { return 1.0 - sigmoid(x); },
              {K::Sigmoid, K::Neg},
              {K::Sub},
              {-3, -0.5, 0, 0.5, 3},
              {{40, std::exp(-40.0)}, {-1000, 1}, {1000, 0}}});
  check_rule({{"local_stabilize_elemwise_log_sigmoid"},
              [](const Var& x) { return log(sigmoid(x)); },
              {K::Softplus},
              {K::Log, K::Sigmoid},
              {-3, -0.5, 0, 0.5, 3},
              {{-1000, -1000}, {1000, 0}, {-40, -40 - std::exp(-40.0)}}});
  check_rule({{"local_stabilize_elemwise_log_sigmoid"},
              [](const Var& x) { return log(sigmoid(x)); },
              {K::Softplus},
              {K::Log, K::Sigmoid},
              {-3, 0, 3},
              {{-100, -100}, {100, 0}},
              DType::Float32});
  // log(1 - sigmoid(x)) -> log(sigmoid(-x)) -> -softplus(--x) -> -softplus(x), three rules.
  check_rule({{"local_stabilize_elemwise_1msigmoid", "local_stabilize_elemwise_log_sigmoid",
               "local_elemwise_canonical_neg_neg"},
              [](const Var& x) { return log(1.0 - sigmoid(x)); },
              {K::Softplus, K::Neg},
              {K::Log, K::Sigmoid, K::Sub},
              {-3, -0.5, 0, 0.5, 3},
              {{1000, -1000}, {-1000, 0}}});
}

TEST(PatternRules, StabilizeSoftplusForms) {
  check_rule({{"local_log1p_neg_sigmoid"},
              [](const Var& x) { return log1p(neg(sigmoid(x))); },
              {K::Softplus, K::Neg},
              {K::Log1p, K::Sigmoid},
              {-3, -0.5, 0, 0.5, 3},
              {{1000, -1000}, {-1000, 0}, {40, -40}}});
  check_rule({{"local_log1pexp_to_softplus"},
              [](const Var& x) { return log1p(exp(x)); },
              {K::Softplus},
              {K::Log1p, K::Exp},
              {-3, -0.5, 0, 0.5, 3},
              {{1000, 1000}, {-1000, 0}, {800, 800}}});
}

TEST(PatternRules, StabilizeInversePairs) {
  check_rule({{"local_log_exp"},
              [](const Var& x) { return log(exp(x)); },
              {},
              {K::Log, K::Exp},
              {-3, -0.5, 0, 0.5, 3},
              {{1000, 1000}, {-1000, -1000}, {kNan, kNan}}});
  check_rule({{"local_log_exp"},
              [](const Var& x) { return log(exp(x)); },
              {},
              {K::Log, K::Exp},
              {-3, 0, 3},
              {{100, 100}, {-200, -200}},
              DType::Float32});
  check_rule({{"local_log1p_expm1"},
              [](const Var& x) { return log1p(expm1(x)); },
              {},
              {K::Log1p, K::Expm1},
              {-3, -0.5, 0, 0.5, 3},
              {{1000, 1000}, {-1000, -1000}, {1e-300, 1e-300}}});
  check_rule({{"local_exp_log"},
              [](const Var& x) { return exp(log(x)); },
              {K::Switch},
              {K::Exp, K::Log},
              {-2, -0.0, 0, 0.5, 3, 7},
              {{-1, kNan}, {0, 0}, {1e300, 1e300}, {2.5, 2.5}, {kInf, kInf}, {kNan, kNan}}});
  check_rule({{"local_exp_log1p"},
              [](const Var& x) { return exp(log1p(x)); },
              {K::Switch},
              {K::Exp, K::Log1p},
              {-2, -1, -0.5, 0, 3},
              {{-2, kNan}, {-1, 0}, {1e300, 1e300}, {0.5, 1.5}}});
  check_rule({{"local_expm1_log"},
              [](const Var& x) { return expm1(log(x)); },
              {K::Switch},
              {K::Expm1, K::Log},
              {-2, 0, 0.5, 3},
              {{-1, kNan}, {0, -1}, {1e300, 1e300}, {1 + std::ldexp(1.0, -40), std::ldexp(1.0, -40)}}});
  check_rule({{"local_expm1_log1p"},
              [](const Var& x) { return expm1(log1p(x)); },
              {K::Switch},
              {K::Expm1, K::Log1p},
              {-2, -1, -0.5, 0, 3},
              {{-2, kNan}, {-1, -1}, {1e-300, 1e-300}, {1e300, 1e300}}});
}

TEST(PatternRules, StabilizeLogOfOneMinus) {
  // log(1 - exp(x)): log1p(-exp(x)) below -log(2), log(-expm1(x)) above.
  for (DType dt : {DType::Float64, DType::Float32}) {
    check_rule({{"local_log1mexp"},
                [](const Var& x) { return log(1.0 - exp(x)); },
                {K::Switch, K::Log1p, K::Expm1},
                {K::Sub},
                {-5, -1, -0.7, -0.6, -0.1, 0.5},
                {{-1000, 0}, {-40, -std::exp(-40.0)}, {-1e-10, std::log(1e-10)}, {0, -kInf}, {0.5, kNan}},
                dt});
  }
  check_rule({{"local_log1p_sub"},
              [](const Var& x) { return log(1.0 - x); },
              {K::Log1p, K::Neg},
              {K::Log, K::Sub},
              {-3, 0.25, 0.9},
              {{1e-17, -1e-17}, {1, -kInf}, {2, kNan}}});
  // An integer x stays as written (1 - x wraps around in int8 where log1p(-x) would not).
  Var i = variable(vector_type(DType::Int8), "i");
  Compiled fast = compile_fast({i}, {log(1.0 - i)});
  EXPECT_FALSE(fast.fired("local_log1p_sub"));
}

TEST(PatternRules, StabilizeErfComplements) {
  check_rule({{"local_one_minus_erf"},
              [](const Var& x) { return 1.0 - erf(x); },
              {K::Erfc},
              {K::Erf, K::Sub},
              {-1, 0, 0.5, 2},
              {{10, std::erfc(10.0)}, {-10, 2}}});
  check_rule({{"local_one_minus_erfc"},
              [](const Var& x) { return 1.0 - erfc(x); },
              {K::Erf},
              {K::Erfc, K::Sub},
              {-1, 0, 0.5, 2},
              {{1e-20, std::erf(1e-20)}, {10, 1}}});
  check_rule({{"local_erf_minus_one"},
              [](const Var& x) { return erf(x) - 1.0; },
              {K::Erfc, K::Neg},
              {K::Erf, K::Sub},
              {-1, 0, 0.5, 2},
              {{10, -std::erfc(10.0)}, {-10, -2}}});
}

TEST(PatternRules, SqrtOfSquareIsAbs) {
  check_rule({{"local_sqrt_sqr"},
              [](const Var& x) { return sqrt(sqr(x)); },
              {K::Abs},
              {K::Sqrt, K::Sqr},
              {-3, -0.5, 0, 0.5, 3},
              {{1e200, 1e200}, {-1e-200, 1e-200}, {-kInf, kInf}}});
  check_rule({{"local_sqrt_sqr"},
              [](const Var& x) { return sqrt(sqr(x)); },
              {K::Abs},
              {K::Sqrt, K::Sqr},
              {-3, 0, 3},
              {{1e30, 1e30}, {-1e-30, 1e-30}},
              DType::Float32});
  // pow(pow(x, 2), 0.5) -> sqrt(sqr(x)) in specialize -> abs(x).
  check_rule({{"local_pow_specialize_sqr", "local_pow_specialize_sqrt", "local_sqrt_sqr"},
              [](const Var& x) { return pow(pow(x, c64(2)), c64(0.5)); },
              {K::Abs},
              {K::Pow, K::Sqrt, K::Sqr},
              {-3, 0, 3},
              {{-1e200, 1e200}}});
  // An integer square may wrap around: kept.
  Var i = variable(vector_type(DType::Int32), "i");
  Compiled fast = compile_fast({i}, {sqrt(sqr(i))});
  EXPECT_FALSE(fast.fired("local_sqrt_sqr"));
  EXPECT_EQ(count_kind(fast.nodes(), K::Sqr), 1);
}

TEST(PatternRules, SpecializePowers) {
  check_rule({{"local_pow_specialize_sqr"},
              [](const Var& x) { return pow(x, c64(2)); },
              {K::Sqr},
              {K::Pow},
              {-3, -0.5, 0, 0.5, 3}});
  check_rule(
      {{"local_pow_specialize_one"}, [](const Var& x) { return exp(pow(x, c64(1))); }, {K::Exp}, {K::Pow}, {-3, 0, 3}});
  check_rule({{"local_pow_specialize_sqrt"},
              [](const Var& x) { return pow(x, c64(0.5)); },
              {K::Sqrt},
              {K::Pow},
              {-3, 0, 0.5, 3}});
  check_rule({{"local_pow_specialize_reciprocal"},
              [](const Var& x) { return pow(x, c64(-1)); },
              {K::Reciprocal},
              {K::Pow},
              {-3, 0, 0.5, 3}});
  check_rule({{"local_pow_specialize_sqr"},
              [](const Var& x) { return pow(x, constant(2.0, DType::Float32)); },
              {K::Sqr},
              {K::Pow},
              {-3, 0.5, 3},
              {},
              DType::Float32});
}

// pow(x, n) for a small integer n becomes products (local_pow_specialize): within (n - 1) / 2 ulp
// of pow for every n in [3, 8], the special values exactly pow's (signed zeros, infinities, NaN,
// overflow and underflow where the products reach them as pow does), integer powers wrapping as
// the integer pow does; not for n > 8, negative n (1 / x^|n| would be 0 where x^|n| overflows:
// 1e13f ** -3 is 1e-39), non-integers, or an x of another dtype than the output's.
TEST(PatternRules, SpecializeSmallIntegerPowersToProducts) {
  for (DType dt : {DType::Float32, DType::Float64}) {
    Var x = variable(vector_type(dt), "x");
    std::vector<double> xs;
    for (int i = -40; i <= 40; ++i) xs.push_back(i * 0.137);
    const double inf = std::numeric_limits<double>::infinity();
    for (double v : {0.0, -0.0, inf, -inf, std::nan(""), 1.0, -1.0, 2.0}) xs.push_back(v);
    const NDArray in = make_array(xs, {static_cast<int64_t>(xs.size())}, dt);
    for (int n = 3; n <= 8; ++n) {
      Var y = pow(x, constant(static_cast<double>(n), dt));
      Compiled fast = compile_fast({x}, {y});
      EXPECT_TRUE(fast.fired("local_pow_specialize")) << n << "\n" << fast.describe();
      EXPECT_EQ(count_kind(fast.nodes(), K::Pow), 0) << n << "\n" << fast.describe();
      const NDArray got = (*fast.f)({in})[0], want = compile_none({x}, {y})({in})[0];
      for (int64_t i = 0; i < in.size(); ++i) {
        const double g = got.get_flat(i), w = want.get_flat(i);
        if (std::isnan(w) || std::isinf(w) || w == 0) {
          EXPECT_TRUE((std::isnan(g) && std::isnan(w)) || (g == w && std::signbit(g) == std::signbit(w)))
              << dtype_name(dt) << " " << xs[i] << " ** " << n << ": " << g << " vs " << w;
        } else {
          const double ulp = dt == DType::Float32 ? std::ldexp(1.0, -23) : std::ldexp(1.0, -52);
          // (pow itself is within an ulp.)
          const double bound = (n - 1) / 2.0 + 1;
          EXPECT_LE(std::fabs(g - w), bound * ulp * std::fabs(w)) << dtype_name(dt) << " " << xs[i] << " ** " << n;
        }
      }
    }
    // Left as pow: a larger or non-integer exponent.
    for (double c : {9.0, -2.0, -3.0, -8.0, 2.5, -3.5}) {
      Compiled fast = compile_fast({x}, {pow(x, constant(c, dt))});
      EXPECT_EQ(count_kind(fast.nodes(), K::Pow), 1) << c << "\n" << fast.describe();
    }
  }
  // Integers: products wrap as the integer pow does; a negative power and an x of another dtype
  // than the output's stay pow.
  Var i = variable(vector_type(DType::Int32), "i");
  const NDArray iv = make_array({-7, -2, 0, 3, 1000, 46341, -65536}, {7}, DType::Int32);
  for (int n : {3, 5, 8}) {
    Var y = pow(i, constant(static_cast<double>(n), DType::Int32));
    Compiled fast = compile_fast({i}, {y});
    EXPECT_EQ(count_kind(fast.nodes(), K::Pow), 0) << n;
    EXPECT_ALLCLOSE((*fast.f)({iv})[0], compile_none({i}, {y})({iv})[0]);
  }
  EXPECT_EQ(count_kind(compile_fast({i}, {pow(i, constant(-3.0, DType::Int32))}).nodes(), K::Pow), 1);
  Var b = variable(vector_type(DType::Int8), "b");
  EXPECT_EQ(count_kind(compile_fast({b}, {pow(b, constant(3.0, DType::Float64))}).nodes(), K::Pow), 1);
}

TEST(PatternRules, SpecializeProductsAndQuotients) {
  check_rule(
      {{"local_mul_minus_one_to_neg"}, [](const Var& x) { return exp(x * -1.0); }, {K::Neg}, {K::Mul}, {-3, 0, 3}});
  // neg(-1 * x) -> neg(neg(x)) -> x.
  check_rule({{"local_mul_minus_one_to_neg", "local_elemwise_canonical_neg_neg"},
              [](const Var& x) { return exp(neg(c64(-1) * x)); },
              {K::Exp},
              {K::Mul, K::Neg},
              {-3, 0, 3}});
  check_rule({{"local_mul_to_sqr"}, [](const Var& x) { return x * x; }, {K::Sqr}, {K::Mul}, {-3, -0.5, 0, 0.5, 3}});
  check_rule({{"local_div_to_reciprocal"},
              [](const Var& x) { return 1.0 / x; },
              {K::Reciprocal},
              {K::TrueDiv},
              {-3, -0.5, 0, 0.5, 3},
              {{0, kInf}}});
  check_rule({{"local_div_to_reciprocal"},
              [](const Var& x) { return 1.0 / x; },
              {K::Reciprocal},
              {K::TrueDiv},
              {-3, 0.5, 3},
              {},
              DType::Float32});
  // Kept where the dtypes would change the values: uint8 * int8(-1) is int16, -x in uint8 wraps;
  // 1 (float64) / x (float32) is float64, reciprocal(x) would round in float32; x * y.
  Var u = variable(vector_type(DType::UInt8), "u");
  Var f = variable(vector_type(DType::Float32), "f");
  Var x = variable(vector_type(DType::Float64), "x");
  Var y = variable(vector_type(DType::Float64), "y");
  Compiled fast = compile_fast({u, f, x, y}, {u * constant(-1.0, DType::Int8), c64(1) / f, x * y});
  EXPECT_FALSE(fast.fired("local_mul_minus_one_to_neg")) << fast.describe();
  EXPECT_FALSE(fast.fired("local_div_to_reciprocal")) << fast.describe();
  EXPECT_FALSE(fast.fired("local_mul_to_sqr")) << fast.describe();
  std::vector<NDArray> args = {make_array({0, 3, 255}, {3}, DType::UInt8), make_array({3, 0.5, 7}, {3}, DType::Float32),
                               make_array({1, 2, 3}, {3}, DType::Float64), make_array({4, 5, 6}, {3}, DType::Float64)};
  auto a = (*fast.f)(args);
  auto b = compile_none({u, f, x, y}, {u * constant(-1.0, DType::Int8), c64(1) / f, x * y})(args);
  for (int i = 0; i < 3; ++i) EXPECT_ALLCLOSE(a[i], b[i], 0, 0);
  EXPECT_EQ(a[0].get_flat(2), -255.0);
}

}  // namespace
}  // namespace hypatia
