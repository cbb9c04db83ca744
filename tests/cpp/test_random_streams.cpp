// RandomStreams (Theano's shared_randomstreams): numpy's RandomState numbers (a few values computed
// by numpy; the Python suite compares every distribution against numpy itself), the seed
// derivation, updates and reseeding, parameter checks before any draw, size=None broadcasting, and
// OpInfo entries for RandomFunction.
#include "hypatia/ops/random_streams.h"
#include "test_util.h"

namespace hypatia {
namespace {
using testing::make_array;
using testing::OpSample;

NDArray int_vector(std::vector<double> v) { return make_array(v, {static_cast<int64_t>(v.size())}, DType::Int64); }

HYP_OPINFO({
    .name = "random_function_normal",
    .build =
        [](const std::vector<Var>& v) {
          return random_draw(RandomDist::Normal, v[0], constant(int_vector({2, 3})), {v[1], v[2]}, DType::Float64)
              .second;
        },
    .samples =
        [](DType dt) {
          return std::vector<OpSample>{
              {"broadcast avg",
               {random_state_from_seed(5), make_array({0, 10, 20}, {3}, dt), make_array({2}, {}, dt)}}};
        },
    .dtypes = {DType::Float64},
    .differentiable = false,
});

TEST(RandomStreams, DrawsAreNumpysRandomState) {
  // numpy: s = RandomState(2024).randint(2**30) = 378019464; RandomState(s).uniform(0, 1, 3), then
  // .normal(0, 1, 3) on the same state.
  RandomStreams srng(2024);
  Var state = srng.new_state();
  auto [s1, u] = random_draw(RandomDist::Uniform, state, constant(int_vector({3})),
                             {constant(0.0, DType::Float64), constant(1.0, DType::Float64)}, DType::Float64);
  auto [s2, z] = random_draw(RandomDist::Normal, s1, constant(int_vector({3})),
                             {constant(0.0, DType::Float64), constant(1.0, DType::Float64)}, DType::Float64);
  NDArray uv = eval(u), zv = eval(z);
  EXPECT_EQ(uv.data<double>()[0], 0x1.01c8da18e8729p-1);
  EXPECT_EQ(uv.data<double>()[1], 0x1.21163a9634cebp-1);
  EXPECT_EQ(uv.data<double>()[2], 0x1.61c33a4200c60p-2);
  EXPECT_EQ(zv.data<double>()[0], 0x1.0ba8549729412p+0);
  EXPECT_EQ(zv.data<double>()[2], -0x1.315d8b64110c1p+1);
  // RandomState(0).random_sample(2)
  NDArray st0 = random_state_from_seed(0);
  Var c = constant(st0);
  auto [n0, r0] = random_draw(RandomDist::Uniform, c, constant(int_vector({2})),
                              {constant(0.0, DType::Float64), constant(1.0, DType::Float64)}, DType::Float64);
  NDArray rv = eval(r0);
  EXPECT_EQ(rv.data<double>()[0], 0x1.18fe1565f12a8p-1);
  EXPECT_EQ(rv.data<double>()[1], 0x1.6e2d4cf608733p-1);
}

TEST(RandomStreams, UpdatesAdvanceAndSeedResets) {
  RandomStreams srng(11);
  Var u = srng.uniform(constant(int_vector({5})), constant(0.0, DType::Float64), constant(1.0, DType::Float64),
                       DType::Float64);
  Var k = srng.random_integers(constant(int_vector({5})), int_constant(0), int_constant(9));
  FunctionOptions o;
  o.updates = srng.state_updates();
  Function f = function({}, {u, k}, o);
  auto a = f({});
  auto b = f({});
  EXPECT_NE(testing::compare_arrays(a[0], b[0], 0, 0), "");
  srng.seed();
  auto c = f({});
  EXPECT_ALLCLOSE(c[0], a[0], 0, 0);
  EXPECT_ALLCLOSE(c[1], a[1], 0, 0);
  for (int64_t i = 0; i < 5; ++i) {
    EXPECT_GE(c[1].get_flat(i), 0);
    EXPECT_LE(c[1].get_flat(i), 9);
  }
}

TEST(RandomStreams, SizeNoneTakesTheParametersShape) {
  RandomStreams srng(3);
  Var lam = vector("lam", DType::Float64);
  Var p = srng.poisson(nullptr, lam);
  EXPECT_EQ(p->ndim(), 1);
  NDArray v = eval(p, {{lam, make_array({1, 50, 1000}, {3}, DType::Float64)}});
  ASSERT_EQ(v.shape(), (Shape{3}));
  EXPECT_GT(v.get_flat(2), 800);
  Var perm = srng.permutation(nullptr, int_constant(6));
  NDArray pv = eval(perm);
  ASSERT_EQ(pv.shape(), (Shape{6}));
  std::vector<int64_t> seen(6, 0);
  for (int64_t i = 0; i < 6; ++i) ++seen[pv.get_flat_int(i)];
  for (int64_t s : seen) EXPECT_EQ(s, 1);
}

TEST(RandomStreams, ErrorsComeBeforeAnyDraw) {
  RandomStreams srng(1);
  Var sd = scalar("sd", DType::Float64);
  Var n = srng.normal(constant(int_vector({3})), constant(0.0, DType::Float64), sd, DType::Float64);
  FunctionOptions o;
  o.updates = srng.state_updates();
  Function f = function({In(sd)}, {n}, o);
  const Var& state = srng.state_updates()[0].first;
  NDArray before = state->cell->load().copy();
  EXPECT_ERROR(ValueError, f({make_array({-1}, {}, DType::Float64)}), "scale < 0");
  EXPECT_ALLCLOSE(state->cell->load(), before, 0, 0);
  EXPECT_ERROR(ValueError,
               srng.uniform(constant(int_vector({2})), constant(make_array({0, 0, 0}, {1, 3}, DType::Float64)),
                            constant(1.0, DType::Float64), DType::Float64),
               "ndim should be at least");
  Var bad = srng.uniform(constant(int_vector({2, 3})), constant(make_array({0, 0, 0, 0}, {4}, DType::Float64)),
                         constant(1.0, DType::Float64), DType::Float64);
  EXPECT_ERROR(ValueError, eval(bad), "shape mismatch");
  EXPECT_ERROR(ValueError, eval(srng.choice(constant(int_vector({5})), int_constant(3), false, nullptr)),
               "RandomFunction{choice}");
}

}  // namespace
}  // namespace hypatia
