// Highway SIMD loops (dynamic dispatch) for the common float32/float64 elementwise ops.
#pragma once
#include <cstdint>

#include "hypatia/core/dtype.h"
#include "hypatia/ops/elemwise.h"

namespace hypatia {

/// Whether simd_unary/simd_binary vectorize op k on dtype dt (float32 or float64 only).
bool simd_supports(ScalarOpKind k, DType dt);

/// out[i] = k(in[i]) for n contiguous elements of dtype dt (a supported pair); `out` may equal `in`.
void simd_unary(ScalarOpKind k, DType dt, const void* in, void* out, int64_t n);

/// out[i] = k(a[i], b[i]) for n contiguous elements; an operand flagged scalar is one element
/// broadcast over all n. `out` may equal a non-scalar operand.
void simd_binary(ScalarOpKind k, DType dt, const void* a, bool a_scalar, const void* b, bool b_scalar, void* out,
                 int64_t n);

}  // namespace hypatia
