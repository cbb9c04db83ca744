// Highway SIMD loops (dynamic dispatch) for the common float32/float64 elementwise ops.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "hypatia/core/dtype.h"
#include "hypatia/ops/elemwise.h"

namespace hypatia {

/// Whether simd_unary/simd_binary vectorize op k on dtype dt (float32 or float64 only).
bool simd_supports(ScalarOpKind k, DType dt);

/// out[i] = k(in[i]) for n contiguous elements of dtype dt (a supported pair); `out` may equal `in`.
/// With `affine` (6 values: pre then post), out[i] = post(k(pre(in[i]))) where an affine
/// (c0, c1, c2) maps v to ((v + c0) * c1) + c2, evaluated in that order in dtype dt.
void simd_unary(ScalarOpKind k, DType dt, const void* in, void* out, int64_t n, const double* affine = nullptr);

/// out[i] = k(a[i], b[i]) for n contiguous elements; an operand flagged scalar is one element
/// broadcast over all n. `out` may equal a non-scalar operand. With `post` (3 values), the
/// result goes through that affine map.
void simd_binary(ScalarOpKind k, DType dt, const void* a, bool a_scalar, const void* b, bool b_scalar, void* out,
                 int64_t n, const double* post = nullptr);

/// The Highway targets this file was compiled for that the CPU supports (tests run the loops on each).
std::vector<int64_t> simd_targets();

/// Makes the dispatch pick `target` (one of simd_targets()); 0 restores the best one. Tests only:
/// not thread-safe with kernels running.
void simd_force_target(int64_t target);

/// The target the dispatch picks now.
int64_t simd_active_target();

/// The name of a Highway target ("AVX3", "AVX2", ...).
std::string simd_target_name(int64_t target);

}  // namespace hypatia
