// float16 <-> float32 conversion loops for the CPU backend's casts: F16C instructions on x86
// targets that have them (Highway's AVX2 and AVX-512 targets), the scalar conversions of
// core/half.h elsewhere (Highway's emulation for the older targets truncates instead of rounding,
// so it is not used). Both give the same bits: round to nearest even, NaN kept NaN, overflow to
// infinity.
#pragma once
#include <cstddef>

#include "hypatia/core/half.h"

namespace hypatia::cpu {

/// out[i] = in[i] as float (exact), for contiguous arrays.
void widen_f16(const half* in, float* out, size_t n);
/// out[i] = in[i] rounded to float16, for contiguous arrays. With `affine` ({c0, c1, c2}), the
/// value rounded is ((in[i] + c0) * c1) + c2, each operation rounded to float32 (the fused
/// programs' folded scalar steps).
void narrow_f16(const float* in, half* out, size_t n, const float* affine = nullptr);
/// out[i] = in[i] (or its affine map, as above) rounded to float16 and widened back: the float16
/// value in float32, for contiguous arrays (in == out allowed).
void round_f16(const float* in, float* out, size_t n, const float* affine = nullptr);

}  // namespace hypatia::cpu
