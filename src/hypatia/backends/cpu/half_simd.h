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
/// out[i] = in[i] rounded to float16, for contiguous arrays.
void narrow_f16(const float* in, half* out, size_t n);

}  // namespace hypatia::cpu
