// Lazy thunks in the runtime: an op with lazy inputs (Op::lazy_inputs) asks for them from its
// kernel (Kernel::run_lazy); the nodes only they need run on demand or not at all. IfElse is the
// lazy op these tests use; the IfElse suite below tests it as users see it (several outputs,
// branch shapes, gradients, errors, rewrites).
#include <atomic>

#include "hypatia/backends/backend.h"
#include "test_util.h"

namespace hypatia {
namespace {

/// Identity that counts its runs (a side effect: never merged, folded or removed).
std::atomic<int> g_runs[4];
class Count : public OpWithProps<Count> {
 public:
  explicit Count(int slot) : slot(slot) {}
  int slot;
  auto props() const { return std::make_tuple(slot); }
  std::string name() const override { return "Count" + std::to_string(slot); }
  std::vector<TensorType> make_output_types(const std::vector<Var>& in) const override { return {in[0]->type}; }
  bool has_side_effects() const override { return true; }
  /// Identity's gradient (not counted).
  std::vector<Var> grad(const Apply&, const std::vector<Var>& g) const override { return {g[0]}; }
};

void count_kernel(const Count& op, const KernelArgs& a) {
  ++g_runs[op.slot];
  *a.out[0] = a.in[0]->copy();
}

void register_test_ops() {
  static bool once = [] {
    register_simple_kernel<Count>(kReferenceBackend, count_kernel);
    return true;
  }();
  (void)once;
}

Var count(Var x, int slot) { return apply_op1(std::make_shared<Count>(slot), {x}); }
int runs(int slot) { return g_runs[slot].load(); }

class Lazy : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    register_test_ops();
    for (auto& r : g_runs) r = 0;
  }
  FunctionOptions opts() const {
    FunctionOptions o;
    o.mode = GetParam();
    return o;
  }
};

TEST_P(Lazy, OnlyTheTakenBranchRuns) {
  Var c = variable(scalar_type(DType::Int64), "c");
  Var x = vector("x", DType::Float64);
  Var a = exp(count(x, 0)) * 2.0;
  Var b = log(count(x, 1)) + 1.0;
  Function f = function({c, x}, {ifelse(c, a, b)}, opts());
  NDArray xv = NDArray::from_vector<double>({1, 2});
  for (int k = 0; k < 3; ++k) {
    EXPECT_ALLCLOSE(f({NDArray::scalar_int64(1), xv})[0],
                    NDArray::from_vector<double>({2 * std::exp(1.0), 2 * std::exp(2.0)}));
    EXPECT_ALLCLOSE(f({NDArray::scalar_int64(0), xv})[0], NDArray::from_vector<double>({1, std::log(2.0) + 1}));
  }
  EXPECT_EQ(runs(0), 3);
  EXPECT_EQ(runs(1), 3);
}

TEST_P(Lazy, FusionKeepsEachBranchsNodesOutOfTheOtherAndTheEagerPart) {
  // Both branches are elementwise work on x (fusible together, reading x once), and the condition
  // reads x too: fusing across the branches would run the untaken one, and its producers (here an
  // index out of range, and a counted node) every call.
  Var x = vector("x", DType::Float64);
  Var then_ = exp(x) * 2.0 + sum(count(x, 0));
  Var else_ = subtensor(x, 5) + x * 3.0;
  Function f = function({x}, {ifelse(gt(sum(x), constant(0.0, DType::Float64)), then_, else_)}, opts());
  const NDArray xv = NDArray::from_vector<double>({0.5, 1.0});
  EXPECT_ALLCLOSE(f({xv})[0], NDArray::from_vector<double>({2 * std::exp(0.5) + 1.5, 2 * std::exp(1.0) + 1.5}));
  EXPECT_ERROR(IndexError, f({NDArray::from_vector<double>({-0.5, -1.0})}), "index 5 is out of bounds");
  EXPECT_EQ(runs(0), 1);
}

TEST_P(Lazy, NodesTheEagerPartNeedsRunAlways) {
  Var c = variable(scalar_type(DType::Int64), "c");
  Var x = vector("x", DType::Float64);
  Var shared_part = count(x, 0);  // read by branch a and by the second output
  Var a = shared_part * 3.0;
  Var b = count(x, 1) - 1.0;
  Function f = function({c, x}, {ifelse(c, a, b), sum(shared_part)}, opts());
  NDArray xv = NDArray::from_vector<double>({1, 2});
  auto r = f({NDArray::scalar_int64(0), xv});
  EXPECT_ALLCLOSE(r[0], NDArray::from_vector<double>({0, 1}));
  EXPECT_EQ(r[1].get_flat(0), 3.0);
  EXPECT_EQ(runs(0), 1);
  EXPECT_EQ(runs(1), 1);
  r = f({NDArray::scalar_int64(1), xv});
  EXPECT_ALLCLOSE(r[0], NDArray::from_vector<double>({3, 6}));
  EXPECT_EQ(runs(0), 2);
  EXPECT_EQ(runs(1), 1);
}

TEST_P(Lazy, NestedChoicesRunOneLeaf) {
  Var c1 = variable(scalar_type(DType::Int64), "c1"), c2 = variable(scalar_type(DType::Int64), "c2");
  Var x = vector("x", DType::Float64);
  Var inner = ifelse(c2, count(x, 0) + 1.0, count(x, 1) + 2.0);
  Function f = function({c1, c2, x}, {ifelse(c1, inner, count(x, 2) + 3.0)}, opts());
  NDArray xv = NDArray::from_vector<double>({10});
  auto i64 = [](int v) { return NDArray::scalar_int64(v); };
  EXPECT_EQ(f({i64(1), i64(1), xv})[0].get_flat(0), 11.0);
  EXPECT_EQ(f({i64(1), i64(0), xv})[0].get_flat(0), 12.0);
  EXPECT_EQ(f({i64(0), i64(1), xv})[0].get_flat(0), 13.0);
  EXPECT_EQ(runs(0), 1);
  EXPECT_EQ(runs(1), 1);
  EXPECT_EQ(runs(2), 1);
}

TEST_P(Lazy, ABranchReadingOverwrittenMemoryIsNotDeferred) {
  // The eager output exp(x) * 2 may be computed in place in exp(x)'s buffer (FAST_RUN); branch a
  // reads exp(x) too, so it must run before that, not on demand after it.
  Var c = variable(scalar_type(DType::Int64), "c");
  Var x = vector("x", DType::Float64);
  Var e = exp(x);
  Function f = function({c, x}, {ifelse(c, count(e, 0), count(x, 1)), e * 2.0}, opts());
  NDArray xv = NDArray::from_vector<double>({0, 1});
  auto r = f({NDArray::scalar_int64(1), xv});
  EXPECT_ALLCLOSE(r[0], NDArray::from_vector<double>({1, std::exp(1.0)}));
  EXPECT_ALLCLOSE(r[1], NDArray::from_vector<double>({2, 2 * std::exp(1.0)}));
}

TEST_P(Lazy, ADeferredStepTwoChoicesShareRunsWhenOnlyTheLaterAsks) {
  // d runs only on demand, for either ifelse. The first does not ask for it; an eager step between
  // the two (an output: it runs always) is the last other reader of d's input a. a must live until the second ifelse
  // has asked (it was freed after that eager step, and d then read a freed value: a crash the graph fuzzer found).
  Var c1 = variable(scalar_type(DType::Int64), "c1"), c2 = variable(scalar_type(DType::Int64), "c2");
  Var x = vector("x", DType::Float64);
  Var a = count(x, 0) * 2.0;
  Var d = count(a, 1);
  Var first = ifelse(c1, d, x);
  Var between = first + a;
  testing::DebugChecks plain(false);  // DebugMode keeps every intermediate: the bug needs gc
  for (const char* backend : {"", "reference"}) {
    for (auto& r : g_runs) r = 0;
    FunctionOptions o = opts();
    o.backend = backend;
    Function f = function({c1, c2, x}, {ifelse(c2, d, between), between}, o);
    NDArray xv = NDArray::from_vector<double>({1, 2});
    auto i64 = [](int v) { return NDArray::scalar_int64(v); };
    EXPECT_ALLCLOSE(f({i64(0), i64(1), xv})[0], NDArray::from_vector<double>({2, 4}));
    EXPECT_ALLCLOSE(f({i64(0), i64(0), xv})[0], NDArray::from_vector<double>({3, 6}));
    EXPECT_ALLCLOSE(f({i64(1), i64(1), xv})[0], NDArray::from_vector<double>({2, 4}));
    EXPECT_ALLCLOSE(f({i64(1), i64(0), xv})[0], NDArray::from_vector<double>({4, 8}));
    // Not when neither asks (FAST_RUN's rewrites may make d eager).
    if (std::string(GetParam()) != "FAST_RUN") {
      EXPECT_EQ(runs(1), 3) << backend;
    }
  }
}

TEST(LazyLongBranch, AChainOfTenThousandDeferredStepsRunsWithoutRecursion) {
  register_test_ops();
  for (auto& r : g_runs) r = 0;
  Var c = variable(scalar_type(DType::Int64), "c");
  Var x = vector("x", DType::Float64);
  Var a = count(x, 0);
  for (int k = 0; k < 10000; ++k) a = count(a, 1);
  FunctionOptions o;
  o.mode = "NONE";
  Function f = function({c, x}, {ifelse(c, a, x)}, o);
  NDArray xv = NDArray::from_vector<double>({1, 2});
  EXPECT_ALLCLOSE(f({NDArray::scalar_int64(0), xv})[0], xv);
  EXPECT_EQ(runs(0) + runs(1), 0);
  EXPECT_ALLCLOSE(f({NDArray::scalar_int64(1), xv})[0], xv);
  EXPECT_EQ(runs(0), 1);
  EXPECT_EQ(runs(1), 10000);
}

TEST(LazyInPlace, ADeferredReaderOfMemoryAnEagerStepOverwritesIsNotDeferred) {
  // z = e * 2 computed in e's own buffer (an in-place Elemwise), and branch a reads e: a deferred
  // a would run after the overwrite and see 2 e.
  register_test_ops();
  Var c = variable(scalar_type(DType::Int64), "c");
  Var x = vector("x", DType::Float64);
  Var e = exp(x);
  Var z = apply_op1(std::make_shared<Elemwise>(ScalarOpKind::Mul, DType::Float64, 0), {e, ones_like(e) + ones_like(e)});
  FunctionOptions o;
  o.mode = "NONE";
  // The condition reads z, so the choice runs after the overwrite.
  Var cond = c + cast(sum(z) * 0.0, DType::Int64);
  Function f = function({c, x}, {ifelse(cond, count(e, 0), count(x, 1)), z}, o);
  NDArray xv = NDArray::from_vector<double>({0, 1});
  auto r = f({NDArray::scalar_int64(1), xv});
  EXPECT_ALLCLOSE(r[0], NDArray::from_vector<double>({1, std::exp(1.0)}));
  EXPECT_ALLCLOSE(r[1], NDArray::from_vector<double>({2, 2 * std::exp(1.0)}));
}

INSTANTIATE_TEST_SUITE_P(Modes, Lazy, ::testing::Values("NONE", "FAST_COMPILE", "FAST_RUN"));

TEST_P(Lazy, IfElseSeveralOutputsOfDifferentShapesPerBranch) {
  Var c = variable(scalar_type(DType::Bool), "c");
  Var x = vector("x", DType::Float64);
  Var m = matrix("m", DType::Float64);
  auto outs = ifelse(c, {count(x, 0) * 2.0, sum(m, std::vector<int>{0})},
                     {subtensor(x, {sl(0, 1)}), subtensor(count(m, 1), {0})});
  ASSERT_EQ(outs.size(), 2u);
  Function f = function({c, x, m}, {outs[0], outs[1]}, opts());
  NDArray xv = NDArray::from_vector<double>({1, 2, 3});
  NDArray mv = NDArray::from_vector<double>({1, 2, 3, 4}, Shape{2, 2});
  NDArray t = NDArray::full({}, DType::Bool, 1), fl = NDArray::full({}, DType::Bool, 0);
  auto r = f({t, xv, mv});
  EXPECT_ALLCLOSE(r[0], NDArray::from_vector<double>({2, 4, 6}));
  EXPECT_ALLCLOSE(r[1], NDArray::from_vector<double>({4, 6}));
  r = f({fl, xv, mv});
  EXPECT_ALLCLOSE(r[0], NDArray::from_vector<double>({1}));
  EXPECT_ALLCLOSE(r[1], NDArray::from_vector<double>({1, 2}));
  EXPECT_EQ(runs(0), 1);
  EXPECT_EQ(runs(1), 1);
}

TEST_P(Lazy, IfElseGradientGoesToTheTakenBranchOnly) {
  Var c = variable(scalar_type(DType::Int64), "c");
  Var x = vector("x", DType::Float64);
  Var y = ifelse(c, x * x, x * 3.0);
  Var g = grad(sum(y), x);
  Function f = function({c, x}, {g}, opts());
  NDArray xv = NDArray::from_vector<double>({1, -2});
  EXPECT_ALLCLOSE(f({NDArray::scalar_int64(5), xv})[0], NDArray::from_vector<double>({2, -4}));
  EXPECT_ALLCLOSE(f({NDArray::scalar_int64(0), xv})[0], NDArray::from_vector<double>({3, 3}));
  // Through branches with side effects: the values, whichever branch is taken (the backward
  // pass through the branch not taken runs on zeros, as in Theano).
  Var g2 = grad(sum(ifelse(c, count(x, 0) * count(x, 0), count(x, 1) * 3.0)), x);
  Function f2 = function({c, x}, {g2}, opts());
  EXPECT_ALLCLOSE(f2({NDArray::scalar_int64(1), xv})[0], NDArray::from_vector<double>({2, -4}));
  EXPECT_ALLCLOSE(f2({NDArray::scalar_int64(0), xv})[0], NDArray::from_vector<double>({3, 3}));
}

TEST_P(Lazy, IfElseInsideUpdates) {
  Var c = variable(scalar_type(DType::Int64), "c");
  Var w = shared(NDArray::from_vector<double>({1, 2}), "w");
  FunctionOptions o = opts();
  o.updates = {{w, ifelse(c, w * 2.0, w - 1.0)}};
  Function f = function({c}, {}, o);
  f({NDArray::scalar_int64(1)});
  f({NDArray::scalar_int64(0)});
  EXPECT_ALLCLOSE(get_value(w), NDArray::from_vector<double>({1, 3}));
}

/// cond (0-d, of the sample's dtype), then, else: both branches taken, strided, zero-size.
std::vector<testing::OpSample> ifelse_samples(DType dt) {
  using testing::random_array;
  auto cond = [dt](double v) { return NDArray::full({}, dt, v); };
  return {
      {"true (2,3)", {cond(1), random_array({2, 3}, dt, -3, 3, 1), random_array({2, 3}, dt, -3, 3, 2)}},
      {"false (2,3)", {cond(0), random_array({2, 3}, dt, -3, 3, 3), random_array({2, 3}, dt, -3, 3, 4)}},
      {"strided", {cond(1), testing::random_strided({3, 2}, dt, -3, 3, 5), random_array({3, 2}, dt, -3, 3, 6)}},
      {"zero-size", {cond(0), random_array({2, 3}, dt, -3, 3, 7), NDArray::zeros({0, 3}, dt)}},
  };
}

HYP_OPINFO({
    .name = "ifelse",
    .build = [](const std::vector<Var>& v) { return ifelse(v[0], v[1] * v[1], v[2]); },
    .samples = ifelse_samples,
    .dtypes = {DType::Bool, DType::Int32, DType::Float32, DType::Float64},
    .differentiable = false,  // cond is not; the branches' gradients: IfElseGradientGoesToTheTakenBranchOnly
});

TEST(IfElse, TypesAndErrorsNameTheOutputAndBothTypes) {
  Var c = variable(scalar_type(DType::Int64), "c");
  Var a = vector("a", DType::Float32), b = vector("b", DType::Float64);
  std::string msg = testing::error_of<TypeError>([&] { ifelse(c, a, b); });
  EXPECT_NE(msg.find("output 0"), std::string::npos) << msg;
  EXPECT_NE(msg.find("float32"), std::string::npos) << msg;
  EXPECT_NE(msg.find("float64"), std::string::npos) << msg;
  msg = testing::error_of<TypeError>([&] { ifelse(vector("v", DType::Int64), a, a); });
  EXPECT_NE(msg.find("scalar"), std::string::npos) << msg;
  EXPECT_THROW(ifelse(c, std::vector<Var>{a}, std::vector<Var>{}), ValueError);
  // Broadcastable only where both branches are.
  Var row = tensor(DType::Float32, {true, false}, "row"), mat = matrix("m", DType::Float32);
  EXPECT_EQ(ifelse(c, row, mat)->type.broadcastable, (std::vector<bool>{false, false}));
  EXPECT_EQ(ifelse(c, row, row)->type.broadcastable, (std::vector<bool>{true, false}));
}

TEST(IfElse, AConstantConditionOrIdenticalBranchesLeaveNoIfElse) {
  Var c = variable(scalar_type(DType::Int64), "c");
  Var x = vector("x", DType::Float64);
  FunctionOptions o;
  o.on_unused_input = "ignore";
  const std::vector<std::pair<Var, double>> cases = {{ifelse(constant(1.0, DType::Int64), x * 2.0, x + 1.0), 6.0},
                                                     {ifelse(c, x, x), 3.0}};
  for (const auto& [y, want] : cases) {
    Function f = function({c, x}, {y}, o);
    for (const auto& n : f.toposort()) EXPECT_EQ(n->op->name().find("IfElse"), std::string::npos);
    EXPECT_EQ(f({NDArray::scalar_int64(0), NDArray::from_vector<double>({3})})[0].get_flat(0), want);
  }
}

TEST(IfElse, RewritesMergeNestLiftAndKeepLaziness) {
  register_test_ops();
  for (auto& r : g_runs) r = 0;
  Var c = variable(scalar_type(DType::Int64), "c");
  Var x = vector("x", DType::Float64);
  auto count_ifelses = [](const Function& f) {
    int k = 0;
    for (const auto& n : f.toposort()) k += n->op->name().rfind("IfElse", 0) == 0;
    return k;
  };
  auto run = [&](Function& f, int64_t cv) { return f({NDArray::scalar_int64(cv), NDArray::from_vector<double>({2})}); };
  // Nested on the same condition: the inner choice is the outer's.
  Var nested = ifelse(c, ifelse(c, x * 3.0, x * 5.0), x * 7.0);
  Function fn = function({c, x}, {nested});
  EXPECT_EQ(count_ifelses(fn), 1);
  EXPECT_EQ(run(fn, 1)[0].get_flat(0), 6.0);
  EXPECT_EQ(run(fn, 0)[0].get_flat(0), 14.0);
  // The same elementwise op on both branches: chosen inputs, the op once.
  Var lifted = ifelse(c, exp(x * 2.0), exp(x + 1.0));
  Function fl = function({c, x}, {lifted});
  int exps_after = 0;
  for (const auto& n : fl.toposort())
    if (n->op->name().find("exp") != std::string::npos)
      for (const auto& in : n->inputs) exps_after += in->owner && in->owner->op->name().rfind("IfElse", 0) == 0;
  EXPECT_EQ(exps_after, 1);
  EXPECT_DOUBLE_EQ(run(fl, 1)[0].get_flat(0), std::exp(4.0));
  EXPECT_DOUBLE_EQ(run(fl, 0)[0].get_flat(0), std::exp(3.0));
  // Two ifelses on one condition become one, and still only the taken branches run.
  Var y1 = ifelse(c, count(x, 0) * 2.0, count(x, 1) * 3.0);
  Var y2 = ifelse(c, count(x, 2) + 1.0, count(x, 3) - 1.0);
  FunctionOptions o;
  o.mode = "FAST_RUN";
  o.backend = std::string(kReferenceBackend);
  Function fm = function({c, x}, {y1, y2}, o);
  EXPECT_EQ(count_ifelses(fm), 1);
  auto r = run(fm, 1);
  EXPECT_EQ(r[0].get_flat(0), 4.0);
  EXPECT_EQ(r[1].get_flat(0), 3.0);
  EXPECT_EQ(runs(0), 1);
  EXPECT_EQ(runs(2), 1);
  EXPECT_EQ(runs(1), 0);
  EXPECT_EQ(runs(3), 0);
}

}  // namespace
}  // namespace hypatia
