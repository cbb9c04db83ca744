// nnet ops: OpInfo entries (softmax, log_softmax, relu, cross-entropies), exact values, stability
// on large inputs, error paths and gradients.

#include <cmath>
#include <limits>

#include "hypatia/backends/cpu/elemwise_simd.h"
#include "test_util.h"

namespace hypatia {
namespace {
using testing::make_array;
using testing::OpInfo;
using testing::OpSample;
using testing::random_array;
using testing::random_strided;

std::vector<OpSample> softmax_samples(DType dt) {
  return {
      {"vector (5)", {random_array({5}, dt, -2, 2, 1)}},
      {"matrix (3,4)", {random_array({3, 4}, dt, -2, 2, 2)}},
      {"strided (3,4)", {random_strided({3, 4}, dt, -2, 2, 3)}},
      {"transposed (4,3)", {random_array({3, 4}, dt, -2, 2, 4).transpose()}},
      {"broadcastable (1,4)", {random_array({1, 4}, dt, -2, 2, 5)}},
      {"zero-size (0,3)", {NDArray::zeros({0, 3}, dt)}},
  };
}
std::vector<OpSample> softmax_samples_3d(DType dt) {
  return {
      {"tensor3 (2,3,4)", {random_array({2, 3, 4}, dt, -2, 2, 6)}},
      {"strided (2,3,2)", {random_strided({2, 3, 2}, dt, -2, 2, 7)}},
      {"large magnitude (2,3,2)", {random_array({2, 3, 2}, dt, -1000, 1000, 8)}, false},
  };
}

HYP_OPINFO({
    .name = "softmax",
    .build = [](const std::vector<Var>& v) { return softmax(v[0]); },
    .samples = softmax_samples,
    .dtypes = testing::kFloatTypes,
});
HYP_OPINFO({
    .name = "softmax_axis0",
    .build = [](const std::vector<Var>& v) { return softmax(v[0], 0); },
    .samples = softmax_samples,
    .dtypes = testing::kFloatTypes,
});
HYP_OPINFO({
    .name = "softmax_axis1_3d",
    .build = [](const std::vector<Var>& v) { return softmax(v[0], 1); },
    .samples = softmax_samples_3d,
    .dtypes = testing::kFloatTypes,
});
HYP_OPINFO({
    .name = "log_softmax",
    .build = [](const std::vector<Var>& v) { return log_softmax(v[0]); },
    .samples = softmax_samples,
    .dtypes = testing::kFloatTypes,
});
HYP_OPINFO({
    .name = "log_softmax_axis_neg3_3d",
    .build = [](const std::vector<Var>& v) { return log_softmax(v[0], -3); },
    .samples = softmax_samples_3d,
    .dtypes = testing::kFloatTypes,
});

/// Values at least 0.1 away from the kink at 0, of both signs.
std::vector<OpSample> relu_samples(DType dt) {
  NDArray a = make_array({-1.5, -0.3, 0.2, 0.7, 1.9, -0.8}, {2, 3}, dt);
  return {{"matrix (2,3)", {a}},
          {"transposed (3,2)", {a.transpose()}},
          {"0-d", {make_array({-0.4}, {}, dt)}},
          {"zero-size (0,2)", {NDArray::zeros({0, 2}, dt)}}};
}
HYP_OPINFO({
    .name = "relu",
    .build = [](const std::vector<Var>& v) { return relu(v[0]); },
    .samples = relu_samples,
    .dtypes = testing::kFloatTypes,
});
HYP_OPINFO({
    .name = "relu_leaky",
    .build = [](const std::vector<Var>& v) { return relu(v[0], 0.1); },
    .samples = relu_samples,
    .dtypes = testing::kFloatTypes,
});

/// A probability-like matrix (entries in [0.1, 1)) and labels.
std::vector<OpSample> crossentropy_label_samples(DType dt) {
  return {
      {"matrix (4,3)", {random_array({4, 3}, dt, 0.1, 1, 9), NDArray::from_vector<int64_t>({0, 2, 1, 2})}},
      {"strided (3,3), int32 labels",
       {random_strided({3, 3}, dt, 0.1, 1, 10), NDArray::from_vector<int32_t>({2, 0, 1})}},
      {"one row", {random_array({1, 5}, dt, 0.1, 1, 11), NDArray::from_vector<int64_t>({4})}},
      {"zero rows", {NDArray::zeros({0, 3}, dt), NDArray::empty({0}, DType::Int64)}},
  };
}
HYP_OPINFO({
    .name = "categorical_crossentropy_labels",
    .build = [](const std::vector<Var>& v) { return categorical_crossentropy(v[0], v[1]); },
    .samples = crossentropy_label_samples,
    .dtypes = testing::kFloatTypes,
    .expected =
        [](const std::vector<NDArray>& in) {
          NDArray out = NDArray::empty({in[0].shape(0)}, in[0].dtype());
          for (int64_t i = 0; i < in[0].shape(0); ++i) {
            int64_t y = static_cast<int64_t>(in[1].get_flat(i));
            double v = -std::log(in[0].get_flat(i * in[0].shape(1) + y));
            dispatch_dtype(out.dtype(), [&](auto t) { out.data<decltype(t)>()[i] = static_cast<decltype(t)>(v); });
          }
          return out;
        },
    .grad_inputs = {0},
});
HYP_OPINFO({
    .name = "categorical_crossentropy_labels_grad",
    .build = [](const std::vector<Var>& v) { return grad(sum(categorical_crossentropy(v[0], v[1])), v[0]); },
    .samples = crossentropy_label_samples,
    .dtypes = testing::kFloatTypes,
    .differentiable = false,
});

/// Logits (any sign, some far apart) and labels.
std::vector<OpSample> softmax_crossentropy_samples(DType dt) {
  return {
      {"matrix (4,3)", {random_array({4, 3}, dt, -3, 3, 24), NDArray::from_vector<int64_t>({0, 2, 1, 2})}},
      {"strided (3,3), int32 labels",
       {random_strided({3, 3}, dt, -3, 3, 25), NDArray::from_vector<int32_t>({2, 0, 1})}},
      {"large magnitude (2,4)",
       {random_array({2, 4}, dt, -1000, 1000, 26), NDArray::from_vector<int64_t>({1, 3})},
       false},
      {"zero rows", {NDArray::zeros({0, 3}, dt), NDArray::empty({0}, DType::Int64)}},
  };
}
// categorical_crossentropy of a softmax: the stable form (log_softmax, CheckLabels, indexing).
HYP_OPINFO({
    .name = "softmax_crossentropy_labels",
    .build = [](const std::vector<Var>& v) { return categorical_crossentropy(softmax(v[0]), v[1]); },
    .samples = softmax_crossentropy_samples,
    .dtypes = testing::kFloatTypes,
    .grad_inputs = {0},
});
// The fused op with a bias of one per class (x, b, labels): its nll and its softmax.
std::vector<OpSample> xent_bias_samples(DType dt) {
  return {
      {"matrix (4,3)",
       {random_array({4, 3}, dt, -3, 3, 42), random_array({3}, dt, -1, 1, 43),
        NDArray::from_vector<int64_t>({0, 2, 1, 2})}},
      {"strided (3,3), int32 labels",
       {random_strided({3, 3}, dt, -3, 3, 44), random_strided({3}, dt, -1, 1, 45),
        NDArray::from_vector<int32_t>({2, 0, 1})}},
      {"zero rows", {NDArray::zeros({0, 3}, dt), NDArray::zeros({3}, dt), NDArray::empty({0}, DType::Int64)}},
  };
}
HYP_OPINFO({
    .name = "crossentropy_softmax_1hot_with_bias_nll",
    .build = [](const std::vector<Var>& v) { return crossentropy_softmax_1hot_with_bias(v[0], v[1], v[2])[0]; },
    .samples = xent_bias_samples,
    .dtypes = testing::kFloatTypes,
    .grad_inputs = {0, 1},
});
HYP_OPINFO({
    .name = "crossentropy_softmax_1hot_with_bias_sm",
    .build = [](const std::vector<Var>& v) { return crossentropy_softmax_1hot_with_bias(v[0], v[1], v[2])[1]; },
    .samples = xent_bias_samples,
    .dtypes = testing::kFloatTypes,
    .grad_inputs = {0, 1},
});
// Its gradient op (dy, logits, labels), differentiated itself (a Hessian-vector product's path).
HYP_OPINFO({
    .name = "crossentropy_softmax_1hot_with_bias_dx",
    .build =
        [](const std::vector<Var>& v) { return crossentropy_softmax_1hot_with_bias_dx(v[0], softmax(v[1]), v[2]); },
    .samples =
        [](DType dt) {
          return std::vector<OpSample>{
              {"matrix (4,3)",
               {random_array({4}, dt, -1, 1, 46), random_array({4, 3}, dt, -3, 3, 47),
                NDArray::from_vector<int64_t>({0, 2, 1, 2})}},
              {"strided, int32 labels",
               {random_strided({3}, dt, -1, 1, 48), random_strided({3, 3}, dt, -3, 3, 49),
                NDArray::from_vector<int32_t>({2, 0, 1})}},
          };
        },
    .dtypes = testing::kFloatTypes,
    .grad_inputs = {0, 1},
});
HYP_OPINFO({
    .name = "check_labels",
    .build =
        [](const std::vector<Var>& v) {
          return apply_op1(std::make_shared<CheckLabels>(), {v[0], v[1]});
        },
    .samples = crossentropy_label_samples,
    .dtypes = testing::kFloatTypes,
    .differentiable = false,
});
HYP_OPINFO({
    .name = "softmax_crossentropy_dist",
    .build = [](const std::vector<Var>& v) { return categorical_crossentropy(softmax(v[0]), v[1]); },
    .samples =
        [](DType dt) {
          return std::vector<OpSample>{
              {"matrix (3,4)", {random_array({3, 4}, dt, -3, 3, 27), random_array({3, 4}, dt, 0, 1, 28)}},
              {"one-hot true (2,3)",
               {random_strided({2, 3}, dt, -3, 3, 29), make_array({0, 1, 0, 1, 0, 0}, {2, 3}, dt)}},
          };
        },
    .dtypes = testing::kFloatTypes,
});

std::vector<OpSample> crossentropy_dist_samples(DType dt) {
  return {
      {"matrix (3,4)", {random_array({3, 4}, dt, 0.1, 1, 12), random_array({3, 4}, dt, 0, 1, 13)}},
      {"one-hot true (2,3)", {random_strided({2, 3}, dt, 0.1, 1, 14), make_array({0, 1, 0, 1, 0, 0}, {2, 3}, dt)}},
  };
}
HYP_OPINFO({
    .name = "categorical_crossentropy_dist",
    .build = [](const std::vector<Var>& v) { return categorical_crossentropy(v[0], v[1]); },
    .samples = crossentropy_dist_samples,
    .dtypes = testing::kFloatTypes,
});

std::vector<OpSample> binary_crossentropy_samples(DType dt) {
  return {
      {"matrix (2,3)", {random_array({2, 3}, dt, 0.1, 0.9, 15), random_array({2, 3}, dt, 0, 1, 16)}},
      {"broadcast target (3)", {random_strided({2, 3}, dt, 0.1, 0.9, 17), random_array({3}, dt, 0, 1, 18)}},
      {"0-d", {make_array({0.3}, {}, dt), make_array({1}, {}, dt)}},
  };
}
HYP_OPINFO({
    .name = "binary_crossentropy",
    .build = [](const std::vector<Var>& v) { return binary_crossentropy(v[0], v[1]); },
    .samples = binary_crossentropy_samples,
    .dtypes = testing::kFloatTypes,
});

// ------------------------------------------------------------------------------------------------
// Targeted tests

TEST(Nnet, SoftmaxValues) {
  Var x = variable(matrix_type(DType::Float64), "x");
  NDArray v = make_array({0, 0, std::log(2.0), std::log(3.0), 0, std::log(4.0)}, {2, 3}, DType::Float64);
  for (std::string_view b : {kReferenceBackend, kCpuBackend}) {
    EXPECT_ALLCLOSE(eval(softmax(x), {{x, v}}, b),
                    make_array({0.25, 0.25, 0.5, 0.375, 0.125, 0.5}, {2, 3}, DType::Float64));
    EXPECT_ALLCLOSE(eval(log_softmax(x), {{x, v}}, b), make_array({std::log(0.25), std::log(0.25), std::log(0.5),
                                                                   std::log(0.375), std::log(0.125), std::log(0.5)},
                                                                  {2, 3}, DType::Float64));
    EXPECT_ALLCLOSE(eval(softmax(x, 0), {{x, v}}, b),
                    make_array({1.0 / 4, 1.0 / 2, 2.0 / 6, 3.0 / 4, 1.0 / 2, 4.0 / 6}, {2, 3}, DType::Float64));
  }
  EXPECT_EQ(softmax(x)->owner->op->name(), "Softmax{axis=1}");
  EXPECT_EQ(log_softmax(x, 0)->owner->op->name(), "LogSoftmax{axis=0}");
}

TEST(Nnet, SoftmaxIsStableOnLargeInputs) {
  for (DType dt : testing::kFloatTypes) {
    Var x = variable(matrix_type(dt), "x");
    NDArray v = make_array({1000, -1000, 999, 1000, 1000, 1000}, {2, 3}, dt);
    for (std::string_view b : {kReferenceBackend, kCpuBackend}) {
      NDArray s = eval(softmax(x), {{x, v}}, b);
      NDArray ls = eval(log_softmax(x), {{x, v}}, b);
      for (int64_t i = 0; i < 6; ++i) {
        EXPECT_TRUE(std::isfinite(s.get_flat(i)));
        EXPECT_TRUE(std::isfinite(ls.get_flat(i)));
      }
      EXPECT_NEAR(ls.get_flat(1), -2000 - std::log1p(std::exp(-1.0)), 1e-3);
      EXPECT_NEAR(s.get_flat(3), 1.0 / 3, 1e-6);
    }
    // Gradients stay finite too (they use only the outputs).
    Var gs = grad(sum(mul(softmax(x), x)), x);
    Var gl = grad(sum(mul(log_softmax(x), x)), x);
    NDArray a = eval(gs, {{x, v}}), b = eval(gl, {{x, v}});
    for (int64_t i = 0; i < 6; ++i) {
      EXPECT_TRUE(std::isfinite(a.get_flat(i)));
      EXPECT_TRUE(std::isfinite(b.get_flat(i)));
    }
  }
  NDArray big = random_array({3, 4}, DType::Float64, -1000, 1000, 21);
  EXPECT_NO_THROW(verify_grad([](const std::vector<Var>& v) { return softmax(v[0]); }, {big}));
  EXPECT_NO_THROW(verify_grad([](const std::vector<Var>& v) { return log_softmax(v[0]); }, {big}));
}

TEST(Nnet, SoftmaxNanRowsAndThreadedPaths) {
  Var x = variable(matrix_type(DType::Float32), "x");
  NDArray v = make_array({1, NAN, 2, 0, 1, 2}, {2, 3}, DType::Float32);
  for (std::string_view b : {kReferenceBackend, kCpuBackend})
    for (bool log : {false, true}) {
      NDArray y = eval(log ? log_softmax(x) : softmax(x), {{x, v}}, b);
      for (int64_t i = 0; i < 3; ++i) EXPECT_TRUE(std::isnan(y.get_flat(i)));
      for (int64_t i = 3; i < 6; ++i) EXPECT_TRUE(std::isfinite(y.get_flat(i)));
    }
  // A row of -inf has no finite max: NaN, like numpy's exp(x - max) / sum.
  NDArray ninf =
      make_array({-INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY, 0},
                 {1, 10}, DType::Float32);
  for (std::string_view b : {kReferenceBackend, kCpuBackend}) {
    NDArray y = eval(softmax(x), {{x, ninf}}, b);
    EXPECT_EQ(y.get_flat(9), 1.0);
    EXPECT_EQ(y.get_flat(0), 0.0);
    NDArray all_ninf = eval(softmax(x), {{x, NDArray::full({2, 9}, DType::Float32, -INFINITY)}}, b);
    for (int64_t i = 0; i < 18; ++i) EXPECT_TRUE(std::isnan(all_ninf.get_flat(i)));
  }
  long saved = config().openmp_elemwise_minsize;
  config().openmp_elemwise_minsize = 1;
  Var t = variable(tensor3_type(DType::Float32), "t");
  NDArray a = random_array({3, 37, 5}, DType::Float32, -5, 5, 30);
  for (int axis : {0, 1, 2})
    for (bool log : {false, true}) {
      Var y = log ? log_softmax(t, axis) : softmax(t, axis);
      EXPECT_ALLCLOSE(eval(y, {{t, a}}, kCpuBackend), eval(y, {{t, a}}, kReferenceBackend), 1e-5, 1e-6);
    }
  config().openmp_elemwise_minsize = saved;
}

TEST(Nnet, SoftmaxGradientsAndRop) {
  NDArray a = random_array({3, 4}, DType::Float64, -2, 2, 22);
  EXPECT_NO_THROW(verify_grad([](const std::vector<Var>& v) { return softmax(v[0], 0); }, {a}));
  EXPECT_NO_THROW(verify_grad([](const std::vector<Var>& v) { return log_softmax(v[0], -1); }, {a}));
  // Second derivative through the composite gradient.
  EXPECT_NO_THROW(
      verify_grad([](const std::vector<Var>& v) { return grad(sum(mul(softmax(v[0]), v[0])), v[0]); }, {a}));
  Var x = variable(matrix_type(DType::Float64), "x");
  Var ev = variable(matrix_type(DType::Float64), "v");
  NDArray vv = random_array({3, 4}, DType::Float64, -1, 1, 23);
  for (bool log : {false, true}) {
    Var y = log ? log_softmax(x) : softmax(x);
    Var r = Rop({y}, {x}, {ev})[0];
    // The R_op equals the directional derivative: central differences along v.
    NDArray rv = eval(r, {{x, a}, {ev, vv}});
    const double h = 1e-6;
    NDArray xp = a.copy(), xm = a.copy();
    for (int64_t i = 0; i < 12; ++i) {
      xp.data<double>()[i] += h * vv.get_flat(i);
      xm.data<double>()[i] -= h * vv.get_flat(i);
    }
    NDArray fp = eval(y, {{x, xp}}), fm = eval(y, {{x, xm}});
    for (int64_t o = 0; o < 12; ++o) EXPECT_NEAR(rv.get_flat(o), (fp.get_flat(o) - fm.get_flat(o)) / (2 * h), 1e-6);
  }
}

/// Distance of got from want in units in the last place of T at want (0 when both are NaN or
/// equal; infinite when one is NaN or they are infinities that differ).
template <class T>
double ulps(double got, long double want) {
  const T w = static_cast<T>(want);
  if ((std::isnan(got) && std::isnan(w)) || got == static_cast<double>(w)) return 0;
  if (std::isnan(got) || std::isnan(w) || std::isinf(got) || std::isinf(w)) return INFINITY;
  const long double spacing =
      std::nextafter(std::abs(w), std::numeric_limits<T>::infinity()) - static_cast<long double>(std::abs(w));
  return static_cast<double>(std::abs(static_cast<long double>(got) - want) / spacing);
}

/// softmax and log_softmax of one slice, exactly enough (long double, the max's term kept out of
/// the sum): the oracle of the accuracy tests.
std::vector<long double> exact_softmax(const std::vector<double>& x, bool log) {
  long double m = -INFINITY;
  size_t at = x.size();
  bool nan = false;
  for (size_t i = 0; i < x.size(); ++i) {
    if (std::isnan(x[i])) nan = true;
    if (!std::isnan(x[i]) && (at == x.size() || x[i] > m)) m = x[at = i];
  }
  std::vector<long double> r(x.size(), NAN);
  if (nan || !std::isfinite(m)) return r;
  long double rest = 0;
  for (size_t i = 0; i < x.size(); ++i)
    if (i != at) rest += std::exp(static_cast<long double>(x[i]) - m);
  for (size_t i = 0; i < x.size(); ++i) {
    const long double d = static_cast<long double>(x[i]) - m;
    r[i] = log ? d - std::log1p(rest) : std::exp(d) / (1 + rest);
  }
  return r;
}

// Before: log_softmax of float32 [1e5, 1e5] was -0.6953 (x - (m + log(sum)) rounded m + log 2 to
// float32 first) and of float64 [1e16, 1e16] 0; log_softmax([0, -40]) lost rest = 4e-18 in 1 + rest.
TEST(Nnet, SoftmaxFamilyIsAccurateOnExtremeLogits) {
  const std::vector<std::vector<double>> rows = {
      {1e5, 1e5},
      {1e16, 1e16},
      {1e16, 1e16 - 4, 1e16 + 2},
      {0, -40},
      {0, -80, -700, -745.5},
      {1e-30, 0, -1e-30},
      {3, 3, 3, 3, 3},
      {-INFINITY, 2, -INFINITY, 1},
      {-INFINITY, -INFINITY},
      {INFINITY, 1, 2},
      {1, NAN, 2},
      {-3e38, 3e38},
      {-104, 0, -88, -87.5, 1},
      {0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.1, -55.5, 13, 12.9, 12.99, 12.999, 7},
  };
  for (DType dt : testing::kFloatTypes)
    for (std::string_view b : {kReferenceBackend, kCpuBackend})
      for (bool log : {false, true})
        for (const auto& row : rows) {
          const int64_t n = static_cast<int64_t>(row.size());
          // As rows of a (2, n) matrix (the row kernel) and as columns of its transpose copy (the
          // column kernel), and as the last axis of a 3-d tensor.
          std::vector<double> twice = row;
          twice.insert(twice.end(), row.begin(), row.end());
          NDArray both = make_array(twice, {2, n}, dt);
          // The logits as the dtype holds them are what the kernels see.
          std::vector<double> held(n);
          for (int64_t i = 0; i < n; ++i) held[i] = both.get_flat(i);
          const auto want = exact_softmax(held, log);
          Var x = variable(matrix_type(dt), "x");
          Var y = log ? log_softmax(x, 1) : softmax(x, 1);
          Var yt = log ? log_softmax(x, 0) : softmax(x, 0);
          NDArray r = eval(y, {{x, both}}, b);
          NDArray rt = eval(yt, {{x, both.transpose().copy()}}, b);
          for (int64_t i = 0; i < n; ++i) {
            const double tol = 4;
            auto check = [&](double got, const char* path) {
              const double u = dt == DType::Float32 ? ulps<float>(got, want[i]) : ulps<double>(got, want[i]);
              EXPECT_LE(u, tol) << (log ? "log_softmax" : "softmax") << " " << dtype_name(dt) << " "
                                << (b == kCpuBackend ? "cpu" : "reference") << " " << path << " row "
                                << ::testing::PrintToString(row) << " element " << i << ": got " << got << " want "
                                << static_cast<double>(want[i]);
            };
            check(r.get_flat(i), "row");
            check(r.get_flat(n + i), "row 2");
            check(rt.get_flat(i * 2), "column");
          }
        }
  // The cases, exactly.
  Var f = variable(vector_type(DType::Float32), "f");
  EXPECT_EQ(eval(log_softmax(f), {{f, make_array({1e5, 1e5}, {2}, DType::Float32)}}).get_flat(0),
            static_cast<double>(static_cast<float>(-std::log(2.0))));
  Var d = variable(vector_type(DType::Float64), "d");
  EXPECT_EQ(eval(log_softmax(d), {{d, make_array({1e16, 1e16}, {2}, DType::Float64)}}).get_flat(1), -std::log(2.0));
}

TEST(Nnet, SoftmaxLongRowsStayAccurate) {
  // Long rows through the SIMD body and the threaded paths: within a few ulp of the oracle.
  long saved = config().openmp_elemwise_minsize;
  config().openmp_elemwise_minsize = 1;
  for (DType dt : testing::kFloatTypes) {
    NDArray a = random_array({3, 1000}, dt, -60, 60, 31);
    Var x = variable(matrix_type(dt), "x");
    for (bool log : {false, true}) {
      NDArray r = eval(log ? log_softmax(x) : softmax(x), {{x, a}}, kCpuBackend);
      for (int64_t row = 0; row < 3; ++row) {
        std::vector<double> v(1000);
        for (int64_t i = 0; i < 1000; ++i) v[i] = a.get_flat(row * 1000 + i);
        const auto want = exact_softmax(v, log);
        double worst = 0;
        for (int64_t i = 0; i < 1000; ++i) {
          const double got = r.get_flat(row * 1000 + i);
          worst = std::max(worst, dt == DType::Float32 ? ulps<float>(got, want[i]) : ulps<double>(got, want[i]));
        }
        EXPECT_LE(worst, 4) << dtype_name(dt) << (log ? " log_softmax" : " softmax");
      }
    }
  }
  config().openmp_elemwise_minsize = saved;
}

// Every SIMD target this machine can run (AVX-512, AVX2, SSE4, ... as compiled): the partial last
// vector of a row or of a block of columns goes through a buffer, never past the array's end (a
// MaskedLoad is a full aligned load on the SSE targets).
TEST(Nnet, SoftmaxEveryTargetMatchesTheReference) {
  const std::vector<int64_t> targets = simd_targets();
  ASSERT_FALSE(targets.empty());
  for (int64_t target : targets) {
    simd_force_target(target);
    for (DType dt : testing::kFloatTypes)
      for (int64_t n : {1, 3, 7, 16, 17, 33}) {
        NDArray a = random_array({3, n}, dt, -30, 30, 40 + n);
        // Slices cut out of a bigger buffer end right before other data: a read past them would
        // see it (and ASan would report it).
        NDArray b = random_array({n, 5}, dt, -30, 30, 41 + n);
        Var x = variable(matrix_type(dt), "x");
        for (bool log : {false, true})
          for (int axis : {0, 1}) {
            Var y = log ? log_softmax(x, axis) : softmax(x, axis);
            for (const NDArray& v : {a, b}) {
              NDArray got = eval(y, {{x, v}}, kCpuBackend);
              NDArray want = eval(y, {{x, v}}, kReferenceBackend);
              EXPECT_ALLCLOSE(got, want, dt == DType::Float32 ? 1e-6 : 1e-14, 1e-30)
                  << simd_target_name(target) << " n " << n << " axis " << axis << (log ? " log" : "");
            }
          }
      }
  }
  simd_force_target(0);
}

TEST(Nnet, CategoricalCrossentropyValues) {
  Var c = variable(matrix_type(DType::Float64), "c");
  Var y = variable(vector_type(DType::Int64), "y");
  Var t = variable(matrix_type(DType::Float64), "t");
  NDArray cv = make_array({0.5, 0.25, 0.25, 0.1, 0.1, 0.8}, {2, 3}, DType::Float64);
  NDArray yv = NDArray::from_vector<int64_t>({1, 2});
  NDArray expect = make_array({-std::log(0.25), -std::log(0.8)}, {2}, DType::Float64);
  EXPECT_ALLCLOSE(eval(categorical_crossentropy(c, y), {{c, cv}, {y, yv}}), expect);
  NDArray onehot = make_array({0, 1, 0, 0, 0, 1}, {2, 3}, DType::Float64);
  EXPECT_ALLCLOSE(eval(categorical_crossentropy(c, t), {{c, cv}, {t, onehot}}), expect);
  // Gradient w.r.t. coding: -1/c at the label, 0 elsewhere.
  Var g = grad(sum(categorical_crossentropy(c, y)), c);
  EXPECT_ALLCLOSE(eval(g, {{c, cv}, {y, yv}}), make_array({0, -4, 0, 0, 0, -1.25}, {2, 3}, DType::Float64));
  EXPECT_NO_THROW(verify_grad(
      [](const std::vector<Var>& v) {
        return categorical_crossentropy(softmax(v[0]), constant(NDArray::from_vector<int64_t>({1, 2})));
      },
      {random_array({2, 3}, DType::Float64, -2, 2, 24)}));
}

TEST(Nnet, CrossentropyErrorPaths) {
  Var c = variable(matrix_type(DType::Float64), "c");
  Var y = variable(vector_type(DType::Int64), "y");
  NDArray cv = make_array({0.5, 0.25, 0.25, 0.1, 0.1, 0.8}, {2, 3}, DType::Float64);
  for (std::string_view b : {kReferenceBackend, kCpuBackend}) {
    try {
      eval(categorical_crossentropy(c, y), {{c, cv}, {y, NDArray::from_vector<int64_t>({0, 3})}}, b);
      ADD_FAILURE() << "label out of range did not throw";
    } catch (const IndexError& e) {
      std::string m = e.what();
      EXPECT_NE(m.find("CrossentropyCategorical1Hot"), std::string::npos) << m;
      EXPECT_NE(m.find("label 3 at row 1"), std::string::npos) << m;
    }
    EXPECT_THROW(eval(categorical_crossentropy(c, y), {{c, cv}, {y, NDArray::from_vector<int64_t>({-1, 0})}}, b),
                 IndexError);
    EXPECT_THROW(eval(categorical_crossentropy(c, y), {{c, cv}, {y, NDArray::from_vector<int64_t>({0, 1, 2})}}, b),
                 ValueError);
    // The stable form of a softmax's cross-entropy rejects a negative label too (it used to count
    // from the end), in every mode, and so does the op rewritten into it.
    Var sm = softmax(c);
    for (const Var& ce :
         {categorical_crossentropy(sm, y), apply_op1(std::make_shared<CrossentropyCategorical1Hot>(), {sm, y})})
      for (const char* mode : {"FAST_RUN", "FAST_COMPILE", "NONE"}) {
        FunctionOptions o;
        o.mode = mode;
        o.backend = b;
        Function fn = function({c, y}, {ce}, o);
        try {
          fn({cv, NDArray::from_vector<int64_t>({0, -1})});
          ADD_FAILURE() << "label -1 did not throw in " << mode;
        } catch (const IndexError& e) {
          EXPECT_NE(std::string(e.what()).find("label -1 at row 1"), std::string::npos) << e.what();
        }
        EXPECT_THROW(fn({cv, NDArray::from_vector<int64_t>({3, 0})}), IndexError);
      }
  }
  EXPECT_THROW(categorical_crossentropy(variable(vector_type(DType::Float64)), variable(scalar_type(DType::Int64))),
               TypeError);
  EXPECT_THROW(categorical_crossentropy(c, variable(tensor3_type(DType::Float64))), TypeError);
  try {
    apply_op1(std::make_shared<CrossentropyCategorical1Hot>(), {c, variable(vector_type(DType::Float32))});
    ADD_FAILURE();
  } catch (const TypeError& e) {
    EXPECT_NE(std::string(e.what()).find("CrossentropyCategorical1Hot"), std::string::npos) << e.what();
  }
  try {
    softmax(variable(scalar_type(DType::Float64)));
    ADD_FAILURE();
  } catch (const TypeError& e) {
    EXPECT_NE(std::string(e.what()).find("softmax"), std::string::npos) << e.what();
  }
  EXPECT_THROW(softmax(c, 2), IndexError);
  EXPECT_THROW(log_softmax(variable(matrix_type(DType::Int32))), TypeError);
}

TEST(Nnet, ReluBinaryCrossentropyHardSigmoid) {
  Var x = variable(vector_type(DType::Float64), "x");
  Var t = variable(vector_type(DType::Float64), "t");
  NDArray v = make_array({-3, 0, 3}, {3}, DType::Float64);
  EXPECT_ALLCLOSE(eval(relu(x), {{x, v}}), make_array({0, 0, 3}, {3}, DType::Float64));
  EXPECT_ALLCLOSE(eval(relu(x, 0.1), {{x, v}}), make_array({-0.3, 0, 3}, {3}, DType::Float64));
  EXPECT_ALLCLOSE(eval(hard_sigmoid(x), {{x, v}}), make_array({0, 0.5, 1}, {3}, DType::Float64));
  NDArray o = make_array({0.25, 0.5}, {2}, DType::Float64);
  NDArray tv = make_array({1, 0}, {2}, DType::Float64);
  EXPECT_ALLCLOSE(eval(binary_crossentropy(x, t), {{x, o}, {t, tv}}),
                  make_array({-std::log(0.25), -std::log(0.5)}, {2}, DType::Float64));
  EXPECT_ALLCLOSE(eval(sigmoid(x), {{x, make_array({0}, {1}, DType::Float64)}}),
                  make_array({0.5}, {1}, DType::Float64));
}

}  // namespace
}  // namespace hypatia

namespace hypatia {
namespace {

// T.grad of the naive forms (log(1 + exp(x)), log(1 - sigmoid(x)), log(sum(exp(x))), log(softmax))
// at +-1000: the stabilizing rewrites reach the gradient graph, which is finite and right in
// FAST_RUN (issue 12, stable gradients).
TEST(Nnet, GradientsOfNaiveFormsAreFiniteAtLargeArguments) {
  // Without DebugMode's rewrite check: it compares each replaced value with the unrewritten
  // graph's, and there float64 1 / (1 - sigmoid(30)) has lost 3 digits to cancellation, which the
  // stabilized 1 / sigmoid(-30) has not (a false BadOptimization, older than these rules).
  testing::DebugChecks dc(false);
  const std::vector<double> xs = {-1000, -30, -1, 0, 1, 30, 1000};
  const int64_t n = static_cast<int64_t>(xs.size());
  auto sig = [](double v) { return v >= 0 ? 1 / (1 + std::exp(-v)) : std::exp(v) / (1 + std::exp(v)); };
  double mx = 1000, z = 0;
  for (double v : xs) z += std::exp(v - mx);
  for (DType dt : testing::kFloatTypes) {
    Var x = variable(vector_type(dt), "x");
    NDArray xv = make_array(xs, {n}, dt);
    struct Case {
      const char* name;
      Var expr;
      std::function<double(int64_t)> grad;
    };
    const std::vector<Case> cases = {
        {"log(1 + exp(x))", log(1.0 + exp(x)), [&](int64_t i) { return sig(xs[i]); }},
        {"log(1 - sigmoid(x))", log(1.0 - sigmoid(x)), [&](int64_t i) { return -sig(xs[i]); }},
        {"log(sum(exp(x)))", log(sum(exp(x))), [&](int64_t i) { return std::exp(xs[i] - mx) / z; }},
        {"log(softmax(x))", log(softmax(dimshuffle(x, {-1, 0}))),
         [&](int64_t i) { return 1 - static_cast<double>(n) * std::exp(xs[i] - mx) / z; }},

    };
    for (const Case& c : cases) {
      Var g = grad(sum(c.expr), x);
      Function f = function({x}, {c.expr, g});
      std::vector<NDArray> r = f({xv});
      for (int64_t i = 0; i < r[0].size(); ++i) EXPECT_TRUE(std::isfinite(r[0].get_flat(i))) << c.name << " value";
      for (int64_t i = 0; i < n; ++i) {
        ASSERT_TRUE(std::isfinite(r[1].get_flat(i))) << c.name << " " << dtype_name(dt) << " at " << xs[i];
        EXPECT_NEAR(r[1].get_flat(i), c.grad(i), dt == DType::Float32 ? 1e-5 : 1e-12) << c.name << " at " << xs[i];
      }
    }
    // expm1's gradient is exp(x), not expm1(x) + 1 (which is 0 below -37 and loses 3 digits at
    // -30): relative accuracy at every point.
    Var g = grad(sum(expm1(x / 20.0)), x);
    NDArray gv = function({x}, {g})({xv})[0];
    for (int64_t i = 0; i < n; ++i) {
      const double want = std::exp(xs[i] / 20) / 20;
      EXPECT_NEAR(gv.get_flat(i), want, (dt == DType::Float32 ? 1e-6 : 1e-14) * want) << "expm1 at " << xs[i] / 20;
    }
  }
}

}  // namespace
}  // namespace hypatia
