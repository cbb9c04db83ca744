// float16 as a storage dtype: the binary16 conversions against the compiler's own _Float16 (the
// hardware's or libgcc's correctly rounded conversions), NDArray copies and casts, and
// function() computing float16 graphs in float32 in every mode, rounding each op's result.
#include <hwy/targets.h>

#include <cmath>
#include <cstring>
#include <random>

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
    EXPECT_TRUE(name.find("Cast") != std::string::npos || name.find("Reshape") != std::string::npos ||
                name.find("DimShuffle") != std::string::npos)
        << name;
  }
}

}  // namespace
}  // namespace hypatia
