// float16 as a storage dtype: the binary16 conversions against the compiler's own _Float16 (the
// hardware's or libgcc's correctly rounded conversions), NDArray copies and casts, and
// function() computing float16 graphs in float32 in every mode, rounding each op's result.
#include <hwy/targets.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "hypatia/backends/cpu/composite_program.h"
#include "hypatia/backends/cpu/half_simd.h"
#include "hypatia/rewrite/storage_dtype.h"
#include "test_util.h"

namespace hypatia {
namespace {

uint16_t bits_of(_Float16 h) {
  uint16_t b;
  std::memcpy(&b, &h, 2);
  return b;
}

bool is_nan_bits(uint16_t b) { return (b & 0x7c00u) == 0x7c00u && (b & 0x3ffu); }

TEST(Half, EveryValueWidensExactlyAndNarrowsBack) {
  for (uint32_t b = 0; b < 65536; ++b) {
    const auto h = static_cast<uint16_t>(b);
    _Float16 ref;
    std::memcpy(&ref, &h, 2);
    const float f = float_from_half_bits(h);
    if (is_nan_bits(h)) {
      EXPECT_TRUE(std::isnan(f)) << b;
      EXPECT_TRUE(is_nan_bits(half(f).bits)) << b;
      continue;
    }
    ASSERT_EQ(f, static_cast<float>(ref)) << "bits " << b;
    ASSERT_EQ(half(f).bits, h) << "bits " << b;
    ASSERT_EQ(half(static_cast<double>(f)).bits, h) << "bits " << b;
  }
}

TEST(Half, NarrowingRoundsToNearestEvenLikeTheCompiler) {
  std::mt19937_64 rng(7);
  std::uniform_int_distribution<uint64_t> any;
  // Random bit patterns concentrated on half's range (exponents around 2^-26 .. 2^17), plus
  // arbitrary ones; float and double inputs, both checked against the compiler's conversion.
  for (int i = 0; i < 400000; ++i) {
    uint64_t r = any(rng);
    double d;
    if (i % 4 == 0) {
      std::memcpy(&d, &r, 8);
    } else {
      const uint64_t exp = 1023 - 26 + (r >> 58) % 44;  // 2^-26 .. 2^17
      const uint64_t bits = (r & 0x800fffffffffffffULL) | (exp << 52);
      std::memcpy(&d, &bits, 8);
    }
    if (std::isnan(d)) continue;
    const float f = static_cast<float>(d);
    ASSERT_EQ(half(d).bits, bits_of(static_cast<_Float16>(d))) << std::hexfloat << d;
    ASSERT_EQ(half(f).bits, bits_of(static_cast<_Float16>(f))) << std::hexfloat << f;
  }
  // Ties: 1 + 2^-11 (halfway between 1 and 1 + 2^-10) goes to 1; 1 + 3 * 2^-11 to 1 + 2^-9.
  EXPECT_EQ(half(1.0 + std::ldexp(1.0, -11)).bits, 0x3c00);
  EXPECT_EQ(half(1.0 + 3 * std::ldexp(1.0, -11)).bits, 0x3c02);
  // A double just above the tie rounds up (a float on the way would round it to the tie first).
  EXPECT_EQ(half(1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40)).bits, 0x3c01);
  EXPECT_EQ(half(65504.0).bits, 0x7bff);
  EXPECT_EQ(half(65519.99).bits, 0x7bff);
  EXPECT_EQ(half(65520.0).bits, 0x7c00);  // the tie with 2^16 rounds to even: infinity
  EXPECT_EQ(half(-1e300).bits, 0xfc00);
  EXPECT_EQ(half(std::ldexp(1.0, -24)).bits, 0x0001);  // the smallest subnormal
  EXPECT_EQ(half(std::ldexp(1.0, -25)).bits, 0x0000);  // half of it: the tie goes to 0
  EXPECT_EQ(half(std::ldexp(1.5, -25)).bits, 0x0001);
  EXPECT_EQ(half(-0.0).bits, 0x8000);
  EXPECT_TRUE(is_nan_bits(half(std::nan("")).bits));
}

TEST(Half, CpuConversionLoopsGiveTheScalarBitsOnEveryTarget) {
  std::vector<half> every(65536);
  for (uint32_t b = 0; b < 65536; ++b) every[b] = half::from_bits(static_cast<uint16_t>(b));
  std::mt19937 rng(3);
  std::vector<float> floats(100003);  // not a multiple of any vector length: the tail loop runs
  for (float& f : floats) {
    uint32_t bits = rng();
    if (bits % 4) bits = (bits & 0x807fffffu) | ((127 - 26 + (bits >> 24) % 44) << 23);  // half's range
    std::memcpy(&f, &bits, 4);
  }
  const int64_t targets = hwy::SupportedTargets();
  for (int64_t t = 1; t != 0 && t <= targets; t <<= 1) {
    if (!(targets & t)) continue;
    hwy::SetSupportedTargetsForTest(t);
    SCOPED_TRACE(hwy::TargetName(t));
    std::vector<float> wide(every.size());
    cpu::widen_f16(every.data(), wide.data(), every.size());
    for (size_t i = 0; i < every.size(); ++i)
      if (!is_nan_bits(every[i].bits)) {
        ASSERT_EQ(wide[i], every[i].to_float()) << i;
      }
    std::vector<half> narrow(floats.size());
    cpu::narrow_f16(floats.data(), narrow.data(), floats.size());
    for (size_t i = 0; i < floats.size(); ++i) {
      if (std::isnan(floats[i])) {
        ASSERT_TRUE(is_nan_bits(narrow[i].bits));
        continue;
      }
      ASSERT_EQ(narrow[i].bits, half(floats[i]).bits) << std::hexfloat << floats[i];
    }
  }
  hwy::SetSupportedTargetsForTest(0);
}

TEST(Half, AffineRoundingAndNarrowingLoopsGiveTheScalarBitsOnEveryTarget) {
  std::mt19937 rng(5);
  std::vector<float> floats(4099);
  for (float& f : floats) {
    uint32_t bits = rng();
    if (bits % 4) bits = (bits & 0x807fffffu) | ((127 - 26 + (bits >> 24) % 44) << 23);
    std::memcpy(&f, &bits, 4);
  }
  floats[0] = std::numeric_limits<float>::infinity();
  floats[1] = std::nanf("");
  floats[2] = 65519.0f;
  const float maps[2][3] = {{0.25f, -3.0f, 1.5f}, {-0.0f, 1.0f, -0.0f}};
  const int64_t targets = hwy::SupportedTargets();
  for (int64_t t = 1; t != 0 && t <= targets; t <<= 1) {
    if (!(targets & t)) continue;
    hwy::SetSupportedTargetsForTest(t);
    SCOPED_TRACE(hwy::TargetName(t));
    for (const float* c : {maps[0], maps[1], static_cast<const float*>(nullptr)}) {
      std::vector<float> rounded(floats.size());
      std::vector<half> narrow(floats.size());
      cpu::round_f16(floats.data(), rounded.data(), floats.size(), c);
      cpu::narrow_f16(floats.data(), narrow.data(), floats.size(), c);
      for (size_t i = 0; i < floats.size(); ++i) {
        float x = floats[i];
        if (c) {
          const float sum = x + c[0];
          const float prod = sum * c[1];
          x = prod + c[2];
        }
        const half want(x);
        if (std::isnan(x)) {
          ASSERT_TRUE(std::isnan(rounded[i]) && is_nan_bits(narrow[i].bits)) << i;
          continue;
        }
        ASSERT_EQ(narrow[i].bits, want.bits) << i << " " << std::hexfloat << floats[i];
        ASSERT_EQ(rounded[i], want.to_float()) << i;
      }
    }
  }
  hwy::SetSupportedTargetsForTest(0);
}

TEST(Half, ArraysCopyConvertAndPrint) {
  NDArray a = NDArray::empty(Shape{4}, DType::Float16);
  EXPECT_EQ(a.itemsize(), 2u);
  a.fill(0.1);
  EXPECT_EQ(a.get_flat(0), static_cast<double>(half(0.1).to_float()));
  NDArray src = NDArray::from_vector(std::vector<double>{1.0, -2.5, 70000.0, std::nan("")});
  a.assign(src);
  EXPECT_EQ(a.get_flat(1), -2.5);
  EXPECT_TRUE(std::isinf(a.get_flat(2)));
  EXPECT_TRUE(std::isnan(a.get_flat(3)));
  EXPECT_EQ(a.get_flat_int(3), 0);
  NDArray back = a.astype(DType::Float32);
  EXPECT_EQ(back.get_flat(0), 1.0);
  EXPECT_EQ(std::string(dtype_name(DType::Float16)), "float16");
  EXPECT_EQ(dtype_from_name("float16"), DType::Float16);
}

TEST(Half, PromotionFollowsNumpy) {
  EXPECT_EQ(promote_types(DType::Float16, DType::Float16), DType::Float16);
  EXPECT_EQ(promote_types(DType::Float16, DType::Int8), DType::Float16);
  EXPECT_EQ(promote_types(DType::UInt8, DType::Float16), DType::Float16);
  EXPECT_EQ(promote_types(DType::Float16, DType::Int16), DType::Float32);
  EXPECT_EQ(promote_types(DType::Float16, DType::Int32), DType::Float64);
  EXPECT_EQ(promote_types(DType::Float16, DType::Float32), DType::Float32);
  EXPECT_EQ(promote_types(DType::Bool, DType::Float16), DType::Float16);
  EXPECT_EQ(float_upcast(DType::Float16), DType::Float16);
  EXPECT_TRUE(can_cast_safely(DType::Float16, DType::Float32));
  EXPECT_FALSE(can_cast_safely(DType::Float32, DType::Float16));
}

TEST(Half, ArithmeticKernelsRefuseStorageDtypeData) {
  // A kernel that computes never sees float16: the dtype dispatch says why if one ever did.
  std::string msg = testing::error_of<TypeError>([] { dispatch_dtype(DType::Float16, [](auto) {}); });
  EXPECT_NE(msg.find("storage dtype"), std::string::npos) << msg;
}

/// float16 values of v rounded as numpy's float16 does.
float r16(double v) { return half(v).to_float(); }

class Float16Modes : public ::testing::TestWithParam<const char*> {};

TEST_P(Float16Modes, EachOpComputesInFloat32AndRoundsItsResult) {
  Var x = vector("x", DType::Float16);
  Var y = exp(x) * constant(2.0, DType::Float16) + constant(1.0, DType::Float16);
  ASSERT_EQ(y->dtype(), DType::Float16);
  Var s = sum(x);
  FunctionOptions o;
  o.mode = GetParam();
  Function f = function({x}, {y, s, cast(x, DType::Float64), dimshuffle(x, {-1, 0}), x * x}, o);
  const int n = 10000;
  NDArray a = NDArray::empty(Shape{n}, DType::Float16);
  for (int i = 0; i < n; ++i) reinterpret_cast<half*>(a.raw())[i] = half(std::sin(i * 0.37) * 3);
  auto r = f({a});
  ASSERT_EQ(r[0].dtype(), DType::Float16);
  ASSERT_EQ(r[1].dtype(), DType::Float16);
  ASSERT_EQ(r[4].dtype(), DType::Float16);
  double total = 0;
  for (int i = 0; i < n; ++i) {
    const double xi = a.get_flat(i);
    total += xi;
    // exp in float32 (within an ulp of float32), then each op's result rounded to float16.
    const float e = r16(std::exp(static_cast<float>(xi)));
    const float want = r16(r16(e * 2.0f) + 1.0f);
    ASSERT_NEAR(r[0].get_flat(i), want, std::abs(want) * 1e-3) << i;
    ASSERT_EQ(r[2].get_flat(i), xi);
    ASSERT_EQ(r[3].get_flat(i), xi);
    ASSERT_EQ(r[4].get_flat(i), r16(xi * xi)) << i;
  }
  // Accumulated in float32 or wider, rounded once: not stuck where float16 steps exceed 1.
  EXPECT_NEAR(r[1].get_flat(0), r16(total), std::abs(total) * 1e-3);
  // A sum of ones past 2048 (where float16's step is 2).
  Function g = function({x}, {sum(x)}, o);
  NDArray ones = NDArray::empty(Shape{5000}, DType::Float16);
  ones.fill(1.0);
  EXPECT_EQ(g({ones})[0].get_flat(0), 5000.0);
}

TEST_P(Float16Modes, ProducersAndUpdatesKeepFloat16) {
  FunctionOptions o;
  o.mode = GetParam();
  NDArray v = NDArray::empty(Shape{3}, DType::Float16);
  v.fill(1.0);
  Var w = shared(v, "w");
  o.updates = {{w, w * constant(1.5, DType::Float16)}};
  Function f = function({}, {w}, o);
  f({});
  auto r = f({});
  EXPECT_EQ(r[0].get_flat(0), 1.5);
  EXPECT_EQ(get_value(w).dtype(), DType::Float16);
  EXPECT_EQ(get_value(w).get_flat(2), 2.25);
}

INSTANTIATE_TEST_SUITE_P(All, Float16Modes, ::testing::Values("FAST_RUN", "FAST_COMPILE", "NONE", "DebugMode"));

TEST(Float16, LoweringLeavesNoArithmeticOnFloat16) {
  Var x = matrix("x", DType::Float16);
  Var y = dot(x, x) + sum(x, std::vector<int>{0});
  Function f = function({x}, {y, reshape(x, {-1})});
  for (const auto& n : f.toposort()) {
    bool f16 = false;
    for (const Var& v : n->inputs) f16 |= v->dtype() == DType::Float16;
    for (int j = 0; j < n->nout(); ++j) f16 |= n->output_ptr(j)->dtype() == DType::Float16;
    if (!f16) continue;
    const std::string name = n->op->name();
    // A fused loop stores float16 and computes in float32: its only float16 values are loads,
    // roundings and stores (CompositeProgram checks that every other step reads its dtype).
    const auto* fused = dynamic_cast<const CompositeProgram*>(n->op.get());
    EXPECT_TRUE(name.find("Cast") != std::string::npos || name.find("Reshape") != std::string::npos ||
                name.find("DimShuffle") != std::string::npos || (fused && fused->dtype == DType::Float32))
        << name;
  }
}

// ---------------------------------------------------------------------------------------------
// Fusion through float16 casts: float16 loads, roundings and stores inside one fused loop.

/// Whether a and b (float16, float32 or float64) hold the same values bit for bit (NaNs equal).
std::string same_bits(const NDArray& a, const NDArray& b) {
  if (!(a.shape() == b.shape()) || a.dtype() != b.dtype())
    return "shape or dtype differ: " + a.describe() + " vs " + b.describe();
  NDArray ca = a.copy(), cb = b.copy();
  for (int64_t i = 0; i < ca.size(); ++i) {
    const double x = ca.get_flat(i), y = cb.get_flat(i);
    if (std::isnan(x) && std::isnan(y)) continue;
    if (x != y || std::signbit(x) != std::signbit(y))
      return "element " + std::to_string(i) + ": " + std::to_string(x) + " vs " + std::to_string(y);
  }
  return "";
}

/// float16 values of every kind: ordinary, tiny (subnormal results), large (overflowing when
/// doubled), infinities, NaN and signed zeros.
NDArray f16_values(const Shape& shape, uint32_t seed) {
  NDArray a = NDArray::empty(shape, DType::Float16);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(-4, 4);
  auto* p = reinterpret_cast<half*>(a.raw());
  const double special[] = {65504.0, -40000.0, 1e-7, -6e-8, 0.0, -0.0, INFINITY, -INFINITY, NAN};
  for (int64_t i = 0; i < a.size(); ++i) p[i] = half(i % 17 == 3 ? special[(i / 17) % 9] : u(rng));
  return a;
}

struct Case {
  std::string name;
  std::vector<Var> inputs;
  std::vector<Var> outputs;
  std::vector<NDArray> values;
};

/// FAST_RUN (fused) against FAST_COMPILE (one node per op) bit for bit; returns the fused
/// function's nodes.
std::vector<std::shared_ptr<Apply>> check_fused_bitwise(const Case& c) {
  SCOPED_TRACE(c.name);
  FunctionOptions fast, slow;
  fast.mode = "FAST_RUN";
  slow.mode = "FAST_COMPILE";
  std::vector<In> ins(c.inputs.begin(), c.inputs.end());
  std::vector<Out> outs(c.outputs.begin(), c.outputs.end());
  Function f = function(ins, outs, fast), g = function(ins, outs, slow);
  std::vector<NDArray> a = f(c.values), b = g(c.values);
  for (size_t k = 0; k < a.size(); ++k) EXPECT_EQ(same_bits(a[k], b[k]), "") << "output " << k;
  return f.toposort();
}

int count_fused(const std::vector<std::shared_ptr<Apply>>& nodes) {
  int n = 0;
  for (const auto& node : nodes)
    n += dynamic_cast<const CompositeProgram*>(node->op.get()) != nullptr &&
         node->op->name().find("float16") != std::string::npos;
  return n;
}

TEST(Float16Fusion, ChainsFuseIntoOneLoopWithTheUnfusedBits) {
  Var x = vector("x", DType::Float16), y = vector("y", DType::Float16);
  Var two = constant(2.0, DType::Float16), one = constant(1.0, DType::Float16);
  const int64_t n = 10007;  // two tiles and a tail
  NDArray xv = f16_values(Shape{n}, 1), yv = f16_values(Shape{n}, 2);
  // x * 2 + 1: every op rounds to float16 as the graph says, in one node of three passes.
  auto nodes = check_fused_bitwise({"x*2+1", {x}, {x * two + one}, {xv}});
  ASSERT_EQ(nodes.size(), 1u);
  const auto* c = dynamic_cast<const Composite*>(nodes[0]->op.get());
  ASSERT_NE(c, nullptr) << nodes[0]->op->name();
  EXPECT_EQ(c->in_dtypes[0], DType::Float16);
  EXPECT_EQ(TileProgram(c->name(), *c, {c->nvalues() - 1}, TileProgram::scalar_inputs(*nodes[0])).passes(), 3)
      << c->name();
  // Transcendentals, two float16 inputs, an intermediate read twice.
  Var t = tanh(x * y);
  nodes = check_fused_bitwise({"exp and tanh", {x, y}, {exp(x) * two + y, t * t + x}, {xv, yv}});
  // 22 steps, of which 6 read a rounded float16 result back (no buffer of their own): one loop.
  EXPECT_EQ(count_fused(nodes), 1);
  EXPECT_EQ(nodes.size(), 1u);
  // Mixed storage: float16 read into a float32 program with a float32 input; float32 and float16
  // results of one loop.
  Var w = vector("w", DType::Float32);
  NDArray wv = testing::random_array(Shape{n}, DType::Float32, 3);
  nodes =
      check_fused_bitwise({"mixed",
                           {x, w},
                           {cast(x, DType::Float32) * w + 1.0, cast(exp(cast(x, DType::Float32) * w), DType::Float16)},
                           {xv, wv}});
  EXPECT_EQ(nodes.size(), 1u);
  // float32 inputs rounded to float16 inside the loop: contiguous, and a broadcast scalar.
  Var ws = scalar("ws", DType::Float32);
  NDArray wsv = NDArray::from_vector(std::vector<float>{0.1f}, Shape{});
  nodes = check_fused_bitwise({"float32 rounded",
                               {x, w, ws},
                               {cast(w, DType::Float16) * x + cast(ws, DType::Float16), cast(w * 3.0, DType::Float16)},
                               {xv, wv, wsv}});
  EXPECT_EQ(count_fused(nodes), 1);
  // A float16 scalar input (read with stride 0) and a 0-d graph.
  Var s = scalar("s", DType::Float16);
  NDArray sv = NDArray::empty(Shape{}, DType::Float16);
  reinterpret_cast<half*>(sv.raw())[0] = half(0.3);
  check_fused_bitwise({"scalar input", {x, s}, {x * s + s}, {xv, sv}});
  check_fused_bitwise({"0-d", {s}, {exp(s) * two + one}, {sv}});
}

TEST(Float16Fusion, StridedBroadcastAndTransposedOperands) {
  Var m = matrix("m", DType::Float16), r = vector("r", DType::Float16);
  NDArray mv = f16_values(Shape{67, 131}, 4), rv = f16_values(Shape{67}, 5);
  Var two = constant(2.0, DType::Float16);
  // m.T * 2 + r: the transposed operand is strided, r is broadcast along rows.
  check_fused_bitwise({"transposed", {m, r}, {transpose(m) * two + r}, {mv, rv}});
  // Every other column, and the result written transposed into a float32 output.
  check_fused_bitwise({"sliced", {m}, {subtensor(m, {all(), sl({}, {}, 2)}) * two}, {mv}});
  check_fused_bitwise(
      {"float32 out", {m, r}, {transpose(cast(m * two, DType::Float32)) + cast(r, DType::Float32)}, {mv, rv}});
}

TEST(Float16Fusion, ReductionsReadFloat16InTheirLoop) {
  Var x = matrix("x", DType::Float16), y = matrix("y", DType::Float16);
  NDArray xv = f16_values(Shape{300, 41}, 6), yv = f16_values(Shape{300, 41}, 7);
  // Without the specials: sums of infinities and NaN say little.
  NDArray a = NDArray::empty(Shape{300, 41}, DType::Float16), b = a.copy();
  std::mt19937 rng(8);
  std::uniform_real_distribution<double> u(-2, 2);
  for (int64_t i = 0; i < a.size(); ++i) {
    reinterpret_cast<half*>(a.raw())[i] = half(u(rng));
    reinterpret_cast<half*>(b.raw())[i] = half(u(rng));
  }
  for (const auto& [xs, ys] : {std::pair{a, b}, std::pair{xv, yv}}) {
    auto nodes = check_fused_bitwise(
        {"sum(x*y)", {x, y}, {sum(x * y), sum(x, std::vector<int>{0}), max(x * y, std::vector<int>{1})}, {xs, ys}});
    int reduces = 0;
    for (const auto& node : nodes) reduces += dynamic_cast<const CompositeReduce*>(node->op.get()) != nullptr;
    EXPECT_EQ(reduces, 3);
  }
}

TEST(Float16Fusion, InPlaceUpdatesOfFloat16SharedVariables) {
  for (const char* mode : {"FAST_RUN", "FAST_COMPILE"}) {
    NDArray v = f16_values(Shape{5000}, 9);
    Var w = shared(v, "w");
    FunctionOptions o;
    o.mode = mode;
    o.updates = {{w, w * constant(1.5, DType::Float16) + constant(0.25, DType::Float16)}};
    Function f = function({}, {}, o);
    f({});
    f({});
    if (std::string(mode) == "FAST_RUN") {
      bool inplace = false;
      for (const auto& node : f.toposort())
        if (const auto* c = dynamic_cast<const Composite*>(node->op.get())) inplace = c->inplace >= 0;
      EXPECT_TRUE(inplace) << f.debugprint();
    }
    NDArray want = v.copy();
    for (int k = 0; k < 2; ++k)
      for (int64_t i = 0; i < want.size(); ++i) {
        half& h = reinterpret_cast<half*>(want.raw())[i];
        h = half(half(h.to_float() * 1.5f).to_float() + 0.25f);
      }
    EXPECT_EQ(same_bits(get_value(w), want), "") << mode;
  }
}

TEST(Float16Fusion, ProgramsCheckTheirDtypes) {
  using S = CompositeStep;
  const auto f16 = DType::Float16, f32 = DType::Float32, f64 = DType::Float64;
  // Arithmetic on a float16 value.
  std::string msg = testing::error_of<ValueError>([&] { Composite(1, f32, {S{ScalarOpKind::Exp, {0}}}, -1, {f16}); });
  EXPECT_NE(msg.find("only Cast steps read float16"), std::string::npos) << msg;
  // A cast to the same dtype, and float16 in a float64 program.
  msg = testing::error_of<ValueError>([&] { Composite(1, f32, {S{ScalarOpKind::Cast, {0}, f32}}); });
  EXPECT_NE(msg.find("casts float32 to float32"), std::string::npos) << msg;
  msg = testing::error_of<ValueError>([&] { Composite(1, f64, {S{ScalarOpKind::Cast, {0}, f64}}, -1, {f16}); });
  EXPECT_NE(msg.find("input 0 is float16"), std::string::npos) << msg;
  // A reduction of a float16 value.
  msg = testing::error_of<ValueError>([&] {
    CompositeReduce(1, f32, {S{ScalarOpKind::Cast, {0}, f16}}, ReduceKind::Sum, {0}, f32);
  });
  EXPECT_NE(msg.find("reduced value is float16"), std::string::npos) << msg;
  // Equal programs are equal ops; the input dtypes and cast targets tell programs apart.
  Composite a(1, f32, {S{ScalarOpKind::Cast, {0}, f32}}, -1, {f16}),
      b(1, f32, {S{ScalarOpKind::Cast, {0}, f32}}, -1, {f16});
  Composite c(1, f32, {S{ScalarOpKind::Cast, {0}, f16}});
  EXPECT_TRUE(a.equals(b));
  EXPECT_EQ(a.hash(), b.hash());
  EXPECT_FALSE(a.equals(c));
  EXPECT_EQ(a.name(), "Elemwise{Composite{cast{float32}(i0)}}");
  Var x = vector("x", f16);
  EXPECT_EQ(apply_op1(std::make_shared<Composite>(static_cast<const CompositeProgram&>(a), -1), {x})->dtype(), f32);
  msg = testing::error_of<TypeError>(
      [&] { apply_op1(std::make_shared<Composite>(static_cast<const CompositeProgram&>(c), -1), {x}); });
  EXPECT_NE(msg.find("expected float32"), std::string::npos) << msg;
}

}  // namespace
}  // namespace hypatia
