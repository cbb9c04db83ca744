// Elementwise fusion: the Composite op (OpInfo entry) and the fusion rewrite.
#include <gtest/gtest.h>

#include "hypatia/hypatia.h"
#include "test_util.h"

namespace hypatia {
namespace {

using testing::make_array;
using testing::OpSample;
using testing::random_array;
using testing::random_strided;

/// tanh(i0 * i1 + i2) - exp(i3)
Var build_composite(const std::vector<Var>& v) {
  using S = Composite::Step;
  std::vector<S> steps{{ScalarOpKind::Mul, {0, 1}},
                       {ScalarOpKind::Add, {4, 2}},
                       {ScalarOpKind::Tanh, {5}},
                       {ScalarOpKind::Exp, {3}},
                       {ScalarOpKind::Sub, {6, 7}}};
  return apply_op1(std::make_shared<Composite>(4, v[0]->dtype(), steps), v);
}

NDArray rnd(const Shape& s, DType dt, uint64_t seed) { return random_array(s, dt, -1, 1, seed); }

HYP_OPINFO({
    .name = "composite",
    .build = build_composite,
    .samples =
        [](DType dt) {
          return std::vector<OpSample>{
              {"same shape", {rnd({3, 4}, dt, 1), rnd({3, 4}, dt, 2), rnd({3, 4}, dt, 3), rnd({3, 4}, dt, 4)}},
              {"row broadcast", {rnd({3, 4}, dt, 5), rnd({1, 4}, dt, 6), rnd({3, 4}, dt, 7), rnd({3, 1}, dt, 8)}},
              {"strided",
               {random_strided({5, 3}, dt, -1, 1, 9), rnd({5, 3}, dt, 10), random_strided({5, 3}, dt, -1, 1, 11),
                rnd({5, 3}, dt, 12).transpose().transpose()}},
              {"zero size", {rnd({0, 3}, dt, 13), rnd({0, 3}, dt, 14), rnd({0, 3}, dt, 15), rnd({0, 3}, dt, 16)}},
              {"several tiles",
               {rnd({2, 2500}, dt, 17), rnd({2, 2500}, dt, 18), rnd({1, 2500}, dt, 19), rnd({2, 1}, dt, 20)},
               false},
              {"threads",
               {rnd({250001}, dt, 21), rnd({250001}, dt, 22), rnd({250001}, dt, 23), rnd({1}, dt, 24)},
               false},
          };
        },
    .dtypes = testing::kFloatTypes,
});

/// Two outputs sharing mul(i0, i1): tanh(i0 * i1) and exp(i0 * i1) + i2 (output 1 is returned).
Var build_multi(const std::vector<Var>& v) {
  using S = Composite::Step;
  std::vector<S> steps{
      {ScalarOpKind::Mul, {0, 1}}, {ScalarOpKind::Tanh, {3}}, {ScalarOpKind::Exp, {3}}, {ScalarOpKind::Add, {5, 2}}};
  return apply_op(std::make_shared<MultiComposite>(3, v[0]->dtype(), steps, std::vector<int>{4, 6}), v)[1];
}

HYP_OPINFO({
    .name = "multi_composite",
    .build = build_multi,
    .samples =
        [](DType dt) {
          return std::vector<OpSample>{
              {"same shape", {rnd({3, 4}, dt, 1), rnd({3, 4}, dt, 2), rnd({3, 4}, dt, 3)}},
              {"broadcast", {rnd({3, 4}, dt, 4), rnd({1, 4}, dt, 5), rnd({3, 1}, dt, 6)}},
              {"strided", {random_strided({5, 3}, dt, -1, 1, 7), rnd({3, 5}, dt, 8).transpose(), rnd({5, 3}, dt, 9)}},
              {"zero size", {rnd({0, 3}, dt, 10), rnd({0, 3}, dt, 11), rnd({0, 3}, dt, 12)}},
              {"several tiles", {rnd({2, 2500}, dt, 13), rnd({2, 2500}, dt, 14), rnd({1, 2500}, dt, 15)}, false},
              {"threads", {rnd({250001}, dt, 16), rnd({250001}, dt, 17), rnd({1}, dt, 18)}, false},
          };
        },
    .dtypes = testing::kFloatTypes,
});

int count_ops(const Function& f, const std::string& needle) {
  int c = 0;
  for (const auto& n : f.toposort()) c += n->op->name().find(needle) != std::string::npos;
  return c;
}

TEST(Fusion, ChainBecomesOneComposite) {
  std::vector<Var> v;
  for (const char* n : {"a", "b", "c", "d"}) v.push_back(variable(vector_type(DType::Float32), n));
  Var y = tanh(v[0] * v[1] + v[2]) - exp(v[3]);
  Function f = function({v[0], v[1], v[2], v[3]}, {y});
  ASSERT_EQ(f.toposort().size(), 1u) << f.debugprint();
  EXPECT_EQ(f.toposort()[0]->op->name(), "Elemwise{Composite{sub(tanh(add(mul(i0, i1), i2)), exp(i3))}}");
  std::vector<NDArray> args;
  for (int i = 0; i < 4; ++i) args.push_back(rnd({5000}, DType::Float32, 40 + i));
  FunctionOptions none;
  none.mode = "NONE";
  Function g = function({v[0], v[1], v[2], v[3]}, {y}, none);
  EXPECT_ALLCLOSE(f(args)[0], g(args)[0], 1e-5, 1e-6);
}

// A fused loop's outputs are laid out as its inputs agree to (Fortran-ordered or transposed
// inputs: the same order, walked in memory order), the values as the reference's.
TEST(Fusion, OutputsFollowTheInputsLayout) {
  Var x = variable(matrix_type(DType::Float32), "x"), y = variable(matrix_type(DType::Float32), "y");
  Var z = tanh(x * y + 1.0f), w = exp(x) - y;
  Function f = function({x, y}, {z, w});
  ASSERT_EQ(count_ops(f, "Composite"), 1) << f.debugprint();
  FunctionOptions none;
  none.mode = "NONE";
  none.backend = kReferenceBackend;
  Function g = function({x, y}, {z, w}, none);
  const NDArray ft = rnd({300, 200}, DType::Float32, 1).transpose();  // Fortran-ordered (200, 300)
  const NDArray ft2 = rnd({300, 200}, DType::Float32, 2).transpose();
  const NDArray c = rnd({200, 300}, DType::Float32, 3);
  const long saved = config().openmp_elemwise_minsize;
  for (long minsize : {saved, 64L}) {
    config().openmp_elemwise_minsize = minsize;
    for (const auto& [a, b, fortran] : std::vector<std::tuple<NDArray, NDArray, bool>>{
             {ft, ft2, true}, {c, c, false}, {ft, c, false}, {ft, ft2, true}}) {
      auto r = f({a, b});
      auto e = g({a, b});
      for (int k = 0; k < 2; ++k) {
        EXPECT_ALLCLOSE(r[k], e[k], 1e-5, 1e-6);
        EXPECT_EQ(r[k].is_f_contiguous() && !r[k].is_c_contiguous(), fortran) << r[k].strides().str();
      }
    }
  }
  config().openmp_elemwise_minsize = saved;
}

TEST(Fusion, SharedIntermediatesAndOtherOpsBoundTheGroups) {
  Var x = variable(matrix_type(DType::Float64), "x");
  Var w = variable(matrix_type(DType::Float64), "w");
  Var b = variable(vector_type(DType::Float64), "b");
  // A layer: dot stays, bias add + sigmoid fuse.
  Var h = sigmoid(dot(x, w) + b);
  // e is read twice, both times inside the group: it is computed once per tile, inside it.
  Var e = exp(x);
  Var z = e * 2.0 + e * 3.0;
  Function f = function({x, w, b}, {h, z});
  EXPECT_EQ(count_ops(f, "dot"), 1) << f.debugprint();
  EXPECT_EQ(count_ops(f, "Composite"), 2) << f.debugprint();
  EXPECT_EQ(count_ops(f, "Elemwise{exp"), 0) << f.debugprint();
  FunctionOptions none;
  none.mode = "NONE";
  none.backend = kReferenceBackend;
  Function g = function({x, w, b}, {h, z}, none);
  std::vector<NDArray> args{rnd({4, 3}, DType::Float64, 1), rnd({3, 5}, DType::Float64, 2),
                            rnd({5}, DType::Float64, 3)};
  auto r1 = f(args), r2 = g(args);
  EXPECT_ALLCLOSE(r1[0], r2[0]);
  EXPECT_ALLCLOSE(r1[1], r2[1]);
}

TEST(Fusion, MixedDtypesAndExcludingFusion) {
  Var x = variable(vector_type(DType::Float32), "x");
  Var i = variable(vector_type(DType::Int32), "i");
  Var y = exp(x) * cast(i, DType::Float32) + 1.0f;
  Function f = function({x, i}, {y});
  EXPECT_EQ(count_ops(f, "Composite"), 1) << f.debugprint();
  auto r = f({make_array({0, 1}, {2}, DType::Float32), make_array({2, 3}, {2}, DType::Int32)});
  EXPECT_NEAR(r[0].get_flat(1), 3 * std::exp(1.0) + 1, 1e-5);
  Config saved = config();
  config().optimizer_excluding = "fusion";
  Function g = function({x, i}, {y});
  config() = saved;
  EXPECT_EQ(count_ops(g, "Composite"), 0);
}

}  // namespace
}  // namespace hypatia

namespace hypatia {
namespace {

TEST(Inplace, ElementwiseOutputsReuseDeadIntermediates) {
  Var x = variable(matrix_type(DType::Float64), "x");
  Var w = variable(matrix_type(DType::Float64), "w");
  Var b = variable(vector_type(DType::Float64), "b");
  Var d = dot(x, w);
  Var h = sigmoid(d + b);  // fused; d is dead after it: overwritten in place
  Var e = exp(dot(w, x));  // a lone Elemwise on a dead dot output: in place too
  Function f = function({x, w, b}, {h, e});
  EXPECT_EQ(count_ops(f, "[(0, 0)]"), 1) << f.debugprint();
  EXPECT_EQ(count_ops(f, "Elemwise{exp,inplace}"), 1) << f.debugprint();
  // d read twice: neither reader may destroy it.
  Function g = function({x, w, b}, {sigmoid(d + b), d * 2.0});
  EXPECT_EQ(count_ops(g, ",inplace}"), 0) << g.debugprint();
  EXPECT_EQ(count_ops(g, "[(0,"), 0) << g.debugprint();
  FunctionOptions none;
  none.mode = "NONE";
  none.backend = kReferenceBackend;
  std::vector<NDArray> args{rnd({3, 3}, DType::Float64, 1), rnd({3, 3}, DType::Float64, 2),
                            rnd({3}, DType::Float64, 3)};
  for (int rep = 0; rep < 2; ++rep) {  // the second call reuses buffers
    auto r1 = f(args);
    auto r2 = function({x, w, b}, {h, e}, none)(args);
    EXPECT_ALLCLOSE(r1[0], r2[0]);
    EXPECT_ALLCLOSE(r1[1], r2[1]);
    auto g1 = g(args);
    auto g2 = function({x, w, b}, {sigmoid(d + b), d * 2.0}, none)(args);
    EXPECT_ALLCLOSE(g1[0], g2[0]);
    EXPECT_ALLCLOSE(g1[1], g2[1]);
  }
  // Inputs are never overwritten.
  NDArray x0 = args[0].copy();
  function({x}, {exp(x) * 2.0 + 1.0})({args[0]});
  EXPECT_ALLCLOSE(args[0], x0);
}

}  // namespace
}  // namespace hypatia

namespace hypatia {
namespace {

Function compile_none(std::vector<In> ins, std::vector<Out> outs) {
  FunctionOptions none;
  none.mode = "NONE";
  return function(std::move(ins), std::move(outs), none);
}

void expect_same(Function& f, Function& g, const std::vector<NDArray>& args, double rtol = 1e-5, double atol = 1e-6) {
  auto r1 = f(args), r2 = g(args);
  ASSERT_EQ(r1.size(), r2.size());
  for (size_t k = 0; k < r1.size(); ++k) EXPECT_ALLCLOSE(r1[k], r2[k], rtol, atol) << "output " << k;
}

TEST(FusionMulti, OutputsSharingAnIntermediateBecomeOneNode) {
  Var a = variable(matrix_type(DType::Float32), "a");
  Var b = variable(matrix_type(DType::Float32), "b");
  Var c = variable(row_type(DType::Float32), "c");
  Var m = a * b;
  std::vector<Out> outs{tanh(m), exp(m) + c};
  Function f = function({a, b, c}, outs);
  ASSERT_EQ(f.toposort().size(), 1u) << f.debugprint();
  EXPECT_EQ(f.toposort()[0]->op->name(), "Elemwise{Composite{tanh(mul(i0, i1)), add(exp(mul(i0, i1)), i2)}}");
  EXPECT_EQ(f.toposort()[0]->op->destroy_map().size(), 0u);
  Function g = compile_none({a, b, c}, outs);
  for (Shape s : {Shape{3, 4}, Shape{0, 4}, Shape{2, 3000}, Shape{500, 600}}) {
    SCOPED_TRACE(s.str());
    expect_same(f, g, {rnd(s, DType::Float32, 1), rnd(s, DType::Float32, 2), rnd({1, s[1]}, DType::Float32, 3)});
  }
  expect_same(f, g,
              {random_strided({40, 30}, DType::Float32, -1, 1, 4), rnd({30, 40}, DType::Float32, 5).transpose(),
               rnd({1, 30}, DType::Float32, 6)});
}

TEST(FusionMulti, IntermediateReadByANonFusibleNodeIsAnOutput) {
  Var a = variable(matrix_type(DType::Float64), "a");
  Var b = variable(matrix_type(DType::Float64), "b");
  Var w = variable(matrix_type(DType::Float64), "w");
  Var h = a * b + 1.0;
  std::vector<Out> outs{exp(h) * 2.0, dot(h, w)};
  Function f = function({a, b, w}, outs);
  EXPECT_EQ(f.toposort().size(), 2u) << f.debugprint();
  EXPECT_EQ(count_ops(f, "Elemwise{Composite{add(mul(i0, i1), i2), mul(exp(add(mul(i0, i1), i2)), i3)}}"), 1)
      << f.debugprint();
  Function g = compile_none({a, b, w}, outs);
  expect_same(f, g, {rnd({5, 4}, DType::Float64, 1), rnd({5, 4}, DType::Float64, 2), rnd({4, 3}, DType::Float64, 3)});
}

TEST(FusionMulti, SiblingsReadingOneInputAreComputedTogether) {
  Var x = variable(matrix_type(DType::Float64), "x");
  Var y = variable(matrix_type(DType::Float64), "y");
  std::vector<Out> outs{tanh(x), exp(x) * y, sqr(x)};
  Function f = function({x, y}, outs);
  ASSERT_EQ(f.toposort().size(), 1u) << f.debugprint();
  EXPECT_EQ(f.toposort()[0]->nout(), 3);
  Function g = compile_none({x, y}, outs);
  expect_same(f, g, {rnd({7, 9}, DType::Float64, 1), rnd({7, 9}, DType::Float64, 2)});
}

TEST(FusionMulti, BoundedToFourOutputsAndOneShape) {
  Var x = variable(vector_type(DType::Float64), "x");
  std::vector<Out> many{tanh(x), exp(x), sqr(x), sin(x), cos(x), abs(x)};
  Function f = function({x}, many);
  int most = 0;
  for (const auto& n : f.toposort()) most = std::max(most, n->nout());
  EXPECT_LE(most, 4) << f.debugprint();
  EXPECT_LT(f.toposort().size(), 6u) << f.debugprint();
  Function g = compile_none({x}, many);
  expect_same(f, g, {rnd({1000}, DType::Float64, 1)});
  // One type, unrelated shapes: m * r and z * r (r a row) may have different numbers of rows, so
  // they are not computed by one node.
  Var m = variable(matrix_type(DType::Float64), "m");
  Var z = variable(matrix_type(DType::Float64), "z");
  Var r = variable(row_type(DType::Float64), "r");
  std::vector<Out> two{tanh(m * r), exp(z * r)};
  Function f2 = function({m, z, r}, two);
  for (const auto& n : f2.toposort()) EXPECT_EQ(n->nout(), 1) << f2.debugprint();
  auto out = f2({rnd({2, 3}, DType::Float64, 1), rnd({5, 3}, DType::Float64, 2), rnd({1, 3}, DType::Float64, 3)});
  EXPECT_EQ(out[0].shape(), (Shape{2, 3}));
  EXPECT_EQ(out[1].shape(), (Shape{5, 3}));
}

TEST(FusionMulti, NoCycleThroughAnOutsideNode) {
  // m feeds exp(m) -> dot -> add(., m): fusing exp(m) with add(., m) would need the dot's result
  // before computing its input.
  Var a = variable(matrix_type(DType::Float64), "a");
  Var b = variable(matrix_type(DType::Float64), "b");
  Var w = variable(matrix_type(DType::Float64), "w");
  Var m = a * b;
  Var y = tanh(dot(exp(m), w) + m);
  Function f = function({a, b, w}, {y});
  Function g = compile_none({a, b, w}, {y});
  expect_same(f, g, {rnd({4, 4}, DType::Float64, 1), rnd({4, 4}, DType::Float64, 2), rnd({4, 4}, DType::Float64, 3)});
}

TEST(FusionMulti, InplaceSkipsMultiOutputNodes) {
  Var x = variable(matrix_type(DType::Float64), "x");
  Var w = variable(matrix_type(DType::Float64), "w");
  Var d = dot(x, w);  // a dead intermediate after its readers
  std::vector<Out> outs{tanh(d), exp(d) * 2.0};
  Function f = function({x, w}, outs);
  EXPECT_EQ(count_ops(f, "[(0,"), 0) << f.debugprint();
  Function g = compile_none({x, w}, outs);
  std::vector<NDArray> args{rnd({5, 5}, DType::Float64, 1), rnd({5, 5}, DType::Float64, 2)};
  for (int rep = 0; rep < 3; ++rep) expect_same(f, g, args);
}

TEST(FusionMulti, GradientOfAFusedGraph) {
  Var x = variable(matrix_type(DType::Float64), "x");
  Var w = variable(vector_type(DType::Float64), "w");
  Var h = tanh(x * w);
  Var cost = sum(sqr(h)) + sum(exp(h) * w);
  std::vector<Var> g = grad(cost, {x, w});
  std::vector<Out> outs{cost, h, g[0], g[1]};
  Function f = function({x, w}, outs);
  Function ref = compile_none({x, w}, outs);
  expect_same(f, ref, {rnd({6, 5}, DType::Float64, 1), rnd({5}, DType::Float64, 2)}, 1e-10, 1e-10);
  // The multi-output op's own gradient, through both outputs.
  verify_grad(
      [](const std::vector<Var>& v) {
        using S = Composite::Step;
        std::vector<S> steps{{ScalarOpKind::Mul, {0, 1}}, {ScalarOpKind::Tanh, {2}}, {ScalarOpKind::Exp, {2}}};
        auto o = apply_op(std::make_shared<MultiComposite>(2, DType::Float64, steps, std::vector<int>{3, 4}), v);
        return o[0] * 2.0 + o[1];
      },
      {rnd({3, 4}, DType::Float64, 3), rnd({3, 4}, DType::Float64, 4)});
}

TEST(Fusion, RopOfFusedOpsGoesThroughTheirUnfusedGraphs) {
  // Rop of each fused op against Rop of the same program written as Elemwise nodes, and against
  // a central difference along the eval points.
  using S = Composite::Step;
  std::vector<S> steps{{ScalarOpKind::Mul, {0, 1}}, {ScalarOpKind::Tanh, {2}}, {ScalarOpKind::Exp, {2}}};
  Var x = variable(matrix_type(DType::Float64), "x"), w = variable(matrix_type(DType::Float64), "w");
  Var ex = variable(matrix_type(DType::Float64), "ex"), ew = variable(matrix_type(DType::Float64), "ew");
  const std::vector<Var> in{x, w};
  auto composite = std::make_shared<Composite>(2, DType::Float64, std::vector<S>(steps.begin(), steps.end() - 1));
  auto multi = std::make_shared<MultiComposite>(2, DType::Float64, steps, std::vector<int>{3, 4});
  auto reduce = std::make_shared<CompositeReduce>(2, DType::Float64, std::vector<S>(steps.begin(), steps.end() - 1),
                                                  ReduceKind::Sum, std::vector<int>{1}, DType::Float64);
  std::vector<Var> fused = apply_op(multi, in);
  fused.insert(fused.begin(), apply_op1(composite, in));
  fused.push_back(apply_op1(reduce, in));
  const std::vector<Var> vals = multi->build(in);
  const std::vector<Var> plain{vals[3], vals[3], vals[4], sum(vals[3], std::vector<int>{1})};
  std::vector<Out> outs;
  for (const Var& r : Rop(fused, {x, w}, {ex, ew})) outs.push_back(r);
  for (const Var& r : Rop(plain, {x, w}, {ex, ew})) outs.push_back(r);
  Function f = compile_none({x, w, ex, ew}, outs);
  const NDArray xv = rnd({3, 4}, DType::Float64, 1), wv = rnd({3, 4}, DType::Float64, 2);
  const NDArray exv = rnd({3, 4}, DType::Float64, 3), ewv = rnd({3, 4}, DType::Float64, 4);
  std::vector<NDArray> r = f({xv, wv, exv, ewv});
  ASSERT_EQ(r.size(), 8u);
  for (int k = 0; k < 4; ++k) EXPECT_ALLCLOSE(r[k], r[k + 4], 1e-12, 1e-12) << "output " << k;
  // d/dt tanh((x + t ex) * (w + t ew)) at t = 0, by central difference.
  Function value = compile_none({x, w}, {fused[0]});
  const double h = 1e-6;
  NDArray xp = xv.copy(), xm = xv.copy(), wp = wv.copy(), wm = wv.copy();
  for (int64_t i = 0; i < 12; ++i) {
    xp.data<double>()[i] += h * exv.data<double>()[i];
    xm.data<double>()[i] -= h * exv.data<double>()[i];
    wp.data<double>()[i] += h * ewv.data<double>()[i];
    wm.data<double>()[i] -= h * ewv.data<double>()[i];
  }
  NDArray up = value({xp, wp})[0], um = value({xm, wm})[0], fd = NDArray::empty({3, 4}, DType::Float64);
  for (int64_t i = 0; i < 12; ++i) fd.data<double>()[i] = (up.data<double>()[i] - um.data<double>()[i]) / (2 * h);
  EXPECT_ALLCLOSE(r[0], fd, 1e-6, 1e-8);
}

}  // namespace
}  // namespace hypatia
