// IEEE 754 binary16 (numpy's float16) as a storage type: 1 sign bit, 5 exponent bits, 10
// mantissa bits. Values convert to and from float and double with round-to-nearest-even (numpy's
// conversions, NaN kept NaN, overflow to infinity); there is no arithmetic on `half` itself:
// kernels compute in float32 (the storage-dtype lowering in rewrite/storage_dtype.h puts the
// casts in the graph).
#pragma once
#include <bit>
#include <cstdint>
#include <type_traits>

namespace hypatia {

/// The float16 value nearest to `d` (ties to even); NaN stays NaN (quiet, payload's top bits
/// kept), |d| >= 65520 becomes infinity.
constexpr uint16_t half_bits_from_double(double d) {
  const uint64_t b = std::bit_cast<uint64_t>(d);
  const auto sign = static_cast<uint16_t>((b >> 48) & 0x8000u);
  const int exp = static_cast<int>((b >> 52) & 0x7ff);
  const uint64_t mant = b & ((uint64_t{1} << 52) - 1);
  if (exp == 0x7ff) return sign | 0x7c00u | (mant ? static_cast<uint16_t>(0x200u | (mant >> 42)) : 0u);
  const int e = exp - 1023;
  if (e > 15) return sign | 0x7c00u;
  if (exp == 0 || e < -25) return sign;  // below half the smallest subnormal (2^-25): zero
  const uint64_t m = mant | (uint64_t{1} << 52);
  // A normal half keeps 11 significant bits (implicit one included); a subnormal counts units of
  // 2^-24.
  const int shift = e >= -14 ? 42 : 28 - e;
  uint64_t q = m >> shift;
  const uint64_t rem = m & ((uint64_t{1} << shift) - 1);
  const uint64_t halfway = uint64_t{1} << (shift - 1);
  if (rem > halfway || (rem == halfway && (q & 1))) ++q;
  // Normal: the implicit bit (1 << 10) turns (e + 14) into the biased exponent e + 15, and a carry
  // out of the mantissa steps the exponent (up to 0x7c00, infinity). Subnormal: q itself (1024 is
  // the smallest normal).
  const uint64_t bits = e >= -14 ? (static_cast<uint64_t>(e + 14) << 10) + q : q;
  return sign | static_cast<uint16_t>(bits >= 0x7c00u ? 0x7c00u : bits);
}

/// The float (exactly) that float16 `h` holds.
constexpr float float_from_half_bits(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1f;
  const uint32_t mant = h & 0x3ffu;
  if (exp == 0) {
    const float v = static_cast<float>(mant) * (1.0f / 16777216.0f);  // mant * 2^-24, exact
    return sign ? -v : v;
  }
  if (exp == 31) return std::bit_cast<float>(sign | 0x7f800000u | (mant << 13));
  return std::bit_cast<float>(sign | ((exp + 112) << 23) | (mant << 13));
}

/// One float16 element as stored. Converts explicitly to and from the arithmetic types (through
/// float, which holds every float16 exactly; from double directly, so there is no double
/// rounding).
struct half {
  uint16_t bits = 0;

  constexpr half() = default;
  template <class T>
  requires std::is_arithmetic_v<T>
  constexpr explicit half(T v) : bits(half_bits_from_double(static_cast<double>(v))) {}
  static constexpr half from_bits(uint16_t b) {
    half h;
    h.bits = b;
    return h;
  }
  constexpr float to_float() const { return float_from_half_bits(bits); }
  template <class T>
  requires std::is_arithmetic_v<T>
  constexpr explicit operator T() const { return static_cast<T>(to_float()); }
};
static_assert(sizeof(half) == 2 && std::is_trivially_copyable_v<half>);

}  // namespace hypatia
