// Indexing: OpInfo entries (basic slices, integer/boolean arrays, set/inc, take), exact values
// against hand-written numpy results, views, error paths and gradients.
#include <random>

#include "test_util.h"

namespace hypatia {
namespace {
using testing::make_array;
using testing::OpInfo;
using testing::OpSample;
using testing::random_array;
using testing::random_strided;

std::pair<double, double> range_of(DType dt) {
  if (is_unsigned_int(dt)) return {0, 9};
  if (is_integer(dt)) return {-5, 5};
  return {-1, 1};
}
NDArray rnd(const Shape& s, DType dt, uint64_t seed) {
  auto [lo, hi] = range_of(dt);
  return random_array(s, dt, lo, hi, seed);
}
NDArray rnd_strided(const Shape& s, DType dt, uint64_t seed) {
  auto [lo, hi] = range_of(dt);
  return random_strided(s, dt, lo, hi, seed);
}
NDArray ints(const std::vector<double>& v, const Shape& s) { return make_array(v, s, DType::Int64); }
NDArray ints(const std::vector<double>& v) { return ints(v, Shape{static_cast<int64_t>(v.size())}); }
NDArray bools(const std::vector<double>& v, const Shape& s) { return make_array(v, s, DType::Bool); }
NDArray f64(const std::vector<double>& v, const Shape& s) { return make_array(v, s, DType::Float64); }
NDArray iota(const Shape& s, DType dt = DType::Float64) {
  std::vector<double> v(s.prod());
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>(i);
  return make_array(v, s, dt);
}

// ------------------------------------------------------------------------------------------------
// OpInfo entries

std::vector<OpSample> matrix_samples(DType dt, uint64_t seed) {
  return {{"(4,5)", {rnd({4, 5}, dt, seed)}},
          {"strided (5,4)", {rnd_strided({5, 4}, dt, seed + 1)}},
          {"broadcastable (1,6)", {rnd({1, 6}, dt, seed + 2)}},
          {"zero-size (0,3)", {NDArray::zeros({0, 3}, dt)}}};
}

HYP_OPINFO({.name = "subtensor_slices",
            .build =
                [](const std::vector<Var>& x) {
                  return subtensor(x[0], {sl(1, -1), sl({}, {}, -2)});
                },
            .samples = [](DType dt) { return matrix_samples(dt, 1); },
            .dtypes = testing::kAllNumeric});

HYP_OPINFO({.name = "subtensor_int_and_newaxis",
            .build =
                [](const std::vector<Var>& x) {
                  return subtensor(x[0], {newaxis(), sl(1, 7, 2), -1});
                },
            .samples =
                [](DType dt) {
                  return std::vector<OpSample>{{"(4,5)", {rnd({4, 5}, dt, 5)}},
                                               {"strided (3,2)", {rnd_strided({3, 2}, dt, 6)}},
                                               {"(1,3)", {rnd({1, 3}, dt, 7)}}};
                },
            .dtypes = {DType::Bool, DType::Int32, DType::Float32, DType::Float64}});

HYP_OPINFO({.name = "subtensor_symbolic",
            .build =
                [](const std::vector<Var>& x) {
                  return subtensor(x[0], {x[1], sl(x[2], {}), ellipsis()});
                },
            .samples =
                [](DType dt) {
                  auto s = [](double v) { return NDArray::scalar(v, DType::Int32); };
                  return std::vector<OpSample>{{"3-d [1, 2:]", {rnd({3, 4, 2}, dt, 8), s(1), s(2)}},
                                               {"3-d [-1, -3:]", {rnd_strided({2, 5, 3}, dt, 9), s(-1), s(-3)}},
                                               {"3-d [0, 9:] (empty)", {rnd({2, 3, 2}, dt, 10), s(0), s(9)}},
                                               {"3-d [0, -9:]", {rnd({2, 3, 2}, dt, 11), s(0), s(-9)}}};
                },
            .dtypes = {DType::Int64, DType::Float32, DType::Float64}});

HYP_OPINFO({.name = "subtensor_0d_result",
            .build =
                [](const std::vector<Var>& x) {
                  return subtensor(x[0], {1, -2});
                },
            .samples =
                [](DType dt) {
                  return std::vector<OpSample>{{"(2,3)", {rnd({2, 3}, dt, 12)}},
                                               {"strided (3,3)", {rnd_strided({3, 3}, dt, 13)}}};
                },
            .dtypes = {DType::UInt8, DType::Float64}});

HYP_OPINFO({.name = "advanced_int_vector",
            .build = [](const std::vector<Var>& x) { return subtensor(x[0], {x[1]}); },
            .samples =
                [](DType dt) {
                  return std::vector<OpSample>{
                      {"(4,3)[[0,-1,2,0]]", {rnd({4, 3}, dt, 14), ints({0, -1, 2, 0})}},
                      {"strided (3,4)[[2,1]]", {rnd_strided({3, 4}, dt, 15), ints({2, 1})}},
                      {"vector (5)[[[1,4],[0,0]]]", {rnd({5}, dt, 16), ints({1, 4, 0, 0}, {2, 2})}},
                      {"(3,2)[[]]", {rnd({3, 2}, dt, 17), NDArray::zeros({0}, DType::Int64)}}};
                },
            .dtypes = testing::kAllNumeric});

HYP_OPINFO({.name = "advanced_mixed_adjacent",
            .build =
                [](const std::vector<Var>& x) {
                  return subtensor(x[0], {sl(1, {}), x[1]});
                },
            .samples =
                [](DType dt) {
                  return std::vector<OpSample>{
                      {"(3,4,2)[1:, [[3],[0]]]", {rnd({3, 4, 2}, dt, 18), ints({3, 0}, {2, 1})}},
                      {"strided (4,3)[1:, [2,2,-3]]", {rnd_strided({4, 3}, dt, 19), ints({2, 2, -3})}}};
                },
            .dtypes = {DType::Int32, DType::Float32, DType::Float64}});

HYP_OPINFO({.name = "advanced_nonadjacent_broadcast",
            .build =
                [](const std::vector<Var>& x) {
                  return subtensor(x[0], {x[1], all(), x[2]});
                },
            .samples =
                [](DType dt) {
                  return std::vector<OpSample>{
                      {"(3,2,4)[[[0],[2]], :, [1,3,3]]",
                       {rnd({3, 2, 4}, dt, 20), ints({0, 2}, {2, 1}), ints({1, 3, 3})}},
                      {"strided (2,3,2)[[1,0], :, [-1]]", {rnd_strided({2, 3, 2}, dt, 21), ints({1, 0}), ints({-1})}}};
                },
            .dtypes = {DType::Int64, DType::Float64}});

HYP_OPINFO({.name = "advanced_int_with_array",
            .build =
                [](const std::vector<Var>& x) {
                  return subtensor(x[0], {sl(), 1, x[1]});
                },
            .samples =
                [](DType dt) {
                  return std::vector<OpSample>{{"(2,3,4)[:, 1, [0,3]]", {rnd({2, 3, 4}, dt, 22), ints({0, 3})}}};
                },
            .dtypes = {DType::Float64}});

HYP_OPINFO({.name = "advanced_bool_mask",
            .build = [](const std::vector<Var>& x) { return subtensor(x[0], {x[1]}); },
            .samples =
                [](DType dt) {
                  return std::vector<OpSample>{
                      {"(2,3) full mask", {rnd({2, 3}, dt, 23), bools({1, 0, 1, 0, 0, 1}, {2, 3})}},
                      {"(3,2) leading mask", {rnd_strided({3, 2}, dt, 24), bools({0, 1, 1}, {3})}},
                      {"all false", {rnd({2, 2}, dt, 25), bools({0, 0}, {2})}}};
                },
            .dtypes = {DType::Int8, DType::Float32, DType::Float64}});

HYP_OPINFO({.name = "set_subtensor_basic",
            .build = [](const std::vector<Var>& x) { return set_subtensor(subtensor(x[0], {sl(1, 3)}), x[1]); },
            .samples =
                [](DType dt) {
                  return std::vector<OpSample>{
                      {"(4,3) <- (2,3)", {rnd({4, 3}, dt, 26), rnd({2, 3}, dt, 27)}},
                      {"strided (3,2) <- (2)", {rnd_strided({3, 2}, dt, 28), rnd({2}, dt, 29)}},
                      {"(4,2) <- 0-d", {rnd({4, 2}, dt, 30), rnd({}, dt, 31)}}};
                },
            .dtypes = testing::kAllNumeric});

HYP_OPINFO({.name = "inc_subtensor_basic",
            .build =
                [](const std::vector<Var>& x) {
                  return inc_subtensor(subtensor(x[0], {sl({}, {}, -2), 1}), x[1]);
                },
            .samples =
                [](DType dt) {
                  return std::vector<OpSample>{
                      {"(5,3) += (3)", {rnd({5, 3}, dt, 32), rnd({3}, dt, 33)}},
                      {"strided (4,2) += (1)", {rnd_strided({4, 2}, dt, 34), rnd({1}, dt, 35)}},
                      {"(0,2) += 0-d", {NDArray::zeros({0, 2}, dt), rnd({}, dt, 36)}}};
                },
            .dtypes = testing::kAllNumeric});

HYP_OPINFO({.name = "inc_subtensor_advanced_repeated",
            .build = [](const std::vector<Var>& x) { return inc_subtensor(subtensor(x[0], {x[2]}), x[1]); },
            .samples =
                [](DType dt) {
                  return std::vector<OpSample>{
                      {"(3,2)[[0,2,0,0]] += (4,2)", {rnd({3, 2}, dt, 37), rnd({4, 2}, dt, 38), ints({0, 2, 0, 0})}},
                      {"strided (4)[[-1,1,-1]] += 0-d", {rnd_strided({4}, dt, 39), rnd({}, dt, 40), ints({-1, 1, -1})}},
                      {"(2,2)[[]] += (2)", {rnd({2, 2}, dt, 41), rnd({2}, dt, 42), NDArray::zeros({0}, DType::Int64)}}};
                },
            .dtypes = {DType::Int32, DType::UInt8, DType::Float32, DType::Float64},
            .grad_inputs = {0, 1}});

HYP_OPINFO({.name = "set_subtensor_advanced",
            .build =
                [](const std::vector<Var>& x) {
                  return set_subtensor(subtensor(x[0], {all(), x[2]}), x[1]);
                },
            .samples =
                [](DType dt) {
                  return std::vector<OpSample>{
                      {"(2,4)[:, [3,0]] <- (2,2)", {rnd({2, 4}, dt, 43), rnd({2, 2}, dt, 44), ints({3, 0})}},
                      {"(3,3)[:, [1]] <- (1)", {rnd_strided({3, 3}, dt, 45), rnd({1}, dt, 46), ints({1})}}};
                },
            .dtypes = {DType::Int16, DType::Float32, DType::Float64},
            .grad_inputs = {0, 1}});

HYP_OPINFO({.name = "set_subtensor_mask",
            .build = [](const std::vector<Var>& x) { return set_subtensor(subtensor(x[0], {x[2]}), x[1]); },
            .samples =
                [](DType dt) {
                  return std::vector<OpSample>{
                      {"(2,3)[mask] <- 0-d",
                       {rnd({2, 3}, dt, 47), rnd({}, dt, 48), bools({0, 1, 1, 0, 0, 1}, {2, 3})}}};
                },
            .dtypes = {DType::Float64},
            .grad_inputs = {0, 1}});

HYP_OPINFO({.name = "take",
            .build = [](const std::vector<Var>& x) { return take(x[0], x[1], 1); },
            .samples =
                [](DType dt) {
                  return std::vector<OpSample>{
                      {"(2,3) take [2,0,2] axis 1", {rnd({2, 3}, dt, 49), ints({2, 0, 2})}},
                      {"strided (3,4) take [[1],[-1]] axis 1", {rnd_strided({3, 4}, dt, 50), ints({1, -1}, {2, 1})}}};
                },
            .dtypes = {DType::Int64, DType::Float32, DType::Float64}});

HYP_OPINFO({.name = "take_flat",
            .build = [](const std::vector<Var>& x) { return take(x[0], x[1]); },
            .samples =
                [](DType dt) {
                  return std::vector<OpSample>{{"(2,3) take [5,0]", {rnd({2, 3}, dt, 51), ints({5, 0})}}};
                },
            .dtypes = {DType::Float64}});

// ------------------------------------------------------------------------------------------------
// Exact values

NDArray ev(const Var& v, const std::vector<std::pair<Var, NDArray>>& in, std::string_view b = kCpuBackend) {
  return eval(v, in, b);
}

class SubtensorValues : public ::testing::TestWithParam<std::string_view> {};

TEST_P(SubtensorValues, BasicSlicesAndNames) {
  Var x = variable(matrix_type(DType::Float64), "x");
  NDArray v = iota({3, 4});
  Var y = subtensor(x, {sl(1, {}), sl({}, {}, -2)});
  EXPECT_EQ(y->owner->op->name(), "Subtensor{1::, ::-2}");
  EXPECT_ALLCLOSE(ev(y, {{x, v}}, GetParam()), f64({7, 5, 11, 9}, {2, 2}));
  Var z = subtensor(x, {-1});
  EXPECT_EQ(z->ndim(), 1);
  EXPECT_ALLCLOSE(ev(z, {{x, v}}, GetParam()), f64({8, 9, 10, 11}, {4}));
  Var w = subtensor(x, {newaxis(), 2, sl(-3, -1)});
  EXPECT_EQ(w->type.broadcastable, (std::vector<bool>{true, false}));
  EXPECT_ALLCLOSE(ev(w, {{x, v}}, GetParam()), f64({9, 10}, {1, 2}));
  Var e = subtensor(x, {ellipsis(), 0});
  EXPECT_ALLCLOSE(ev(e, {{x, v}}, GetParam()), f64({0, 4, 8}, {3}));
  Var i = variable(scalar_type(DType::Int32), "i");
  Var s = subtensor(x, {sl(i, {}, i)});
  EXPECT_EQ(s->owner->op->name(), "Subtensor{int64::int64}");
  EXPECT_ALLCLOSE(ev(s, {{x, v}, {i, NDArray::scalar(-1, DType::Int32)}}, GetParam()),
                  f64({8, 9, 10, 11, 4, 5, 6, 7, 0, 1, 2, 3}, {3, 4}));
}

TEST_P(SubtensorValues, AdvancedIndexing) {
  Var x = variable(tensor3_type(DType::Float64), "x");
  NDArray v = iota({2, 3, 4});
  Var a = variable(vector_type(DType::Int64), "a");
  Var b = variable(matrix_type(DType::Int64), "b");
  // x[:, [2, 0]] -> (2, 2, 4)
  NDArray r1 = ev(subtensor(x, {all(), a}), {{x, v}, {a, ints({2, 0})}}, GetParam());
  EXPECT_ALLCLOSE(r1, f64({8, 9, 10, 11, 0, 1, 2, 3, 20, 21, 22, 23, 12, 13, 14, 15}, {2, 2, 4}));
  // x[[1, 0], :, [3, 1]]: non-adjacent -> broadcast dims first: (2, 3)
  NDArray r2 = ev(subtensor(x, {a, all(), b}), {{x, v}, {a, ints({1, 0})}, {b, ints({3, 1}, {1, 2})}}, GetParam());
  EXPECT_ALLCLOSE(r2, f64({15, 19, 23, 1, 5, 9}, {1, 2, 3}));
  // x[1, [0, 2], 1:3]: the int joins the advanced index (adjacent): (2, 2)
  NDArray r3 = ev(subtensor(x, {1, a, sl(1, 3)}), {{x, v}, {a, ints({0, 2})}}, GetParam());
  EXPECT_ALLCLOSE(r3, f64({13, 14, 21, 22}, {2, 2}));
  // Boolean mask over the two leading dims.
  Var m = variable(matrix_type(DType::Bool), "m");
  NDArray r4 = ev(subtensor(x, {m, 3}), {{x, v}, {m, bools({0, 1, 0, 1, 0, 1}, {2, 3})}}, GetParam());
  EXPECT_ALLCLOSE(r4, f64({7, 15, 23}, {3}));
}

TEST_P(SubtensorValues, SetAndIncrement) {
  Var x = variable(matrix_type(DType::Float64), "x");
  Var y = variable(vector_type(DType::Float64), "y");
  Var a = variable(vector_type(DType::Int64), "a");
  NDArray v = iota({3, 2});
  Var s = set_subtensor(subtensor(x, {sl(0, 2)}), y);
  EXPECT_EQ(s->owner->op->name(), "IncSubtensor{Set;0:2:}");
  EXPECT_ALLCLOSE(ev(s, {{x, v}, {y, f64({-1, -2}, {2})}}, GetParam()), f64({-1, -2, -1, -2, 4, 5}, {3, 2}));
  Var inc = inc_subtensor(subtensor(x, {a}), y);
  EXPECT_EQ(inc->owner->op->name(), "AdvancedIncSubtensor{Inc;int[]}");
  // Repeated indices accumulate: row 2 gets y three times.
  EXPECT_ALLCLOSE(ev(inc, {{x, v}, {y, f64({10, 100}, {2})}, {a, ints({2, 0, 2, -1})}}, GetParam()),
                  f64({10, 101, 2, 3, 34, 305}, {3, 2}));
  Var set = set_subtensor(subtensor(x, {a, 1}), y);
  EXPECT_ALLCLOSE(ev(set, {{x, v}, {y, f64({7, 8}, {2})}, {a, ints({2, 0})}}, GetParam()),
                  f64({0, 8, 2, 3, 4, 7}, {3, 2}));
  // The input is not modified (no inplace).
  NDArray vv = iota({3, 2});
  ev(inc, {{x, vv}, {y, f64({1, 1}, {2})}, {a, ints({0})}}, GetParam());
  EXPECT_ALLCLOSE(vv, iota({3, 2}));
}

INSTANTIATE_TEST_SUITE_P(Backends, SubtensorValues, ::testing::Values(kReferenceBackend, kCpuBackend));

// The CPU's boolean-mask paths (one read of the mask, rows copied in order; selects for set and
// inc of single elements) against the reference engine: masks over one, two or all axes, with no,
// every, only the first or only the last row selected, or at random; every dtype; y of one
// element, of the selected elements, of a shape that must broadcast or fail; x and mask of other
// layouts (the engine's path); in place and not.
TEST(Subtensor, BooleanMasksMatchTheReferenceEverywhere) {
  std::mt19937_64 rng(11);
  for (DType dt :
       {DType::Float32, DType::Float64, DType::Int32, DType::Int64, DType::Int8, DType::Bool, DType::Float16}) {
    for (const Shape& xs : {Shape{37}, Shape{6, 5}, Shape{4, 3, 2}, Shape{3, 1}}) {
      for (int kd = 1; kd <= xs.size(); ++kd) {
        Shape ms;
        for (int d = 0; d < kd; ++d) ms.push_back(xs[d]);
        const int64_t rows = ms.prod();
        for (int pattern = 0; pattern < 5; ++pattern) {
          NDArray mv = NDArray::zeros(ms, DType::Bool);
          uint8_t* mb = reinterpret_cast<uint8_t*>(mv.raw());
          for (int64_t i = 0; i < rows; ++i)
            mb[i] = pattern == 1   ? 1
                    : pattern == 2 ? i == 0
                    : pattern == 3 ? i == rows - 1
                    : pattern == 4 ? rng() % 2
                                   : 0;
          int64_t count = 0;
          for (int64_t i = 0; i < rows; ++i) count += mb[i];
          Var x = variable(tensor_type(dt, xs.size()), "x"), m = variable(tensor_type(DType::Bool, kd), "m");
          const NDArray xv = random_array(xs, dt, -5, 5, 3 + pattern);
          const std::string what = std::string(dtype_name(dt)) + " " + xs.str() + " mask " + ms.str() + " pattern " +
                                   std::to_string(pattern);
          Var g = subtensor(x, {m});
          EXPECT_ALLCLOSE(ev(g, {{x, xv}, {m, mv}}), ev(g, {{x, xv}, {m, mv}}, kReferenceBackend)) << what;
          // A Fortran-ordered x (engine path) agrees too.
          const NDArray xf = xv.copy().transpose().copy().transpose();
          EXPECT_ALLCLOSE(ev(g, {{x, xf}, {m, mv}}), ev(g, {{x, xv}, {m, mv}}, kReferenceBackend)) << what;
          Shape rs{count};
          for (int d = kd; d < xs.size(); ++d) rs.push_back(xs[d]);
          std::vector<NDArray> ys = {random_array({}, dt, -5, 5, 7), random_array({1}, dt, -5, 5, 8),
                                     random_array(rs, dt, -5, 5, 9)};
          for (const NDArray& yv : ys) {
            Var y = variable(tensor_type(dt, yv.ndim()), "y");
            for (bool set : {true, false}) {
              if (!set && dt == DType::Bool) continue;
              Var s = set ? set_subtensor(subtensor(x, {m}), y) : inc_subtensor(subtensor(x, {m}), y);
              const std::vector<std::pair<Var, NDArray>> in = {{x, xv}, {y, yv}, {m, mv}};
              EXPECT_ALLCLOSE(ev(s, in), ev(s, in, kReferenceBackend))
                  << what << (set ? " set" : " inc") << " y " << yv.shape().str();
            }
          }
          // A y that does not fit the selected elements fails on both, naming the op.
          if (count > 1) {
            Var y = variable(tensor_type(dt, 1), "y");
            const NDArray bad = random_array({count + 100}, dt, -5, 5, 10);
            Var s = set_subtensor(subtensor(x, {m}), y);
            EXPECT_THROW(ev(s, {{x, xv}, {y, bad}, {m, mv}}), ValueError) << what;
          }
        }
      }
    }
  }
}

TEST(Subtensor, BasicIndexingIsAView) {
  Var x = variable(matrix_type(DType::Float32), "x");
  Var y = subtensor(x, {sl(1, 3), 0});
  EXPECT_EQ(y->owner->op->view_map(), (AliasMap{{0}}));
  auto k = make_kernel(kCpuBackend, *y->owner);
  NDArray in = iota({4, 2}, DType::Float32), out;
  NDArray* ins[] = {&in};
  NDArray* outs[] = {&out};
  k->run({ins, outs});
  EXPECT_TRUE(out.shares_buffer(in));
  EXPECT_ALLCLOSE(out, make_array({2, 4}, {2}, DType::Float32));
}

TEST(Subtensor, InplaceIncrementOverwritesX) {
  IndexSpec spec{IndexEntry{IndexEntry::Kind::Int, IndexEntry::Bound::Const, IndexEntry::Bound::None,
                            IndexEntry::Bound::None, 1, 0, 0}};
  auto op = std::make_shared<IncSubtensor>(spec, false, true);
  EXPECT_EQ(op->name(), "IncSubtensor{InplaceInc;1}");
  EXPECT_EQ(op->destroy_map(), (AliasMap{{0}}));
  EXPECT_TRUE(IncSubtensor(spec, false, false).destroy_map().empty());
  Var x = variable(vector_type(DType::Int32), "x");
  Var y = variable(scalar_type(DType::Int32), "y");
  Var out = apply_op1(op, {x, y});
  auto k = make_kernel(kCpuBackend, *out->owner);
  NDArray xv = make_array({1, 2, 3}, {3}, DType::Int32), yv = NDArray::scalar(5, DType::Int32), o;
  NDArray* ins[] = {&xv, &yv};
  NDArray* outs[] = {&o};
  k->run({ins, outs});
  EXPECT_TRUE(o.shares_buffer(xv));
  EXPECT_ALLCLOSE(xv, make_array({1, 7, 3}, {3}, DType::Int32));
}

TEST(Subtensor, TypesAndBroadcastablePatterns) {
  Var r = variable(row_type(DType::Float64), "r");
  EXPECT_EQ(subtensor(r, {sl(0, 1)})->type.broadcastable, (std::vector<bool>{true, false}));
  EXPECT_EQ(subtensor(r, {sl(1, {})})->type.broadcastable, (std::vector<bool>{false, false}));
  Var a = variable(TensorType(DType::Int64, {true, false}), "a");
  Var x = variable(tensor3_type(DType::Float32), "x");
  EXPECT_EQ(subtensor(x, {all(), a})->type.broadcastable, (std::vector<bool>{false, true, false, false}));
  EXPECT_EQ(subtensor(x, {a, all(), a})->type.broadcastable, (std::vector<bool>{true, false, false}));
  EXPECT_EQ(subtensor(x, {all(), all(), all()}), x);
}

TEST(Subtensor, ErrorsNameTheOp) {
  Var x = variable(matrix_type(DType::Float64), "x");
  NDArray v = iota({3, 4});
  EXPECT_ERROR(IndexError, ev(subtensor(x, {3}), {{x, v}}),
               "Subtensor{3}: index 3 is out of bounds for axis 0 with size 3");
  EXPECT_ERROR(IndexError, ev(subtensor(x, {0, -5}), {{x, v}}), "index -5 is out of bounds for axis 1 with size 4");
  Var a = variable(vector_type(DType::Int64), "a");
  EXPECT_ERROR(IndexError, ev(subtensor(x, {all(), a}), {{x, v}, {a, ints({1, 4})}}),
               "AdvancedSubtensor{::, int[]}: index 4 is out of bounds for axis 1 with size 4");
  EXPECT_ERROR(IndexError,
               ev(inc_subtensor(subtensor(x, {a}), constant(1.0, DType::Float64)), {{x, v}, {a, ints({-4})}}),
               "AdvancedIncSubtensor{Inc;int[]}: index -4 is out of bounds for axis 0 with size 3");
  EXPECT_ERROR(IndexError, subtensor(x, {0, 0, 0}), "too many indices");
  EXPECT_ERROR(IndexError, subtensor(x, {ellipsis(), ellipsis()}), "single ellipsis");
  EXPECT_ERROR(ValueError, subtensor(x, {sl(0, 2, 0)}), "slice step cannot be zero");
  Var f = variable(vector_type(DType::Float64), "f");
  EXPECT_ERROR(TypeError, subtensor(x, {f}), "AdvancedSubtensor");
  EXPECT_ERROR(TypeError, subtensor(x, {sl(f, {})}), "Subtensor");
  Var m = variable(matrix_type(DType::Bool), "m");
  EXPECT_ERROR(IndexError, ev(subtensor(x, {m}), {{x, v}, {m, bools({1, 0, 1, 0}, {2, 2})}}),
               "boolean index did not match indexed array along axis 0; size of axis is 3");
  Var b = variable(vector_type(DType::Int64), "b");
  EXPECT_ERROR(IndexError, ev(subtensor(x, {a, b}), {{x, v}, {a, ints({0, 1})}, {b, ints({0, 1, 2})}}),
               "shape mismatch");
  Var y = variable(vector_type(DType::Float64), "y");
  EXPECT_ERROR(ValueError, ev(set_subtensor(subtensor(x, {sl(0, 2)}), y), {{x, v}, {y, f64({1, 2, 3}, {3})}}),
               "IncSubtensor{Set;0:2:}: cannot broadcast y of shape (3,)");
  EXPECT_ERROR(TypeError, set_subtensor(x, y), "set_subtensor");
  Var y3 = variable(tensor3_type(DType::Float64), "y3");
  EXPECT_ERROR(TypeError, inc_subtensor(subtensor(x, {0}), y3), "IncSubtensor{Inc;0}");
  Var xi = variable(matrix_type(DType::Int32), "xi");
  EXPECT_ERROR(TypeError, set_subtensor(subtensor(xi, {0}), y), "cannot be safely cast");
}

TEST(Subtensor, Gradients) {
  NDArray x = random_array({4, 3}, DType::Float64, -1, 1, 70);
  NDArray y = random_array({2, 3}, DType::Float64, -1, 1, 71);
  Var idx = constant(ints({3, 0, 3}));
  verify_grad([&](const std::vector<Var>& v) { return subtensor(v[0], {idx, sl(1, {})}); }, {x});
  verify_grad([&](const std::vector<Var>& v) { return subtensor(v[0], {sl({}, {}, -1), -1}); }, {x});
  verify_grad([&](const std::vector<Var>& v) { return set_subtensor(subtensor(v[0], {sl(1, 3)}), v[1]); }, {x, y});
  verify_grad([&](const std::vector<Var>& v) { return inc_subtensor(subtensor(v[0], {idx}), v[1]); },
              {x, random_array({3, 3}, DType::Float64, -1, 1, 72)});
  // y broadcast over the region: its gradient sums over the broadcast axis.
  verify_grad([&](const std::vector<Var>& v) { return inc_subtensor(subtensor(v[0], {sl(0, 2)}), v[1]); },
              {x, random_array({1, 3}, DType::Float64, -1, 1, 73)});
  Var xv = variable(matrix_type(DType::Float64), "x");
  Var g = grad(sum(subtensor(xv, {idx})), xv);
  EXPECT_ALLCLOSE(ev(g, {{xv, x}}), f64({1, 1, 1, 0, 0, 0, 0, 0, 0, 2, 2, 2}, {4, 3}));
}

TEST(Subtensor, RopIsTheIndexedEvalPoint) {
  Var x = variable(matrix_type(DType::Float64), "x");
  Var v = variable(matrix_type(DType::Float64), "v");
  Var idx = constant(ints({1, 1}));
  Var y = subtensor(x, {idx, sl(0, 2)});
  Var r = Rop({y}, {x}, {v})[0];
  NDArray vv = iota({2, 3});
  EXPECT_ALLCLOSE(ev(r, {{x, NDArray::zeros({2, 3}, DType::Float64)}, {v, vv}}), f64({3, 4, 3, 4}, {2, 2}));
}

}  // namespace
}  // namespace hypatia
