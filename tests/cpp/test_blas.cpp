// Linear algebra: dot (every vector/matrix combination and higher ndim), Gemm, Gemv, Ger, outer,
// tensordot and batched_dot: the OpInfo entries, exact values, layouts, errors and gradients.
#include <cmath>
#include <limits>

#include "hypatia/backends/cpu/blas_matmul.h"
#include "test_util.h"

namespace hypatia {
namespace {
using testing::make_array;
using testing::OpSample;
using testing::random_array;
using testing::random_strided;

const std::vector<DType> kBlasTypes = {DType::Float32, DType::Float64, DType::Int32, DType::Int64};

// Small values: exact for integers, well conditioned for floats.
NDArray rnd(const Shape& s, DType dt, uint64_t seed) {
  return is_unsigned_int(dt) ? random_array(s, dt, 0, 4, seed) : random_array(s, dt, -2, 2, seed);
}
NDArray rnd_strided(const Shape& s, DType dt, uint64_t seed) {
  return is_unsigned_int(dt) ? random_strided(s, dt, 0, 4, seed) : random_strided(s, dt, -2, 2, seed);
}
// A transposed (column-major) array holding a random array of shape s.
NDArray rnd_t(const Shape& s, DType dt, uint64_t seed) { return rnd({s[1], s[0]}, dt, seed).transpose(); }
NDArray scalar(double v, DType dt) { return NDArray::scalar(v, dt); }

Var build_dot(const std::vector<Var>& x) { return dot(x[0], x[1]); }

HYP_OPINFO({
    .name = "dot",
    .build = build_dot,
    .samples =
        [](DType dt) {
          return std::vector<OpSample>{
              {"vector.vector", {rnd({5}, dt, 1), rnd({5}, dt, 2)}},
              {"matrix.vector", {rnd({3, 5}, dt, 3), rnd({5}, dt, 4)}},
              {"vector.matrix", {rnd({5}, dt, 5), rnd({5, 4}, dt, 6)}},
              {"matrix.matrix", {rnd({3, 5}, dt, 7), rnd({5, 4}, dt, 8)}},
              {"transposed.transposed", {rnd_t({3, 5}, dt, 9), rnd_t({5, 4}, dt, 10)}},
              {"strided.strided", {rnd_strided({3, 5}, dt, 11), rnd_strided({5, 4}, dt, 12)}},
              {"strided vectors", {rnd_strided({3, 4}, dt, 13), rnd_strided({4}, dt, 14)}},
              {"transposed.vector", {rnd_t({4, 3}, dt, 15), rnd_strided({3}, dt, 16)}},
              {"vector.transposed", {rnd({3}, dt, 17), rnd_t({3, 4}, dt, 18)}},
              {"K=0", {rnd({3, 0}, dt, 19), rnd({0, 4}, dt, 20)}},
              {"M=0", {rnd({0, 3}, dt, 21), rnd({3, 4}, dt, 22)}},
              {"empty vectors", {rnd({0}, dt, 23), rnd({0}, dt, 24)}},
          };
        },
    .dtypes = kBlasTypes,
});

HYP_OPINFO({
    .name = "dot_mixed_dtypes",
    .build = build_dot,
    .samples =
        [](DType dt) {
          return std::vector<OpSample>{
              {"int32.float", {rnd({3, 4}, DType::Int32, 1), rnd({4, 2}, dt, 2)}},
              {"float32.float", {rnd({3, 4}, DType::Float32, 3), rnd({4}, dt, 4)}},
          };
        },
    .dtypes = testing::kFloatTypes,
    .grad_inputs = {1},
});

HYP_OPINFO({
    .name = "dot_nd",
    .build = build_dot,
    .samples =
        [](DType dt) {
          return std::vector<OpSample>{
              {"3d.2d", {rnd({2, 3, 4}, dt, 1), rnd({4, 5}, dt, 2)}},
              {"3d.1d", {rnd({2, 3, 4}, dt, 3), rnd({4}, dt, 4)}},
              {"2d.3d", {rnd({3, 4}, dt, 5), rnd({2, 4, 5}, dt, 6)}},
              {"3d.3d strided", {rnd_strided({2, 3, 4}, dt, 7), rnd_strided({2, 4, 3}, dt, 8)}},
              {"1d.3d", {rnd({4}, dt, 9), rnd({2, 4, 3}, dt, 10)}},
          };
        },
    .dtypes = {DType::Float32, DType::Float64, DType::Int64},
});

HYP_OPINFO({
    .name = "dot_scalar",
    .build = build_dot,
    .samples =
        [](DType dt) {
          return std::vector<OpSample>{{"0d.matrix", {rnd({}, dt, 1), rnd({2, 3}, dt, 2)}}};
        },
    .dtypes = testing::kFloatTypes,
});

HYP_OPINFO({
    .name = "gemm",
    .build = [](const std::vector<Var>& x) { return gemm(x[0], x[1], x[2], x[3], x[4]); },
    .samples =
        [](DType dt) {
          const DType ct = is_float(dt) ? dt : DType::Int64;
          return std::vector<OpSample>{
              {"plain",
               {rnd({3, 4}, dt, 1), scalar(2, ct), rnd({3, 5}, dt, 2), rnd({5, 4}, dt, 3),
                scalar(is_float(dt) ? -0.5 : 3, ct)}},
              {"transposed",
               {rnd_t({3, 4}, dt, 4), scalar(-1, ct), rnd_t({3, 5}, dt, 5), rnd_t({5, 4}, dt, 6), scalar(1, ct)}},
              {"strided",
               {rnd_strided({3, 4}, dt, 7), scalar(3, ct), rnd_strided({3, 2}, dt, 8), rnd_strided({2, 4}, dt, 9),
                scalar(2, ct)}},
              {"beta=0", {rnd({2, 3}, dt, 10), scalar(1, ct), rnd({2, 4}, dt, 11), rnd({4, 3}, dt, 12), scalar(0, ct)}},
              {"row and column",
               {rnd({3, 1}, dt, 13), scalar(2, ct), rnd({3, 4}, dt, 14), rnd({4, 1}, dt, 15), scalar(1, ct)}},
              {"K=1", {rnd({3, 4}, dt, 16), scalar(2, ct), rnd({3, 1}, dt, 17), rnd({1, 4}, dt, 18), scalar(1, ct)}},
              {"K=0", {rnd({3, 4}, dt, 19), scalar(2, ct), rnd({3, 0}, dt, 20), rnd({0, 4}, dt, 21), scalar(3, ct)}},
              {"M=0", {rnd({0, 4}, dt, 22), scalar(2, ct), rnd({0, 3}, dt, 23), rnd({3, 4}, dt, 24), scalar(3, ct)}},
          };
        },
    .dtypes = kBlasTypes,
});

HYP_OPINFO({
    .name = "gemv",
    .build = [](const std::vector<Var>& x) { return gemv(x[0], x[1], x[2], x[3], x[4]); },
    .samples =
        [](DType dt) {
          const DType ct = is_float(dt) ? dt : DType::Int64;
          return std::vector<OpSample>{
              {"plain", {rnd({3}, dt, 1), scalar(2, ct), rnd({3, 5}, dt, 2), rnd({5}, dt, 3), scalar(3, ct)}},
              {"transposed",
               {rnd_strided({4}, dt, 4), scalar(-1, ct), rnd_t({4, 3}, dt, 5), rnd_strided({3}, dt, 6), scalar(1, ct)}},
              {"strided", {rnd({4}, dt, 7), scalar(1, ct), rnd_strided({4, 3}, dt, 8), rnd({3}, dt, 9), scalar(0, ct)}},
              {"K=0", {rnd({3}, dt, 10), scalar(1, ct), rnd({3, 0}, dt, 11), rnd({0}, dt, 12), scalar(2, ct)}},
          };
        },
    .dtypes = kBlasTypes,
});

HYP_OPINFO({
    .name = "ger",
    .build = [](const std::vector<Var>& x) { return ger(x[0], x[1], x[2], x[3]); },
    .samples =
        [](DType dt) {
          const DType ct = is_float(dt) ? dt : DType::Int64;
          return std::vector<OpSample>{
              {"plain", {rnd({3, 4}, dt, 1), scalar(2, ct), rnd({3}, dt, 2), rnd({4}, dt, 3)}},
              {"transposed", {rnd_t({3, 4}, dt, 4), scalar(-1, ct), rnd_strided({3}, dt, 5), rnd_strided({4}, dt, 6)}},
              {"strided", {rnd_strided({2, 3}, dt, 7), scalar(3, ct), rnd({2}, dt, 8), rnd({3}, dt, 9)}},
              {"empty", {rnd({0, 3}, dt, 10), scalar(3, ct), rnd({0}, dt, 11), rnd({3}, dt, 12)}},
          };
        },
    .dtypes = kBlasTypes,
});

HYP_OPINFO({
    .name = "outer",
    .build = [](const std::vector<Var>& x) { return outer(x[0], x[1]); },
    .samples =
        [](DType dt) {
          return std::vector<OpSample>{
              {"vectors", {rnd({3}, dt, 1), rnd({4}, dt, 2)}},
              {"strided", {rnd_strided({3}, dt, 3), rnd_strided({2}, dt, 4)}},
              {"matrix flattened", {rnd({2, 2}, dt, 5), rnd({3}, dt, 6)}},
              {"empty", {rnd({0}, dt, 7), rnd({3}, dt, 8)}},
          };
        },
    .dtypes = kBlasTypes,
});

HYP_OPINFO({
    .name = "tensordot_int_axes",
    .build = [](const std::vector<Var>& x) { return tensordot(x[0], x[1], 2); },
    .samples =
        [](DType dt) {
          return std::vector<OpSample>{
              {"3d.3d", {rnd({2, 3, 4}, dt, 1), rnd({3, 4, 5}, dt, 2)}},
              {"2d.2d full", {rnd({3, 4}, dt, 3), rnd({3, 4}, dt, 4)}},
              {"strided 4d.2d", {rnd_strided({2, 3, 2, 3}, dt, 5), rnd_strided({2, 3}, dt, 6)}},
              {"zero-size", {rnd({2, 0, 4}, dt, 7), rnd({0, 4, 3}, dt, 8)}},
          };
        },
    .dtypes = kBlasTypes,
});

HYP_OPINFO({
    .name = "tensordot_axis_lists",
    .build =
        [](const std::vector<Var>& x) {
          return tensordot(x[0], x[1], {1, 0}, {0, 2});
        },
    .samples =
        [](DType dt) {
          return std::vector<OpSample>{
              {"3d.3d", {rnd({3, 4, 5}, dt, 1), rnd({4, 2, 3}, dt, 2)}},
              {"2d.3d", {rnd({3, 4}, dt, 3), rnd({4, 2, 3}, dt, 4)}},
              {"strided", {rnd_strided({3, 2, 2}, dt, 5), rnd_strided({2, 4, 3}, dt, 6)}},
          };
        },
    .dtypes = kBlasTypes,
});

HYP_OPINFO({
    .name = "tensordot_outer",
    .build = [](const std::vector<Var>& x) { return tensordot(x[0], x[1], 0); },
    .samples =
        [](DType dt) {
          return std::vector<OpSample>{{"2d.1d", {rnd({2, 3}, dt, 1), rnd({4}, dt, 2)}}};
        },
    .dtypes = kBlasTypes,
});

HYP_OPINFO({
    .name = "batched_dot",
    .build = [](const std::vector<Var>& x) { return batched_dot(x[0], x[1]); },
    .samples =
        [](DType dt) {
          return std::vector<OpSample>{
              {"3d.3d", {rnd({3, 2, 4}, dt, 1), rnd({3, 4, 5}, dt, 2)}},
              {"3d.2d", {rnd({3, 2, 4}, dt, 3), rnd({3, 4}, dt, 4)}},
              {"2d.3d", {rnd({3, 4}, dt, 5), rnd({3, 4, 2}, dt, 6)}},
              {"2d.2d", {rnd({3, 4}, dt, 7), rnd({3, 4}, dt, 8)}},
              {"strided", {rnd_strided({2, 3, 4}, dt, 9), rnd_strided({2, 4, 3}, dt, 10)}},
              {"transposed", {rnd({2, 4, 3}, dt, 11).transpose(std::vector<int>{0, 2, 1}), rnd({2, 4}, dt, 12)}},
              {"zero batch", {rnd({0, 2, 4}, dt, 13), rnd({0, 4, 5}, dt, 14)}},
              {"K=0", {rnd({2, 3, 0}, dt, 15), rnd({2, 0, 2}, dt, 16)}},
          };
        },
    .dtypes = kBlasTypes,
});

HYP_OPINFO({
    .name = "batched_dot_nd",
    .build = [](const std::vector<Var>& x) { return batched_dot(x[0], x[1]); },
    .samples =
        [](DType dt) {
          return std::vector<OpSample>{
              {"4d.3d", {rnd({2, 3, 2, 4}, dt, 1), rnd({2, 4, 3}, dt, 2)}},
              {"3d.4d", {rnd({2, 3, 4}, dt, 3), rnd({2, 2, 4, 3}, dt, 4)}},
              {"1d.3d", {rnd({2}, dt, 5), rnd({2, 3, 4}, dt, 6)}},
          };
        },
    .dtypes = {DType::Float32, DType::Float64, DType::Int32},
});

// ------------------------------------------------------------------------------------------------
// Exact values.

NDArray arr(const std::vector<double>& v, const Shape& s, DType dt = DType::Float64) { return make_array(v, s, dt); }

NDArray eval2(const Var& out, const Var& a, const NDArray& av, const Var& b, const NDArray& bv,
              std::string_view be = kCpuBackend) {
  return eval(out, {{a, av}, {b, bv}}, be);
}

TEST(BlasDot, ExactValuesForEveryCombination) {
  for (DType dt : kBlasTypes) {
    SCOPED_TRACE(std::string(dtype_name(dt)));
    Var m = variable(matrix_type(dt), "m"), n = variable(matrix_type(dt), "n");
    Var u = variable(vector_type(dt), "u"), v = variable(vector_type(dt), "v");
    const NDArray M = arr({1, 2, 3, 4}, {2, 2}, dt), N = arr({5, 6, 7, 8}, {2, 2}, dt);
    const NDArray U = arr({1, 2}, {2}, dt), V = arr({3, -4}, {2}, dt);
    for (std::string_view be : {kCpuBackend, kReferenceBackend}) {
      EXPECT_ALLCLOSE(eval2(dot(m, n), m, M, n, N, be), arr({19, 22, 43, 50}, {2, 2}, dt));
      EXPECT_ALLCLOSE(eval2(dot(m, v), m, M, v, V, be), arr({-5, -7}, {2}, dt));
      EXPECT_ALLCLOSE(eval2(dot(u, n), u, U, n, N, be), arr({19, 22}, {2}, dt));
      NDArray s = eval2(dot(u, v), u, U, v, V, be);
      EXPECT_EQ(s.ndim(), 0);
      EXPECT_EQ(s.get_flat(0), -5);
      EXPECT_ALLCLOSE(eval2(dot(m, n), m, M.transpose(), n, N.transpose(), be), arr({23, 31, 34, 46}, {2, 2}, dt));
    }
  }
}

TEST(BlasDot, TypesNamesAndBroadcastable) {
  Var r = variable(row_type(DType::Float32), "r");
  Var m = variable(matrix_type(DType::Float64), "m");
  Var i = variable(vector_type(DType::Int32), "i");
  Var d = dot(r, m);
  EXPECT_EQ(d->dtype(), DType::Float64);
  EXPECT_EQ(d->type.broadcastable, (std::vector<bool>{true, false}));
  EXPECT_EQ(d->owner->op->name(), "dot");
  EXPECT_EQ(dot(i, i)->dtype(), DType::Int32);
  EXPECT_EQ(dot(i, i)->ndim(), 0);
  Var f = variable(vector_type(DType::Float32), "f");
  EXPECT_EQ(dot(i, f)->dtype(), DType::Float64);  // numpy: int32 with float32 -> float64
  Var t3 = variable(tensor3_type(DType::Float32), "t3");
  EXPECT_EQ(dot(t3, m)->ndim(), 3);
  EXPECT_EQ(dot(t3, f)->ndim(), 2);
  EXPECT_EQ(dot(f, t3)->ndim(), 2);
  EXPECT_EQ(dot(variable(scalar_type(DType::Float32)), m)->ndim(), 2);
}

TEST(BlasDot, MixedDtypesPromote) {
  Var a = variable(matrix_type(DType::Int32), "a");
  Var b = variable(vector_type(DType::Float32), "b");
  NDArray out = eval2(dot(a, b), a, arr({1, 2, 3, 4}, {2, 2}, DType::Int32), b, arr({0.5, 0.25}, {2}, DType::Float32));
  EXPECT_EQ(out.dtype(), DType::Float64);
  EXPECT_ALLCLOSE(out, arr({1, 2.5}, {2}));
}

TEST(BlasDot, IntegerOverflowWrapsLikeNumpy) {
  Var a = variable(vector_type(DType::Int8), "a");
  NDArray v = arr({100, 100}, {2}, DType::Int8);
  NDArray out = eval(dot(a, a), {{a, v}});
  EXPECT_EQ(out.dtype(), DType::Int8);
  EXPECT_EQ(out.at<int8_t>({}), static_cast<int8_t>(20000 & 0xff));
}

TEST(BlasDot, ZeroSize) {
  Var a = variable(matrix_type(DType::Float32), "a"), b = variable(matrix_type(DType::Float32), "b");
  NDArray k0 = eval2(dot(a, b), a, NDArray::empty({3, 0}, DType::Float32), b, NDArray::empty({0, 2}, DType::Float32));
  EXPECT_ALLCLOSE(k0, NDArray::zeros({3, 2}, DType::Float32));
  NDArray m0 = eval2(dot(a, b), a, NDArray::empty({0, 4}, DType::Float32), b, NDArray::empty({4, 2}, DType::Float32));
  EXPECT_EQ(m0.shape(), (Shape{0, 2}));
  Var u = variable(vector_type(DType::Float64), "u");
  NDArray e = NDArray::empty({0}, DType::Float64);
  EXPECT_EQ(eval(dot(u, u), {{u, e}}).get_flat(0), 0.0);
}

TEST(BlasDot, ShapeMismatchNamesTheOpAndShapes) {
  Var a = variable(matrix_type(DType::Float64), "a"), b = variable(matrix_type(DType::Float64), "b");
  try {
    eval2(dot(a, b), a, NDArray::zeros({2, 3}, DType::Float64), b, NDArray::zeros({4, 2}, DType::Float64));
    FAIL() << "expected ValueError";
  } catch (const ValueError& e) {
    const std::string msg = e.what();
    EXPECT_EQ(msg.rfind("dot", 0), 0u) << msg;
    EXPECT_NE(msg.find("(2, 3)"), std::string::npos) << msg;
    EXPECT_NE(msg.find("(4, 2)"), std::string::npos) << msg;
  }
}

TEST(BlasDot, TypeErrors) {
  Var t3 = variable(tensor3_type(DType::Float64), "t3");
  Var m = variable(matrix_type(DType::Float64), "m");
  try {
    apply_op1(std::make_shared<Dot>(), {t3, m});
    FAIL() << "expected TypeError";
  } catch (const TypeError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("dot: ", 0), 0u) << e.what();
  }
  EXPECT_THROW(apply_op1(std::make_shared<Dot>(), {m}), TypeError);
}

// ------------------------------------------------------------------------------------------------
// Gemm, Gemv, Ger.

struct KernelRun {
  std::vector<NDArray> in;
  NDArray out;
  void run(std::string_view be, const Var& v) {
    std::vector<NDArray*> ip, op{&out};
    for (auto& a : in) ip.push_back(&a);
    make_kernel(be, *v->owner)->run(KernelArgs{ip, op});
  }
};

std::vector<Var> vars_like(const std::vector<NDArray>& xs) {
  std::vector<Var> r;
  for (const auto& x : xs) r.push_back(variable(TensorType(x.dtype(), std::vector<bool>(x.ndim(), false))));
  return r;
}

TEST(BlasGemm, ExactValuesAndNames) {
  Var z = variable(matrix_type(DType::Float64), "z"), x = variable(matrix_type(DType::Float64), "x"),
      y = variable(matrix_type(DType::Float64), "y");
  Var g = gemm(z, constant(2.0, DType::Float64), x, y, constant(-1.0, DType::Float64));
  EXPECT_EQ(g->owner->op->name(), "Gemm{no_inplace}");
  EXPECT_TRUE(g->owner->op->destroy_map().empty());
  NDArray out =
      eval(g, {{z, arr({1, 1, 1, 1}, {2, 2})}, {x, arr({1, 2, 3, 4}, {2, 2})}, {y, arr({5, 6, 7, 8}, {2, 2})}});
  EXPECT_ALLCLOSE(out, arr({37, 43, 85, 99}, {2, 2}));
  Gemm inplace(true);
  EXPECT_EQ(inplace.name(), "Gemm{inplace}");
  EXPECT_EQ(inplace.destroy_map(), (AliasMap{{0}}));
  EXPECT_FALSE(inplace.equals(Gemm(false)));
  EXPECT_TRUE(inplace.equals(Gemm(true)));
  EXPECT_EQ(Gemv(true).name(), "Gemv{inplace}");
  EXPECT_EQ(Ger(false).name(), "Ger{non-destructive}");
  EXPECT_EQ(Ger(true).destroy_map(), (AliasMap{{0}}));
}

TEST(BlasGemm, InplaceOverwritesZInAnyLayout) {
  for (std::string_view be : {kCpuBackend, kReferenceBackend})
    for (DType dt : {DType::Float32, DType::Float64, DType::Int32})
      for (int layout = 0; layout < 3; ++layout) {
        SCOPED_TRACE(std::string(dtype_name(dt)) + " layout " + std::to_string(layout));
        NDArray zbase = rnd({3, 4}, dt, 1);
        NDArray z = layout == 0 ? zbase.copy() : layout == 1 ? rnd_t({3, 4}, dt, 1) : rnd_strided({3, 4}, dt, 1);
        NDArray x = rnd({3, 5}, dt, 2), y = rnd_t({5, 4}, dt, 3);
        const NDArray alpha = scalar(2, is_float(dt) ? dt : DType::Int64);
        const NDArray beta = scalar(3, is_float(dt) ? dt : DType::Int64);
        std::vector<NDArray> ins{z, alpha, x, y, beta};
        auto vs = vars_like(ins);
        Var expected_v = gemm(vs[0], vs[1], vs[2], vs[3], vs[4]);
        NDArray expected = eval(expected_v, {{vs[0], z.copy()}, {vs[1], alpha}, {vs[2], x}, {vs[3], y}, {vs[4], beta}},
                                kReferenceBackend);
        Var g = apply_op1(std::make_shared<Gemm>(true), vs);
        KernelRun k{ins, {}};
        k.run(be, g);
        EXPECT_TRUE(k.out.shares_buffer(z));
        EXPECT_ALLCLOSE(z, expected);
        EXPECT_ALLCLOSE(k.out, expected);
      }
}

TEST(BlasGemm, InplaceWithZAlsoAnOperand) {
  NDArray z = arr({1, 2, 3, 4}, {2, 2});
  std::vector<NDArray> ins{z, scalar(1, DType::Float64), z, z, scalar(1, DType::Float64)};
  auto vs = vars_like(ins);
  KernelRun k{ins, {}};
  k.run(kCpuBackend, apply_op1(std::make_shared<Gemm>(true), vs));
  EXPECT_ALLCLOSE(z, arr({8, 12, 18, 26}, {2, 2}));  // z + z·z
}

TEST(BlasGemm, BetaZeroIgnoresNaNInZ) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (std::string_view be : {kCpuBackend, kReferenceBackend}) {
    // Each shape takes a different BLAS path: gemm, gemv (column and row), dot.
    for (Shape zs : {Shape{2, 3}, Shape{2, 1}, Shape{1, 3}, Shape{1, 1}}) {
      NDArray z = NDArray::full(zs, DType::Float32, nan);
      NDArray x = rnd({zs[0], 4}, DType::Float32, 1), y = rnd({4, zs[1]}, DType::Float32, 2);
      std::vector<NDArray> ins{z, scalar(1, DType::Float32), x, y, scalar(0, DType::Float32)};
      auto vs = vars_like(ins);
      KernelRun k{ins, {}};
      k.run(be, apply_op1(std::make_shared<Gemm>(true), vs));
      NDArray expected = eval(dot(vs[2], vs[3]), {{vs[2], x}, {vs[3], y}}, kReferenceBackend);
      EXPECT_ALLCLOSE(z, expected);
    }
  }
}

TEST(BlasGemm, OutputCellHoldingNaNIsOverwritten) {
  Var z = variable(matrix_type(DType::Float64)), x = variable(matrix_type(DType::Float64)),
      y = variable(matrix_type(DType::Float64));
  Var g = gemm(z, constant(1.0, DType::Float64), x, y, constant(0.0, DType::Float64));
  KernelRun k{{arr({1, 2}, {2, 1}), scalar(1, DType::Float64), arr({1, 2}, {2, 1}), arr({3}, {1, 1}),
               scalar(0, DType::Float64)},
              NDArray::full({2, 1}, DType::Float64, std::nan(""))};
  k.run(kCpuBackend, g);
  EXPECT_ALLCLOSE(k.out, arr({3, 6}, {2, 1}));
}

TEST(BlasGemm, TypeAndShapeErrors) {
  Var zf = variable(matrix_type(DType::Float32), "z"), xd = variable(matrix_type(DType::Float64), "x");
  Var s = constant(1.0, DType::Float32);
  auto expect_type_error = [](auto&& f, const std::string& prefix) {
    try {
      f();
      ADD_FAILURE() << "expected TypeError";
    } catch (const TypeError& e) {
      EXPECT_EQ(std::string(e.what()).rfind(prefix, 0), 0u) << e.what();
    }
  };
  expect_type_error([&] { gemm(zf, s, xd, zf, s); }, "Gemm{no_inplace}: ");
  expect_type_error([&] { gemm(zf, zf, zf, zf, s); }, "Gemm{no_inplace}: ");
  expect_type_error([&] { gemm(variable(vector_type(DType::Float32)), s, zf, zf, s); }, "Gemm{no_inplace}: ");
  Var zi = variable(matrix_type(DType::Int32));
  expect_type_error([&] { gemm(zi, constant(0.5, DType::Float64), zi, zi, constant(1, DType::Int32)); },
                    "Gemm{no_inplace}: ");
  Var v = variable(vector_type(DType::Float32));
  expect_type_error([&] { gemv(zf, s, zf, v, s); }, "Gemv{no_inplace}: ");
  expect_type_error([&] { ger(v, s, v, v); }, "Ger{non-destructive}: ");
  expect_type_error([&] { batched_dot(variable(scalar_type(DType::Float32)), v); }, "batched_dot: ");
  expect_type_error([&] { apply_op1(std::make_shared<BatchedDot>(), {v, v}); }, "BatchedDot: ");

  auto expect_value_error = [](auto&& f, const std::string& prefix) {
    try {
      f();
      ADD_FAILURE() << "expected ValueError";
    } catch (const ValueError& e) {
      EXPECT_EQ(std::string(e.what()).rfind(prefix, 0), 0u) << e.what();
    }
  };
  Var x = variable(matrix_type(DType::Float32)), y = variable(matrix_type(DType::Float32));
  auto m = [](Shape s) { return NDArray::zeros(s, DType::Float32); };
  expect_value_error(
      [&] {
        eval(gemm(zf, s, x, y, s), {{zf, m({2, 2})}, {x, m({2, 3})}, {y, m({2, 2})}});
      },
      "Gemm{no_inplace}: ");
  Var w = variable(vector_type(DType::Float32));
  expect_value_error(
      [&] {
        eval(gemv(v, s, x, w, s), {{v, m({3})}, {x, m({3, 2})}, {w, m({3})}});
      },
      "Gemv{no_inplace}: ");
  expect_value_error(
      [&] {
        eval(ger(x, s, v, w), {{x, m({2, 2})}, {v, m({2})}, {w, m({3})}});
      },
      "Ger{non-destructive}: ");
  Var b3 = variable(tensor3_type(DType::Float32)), c3 = variable(tensor3_type(DType::Float32));
  expect_value_error([&] { eval(batched_dot(b3, c3), {{b3, m({2, 2, 3})}, {c3, m({3, 3, 2})}}); }, "BatchedDot: ");
  expect_value_error([&] { eval(batched_dot(b3, c3), {{b3, m({2, 2, 3})}, {c3, m({2, 2, 2})}}); }, "BatchedDot: ");
  expect_value_error([&] { tensordot(x, y, 3); }, "tensordot: ");
  expect_value_error([&] { tensordot(x, y, {0, 1}, {0}); }, "tensordot: ");
  expect_value_error([&] { tensordot(x, y, {0, 0}, {0, 1}); }, "tensordot: ");
  EXPECT_THROW(tensordot(x, y, {2}, {0}), IndexError);
}

TEST(BlasGemv, ExactValues) {
  Var z = variable(vector_type(DType::Float64)), A = variable(matrix_type(DType::Float64)),
      x = variable(vector_type(DType::Float64));
  Var g = gemv(z, constant(2.0, DType::Float64), A, x, constant(1.0, DType::Float64));
  for (std::string_view be : {kCpuBackend, kReferenceBackend})
    EXPECT_ALLCLOSE(eval(g, {{z, arr({1, 1}, {2})}, {A, arr({1, 2, 3, 4}, {2, 2})}, {x, arr({1, -1}, {2})}}, be),
                    arr({-1, -1}, {2}));
}

TEST(BlasGer, ExactValuesAndInplace) {
  Var A = variable(matrix_type(DType::Float32)), x = variable(vector_type(DType::Float32)),
      y = variable(vector_type(DType::Float32));
  Var g = ger(A, constant(2.0, DType::Float32), x, y);
  NDArray Av = arr({1, 1, 1, 1, 1, 1}, {2, 3}, DType::Float32);
  NDArray xv = arr({1, 2}, {2}, DType::Float32), yv = arr({1, 0, -1}, {3}, DType::Float32);
  NDArray want = arr({3, 1, -1, 5, 1, -3}, {2, 3}, DType::Float32);
  EXPECT_ALLCLOSE(eval(g, {{A, Av}, {x, xv}, {y, yv}}), want);
  for (std::string_view be : {kCpuBackend, kReferenceBackend}) {
    NDArray a2 = Av.copy();
    std::vector<NDArray> ins{a2, scalar(2, DType::Float32), xv, yv};
    KernelRun k{ins, {}};
    k.run(be, apply_op1(std::make_shared<Ger>(true), vars_like(ins)));
    EXPECT_ALLCLOSE(a2, want);
  }
}

TEST(BlasOuterTensordotBatched, ExactValues) {
  Var u = variable(vector_type(DType::Float64)), v = variable(vector_type(DType::Float64));
  EXPECT_ALLCLOSE(eval2(outer(u, v), u, arr({1, 2}, {2}), v, arr({3, 4, 5}, {3})), arr({3, 4, 5, 6, 8, 10}, {2, 3}));
  Var a = variable(tensor3_type(DType::Float64)), b = variable(matrix_type(DType::Float64));
  // a (2,1,2) . b (2,2) over a's last axis: [[1,2]],[[3,4]] . [[1,0],[0,2]]
  NDArray av = arr({1, 2, 3, 4}, {2, 1, 2}), bv = arr({1, 0, 0, 2}, {2, 2});
  EXPECT_ALLCLOSE(eval2(tensordot(a, b, 1), a, av, b, bv), arr({1, 4, 3, 8}, {2, 1, 2}));
  EXPECT_ALLCLOSE(eval2(tensordot(a, b, {0, 2}, {0, 1}), a, av, b, bv), arr({1 + 8}, {1}));
  EXPECT_ALLCLOSE(eval2(dot(a, b), a, av, b, bv), arr({1, 4, 3, 8}, {2, 1, 2}));
  Var p = variable(tensor3_type(DType::Float64)), q = variable(tensor3_type(DType::Float64));
  NDArray pv = arr({1, 2, 3, 4, 5, 6, 7, 8}, {2, 2, 2}), qv = arr({1, 0, 0, 1, 2, 0, 0, 2}, {2, 2, 2});
  EXPECT_ALLCLOSE(eval2(batched_dot(p, q), p, pv, q, qv), arr({1, 2, 3, 4, 10, 12, 14, 16}, {2, 2, 2}));
  Var r = variable(matrix_type(DType::Float64));
  EXPECT_ALLCLOSE(eval2(batched_dot(p, r), p, pv, r, arr({1, 1, 0, 1}, {2, 2})), arr({3, 7, 6, 8}, {2, 2}));
  EXPECT_EQ(batched_dot(p, r)->owner->op->name(), "BatchedDot");
}

// The CPU's batched loop of small products (cpu_batched_matmul: one layout for the batch, one
// BLAS call per matrix on the thread pool) against the reference on every layout of each operand:
// C-ordered, each matrix transposed, the batch axis innermost, every other batch, a layout BLAS
// cannot take (a copy per matrix); vectors and 1 x 1 products; threaded and not.
TEST(BlasOuterTensordotBatched, SmallBatchedProductsMatchTheReferenceOnEveryLayout) {
  const long saved = config().openmp_elemwise_minsize;
  for (DType dt : {DType::Float32, DType::Float64}) {
    Var p = variable(tensor3_type(dt), "p"), q = variable(tensor3_type(dt), "q");
    for (const auto& [b, m, k, n] : std::vector<std::array<int64_t, 4>>{
             {7, 8, 8, 8}, {64, 3, 5, 2}, {5, 1, 9, 4}, {6, 4, 9, 1}, {9, 1, 1, 1}, {3, 40, 40, 40}, {1, 5, 5, 5}}) {
      auto layouts = [&](int64_t d0, int64_t d1, int64_t d2, uint64_t seed) {
        const int perm_t[] = {0, 2, 1}, perm_b[] = {1, 2, 0};
        std::vector<NDArray> r{rnd({d0, d1, d2}, dt, seed), rnd({d0, d2, d1}, dt, seed).transpose(perm_t),
                               rnd({d2, d0, d1}, dt, seed).transpose(perm_b),
                               rnd({2 * d0, d1, d2}, dt, seed).slice(0, 0, 2 * d0, 2),
                               rnd({d0, d1, 2 * d2}, dt, seed).slice(2, 0, 2 * d2, 2)};
        return r;
      };
      for (const NDArray& pv : layouts(b, m, k, 3)) {
        for (const NDArray& qv : layouts(b, k, n, 4)) {
          for (long minsize : {saved, 16L}) {
            config().openmp_elemwise_minsize = minsize;
            const NDArray got = eval2(batched_dot(p, q), p, pv, q, qv);
            const NDArray want = eval2(batched_dot(p, q), p, pv, q, qv, kReferenceBackend);
            EXPECT_ALLCLOSE(got, want, 1e-5, 1e-5)
                << dtype_name(dt) << " " << pv.strides().str() << " " << qv.strides().str();
          }
        }
      }
    }
  }
  config().openmp_elemwise_minsize = saved;
}

// ------------------------------------------------------------------------------------------------
// The matrix-product primitive on every layout, CPU against reference.

TEST(BlasMatmul, CpuMatchesReferenceOnEveryLayout) {
  auto layouts = [](const Shape& s, DType dt, uint64_t seed) {
    std::vector<NDArray> r{rnd(s, dt, seed), rnd_t(s, dt, seed), rnd_strided(s, dt, seed)};
    r.push_back(rnd({s[0], 1}, dt, seed).broadcast_to(s));                                      // zero stride
    if (s[1] > 0) r.push_back(rnd({s[0], s[1] * 2}, dt, seed).slice(1, s[1] * 2 - 1, -1, -2));  // negative stride
    NDArray big = rnd({s[0] + 1, s[1] + 3}, dt, seed);
    r.push_back(big.slice(0, 1, s[0] + 1, 1).slice(1, 2, s[1] + 2, 1));  // padded leading dimension
    return r;
  };
  for (DType dt : {DType::Float32, DType::Float64})
    for (Shape mnk : {Shape{3, 4, 5}, Shape{1, 4, 5}, Shape{3, 1, 5}, Shape{1, 1, 5}, Shape{3, 4, 1}, Shape{2, 2, 0}}) {
      const int64_t M = mnk[0], N = mnk[1], K = mnk[2];
      const NDArray c0 = rnd({M, N}, dt, 3);
      for (const NDArray& A : layouts({M, K}, dt, 1))
        for (const NDArray& B : layouts({K, N}, dt, 2))
          for (int c_layout = 0; c_layout < 3; ++c_layout)
            for (double beta : {0.0, 1.0, 0.5}) {
              NDArray want = c0.copy();
              NDArray got = c_layout == 0   ? c0.copy()
                            : c_layout == 1 ? NDArray::empty({N, M}, dt).transpose()
                                            : NDArray::empty({M, N * 2}, dt).slice(1, 0, N * 2, 2);
              got.assign(c0);
              reference_matmul(A, B, want, 1.5, beta);
              cpu_matmul(A, B, got, 1.5, beta);
              EXPECT_ALLCLOSE(got, want, testing::default_rtol(dt), testing::default_atol(dt))
                  << "M N K " << mnk.str() << " A " << A.describe() << " B " << B.describe() << " C layout " << c_layout
                  << " beta " << beta;
            }
    }
}

// ------------------------------------------------------------------------------------------------
// Gradients and Rop.

TEST(BlasGrad, VerifyGradForEveryCombination) {
  const DType f = DType::Float64;
  verify_grad([](const std::vector<Var>& x) { return dot(x[0], x[1]); }, {rnd({4}, f, 1), rnd({4}, f, 2)});
  verify_grad([](const std::vector<Var>& x) { return dot(x[0], x[1]); }, {rnd({3, 4}, f, 1), rnd({4}, f, 2)});
  verify_grad([](const std::vector<Var>& x) { return dot(x[0], x[1]); }, {rnd({4}, f, 1), rnd({4, 2}, f, 2)});
  verify_grad([](const std::vector<Var>& x) { return dot(x[0], x[1]); }, {rnd_t({3, 4}, f, 1), rnd({4, 2}, f, 2)});
  verify_grad([](const std::vector<Var>& x) { return dot(x[0], x[1]); }, {rnd({2, 3, 4}, f, 1), rnd({4, 2}, f, 2)});
  verify_grad([](const std::vector<Var>& x) { return gemm(x[0], x[1], x[2], x[3], x[4]); },
              {rnd({2, 3}, f, 1), scalar(0.7, f), rnd({2, 4}, f, 2), rnd({4, 3}, f, 3), scalar(-1.3, f)});
  verify_grad([](const std::vector<Var>& x) { return gemv(x[0], x[1], x[2], x[3], x[4]); },
              {rnd({2}, f, 1), scalar(0.7, f), rnd({2, 4}, f, 2), rnd({4}, f, 3), scalar(-1.3, f)});
  verify_grad([](const std::vector<Var>& x) { return ger(x[0], x[1], x[2], x[3]); },
              {rnd({2, 3}, f, 1), scalar(0.7, f), rnd({2}, f, 2), rnd({3}, f, 3)});
  verify_grad([](const std::vector<Var>& x) { return outer(x[0], x[1]); }, {rnd({2}, f, 1), rnd({3}, f, 2)});
  verify_grad(
      [](const std::vector<Var>& x) {
        return tensordot(x[0], x[1], {1, 0}, {0, 2});
      },
      {rnd({3, 2, 2}, f, 1), rnd({2, 4, 3}, f, 2)});
  for (auto [sa, sb] : std::vector<std::pair<Shape, Shape>>{{{2, 3, 4}, {2, 4, 2}},
                                                            {{2, 3, 4}, {2, 4}},
                                                            {{2, 4}, {2, 4, 3}},
                                                            {{2, 4}, {2, 4}},
                                                            {{2, 2, 3, 4}, {2, 4, 2}}})
    verify_grad([](const std::vector<Var>& x) { return batched_dot(x[0], x[1]); }, {rnd(sa, f, 1), rnd(sb, f, 2)});
}

TEST(BlasGrad, MixedDtypeGradientsHaveTheInputDtype) {
  Var a = variable(matrix_type(DType::Float32), "a"), b = variable(matrix_type(DType::Float64), "b");
  auto g = grad(sum(dot(a, b)), {a, b});
  EXPECT_EQ(g[0]->dtype(), DType::Float32);
  EXPECT_EQ(g[1]->dtype(), DType::Float64);
  NDArray gv = eval(g[0], {{a, arr({1, 2}, {1, 2}, DType::Float32)}, {b, arr({1, 2, 3, 4}, {2, 2})}});
  EXPECT_ALLCLOSE(gv, arr({3, 7}, {1, 2}, DType::Float32));
}

TEST(BlasGrad, RopMatchesTheLinearization) {
  const DType f = DType::Float64;
  Var x = variable(matrix_type(f), "x"), y = variable(matrix_type(f), "y");
  Var ex = variable(matrix_type(f), "ex"), ey = variable(matrix_type(f), "ey");
  Var z = variable(matrix_type(f), "z"), a = variable(scalar_type(f), "a"), b = variable(scalar_type(f), "b");
  Var ez = variable(matrix_type(f), "ez"), ea = variable(scalar_type(f), "ea"), eb = variable(scalar_type(f), "eb");
  std::vector<std::pair<Var, NDArray>> in{{x, rnd({2, 3}, f, 1)},  {y, rnd({3, 2}, f, 2)},  {ex, rnd({2, 3}, f, 3)},
                                          {ey, rnd({3, 2}, f, 4)}, {z, rnd({2, 2}, f, 5)},  {a, scalar(0.5, f)},
                                          {b, scalar(2, f)},       {ez, rnd({2, 2}, f, 6)}, {ea, scalar(-1, f)},
                                          {eb, scalar(3, f)}};
  Var r = Rop({dot(x, y)}, {x, y}, {ex, ey})[0];
  EXPECT_ALLCLOSE(eval(r, in), eval(dot(ex, y) + dot(x, ey), in));
  Var rg = Rop({gemm(z, a, x, y, b)}, {z, a, x, y, b}, {ez, ea, ex, ey, eb})[0];
  Var want = b * ez + eb * z + a * (dot(ex, y) + dot(x, ey)) + ea * dot(x, y);
  EXPECT_ALLCLOSE(eval(rg, in), eval(want, in));
  Var u = variable(vector_type(f), "u"), v = variable(vector_type(f), "v");
  Var eu = variable(vector_type(f), "eu"), ev = variable(vector_type(f), "ev");
  for (auto& kv : std::vector<std::pair<Var, NDArray>>{
           {u, rnd({2}, f, 7)}, {v, rnd({3}, f, 8)}, {eu, rnd({2}, f, 9)}, {ev, rnd({3}, f, 10)}})
    in.push_back(kv);
  // Gemv: z <- u (2,), A <- x (2, 3), x <- v (3,); Ger: A <- z (2, 2) is replaced by x (2, 3).
  Var rv = Rop({gemv(u, a, x, v, b)}, {u, a, x, v, b}, {eu, ea, ex, ev, eb})[0];
  Var want_v = b * eu + eb * u + a * (dot(ex, v) + dot(x, ev)) + ea * dot(x, v);
  EXPECT_ALLCLOSE(eval(rv, in), eval(want_v, in));
  Var rr = Rop({ger(x, a, u, v)}, {x, a, u, v}, {ex, ea, eu, ev})[0];
  Var want_r = ex + a * (outer(eu, v) + outer(u, ev)) + ea * outer(u, v);
  EXPECT_ALLCLOSE(eval(rr, in), eval(want_r, in));
  Var p = variable(tensor3_type(f), "p"), q = variable(tensor3_type(f), "q");
  Var ep = variable(tensor3_type(f), "ep"), eq = variable(tensor3_type(f), "eq");
  std::vector<std::pair<Var, NDArray>> in3{
      {p, rnd({2, 2, 3}, f, 1)}, {q, rnd({2, 3, 2}, f, 2)}, {ep, rnd({2, 2, 3}, f, 3)}, {eq, rnd({2, 3, 2}, f, 4)}};
  Var rb = Rop({batched_dot(p, q)}, {p, q}, {ep, eq})[0];
  EXPECT_ALLCLOSE(eval(rb, in3), eval(batched_dot(ep, q) + batched_dot(p, eq), in3));
}

TEST(BlasGrad, GradientsKeepTheInputType) {
  Var z = variable(row_type(DType::Float32), "z"), x = variable(matrix_type(DType::Float32), "x");
  Var y = variable(matrix_type(DType::Float32), "y");
  Var a = variable(scalar_type(DType::Float64), "a");
  auto g = grad(sum(gemm(z, a, x, y, constant(1.0, DType::Float32))), {z, a, x, y});
  EXPECT_EQ(g[0]->type, z->type);
  EXPECT_EQ(g[1]->type, a->type);
  EXPECT_EQ(g[2]->type, x->type);
  EXPECT_EQ(g[3]->type, y->type);
  std::vector<std::pair<Var, NDArray>> in{{z, rnd({1, 3}, DType::Float32, 1)},
                                          {a, scalar(2, DType::Float64)},
                                          {x, rnd({1, 2}, DType::Float32, 2)},
                                          {y, rnd({2, 3}, DType::Float32, 3)}};
  NDArray gx = eval(g[2], in);
  EXPECT_EQ(gx.shape(), (Shape{1, 2}));
  EXPECT_EQ(eval(g[1], in).dtype(), DType::Float64);
}

TEST(BlasGrad, IntegerInputsHaveNoGradient) {
  Var i = variable(vector_type(DType::Int32), "i"), x = variable(vector_type(DType::Float64), "x");
  Var g = grad(dot(i, x), x);
  EXPECT_ALLCLOSE(eval(g, {{i, arr({1, 2}, {2}, DType::Int32)}, {x, arr({3, 4}, {2})}}), arr({1, 2}, {2}));
}

}  // namespace
}  // namespace hypatia
