// MRG31k3p's step and the draw loop over a range of streams, shared by the reference and CPU
// kernels of MRGUniform (so they give the same bits): Theano 1.0's C code, in its order.
#pragma once
#include <cstdint>

#include "hypatia/ops/random.h"

namespace hypatia::mrg {

// ---- [shared with the CUDA backend: begin] The CUDA backend compiles the text from here to the
// end marker with NVRTC (backends/cuda/cuda_random_kernels.cpp), so its generator is this code.

/// Advances the state x (6 int32) one step and returns the combined integer in [1, M1]: Theano's
/// cpu_rng_mrg_uniform (int32 arithmetic whose shifts and sums stay in range by construction).
inline int32_t next(int32_t* x) {
  constexpr int32_t M1 = kMrgM1, M2 = kMrgM2, MASK12 = 511, MASK13 = 16777215, MASK2 = 65535, MULT2 = 21069;
  int32_t x11 = x[0], x12 = x[1], x13 = x[2], x21 = x[3], x22 = x[4], x23 = x[5];
  // Theano's C code sums in int32 and relies on wrap-around ("must also check overflow"): a sum
  // past 2^31 - 1 reads negative and the subtraction of the modulus brings it back. Here the sums
  // and subtractions wrap explicitly (unsigned), with the same results.
  auto u = [](int32_t v) { return static_cast<uint32_t>(v); };
  auto reduce = [&](uint32_t v, int32_t m) {
    const auto y = static_cast<int32_t>(v);
    return y < 0 || y >= m ? static_cast<int32_t>(v - u(m)) : y;
  };
  int32_t y1 = reduce((u(x12 & MASK12) << 22) + u(x12 >> 9) + (u(x13 & MASK13) << 7) + u(x13 >> 24), M1);
  y1 = reduce(u(y1) + u(x13), M1);
  x13 = x12;
  x12 = x11;
  x11 = y1;
  y1 = reduce((u(x21 & MASK2) << 15) + u(MULT2) * u(x21 >> 16), M2);
  int32_t y2 = reduce((u(x23 & MASK2) << 15) + u(MULT2) * u(x23 >> 16), M2);
  y2 = reduce(u(y2) + u(x23), M2);
  y2 = reduce(u(y2) + u(y1), M2);
  x23 = x22;
  x22 = x21;
  x21 = y2;
  x[0] = x11;
  x[1] = x12;
  x[2] = x13;
  x[3] = x21;
  x[4] = x22;
  x[5] = x23;
  return x11 <= x21 ? x11 - x21 + M1 : x11 - x21;
}

/// The sample of dtype T for the combined integer k (Theano's NORM per dtype).
template <class T>
inline T to_unit(int32_t k) {
  if constexpr (sizeof(T) == 4)
    return static_cast<float>(k) * 4.6566126e-10f;  // float32(k * NORM) < 1 for every k <= M1
  else
    return static_cast<double>(k) * 4.656612873077392578125e-10;  // 2^-31
}

// ---- [shared with the CUDA backend: end]

/// Draws elements i in [0, n) with i % n_streams in [s0, s1) into out (C order), each from stream
/// i % n_streams of `states` ((n_streams, 6), C-contiguous), which advance.
template <class T>
void generate(int32_t* states, int64_t n_streams, int64_t s0, int64_t s1, T* out, int64_t n) {
  for (int64_t base = 0; base < n; base += n_streams) {
    const int64_t end = std::min(s1, n - base);
    for (int64_t s = s0; s < end; ++s) out[base + s] = to_unit<T>(next(states + s * 6));
  }
}

}  // namespace hypatia::mrg
