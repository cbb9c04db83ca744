// The canonicalize / specialize rules on shapes, subtensors, reductions and mul/div forms
// (rewrite/canonicalize_*.cpp, specialize.cpp): for each rule, the structure of the rewritten
// graph (compiled in FAST_RUN without fusion and in-place, so that each node is still visible) and
// equivalence with the graph as written (mode NONE on the reference kernels), over shapes that
// include zero-size, broadcast and negative-step cases; plus the cases where a rule must not fire.
#include <gtest/gtest.h>

#include <functional>
#include <optional>
#include <random>
#include <sstream>
#include <typeinfo>

#include "hypatia/hypatia.h"
#include "test_util.h"

namespace hypatia {
namespace {

using testing::make_array;
using testing::random_array;

/// The graph of `opt` (structure), FAST_RUN and NONE on the reference kernels.
struct Compiled {
  Function opt, full, plain;
};

Compiled compile(const std::vector<Var>& ins, const std::vector<Var>& outs) {
  std::vector<In> in(ins.begin(), ins.end());
  std::vector<Out> out(outs.begin(), outs.end());
  FunctionOptions fast;
  fast.mode = "FAST_RUN";
  fast.on_unused_input = "ignore";
  FunctionOptions none;
  none.mode = "NONE";
  none.backend = kReferenceBackend;
  none.on_unused_input = "ignore";
  auto without_fusion = [&] {
    const std::string saved = config().optimizer_excluding;
    config().optimizer_excluding = "fusion:inplace";
    Function f = function(in, out, fast);
    config().optimizer_excluding = saved;
    return f;
  };
  return Compiled{without_fusion(), function(in, out, fast), function(in, out, none)};
}

std::string describe(const std::vector<NDArray>& args) {
  std::ostringstream os;
  for (const auto& a : args) {
    os << a.shape().str();
    if (a.ndim() == 0) os << "=" << a.get_flat(0);
    os << " ";
  }
  return os.str();
}

/// f and g both throw on args, or give the same values.
void expect_same(Function& f, Function& g, const std::vector<NDArray>& args, double rtol, double atol) {
  std::vector<NDArray> a, b;
  bool fa = false, fb = false;
  try {
    a = f(args);
  } catch (const std::exception&) {
    fa = true;
  }
  try {
    b = g(args);
  } catch (const std::exception&) {
    fb = true;
  }
  ASSERT_EQ(fa, fb) << "one of the graphs raised, the other did not, on " << describe(args) << "\n" << f.debugprint();
  if (fa) return;
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i)
    EXPECT_ALLCLOSE(a[i], b[i], rtol, atol) << "output " << i << " on " << describe(args) << "\n" << f.debugprint();
}

void check(Compiled& c, const std::vector<NDArray>& args, double rtol = 1e-6, double atol = 1e-9) {
  expect_same(c.opt, c.plain, args, rtol, atol);
  expect_same(c.full, c.plain, args, rtol, atol);
}

int count(const Function& f, const std::type_info& t) {
  int k = 0;
  for (const auto& n : f.toposort()) k += typeid(*n->op) == t;
  return k;
}

int count_scalar(const Function& f, ScalarOpKind s) {
  int k = 0;
  for (const auto& n : f.toposort())
    if (const auto* e = dynamic_cast<const Elemwise*>(n->op.get())) k += e->scalar == s;
  return k;
}

/// The nodes of type T in f.
template <class T>
std::vector<std::shared_ptr<Apply>> nodes_of(const Function& f) {
  std::vector<std::shared_ptr<Apply>> r;
  for (const auto& n : f.toposort())
    if (typeid(*n->op) == typeid(T)) r.push_back(n);
  return r;
}

NDArray iota(const Shape& s, DType dt = DType::Float64) {
  std::vector<double> v(s.prod());
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>(i) + 1;
  return make_array(v, s, dt);
}
NDArray i64(int64_t v) { return NDArray::scalar(static_cast<double>(v), DType::Int64); }

const std::vector<int64_t> kLengths = {0, 1, 2, 5, 12};

// ------------------------------------------------------------------------------------------------
// Subtensor of Subtensor

using Chain = std::function<Var(const Var&)>;

void check_vector_chain(const Chain& chain, const std::string& what) {
  SCOPED_TRACE(what);
  Var x = dvector("x");
  Var y = chain(x);
  Compiled c = compile({x}, {y});
  EXPECT_EQ(count(c.opt, typeid(Subtensor)), 1) << c.opt.debugprint();
  for (int64_t n : kLengths) check(c, {iota({n})});
}

TEST(CanonicalExtra, SubtensorMergeConstantSlices) {
  using std::nullopt;
  const std::vector<std::pair<std::string, Chain>> cases = {
      {"x[2:][1:]", [](const Var& x) { return subtensor(subtensor(x, {sl(2)}), {sl(1)}); }},
      {"x[1:8][2:5]", [](const Var& x) { return subtensor(subtensor(x, {sl(1, 8)}), {sl(2, 5)}); }},
      {"x[::2][1:]", [](const Var& x) { return subtensor(subtensor(x, {sl(nullopt, nullopt, 2)}), {sl(1)}); }},
      {"x[1::3][::2]",
       [](const Var& x) { return subtensor(subtensor(x, {sl(1, nullopt, 3)}), {sl(nullopt, nullopt, 2)}); }},
      {"x[2:10:2][1:3]", [](const Var& x) { return subtensor(subtensor(x, {sl(2, 10, 2)}), {sl(1, 3)}); }},
      {"x[:4][:9]", [](const Var& x) { return subtensor(subtensor(x, {sl(nullopt, 4)}), {sl(nullopt, 9)}); }},
      {"x[-5:][1:]", [](const Var& x) { return subtensor(subtensor(x, {sl(-5)}), {sl(1)}); }},
      {"x[1:-1][:-2]", [](const Var& x) { return subtensor(subtensor(x, {sl(1, -1)}), {sl(nullopt, -2)}); }},
      {"x[3:][-2:]", [](const Var& x) { return subtensor(subtensor(x, {sl(3)}), {sl(-2)}); }},
      {"x[20:][1:]", [](const Var& x) { return subtensor(subtensor(x, {sl(20)}), {sl(1)}); }},
  };
  for (const auto& [what, chain] : cases) check_vector_chain(chain, what);
}

TEST(CanonicalExtra, SubtensorMergeNegativeSteps) {
  using std::nullopt;
  auto rev = [](IndexBound a, IndexBound b, int64_t s) { return sl(std::move(a), std::move(b), s); };
  const std::vector<std::pair<std::string, Chain>> cases = {
      {"x[::-1][1:]", [&](const Var& x) { return subtensor(subtensor(x, {rev(nullopt, nullopt, -1)}), {sl(1)}); }},
      {"x[::-1][::-1]",
       [&](const Var& x) { return subtensor(subtensor(x, {rev(nullopt, nullopt, -1)}), {rev(nullopt, nullopt, -1)}); }},
      {"x[::-2][1::2]",
       [&](const Var& x) { return subtensor(subtensor(x, {rev(nullopt, nullopt, -2)}), {rev(1, nullopt, 2)}); }},
      {"x[1:-1][::-1]",
       [&](const Var& x) { return subtensor(subtensor(x, {sl(1, -1)}), {rev(nullopt, nullopt, -1)}); }},
      {"x[5:1:-1][1:]", [&](const Var& x) { return subtensor(subtensor(x, {rev(5, 1, -1)}), {sl(1)}); }},
      {"x[::-1][-3:]", [&](const Var& x) { return subtensor(subtensor(x, {rev(nullopt, nullopt, -1)}), {sl(-3)}); }},
      {"x[:-2][-3::-2]",
       [&](const Var& x) { return subtensor(subtensor(x, {sl(nullopt, -2)}), {rev(-3, nullopt, -2)}); }},
      {"x[::3][::-1]",
       [&](const Var& x) { return subtensor(subtensor(x, {rev(nullopt, nullopt, 3)}), {rev(nullopt, nullopt, -1)}); }},
      {"x[-2::-3][2:0:-1]",
       [&](const Var& x) { return subtensor(subtensor(x, {rev(-2, nullopt, -3)}), {rev(2, 0, -1)}); }},
  };
  for (const auto& [what, chain] : cases) check_vector_chain(chain, what);
}

TEST(CanonicalExtra, SubtensorMergeSymbolicBoundsAndSteps) {
  Var x = dvector("x");
  Var a = lscalar("a"), b = lscalar("b"), c = lscalar("c"), d = lscalar("d");
  Var s = lscalar("s"), t = lscalar("t");
  // x[a:b:s][c:d:t] with every bound and step symbolic, and x[a:b][c:d] with unit steps.
  Var y = subtensor(subtensor(x, {sl(a, b, s)}), {sl(c, d, t)});
  Var z = subtensor(subtensor(x, {sl(a, b)}), {sl(c, d)});
  Compiled cy = compile({x, a, b, c, d, s, t}, {y});
  Compiled cz = compile({x, a, b, c, d}, {z});
  EXPECT_EQ(count(cy.opt, typeid(Subtensor)), 1) << cy.opt.debugprint();
  EXPECT_EQ(count(cz.opt, typeid(Subtensor)), 1) << cz.opt.debugprint();
  std::mt19937_64 rng(7);
  const std::vector<int64_t> bounds = {-9, -4, -1, 0, 1, 2, 4, 9};
  const std::vector<int64_t> steps = {-3, -2, -1, 1, 2, 3};
  auto pick = [&](const std::vector<int64_t>& v) { return v[rng() % v.size()]; };
  for (int k = 0; k < 300; ++k) {
    NDArray xv = iota({kLengths[k % kLengths.size()]});
    const int64_t va = pick(bounds), vb = pick(bounds), vc = pick(bounds), vd = pick(bounds);
    check(cy, {xv, i64(va), i64(vb), i64(vc), i64(vd), i64(pick(steps)), i64(pick(steps))});
    check(cz, {xv, i64(va), i64(vb), i64(vc), i64(vd)});
  }
}

TEST(CanonicalExtra, SubtensorMergeIntegerIndices) {
  using std::nullopt;
  Var x = dmatrix("x");
  Var i = lscalar("i"), j = lscalar("j"), a = lscalar("a"), s = lscalar("s");
  const std::vector<std::pair<std::string, Var>> cases = {
      {"x[i][j]", subtensor(subtensor(x, {Index(i)}), {Index(j)})},
      {"x[1:][0]", subtensor(subtensor(x, {sl(1)}), {Index(0)})},
      {"x[::-1][0]", subtensor(subtensor(x, {sl(nullopt, nullopt, -1)}), {Index(0)})},
      {"x[::-2][1]", subtensor(subtensor(x, {sl(nullopt, nullopt, -2)}), {Index(1)})},
      {"x[-3::-1][1]", subtensor(subtensor(x, {sl(-3, nullopt, -1)}), {Index(1)})},
      {"x[1:3][2] (always out of range)", subtensor(subtensor(x, {sl(1, 3)}), {Index(2)})},
      {"x[2:5][i]", subtensor(subtensor(x, {sl(2, 5)}), {Index(i)})},
      {"x[1:][-1]", subtensor(subtensor(x, {sl(1)}), {Index(-1)})},
      {"x[a::s][i]", subtensor(subtensor(x, {sl(a, nullopt, s)}), {Index(i)})},
      {"x[:, 1:][i]", subtensor(subtensor(x, {all(), sl(1)}), {Index(i)})},
      {"x[i][::-1]", subtensor(subtensor(x, {Index(i)}), {sl(nullopt, nullopt, -1)})},
      {"x[1:, ::2][i, 1:]", subtensor(subtensor(x, {sl(1), sl(nullopt, nullopt, 2)}), {Index(i), sl(1)})},
  };
  for (const auto& [what, y] : cases) {
    SCOPED_TRACE(what);
    Compiled c = compile({x, i, j, a, s}, {y});
    EXPECT_EQ(count(c.opt, typeid(Subtensor)), 1) << c.opt.debugprint();
    for (Shape shape : {Shape{0, 3}, Shape{1, 4}, Shape{3, 2}, Shape{6, 5}})
      for (int64_t vi : {-7, -4, -1, 0, 1, 2, 3, 6})
        for (int64_t vs : {-2, 1, 3}) check(c, {iota(shape), i64(vi), i64(1 - vi), i64(vi + 2), i64(vs)});
  }
  // Two plain integer indices need no index arithmetic at all.
  Compiled c = compile({x, i, j}, {subtensor(subtensor(x, {Index(i)}), {Index(j)})});
  EXPECT_EQ(c.opt.toposort().size(), 1u) << c.opt.debugprint();
}

TEST(CanonicalExtra, SubtensorMergeNewAxisAndBroadcast) {
  using std::nullopt;
  Var r = drow("r");  // (1, n), broadcastable first axis
  Var m = dmatrix("m");
  struct Case {
    std::string what;
    Var y;
    int subtensors;  // after the merge
  };
  const std::vector<Case> cases = {
      {"r[0][1:]", subtensor(subtensor(r, {Index(0)}), {sl(1)}), 1},
      {"m[None][0]", subtensor(subtensor(m, {newaxis()}), {Index(0)}), 0},
      {"m[:, None][:, -1]", subtensor(subtensor(m, {all(), newaxis()}), {all(), Index(-1)}), 0},
      {"m[None][:, 1:]", subtensor(subtensor(m, {newaxis()}), {all(), sl(1)}), 1},
      {"m[None][0:1]", subtensor(subtensor(m, {newaxis()}), {sl(0, 1)}), 1},
      {"m[1:][None, :, None]", subtensor(subtensor(m, {sl(1)}), {newaxis(), all(), newaxis()}), 1},
      {"r[:, ::-1][0]", subtensor(subtensor(r, {all(), sl(nullopt, nullopt, -1)}), {Index(0)}), 1},
      {"r[0:1][:, 2:]", subtensor(subtensor(r, {sl(0, 1)}), {all(), sl(2)}), 1},
      // Must not merge: a slice that empties a new axis.
      {"m[None][1:]", subtensor(subtensor(m, {newaxis()}), {sl(1)}), 2},
  };
  for (const auto& cs : cases) {
    SCOPED_TRACE(cs.what);
    Compiled c = compile({r, m}, {cs.y});
    EXPECT_EQ(count(c.opt, typeid(Subtensor)), cs.subtensors) << c.opt.debugprint();
    for (int64_t n : {0, 1, 4}) check(c, {iota({1, n}), iota({n, 3})});
  }
}

TEST(CanonicalExtra, SubtensorMergeSkipsAdvancedIndexing) {
  Var x = dvector("x");
  Var idx = lvector("idx");
  Var y = subtensor(subtensor(x, {Index(idx)}), {sl(1)});
  Compiled c = compile({x, idx}, {y});
  EXPECT_EQ(count(c.opt, typeid(AdvancedSubtensor)), 1) << c.opt.debugprint();
  EXPECT_EQ(count(c.opt, typeid(Subtensor)), 1) << c.opt.debugprint();
  check(c, {iota({5}), make_array({4, 0, 2}, {3}, DType::Int64)});
}

// ------------------------------------------------------------------------------------------------
// Reshape

TEST(CanonicalExtra, ReshapeChain) {
  Var x = dmatrix("x");
  Compiled c = compile({x}, {reshape(reshape(x, {-1}), {4, -1})});
  EXPECT_EQ(count(c.opt, typeid(Reshape)), 1) << c.opt.debugprint();
  for (Shape s : {Shape{3, 4}, Shape{2, 8}, Shape{0, 4}}) check(c, {iota(s)});
  // Symbolic shapes: reshape(reshape(x, (rows * cols,)), (cols, rows)), x strided.
  ShapeVars xs = shape_vars(x);
  Var y = reshape(reshape(x, make_vector({xs[0] * xs[1]}), 1), make_vector({xs[1], xs[0]}), 2);
  Compiled d = compile({x}, {y});
  EXPECT_EQ(count(d.opt, typeid(Reshape)), 1) << d.opt.debugprint();
  for (Shape s : {Shape{3, 4}, Shape{0, 2}, Shape{1, 1}}) check(d, {testing::random_strided(s, DType::Float64)});
}

TEST(CanonicalExtra, UselessReshape) {
  Var x = dmatrix("x");
  Var v = dvector("v");
  Var r = drow("r");
  struct Case {
    std::string what;
    Var y;
    int reshapes;
  };
  const std::vector<Case> cases = {
      {"reshape(x, shape(x))", reshape(x, shape(x), 2), 0},
      {"reshape(x, [x.shape[0], x.shape[1]])", reshape(x, make_vector(shape_vars(x)), 2), 0},
      // The shape of exp(x) is x's (the shape feature lifts Shape_i through exp).
      {"reshape(exp(x), shape(x))", reshape(exp(x), shape(x), 2), 0},
      {"reshape(x + 1, shape(x + 1))", reshape(x + 1.0, shape(x + 1.0), 2), 0},
      {"reshape(v, (-1,))", reshape(v, std::vector<int64_t>{-1}), 0},
      {"reshape(r, (1, r.shape[1]))", reshape(r, make_vector({int_constant(1), shape_i(r, 1)}), 2), 0},
      // Must not fire: another variable's shape, a transposed shape, constant entries.
      {"reshape(x, shape(x.T))", reshape(x, shape(transpose(x)), 2), 1},
      {"reshape(x, (x.shape[1], x.shape[0]))", reshape(x, make_vector({shape_i(x, 1), shape_i(x, 0)}), 2), 1},
      {"reshape(x, (2, -1))", reshape(x, std::vector<int64_t>{2, -1}), 1},
  };
  for (const auto& cs : cases) {
    SCOPED_TRACE(cs.what);
    Compiled c = compile({x, v, r}, {cs.y});
    EXPECT_EQ(count(c.opt, typeid(Reshape)), cs.reshapes) << c.opt.debugprint();
    for (Shape s : {Shape{2, 3}, Shape{2, 2}, Shape{0, 2}, Shape{2, 0}})
      check(c, {iota(s), iota({s.prod()}), iota({1, s[1]})});
  }
  // reshape(x, shape(y)) for another matrix y stays, and raises where the sizes differ.
  Var y = dmatrix("y");
  Compiled c = compile({x, y}, {reshape(x, shape(y), 2)});
  EXPECT_EQ(count(c.opt, typeid(Reshape)), 1) << c.opt.debugprint();
  check(c, {iota({2, 3}), iota({3, 2})});
  check(c, {iota({2, 3}), iota({2, 2})});
}

// ------------------------------------------------------------------------------------------------
// Alloc

TEST(CanonicalExtra, UselessAllocAndAllocOfAlloc) {
  Var x = dmatrix("x");
  Var v = dvector("v");
  Var y = dmatrix("y");
  Var r = drow("r");
  Var n = lscalar("n");
  struct Case {
    std::string what;
    Var out;
    int allocs;
  };
  const std::vector<Case> cases = {
      {"alloc(x, x.shape)", alloc(x, shape_vars(x)), 0},
      {"alloc(exp(x), x.shape)", alloc(exp(x), shape_vars(x)), 0},
      {"alloc(r, r.shape)", alloc(r, shape_vars(r)), 0},
      {"alloc(alloc(v, (v.shape[0],)), (n, v.shape[0]))",
       alloc(alloc(v + 1.0, {n, shape_i(v, 0)}), {int_constant(2), n, shape_i(v, 0)}), 1},
      {"alloc(alloc(v, v.shape), (3, v.shape[0]))", alloc(alloc(v, {shape_i(v, 0)}), {int_constant(3), shape_i(v, 0)}),
       1},
      // Must not fire: broadcasting allocs, another variable's shape.
      {"alloc(r, (n, r.shape[1]))", alloc(r, {n, shape_i(r, 1)}), 1},
      {"alloc(x, y.shape)", alloc(x, shape_vars(y)), 1},
      {"alloc(v, (n, v.shape[0]))", alloc(v, {n, shape_i(v, 0)}), 1},
      // v (not broadcastable) made broadcastable by the inner alloc, then spread: stays two allocs.
      {"alloc(alloc(v, (1,)), (3,))", alloc(alloc(v, {int_constant(1)}), {int_constant(3)}), 2},
      // An elementwise input filled from a scalar reads the scalar when another input fixes the shape.
      {"x * alloc(2, x.shape)", x * alloc(constant(2.0, DType::Float64), shape_vars(x)), 0},
      {"r + alloc(2, x.shape) + x (r does not fix the shape)",
       r + alloc(constant(2.0, DType::Float64), shape_vars(x)) + x, 1},
      // The fill moves out through scalar operations until an input fixes the shape (the L2 gradient).
      {"x * (alloc(2, x.shape) * 3)", x * (alloc(constant(2.0, DType::Float64), shape_vars(x)) * 3.0), 0},
      // Must not fire: no other input fixes the output's shape.
      {"r * alloc(2, (n, r.shape[1]))", r * alloc(constant(2.0, DType::Float64), {n, shape_i(r, 1)}), 1},
  };
  for (const auto& cs : cases) {
    SCOPED_TRACE(cs.what);
    Compiled c = compile({x, v, y, r, n}, {cs.out});
    EXPECT_EQ(count(c.opt, typeid(Alloc)), cs.allocs) << c.opt.debugprint();
    for (int64_t k : {0, 1, 3}) check(c, {iota({2, k}), iota({k == 3 ? 1 : k}), iota({2, k}), iota({1, k}), i64(k)});
  }
}

TEST(CanonicalExtra, AddOfIncSubtensorsOfZeros) {
  // The gradient of several slices of one matrix (an LSTM's gates): one buffer of zeros with each
  // slice's gradient added in turn, no sum of four zero-filled matrices. Against the graph as
  // written, with overlapping slices, a slice out of range for some widths and widths of 0.
  Var z = dmatrix("z");
  Var n = lscalar("n");
  auto gate = [&](int64_t lo, int64_t hi) { return subtensor(z, {all(), sl(lo, hi)}); };
  struct Case {
    std::string what;
    Var out;
    int adds;  // Elemwise adds left in the rewritten graph
  };
  auto grad_of = [&](const Var& cost) { return grad(cost, z); };
  const std::vector<Case> cases = {
      {"four gates",
       grad_of(sum(tanh(gate(0, 2))) + sum(exp(gate(2, 4)) * 2.0) + sum(sqr(gate(4, 6))) +
               sum(gate(6, 8) * gate(6, 8) * 3.0)),
       0},
      {"overlapping slices", grad_of(sum(tanh(gate(0, 5))) + sum(exp(gate(3, 8)))), 0},
      // Must not fire: zeros of another variable's shape (a different shape at run time raises).
      {"zeros of another shape",
       inc_subtensor(subtensor(zeros({n, shape_i(z, 1)}, DType::Float64), {all(), sl(0, 2)}), gate(0, 2)) +
           inc_subtensor(subtensor(zeros_like(z), {all(), sl(2, 4)}), gate(2, 4)),
       1},
  };
  for (const auto& cs : cases) {
    SCOPED_TRACE(cs.what);
    Compiled c = compile({z, n}, {cs.out});
    EXPECT_EQ(count_scalar(c.opt, ScalarOpKind::Add), cs.adds) << c.opt.debugprint();
    for (int64_t w : {0, 3, 8, 10})
      for (int64_t rows : {0, 2}) check(c, {iota({rows, w}), i64(rows == 2 ? 2 : 1)});
  }
}

// ------------------------------------------------------------------------------------------------
// Switch

TEST(CanonicalExtra, UselessSwitch) {
  Var x = dmatrix("x");
  Var y = dmatrix("y");
  Var r = drow("r");
  Var c = bmatrix("c");
  Var t = constant(NDArray::scalar(1, DType::Bool));
  Var f = constant(NDArray::scalar(0, DType::Bool));
  struct Case {
    std::string what;
    Var out;
    int switches;
  };
  const std::vector<Case> cases = {
      {"switch(True, x, y)", switch_(t, x, y), 0},
      {"switch(False, x, y)", switch_(f, x, y), 0},
      {"switch(2, x, y)", switch_(constant(2.0, DType::Int8), x, y), 0},
      {"switch(True, r, x) (r broadcast)", switch_(t, r, x), 0},
      {"switch(False, r, x)", switch_(f, r, x), 0},
      {"switch(c, x, x)", switch_(c, x, x), 0},
      {"switch(c, r, r) (r broadcast to c)", switch_(c, r, r), 0},
      {"switch(c, x, y) stays", switch_(c, x, y), 1},
  };
  for (const auto& cs : cases) {
    SCOPED_TRACE(cs.what);
    Compiled cc = compile({x, y, r, c}, {cs.out});
    EXPECT_EQ(count_scalar(cc.opt, ScalarOpKind::Switch), cs.switches) << cc.opt.debugprint();
    for (int64_t k : {0, 1, 3})
      check(cc, {iota({2, k}), random_array({2, k}, DType::Float64), iota({1, k}),
                 random_array({2, k}, DType::Int8, -1, 2)});
  }
}

// ------------------------------------------------------------------------------------------------
// Elementwise ops of a variable with itself

TEST(CanonicalExtra, UselessElemwiseOfSameInput) {
  Var x = dmatrix("x");
  Var i = imatrix("i");
  struct Case {
    std::string what;
    Var out;
    int elemwise;  // Elemwise nodes left
  };
  const std::vector<Case> cases = {
      {"maximum(x, x)", maximum(x, x), 0},
      {"minimum(i, i)", minimum(i, i), 0},
      {"i & i", and_(i, i), 0},
      {"i | i", or_(i, i), 0},
      {"i ^ i", xor_(i, i), 0},
      {"i == i", eq(i, i), 0},
      {"i <= i", le(i, i), 0},
      {"i < i", lt(i, i), 0},
      {"i != i", neq(i, i), 0},
      // NaN != NaN: float comparisons with themselves stay.
      {"x == x stays", eq(x, x), 1},
      {"x != x stays", neq(x, x), 1},
      {"x < x stays", lt(x, x), 1},
  };
  NDArray xv = make_array({1, NAN, -2, INFINITY, 0, 3}, {2, 3}, DType::Float64);
  for (const auto& cs : cases) {
    SCOPED_TRACE(cs.what);
    Compiled c = compile({x, i}, {cs.out});
    EXPECT_EQ(count(c.opt, typeid(Elemwise)), cs.elemwise) << c.opt.debugprint();
    check(c, {xv, random_array({2, 3}, DType::Int32, -5, 5)});
    check(c, {iota({0, 3}), random_array({0, 3}, DType::Int32)});
  }
}

// ------------------------------------------------------------------------------------------------
// mul / div

TEST(CanonicalExtra, MulDivCancellation) {
  Var x = dmatrix("x");
  Var y = dmatrix("y");
  Var z = dmatrix("z");
  Var r = drow("r");
  Var f = fmatrix("f");
  struct Case {
    std::string what;
    Var out;
    int muls, divs, negs;
  };
  const std::vector<Case> cases = {
      {"(x * y) / x", (x * y) / x, 0, 0, 0},
      {"(y * x) / x", (y * x) / x, 0, 0, 0},
      {"(x * r) / x (r broadcast back)", (x * r) / x, 0, 0, 0},
      {"(r * x) / r", (r * x) / r, 0, 0, 0},
      {"(x * y) / (y * z)", (x * y) / (y * z), 0, 1, 0},
      {"(x * y) / (z * x)", (x * y) / (z * x), 0, 1, 0},
      {"(r * x) / (r * z)", (r * x) / (r * z), 0, 1, 0},
      {"x / x", x / x, 0, 0, 0},
      {"r / r", r / r, 0, 0, 0},
      {"(-x) * (-y)", neg(x) * neg(y), 1, 0, 0},
      {"(-x) / (-y)", neg(x) / neg(y), 0, 1, 0},
      {"x * (1 / y)", x * (1.0 / y), 0, 1, 0},
      {"(1 / y) * x", (1.0 / y) * x, 0, 1, 0},
      {"x * reciprocal(y)", x * reciprocal(y), 0, 1, 0},
      {"r * (1 / y)", r * (1.0 / y), 0, 1, 0},
      {"f * (1 / x) (float32 times float64)", f * (1.0 / x), 0, 1, 0},
      {"(x / y) * y", (x / y) * y, 0, 0, 0},
  };
  for (const auto& cs : cases) {
    SCOPED_TRACE(cs.what);
    Compiled c = compile({x, y, z, r, f}, {cs.out});
    EXPECT_EQ(count_scalar(c.opt, ScalarOpKind::Mul), cs.muls) << c.opt.debugprint();
    EXPECT_EQ(count_scalar(c.opt, ScalarOpKind::TrueDiv), cs.divs) << c.opt.debugprint();
    EXPECT_EQ(count_scalar(c.opt, ScalarOpKind::Neg) + count_scalar(c.opt, ScalarOpKind::Reciprocal), cs.negs)
        << c.opt.debugprint();
    for (int64_t k : {0, 1, 3}) {
      const Shape s{2, k};
      check(c,
            {random_array(s, DType::Float64, 0.5, 2, 1), random_array(s, DType::Float64, 0.5, 2, 2),
             random_array(s, DType::Float64, 0.5, 2, 3), random_array({1, k}, DType::Float64, 0.5, 2, 4),
             random_array(s, DType::Float32, 0.5, 2, 5)},
            1e-6, 1e-9);
    }
  }
}

TEST(CanonicalExtra, MulDivNotForIntegers) {
  Var i = imatrix("i");
  Var j = imatrix("j");
  Var b = bmatrix("b");
  Var x = dmatrix("x");
  struct Case {
    std::string what;
    Var out;
    int muls, divs;
  };
  const std::vector<Case> cases = {
      // int32 products wrap around before the (float) division: nothing cancels.
      {"(i * j) / i", (i * j) / i, 1, 1},
      {"i / i", i / i, 0, 1},
      {"i * (1 / j)", i * (1.0 / j), 1, 1},
      {"x * (1 / 4.0) (a constant divisor)", x * (1.0 / constant(4.0, DType::Float64)), 1, 0},
  };
  for (const auto& cs : cases) {
    SCOPED_TRACE(cs.what);
    Compiled c = compile({i, j, b, x}, {cs.out});
    EXPECT_EQ(count_scalar(c.opt, ScalarOpKind::Mul), cs.muls) << c.opt.debugprint();
    EXPECT_EQ(count_scalar(c.opt, ScalarOpKind::TrueDiv), cs.divs) << c.opt.debugprint();
    NDArray big = make_array({70000, -3, 5, 1, 0, 2}, {2, 3}, DType::Int32);
    NDArray bigj = make_array({70000, 7, -2, 0, 4, 1}, {2, 3}, DType::Int32);
    check(c, {big, bigj, random_array({2, 3}, DType::Int8, -2, 2), random_array({2, 3}, DType::Float64)});
  }
  // neg(a) * neg(b) with a negated in a narrower dtype than the product's: stays.
  Var s8 = bmatrix("s8");
  Var s16 = wmatrix("s16");
  Compiled c = compile({s8, s16}, {neg(s8) * neg(s16)});
  EXPECT_EQ(count_scalar(c.opt, ScalarOpKind::Neg), 2) << c.opt.debugprint();
  check(c, {make_array({-128, 3}, {1, 2}, DType::Int8), make_array({5, -7}, {1, 2}, DType::Int16)});
  // In one integer dtype the negations cancel (wrap-around included).
  Compiled d = compile({s8}, {neg(s8) * neg(s8 + s8)});
  EXPECT_EQ(count_scalar(d.opt, ScalarOpKind::Neg), 0) << d.opt.debugprint();
  check(d, {make_array({-128, 3, 127, 0}, {2, 2}, DType::Int8)});
}

// ------------------------------------------------------------------------------------------------
// Reductions

/// The input of the only Reduce node of f (fails when there is not exactly one).
Var reduce_input(const Function& f) {
  auto rs = nodes_of<Reduce>(f);
  EXPECT_EQ(rs.size(), 1u) << f.debugprint();
  return rs.empty() ? nullptr : rs[0]->inputs[0];
}

TEST(CanonicalExtra, SumProdOfScalarTimes) {
  Var x = dmatrix("x");
  Var v = dvector("v");
  // sum(c * x) -> c * sum(x): the Sum reads x.
  {
    Compiled c = compile({x}, {sum(3.0 * x, std::vector<int>{1}), sum(x * -0.5), mean(2.0 * x, std::vector<int>{0})});
    for (const auto& n : nodes_of<Reduce>(c.opt)) EXPECT_EQ(n->inputs[0].get(), x.get()) << c.opt.debugprint();
    for (Shape s : {Shape{2, 3}, Shape{0, 3}, Shape{3, 0}, Shape{1, 1}}) check(c, {random_array(s, DType::Float64)});
  }
  // prod(c * x) -> c**n * prod(x) with n known statically: x reshaped to a constant shape.
  {
    Var m = reshape(v, {2, 3});
    Compiled c = compile({v}, {prod(3.0 * m, std::vector<int>{1}), prod(m * 0.5)});
    for (const auto& n : nodes_of<Reduce>(c.opt)) EXPECT_EQ(typeid(*n->inputs[0]->owner->op), typeid(Reshape));
    check(c, {random_array({6}, DType::Float64, 0.5, 2)});
    // Over a broadcastable axis n is 1.
    Var r = drow("r");
    Compiled d = compile({r}, {prod(2.0 * r, std::vector<int>{0})});
    EXPECT_EQ(reduce_input(d.opt).get(), r.get()) << d.opt.debugprint();
    for (int64_t k : {0, 1, 4}) check(d, {random_array({1, k}, DType::Float64)});
  }
  // Must not fire: the count unknown (prod), an integer product (it wraps around), a non-scalar constant.
  {
    Var i = imatrix("i");
    Compiled c = compile({x, i}, {prod(3.0 * x), sum(i * constant(3.0, DType::Int32)),
                                  sum(x * constant(make_array({2, 2, 2}, {3}, DType::Float64)))});
    for (const auto& n : nodes_of<Reduce>(c.opt)) {
      const Apply* p = n->inputs[0]->owner;
      const auto* e = p ? dynamic_cast<const Elemwise*>(p->op.get()) : nullptr;
      EXPECT_TRUE(e && e->scalar == ScalarOpKind::Mul) << c.opt.debugprint();
    }
    check(c, {random_array({2, 3}, DType::Float64), make_array({1e9, 2e9, -1e9, 3, 0, 7}, {2, 3}, DType::Int32)});
  }
}

TEST(CanonicalExtra, SumOfNeg) {
  Var x = dmatrix("x");
  Var l = lmatrix("l");
  Var i = bmatrix("i");
  Compiled c = compile({x, l}, {sum(neg(x), std::vector<int>{0}), sum(neg(l))});
  for (const auto& n : nodes_of<Reduce>(c.opt)) EXPECT_EQ(n->inputs[0]->owner, nullptr) << c.opt.debugprint();
  for (Shape s : {Shape{2, 3}, Shape{0, 2}})
    check(c, {random_array(s, DType::Float64), random_array(s, DType::Int64, -1e6, 1e6)});
  // int8: neg(-128) wraps in int8 before the 64-bit sum: stays.
  Compiled d = compile({i}, {sum(neg(i))});
  EXPECT_EQ(count_scalar(d.opt, ScalarOpKind::Neg), 1) << d.opt.debugprint();
  check(d, {make_array({-128, 5, -128, 1}, {2, 2}, DType::Int8)});
}

TEST(CanonicalExtra, ReduceOfReduceMerged) {
  Var x = dtensor3("x");
  Var i = itensor3("i");
  struct Case {
    std::string what;
    Var out;
    std::vector<int> axes;  // of the one merged Reduce
  };
  const std::vector<Case> cases = {
      {"sum(sum(x, 0), 0)", sum(sum(x, std::vector<int>{0}), std::vector<int>{0}), {0, 1}},
      {"sum(sum(x, 1), 1)", sum(sum(x, std::vector<int>{1}), std::vector<int>{1}), {1, 2}},
      {"sum(sum(x, 2))", sum(sum(x, std::vector<int>{2})), {0, 1, 2}},
      {"sum(sum(x, [0, 2]), 0)", sum(sum(x, std::vector<int>{0, 2}), std::vector<int>{0}), {0, 1, 2}},
      {"max(max(x, 1), 0)", max(max(x, std::vector<int>{1}), std::vector<int>{0}), {0, 1}},
      {"min(min(i, 0), 1)", min(min(i, std::vector<int>{0}), std::vector<int>{1}), {0, 2}},
      {"sum(sum(i, 0), 0) (int64 sums)", sum(sum(i, std::vector<int>{0}), std::vector<int>{0}), {0, 1}},
      {"sum(sum(x, 1, float32), 0)",
       sum(sum(x, std::vector<int>{1}, false, DType::Float32), std::vector<int>{0}),
       {0, 1}},
  };
  for (const auto& cs : cases) {
    SCOPED_TRACE(cs.what);
    Compiled c = compile({x, i}, {cs.out});
    auto rs = nodes_of<Reduce>(c.opt);
    ASSERT_EQ(rs.size(), 1u) << c.opt.debugprint();
    EXPECT_EQ(static_cast<const Reduce&>(*rs[0]->op).axes, cs.axes) << c.opt.debugprint();
    for (Shape s : {Shape{2, 3, 4}, Shape{1, 2, 1}, Shape{2, 0, 3}})
      check(c, {random_array(s, DType::Float64), random_array(s, DType::Int32, -100, 100)}, 1e-5, 1e-9);
  }
  // Max of an empty axis raises in both graphs.
  Compiled m = compile({x}, {max(max(x, std::vector<int>{1}), std::vector<int>{0})});
  check(m, {random_array({0, 2, 2}, DType::Float64)});
  check(m, {random_array({2, 0, 2}, DType::Float64)});
  check(m, {random_array({2, 2, 0}, DType::Float64)});
  // Must not merge: different kinds; an int32 sum whose inner result is int32 wraps differently.
  Compiled d = compile({x, i}, {max(sum(x, std::vector<int>{0}), std::vector<int>{0}),
                                sum(sum(i, std::vector<int>{0}, false, DType::Int32), std::vector<int>{0})});
  EXPECT_EQ(count(d.opt, typeid(Reduce)), 4) << d.opt.debugprint();
  check(d, {random_array({2, 3, 4}, DType::Float64), make_array({2e9, 2e9, 1, 1}, {2, 1, 2}, DType::Int32)});
}

TEST(CanonicalExtra, ReduceOverNoAxes) {
  Var x = dmatrix("x");
  Var b = bmatrix("b");
  Compiled c = compile({x, b}, {sum(x, std::vector<int>{}), prod(b, std::vector<int>{}), max(x, std::vector<int>{})});
  EXPECT_EQ(count(c.opt, typeid(Reduce)), 0) << c.opt.debugprint();
  for (Shape s : {Shape{2, 3}, Shape{0, 3}})
    check(c, {random_array(s, DType::Float64), random_array(s, DType::Int8, -100, 100)});
  // ProdWithoutZeros over no axis is not the identity: stays.
  Var p = apply_op1(std::make_shared<Reduce>(ReduceKind::ProdWithoutZeros, std::vector<int>{}, DType::Float64), {x});
  Compiled d = compile({x}, {p});
  EXPECT_EQ(count(d.opt, typeid(Reduce)), 1) << d.opt.debugprint();
  check(d, {make_array({0, 2, 0, 3}, {2, 2}, DType::Float64)});
}

TEST(CanonicalExtra, ReduceOfDimShuffleAddingBroadcastableDims) {
  Var x = dmatrix("x");
  struct Case {
    std::string what;
    Var out;
    int dimshuffles;
  };
  Var d = dimshuffle(x, {0, -1, 1});
  const std::vector<Case> cases = {
      {"sum(x[:, None, :], [1, 2])", sum(d, std::vector<int>{1, 2}), 0},
      {"sum(x[:, None, :], 1)", sum(d, std::vector<int>{1}), 0},
      {"max(x[None, :, None, :], [0, 3])", max(dimshuffle(x, {-1, 0, -1, 1}), std::vector<int>{0, 3}), 1},
      {"prod(x[None], 0)", prod(dimshuffle(x, {-1, 0, 1}), std::vector<int>{0}), 0},
      {"sum(sum(x, keepdims=True))", sum(sum(x, std::vector<int>{1}, true)), 0},
      // Must not fire: only x's own axes reduced; a transposition.
      {"sum(x[:, None, :], 0) stays", sum(d, std::vector<int>{0}), 1},
      {"sum(x.T[None], [0, 1]) stays", sum(dimshuffle(x, {-1, 1, 0}), std::vector<int>{0, 1}), 1},
  };
  for (const auto& cs : cases) {
    SCOPED_TRACE(cs.what);
    Compiled c = compile({x}, {cs.out});
    EXPECT_EQ(count(c.opt, typeid(DimShuffle)), cs.dimshuffles) << c.opt.debugprint();
    EXPECT_LE(count(c.opt, typeid(Reduce)), 1) << c.opt.debugprint();
    for (Shape s : {Shape{2, 3}, Shape{0, 3}, Shape{3, 0}}) check(c, {random_array(s, DType::Float64)});
  }
}

TEST(CanonicalExtra, SumOfSquaresSpecialized) {
  Var x = dmatrix("x");
  Var i = imatrix("i");
  Compiled c = compile({x, i}, {sum(x * x), sum(pow(x, constant(2.0, DType::Float64)), std::vector<int>{0}),
                                sum(i * i, std::vector<int>{1}), mean(x * x)});
  for (const auto& n : nodes_of<Reduce>(c.opt)) {
    const auto* e = n->inputs[0]->owner ? dynamic_cast<const Elemwise*>(n->inputs[0]->owner->op.get()) : nullptr;
    ASSERT_NE(e, nullptr) << c.opt.debugprint();
    EXPECT_EQ(e->scalar, ScalarOpKind::Sqr) << c.opt.debugprint();
  }
  EXPECT_EQ(count_scalar(c.opt, ScalarOpKind::Pow), 0) << c.opt.debugprint();
  // mean stays a mean: a sum divided by the count.
  EXPECT_EQ(count_scalar(c.opt, ScalarOpKind::TrueDiv), 1) << c.opt.debugprint();
  for (Shape s : {Shape{2, 3}, Shape{0, 3}})
    check(c, {random_array(s, DType::Float64), random_array(s, DType::Int32, -50000, 50000)});
}

}  // namespace
}  // namespace hypatia
