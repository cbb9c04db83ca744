// The reference matrix product: a naive triple loop over any strides (the test oracle).
#include <cstdint>
#include <type_traits>

#include "hypatia/backends/cpu/blas_matmul.h"

namespace hypatia {
namespace {

template <class T>
T& elem(const NDArray& a, int64_t i, int64_t j) {
  return *reinterpret_cast<T*>(a.raw() + i * a.strides()[0] + j * a.strides()[1]);
}

// Integers accumulate in wrapping 64-bit arithmetic (numpy's result for the output dtype).
template <class T>
uint64_t to_u64(T v) {
  if constexpr (std::is_signed_v<T>)
    return static_cast<uint64_t>(static_cast<int64_t>(v));
  else
    return static_cast<uint64_t>(v);
}

template <class T>
void matmul_typed(const NDArray& A, const NDArray& B, const NDArray& C, double alpha, double beta) {
  const int64_t M = C.shape(0), N = C.shape(1), K = A.shape(1);
  for (int64_t i = 0; i < M; ++i) {
    for (int64_t j = 0; j < N; ++j) {
      T& c = elem<T>(C, i, j);
      if constexpr (std::is_same_v<T, bool>) {
        bool acc = false;
        for (int64_t k = 0; k < K; ++k) acc = acc || (elem<T>(A, i, k) && elem<T>(B, k, j));
        c = (alpha != 0 && acc) || (beta != 0 && c);
      } else if constexpr (std::is_floating_point_v<T>) {
        double acc = 0;
        for (int64_t k = 0; k < K; ++k)
          acc += static_cast<double>(elem<T>(A, i, k)) * static_cast<double>(elem<T>(B, k, j));
        double r = alpha * acc;
        if (beta != 0) r += beta * static_cast<double>(c);
        c = static_cast<T>(r);
      } else {
        uint64_t acc = 0;
        for (int64_t k = 0; k < K; ++k) acc += to_u64(elem<T>(A, i, k)) * to_u64(elem<T>(B, k, j));
        uint64_t r = static_cast<uint64_t>(static_cast<int64_t>(alpha)) * acc;
        if (beta != 0) r += static_cast<uint64_t>(static_cast<int64_t>(beta)) * to_u64(c);
        c = static_cast<T>(r);
      }
    }
  }
}

}  // namespace

void reference_matmul(const NDArray& A, const NDArray& B, const NDArray& C, double alpha, double beta) {
  HYP_ASSERT(A.ndim() == 2 && B.ndim() == 2 && C.ndim() == 2, "matmul operands must be 2-d");
  HYP_ASSERT(A.shape(0) == C.shape(0) && B.shape(1) == C.shape(1) && A.shape(1) == B.shape(0), "matmul shapes ",
             A.shape().str(), " ", B.shape().str(), " ", C.shape().str());
  HYP_ASSERT(A.dtype() == C.dtype() && B.dtype() == C.dtype(), "matmul dtypes differ");
  dispatch_dtype(C.dtype(), [&](auto t) { matmul_typed<decltype(t)>(A, B, C, alpha, beta); });
}

}  // namespace hypatia
