// The one matrix-product primitive every blas kernel is built on, per backend.
#pragma once
#include "hypatia/core/ndarray.h"

namespace hypatia {

/// C = alpha * A·B + beta * C for 2-d arrays A (M, K), B (K, N), C (M, N) of one dtype, any
/// strides (C must not overlap A or B). C is not read when beta == 0; K == 0 gives beta * C.
using MatmulFn = void (*)(const NDArray& A, const NDArray& B, const NDArray& C, double alpha, double beta);

/// Naive triple loop accumulating in double (floats) or wrapping 64-bit integers: the test oracle.
void reference_matmul(const NDArray& A, const NDArray& B, const NDArray& C, double alpha, double beta);
/// OpenBLAS for float32/float64 (dot, gemv, ger or gemm by shape, transposes folded into the call
/// where the layout allows); the reference loop for other dtypes.
void cpu_matmul(const NDArray& A, const NDArray& B, const NDArray& C, double alpha, double beta);
/// Z[b] = X[b]·Y[b] for 3-d float32/float64 X (B, M, K), Y (B, K, N) and Z (B, M, N) of small
/// products: one loop of single-threaded BLAS calls over the batch (on the thread pool), where a
/// cpu_matmul call per matrix cost ten times the product of 8 x 8 matrices. False (nothing done)
/// for other dtypes, large products or layouts BLAS cannot take.
bool cpu_batched_matmul(const NDArray& X, const NDArray& Y, const NDArray& Z);

}  // namespace hypatia
