// Random numbers: MRG31k3p against draws made by Theano 1.0.5 (../shared/fixtures/mrg; the Python
// suite checks every fixture array, these are a few of their values), the stream layout, state
// updates through functions, the reference and CPU kernels giving the same bits at any thread count,
// the from-uniform ops, errors, and that random nodes are never merged or folded.
#include <hwy/targets.h>

#include <cmath>
#include <numeric>
#include <tuple>

#include "hypatia/backends/cpu/mrg_simd.h"
#include "hypatia/backends/mrg_generate.h"
#include "hypatia/ops/random.h"
#include "test_util.h"

namespace hypatia {
namespace {
using testing::make_array;
using testing::OpInfo;
using testing::OpSample;

NDArray states(int64_t n, int64_t seed = 1234) {
  return mrg_substream_states(
      MrgState{int32_t(seed), int32_t(seed), int32_t(seed), int32_t(seed), int32_t(seed), int32_t(seed)}, n);
}

NDArray int_vector(std::vector<double> v) { return make_array(v, {static_cast<int64_t>(v.size())}, DType::Int64); }

HYP_OPINFO({
    .name = "mrg_uniform",
    .build = [](const std::vector<Var>& v) { return mrg_uniform(v[0], v[1], DType::Float32, 2).second; },
    .samples =
        [](DType) {
          return std::vector<OpSample>{{"3 streams, (4, 5)", {states(3), int_vector({4, 5})}},
                                       {"7 streams, (2, 3)", {states(7, 99), int_vector({2, 3})}},
                                       {"zero-size (0, 5)", {states(2), int_vector({0, 5})}}};
        },
    .dtypes = {DType::Int32},
    .differentiable = false,
});
HYP_OPINFO({
    .name = "mrg_uniform_f64",
    .build = [](const std::vector<Var>& v) { return mrg_uniform(v[0], v[1], DType::Float64, 1).second; },
    .samples =
        [](DType) {
          return std::vector<OpSample>{{"5 streams, (11,)", {states(5), int_vector({11})}}};
        },
    .dtypes = {DType::Int32},
    .differentiable = false,
});
HYP_OPINFO({
    .name = "multinomial_from_uniform",
    .build =
        [](const std::vector<Var>& v) {
          return apply_op1(std::make_shared<MultinomialFromUniform>(DType::Float32), {v[0], v[1], v[2]});
        },
    .samples =
        [](DType dt) {
          return std::vector<OpSample>{
              {"2 rows, n = 2",
               {make_array({0.1, 0.2, 0.7, 0.5, 0.25, 0.25}, {2, 3}, dt), make_array({0.05, 0.9, 0.95, 0.3}, {4}, dt),
                make_array({2}, {}, DType::Int64)}},
              {"no rows", {NDArray::zeros({0, 3}, dt), NDArray::zeros({0}, dt), make_array({3}, {}, DType::Int64)}}};
        },
    .dtypes = {DType::Float32, DType::Float64},
    .differentiable = false,
});
HYP_OPINFO({
    .name = "choice_from_uniform",
    .build =
        [](const std::vector<Var>& v) {
          return apply_op1(std::make_shared<ChoiceFromUniform>(DType::Int64, false), {v[0], v[1], v[2]});
        },
    .samples =
        [](DType dt) {
          return std::vector<OpSample>{
              {"2 rows, n = 2",
               {make_array({0.1, 0.2, 0.7, 0.5, 0.25, 0.25}, {2, 3}, dt), make_array({0.05, 0.9, 0.95, 0.3}, {4}, dt),
                make_array({2}, {}, DType::Int64)}}};
        },
    .dtypes = {DType::Float32, DType::Float64},
    .differentiable = false,
});

/// A function drawing `sample` and advancing every stream of `streams`.
Function draw_function(const MRGRandomStreams& streams, const Var& sample) {
  FunctionOptions o;
  o.updates = streams.updates();
  return function({}, {sample}, o);
}

TEST(MRG, UniformFloat32IsTheanos) {
  // Theano 1.0.5: MRG_RandomStreams(1234).uniform(size=(1000,), dtype='float32'), called twice
  // (166 streams: 1000 // 6).
  MRGRandomStreams srng(1234);
  Var u = srng.uniform(constant(int_vector({1000})), constant(0.0, DType::Float32), constant(1.0, DType::Float32),
                       DType::Float32, mrg_guess_n_streams({1000}));
  EXPECT_EQ(srng.state_updates()[0].n_streams, 166);
  Function f = draw_function(srng, u);
  NDArray a = f({})[0], b = f({})[0];
  const float* x = a.data<float>();
  EXPECT_EQ(x[0], 0x1.7d8346p-2f);
  EXPECT_EQ(x[1], 0x1.50bc30p-1f);
  EXPECT_EQ(x[165], 0x1.a70aeep-2f);
  EXPECT_EQ(x[166], 0x1.711d8cp-2f);  // stream 0's second draw
  EXPECT_EQ(x[999], 0x1.52caccp-4f);
  const float* y = b.data<float>();  // the state advanced between the calls
  EXPECT_EQ(y[0], 0x1.73252ap-2f);
  EXPECT_EQ(y[1], 0x1.26cf66p-2f);
  EXPECT_EQ(y[999], 0x1.3b1d88p-1f);
}

TEST(MRG, UniformFloat64WithBoundsIsTheanos) {
  // Theano 1.0.5: MRG_RandomStreams(42).uniform(size=(3, 4, 5), low=-2, high=3, dtype='float64').
  MRGRandomStreams srng(42);
  Var u = srng.uniform(constant(int_vector({3, 4, 5})), constant(-2.0, DType::Float64), constant(3.0, DType::Float64),
                       DType::Float64, mrg_guess_n_streams({3, 4, 5}));
  Function f = draw_function(srng, u);
  NDArray a = f({})[0], b = f({})[0];
  ASSERT_EQ(a.shape(), (Shape{3, 4, 5}));
  EXPECT_EQ(a.data<double>()[0], -0x1.98a32ep+0);
  EXPECT_EQ(a.data<double>()[1], 0x1.512103ecp+1);
  EXPECT_EQ(a.data<double>()[59], 0x1.64df6f4ap+1);
  EXPECT_EQ(b.data<double>()[0], -0x1.62034480p-2);
  EXPECT_EQ(b.data<double>()[59], 0x1.775d5cd0p+0);
}

TEST(MRG, StreamLayout) {
  // Row i of the substream states is row i-1 advanced 2^72 steps; the next random variable starts
  // 2^134 steps on; a draw from stream s advances only that stream.
  MrgState s{7, 7, 7, 7, 7, 7};
  NDArray st = mrg_substream_states(s, 3);
  MrgState r1 = mrg_jump_2p72(s);
  for (int j = 0; j < 6; ++j) {
    EXPECT_EQ(st.data<int32_t>()[j], 7);
    EXPECT_EQ(st.data<int32_t>()[6 + j], r1[j]);
    EXPECT_EQ(st.data<int32_t>()[12 + j], mrg_jump_2p72(r1)[j]);
  }
  MRGRandomStreams srng(7);
  srng.get_substream_rstates(3);
  EXPECT_EQ(srng.rstate(), mrg_jump_2p134(s));
  EXPECT_EQ(mrg_guess_n_streams({5}), 5);
  EXPECT_EQ(mrg_guess_n_streams({6, 7}), 7);
  EXPECT_EQ(mrg_guess_n_streams({1000, 1000}), kMrgDefaultStreams);
  EXPECT_EQ(mrg_guess_n_streams({int64_t{1} << 40, int64_t{1} << 40}), kMrgDefaultStreams);
}

TEST(MRG, CpuKernelMatchesReferenceAtEveryThreadCount) {
  // The CPU kernel splits the streams across threads: the same bits as the one-thread reference
  // for any split, and the same new states.
  Var rstate = variable(TensorType(DType::Int32, {false, false}), "rstate");
  // More draws than streams (several rounds, SIMD remainders), and fewer (some streams idle).
  for (auto [dt, n_streams, shape] : {std::tuple{DType::Float32, 97, std::vector<double>{301, 517}},
                                      std::tuple{DType::Float64, 97, std::vector<double>{301, 517}},
                                      std::tuple{DType::Float32, 4000, std::vector<double>{1001}}}) {
    auto [ns, u] = mrg_uniform(rstate, constant(int_vector(shape)), dt);
    NDArray st = states(n_streams, 5);
    Function ref = function({In(rstate)}, {Out(ns), Out(u)}, {.backend = std::string(kReferenceBackend)});
    auto want = ref({st});
    for (long minsize : {1L, 1L << 30}) {
      const long saved = config().openmp_elemwise_minsize;
      config().openmp_elemwise_minsize = minsize;
      Function cpu = function({In(rstate)}, {Out(ns), Out(u)});
      auto got = cpu({st});
      config().openmp_elemwise_minsize = saved;
      EXPECT_ALLCLOSE(got[0], want[0], 0, 0);
      EXPECT_ALLCLOSE(got[1], want[1], 0, 0);
    }
    // Every sample lies strictly inside (0, 1).
    for (int64_t i = 0; i < want[1].size(); ++i) {
      const double v = want[1].get_flat(i);
      ASSERT_GT(v, 0.0);
      ASSERT_LT(v, 1.0);
    }
  }
}

TEST(MRG, SimdRoundsMatchTheScalarStepOnEveryTarget) {
  // 1003 streams (a remainder for every vector length), 40 rounds, states spread over the whole
  // range (wrap-around in the sums), on every Highway target this CPU supports.
  NDArray st = states(1003, 123457);
  const int64_t m = 1003;
  std::vector<int32_t> aos(st.data<int32_t>(), st.data<int32_t>() + 6 * m);
  std::vector<int32_t> want_k(40 * m);
  for (int r = 0; r < 40; ++r)
    for (int64_t j = 0; j < m; ++j) want_k[r * m + j] = mrg::next(aos.data() + j * 6);
  const int64_t targets = hwy::SupportedTargets();
  for (int64_t t = 1; t != 0 && t <= targets; t <<= 1) {
    if (!(targets & t)) continue;
    hwy::SetSupportedTargetsForTest(t);
    SCOPED_TRACE(hwy::TargetName(t));
    std::vector<int32_t> soa(6 * m), k(m);
    int32_t* x[6];
    for (int w = 0; w < 6; ++w) x[w] = soa.data() + w * m;
    for (int64_t j = 0; j < m; ++j)
      for (int w = 0; w < 6; ++w) x[w][j] = st.data<int32_t>()[j * 6 + w];
    for (int r = 0; r < 40; ++r) {
      cpu::mrg_round(x, static_cast<size_t>(m), k.data());
      for (int64_t j = 0; j < m; ++j) ASSERT_EQ(k[j], want_k[r * m + j]) << "round " << r << " stream " << j;
    }
    for (int64_t j = 0; j < m; ++j)
      for (int w = 0; w < 6; ++w) ASSERT_EQ(x[w][j], aos[j * 6 + w]);
  }
  hwy::SetSupportedTargetsForTest(0);
}

TEST(MRG, StateAdvancesThroughUpdatesAndSeedResets) {
  MRGRandomStreams srng(555);
  Var a = srng.uniform(constant(int_vector({10})), constant(0.0, DType::Float32), constant(1.0, DType::Float32),
                       DType::Float32, mrg_guess_n_streams({10}));
  Var b = srng.normal(constant(int_vector({4, 4})), constant(0.0, DType::Float32), constant(1.0, DType::Float32),
                      DType::Float32);
  FunctionOptions o;
  o.updates = srng.updates();
  Function f = function({}, {a, b}, o);
  auto first = f({});
  auto second = f({});
  EXPECT_NE(testing::compare_arrays(first[0], second[0], 0, 0), "");
  srng.seed();
  auto again = f({});
  EXPECT_ALLCLOSE(again[0], first[0], 0, 0);
  EXPECT_ALLCLOSE(again[1], first[1], 0, 0);
  // Without the updates the state stays: the same draws every call.
  Function g = function({}, {a});
  EXPECT_ALLCLOSE(g({})[0], g({})[0], 0, 0);
}

TEST(MRG, NormalMomentsAndOddSizes) {
  MRGRandomStreams srng(3);
  Var n = srng.normal(constant(int_vector({20001})), constant(1.5, DType::Float64), constant(2.0, DType::Float64),
                      DType::Float64);
  NDArray v = draw_function(srng, n)({})[0];
  ASSERT_EQ(v.shape(), (Shape{20001}));
  double mean = 0, var = 0;
  for (int64_t i = 0; i < v.size(); ++i) mean += v.get_flat(i);
  mean /= static_cast<double>(v.size());
  for (int64_t i = 0; i < v.size(); ++i) var += (v.get_flat(i) - mean) * (v.get_flat(i) - mean);
  var /= static_cast<double>(v.size());
  EXPECT_NEAR(mean, 1.5, 0.05);
  EXPECT_NEAR(std::sqrt(var), 2.0, 0.05);
  // Truncated at 2 standard deviations: every value within avg +- 2 std.
  Var t = srng.normal(constant(int_vector({7, 3})), constant(0.0, DType::Float32), constant(1.0, DType::Float32),
                      DType::Float32, 0, true);
  NDArray tv = draw_function(srng, t)({})[0];
  ASSERT_EQ(tv.shape(), (Shape{7, 3}));
  for (int64_t i = 0; i < tv.size(); ++i) EXPECT_LE(std::abs(tv.get_flat(i)), 2.0);
}

TEST(MRG, MultinomialAndChoice) {
  // From uniforms given by hand: the first outcome whose cumulative probability exceeds u.
  Var p = matrix("p", DType::Float64), u = vector("u", DType::Float64);
  Var n = scalar("n", DType::Int64);
  Var m = apply_op1(std::make_shared<MultinomialFromUniform>(DType::Int64), {p, u, n});
  NDArray pv = make_array({0.1, 0.2, 0.7, 0.5, 0.25, 0.25}, {2, 3}, DType::Float64);
  NDArray got = eval(
      m,
      {{p, pv}, {u, make_array({0.05, 0.9, 0.95, 0.6}, {4}, DType::Float64)}, {n, make_array({2}, {}, DType::Int64)}});
  EXPECT_ALLCLOSE(got, make_array({1, 0, 1, 0, 1, 1}, {2, 3}, DType::Int64), 0, 0);
  Var c = apply_op1(std::make_shared<ChoiceFromUniform>(DType::Int64, false), {p, u, n});
  // Row 0: u = 0.05 picks 0; the row becomes (0, 2/9, 7/9) and u = 0.95 picks 2. Row 1: u = 0.9
  // picks 2; the row becomes (2/3, 1/3, 0) and u = 0.6 picks 0.
  NDArray cv = eval(
      c,
      {{p, pv}, {u, make_array({0.05, 0.9, 0.95, 0.6}, {4}, DType::Float64)}, {n, make_array({2}, {}, DType::Int64)}});
  EXPECT_ALLCLOSE(cv, make_array({0, 2, 2, 0}, {2, 2}, DType::Int64), 0, 0);
  EXPECT_ERROR(ValueError,
               eval(c, {{p, pv},
                        {u, make_array({0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1}, {8}, DType::Float64)},
                        {n, make_array({4}, {}, DType::Int64)}}),
               "without replacement 4 values from 3 outcomes");
  EXPECT_ERROR(ValueError,
               eval(m, {{p, pv}, {u, make_array({0.1}, {1}, DType::Float64)}, {n, make_array({2}, {}, DType::Int64)}}),
               "unis.shape[0] != pvals.shape[0] * n");
  // Draws through the streams: each row's counts sum to n.
  MRGRandomStreams srng(99);
  Var draws = srng.multinomial(constant(pv), int_constant(5), DType::Int64, DType::Float64);
  NDArray dv = draw_function(srng, draws)({})[0];
  EXPECT_EQ(dv.get_flat(0) + dv.get_flat(1) + dv.get_flat(2), 5);
  EXPECT_EQ(dv.get_flat(3) + dv.get_flat(4) + dv.get_flat(5), 5);
}

TEST(MRG, Errors) {
  EXPECT_ERROR(ValueError, MRGRandomStreams(0), "should not be 0");
  EXPECT_ERROR(ValueError, MRGRandomStreams(int64_t{kMrgM2}), "should be in [1, 2147462579)");
  EXPECT_ERROR(ValueError, MRGRandomStreams(std::vector<int64_t>{0, 0, 0, 1, 1, 1}), "first 3 values");
  EXPECT_ERROR(TypeError, MRGRandomStreams(std::vector<int64_t>{1, 2}), "1 integer or 6 integers");
  Var rstate = variable(TensorType(DType::Int32, {false, false}), "rstate");
  Var size = vector("size", DType::Int64);
  EXPECT_ERROR(ValueError, mrg_uniform(rstate, size, DType::Float32), "must be known when the graph is built");
  EXPECT_ERROR(TypeError, mrg_uniform(rstate, constant(int_vector({3})), DType::Int32), "float32 or float64");
  EXPECT_ERROR(TypeError, mrg_uniform(matrix("x", DType::Float32), constant(int_vector({3})), DType::Float32),
               "int32 matrix");
  Var len = scalar("len", DType::Int64);
  auto [ns, u] = mrg_uniform(rstate, make_vector({len}), DType::Float32);
  Function f = function({In(rstate), In(len)}, {u});
  EXPECT_ERROR(ValueError, f({NDArray::zeros({2, 5}, DType::Int32), make_array({3}, {}, DType::Int64)}), "6 columns");
  EXPECT_ERROR(ValueError, f({states(2), make_array({-3}, {}, DType::Int64)}), "negative dimension");
  EXPECT_ERROR(ValueError, f({states(2), make_array({3e9}, {}, DType::Int64)}), "2**31 - 1");
  // No gradient through a draw.
  MRGRandomStreams srng(1);
  Var low = scalar("low", DType::Float32);
  Var d = srng.uniform(constant(int_vector({3})), low, constant(1.0, DType::Float32), DType::Float32);
  EXPECT_NO_THROW(grad(sum(d), low));  // low enters through u * (high - low) + low, not the draw
}

TEST(MRG, RandomNodesAreNeitherMergedNorFolded) {
  // Two equal draws from one state stay two nodes (each a draw of its own), and a draw from a
  // constant state is not folded into a constant.
  NDArray st = states(4);
  Var c = constant(st);
  auto [ns1, u1] = mrg_uniform(c, constant(int_vector({8})), DType::Float32);
  auto [ns2, u2] = mrg_uniform(c, constant(int_vector({8})), DType::Float32);
  Function f = function({}, {u1, u2});
  int draws = 0;
  for (const auto& n : f.toposort()) draws += typeid(*n->op) == typeid(MRGUniform);
  EXPECT_EQ(draws, 2);
}

}  // namespace
}  // namespace hypatia
