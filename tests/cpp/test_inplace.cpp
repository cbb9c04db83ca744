// The destroy handler and the in-place pass: what may be overwritten, the order that makes it
// safe, and "a failed call changes no shared variable" with shared variables updated in place.
#include <gtest/gtest.h>

#include "hypatia/hypatia.h"
#include "hypatia/rewrite/destroy.h"
#include "test_util.h"

namespace hypatia {
namespace {

using testing::random_array;

int count_ops(const Function& f, const std::string& needle) {
  int c = 0;
  for (const auto& n : f.toposort()) c += n->op->name().find(needle) != std::string::npos;
  return c;
}

FunctionOptions updating(Updates u, const std::string& mode = "FAST_RUN") {
  FunctionOptions o;
  o.updates = std::move(u);
  o.mode = mode;
  return o;
}

NDArray mat(int64_t r, int64_t c, uint64_t seed) { return random_array({r, c}, DType::Float32, -1, 1, seed); }

TEST(Inplace, GemmOverwritesTheUpdatedSharedVariable) {
  Var w = shared(mat(6, 5, 1), "w"), a = shared(mat(6, 4, 2), "a"), b = shared(mat(4, 5, 3), "b");
  Var w_ref = shared(get_value(w), "w_ref");
  Function f = function({}, {}, updating({{w, w + dot(a, b)}}));
  Function ref = function({}, {}, updating({{w_ref, w_ref + dot(a, b)}}, "NONE"));
  EXPECT_EQ(count_ops(f, "Gemm{inplace}"), 1) << f.debugprint();
  EXPECT_EQ(f.toposort().size(), 1u) << f.debugprint();
  const void* buffer = get_value(w, true).raw();
  for (int i = 0; i < 3; ++i) {
    f({});
    ref({});
    EXPECT_ALLCLOSE(get_value(w), get_value(w_ref), 1e-5, 1e-5);
  }
  EXPECT_EQ(get_value(w, true).raw(), buffer) << "the update should be written into w's own buffer";
}

TEST(Inplace, OtherReadersOfTheSharedVariableRunFirst) {
  // w is read by the forward product and by the update; the in-place Gemm must run after both.
  Var w = shared(mat(5, 5, 4), "w"), x = variable(matrix_type(DType::Float32), "x");
  Var w_ref = shared(get_value(w), "w_ref");
  Var y = dot(x, w), y_ref = dot(x, w_ref);
  Function f = function({x}, {y}, updating({{w, w - 0.1 * dot(transpose(x), y)}}));
  Function ref = function({x}, {y_ref}, updating({{w_ref, w_ref - 0.1 * dot(transpose(x), y_ref)}}, "NONE"));
  EXPECT_EQ(count_ops(f, "Gemm{inplace}"), 1) << f.debugprint();
  NDArray xv = mat(3, 5, 5);
  for (int i = 0; i < 3; ++i) {
    auto r = f({xv});
    auto r_ref = ref({xv});
    EXPECT_ALLCLOSE(r[0], r_ref[0], 1e-5, 1e-5);
    EXPECT_ALLCLOSE(get_value(w), get_value(w_ref), 1e-5, 1e-5);
  }
  EXPECT_EQ(f.toposort().back()->op->name(), "Gemm{inplace}") << f.debugprint();
}

TEST(Inplace, AFailedCallChangesNoSharedVariable) {
  // Two shared variables updated in place; the second update's shapes are wrong at run time. The
  // first must not have been written when the call fails.
  Var w1 = shared(mat(4, 4, 6), "w1"), w2 = shared(mat(4, 4, 7), "w2");
  Var x = variable(matrix_type(DType::Float32), "x"), z = variable(matrix_type(DType::Float32), "z");
  Function f = function({x, z}, {}, updating({{w1, w1 + dot(x, x)}, {w2, w2 + dot(z, x)}}));
  EXPECT_EQ(count_ops(f, "Gemm{inplace}"), 2) << f.debugprint();
  NDArray w1_before = get_value(w1), w2_before = get_value(w2);
  EXPECT_THROW(f({mat(4, 4, 8), mat(3, 4, 9)}), ValueError);
  EXPECT_ALLCLOSE(get_value(w1), w1_before, 0, 0);
  EXPECT_ALLCLOSE(get_value(w2), w2_before, 0, 0);
  f({mat(4, 4, 8), mat(4, 4, 9)});  // and a good call still works
  EXPECT_NE(testing::compare_arrays(get_value(w1), w1_before), "");
}

TEST(Inplace, AFailingOrdinaryUpdateStopsTheInPlaceOnes) {
  Var w1 = shared(mat(4, 4, 10), "w1"), v = shared(NDArray::zeros({1, 4}, DType::Float32), "v");
  Var x = variable(matrix_type(DType::Float32), "x");
  // v's update has v's type (row) only if x has one row: checked at run time, before w1's in-place Gemm.
  Var new_v = patternbroadcast(x, {true, false});
  Function f = function({x}, {}, updating({{w1, w1 + dot(transpose(x), x)}, {v, new_v}}));
  NDArray w1_before = get_value(w1);
  EXPECT_ANY_THROW(f({mat(3, 4, 11)}));
  EXPECT_ALLCLOSE(get_value(w1), w1_before, 0, 0);
}

TEST(Inplace, AnUpdateThatOtherInPlaceStepsMustFollowWritesIntoACopy) {
  // LeNet's shape, both weights updated: w1's update (Gemm in place) reads the tanh output, which
  // the convolution's gradient then overwrites in place, so steps that are not updates follow an
  // in-place update (the call used to fail). That update now writes into a per-call copy: a
  // failure after it (s of the wrong shape) still leaves both variables as they were.
  Var x = variable(tensor4_type(DType::Float64), "x"), s = variable(tensor4_type(DType::Float64), "s");
  Var w0 = shared(NDArray::full({2, 1, 3, 3}, DType::Float64, 0.1), "w0");
  Var w1 = shared(NDArray::full({32, 3}, DType::Float64, 0.1), "w1");
  Var cost = sum(exp(dot(flatten(tanh(conv2d(x, w0)), 2), w1)));
  const std::vector<Var> g = grad(cost, {w0, w1});
  Function f = function({x, s}, {cost}, updating({{w0, w0 - 0.1 * g[0] * s}, {w1, w1 - 0.1 * g[1]}}));
  Function ref = function({x, s}, {w0 - 0.1 * g[0] * s, w1 - 0.1 * g[1]}, FunctionOptions{.mode = "NONE"});
  const auto nodes = f.toposort();
  size_t gemm = nodes.size();
  for (size_t i = 0; i < nodes.size(); ++i)
    if (nodes[i]->op->name() == "Gemm{inplace}") gemm = i;
  ASSERT_LT(gemm, nodes.size()) << f.debugprint();
  bool after = false;  // (the order this test is about)
  for (size_t i = gemm + 1; i < nodes.size(); ++i)
    after |= nodes[i]->op->name().find("GradWeights") != std::string::npos;
  ASSERT_TRUE(after) << f.debugprint();
  NDArray xv = random_array({2, 1, 6, 6}, DType::Float64, -1, 1, 30);
  EXPECT_THROW(f({xv, NDArray::full({2, 1, 3, 2}, DType::Float64, 1)}), ValueError);
  EXPECT_ALLCLOSE(get_value(w0), NDArray::full({2, 1, 3, 3}, DType::Float64, 0.1), 0, 0);
  EXPECT_ALLCLOSE(get_value(w1), NDArray::full({32, 3}, DType::Float64, 0.1), 0, 0);
  const NDArray sv = random_array({2, 1, 3, 3}, DType::Float64, 0.5, 1.5, 31);
  for (int i = 0; i < 2; ++i) {
    const auto want = ref({xv, sv});
    f({xv, sv});
    EXPECT_ALLCLOSE(get_value(w0), want[0], 1e-12, 1e-12);
    EXPECT_ALLCLOSE(get_value(w1), want[1], 1e-12, 1e-12);
  }
}

TEST(Inplace, ABorrowedValueIsNotOverwritten) {
  Var w = shared(mat(4, 4, 12), "w"), a = shared(mat(4, 4, 13), "a");
  Function f = function({}, {}, updating({{w, w + dot(a, a)}}));
  NDArray held = get_value(w, /*borrow=*/true);
  NDArray copy = held.copy();
  f({});
  EXPECT_ALLCLOSE(held, copy, 0, 0);  // the caller's handle still shows the old value
  EXPECT_NE(testing::compare_arrays(get_value(w), copy), "");
  EXPECT_FALSE(get_value(w, true).shares_buffer(held));
}

TEST(Inplace, SharedVariableNotUpdatedIsNeverOverwritten) {
  Var w = shared(mat(4, 4, 14), "w"), a = shared(mat(4, 4, 15), "a");
  Var out = shared(NDArray::zeros({4, 4}, DType::Float32), "out");
  Function f = function({}, {}, updating({{out, w + dot(a, a)}}));
  EXPECT_EQ(count_ops(f, "{inplace}"), 0) << f.debugprint();
  NDArray before = get_value(w);
  f({});
  EXPECT_ALLCLOSE(get_value(w), before, 0, 0);
}

TEST(Inplace, UpdatedVariableReturnedAsOutputKeepsItsOldValue) {
  Var w = shared(mat(3, 3, 16), "w"), a = shared(mat(3, 3, 17), "a");
  NDArray before = get_value(w);
  Function f = function({}, {w}, updating({{w, w + dot(a, a)}}));
  EXPECT_EQ(count_ops(f, "Gemm{inplace}"), 0) << f.debugprint();
  auto r = f({});
  EXPECT_ALLCLOSE(r[0], before, 0, 0);
}

TEST(Inplace, MutableInputMayBeOverwritten) {
  Var x = variable(vector_type(DType::Float64), "x");
  In in(x);
  in.mutable_ = true;
  FunctionOptions o;
  o.mode = "FAST_RUN";
  Function f = function({in}, {exp(x) * 2.0}, o);
  EXPECT_EQ(count_ops(f, "inplace") + count_ops(f, "[(0"), 1) << f.debugprint();
  NDArray xv = random_array({7}, DType::Float64, -1, 1, 18);
  NDArray expected = function({x}, {exp(x) * 2.0}, FunctionOptions{.mode = "NONE"})({xv})[0];
  auto r = f({xv.copy()});
  EXPECT_ALLCLOSE(r[0], expected);
  // Without mutable the argument is left alone.
  Function g = function({x}, {exp(x) * 2.0}, o);
  EXPECT_EQ(count_ops(g, "inplace") + count_ops(g, "[(0"), 0) << g.debugprint();
  NDArray arg = xv.copy();
  g({arg});
  EXPECT_ALLCLOSE(arg, xv, 0, 0);
}

TEST(Inplace, IntermediateWithAnEarlierReaderIsOverwrittenAfterIt) {
  Var x = variable(matrix_type(DType::Float64), "x"), w = variable(matrix_type(DType::Float64), "w");
  Var h = dot(x, w);
  Var y = dot(h, w) + exp(h);  // exp(h) may overwrite h once dot(h, w) has read it
  Function f = function({x, w}, {y}, FunctionOptions{.mode = "FAST_RUN"});
  Function ref = function({x, w}, {y}, FunctionOptions{.mode = "NONE"});
  NDArray xv = random_array({4, 4}, DType::Float64, -1, 1, 19), wv = random_array({4, 4}, DType::Float64, -1, 1, 20);
  EXPECT_ALLCLOSE(f({xv, wv})[0], ref({xv, wv})[0]);
  FunctionOptions dbg;
  dbg.mode = "DebugMode";
  EXPECT_ALLCLOSE(function({x, w}, {y}, dbg)({xv, wv})[0], ref({xv, wv})[0]);
}

TEST(Inplace, SetSubtensorOfAnIntermediateIsInPlace) {
  Var x = variable(vector_type(DType::Float64), "x"), v = variable(vector_type(DType::Float64), "v");
  Var y = set_subtensor(subtensor(x * 2.0, {sl(1, 3)}), v);
  Function f = function({x, v}, {y}, FunctionOptions{.mode = "FAST_RUN"});
  bool found = false;
  for (const auto& n : f.toposort()) found |= typeid(*n->op) == typeid(IncSubtensor) && !n->op->destroy_map().empty();
  EXPECT_TRUE(found) << f.debugprint();
  NDArray xv = random_array({5}, DType::Float64, -1, 1, 21), vv = random_array({2}, DType::Float64, -1, 1, 22);
  EXPECT_ALLCLOSE(f({xv, vv})[0], function({x, v}, {y}, FunctionOptions{.mode = "NONE"})({xv, vv})[0]);
}

TEST(Inplace, ConflictingUserInPlaceOpsAreRejected) {
  Var a = variable(vector_type(DType::Float64), "a"), b = variable(vector_type(DType::Float64), "b");
  Var a2 = exp(a), b2 = exp(b);
  // n1 overwrites a2 and reads b2; n2 overwrites b2 and reads a2: no order works.
  Var n1 = apply_op1(std::make_shared<Elemwise>(ScalarOpKind::Add, DType::Float64, 0), {a2, b2});
  Var n2 = apply_op1(std::make_shared<Elemwise>(ScalarOpKind::Mul, DType::Float64, 0), {b2, a2});
  FunctionOptions o;
  o.mode = "NONE";
  EXPECT_THROW(function({a, b}, {n1, n2}, o), ValueError);
}

TEST(Inplace, ThePassTakesOnlyOneOfTwoCandidatesThatWouldNeedEachOtherFirst) {
  // n1 = a2 + b2 and n2 = a2 * b2 may each overwrite a2 or b2, but once n1 overwrites a2 (n2 must
  // read a2 first), n2 overwriting either value would need n1 to run first: a cycle through the
  // existing constraint, which destroy_keeps_order finds by its search (and destroy_order agrees).
  Var a = variable(vector_type(DType::Float64), "a"), b = variable(vector_type(DType::Float64), "b");
  Var a2 = exp(a), b2 = exp(b);
  Var n1 = a2 + b2, n2 = a2 * b2;
  const std::string saved = config().optimizer_excluding;
  config().optimizer_excluding = "fusion";  // else one fused node computes everything
  Function f = function({a, b}, {n1, n2}, FunctionOptions{.mode = "FAST_RUN"});
  config().optimizer_excluding = saved;
  int inplace = 0;
  for (const auto& n : f.toposort()) inplace += !n->op->destroy_map().empty();
  EXPECT_EQ(inplace, 1) << f.debugprint();
  NDArray av = random_array({7}, DType::Float64, -1, 1, 41), bv = random_array({7}, DType::Float64, -1, 1, 42);
  Function ref = function({a, b}, {n1, n2}, FunctionOptions{.mode = "NONE"});
  const auto got = f({av, bv}), want = ref({av, bv});
  EXPECT_ALLCLOSE(got[0], want[0]);
  EXPECT_ALLCLOSE(got[1], want[1]);
}

TEST(Inplace, DestroyKeepsOrderAgreesWithDestroyOrder) {
  // A graph with one in-place node already (n1 overwrites a2): every other (node, input) pair is
  // asked both ways.
  Var a = variable(vector_type(DType::Float64), "a"), b = variable(vector_type(DType::Float64), "b");
  Var a2 = exp(a), b2 = exp(b);
  Var n1 = apply_op1(std::make_shared<Elemwise>(ScalarOpKind::Add, DType::Float64, 0), {a2, b2});
  Var n2 = a2 * b2, n3 = tanh(b2) + n2;
  FunctionGraph fg({a, b}, {n1, n3});
  int asked = 0, refused = 0;
  for (const auto& n : fg.toposort()) {
    if (!n->op->destroy_map().empty()) continue;
    for (int i = 0; i < static_cast<int>(n->inputs.size()); ++i) {
      const bool fast = destroy_keeps_order(fg, *n, i);
      EXPECT_EQ(fast, destroy_order(fg, {n.get(), i}).has_value()) << n->op->name() << " input " << i;
      ++asked;
      refused += !fast;
    }
  }
  EXPECT_GE(asked, 5);
  EXPECT_GE(refused, 2);  // n2 overwriting a2 or b2 needs n1 first, which needs n2 first
}

TEST(Inplace, UserInPlaceOpOnASharedVariableItDoesNotUpdateIsRejected) {
  Var w = shared(mat(3, 3, 23), "w"), a = shared(mat(3, 3, 24), "a");
  Var one = constant(1.0, DType::Float32);
  Var g = apply_op1(std::make_shared<Gemm>(true), {w, one, a, a, one});
  FunctionOptions o;
  o.mode = "NONE";
  try {
    function({}, {g}, o);
    FAIL() << "expected a ValueError";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("Gemm{inplace} overwrites its input 0"), std::string::npos) << e.what();
  }
}

TEST(Inplace, DebugModeAgreesOnAnInPlaceTrainingStep) {
  Var w = shared(mat(5, 3, 25), "w"), b = shared(random_array({3}, DType::Float32, -1, 1, 26), "b");
  Var x = variable(matrix_type(DType::Float32), "x");
  Var cost = sum(sqr(tanh(dot(x, w) + b)));
  auto g = grad(cost, {w, b});
  Var w0 = shared(get_value(w), "w0"), b0 = shared(get_value(b), "b0");
  FunctionOptions dbg = updating({{w, w - 0.1 * g[0]}, {b, b - 0.1 * g[1]}}, "DebugMode");
  Function f = function({x}, {cost}, dbg);
  Var cost0 = sum(sqr(tanh(dot(x, w0) + b0)));
  auto g0 = grad(cost0, {w0, b0});
  Function ref = function({x}, {cost0}, updating({{w0, w0 - 0.1 * g0[0]}, {b0, b0 - 0.1 * g0[1]}}, "NONE"));
  NDArray xv = mat(4, 5, 27);
  for (int i = 0; i < 3; ++i) {
    EXPECT_ALLCLOSE(f({xv})[0], ref({xv})[0], 1e-4, 1e-5);
    EXPECT_ALLCLOSE(get_value(w), get_value(w0), 1e-4, 1e-5);
    EXPECT_ALLCLOSE(get_value(b), get_value(b0), 1e-4, 1e-5);
  }
}

TEST(Inplace, OuterProductUpdateBecomesOneDestructiveGer) {
  Var w = shared(mat(4, 3, 28), "w"), w0 = shared(get_value(w), "w0");
  Var x = variable(vector_type(DType::Float32), "x"), y = variable(vector_type(DType::Float32), "y");
  Function f = function({x, y}, {}, updating({{w, w + 0.5 * outer(x, y)}}));
  Function ref = function({x, y}, {}, updating({{w0, w0 + 0.5 * outer(x, y)}}, "NONE"));
  ASSERT_EQ(f.toposort().size(), 1u) << f.debugprint();
  EXPECT_EQ(f.toposort()[0]->op->name(), "Ger{destructive}") << f.debugprint();
  NDArray xv = random_array({4}, DType::Float32, -1, 1, 29), yv = random_array({3}, DType::Float32, -1, 1, 30);
  f({xv, yv});
  ref({xv, yv});
  EXPECT_ALLCLOSE(get_value(w), get_value(w0), 1e-5, 1e-6);
}

}  // namespace
}  // namespace hypatia
