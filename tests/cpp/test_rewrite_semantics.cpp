// Rewrites keep what they replace: its exact type (checked by the framework for every rewrite),
// its broadcasting (the dot + z -> Gemm / Gemv rule), and where the user wrote it (the traces of
// the nodes a rewrite replaces pass to the nodes it brings in).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "hypatia/hypatia.h"
#include "test_util.h"

namespace hypatia {
namespace {

using testing::random_array;

/// f compiled in FAST_RUN and in NONE (reference kernels) agree on args; returns the FAST_RUN one.
Function check_modes(const std::vector<Var>& ins, const std::vector<Var>& outs, const std::vector<NDArray>& args) {
  std::vector<In> in(ins.begin(), ins.end());
  std::vector<Out> out(outs.begin(), outs.end());
  FunctionOptions fast, compile, none;
  fast.mode = "FAST_RUN";
  compile.mode = "FAST_COMPILE";
  none.mode = "NONE";
  none.backend = kReferenceBackend;
  Function f = function(in, out, fast);
  auto want = function(in, out, none)(args);
  auto got = f(args);
  auto mid = function(in, out, compile)(args);
  for (size_t i = 0; i < want.size(); ++i) {
    const double tol = want[i].dtype() == DType::Float32 ? 1e-5 : 1e-12;
    EXPECT_ALLCLOSE(got[i], want[i], tol, tol);
    EXPECT_ALLCLOSE(mid[i], want[i], tol, tol);
  }
  return f;
}

int count_ops(const Function& f, const std::string& needle) {
  int c = 0;
  for (const auto& n : f.toposort()) c += n->op->name().find(needle) != std::string::npos;
  return c;
}

// Before: each of these raised "Gemv/Gemm: shapes do not fit" in FAST_RUN (the rule took a dot
// that the add broadcast, or a dot of a broadcastable shape, for the full-size product).
TEST(RewriteSemantics, DotThatBroadcastsIsNotAGemm) {
  const DType dt = DType::Float64;
  // z + dot(row, x): a (1,) product broadcast against z (3,).
  Var z = variable(vector_type(dt), "z"), r = variable(row_type(dt), "r"), x = variable(vector_type(dt), "x");
  Function f =
      check_modes({z, r, x}, {z + dot(r, x)},
                  {random_array({3}, dt), random_array({1, 2}, dt, -1, 1, 1), random_array({2}, dt, -1, 1, 2)});
  EXPECT_EQ(count_ops(f, "Gemv"), 0);
  // m + dot(A, col): a (3, 1) product broadcast against m (3, 4).
  Var m = variable(matrix_type(dt), "m"), A = variable(matrix_type(dt), "A"), c = variable(col_type(dt), "c");
  f = check_modes({m, A, c}, {m + dot(A, c)},
                  {random_array({3, 4}, dt), random_array({3, 2}, dt, -1, 1, 3), random_array({2, 1}, dt, -1, 1, 4)});
  EXPECT_EQ(count_ops(f, "Gemm"), 0);
  // dot(v[None, :], M) - dot(p, q) with p, q of type (1, 1): the (1, 1) product is broadcast.
  const TensorType one_one(dt, {true, true});
  Var v = variable(vector_type(dt), "v"), M = variable(matrix_type(dt), "M");
  Var p = variable(one_one, "p"), q = variable(one_one, "q");
  f = check_modes({v, M, p, q}, {dot(dimshuffle(v, {-1, 0}), M) - dot(p, q)},
                  {random_array({2}, dt), random_array({2, 3}, dt, -1, 1, 5), random_array({1, 1}, dt, -1, 1, 6),
                   random_array({1, 1}, dt, -1, 1, 7)});
  // Scaled: z - 2 * dot(A, c) with the same broadcast.
  check_modes({m, A, c}, {m - dot(A, c) * 2.0},
              {random_array({3, 4}, dt), random_array({3, 2}, dt, -1, 1, 3), random_array({2, 1}, dt, -1, 1, 4)});
  // A constant scale that is itself a matrix broadcasts the (1, n) product.
  Var wide = constant(testing::make_array(std::vector<double>(6, 2.0), {2, 3}, dt));
  Var zz = variable(matrix_type(dt), "zz");
  check_modes({zz, v, M}, {zz + wide * dot(dimshuffle(v, {-1, 0}), M)},
              {random_array({2, 3}, dt), random_array({2}, dt, -1, 1, 8), random_array({2, 3}, dt, -1, 1, 9)});
}

TEST(RewriteSemantics, DotOfMatchingBroadcastableTypesStillBecomesGemm) {
  const DType dt = DType::Float32;
  // z and dot(r, M) are both rows: the product has z's shape, so the rule fires.
  Var z = variable(row_type(dt), "z"), r = variable(row_type(dt), "r"), M = variable(matrix_type(dt), "M");
  Function f =
      check_modes({z, r, M}, {z + dot(r, M)},
                  {random_array({1, 3}, dt), random_array({1, 2}, dt, -1, 1, 1), random_array({2, 3}, dt, -1, 1, 2)});
  EXPECT_EQ(count_ops(f, "Gemm"), 1);
  Var a = variable(matrix_type(dt), "a"), b = variable(matrix_type(dt), "b"), c = variable(matrix_type(dt), "c");
  f = check_modes({a, b, c}, {c - dot(a, b) * 0.5},
                  {random_array({3, 4}, dt), random_array({4, 5}, dt, -1, 1, 1), random_array({3, 5}, dt, -1, 1, 2)});
  EXPECT_EQ(count_ops(f, "Gemm"), 1);
}

// A rewrite that changes a type is a bug the framework names, for any rewrite.
TEST(RewriteSemantics, FrameworkRejectsAReplacementOfAnotherType) {
  Var x = variable(matrix_type(DType::Float64), "x");
  FunctionGraph fg({x}, {exp(x)});
  Var old = fg.outputs()[0];
  auto expect_internal = [&](const Var& nv, const std::string& what) {
    try {
      replace_by_rewrite(fg, {{old, nv}}, "my_bad_rewrite");
      ADD_FAILURE() << "no error for " << what;
    } catch (const InternalError& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find("my_bad_rewrite"), std::string::npos) << msg;
      EXPECT_NE(msg.find(what), std::string::npos) << msg;
    }
  };
  expect_internal(cast(exp(fg.inputs()[0]), DType::Float32), "dtype");
  expect_internal(exp(variable(vector_type(DType::Float64))), "ndim");
  expect_internal(exp(variable(row_type(DType::Float64))), "broadcastable pattern");
  EXPECT_EQ(fg.outputs()[0].get(), old.get());  // nothing changed

  // Through the driver: a local rewrite returning a broadcastable result is named too.
  LocalRewrite bad{
      "local_returns_a_row", {typeid(Elemwise)}, [](FunctionGraph&, Apply& n) {
        return std::optional<std::vector<Var>>(std::vector<Var>{exp(variable(row_type(n.output_ptr(0)->dtype())))});
      }};
  try {
    apply_local_rewrites(fg, {&bad});
    ADD_FAILURE() << "no error";
  } catch (const InternalError& e) {
    EXPECT_NE(std::string(e.what()).find("local_returns_a_row"), std::string::npos) << e.what();
  }
}

/// Installs a trace hook that returns `*where` while the test runs.
struct TraceScope {
  std::string where;
  TraceScope() {
    set_trace_hook([this] { return where; });
  }
  ~TraceScope() { set_trace_hook(nullptr); }
};

const Apply* only_node_named(const Function& f, const std::string& needle) {
  const Apply* r = nullptr;
  for (const auto& n : f.toposort())
    if (n->op->name().find(needle) != std::string::npos) {
      EXPECT_EQ(r, nullptr) << "two nodes named " << needle;
      r = n.get();
    }
  EXPECT_NE(r, nullptr) << "no node named " << needle;
  return r;
}

// Before: nodes that rewrites built carried the line of the function() call.
TEST(RewriteSemantics, RewrittenNodesCarryTheLinesOfTheNodesTheyReplace) {
  TraceScope t;
  const DType dt = DType::Float64;
  t.where = "user.py:1";
  Var x = variable(vector_type(dt), "x"), y = variable(vector_type(dt), "y");
  t.where = "user.py:10";
  Var a = exp(x);
  t.where = "user.py:11";
  Var b = a * y;
  t.where = "user.py:12";
  Var c = tanh(b);
  t.where = "user.py:9";  // the function() call
  FunctionOptions o;
  o.mode = "FAST_RUN";
  Function f = function({x, y}, {c}, o);
  const Apply* fused = only_node_named(f, "Composite");
  EXPECT_EQ(fused->trace, "user.py:10, user.py:11, user.py:12");
  // The message of a run-time error in the fused node names them (DebugMode's checks, which
  // would run the unfused graph first, are off for this call).
  const bool saved = config().debug_checks;
  config().debug_checks = false;
  Function plain = function({x, y}, {c}, o);
  config().debug_checks = saved;
  try {
    plain({random_array({3}, dt), random_array({4}, dt)});
    ADD_FAILURE() << "no error";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("Node created at: user.py:10, user.py:11, user.py:12"), std::string::npos)
        << e.what();
  }
  // A chain of rewrites: log(softmax) -> log_softmax in stabilize, then nothing more.
  t.where = "user.py:20";
  Var m = variable(matrix_type(dt), "m");
  Var s = softmax(m);
  t.where = "user.py:21";
  Var ls = log(s);
  t.where = "user.py:9";
  Function g = function({m}, {ls}, o);
  EXPECT_EQ(only_node_named(g, "LogSoftmax")->trace, "user.py:20, user.py:21");
  // Gemm, then Gemm{inplace}: both rewrites pass the lines on.
  t.where = "user.py:30";
  Var A = variable(matrix_type(dt), "A"), B = variable(matrix_type(dt), "B"), C = variable(matrix_type(dt), "C");
  Var d = dot(A, B);
  t.where = "user.py:31";
  Var e = C - d;
  t.where = "user.py:9";
  Function h = function({A, B, C}, {e * 2.0}, o);
  EXPECT_EQ(only_node_named(h, "Gemm")->trace, "user.py:30, user.py:31");
  // A graph edited by hand (FunctionGraph::replace) keeps the new nodes' own lines; the rewrite
  // framework's replace_by_rewrite passes the replaced ones on.
  {
    t.where = "user.py:40";
    FunctionGraph fg({x}, {exp(x)});
    Var old = fg.outputs()[0];
    t.where = "user.py:41";
    Var by_hand = tanh(fg.inputs()[0]);
    fg.replace(old, by_hand, "by hand");
    EXPECT_EQ(by_hand->owner->trace, "user.py:41");
    t.where = "user.py:9";
    Var by_rewrite = sin(fg.inputs()[0]);
    replace_by_rewrite(fg, {{by_hand, by_rewrite}}, "some_rewrite");
    EXPECT_EQ(by_rewrite->owner->trace, "user.py:41");
  }
  // FAST_COMPILE keeps the nodes as written.
  FunctionOptions fc;
  fc.mode = "FAST_COMPILE";
  Function k = function({x, y}, {c}, fc);
  EXPECT_EQ(only_node_named(k, "mul")->trace, "user.py:11");
}

TEST(RewriteSemantics, MergeTracesOrdersAndDeduplicates) {
  EXPECT_EQ(merge_traces({"b.py:3", "a.py:10, b.py:3", "", "a.py:9"}), "a.py:9, a.py:10, b.py:3");
  EXPECT_EQ(merge_traces({}), "");
  EXPECT_EQ(merge_traces({"<stdin>", "x.py:2"}), "<stdin>, x.py:2");
  std::vector<std::string> many;
  for (int i = 0; i < 100; ++i) many.push_back("f.py:" + std::to_string(i));
  const std::string m = merge_traces(many);
  EXPECT_EQ(std::count(m.begin(), m.end(), ','), 31);  // at most 32 entries
}

// Without a hook (C++ graphs) the nodes keep no trace and the rewrites invent none.
TEST(RewriteSemantics, NoTraceWithoutAHook) {
  Var x = variable(vector_type(DType::Float64), "x");
  FunctionOptions o;
  o.mode = "FAST_RUN";
  Function f = function({x}, {tanh(exp(x) * 2.0)}, o);
  for (const auto& n : f.toposort()) EXPECT_EQ(n->trace, "");
}

// Before: x / c -> x * (1 / c) built 1 / c in c's dtype: 0 for an integer c (int_x / 4 gave 0,
// and float_x / int8(4) too). Found by the property test (tests/python/test_rewrite_properties.py).
TEST(RewriteSemantics, DivisionByAnIntegerConstantIsNotZero) {
  Var xi = variable(vector_type(DType::Int32), "xi");
  Var xf = variable(vector_type(DType::Float32), "xf");
  Var four = constant(NDArray::scalar(4, DType::Int8));
  check_modes({xi}, {true_div(xi, four), true_div(xi, constant(NDArray::scalar(3, DType::Int32)))},
              {NDArray::from_vector<int32_t>({7, -9, 49})});
  Function f = check_modes({xf}, {true_div(xf, four)}, {testing::make_array({1, 2, -6}, {3}, DType::Float32)});
  EXPECT_EQ(f({testing::make_array({1, 2, -6}, {3}, DType::Float32)})[0].get_flat(2), -1.5);
}

// log(sum(exp(x))) is max + log(sum(exp(x - max))): finite at huge logits, the infinities kept,
// NaN kept, and rounded once at the end.
TEST(RewriteSemantics, LogSumExpIsStableAndKeepsInfinities) {
  for (DType dt : {DType::Float32, DType::Float64}) {
    FunctionOptions o;
    o.mode = std::string("FAST_RUN");
    Var x = variable(matrix_type(dt), "x");
    Function f = function({x}, {log(sum(exp(x), std::vector<int>{1}))}, o);
    auto r = f({testing::make_array({0, -40, 1e5, 1e5, INFINITY, 1, -INFINITY, -INFINITY, NAN, 1, 3, 3}, {6, 2}, dt)});
    const double eps = dt == DType::Float32 ? 1.2e-7 : 2.3e-16;
    EXPECT_LE(std::abs(r[0].get_flat(0) - std::exp(-40.0)), eps);  // about eps in absolute terms
    const double big =
        dt == DType::Float32 ? static_cast<double>(static_cast<float>(1e5 + std::log(2.0))) : 1e5 + std::log(2.0);
    EXPECT_EQ(r[0].get_flat(1), big);  // rounded once, not 1e5 + 0.6953
    EXPECT_EQ(r[0].get_flat(2), INFINITY);
    EXPECT_EQ(r[0].get_flat(3), -INFINITY);
    EXPECT_TRUE(std::isnan(r[0].get_flat(4)));
    EXPECT_NEAR(r[0].get_flat(5), 3 + std::log(2.0), 4 * eps * 4);
    Var t = variable(tensor3_type(dt), "t");
    Function g = function({t}, {log(sum(exp(t), std::vector<int>{1, 2}))}, o);
    auto q = g({testing::make_array({1000, 1000, 1000, 1000}, {1, 2, 2}, dt)});
    EXPECT_NEAR(q[0].get_flat(0), 1000 + std::log(4.0), 1e-3);
  }
}

}  // namespace
}  // namespace hypatia
