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
               {rnd({2, 2500}, dt, 17), rnd({2, 2500}, dt, 18), rnd({1, 2500}, dt, 19), rnd({2, 1}, dt, 20)}},
              {"threads", {rnd({250001}, dt, 21), rnd({250001}, dt, 22), rnd({250001}, dt, 23), rnd({1}, dt, 24)}},
          };
        },
    .dtypes = testing::kFloatTypes,
    .differentiable = false,
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

TEST(Fusion, SharedIntermediatesAndOtherOpsBoundTheGroups) {
  Var x = variable(matrix_type(DType::Float64), "x");
  Var w = variable(matrix_type(DType::Float64), "w");
  Var b = variable(vector_type(DType::Float64), "b");
  // A layer: dot stays, bias add + sigmoid fuse.
  Var h = sigmoid(dot(x, w) + b);
  // e is read twice: it is computed once, outside the fused nodes that read it.
  Var e = exp(x);
  Var z = e * 2.0 + e * 3.0;
  Function f = function({x, w, b}, {h, z});
  EXPECT_EQ(count_ops(f, "dot"), 1) << f.debugprint();
  EXPECT_EQ(count_ops(f, "Composite"), 2) << f.debugprint();
  EXPECT_EQ(count_ops(f, "Elemwise{exp"), 1) << f.debugprint();
  FunctionOptions none;
  none.mode = "NONE";
  none.backend = Backend::Reference;
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
  none.backend = Backend::Reference;
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
