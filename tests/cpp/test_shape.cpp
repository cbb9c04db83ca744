// Shape ops: OpInfo entries (dimshuffle, shape, alloc, reshape, flatten, join, stack, split, arange,
// eye, tile, repeat), exact values, views, error paths and gradients.
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
NDArray i64(const std::vector<double>& v) { return make_array(v, Shape{static_cast<int64_t>(v.size())}, DType::Int64); }

NDArray ev(const Var& v, const std::vector<std::pair<Var, NDArray>>& in = {}, std::string_view b = kCpuBackend) {
  return eval(v, in, b);
}

// ------------------------------------------------------------------------------------------------
// OpInfo entries

HYP_OPINFO({.name = "transpose",
            .build = [](const std::vector<Var>& x) { return transpose(x[0]); },
            .samples =
                [](DType dt) {
                  return std::vector<OpSample>{{"matrix (2,3)", {rnd({2, 3}, dt, 1)}},
                                               {"strided (3,4)", {rnd_strided({3, 4}, dt, 2)}},
                                               {"3-d (2,1,3)", {rnd({2, 1, 3}, dt, 3)}},
                                               {"zero-size (0,3)", {NDArray::zeros({0, 3}, dt)}},
                                               {"0-d", {rnd({}, dt, 4)}}};
                },
            .dtypes = testing::kAllNumeric,
            .expected = [](const std::vector<NDArray>& a) { return a[0].transpose().copy(); }});

HYP_OPINFO({.name = "dimshuffle_expand",
            .build =
                [](const std::vector<Var>& x) {
                  return dimshuffle(x[0], {-1, 1, -1, 0});
                },
            .samples =
                [](DType dt) {
                  return std::vector<OpSample>{{"matrix (2,3)", {rnd({2, 3}, dt, 5)}},
                                               {"strided (3,2)", {rnd_strided({3, 2}, dt, 6)}},
                                               {"zero-size (2,0)", {NDArray::zeros({2, 0}, dt)}}};
                },
            .dtypes = {DType::Bool, DType::Int32, DType::Float32, DType::Float64}});

HYP_OPINFO({.name = "dimshuffle_drop",
            .build =
                [](const std::vector<Var>& x) {
                  return dimshuffle(x[0], {2, 0});
                },
            .samples =
                [](DType dt) {
                  return std::vector<OpSample>{{"(3,1,2)", {rnd({3, 1, 2}, dt, 7)}},
                                               {"strided (2,1,4)", {rnd_strided({2, 1, 4}, dt, 8)}}};
                },
            .dtypes = {DType::Int64, DType::Float64}});

HYP_OPINFO({.name = "shape",
            .build = [](const std::vector<Var>& x) { return shape(x[0]); },
            .samples =
                [](DType dt) {
                  return std::vector<OpSample>{{"(2,3)", {rnd({2, 3}, dt, 9)}},
                                               {"0-d", {rnd({}, dt, 10)}},
                                               {"zero-size (0,4,1)", {NDArray::zeros({0, 4, 1}, dt)}}};
                },
            .dtypes = {DType::Bool, DType::UInt8, DType::Float32},
            .differentiable = false});

HYP_OPINFO({.name = "shape_i_make_vector",
            .build =
                [](const std::vector<Var>& x) {
                  return make_vector({shape_i(x[0], 1), shape_i(x[0], 0)});
                },
            .samples =
                [](DType dt) {
                  return std::vector<OpSample>{{"(2,3)", {rnd({2, 3}, dt, 11)}},
                                               {"strided (4,5)", {rnd_strided({4, 5}, dt, 12)}},
                                               {"zero-size (0,2)", {NDArray::zeros({0, 2}, dt)}}};
                },
            .dtypes = {DType::Int16, DType::Float64},
            .differentiable = false});

// alloc(x, [2] + x.shape with broadcastable dims widened to 3).
Var alloc_build(const std::vector<Var>& x) {
  ShapeVars s{int_constant(2)};
  for (int d = 0; d < x[0]->ndim(); ++d) s.push_back(x[0]->type.broadcastable[d] ? int_constant(3) : shape_i(x[0], d));
  return alloc(x[0], s);
}

HYP_OPINFO({.name = "alloc",
            .build = alloc_build,
            .samples =
                [](DType dt) {
                  return std::vector<OpSample>{{"0-d", {rnd({}, dt, 13)}},
                                               {"vector (4)", {rnd({4}, dt, 14)}},
                                               {"row (1,3) broadcast", {rnd({1, 3}, dt, 15)}},
                                               {"strided (3,2)", {rnd_strided({3, 2}, dt, 16)}},
                                               {"zero-size (0,2)", {NDArray::zeros({0, 2}, dt)}}};
                },
            .dtypes = testing::kAllNumeric});

HYP_OPINFO({.name = "fill_zeros_ones_like",
            .build =
                [](const std::vector<Var>& x) { return add(add(fill(x[0], x[1]), zeros_like(x[0])), ones_like(x[0])); },
            .samples =
                [](DType dt) {
                  return std::vector<OpSample>{{"matrix model, 0-d value", {rnd({2, 3}, dt, 17), rnd({}, dt, 18)}},
                                               {"model (3), row value", {rnd({3}, dt, 19), rnd({2, 1}, dt, 20)}}};
                },
            .dtypes = {DType::Int32, DType::Float32, DType::Float64},
            .grad_inputs = {1}});

HYP_OPINFO({.name = "reshape",
            .build =
                [](const std::vector<Var>& x) {
                  return reshape(x[0], {-1, 2});
                },
            .samples =
                [](DType dt) {
                  return std::vector<OpSample>{{"contiguous (3,4): view", {rnd({3, 4}, dt, 21)}},
                                               {"strided (3,4): copy", {rnd_strided({3, 4}, dt, 22)}},
                                               {"transposed (2,3,2)", {rnd({2, 3, 2}, dt, 23).transpose()}},
                                               {"zero-size (0,4)", {NDArray::zeros({0, 4}, dt)}}};
                },
            .dtypes = testing::kAllNumeric,
            .expected =
                [](const std::vector<NDArray>& a) {
                  return a[0].copy().reshape({a[0].size() / 2, 2});
                }});

HYP_OPINFO({.name = "reshape_symbolic",
            .build =
                [](const std::vector<Var>& x) {
                  // The shape comes from another tensor's shape: (x1.shape[0], -1).
                  return reshape(x[0], make_vector({shape_i(x[1], 0), int_constant(-1)}), 2);
                },
            .samples =
                [](DType dt) {
                  return std::vector<OpSample>{{"(2,6) as (3,-1)", {rnd({2, 6}, dt, 24), rnd({3}, dt, 25)}},
                                               {"0-d as (1,-1)", {rnd({}, dt, 26), rnd({1}, dt, 27)}}};
                },
            .dtypes = {DType::Int8, DType::Float64},
            .grad_inputs = {0}});

HYP_OPINFO({.name = "flatten",
            .build = [](const std::vector<Var>& x) { return flatten(x[0], 2); },
            .samples =
                [](DType dt) {
                  return std::vector<OpSample>{{"(2,3,4)", {rnd({2, 3, 4}, dt, 28)}},
                                               {"strided (3,2,2)", {rnd_strided({3, 2, 2}, dt, 29)}},
                                               {"zero-size (2,0,3)", {NDArray::zeros({2, 0, 3}, dt)}}};
                },
            .dtypes = {DType::UInt16, DType::Float32, DType::Float64}});

HYP_OPINFO({.name = "flatten_all",
            .build = [](const std::vector<Var>& x) { return flatten(x[0]); },
            .samples =
                [](DType dt) {
                  return std::vector<OpSample>{{"0-d", {rnd({}, dt, 30)}}, {"(1,3)", {rnd({1, 3}, dt, 31)}}};
                },
            .dtypes = {DType::Float64}});

HYP_OPINFO({.name = "concatenate",
            .build =
                [](const std::vector<Var>& x) {
                  return concatenate({x[0], x[1], x[0]}, -1);
                },
            .samples =
                [](DType dt) {
                  return std::vector<OpSample>{
                      {"(2,3)+(2,1)", {rnd({2, 3}, dt, 32), rnd({2, 1}, dt, 33)}},
                      {"strided (3,2)+(3,4)", {rnd_strided({3, 2}, dt, 34), rnd_strided({3, 4}, dt, 35)}},
                      {"zero-size (2,0)+(2,2)", {NDArray::zeros({2, 0}, dt), rnd({2, 2}, dt, 36)}},
                      {"vectors (3)+(0)", {rnd({3}, dt, 37), NDArray::zeros({0}, dt)}}};
                },
            .dtypes = testing::kAllNumeric,
            .expected =
                [](const std::vector<NDArray>& a) {
                  const int ax = a[0].ndim() - 1;
                  Shape s = a[0].shape();
                  s[ax] = 2 * a[0].shape(ax) + a[1].shape(ax);
                  NDArray r = NDArray::empty(s, a[0].dtype());
                  const int64_t n0 = a[0].shape(ax), n1 = a[1].shape(ax);
                  if (n0) r.slice(ax, 0, n0, 1).assign(a[0]);
                  if (n1) r.slice(ax, n0, n0 + n1, 1).assign(a[1]);
                  if (n0) r.slice(ax, n0 + n1, 2 * n0 + n1, 1).assign(a[0]);
                  return r;
                }});

HYP_OPINFO({.name = "stack",
            .build =
                [](const std::vector<Var>& x) {
                  return stack({x[0], x[1]}, 1);
                },
            .samples =
                [](DType dt) {
                  return std::vector<OpSample>{{"(2,3)x2", {rnd({2, 3}, dt, 38), rnd({2, 3}, dt, 39)}},
                                               {"(4)x2 strided", {rnd_strided({4}, dt, 40), rnd({4}, dt, 41)}},
                                               {"zero-size (0)", {NDArray::zeros({0}, dt), NDArray::zeros({0}, dt)}}};
                },
            .dtypes = {DType::Int64, DType::Float32, DType::Float64}});

HYP_OPINFO({.name = "split",
            .build =
                [](const std::vector<Var>& x) {
                  auto parts = split(x[0], std::vector<int64_t>{1, 0, 2}, 0);
                  return concatenate({parts[2], parts[1], parts[0]}, 0);
                },
            .samples =
                [](DType dt) {
                  return std::vector<OpSample>{{"(3,2)", {rnd({3, 2}, dt, 42)}},
                                               {"strided (3,4)", {rnd_strided({3, 4}, dt, 43)}},
                                               {"vector (3)", {rnd({3}, dt, 44)}}};
                },
            .dtypes = {DType::Int32, DType::Float32, DType::Float64}});

HYP_OPINFO({.name = "arange",
            .build = [](const std::vector<Var>& x) { return arange(x[0], x[1], x[2], x[0]->dtype()); },
            .samples =
                [](DType dt) {
                  auto s = [dt](double v) { return NDArray::scalar(v, dt); };
                  std::vector<OpSample> r{{"0:7:2", {s(0), s(7), s(2)}}, {"3:3:1 (empty)", {s(3), s(3), s(1)}}};
                  if (!is_unsigned_int(dt)) r.push_back({"5:-4:-3", {s(5), s(-4), s(-3)}});
                  if (is_float(dt)) r.push_back({"0.5:2.2:0.25", {s(0.5), s(2.2), s(0.25)}});
                  return r;
                },
            .dtypes = {DType::Int32, DType::Int64, DType::UInt8, DType::Float64},
            .differentiable = false});

HYP_OPINFO({.name = "eye",
            .build = [](const std::vector<Var>& x) { return eye(x[0], x[1], x[2], DType::Float32); },
            .samples =
                [](DType dt) {
                  auto s = [dt](double v) { return NDArray::scalar(v, dt); };
                  return std::vector<OpSample>{{"3x3", {s(3), s(3), s(0)}},
                                               {"2x4 k=1", {s(2), s(4), s(1)}},
                                               {"4x2 k=-1", {s(4), s(2), s(-1)}},
                                               {"0x3", {s(0), s(3), s(0)}}};
                },
            .dtypes = {DType::Int32, DType::Int64},
            .differentiable = false});

HYP_OPINFO({.name = "tile",
            .build =
                [](const std::vector<Var>& x) {
                  return tile(x[0], {2, 1, 3});
                },
            .samples =
                [](DType dt) {
                  return std::vector<OpSample>{{"(2,3)", {rnd({2, 3}, dt, 45)}},
                                               {"vector (2)", {rnd({2}, dt, 46)}},
                                               {"0-d", {rnd({}, dt, 47)}},
                                               {"strided (1,3,2)", {rnd_strided({1, 3, 2}, dt, 48)}},
                                               {"zero-size (0,2)", {NDArray::zeros({0, 2}, dt)}}};
                },
            .dtypes = testing::kAllNumeric});

HYP_OPINFO({.name = "repeat_scalar",
            .build = [](const std::vector<Var>& x) { return repeat(x[0], int64_t{2}, 1); },
            .samples =
                [](DType dt) {
                  return std::vector<OpSample>{{"(2,3)", {rnd({2, 3}, dt, 49)}},
                                               {"strided (3,2)", {rnd_strided({3, 2}, dt, 50)}},
                                               {"zero-size (2,0)", {NDArray::zeros({2, 0}, dt)}}};
                },
            .dtypes = testing::kAllNumeric});

HYP_OPINFO({.name = "repeat_vector",
            .build = [](const std::vector<Var>& x) { return repeat(x[0], x[1], 0); },
            .samples =
                [](DType dt) {
                  return std::vector<OpSample>{
                      {"(3,2) by [2,0,1]", {rnd({3, 2}, dt, 51), i64({2, 0, 1})}},
                      {"vector (4) by [1,3,0,2]", {rnd_strided({4}, dt, 52), i64({1, 3, 0, 2})}}};
                },
            .dtypes = {DType::Int32, DType::Float32, DType::Float64},
            .grad_inputs = {0}});

HYP_OPINFO({.name = "repeat_flat",
            .build = [](const std::vector<Var>& x) { return repeat(x[0], int64_t{3}); },
            .samples =
                [](DType dt) {
                  return std::vector<OpSample>{{"(2,2)", {rnd({2, 2}, dt, 53)}}, {"0-d", {rnd({}, dt, 54)}}};
                },
            .dtypes = {DType::Float64}});

HYP_OPINFO({.name = "rebroadcast",
            .build = [](const std::vector<Var>& x) { return addbroadcast(unbroadcast(x[0], {0}), {0}); },
            .samples =
                [](DType dt) {
                  return std::vector<OpSample>{{"(1,3)", {rnd({1, 3}, dt, 55)}},
                                               {"strided (1,4)", {rnd_strided({1, 4}, dt, 56)}},
                                               {"zero-size (1,0)", {NDArray::zeros({1, 0}, dt)}}};
                },
            .dtypes = {DType::Int32, DType::Float32, DType::Float64}});

HYP_OPINFO({.name = "roll_flip",
            .build = [](const std::vector<Var>& x) { return flip(roll(x[0], int64_t{-4}, 1), 0); },
            .samples =
                [](DType dt) {
                  return std::vector<OpSample>{{"(2,3)", {rnd({2, 3}, dt, 57)}},
                                               {"strided (3,5)", {rnd_strided({3, 5}, dt, 58)}},
                                               {"zero-size (2,0)", {NDArray::zeros({2, 0}, dt)}}};
                },
            .dtypes = {DType::Int64, DType::Float64}});

// ------------------------------------------------------------------------------------------------
// Exact values and properties

TEST(Shape, RollAndFlipValues) {
  Var x = variable(vector_type(DType::Int64), "x");
  NDArray v = i64({0, 1, 2, 3, 4});
  EXPECT_ALLCLOSE(ev(roll(x, int64_t{2}), {{x, v}}), i64({3, 4, 0, 1, 2}));
  EXPECT_ALLCLOSE(ev(roll(x, int64_t{-6}), {{x, v}}), i64({1, 2, 3, 4, 0}));
  EXPECT_ALLCLOSE(ev(roll(x, int64_t{5}), {{x, v}}), v);
  EXPECT_ALLCLOSE(ev(flip(x, 0), {{x, v}}), i64({4, 3, 2, 1, 0}));
  Var m = variable(matrix_type(DType::Int64), "m");
  EXPECT_ALLCLOSE(ev(roll(m, int64_t{1}), {{m, make_array({0, 1, 2, 3}, {2, 2}, DType::Int64)}}),
                  make_array({3, 0, 1, 2}, {2, 2}, DType::Int64));
  EXPECT_ERROR(TypeError, roll(x, constant(1.0, DType::Float64), 0), "roll");
}

TEST(Shape, RebroadcastSqueezeExpandSwap) {
  Var x = variable(matrix_type(DType::Float64), "x");
  Var b = addbroadcast(x, {-1});
  EXPECT_EQ(b->owner->op->name(), "Rebroadcast{?,1}");
  EXPECT_EQ(b->type, TensorType(DType::Float64, {false, true}));
  EXPECT_EQ(patternbroadcast(x, {false, false}), x);
  EXPECT_EQ(unbroadcast(b, {1})->type, x->type);
  NDArray v = make_array({1, 2, 3}, {3, 1}, DType::Float64);
  EXPECT_ALLCLOSE(ev(squeeze(b), {{x, v}}), make_array({1, 2, 3}, {3}, DType::Float64));
  EXPECT_ERROR(ValueError, ev(b, {{x, NDArray::zeros({2, 2}, DType::Float64)}}),
               "Rebroadcast{?,1}: axis 1 is marked broadcastable");
  EXPECT_ERROR(TypeError, patternbroadcast(x, {true}), "Rebroadcast");
  Var e = expand_dims(x, -1);
  EXPECT_EQ(e->type.broadcastable, (std::vector<bool>{false, false, true}));
  EXPECT_EQ(ev(e, {{x, v}}).shape(), (Shape{3, 1, 1}));
  Var t = variable(tensor3_type(DType::Float64), "t");
  EXPECT_EQ(swapaxes(t, 0, -1)->owner->op->name(), "DimShuffle{2,1,0}");
  EXPECT_ERROR(IndexError, swapaxes(t, 0, 3), "swapaxes");
  // Gradients keep the input's broadcastable pattern.
  Var r = variable(row_type(DType::Float64), "r");
  Var g = grad(sum(concatenate({r, x}, 0)), r);
  EXPECT_EQ(g->type, r->type);
}

TEST(Shape, DimShuffleNameTypeAndView) {
  Var x = variable(TensorType(DType::Float32, {false, true, false}), "x");
  Var y = dimshuffle(x, {2, -1, 0});
  EXPECT_EQ(y->owner->op->name(), "DimShuffle{2,x,0}");
  EXPECT_EQ(y->type, TensorType(DType::Float32, {false, true, false}));
  NDArray v = make_array({1, 2, 3, 4, 5, 6}, {2, 1, 3}, DType::Float32);
  NDArray r = ev(y, {{x, v}}, kReferenceBackend);
  EXPECT_EQ(r.shape(), (Shape{3, 1, 2}));
  EXPECT_ALLCLOSE(r, make_array({1, 4, 2, 5, 3, 6}, {3, 1, 2}, DType::Float32));
  // The kernel returns a view of its input.
  auto k = make_kernel(kCpuBackend, *y->owner);
  NDArray in = v, out;
  NDArray* ins[] = {&in};
  NDArray* outs[] = {&out};
  k->run({ins, outs});
  EXPECT_TRUE(out.shares_buffer(in));
  EXPECT_EQ(y->owner->op->view_map(), (AliasMap{{0}}));
}

TEST(Shape, DimShuffleErrors) {
  Var x = variable(matrix_type(DType::Float64), "x");
  EXPECT_ERROR(ValueError, dimshuffle(x, {1}), "DimShuffle");
  EXPECT_ERROR(ValueError, dimshuffle(x, {0, 0}), "appears twice");
  EXPECT_ERROR(ValueError, dimshuffle(x, {0, 2}), "DimShuffle");
  EXPECT_ERROR(ValueError, transpose(x, {0}), "transpose");
  auto op = std::make_shared<DimShuffle>(std::vector<bool>{false, false}, std::vector<int>{1, 0});
  Var v = variable(vector_type(DType::Float64), "v");
  EXPECT_ERROR(TypeError, apply_op1(op, {v}), "DimShuffle{1,0}");
  // Dropping an axis that is not length 1 at run time.
  Var r = variable(row_type(DType::Float64), "r");
  Var y = dimshuffle(r, {1});
  auto k = make_kernel(kReferenceBackend, *y->owner);
  NDArray in = NDArray::zeros({2, 3}, DType::Float64), out;
  NDArray* ins[] = {&in};
  NDArray* outs[] = {&out};
  EXPECT_ERROR(ValueError, k->run({ins, outs}), "DimShuffle{1}");
}

TEST(Shape, ShapeVarsUseConstantsForBroadcastableDims) {
  Var x = variable(TensorType(DType::Float32, {true, false}), "x");
  ShapeVars s = shape_vars(x);
  ASSERT_EQ(s.size(), 2u);
  EXPECT_TRUE(s[0]->is_constant());
  EXPECT_EQ(s[0]->data.get_flat(0), 1.0);
  EXPECT_EQ(s[1]->owner->op->name(), "Shape_i{1}");
  NDArray v = NDArray::zeros({1, 5}, DType::Float32);
  EXPECT_ALLCLOSE(ev(make_vector(s), {{x, v}}), i64({1, 5}));
  EXPECT_ALLCLOSE(ev(shape(x), {{x, v}}), i64({1, 5}));
  EXPECT_EQ(ev(shape_i(x, 1), {{x, v}}).get_flat(0), 5.0);
  EXPECT_ERROR(TypeError, shape_i(x, 2), "Shape_i{2}");
  EXPECT_ERROR(TypeError, make_vector({variable(vector_type(DType::Int64))}), "MakeVector");
  EXPECT_ERROR(TypeError, make_vector({variable(scalar_type(DType::Float64))}), "MakeVector");
}

TEST(Shape, AllocBroadcastAndErrors) {
  Var v = variable(row_type(DType::Float64), "v");
  Var n = variable(scalar_type(DType::Int32), "n");
  Var a = alloc(v, {n, int_constant(2), int_constant(3)});
  EXPECT_EQ(a->type, TensorType(DType::Float64, {false, false, false}));
  NDArray r = ev(a, {{v, make_array({1, 2, 3}, {1, 3}, DType::Float64)}, {n, NDArray::scalar(2, DType::Int32)}});
  EXPECT_ALLCLOSE(r, make_array({1, 2, 3, 1, 2, 3, 1, 2, 3, 1, 2, 3}, {2, 2, 3}, DType::Float64));
  Var z = zeros({int_constant(1), int_constant(2)}, DType::Int8);
  EXPECT_EQ(z->type, TensorType(DType::Int8, {true, false}));
  EXPECT_ALLCLOSE(ev(z), NDArray::zeros({1, 2}, DType::Int8));
  EXPECT_ALLCLOSE(ev(ones({int_constant(2)}, DType::Float32)), NDArray::full({2}, DType::Float32, 1));
  // Errors: too many value dims, a float shape, a negative length, a non-broadcastable mismatch.
  Var m = variable(matrix_type(DType::Float64), "m");
  EXPECT_ERROR(TypeError, alloc(m, {int_constant(3)}), "Alloc");
  EXPECT_ERROR(TypeError, alloc(m, {constant(2.0, DType::Float64), int_constant(2)}), "Alloc");
  Var bad = alloc(m, {int_constant(2), int_constant(4)});
  EXPECT_ERROR(ValueError, ev(bad, {{m, NDArray::zeros({2, 1}, DType::Float64)}}), "Alloc");
  EXPECT_ERROR(ValueError, ev(alloc(constant(1.0, DType::Float64), {int_constant(-1)})), "Alloc");
}

TEST(Shape, AllocGradientSumsBroadcastDims) {
  Var v = variable(TensorType(DType::Float64, {true, false}), "v");
  Var a = alloc(v, {int_constant(2), int_constant(3), int_constant(4)});
  Var g = grad(sum(mul(a, a)), v);
  EXPECT_EQ(g->type, v->type);
  NDArray val = make_array({1, 2, 3, 4}, {1, 4}, DType::Float64);
  EXPECT_ALLCLOSE(ev(g, {{v, val}}), make_array({12, 24, 36, 48}, {1, 4}, DType::Float64));
}

TEST(Shape, ReshapeViewOrCopyAndErrors) {
  Var x = variable(matrix_type(DType::Float64), "x");
  Var y = reshape(x, {3, -1});
  EXPECT_EQ(y->owner->op->name(), "Reshape{2}");
  NDArray v = make_array({0, 1, 2, 3, 4, 5}, {2, 3}, DType::Float64);
  auto k = make_kernel(kReferenceBackend, *y->owner);
  NDArray shp = i64({3, -1}), out;
  {
    NDArray in = v;
    NDArray* ins[] = {&in, &shp};
    NDArray* outs[] = {&out};
    k->run({ins, outs});
    EXPECT_TRUE(out.shares_buffer(v));
    EXPECT_EQ(out.shape(), (Shape{3, 2}));
  }
  {
    // A transposed array cannot be viewed with another shape: copied.
    NDArray in = v.transpose();
    NDArray out2, shp2 = i64({2, -1});
    NDArray* ins[] = {&in, &shp2};
    NDArray* outs[] = {&out2};
    k->run({ins, outs});
    EXPECT_FALSE(out2.shares_buffer(v));
    EXPECT_ALLCLOSE(out2, make_array({0, 3, 1, 4, 2, 5}, {2, 3}, DType::Float64));
  }
  {
    // Splitting an axis of a strided array keeps a view.
    NDArray big = make_array({0, 1, 2, 3, 4, 5, 6, 7}, {8}, DType::Float64);
    NDArray in = big.slice(0, 0, 8, 2);
    Var z = reshape(variable(vector_type(DType::Float64)), {2, 2});
    auto kz = make_kernel(kReferenceBackend, *z->owner);
    NDArray s2 = i64({2, 2}), out3;
    NDArray* ins[] = {&in, &s2};
    NDArray* outs[] = {&out3};
    kz->run({ins, outs});
    EXPECT_TRUE(out3.shares_buffer(big));
    EXPECT_ALLCLOSE(out3, make_array({0, 2, 4, 6}, {2, 2}, DType::Float64));
  }
  EXPECT_ERROR(ValueError, ev(reshape(x, {4, -1}), {{x, v}}), "Reshape{2}: cannot reshape an array of size 6");
  EXPECT_ERROR(ValueError, ev(reshape(x, {4, 2}), {{x, v}}), "into shape (4, 2)");
  EXPECT_ERROR(ValueError, reshape(x, {-1, -1}), "one unknown");
  Var s = variable(vector_type(DType::Float64), "s");
  EXPECT_ERROR(TypeError, reshape(x, s, 2), "Reshape{2}");
  EXPECT_ERROR(TypeError, reshape(x, constant(i64({1, 2, 3})), 2), "Reshape{2}");
}

TEST(Shape, ReshapeBroadcastablePatternFromConstants) {
  Var x = variable(matrix_type(DType::Float64), "x");
  EXPECT_EQ(reshape(x, {1, -1, 1})->type.broadcastable, (std::vector<bool>{true, false, true}));
  EXPECT_EQ(reshape(x, make_vector({int_constant(1), shape_i(x, 0)}), 2)->type.broadcastable,
            (std::vector<bool>{true, false}));
  EXPECT_EQ(flatten(x)->ndim(), 1);
}

TEST(Shape, JoinSplitValuesAndErrors) {
  Var a = variable(matrix_type(DType::Int32), "a");
  Var b = variable(matrix_type(DType::Float32), "b");
  Var j = concatenate({a, b}, 0);
  EXPECT_EQ(j->owner->op->name(), "Join{axis=0}");
  EXPECT_EQ(j->dtype(), DType::Float64);
  NDArray av = make_array({1, 2}, {1, 2}, DType::Int32), bv = make_array({3, 4, 5, 6}, {2, 2}, DType::Float32);
  EXPECT_ALLCLOSE(ev(j, {{a, av}, {b, bv}}), make_array({1, 2, 3, 4, 5, 6}, {3, 2}, DType::Float64));
  EXPECT_ALLCLOSE(ev(j, {{a, av}, {b, bv}}, kReferenceBackend), make_array({1, 2, 3, 4, 5, 6}, {3, 2}, DType::Float64));
  EXPECT_ERROR(ValueError, ev(concatenate({a, b}, 1), {{a, av}, {b, bv}}), "Join{axis=1}");
  EXPECT_ERROR(TypeError, concatenate({a, variable(vector_type(DType::Int32))}), "Join{axis=0}");
  EXPECT_ERROR(TypeError, concatenate({variable(scalar_type(DType::Int32))}), "Join");
  EXPECT_ERROR(IndexError, concatenate({a, a}, 2), "Join");
  Var x = variable(vector_type(DType::Float64), "x");
  auto parts = split(x, std::vector<int64_t>{2, 3});
  ASSERT_EQ(parts.size(), 2u);
  EXPECT_EQ(parts[0]->owner->op->name(), "Split{2}");
  NDArray xv = make_array({1, 2, 3, 4, 5}, {5}, DType::Float64);
  EXPECT_ALLCLOSE(ev(parts[1], {{x, xv}}), make_array({3, 4, 5}, {3}, DType::Float64));
  EXPECT_ERROR(ValueError, ev(split(x, std::vector<int64_t>{2, 2})[0], {{x, xv}}), "Split{2}");
  EXPECT_ERROR(ValueError, split(x, std::vector<int64_t>{-1, 6}), "Split");
  Var st = stack({x, x}, -1);
  EXPECT_EQ(ev(st, {{x, xv}}).shape(), (Shape{5, 2}));
}

TEST(Shape, ArangeEyeTileRepeatValues) {
  EXPECT_ALLCLOSE(ev(arange(5)), i64({0, 1, 2, 3, 4}));
  EXPECT_ALLCLOSE(ev(arange(int_constant(5), int_constant(-2), int_constant(-2), DType::Int64)), i64({5, 3, 1, -1}));
  EXPECT_ALLCLOSE(ev(arange(constant(0.0, DType::Float64), constant(1.0, DType::Float64),
                            constant(0.25, DType::Float64), DType::Float32)),
                  make_array({0, 0.25, 0.5, 0.75}, {4}, DType::Float32));
  EXPECT_ERROR(ValueError, ev(arange(int_constant(0), int_constant(3), int_constant(0), DType::Int64)),
               "ARange{dtype='int64'}: step must not be zero");
  EXPECT_ALLCLOSE(ev(eye(int_constant(2), int_constant(3), int_constant(1), DType::Float64)),
                  make_array({0, 1, 0, 0, 0, 1}, {2, 3}, DType::Float64));
  EXPECT_ALLCLOSE(ev(eye(2, DType::Int8)), make_array({1, 0, 0, 1}, {2, 2}, DType::Int8));
  EXPECT_ERROR(ValueError, ev(eye(int_constant(-1), int_constant(2), int_constant(0), DType::Float64)), "Eye");
  Var x = variable(vector_type(DType::Int64), "x");
  NDArray xv = i64({1, 2});
  EXPECT_ALLCLOSE(ev(tile(x, {2, 2}), {{x, xv}}), make_array({1, 2, 1, 2, 1, 2, 1, 2}, {2, 4}, DType::Int64));
  EXPECT_ALLCLOSE(ev(repeat(x, int64_t{2}), {{x, xv}}), i64({1, 1, 2, 2}));
  EXPECT_ALLCLOSE(ev(repeat(x, constant(i64({0, 3})), 0), {{x, xv}}), i64({2, 2, 2}));
  EXPECT_ERROR(ValueError, ev(repeat(x, constant(i64({1, 2, 3})), 0), {{x, xv}}), "Repeat{axis=0}");
  EXPECT_ERROR(ValueError, ev(repeat(x, constant(i64({1, -1})), 0), {{x, xv}}), "Repeat{axis=0}");
  EXPECT_ERROR(ValueError, tile(x, {-1}), "tile");
  EXPECT_ERROR(TypeError, repeat(x, constant(2.0, DType::Float64), 0), "Repeat");
}

TEST(Shape, GradientsThroughShapeOps) {
  NDArray a = random_array({2, 3}, DType::Float64, -1, 1, 60);
  NDArray b = random_array({2, 2}, DType::Float64, -1, 1, 61);
  verify_grad([](const std::vector<Var>& x) { return concatenate({transpose(x[0]), transpose(x[1])}, 0); }, {a, b});
  verify_grad([](const std::vector<Var>& x) { return tile(reshape(x[0], {3, 2}), {2, 1}); }, {a});
  verify_grad([](const std::vector<Var>& x) { return repeat(x[0], constant(i64({3, 0})), 0); }, {a});
  verify_grad([](const std::vector<Var>& x) { return split(x[0], std::vector<int64_t>{1, 2}, 1)[1]; }, {a});
  verify_grad([](const std::vector<Var>& x) { return dimshuffle(flatten(x[0]), {-1, 0, -1}); }, {a});
}

TEST(Shape, RopOfLinearShapeOps) {
  Var x = variable(matrix_type(DType::Float64), "x");
  Var v = variable(matrix_type(DType::Float64), "v");
  Var y = concatenate({transpose(x), reshape(x, {3, 2})}, 0);
  Var r = Rop({y}, {x}, {v})[0];
  NDArray xv = random_array({2, 3}, DType::Float64, -1, 1, 62), vv = random_array({2, 3}, DType::Float64, -1, 1, 63);
  EXPECT_ALLCLOSE(ev(r, {{x, xv}, {v, vv}}), ev(y, {{x, vv}}));
}

}  // namespace
}  // namespace hypatia
