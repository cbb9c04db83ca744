// What the CUDA backend's generated kernels expect of CUDA, on the host (included by the generated
// cuda_host_kernels.cpp only: tests/cpp/cuda_host/write_kernels.cpp): the thread coordinates of a
// one-thread grid, __device__ (empty here), and the math builtins the NVRTC shim
// (backends/cuda/nvrtc_std.cuh) forwards to.
#pragma once
#include <cmath>
#include <cstring>

struct HostDim3 {
  unsigned x;
};
inline HostDim3 blockIdx{0}, threadIdx{0}, gridDim{1}, blockDim{1};
using std::isinf;
using std::isnan;

// What a block-per-output kernel expects (one host thread: its block of one).
#define __shared__
inline void __syncthreads() {}

// The atomics the indexing kernels use, for one host thread.
inline unsigned long long atomicCAS(unsigned long long* p, unsigned long long expected, unsigned long long v) {
  const unsigned long long old = *p;
  if (old == expected) *p = v;
  return old;
}
template <class T>
T atomicAdd(T* p, T v) {
  const T old = *p;
  *p = old + v;
  return old;
}

// A float's bits (CUDA's intrinsic).
inline unsigned __float_as_uint(float f) {
  unsigned u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

#define __device__
