// Lazy thunks in the runtime: an op with lazy inputs (Op::lazy_inputs) asks for them from its
// kernel (Kernel::run_lazy); the nodes only they need run on demand or not at all.
#include <atomic>

#include "hypatia/backends/backend.h"
#include "test_util.h"

namespace hypatia {
namespace {

/// choose(c, a, b): a when c != 0, else b; a and b are lazy (ifelse's shape, for the tests).
class Choose : public OpWithProps<Choose> {
 public:
  auto props() const { return std::make_tuple(); }
  std::string name() const override { return "Choose"; }
  std::vector<TensorType> make_output_types(const std::vector<Var>& in) const override {
    if (in.size() != 3 || !(in[1]->type == in[2]->type)) fail<TypeError>("Choose: (cond, a, b) with a, b of one type");
    return {in[1]->type};
  }
  std::vector<bool> lazy_inputs() const override { return {false, true, true}; }
  AliasMap view_map() const override { return {{1, 2}}; }
};

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
};

class ChooseKernel final : public Kernel {
 public:
  void run(const KernelArgs&) override { throw InternalError("Choose runs lazily"); }
  std::vector<int> run_lazy(const KernelArgs& a, std::span<const bool> ready) override {
    EXPECT_TRUE(ready[0]);
    const int pick = a.in[0]->get_flat(0) != 0 ? 1 : 2;
    if (!ready[pick]) return {pick};
    EXPECT_TRUE(a.in[pick]->valid());
    *a.out[0] = *a.in[pick];
    return {};
  }
};

void count_kernel(const Count& op, const KernelArgs& a) {
  ++g_runs[op.slot];
  *a.out[0] = a.in[0]->copy();
}

void register_test_ops() {
  static bool once = [] {
    register_kernel(kReferenceBackend, typeid(Choose), [](const Apply&) { return std::make_unique<ChooseKernel>(); });
    register_simple_kernel<Count>(kReferenceBackend, count_kernel);
    return true;
  }();
  (void)once;
}

Var choose(Var c, Var a, Var b) { return apply_op1(std::make_shared<Choose>(), {c, a, b}); }
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
  Function f = function({c, x}, {choose(c, a, b)}, opts());
  NDArray xv = NDArray::from_vector<double>({1, 2});
  for (int k = 0; k < 3; ++k) {
    EXPECT_ALLCLOSE(f({NDArray::scalar_int64(1), xv})[0],
                    NDArray::from_vector<double>({2 * std::exp(1.0), 2 * std::exp(2.0)}));
    EXPECT_ALLCLOSE(f({NDArray::scalar_int64(0), xv})[0], NDArray::from_vector<double>({1, std::log(2.0) + 1}));
  }
  EXPECT_EQ(runs(0), 3);
  EXPECT_EQ(runs(1), 3);
}

TEST_P(Lazy, NodesTheEagerPartNeedsRunAlways) {
  Var c = variable(scalar_type(DType::Int64), "c");
  Var x = vector("x", DType::Float64);
  Var shared_part = count(x, 0);  // read by branch a and by the second output
  Var a = shared_part * 3.0;
  Var b = count(x, 1) - 1.0;
  Function f = function({c, x}, {choose(c, a, b), sum(shared_part)}, opts());
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
  Var inner = choose(c2, count(x, 0) + 1.0, count(x, 1) + 2.0);
  Function f = function({c1, c2, x}, {choose(c1, inner, count(x, 2) + 3.0)}, opts());
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
  Function f = function({c, x}, {choose(c, count(e, 0), count(x, 1)), e * 2.0}, opts());
  NDArray xv = NDArray::from_vector<double>({0, 1});
  auto r = f({NDArray::scalar_int64(1), xv});
  EXPECT_ALLCLOSE(r[0], NDArray::from_vector<double>({1, std::exp(1.0)}));
  EXPECT_ALLCLOSE(r[1], NDArray::from_vector<double>({2, 2 * std::exp(1.0)}));
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
  Function f = function({c, x}, {choose(c, a, x)}, o);
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
  Function f = function({c, x}, {choose(cond, count(e, 0), count(x, 1)), z}, o);
  NDArray xv = NDArray::from_vector<double>({0, 1});
  auto r = f({NDArray::scalar_int64(1), xv});
  EXPECT_ALLCLOSE(r[0], NDArray::from_vector<double>({1, std::exp(1.0)}));
  EXPECT_ALLCLOSE(r[1], NDArray::from_vector<double>({2, 2 * std::exp(1.0)}));
}

INSTANTIATE_TEST_SUITE_P(Modes, Lazy, ::testing::Values("NONE", "FAST_COMPILE", "FAST_RUN"));

}  // namespace
}  // namespace hypatia
