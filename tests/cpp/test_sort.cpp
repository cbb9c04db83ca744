// Sorting: OpInfo entries (sort and argsort along an axis and flattened), numpy's order (NaN last,
// equal elements in their original order), gradients through the permutation, R_op, errors.
#include <cmath>
#include <cstring>
#include <limits>

#include "hypatia/ops/sort.h"
#include "test_util.h"

namespace hypatia {
namespace {
using testing::make_array;
using testing::OpInfo;
using testing::OpSample;
using testing::random_array;
using testing::random_strided;

const std::vector<DType> kSortTypes = {DType::Bool,  DType::Int8,    DType::UInt16, DType::Int32,
                                       DType::Int64, DType::Float32, DType::Float64};

/// 3-d samples: contiguous, strided, a broadcastable (length-1) axis, zero-size. Floats are
/// distinct (random), so finite differences do not straddle a change of order.
std::vector<OpSample> sort_samples(DType dt) {
  double lo = dt == DType::Bool ? 0 : is_unsigned_int(dt) ? 0 : -5;
  double hi = dt == DType::Bool ? 1 : 5;
  return {
      {"contiguous (2,3,4)", {random_array({2, 3, 4}, dt, lo, hi, 11)}},
      {"strided (3,2,4)", {random_strided({3, 2, 4}, dt, lo, hi, 12)}},
      {"broadcastable (1,3,2)", {random_array({1, 3, 2}, dt, lo, hi, 13)}},
      {"zero-size (2,0,3)", {NDArray::zeros({2, 0, 3}, dt)}},
  };
}

HYP_OPINFO({
    .name = "sort_axis1",
    .build = [](const std::vector<Var>& v) { return sort(v[0], 1); },
    .samples = sort_samples,
    .dtypes = kSortTypes,
});
HYP_OPINFO({
    .name = "sort_axis_neg1",
    .build = [](const std::vector<Var>& v) { return sort(v[0], -1); },
    .samples = sort_samples,
    .dtypes = {DType::Int16, DType::Float32, DType::Float64},
});
HYP_OPINFO({
    .name = "sort_axis0",
    .build = [](const std::vector<Var>& v) { return sort(v[0], 0); },
    .samples = sort_samples,
    .dtypes = {DType::UInt8, DType::Float64},
});
HYP_OPINFO({
    .name = "sort_flat",
    .build = [](const std::vector<Var>& v) { return sort(v[0], std::nullopt); },
    .samples = sort_samples,
    .dtypes = {DType::Int64, DType::Float64},
});
HYP_OPINFO({
    .name = "argsort_axis1",
    .build = [](const std::vector<Var>& v) { return argsort(v[0], 1); },
    .samples = sort_samples,
    .dtypes = kSortTypes,
    .differentiable = false,
});
HYP_OPINFO({
    .name = "argsort_flat",
    .build = [](const std::vector<Var>& v) { return argsort(v[0], std::nullopt); },
    .samples = sort_samples,
    .dtypes = {DType::Int32, DType::Float32},
    .differentiable = false,
});

NDArray run(const Var& out, const Var& x, const NDArray& value, std::string_view b = kCpuBackend) {
  return eval(out, {{x, value}}, b);
}

TEST(Sort, NumpyOrderNanLastAndStable) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  Var x = variable(TensorType(DType::Float64, {false, false}), "x");
  NDArray v = make_array({3, nan, 1, 1, -2, 0, 2, 2}, {2, 4}, DType::Float64);
  for (std::string_view b : {kReferenceBackend, kCpuBackend}) {
    EXPECT_ALLCLOSE(run(sort(x), x, v, b), make_array({1, 1, 3, nan, -2, 0, 2, 2}, {2, 4}, DType::Float64));
    EXPECT_ALLCLOSE(run(argsort(x), x, v, b), make_array({2, 3, 0, 1, 0, 1, 2, 3}, {2, 4}, DType::Int64));
    EXPECT_ALLCLOSE(run(sort(x, 0), x, v, b), make_array({-2, 0, 1, 1, 3, nan, 2, 2}, {2, 4}, DType::Float64));
    EXPECT_ALLCLOSE(run(argsort(x, 0), x, v, b), make_array({1, 1, 0, 0, 0, 0, 1, 1}, {2, 4}, DType::Int64));
    EXPECT_ALLCLOSE(run(argsort(x, std::nullopt), x, v, b), make_array({4, 5, 2, 3, 6, 7, 0, 1}, {8}, DType::Int64));
  }
}

/// Bitwise equality (a NaN's payload and a zero's sign included): the CPU's sort gives the very
/// elements the reference's stable sort gives, in the same places.
void expect_same_bits(const NDArray& got, const NDArray& want, const std::string& what) {
  ASSERT_EQ(got.shape(), want.shape()) << what;
  ASSERT_EQ(got.dtype(), want.dtype()) << what;
  const NDArray g = got.copy(), w = want.copy();
  const size_t bytes = static_cast<size_t>(g.size()) * itemsize(g.dtype());
  EXPECT_EQ(std::memcmp(g.raw(), w.raw(), bytes), 0) << what;
}

// The CPU kernels (vectorized quicksort of value-and-index keys) against the reference's stable
// sort: many ties, NaNs, -0 beside 0, the extremes of each type, every dtype, both axes of
// C-ordered, transposed and strided inputs, lines long enough to thread and lines of one.
TEST(Sort, CpuKernelsMatchTheStableReferenceExactly) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<DType> types = kSortTypes;
  types.push_back(DType::Float16);
  types.push_back(DType::UInt8);
  types.push_back(DType::UInt64);
  types.push_back(DType::Int16);
  const long saved = config().openmp_elemwise_minsize;
  for (DType dt : types) {
    Var x = variable(TensorType(dt, {false, false}), "x");
    for (const Shape& shape : {Shape{7, 300}, Shape{3, 5000}, Shape{300, 1}, Shape{1, 1}, Shape{64, 64}}) {
      // Few distinct values (ties everywhere), with the type's extremes and, for floats, NaN,
      // infinities and both zeros.
      NDArray v = random_array(shape, dt, is_unsigned_int(dt) || dt == DType::Bool ? 0 : -3, dt == DType::Bool ? 1 : 3,
                               7 + shape[1]);
      const int64_t n = v.size();
      std::vector<double> specials = {0};
      if (is_float(dt))
        specials = {nan, -0.0, 0.0, inf, -inf, nan, -0.0};
      else if (dt != DType::Bool)
        specials = {0, 1, 2};
      for (int64_t i = 0; i < n; i += 5) v.reshape({n}).select(0, i).fill(specials[(i / 5) % specials.size()]);
      for (const NDArray& a : {v, v.copy().transpose().copy().transpose(), random_strided(shape, dt, 0, 3, 9)}) {
        for (long minsize : {saved, 64L}) {
          config().openmp_elemwise_minsize = minsize;
          for (int axis : {0, 1}) {
            const std::string what = std::string(dtype_name(dt)) + " " + shape.str() + " axis " + std::to_string(axis);
            expect_same_bits(run(sort(x, axis), x, a), run(sort(x, axis), x, a, kReferenceBackend), "sort " + what);
            expect_same_bits(run(argsort(x, axis), x, a), run(argsort(x, axis), x, a, kReferenceBackend),
                             "argsort " + what);
          }
        }
      }
    }
  }
  config().openmp_elemwise_minsize = saved;
}

TEST(Sort, TypesAndErrors) {
  Var x = variable(TensorType(DType::Int8, {true, false}), "x");
  EXPECT_EQ(sort(x)->type, x->type);
  EXPECT_EQ(argsort(x)->type, TensorType(DType::Int64, {true, false}));
  EXPECT_EQ(sort(x, std::nullopt)->ndim(), 1);
  EXPECT_EQ(sort(x)->owner->op->name(), "SortOp{axis=1}");
  EXPECT_ERROR(IndexError, sort(x, 2), "sort");
  EXPECT_ERROR(TypeError, apply_op1(std::make_shared<SortOp>(0), {scalar("s")}), "SortOp{axis=0}");
}

TEST(Sort, GradientGoesBackThroughThePermutation) {
  Var x = variable(TensorType(DType::Float64, {false, false}), "x");
  Var w = constant(make_array({0, 1, 2, 3}, {4}, DType::Float64));
  Var g = grad(sum(mul(sort(x), w)), x);
  NDArray v = make_array({3, 1, 4, 2, 0, -1, 7, 5}, {2, 4}, DType::Float64);
  // Row 0 sorts to 1 2 3 4: x[0]=3 is third (weight 2), x[1]=1 first (0), 4 last (3), 2 second (1).
  EXPECT_ALLCLOSE(run(g, x, v), make_array({2, 0, 3, 1, 1, 0, 3, 2}, {2, 4}, DType::Float64));
  // Along axis 0 and flattened.
  Var g0 = grad(sum(mul(sort(x, 0), constant(make_array({1, 10}, {2, 1}, DType::Float64)))), x);
  EXPECT_ALLCLOSE(run(g0, x, v), make_array({10, 10, 1, 1, 1, 1, 10, 10}, {2, 4}, DType::Float64));
  // argsort: its op gives zeros, as Theano's does; grad() sees an integer output as disconnected
  // (as for argmax), so the gradient is zeros when disconnected inputs are ignored.
  Var a = argsort(x);
  EXPECT_ALLCLOSE(run(a->owner->op->grad(*a->owner, {nullptr})[0], x, v), NDArray::zeros({2, 4}, DType::Float64));
  GradOptions ignore;
  ignore.disconnected_inputs = "ignore";
  Var ga = grad(sum(cast(a, DType::Float64)), x, ignore);
  EXPECT_ALLCLOSE(run(ga, x, v), NDArray::zeros({2, 4}, DType::Float64));
  // Broadcastable input: the gradient keeps the pattern.
  Var r = variable(TensorType(DType::Float64, {true, false}), "r");
  EXPECT_EQ(grad(sum(sort(r)), r)->type, r->type);
}

TEST(Sort, RopPermutesTheEvalPoint) {
  Var x = variable(TensorType(DType::Float64, {false}), "x");
  Var e = variable(TensorType(DType::Float64, {false}), "e");
  Var r = Rop({sort(x)}, {x}, {e})[0];
  NDArray out =
      eval(r, {{x, make_array({3, 1, 2}, {3}, DType::Float64)}, {e, make_array({30, 10, 20}, {3}, DType::Float64)}});
  EXPECT_ALLCLOSE(out, make_array({10, 20, 30}, {3}, DType::Float64));
}

}  // namespace
}  // namespace hypatia
