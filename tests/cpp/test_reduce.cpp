// Reductions: OpInfo entries (sum prod mean var std max min all any argmax argmin cumsum cumprod),
// exact values, dtype rules, zero-size and error paths, gradients, threaded CPU paths.
#include "hypatia/backends/cpu/elemwise_simd.h"
#include "test_util.h"

namespace hypatia {
namespace {
using testing::make_array;
using testing::OpInfo;
using testing::OpSample;
using testing::random_array;
using testing::random_strided;

// ------------------------------------------------------------------------------------------------
// Sample inputs

/// Value range per dtype: small integers (so sums and products stay exact), positive floats near 1
/// for products (no overflow, no sign changes that finite differences straddle).
std::pair<double, double> value_range(DType dt, bool positive) {
  if (is_unsigned_int(dt)) return {0, 4};
  if (is_integer(dt)) return {-3, 4};
  if (positive) return {0.5, 1.5};
  return {-1, 1};
}

/// 3-d samples for reductions over specific axes: contiguous, non-contiguous, broadcastable
/// (a length-1 dim), and zero-size along an axis that is kept (so max/min stay defined).
std::vector<OpSample> samples_3d(DType dt, bool positive, bool zero_size = true) {
  auto [lo, hi] = value_range(dt, positive);
  std::vector<OpSample> s = {
      {"contiguous (2,3,4)", {random_array({2, 3, 4}, dt, lo, hi, 1)}},
      {"strided (3,2,4)", {random_strided({3, 2, 4}, dt, lo, hi, 2)}},
      {"broadcastable (1,3,2)", {random_array({1, 3, 2}, dt, lo, hi, 3)}},
  };
  if (zero_size) s.push_back({"zero-size (2,3,0)", {NDArray::zeros({2, 3, 0}, dt)}});
  return s;
}

/// Samples for full reductions: 0-d, vector, strided matrix, broadcastable row, and a zero-size
/// matrix when the reduction has an identity.
std::vector<OpSample> samples_all(DType dt, bool positive, bool zero_size, bool grad_0d = true) {
  auto [lo, hi] = value_range(dt, positive);
  std::vector<OpSample> s = {
      {"0-d", {random_array({}, dt, lo, hi, 4)}, grad_0d},
      {"vector (5)", {random_array({5}, dt, lo, hi, 5)}},
      {"strided (4,3)", {random_strided({4, 3}, dt, lo, hi, 6)}},
      {"row (1,4)", {random_array({1, 4}, dt, lo, hi, 7)}},
  };
  if (zero_size) s.push_back({"zero-size (0,3)", {NDArray::zeros({0, 3}, dt)}});
  return s;
}

const std::vector<DType> kReduceTypes = {DType::Bool,  DType::Int8,   DType::Int32,   DType::Int64,
                                         DType::UInt8, DType::UInt32, DType::Float32, DType::Float64};
const std::vector<DType> kOrderedTypes = {DType::Int8, DType::Int64, DType::UInt8, DType::Float32, DType::Float64};

/// Three entries per reduction: all axes, one axis, and a tuple of axes (one negative) with keepdims.
/// grad_0d: whether the gradient is finite on a single element (not for std: sqrt at 0).
void add_reduce_entries(const std::string& name, std::function<Var(Var, Axes, bool)> f, std::vector<DType> dtypes,
                        bool positive, bool has_identity, bool differentiable, bool grad_0d = true) {
  auto& infos = testing::op_infos();
  infos.push_back(OpInfo{
      .name = name + "_all",
      .build = [f](const std::vector<Var>& v) { return f(v[0], std::nullopt, false); },
      .samples = [positive, has_identity,
                  grad_0d](DType dt) { return samples_all(dt, positive, has_identity, grad_0d); },
      .dtypes = dtypes,
      .differentiable = differentiable,
  });
  infos.push_back(OpInfo{
      .name = name + "_axis1",
      .build = [f](const std::vector<Var>& v) { return f(v[0], std::vector<int>{1}, false); },
      .samples = [positive](DType dt) { return samples_3d(dt, positive); },
      .dtypes = dtypes,
      .differentiable = differentiable,
  });
  infos.push_back(OpInfo{
      .name = name + "_axes_neg1_0_keepdims",
      .build =
          [f](const std::vector<Var>& v) {
            return f(v[0], std::vector<int>{-1, 0}, true);
          },
      .samples = [positive](DType dt) { return samples_3d(dt, positive, false); },
      .dtypes = dtypes,
      .differentiable = differentiable,
  });
}

[[maybe_unused]] const bool kRegistered = [] {
  add_reduce_entries(
      "sum", [](Var x, Axes a, bool k) { return sum(x, a, k); }, kReduceTypes, false, true, true);
  add_reduce_entries(
      "prod", [](Var x, Axes a, bool k) { return prod(x, a, k); }, kReduceTypes, true, true, true);
  add_reduce_entries(
      "mean", [](Var x, Axes a, bool k) { return mean(x, a, k); }, kReduceTypes, false, false, true);
  add_reduce_entries(
      "var", [](Var x, Axes a, bool k) { return var(x, a, k); }, kOrderedTypes, false, false, true);
  add_reduce_entries(
      "var_ddof1", [](Var x, Axes a, bool k) { return var(x, a, k, 1); }, kOrderedTypes, false, false, true, false);
  add_reduce_entries(
      "std", [](Var x, Axes a, bool k) { return std(x, a, k); }, kOrderedTypes, true, false, true, false);
  add_reduce_entries(
      "max", [](Var x, Axes a, bool k) { return max(x, a, k); }, kOrderedTypes, false, false, true);
  add_reduce_entries(
      "min", [](Var x, Axes a, bool k) { return min(x, a, k); }, kOrderedTypes, false, false, true);
  add_reduce_entries(
      "all", [](Var x, Axes a, bool k) { return all(x, a, k); }, kReduceTypes, false, true, false);
  add_reduce_entries(
      "any", [](Var x, Axes a, bool k) { return any(x, a, k); }, kReduceTypes, false, true, false);
  return true;
}();

HYP_OPINFO({
    .name = "argmax_flat",
    .build = [](const std::vector<Var>& v) { return argmax(v[0]); },
    .samples = [](DType dt) { return samples_all(dt, false, false); },
    .dtypes = kOrderedTypes,
    .differentiable = false,
});
HYP_OPINFO({
    .name = "argmax_axis_neg1_keepdims",
    .build = [](const std::vector<Var>& v) { return argmax(v[0], -1, true); },
    .samples = [](DType dt) { return samples_3d(dt, false, false); },
    .dtypes = kOrderedTypes,
    .differentiable = false,
});
HYP_OPINFO({
    .name = "argmin_axis1",
    .build = [](const std::vector<Var>& v) { return argmin(v[0], 1); },
    .samples = [](DType dt) { return samples_3d(dt, false); },
    .dtypes = kOrderedTypes,
    .differentiable = false,
});
HYP_OPINFO({
    .name = "argmin_flat",
    .build = [](const std::vector<Var>& v) { return argmin(v[0]); },
    .samples = [](DType dt) { return samples_all(dt, false, false); },
    .dtypes = kOrderedTypes,
    .differentiable = false,
});

/// Samples for cumulative ops (no 0-d for an explicit axis).
std::vector<OpSample> cum_samples(DType dt, bool positive) {
  auto s = samples_3d(dt, positive);
  s.push_back({"zero-size (0,2,2)", {NDArray::zeros({0, 2, 2}, dt)}});
  return s;
}

HYP_OPINFO({
    .name = "cumsum_axis1",
    .build = [](const std::vector<Var>& v) { return cumsum(v[0], 1); },
    .samples = [](DType dt) { return cum_samples(dt, false); },
    .dtypes = kReduceTypes,
});
HYP_OPINFO({
    .name = "cumsum_axis_neg1",
    .build = [](const std::vector<Var>& v) { return cumsum(v[0], -1); },
    .samples = [](DType dt) { return cum_samples(dt, false); },
    .dtypes = {DType::Int32, DType::Float32, DType::Float64},
});
HYP_OPINFO({
    .name = "cumsum_flat",
    .build = [](const std::vector<Var>& v) { return cumsum(v[0]); },
    .samples =
        [](DType dt) {
          return std::vector<OpSample>{{"vector (6)", {random_array({6}, dt, -1, 1, 8)}}};
        },
    .dtypes = {DType::Int64, DType::Float64},
});
HYP_OPINFO({
    .name = "cumprod_axis0",
    .build = [](const std::vector<Var>& v) { return cumprod(v[0], 0); },
    .samples = [](DType dt) { return cum_samples(dt, true); },
    .dtypes = {DType::Int8, DType::UInt8, DType::Int64, DType::Float32, DType::Float64},
});
HYP_OPINFO({
    .name = "cumprod_axis_neg1",
    .build = [](const std::vector<Var>& v) { return cumprod(v[0], -1); },
    .samples = [](DType dt) { return cum_samples(dt, true); },
    .dtypes = {DType::Float32, DType::Float64},
});

// ------------------------------------------------------------------------------------------------
// Targeted tests

NDArray run(const Var& out, const Var& x, const NDArray& value, std::string_view b = kCpuBackend) {
  return eval(out, {{x, value}}, b);
}

TEST(Reduce, SumValuesAxesAndKeepdims) {
  Var x = variable(tensor3_type(DType::Float64), "x");
  NDArray v = make_array({0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, {2, 3, 2}, DType::Float64);
  EXPECT_ALLCLOSE(run(sum(x), x, v), NDArray::scalar(66, DType::Float64));
  EXPECT_ALLCLOSE(run(sum(x, std::vector<int>{0}), x, v), make_array({6, 8, 10, 12, 14, 16}, {3, 2}, DType::Float64));
  EXPECT_ALLCLOSE(run(sum(x, std::vector<int>{-1}), x, v), make_array({1, 5, 9, 13, 17, 21}, {2, 3}, DType::Float64));
  EXPECT_ALLCLOSE(run(sum(x, std::vector<int>{0, 2}), x, v), make_array({14, 22, 30}, {3}, DType::Float64));
  Var k = sum(x, std::vector<int>{2, 0}, true);
  EXPECT_EQ(k->type.broadcastable, (std::vector<bool>{true, false, true}));
  EXPECT_ALLCLOSE(run(k, x, v), make_array({14, 22, 30}, {1, 3, 1}, DType::Float64));
  EXPECT_EQ(run(sum(x, std::nullopt, true), x, v).shape(), (Shape{1, 1, 1}));
  // Non-contiguous input through the CPU kernel's strided path.
  NDArray t = v.transpose();
  EXPECT_ALLCLOSE(run(sum(x, std::vector<int>{1}), x, t), run(sum(x, std::vector<int>{1}), x, t, kReferenceBackend));
}

TEST(Reduce, OpNamesAndEquality) {
  Var x = variable(matrix_type(DType::Float32), "x");
  EXPECT_EQ(sum(x, std::vector<int>{0})->owner->op->name(), "Sum{axis=[0], dtype=float32}");
  EXPECT_EQ(max(x)->owner->op->name(), "Max{axis=[0, 1]}");
  EXPECT_EQ(argmax(x, 1)->owner->op->name(), "Argmax{axis=1}");
  EXPECT_EQ(argmin(x)->owner->op->name(), "Argmin{axis=None}");
  EXPECT_EQ(cumsum(x, -1)->owner->op->name(), "CumOp{axis=1, mode=add}");
  EXPECT_TRUE(sum(x, std::vector<int>{-1})->owner->op->equals(*sum(x, std::vector<int>{1})->owner->op));
  EXPECT_FALSE(sum(x, std::vector<int>{0})->owner->op->equals(*prod(x, std::vector<int>{0})->owner->op));
  EXPECT_EQ(sum(x, std::vector<int>{-1})->owner->op->hash(), sum(x, std::vector<int>{1})->owner->op->hash());
}

TEST(Reduce, DtypeRulesFollowNumpy) {
  auto out_dtype = [](DType in, auto f) { return f(variable(vector_type(in)))->dtype(); };
  auto s = [](Var v) { return sum(v); };
  auto m = [](Var v) { return mean(v); };
  EXPECT_EQ(out_dtype(DType::Int8, s), DType::Int64);
  EXPECT_EQ(out_dtype(DType::Bool, s), DType::Int64);
  EXPECT_EQ(out_dtype(DType::UInt16, s), DType::UInt64);
  EXPECT_EQ(out_dtype(DType::Float32, s), DType::Float32);
  EXPECT_EQ(out_dtype(DType::Int32, [](Var v) { return prod(v); }), DType::Int64);
  EXPECT_EQ(out_dtype(DType::Int8, m), DType::Float64);
  EXPECT_EQ(out_dtype(DType::Float32, m), DType::Float32);
  EXPECT_EQ(out_dtype(DType::Int16, [](Var v) { return var(v); }), DType::Float64);
  EXPECT_EQ(out_dtype(DType::Int8, [](Var v) { return max(v); }), DType::Int8);
  EXPECT_EQ(out_dtype(DType::Float32, [](Var v) { return all(v); }), DType::Bool);
  EXPECT_EQ(out_dtype(DType::Float32, [](Var v) { return argmax(v); }), DType::Int64);
  EXPECT_EQ(out_dtype(DType::UInt8, [](Var v) { return cumsum(v); }), DType::UInt64);
  EXPECT_EQ(out_dtype(DType::Int8, [](Var v) { return sum(v, std::nullopt, false, DType::Int8); }), DType::Int8);
}

TEST(Reduce, IntegerSumsAreExactAndWrapLikeNumpy) {
  Var x = variable(vector_type(DType::Int8), "x");
  NDArray v = make_array({100, 100, 100, -7}, {4}, DType::Int8);
  EXPECT_EQ(run(sum(x), x, v).get_flat(0), 293);
  // numpy.sum(v, dtype=int8) wraps: 293 - 256 = 37.
  EXPECT_EQ(run(sum(x, std::nullopt, false, DType::Int8), x, v).get_flat(0), 37);
  Var b = variable(vector_type(DType::Bool), "b");
  NDArray bv = make_array({1, 0, 1, 1}, {4}, DType::Bool);
  EXPECT_EQ(run(sum(b), b, bv).get_flat(0), 3);
  EXPECT_EQ(run(sum(b), b, bv).dtype(), DType::Int64);
  Var big = variable(vector_type(DType::Int64), "big");
  NDArray bigv = NDArray::from_vector<int64_t>({(int64_t{1} << 61) + 1, (int64_t{1} << 61) + 2});
  EXPECT_EQ(run(sum(big), big, bigv).data<int64_t>()[0], (int64_t{1} << 62) + 3);
  EXPECT_EQ(run(prod(x), x, make_array({2, -3, 4}, {3}, DType::Int8)).get_flat(0), -24);
}

TEST(Reduce, Float32SumsAccumulateWide) {
  // 1e6 copies of 0.1f: a float32 running sum drifts by ~1%; a wide accumulator is exact to float32.
  Var x = variable(vector_type(DType::Float32), "x");
  NDArray v = NDArray::full({1000000}, DType::Float32, 0.1);
  double exact = 1000000 * static_cast<double>(0.1f);
  for (std::string_view b : {kReferenceBackend, kCpuBackend})
    EXPECT_NEAR(run(sum(x), x, v, b).get_flat(0), exact, exact * 1e-6);
  EXPECT_NEAR(run(mean(x), x, v).get_flat(0), 0.1, 1e-6);
}

TEST(Reduce, MeanVarStdValues) {
  Var x = variable(matrix_type(DType::Float64), "x");
  NDArray v = make_array({1, 2, 3, 4, 6, 8}, {2, 3}, DType::Float64);
  EXPECT_ALLCLOSE(run(mean(x), x, v), NDArray::scalar(4, DType::Float64));
  EXPECT_ALLCLOSE(run(mean(x, std::vector<int>{1}), x, v), make_array({2, 6}, {2}, DType::Float64));
  EXPECT_ALLCLOSE(run(var(x, std::vector<int>{1}), x, v), make_array({2.0 / 3, 8.0 / 3}, {2}, DType::Float64));
  EXPECT_ALLCLOSE(run(var(x, std::vector<int>{1}, false, 1), x, v), make_array({1, 4}, {2}, DType::Float64));
  EXPECT_ALLCLOSE(run(std(x, std::vector<int>{1}, true, 1), x, v), make_array({1, 2}, {2, 1}, DType::Float64));
  Var i = variable(vector_type(DType::Int32), "i");
  NDArray iv = make_array({1, 2}, {2}, DType::Int32);
  NDArray m = run(mean(i), i, iv);
  EXPECT_EQ(m.dtype(), DType::Float64);
  EXPECT_EQ(m.get_flat(0), 1.5);
  EXPECT_EQ(run(var(i), i, iv).get_flat(0), 0.25);
}

TEST(Reduce, MaxMinArgmaxValuesAndNan) {
  Var x = variable(matrix_type(DType::Float64), "x");
  NDArray v = make_array({3, 7, 7, -1, 5, 0}, {2, 3}, DType::Float64);
  EXPECT_ALLCLOSE(run(max(x, std::vector<int>{1}), x, v), make_array({7, 5}, {2}, DType::Float64));
  EXPECT_ALLCLOSE(run(min(x, std::vector<int>{0}), x, v), make_array({-1, 5, 0}, {3}, DType::Float64));
  EXPECT_ALLCLOSE(run(argmax(x, 1), x, v), make_array({1, 1}, {2}, DType::Int64));  // first of the tie
  EXPECT_ALLCLOSE(run(argmin(x, 0), x, v), make_array({1, 1, 1}, {3}, DType::Int64));
  EXPECT_EQ(run(argmax(x), x, v).get_flat(0), 1);
  EXPECT_EQ(run(argmin(x), x, v).get_flat(0), 3);
  EXPECT_EQ(run(argmax(x, 0, true), x, v).shape(), (Shape{1, 3}));
  NDArray n = make_array({1, NAN, 3, 2, 1, 0}, {2, 3}, DType::Float64);
  for (std::string_view b : {kReferenceBackend, kCpuBackend}) {
    NDArray mx = run(max(x, std::vector<int>{1}), x, n, b);
    EXPECT_TRUE(std::isnan(mx.get_flat(0)));
    EXPECT_EQ(mx.get_flat(1), 2);
    EXPECT_TRUE(std::isnan(run(min(x), x, n, b).get_flat(0)));
    EXPECT_EQ(run(argmax(x, 1), x, n, b).get_flat(0), 1);
    EXPECT_EQ(run(argmin(x), x, n, b).get_flat(0), 1);
  }
}

TEST(Reduce, AllAnyValues) {
  Var x = variable(matrix_type(DType::Float32), "x");
  NDArray v = make_array({1, 0, 2, 3, 4, 5}, {2, 3}, DType::Float32);
  EXPECT_ALLCLOSE(run(all(x, std::vector<int>{1}), x, v), make_array({0, 1}, {2}, DType::Bool));
  EXPECT_ALLCLOSE(run(any(x, std::vector<int>{0}), x, v), make_array({1, 1, 1}, {3}, DType::Bool));
  EXPECT_EQ(run(all(x), x, NDArray::zeros({0, 3}, DType::Float32)).get_flat(0), 1);
  EXPECT_EQ(run(any(x), x, NDArray::zeros({0, 3}, DType::Float32)).get_flat(0), 0);
}

// The CPU's any / all: chunked runs that stop at the first chunk that decides, byte-wise
// accumulators. The deciding element at every interesting place (first, a chunk's edge, last,
// none), in every layout and input type, against the reference kernels; -0.0 is false and NaN
// true, as numpy's.
TEST(Reduce, AnyAllFindTheDecidingElementAnywhere) {
  const int64_t n = 5000;  // more than two chunks of 2048
  for (DType dt : {DType::Bool, DType::Int8, DType::Int32, DType::Float32, DType::Float64}) {
    Var x = variable(matrix_type(dt), "x");
    for (int64_t at : {int64_t{-1}, int64_t{0}, int64_t{2047}, int64_t{2048}, int64_t{4095}, n - 1}) {
      for (bool any_of : {true, false}) {
        // any: zeros with one non-zero at `at`; all: ones with one zero at `at` (none when -1).
        const double fill = any_of ? 0.0 : 1.0, odd = any_of ? 1.0 : 0.0;
        NDArray v = NDArray::full({2, n}, dt, fill);
        if (at >= 0) v.select(0, 1).select(0, at).fill(odd);
        if (is_float(dt) && any_of) v.select(0, 0).select(0, 7).fill(-0.0);
        for (const NDArray& a : {v, v.copy().transpose().copy().transpose()}) {
          for (const Var& e :
               {any_of ? any(x) : all(x), any_of ? any(x, std::vector<int>{1}) : all(x, std::vector<int>{1}),
                any_of ? any(x, std::vector<int>{0}) : all(x, std::vector<int>{0})}) {
            const NDArray got = run(e, x, a), want = run(e, x, a, kReferenceBackend);
            EXPECT_ALLCLOSE(got, want) << dtype_name(dt) << " at " << at << (any_of ? " any" : " all");
          }
        }
        const bool whole = any_of ? at >= 0 : at < 0;
        EXPECT_EQ(run(any_of ? any(x) : all(x), x, v).get_flat(0), whole ? 1 : 0) << dtype_name(dt) << " " << at;
      }
    }
    if (is_float(dt)) {
      NDArray v = NDArray::zeros({1, n}, dt);
      v.select(0, 0).select(0, 3000).fill(std::nan(""));
      EXPECT_EQ(run(any(x), x, v).get_flat(0), 1);
      NDArray w = NDArray::full({1, n}, dt, -0.0);
      EXPECT_EQ(run(any(x), x, w).get_flat(0), 0);
      EXPECT_EQ(run(all(x), x, w).get_flat(0), 0);
    }
  }
}

// The SIMD extremes (backends/cpu/extreme_simd.cpp) on every Highway target: max, min, argmax and
// argmin of rows of every length around the vector widths, with the extreme, a tie of it, a NaN
// or an infinity at the first place, in the vector body and in the tail, against the reference
// (the first of equal extremes; the first NaN wins, as numpy's).
TEST(Reduce, ExtremesOnEveryTargetMatchTheReference) {
  struct TargetGuard {
    ~TargetGuard() { simd_force_target(0); }
  } guard;
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  for (DType dt : {DType::Float32, DType::Float64}) {
    Var x = variable(matrix_type(dt), "x");
    const std::vector<Var> outs = {
        max(x, std::vector<int>{1}), min(x, std::vector<int>{1}), argmax(x, 1), argmin(x, 1), max(x), min(x)};
    for (int64_t n : {1, 7, 16, 31, 63, 64, 65, 129, 257, 1000}) {
      std::vector<std::pair<int64_t, double>> marks = {{-1, 0}};  // none
      for (int64_t at : {int64_t{0}, n / 2, n - 1}) {
        for (double val : {nan, inf, -inf, 5.0, -5.0}) marks.push_back({at, val});
      }
      const int64_t rows = static_cast<int64_t>(marks.size());
      NDArray v = random_array({rows, n}, dt, -1, 1, 17 + n);
      for (int64_t r = 0; r < rows; ++r) {
        const auto [at, val] = marks[r];
        if (at < 0) continue;
        v.select(0, r).select(0, at).fill(val);
        if (n > 3 && !std::isnan(val)) v.select(0, r).select(0, n - 2).fill(val);  // a tie after it
      }
      for (int64_t target : simd_targets()) {
        simd_force_target(target);
        for (size_t k = 0; k < outs.size(); ++k) {
          const NDArray got = run(outs[k], x, v), want = run(outs[k], x, v, kReferenceBackend);
          EXPECT_ALLCLOSE(got, want) << simd_target_name(target) << " " << dtype_name(dt) << " n " << n << " out " << k;
        }
      }
      simd_force_target(0);
    }
  }
}

TEST(Reduce, CumsumCumprodValues) {
  Var x = variable(matrix_type(DType::Float64), "x");
  NDArray v = make_array({1, 2, 3, 4, 5, 6}, {2, 3}, DType::Float64);
  EXPECT_ALLCLOSE(run(cumsum(x, 1), x, v), make_array({1, 3, 6, 4, 9, 15}, {2, 3}, DType::Float64));
  EXPECT_ALLCLOSE(run(cumsum(x, 0), x, v), make_array({1, 2, 3, 5, 7, 9}, {2, 3}, DType::Float64));
  EXPECT_ALLCLOSE(run(cumprod(x, -1), x, v), make_array({1, 2, 6, 4, 20, 120}, {2, 3}, DType::Float64));
  EXPECT_ALLCLOSE(run(cumsum(x), x, v), make_array({1, 3, 6, 10, 15, 21}, {6}, DType::Float64));
  Var i = variable(vector_type(DType::Int8), "i");
  NDArray r = run(cumsum(i), i, make_array({100, 100, -50}, {3}, DType::Int8));
  EXPECT_EQ(r.dtype(), DType::Int64);
  EXPECT_ALLCLOSE(r, make_array({100, 200, 150}, {3}, DType::Int64));
}

TEST(Reduce, ZeroSizeReductions) {
  Var x = variable(matrix_type(DType::Float64), "x");
  NDArray e = NDArray::zeros({0, 3}, DType::Float64);
  EXPECT_EQ(run(sum(x), x, e).get_flat(0), 0);
  EXPECT_EQ(run(prod(x), x, e).get_flat(0), 1);
  EXPECT_ALLCLOSE(run(sum(x, std::vector<int>{0}), x, e), NDArray::zeros({3}, DType::Float64));
  EXPECT_TRUE(std::isnan(run(mean(x), x, e).get_flat(0)));
  // Reducing a kept zero-length axis is fine: the output is empty.
  EXPECT_EQ(run(max(x, std::vector<int>{1}), x, e).shape(), (Shape{0}));
  for (std::string_view b : {kReferenceBackend, kCpuBackend}) {
    try {
      run(max(x), x, e, b);
      ADD_FAILURE() << "max of an empty array did not throw";
    } catch (const ValueError& err) {
      EXPECT_NE(std::string(err.what())
                    .find("Max{axis=[0, 1]}: zero-size array to reduction operation maximum "
                          "which has no identity"),
                std::string::npos)
          << err.what();
    }
    EXPECT_THROW(run(min(x, std::vector<int>{0}), x, e, b), ValueError);
    try {
      run(argmax(x, 0), x, e, b);
      ADD_FAILURE() << "argmax of an empty array did not throw";
    } catch (const ValueError& err) {
      EXPECT_NE(std::string(err.what()).find("Argmax{axis=0}"), std::string::npos) << err.what();
    }
  }
}

TEST(Reduce, ErrorPaths) {
  Var x = variable(matrix_type(DType::Float64), "x");
  EXPECT_THROW(sum(x, std::vector<int>{2}), IndexError);
  EXPECT_THROW(sum(x, std::vector<int>{-3}), IndexError);
  EXPECT_THROW(max(x, std::vector<int>{0, -2}), ValueError);
  EXPECT_THROW(argmax(x, 5), IndexError);
  EXPECT_THROW(cumsum(x, -3), IndexError);
  try {
    sum(x, std::vector<int>{3});
    ADD_FAILURE();
  } catch (const IndexError& e) {
    EXPECT_NE(std::string(e.what()).find("Sum"), std::string::npos) << e.what();
  }
  try {
    apply_op1(std::make_shared<Reduce>(ReduceKind::Max, std::vector<int>{0}, DType::Float32), {x});
    ADD_FAILURE();
  } catch (const TypeError& e) {
    EXPECT_NE(std::string(e.what()).find("Max{axis=[0]}"), std::string::npos) << e.what();
  }
  EXPECT_THROW(apply_op1(std::make_shared<Reduce>(ReduceKind::Sum, std::vector<int>{2}, DType::Float64), {x}),
               TypeError);
  EXPECT_THROW(apply_op1(std::make_shared<CumOp>(false, 4), {x}), TypeError);
}

TEST(Reduce, ProdGradientWithZeros) {
  // One zero in a group: the zero's gradient is the product of the others, the rest get 0.
  // Two zeros: every gradient is 0. No zero: prod / x.
  Var x = variable(matrix_type(DType::Float64), "x");
  Var g = grad(sum(prod(x, std::vector<int>{1})), x);
  NDArray v = make_array({2, 0, 3, 0, 0, 5, 2, 3, 4}, {3, 3}, DType::Float64);
  EXPECT_ALLCLOSE(run(g, x, v), make_array({0, 6, 0, 0, 0, 0, 12, 8, 6}, {3, 3}, DType::Float64));
  // Finite differences agree away from the kinks (one zero per row is smooth in the others).
  NDArray one_zero = make_array({0.0, 1.5, -0.7, 1.2, 0.0, 0.9}, {2, 3}, DType::Float64);
  EXPECT_NO_THROW(verify_grad([](const std::vector<Var>& v) { return prod(v[0], std::vector<int>{1}); }, {one_zero}));
}

TEST(Reduce, MaxGradientGoesToEveryTiedPosition) {
  Var x = variable(vector_type(DType::Float64), "x");
  NDArray v = make_array({1, 5, 5, 2}, {4}, DType::Float64);
  EXPECT_ALLCLOSE(run(grad(max(x), x), x, v), make_array({0, 1, 1, 0}, {4}, DType::Float64));
  EXPECT_ALLCLOSE(run(grad(min(x), x), x, v), make_array({1, 0, 0, 0}, {4}, DType::Float64));
}

TEST(Reduce, GradientsOfCompositesAndCumOps) {
  NDArray a = random_array({3, 4}, DType::Float64, 0.5, 1.5, 11);
  auto check = [&](std::function<Var(Var)> f) {
    EXPECT_NO_THROW(verify_grad([f](const std::vector<Var>& v) { return f(v[0]); }, {a}));
  };
  check([](Var x) { return var(x, std::vector<int>{0}, false, 1); });
  check([](Var x) { return std(x, std::vector<int>{-1}, true); });
  check([](Var x) { return mean(x, std::vector<int>{1, 0}); });
  check([](Var x) { return cumsum(x, 0); });
  check([](Var x) { return cumprod(x, 1); });
  check([](Var x) { return cumprod(x); });
  check([](Var x) { return prod(x); });
}

TEST(Reduce, DiscreteOutputsAreDisconnected) {
  Var x = variable(vector_type(DType::Float64), "x");
  GradOptions ignore;
  ignore.disconnected_inputs = "ignore";
  NDArray v = make_array({1, 2}, {2}, DType::Float64);
  EXPECT_ALLCLOSE(run(grad(cast(argmax(x), DType::Float64), x, ignore), x, v), NDArray::zeros({2}, DType::Float64));
  EXPECT_THROW(grad(cast(argmax(x), DType::Float64), x), DisconnectedInputError);
}

TEST(Reduce, RopOfSumAndCumsum) {
  Var x = variable(matrix_type(DType::Float64), "x");
  Var ev = variable(matrix_type(DType::Float64), "v");
  NDArray xv = random_array({2, 3}, DType::Float64, -1, 1, 3);
  NDArray vv = random_array({2, 3}, DType::Float64, -1, 1, 4);
  Var r = Rop({sum(x, std::vector<int>{1})}, {x}, {ev})[0];
  EXPECT_ALLCLOSE(eval(r, {{x, xv}, {ev, vv}}), eval(sum(ev, std::vector<int>{1}), {{ev, vv}}));
  Var rc = Rop({cumsum(x, 0)}, {x}, {ev})[0];
  EXPECT_ALLCLOSE(eval(rc, {{x, xv}, {ev, vv}}), eval(cumsum(ev, 0), {{ev, vv}}));
}

TEST(Reduce, InferShapeIsSymbolic) {
  Var x = variable(tensor3_type(DType::Float32), "x");
  Var s = sum(x, std::vector<int>{1});
  auto shapes = s->owner->op->infer_shape(*s->owner, {shape_vars(x)});
  ASSERT_EQ(shapes[0].size(), 2u);
  NDArray v = random_array({2, 5, 3}, DType::Float32);
  EXPECT_EQ(eval(shapes[0][1], {{x, v}}).get_flat(0), 3);
}

/// The CPU kernel's threaded paths (forced with a tiny threshold) agree with the reference.
TEST(Reduce, ThreadedCpuPathsMatchReference) {
  long saved = config().openmp_elemwise_minsize;
  config().openmp_elemwise_minsize = 1;
  Var x = variable(tensor3_type(DType::Float32), "x");
  std::vector<NDArray> inputs = {random_array({4, 5, 33}, DType::Float32, -1, 1, 9),
                                 random_strided({4, 5, 33}, DType::Float32, -1, 1, 10),
                                 random_array({4, 5, 33}, DType::Float32, -1, 1, 11).transpose()};
  std::vector<Var> outs = {sum(x),
                           sum(x, std::vector<int>{0}),
                           sum(x, std::vector<int>{2}),
                           max(x, std::vector<int>{0, 2}),
                           prod(x, std::vector<int>{1}),
                           any(x),
                           min(x),
                           argmax(x, -1),
                           argmin(x)};
  for (const NDArray& in : inputs)
    for (const Var& o : outs) {
      SCOPED_TRACE(o->owner->op->name() + " on " + in.describe());
      EXPECT_ALLCLOSE(run(o, x, in, kCpuBackend), run(o, x, in, kReferenceBackend), 1e-5, 1e-5);
    }
  config().openmp_elemwise_minsize = saved;
}

}  // namespace
}  // namespace hypatia
