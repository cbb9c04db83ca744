// Constant tables of the float64 SIMD math (simd_math-inl.h), generated with mpmath at 200 bits
// or more (docs/NUMERICS.md says how). 16 entries each: one AVX-512 two-register permute looks an
// entry up, so the loops need no gather. Also the scalar Payne-Hanek reduction for huge sin/cos
// arguments.
#pragma once
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>

namespace hypatia::simd_tables {

/// 2^(j/16) rounded to double, with j << 48 subtracted from its bits: adding k << 48 (k = 16 e + j)
/// to these bits gives 2^e * 2^(j/16) for a normal result.
alignas(64) inline constexpr double kExpBits[16] = {
    std::bit_cast<double>(uint64_t{0x3ff0000000000000}), std::bit_cast<double>(uint64_t{0x3fefb5586cf9890f}),
    std::bit_cast<double>(uint64_t{0x3fef72b83c7d517b}), std::bit_cast<double>(uint64_t{0x3fef387a6e756238}),
    std::bit_cast<double>(uint64_t{0x3fef06fe0a31b715}), std::bit_cast<double>(uint64_t{0x3feedea64c123422}),
    std::bit_cast<double>(uint64_t{0x3feebfdad5362a27}), std::bit_cast<double>(uint64_t{0x3feeab07dd485429}),
    std::bit_cast<double>(uint64_t{0x3feea09e667f3bcd}), std::bit_cast<double>(uint64_t{0x3feea11473eb0187}),
    std::bit_cast<double>(uint64_t{0x3feeace5422aa0db}), std::bit_cast<double>(uint64_t{0x3feec49182a3f090}),
    std::bit_cast<double>(uint64_t{0x3feee89f995ad3ad}), std::bit_cast<double>(uint64_t{0x3fef199bdd85529c}),
    std::bit_cast<double>(uint64_t{0x3fef5818dcfba487}), std::bit_cast<double>(uint64_t{0x3fefa4afa2a490da}),
};

/// (2^(j/16) - T_j) / T_j with T_j the rounded table value: the table's own rounding error, so
/// that T_j (1 + tail_j) is 2^(j/16) to about 2^-106.
alignas(64) inline constexpr double kExpTail[16] = {
    0x0.0p+0,
    0x1.79aa65d837b6dp-54,
    -0x1.01b15eaa59348p-55,
    0x1.68efde3a8a894p-54,
    0x1.34d754db0abb6p-55,
    0x1.59f48a72a4c6dp-55,
    0x1.690cebb7aafb0p-56,
    0x1.063e1e21c5409p-54,
    -0x1.3b3efbf5e2228p-54,
    -0x1.b32dcb94da51dp-56,
    0x1.db72fc1f0eab4p-55,
    0x1.1affc2b91ce27p-56,
    0x1.c1a7792cb3387p-55,
    0x1.36eae30af0cb3p-56,
    0x1.4a385a63d07a7p-56,
    -0x1.ff7128fd391f0p-55,
};

/// log: z in [0.703125, 1.40625) falls in subinterval i (the top 4 bits of bits(z) - bits(0.703125));
/// c_i is the harmonic midpoint of it (1 exactly for the one holding 1, so that x near 1 has an
/// exact r = x - 1), invc_i = 1 / c_i rounded, and -log(invc_i) = logc_hi + logc_lo.
alignas(64) inline constexpr double kLogInvC[16] = {
    0x1.6457a212a3e37p+0, 0x1.557b469610ac8p+0, 0x1.47cfa5da18ca7p+0, 0x1.3b318879fc66bp+0,
    0x1.2f82f1287c5b0p+0, 0x1.24aa2d3d29907p+0, 0x1.1a9116e9b233fp+0, 0x1.11247d79900a4p+0,
    0x1.0853aaffeef26p+0, 0x1.0000000000000p+0, 0x1.e24cb06def993p-1, 0x1.c77669901c776p-1,
    0x1.af74e9781af75p-1, 0x1.99db2d4eede8ap-1, 0x1.86510688c8f77p-1, 0x1.748e5ac1f3905p-1,
};
alignas(64) inline constexpr double kLogCHi[16] = {
    -0x1.52a6cae96f7c0p-2, -0x1.2707ee8263a6cp-2, -0x1.fa6388a0173fbp-3, -0x1.aa00c1b2c285cp-3, -0x1.5ca7daa12f628p-3,
    -0x1.12201dfafceeap-3, -0x1.946da634b7bcbp-4, -0x1.097cdb1d21e49p-4, -0x1.06377b7021b32p-5, 0x0.0p+0,
    0x1.e98c1dcf58d69p-5,  0x1.df4710cfa62b0p-4,  0x1.5e87d246cb804p-3,  0x1.c7b7b42b7fabdp-3,  0x1.15e1245e49638p-2,
    0x1.45914b81cc83ap-2,
};
alignas(64) inline constexpr double kLogCLo[16] = {
    -0x1.260c16e721502p-57, -0x1.6f6d5710310e2p-57,
    -0x1.0026247c86adcp-64, 0x1.38eb7f2d6040dp-60,
    0x1.fe7b78be6469dp-58,  0x1.97d4a7bc4500dp-57,
    -0x1.6be7f2333c095p-60, -0x1.3839a01e210d5p-59,
    0x1.b874748b4f38ap-60,  0x0.0p+0,
    -0x1.8554d8473bde3p-59, -0x1.49c01d37432dap-65,
    -0x1.c47d6f81b882fp-57, 0x1.7dc27b09f536cp-57,
    -0x1.4dc018bdeb7c2p-56, -0x1.9716049408191p-56,
};

/// The bits of 2/pi after the binary point, 64 per word, most significant first (1280 bits).
inline constexpr uint64_t kTwoOverPi[20] = {
    0xa2f9836e4e441529ull, 0xfc2757d1f534ddc0ull, 0xdb6295993c439041ull, 0xfe5163abdebbc561ull, 0xb7246e3a424dd2e0ull,
    0x06492eea09d1921cull, 0xfe1deb1cb129a73eull, 0xe88235f52ebb4484ull, 0xe99c7026b45f7e41ull, 0x3991d639835339f4ull,
    0x9c845f8bbdf9283bull, 0x1ff897ffde05980full, 0xef2f118b5a0a6d1full, 0x6d367ecf27cb09b7ull, 0x4f463f669e5fea2dull,
    0x7527bac7ebe5f17bull, 0x3d0739f78a5292eaull, 0x6bfb5fb11f8d5d08ull, 0x56033046fc7b6babull, 0xf0cfbc209af4361dull,
};

/// Payne-Hanek: x = n pi/2 + (rh + rl) for a finite |x| >= 2^19, with |rh + rl| <= pi/4 (plus
/// rounding) and a relative error below 2^-100 even for the double closest to a multiple of pi/2
/// (|r| ~ 2^-61). Returns n (only n mod 4 is meaningful).
inline int64_t reduce_pio2_large(double x, double& rh, double& rl) {
  const uint64_t bits = std::bit_cast<uint64_t>(x);
  const uint64_t m = (bits & ((uint64_t{1} << 52) - 1)) | (uint64_t{1} << 52);
  const int e = static_cast<int>((bits >> 52) & 0x7ff) - 1075;  // x = +-m 2^e, e >= -33
  // 192 bits of 2/pi from bit i0 (bit 1 follows the binary point); the bits before it add
  // multiples of 4 to x 2/pi, and those after it less than 2^-137.
  const int i0 = std::max(1, e - 1);
  uint64_t w[3];
  for (int k = 0; k < 3; ++k) {
    const int b = i0 - 1 + 64 * k, wi = b >> 6, sh = b & 63;
    w[k] = sh == 0 ? kTwoOverPi[wi] : (kTwoOverPi[wi] << sh) | (kTwoOverPi[wi + 1] >> (64 - sh));
  }
  // q = m * w, little-endian 64-bit words: x 2/pi = q 2^-s.
  uint64_t q[4];
  unsigned __int128 t = static_cast<unsigned __int128>(m) * w[2];
  q[0] = static_cast<uint64_t>(t);
  t = static_cast<unsigned __int128>(m) * w[1] + static_cast<uint64_t>(t >> 64);
  q[1] = static_cast<uint64_t>(t);
  t = static_cast<unsigned __int128>(m) * w[0] + static_cast<uint64_t>(t >> 64);
  q[2] = static_cast<uint64_t>(t);
  q[3] = static_cast<uint64_t>(t >> 64);
  const int s = i0 + 191 - e;  // in [190, 225]
  auto bits_at = [&](int o) {  // (q >> o) mod 2^64
    const int wi = o >> 6, sh = o & 63;
    const uint64_t lo = q[wi] >> sh;
    const uint64_t hi = (sh == 0 || wi + 1 > 3) ? 0 : q[wi + 1] << (64 - sh);
    return lo | hi;
  };
  int64_t n = static_cast<int64_t>(bits_at(s) & 3);
  // The 128 fraction bits as a signed value in [-1/2, 1/2): round n to nearest.
  const int64_t fh = static_cast<int64_t>(bits_at(s - 64));
  const uint64_t fl = bits_at(s - 128);
  if (fh < 0) n += 1;
  // f 2^64 = fh + fl 2^-64 as four exact doubles of 32 bits each, summed into a double-double.
  const double parts[4] = {std::ldexp(static_cast<double>(fh >> 32), 32), static_cast<double>(fh & 0xffffffff),
                           std::ldexp(static_cast<double>(fl >> 32), -32),
                           std::ldexp(static_cast<double>(fl & 0xffffffff), -64)};
  double sh = parts[0], sl = 0;
  for (int k = 1; k < 4; ++k) {
    const double a = sh + parts[k], bb = a - sh;
    sl += (sh - (a - bb)) + (parts[k] - bb);
    sh = a;
  }
  const double a = sh + sl;
  sl = sl - (a - sh);
  sh = std::ldexp(a, -64);
  sl = std::ldexp(sl, -64);
  // r = f pi/2 as a double-double.
  constexpr double kPio2Hi = 0x1.921fb54442d18p+0, kPio2Lo = 0x1.1a62633145c07p-54;
  const double ph = sh * kPio2Hi;
  const double pe = std::fma(sh, kPio2Hi, -ph) + (sh * kPio2Lo + sl * kPio2Hi);
  rh = ph + pe;
  rl = pe - (rh - ph);
  if (bits >> 63) {
    rh = -rh;
    rl = -rl;
    n = -n;
  }
  return n;
}

}  // namespace hypatia::simd_tables
