// Sizes at the int64 extremes: shapes whose element or byte count overflows are refused with a
// ValueError naming the op, shape and dtype; an allocation the machine cannot give raises
// MemoryError naming the node and the bytes; slices with any int64 start/stop/step select what
// Python's slice.indices selects (checked against a 128-bit reference in every path: kernels,
// infer_shape, set/inc_subtensor, the subtensor merge).
#include <limits>
#include <optional>
#include <random>

#include "hypatia/ops/shape_util.h"
#include "test_util.h"

#if defined(__SANITIZE_ADDRESS__)
// Requests past what the machine has (or past ASan's maximum allocation) must come back as null so
// that Hypatia can raise MemoryError; by default ASan reports them and aborts. ASAN_OPTIONS from the
// environment still override this.
extern "C" const char* __asan_default_options() { return "allocator_may_return_null=1"; }
#endif

namespace hypatia {
namespace {
using testing::error_of;
using testing::make_array;

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
constexpr int64_t k2_32 = int64_t{1} << 32;
// Past the 47-bit user address space of x86-64 (and ASan's limit): malloc fails whatever the
// overcommit policy, so the MemoryError tests cannot instead exhaust the machine.
constexpr int64_t k2_50 = int64_t{1} << 50;

NDArray i64s(const std::vector<int64_t>& v) {
  NDArray a = NDArray::empty(Shape{static_cast<int64_t>(v.size())}, DType::Int64);
  std::copy(v.begin(), v.end(), a.data<int64_t>());
  return a;
}
NDArray iota(int64_t n) {
  std::vector<double> v(n);
  for (int64_t i = 0; i < n; ++i) v[i] = static_cast<double>(i);
  return make_array(v, Shape{n}, DType::Float64);
}
/// A read-only view of `shape` over one element (zero strides): a huge array with no memory.
NDArray broadcast_view(const Shape& shape, DType dt) {
  Strides st;
  st.resize(shape.size(), 0);
  return NDArray::zeros(Shape{}, dt).as_strided(shape, st);
}

/// Compiled in each mode (FAST_RUN, FAST_COMPILE on the CPU kernels; NONE on the reference ones).
std::vector<Function> compile_all(const std::vector<Var>& ins, const std::vector<Var>& outs) {
  std::vector<In> in(ins.begin(), ins.end());
  std::vector<Out> out(outs.begin(), outs.end());
  std::vector<Function> fs;
  for (const char* mode : {"FAST_RUN", "FAST_COMPILE"}) {
    FunctionOptions o;
    o.mode = mode;
    o.on_unused_input = "ignore";
    fs.push_back(function(in, out, o));
  }
  FunctionOptions r;
  r.mode = "NONE";
  r.backend = kReferenceBackend;
  r.on_unused_input = "ignore";
  fs.push_back(function(in, out, r));
  return fs;
}

// ------------------------------------------------------------------------------------------------
// Core: checked sizes and allocation

TEST(Sizes, CheckedShapeSizeFollowsNumpy) {
  EXPECT_EQ(checked_shape_size(Shape{}, 8), 1);
  EXPECT_EQ(checked_shape_size(Shape{3, 4}, 8), 12);
  EXPECT_EQ(checked_shape_size(Shape{kMax}, 1), kMax);
  EXPECT_EQ(checked_shape_size(Shape{kMax}, 2), std::nullopt);
  EXPECT_EQ(checked_shape_size(Shape{k2_32, k2_32}, 1), std::nullopt);  // 2**64 wraps to 0
  EXPECT_EQ(checked_shape_size(Shape{int64_t{1} << 61}, 8), std::nullopt);
  EXPECT_EQ(checked_shape_size(Shape{(int64_t{1} << 60) - 1}, 8), (int64_t{1} << 60) - 1);
  // A zero dim makes the array empty, but numpy still refuses other dims that overflow (and the
  // C strides computed from them would).
  EXPECT_EQ(checked_shape_size(Shape{0, 5}, 8), 0);
  EXPECT_EQ(checked_shape_size(Shape{0, k2_32, k2_32}, 1), std::nullopt);
  EXPECT_EQ(checked_shape_size(Shape{2, -1}, 8), std::nullopt);
}

TEST(Sizes, EmptyRefusesOverflowAndRaisesMemoryError) {
  // 2**61 + 1 float64 elements: 2**64 + 8 bytes, which wrapped to 8 and crashed in assign().
  EXPECT_ERROR(ValueError, NDArray::empty(Shape{(int64_t{1} << 61) + 1}, DType::Float64),
               "shape (2305843009213693953,) and dtype float64 is too big");
  EXPECT_ERROR(ValueError, NDArray::zeros(Shape{k2_32, k2_32}, DType::Float32), "(4294967296, 4294967296)");
  EXPECT_ERROR(ValueError, NDArray::full(Shape{0, k2_32, k2_32}, DType::Int8, 1), "too big");
  EXPECT_ERROR(ValueError, NDArray::empty(Shape{3, -2}, DType::Int32), "negative dimension");
  // A valid size the machine cannot give: MemoryError (not ValueError) with the bytes asked for.
  const std::string m = error_of<MemoryError>([] { NDArray::empty(Shape{k2_50}, DType::Float64); });
  EXPECT_NE(m.find("9007199254740992 bytes"), std::string::npos) << m;
  EXPECT_NE(m.find("(1125899906842624,)"), std::string::npos) << m;
  EXPECT_NE(m.find("float64"), std::string::npos) << m;
  // MemoryError is an Error but not a ValueError.
  try {
    NDArray::empty(Shape{k2_50}, DType::Float64);
    ADD_FAILURE() << "no exception";
  } catch (const ValueError&) {
    ADD_FAILURE() << "MemoryError must not be a ValueError";
  } catch (const Error&) {
  }
}

TEST(Sizes, ReshapeAndBroadcastToAreChecked) {
  NDArray e = NDArray::zeros(Shape{0}, DType::Float64);
  EXPECT_ERROR(ValueError, e.reshape(Shape{k2_32, k2_32}), "reshape");
  EXPECT_ERROR(ValueError, e.reshape(Shape{0, -3}), "negative dimension");
  EXPECT_EQ(e.reshape(Shape{0, 7}).shape(), (Shape{0, 7}));
  NDArray one = NDArray::zeros(Shape{1}, DType::Float64);
  EXPECT_ERROR(ValueError, one.broadcast_to(Shape{k2_32, k2_32}), "broadcast_to");
  EXPECT_EQ(one.broadcast_to(Shape{k2_32, 2}).shape(), (Shape{k2_32, 2}));  // a valid view
}

TEST(Sizes, IntegersAreExactPast2To53) {
  NDArray s = NDArray::scalar_int64(kMax);
  EXPECT_EQ(s.get_flat_int(0), kMax);
  EXPECT_EQ(NDArray::scalar_int64(kMin).get_flat_int(0), kMin);
  EXPECT_EQ(NDArray::scalar_int64(kMax - 1).str(), "array(9223372036854775806, dtype=int64)");
  NDArray u = NDArray::empty(Shape{}, DType::UInt64);
  *u.data<uint64_t>() = std::numeric_limits<uint64_t>::max();
  EXPECT_EQ(u.get_flat_int(0), kMax);  // saturates, never a negative length or index
  EXPECT_EQ(NDArray::scalar(1e30, DType::Float64).get_flat_int(0), kMax);
  EXPECT_EQ(NDArray::scalar(-1e30, DType::Float64).get_flat_int(0), kMin);
  EXPECT_EQ(NDArray::scalar(std::nan(""), DType::Float64).get_flat_int(0), 0);
  EXPECT_EQ(NDArray::scalar(-2.7, DType::Float32).get_flat_int(0), -2);
  // int_constant went through a double: 2**63 - 1 became 2**63, which does not convert back.
  Var c = int_constant(kMax);
  EXPECT_EQ(c->data.get_flat_int(0), kMax);
  EXPECT_EQ(c->str(), "TensorConstant{9223372036854775807}");
  EXPECT_EQ(int_constant((int64_t{1} << 53) + 1)->data.get_flat_int(0), (int64_t{1} << 53) + 1);
}

// ------------------------------------------------------------------------------------------------
// Ops that compute sizes

TEST(Sizes, AllocOnesEyeOfHugeShapesRaise) {
  const Var big_alloc = alloc(constant(0.0, DType::Float64), {int_constant((int64_t{1} << 61) + 1)});
  const Var big_ones = ones({int_constant(int64_t{1} << 62)}, DType::Float32);
  const Var big_eye = eye(k2_32, DType::Float64);
  const Var alloc_sum = sum(alloc(constant(1.0, DType::Float64), {int_constant(k2_32), int_constant(k2_32)}));
  for (auto& f : compile_all({}, {big_alloc}))
    EXPECT_ERROR(ValueError, f(), "Alloc: an array of shape (2305843009213693953,) and dtype float64 is too big");
  for (auto& f : compile_all({}, {big_ones})) EXPECT_ERROR(ValueError, f(), "dtype float32 is too big");
  for (auto& f : compile_all({}, {big_eye}))
    EXPECT_ERROR(ValueError, f(), "Eye{dtype='float64'}: an array of shape (4294967296, 4294967296)");
  // sum() gave 0.0: the wrapped size 0 was folded into an empty constant.
  for (auto& f : compile_all({}, {alloc_sum})) EXPECT_ERROR(ValueError, f(), "(4294967296, 4294967296)");
  // Symbolic shapes get the same check at run time.
  Var n = lscalar("n");
  for (auto& f : compile_all({n}, {alloc(constant(1.0, DType::Int8), {n, n})}))
    EXPECT_ERROR(ValueError, f({NDArray::scalar_int64(k2_32)}), "dtype int8 is too big");
}

TEST(Sizes, RewritesDoNotOverflowOnHugeStaticShapes) {
  // prod(c * x) -> c**n * prod(x) counted n = 2**32 * 2**32 in int64 (signed overflow while
  // compiling); the graph must compile and raise at run time like the unoptimized one.
  Var big = alloc(constant(1.0, DType::Float64), {int_constant(k2_32), int_constant(k2_32)});
  Var p = prod(mul(constant(2.0, DType::Float64), big));
  for (auto& f : compile_all({}, {p})) EXPECT_ERROR(ValueError, f(), "(4294967296, 4294967296)");
}

TEST(Sizes, AllocTheMachineCannotGiveRaisesMemoryErrorNamingTheNode) {
  const Var a = alloc(constant(0.0, DType::Float64), {int_constant(k2_50)});
  for (auto& f : compile_all({}, {a})) {
    // Compiling folds nothing this large (constant folding would allocate it).
    const std::string m = error_of<MemoryError>([&] { f(); });
    EXPECT_EQ(m.rfind("Alloc: ", 0), 0u) << m;
    EXPECT_NE(m.find("9007199254740992 bytes"), std::string::npos) << m;
    EXPECT_NE(m.find("Apply node that caused the error: Alloc"), std::string::npos) << m;
  }
}

TEST(Sizes, ReshapeOfAnEmptyArrayToAnOverflowingShape) {
  Var x = dvector("x");
  const NDArray empty = NDArray::zeros(Shape{0}, DType::Float64);
  for (auto& f : compile_all({x}, {reshape(x, {k2_32, k2_32})}))
    EXPECT_ERROR(ValueError, f({empty}), "Reshape{2}: cannot reshape");
  for (auto& f : compile_all({x}, {reshape(x, {-1, k2_32, k2_32})}))
    EXPECT_ERROR(ValueError, f({empty}), "(-1, 4294967296, 4294967296)");
  // Symbolic shape entries too.
  Var a = lscalar("a");
  for (auto& f : compile_all({x, a}, {reshape(x, make_vector({a, a, int_constant(0)}), 3)}))
    EXPECT_ERROR(ValueError, f({empty, NDArray::scalar_int64(k2_32)}), "Reshape{3}");
  // Constant shape products past int64 (flatten, infer_shape of Reshape, Tile, Repeat) are refused;
  // a zero makes the product 0 whatever the other lengths.
  EXPECT_ERROR(ValueError, detail::shape_product({int_constant(k2_32), int_constant(k2_32)}, "flatten"),
               "flatten: the product of the lengths 4294967296 and 4294967296 does not fit in int64");
  EXPECT_EQ(
      detail::constant_int(detail::shape_product({int_constant(k2_32), int_constant(k2_32), int_constant(0)}, "f")), 0);
  EXPECT_ERROR(ValueError, detail::shape_sum({int_constant(kMax), int_constant(1)}, "Join{axis=0}"), "Join{axis=0}");
}

TEST(Sizes, SplitSizesThatWrapAreRefused) {
  Var x = dvector("x");
  Var sizes = lvector("sizes");
  auto parts = split(x, sizes, 3, 0);
  // kMax + kMax + 4 wraps to 2, the axis length: views far past the buffer before.
  for (auto& f : compile_all({x, sizes}, {parts[0], parts[1], parts[2]}))
    EXPECT_ERROR(ValueError, f({iota(2), i64s({kMax, kMax, 4})}), "sum past int64");
}

TEST(Sizes, JoinOfHugeViews) {
  for (std::string_view b : {kReferenceBackend, kCpuBackend}) {
    Var u = bvector("u"), v = bvector("v");
    Var j = concatenate({u, v}, 0);
    auto k = make_kernel(b, *j->owner);
    // 2**62 + 2**62 int8 elements: 2**63 wraps negative.
    NDArray a = broadcast_view(Shape{int64_t{1} << 62}, DType::Int8), out;
    std::vector<NDArray*> in{&a, &a}, outs{&out};
    EXPECT_ERROR(ValueError, k->run(KernelArgs{in, outs}), "Join{axis=0}: the joined length along axis 0");
    // 2**61 + 2**61 fits int64 but not the machine.
    NDArray c = broadcast_view(Shape{int64_t{1} << 61}, DType::Int8);
    std::vector<NDArray*> in2{&c, &c};
    EXPECT_ERROR(MemoryError, k->run(KernelArgs{in2, outs}), "4611686018427387904 bytes");
  }
}

TEST(Sizes, BroadcastAndOuterProductsOfHugeViews) {
  // Elemwise broadcast of (n, 1) and (1, n) views, and dot of (n, 0) by (0, n): n * n wrapped to 0
  // and the kernels wrote 2**64 elements into a 64-byte buffer.
  Var c = tensor(DType::Float64, {false, true}, "c"), r = tensor(DType::Float64, {true, false}, "r");
  // DebugMode would copy the (2**32, 1) input views (32 GiB) before running the node.
  const bool saved = config().debug_checks;
  config().debug_checks = false;
  auto fs = compile_all({c, r}, {add(c, r)});
  config().debug_checks = saved;
  for (auto& f : fs)
    EXPECT_ERROR(ValueError,
                 f({broadcast_view(Shape{k2_32, 1}, DType::Float64), broadcast_view(Shape{1, k2_32}, DType::Float64)}),
                 "(4294967296, 4294967296)");
  Var p = dmatrix("p"), q = dmatrix("q");
  for (auto& f : compile_all({p, q}, {dot(p, q)}))
    EXPECT_ERROR(ValueError,
                 f({NDArray::zeros(Shape{k2_32, 0}, DType::Float64), NDArray::zeros(Shape{0, k2_32}, DType::Float64)}),
                 "(4294967296, 4294967296)");
}

TEST(Sizes, ArangeAtTheInt64Extremes) {
  auto range = [](int64_t a, int64_t b, int64_t s) {
    return arange(int_constant(a), int_constant(b), int_constant(s), DType::Int64);
  };
  const int64_t q = int64_t{1} << 62;
  // stop - start overflowed: numpy gives [-2**63, -2**62, 0, 2**62].
  for (auto& f : compile_all({}, {range(kMin, kMax, q)})) EXPECT_ALLCLOSE(f()[0], i64s({kMin, kMin + q, 0, q}), 0, 0);
  for (auto& f : compile_all({}, {range(kMax, kMin, -q)})) {
    const NDArray r = f()[0];
    EXPECT_EQ(std::vector<int64_t>(r.data<int64_t>(), r.data<int64_t>() + r.size()),
              (std::vector<int64_t>{kMax, kMax - q, -1, kMin + q - 1}));
  }
  for (auto& f : compile_all({}, {range(kMin, kMax, 1)}))
    EXPECT_ERROR(ValueError, f(), "more elements than int64 holds");
  for (auto& f : compile_all({}, {range(0, kMax, 1)})) EXPECT_ERROR(ValueError, f(), "dtype int64 is too big");
  for (auto& f : compile_all({}, {range(kMax, kMin, kMin)})) EXPECT_ALLCLOSE(f()[0], i64s({kMax, -1}), 0, 0);
  Var big = arange(constant(0.0, DType::Float64), constant(1e30, DType::Float64), constant(1.0, DType::Float64),
                   DType::Float64);
  for (auto& f : compile_all({}, {big})) EXPECT_ERROR(ValueError, f(), "ARange");
  // Symbolic bounds: the same checks at run time.
  Var a = lscalar("a"), b = lscalar("b"), s = lscalar("s");
  for (auto& f : compile_all({a, b, s}, {arange(a, b, s, DType::Int64)})) {
    EXPECT_ALLCLOSE(f({NDArray::scalar_int64(kMin), NDArray::scalar_int64(kMax), NDArray::scalar_int64(q)})[0],
                    i64s({kMin, kMin + q, 0, q}), 0, 0);
    EXPECT_ERROR(ValueError, f({NDArray::scalar_int64(kMin), NDArray::scalar_int64(kMax), NDArray::scalar_int64(1)}),
                 "more elements than int64 holds");
  }
}

TEST(Sizes, EyeWithAnExtremeDiagonal) {
  Var k = lscalar("k");
  for (auto& f : compile_all({k}, {eye(int_constant(3), int_constant(4), k, DType::Float64)})) {
    for (int64_t kv : {kMin, kMin + 1, int64_t{-3}, int64_t{-1}, int64_t{0}, int64_t{2}, int64_t{4}, kMax - 1, kMax}) {
      std::vector<double> e(12, 0.0);
      for (int64_t i = 0; i < 3; ++i)
        if (kv > -3 && kv < 4 && i + kv >= 0 && i + kv < 4) e[i * 4 + i + kv] = 1;
      EXPECT_ALLCLOSE(f({NDArray::scalar_int64(kv)})[0], make_array(e, {3, 4}, DType::Float64), 0, 0) << kv;
    }
  }
}

TEST(Sizes, TileAndRepeatAreChecked) {
  Var x = dvector("x");
  for (auto& f : compile_all({x}, {tile(x, {int64_t{1} << 62})}))
    EXPECT_ERROR(ValueError, f({iota(2)}), "Tile{reps=(4611686018427387904,)}");
  for (auto& f : compile_all({x}, {tile(x, {int64_t{1} << 61})})) EXPECT_ERROR(ValueError, f({iota(2)}), "too big");
  Var r = lvector("r");
  // Counts summing past int64 (the reference kernel also built a vector of that length first).
  for (auto& f : compile_all({x, r}, {repeat(x, r, 0)}))
    EXPECT_ERROR(ValueError, f({iota(2), i64s({kMax, 1})}), "Repeat{axis=0}: the repeated length");
  for (auto& f : compile_all({x}, {repeat(x, int64_t{1} << 62, 0)})) EXPECT_ERROR(ValueError, f({iota(1)}), "too big");
  Var y = bvector("y");
  for (auto& f : compile_all({y, r}, {repeat(y, r, 0)}))
    EXPECT_ERROR(MemoryError, f({NDArray::zeros(Shape{1}, DType::Int8), i64s({k2_50})}), "Repeat{axis=0}");
}

TEST(Sizes, TestValuesOfHugeAllocsRaiseWhereBuilt) {
  const std::string saved = config().compute_test_value;
  config().set("compute_test_value", "raise");
  EXPECT_ERROR(ValueError, alloc(constant(0.0, DType::Float64), {int_constant((int64_t{1} << 61) + 1)}), "Alloc");
  EXPECT_ERROR(ValueError, eye(k2_32, DType::Float64), "Eye");
  config().set("compute_test_value", saved);
}

// ------------------------------------------------------------------------------------------------
// Slices at the int64 extremes

using i128 = __int128;

/// The indices x[start:stop:step] takes on an axis of length n: Python's slice.indices with
/// unbounded integers, then the range.
std::vector<int64_t> ref_indices(int64_t n, std::optional<int64_t> start, std::optional<int64_t> stop, int64_t step) {
  const i128 s = step;
  auto adjust = [&](std::optional<int64_t> v, i128 dflt) -> i128 {
    if (!v) return dflt;
    i128 x = *v;
    if (x < 0) {
      x += n;
      if (x < 0) x = s < 0 ? -1 : 0;
    } else if (x >= n) {
      x = s < 0 ? n - 1 : n;
    }
    return x;
  };
  const i128 a = adjust(start, s > 0 ? 0 : n - 1), b = adjust(stop, s > 0 ? n : -1);
  std::vector<int64_t> r;
  for (i128 i = a; s > 0 ? i < b : i > b; i += s) r.push_back(static_cast<int64_t>(i));
  return r;
}

const std::vector<int64_t> kSteps = {kMin, kMin + 1, -(int64_t{1} << 62), -3,       -2,  -1, 1,
                                     2,    3,        int64_t{1} << 62,    kMax - 1, kMax};
std::vector<std::optional<int64_t>> bounds_for(int64_t n) {
  return {std::nullopt, kMin, kMin + 1, -(int64_t{1} << 62), -n - 2,   -n - 1, -n, -n + 1, -1, 0, 1,
          n - 1,        n,    n + 1,    int64_t{1} << 62,    kMax - 1, kMax};
}

struct SliceCase {
  std::optional<int64_t> a, b;
  int64_t s;
  std::string str() const {
    std::ostringstream os;
    os << "[" << (a ? std::to_string(*a) : "") << ":" << (b ? std::to_string(*b) : "") << ":" << s << "]";
    return os.str();
  }
};

std::vector<SliceCase> random_slices(int64_t n, int count, uint64_t seed) {
  std::mt19937_64 rng(seed);
  const auto bs = bounds_for(n);
  std::vector<SliceCase> r;
  for (int i = 0; i < count; ++i)
    r.push_back({bs[rng() % bs.size()], bs[rng() % bs.size()], kSteps[rng() % kSteps.size()]});
  return r;
}

IndexBound bound(std::optional<int64_t> v) { return v ? IndexBound(*v) : IndexBound(); }

NDArray gathered(const NDArray& x, const std::vector<int64_t>& idx) {
  std::vector<double> v;
  for (int64_t i : idx) v.push_back(x.get_flat(i));
  return make_array(v, Shape{static_cast<int64_t>(v.size())}, DType::Float64);
}

TEST(Sizes, SliceIndicesNeverOverflow) {
  for (int64_t n : {int64_t{0}, int64_t{1}, int64_t{2}, int64_t{5}, int64_t{7}})
    for (auto a : bounds_for(n))
      for (auto b : bounds_for(n))
        for (int64_t s : kSteps) {
          const auto want = ref_indices(n, a, b, s);
          int64_t first = 0, end = 0;
          const int64_t len = slice_indices(n, a, b, s, &first, &end);
          ASSERT_EQ(len, static_cast<int64_t>(want.size())) << n << " " << SliceCase{a, b, s}.str();
          NDArray v = iota(n).slice(0, first, end, s);
          ASSERT_EQ(v.shape(0), len);
          for (int64_t i = 0; i < len; ++i) ASSERT_EQ(v.get_flat(i), static_cast<double>(want[i]));
        }
}

TEST(Sizes, HugeStepSelectsOneElement) {
  // x[::2**63 - 1] raised "negative dimension"; numpy returns x[:1] (and x[::-2**63] is x[-1:]).
  Var x = dvector("x");
  for (auto& f : compile_all({x}, {subtensor(x, {sl({}, {}, kMax)}), subtensor(x, {sl({}, {}, kMin)}),
                                   subtensor(x, {sl(kMin, kMax, kMax)})})) {
    auto r = f({iota(5)});
    EXPECT_ALLCLOSE(r[0], make_array({0}, {1}, DType::Float64), 0, 0);
    EXPECT_ALLCLOSE(r[1], make_array({4}, {1}, DType::Float64), 0, 0);
    EXPECT_ALLCLOSE(r[2], make_array({0}, {1}, DType::Float64), 0, 0);
  }
  // A broadcastable axis keeps its element.
  Var rw = drow("r");
  EXPECT_EQ(subtensor(rw, {sl({}, {}, kMax)})->type, rw->type);
}

TEST(Sizes, ConstantExtremeSlicesMatchPython) {
  // Values (CPU and reference kernels), the inferred shape, set_subtensor and inc_subtensor.
  Var x = dvector("x");
  for (int64_t n : {int64_t{0}, int64_t{1}, int64_t{4}, int64_t{7}}) {
    for (const SliceCase& c : random_slices(n, 24, 100 + n)) {
      SCOPED_TRACE(std::to_string(n) + " " + c.str());
      const auto want = ref_indices(n, c.a, c.b, c.s);
      const NDArray xv = iota(n);
      Var y = subtensor(x, {sl(bound(c.a), bound(c.b), c.s)});
      NDArray inc = xv.copy(), set = xv.copy();
      for (int64_t i : want) {
        *reinterpret_cast<double*>(inc.raw() + i * 8) += 100;
        *reinterpret_cast<double*>(set.raw() + i * 8) = -1;
      }
      for (auto& f : compile_all({x}, {y, shape(y), inc_subtensor(y, constant(100.0, DType::Float64)),
                                       set_subtensor(y, constant(-1.0, DType::Float64))})) {
        auto r = f({xv});
        EXPECT_ALLCLOSE(r[0], gathered(xv, want), 0, 0);
        EXPECT_ALLCLOSE(r[1], i64s({static_cast<int64_t>(want.size())}), 0, 0);
        EXPECT_ALLCLOSE(r[2], inc, 0, 0);
        EXPECT_ALLCLOSE(r[3], set, 0, 0);
      }
    }
  }
}

TEST(Sizes, SymbolicExtremeSlicesMatchPython) {
  // One graph, any bound values: the symbolic slice length (infer_shape) and the kernels.
  Var x = dvector("x");
  Var a = lscalar("a"), b = lscalar("b"), s = lscalar("s");
  Var y = subtensor(x, {sl(a, b, s)});
  Var z = subtensor(x, {sl(a, b)});
  auto fs = compile_all({x, a, b, s}, {y, shape(y), z, shape(z), inc_subtensor(y, constant(100.0, DType::Float64))});
  std::mt19937_64 rng(3);
  for (int64_t n : {int64_t{0}, int64_t{1}, int64_t{3}, int64_t{6}}) {
    const auto bs = bounds_for(n);
    for (int k = 0; k < 60; ++k) {
      // Absent bounds are covered by the constant test; here every bound is a value.
      auto av = bs[1 + rng() % (bs.size() - 1)], bv = bs[1 + rng() % (bs.size() - 1)];
      const int64_t sv = kSteps[rng() % kSteps.size()];
      SCOPED_TRACE(std::to_string(n) + " " + (SliceCase{av, bv, sv}).str());
      const NDArray xv = iota(n);
      const auto want = ref_indices(n, av, bv, sv), want1 = ref_indices(n, av, bv, 1);
      NDArray inc = xv.copy();
      for (int64_t i : want) *reinterpret_cast<double*>(inc.raw() + i * 8) += 100;
      for (auto& f : fs) {
        auto r = f({xv, NDArray::scalar_int64(*av), NDArray::scalar_int64(*bv), NDArray::scalar_int64(sv)});
        EXPECT_ALLCLOSE(r[0], gathered(xv, want), 0, 0);
        EXPECT_ALLCLOSE(r[1], i64s({static_cast<int64_t>(want.size())}), 0, 0);
        EXPECT_ALLCLOSE(r[2], gathered(xv, want1), 0, 0);
        EXPECT_ALLCLOSE(r[3], i64s({static_cast<int64_t>(want1.size())}), 0, 0);
        EXPECT_ALLCLOSE(r[4], inc, 0, 0);
      }
    }
  }
}

TEST(Sizes, MergedExtremeSlicesMatchPython) {
  // x[s1][s2] is merged into one Subtensor (FAST_RUN): its composed bounds and step must not
  // overflow, with constant and with symbolic bounds and steps.
  Var x = dvector("x");
  Var a = lscalar("a"), b = lscalar("b"), s = lscalar("s"), c = lscalar("c"), d = lscalar("d"), t = lscalar("t");
  auto sym = compile_all({x, a, b, s, c, d, t}, {subtensor(subtensor(x, {sl(a, b, s)}), {sl(c, d, t)})});
  std::mt19937_64 rng(11);
  const std::vector<int64_t> lengths =
      testing::kSanitizerBuild ? std::vector<int64_t>{0, 5} : std::vector<int64_t>{0, 1, 5, 8};
  for (int64_t n : lengths) {
    const auto bs = bounds_for(n);
    auto pick_b = [&] { return bs[rng() % bs.size()]; };
    auto pick_s = [&] { return kSteps[rng() % kSteps.size()]; };
    const NDArray xv = iota(n);
    // Every pair of steps (products past int64 included), with bounds absent half the time.
    auto pick_ob = [&] { return rng() % 2 ? std::nullopt : pick_b(); };
    for (int64_t st1 : kSteps)
      for (int64_t st2 : kSteps) {
        const SliceCase s1{pick_ob(), pick_ob(), st1}, s2{pick_ob(), pick_ob(), st2};
        SCOPED_TRACE(std::to_string(n) + " " + s1.str() + s2.str());
        const auto i1 = ref_indices(n, s1.a, s1.b, s1.s);
        std::vector<int64_t> want;
        for (int64_t j : ref_indices(static_cast<int64_t>(i1.size()), s2.a, s2.b, s2.s)) want.push_back(i1[j]);
        Var y = subtensor(subtensor(x, {sl(bound(s1.a), bound(s1.b), s1.s)}), {sl(bound(s2.a), bound(s2.b), s2.s)});
        for (auto& f : compile_all({x}, {y})) EXPECT_ALLCLOSE(f({xv})[0], gathered(xv, want), 0, 0);
        // An absent bound is the int64 extreme on its side (x[:kMax], x[kMax::-1], ...).
        auto start_of = [](const SliceCase& c) { return c.a.value_or(c.s > 0 ? kMin : kMax); };
        auto stop_of = [](const SliceCase& c) { return c.b.value_or(c.s > 0 ? kMax : kMin); };
        for (auto& f : sym)
          EXPECT_ALLCLOSE(f({xv, NDArray::scalar_int64(start_of(s1)), NDArray::scalar_int64(stop_of(s1)),
                             NDArray::scalar_int64(s1.s), NDArray::scalar_int64(start_of(s2)),
                             NDArray::scalar_int64(stop_of(s2)), NDArray::scalar_int64(s2.s)})[0],
                          gathered(xv, want), 0, 0);
      }
    // x[s][i] with an extreme slice and an index (the index composition).
    for (int k = 0; k < 10 && n > 0; ++k) {
      const SliceCase s1{pick_b(), pick_b(), pick_s()};
      const auto i1 = ref_indices(n, s1.a, s1.b, s1.s);
      if (i1.empty()) continue;
      const int64_t j = static_cast<int64_t>(rng() % i1.size());
      Var y = subtensor(subtensor(x, {sl(bound(s1.a), bound(s1.b), s1.s)}), {Index(j)});
      for (auto& f : compile_all({x}, {y})) EXPECT_EQ(f({xv})[0].get_flat(0), static_cast<double>(i1[j])) << s1.str();
    }
  }
}

}  // namespace
}  // namespace hypatia
