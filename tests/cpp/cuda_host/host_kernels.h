// The host entry points of the CUDA backend's generated kernels, compiled for the host
// (tests/cpp/cuda_host/write_kernels.cpp writes cuda_host_kernels.cpp at build time: each kernel in
// a namespace of its own, run by one host thread playing the whole grid, and these tables of them).
// The test_cuda_on_host*.cpp tests run them against the CPU kernels.
#pragma once
#include <span>

#include "hypatia/core/dtype.h"

struct HostPoolKernel {
  hypatia::DType dt;
  const char* mode;
  int which;  // cuda::PoolKernel: 0 forward, 1 max gradient, 2 average gradient, 3 max second-order
  void (*run)(const void* args);
};

struct HostSortKernels {
  hypatia::DType dt;
  void (*init)(const void* args);
  void (*pass)(const void* args);
  void (*final)(const void* args);
};

struct HostIndexKernel {
  hypatia::DType dt;
  const char* index_dtypes;  // "int64,int32"
  bool scatter;
  void (*run)(const void* args);
};

struct HostArangeKernel {
  hypatia::DType dt;
  void (*run)(const void* args);
};

struct HostArgReduceKernel {
  hypatia::DType dt;
  bool is_max;
  void (*run)(const void* args);
  bool (*before)(double v, long long i, double b, long long j);  // the merge order
};

struct HostXentKernel {
  hypatia::DType dt, label_dt;
  bool grad;
  void (*run)(const void* args);
};

struct HostConvGemmKernels {
  hypatia::DType dt;
  void (*im2col)(const void* args);
  void (*col2im)(const void* args);
  void (*swap01)(const void* args);
};

struct HostLinalgKernels {
  hypatia::DType dt;
  void (*info)(const void* args);
  void (*tri)(const void* args);
  void (*sym)(const void* args);
  void (*diag)(const void* args);
  void (*det)(const void* args);
  void (*r)(const void* args);
  void (*scale)(const void* args);
  void (*rank)(const void* args);
  void (*sumsq)(const void* args);
  void (*to_f64)(const void* args);
  void (*from_f64)(const void* args);
  void (*colsum)(const void* args);
  void (*max)(const void* args);
  void (*axpy)(const void* args);
  void (*adddiag)(const void* args);
  void (*fill)(const void* args);
  void (*complex)(const void* args);
  void (*finite)(const void* args);
};

struct HostCumKernels {
  hypatia::DType in;
  void (*chunks)(const void* args);
  void (*offsets)(const void* args);
};

struct HostFromUniformKernel {
  hypatia::DType pvals;
  int which;  // cuda::FromUniform
  void (*run)(const void* args);
};

/// An elementwise module of cuda_host/elem_cases.h (by its label): its contiguous and strided kernels.
struct HostElemKernels {
  const char* label;
  void (*contiguous)(const void* args);
  void (*strided)(const void* args);
};

extern const std::span<const HostPoolKernel> kHostPoolKernels;
extern const std::span<const HostElemKernels> kHostElemKernels;
extern const std::span<const HostSortKernels> kHostSortKernels;
extern const std::span<const HostIndexKernel> kHostIndexKernels;
extern const std::span<const HostArangeKernel> kHostArangeKernels, kHostEyeKernels, kHostCheckLabelsKernels;
extern const std::span<const HostArgReduceKernel> kHostArgReduceKernels;
extern const std::span<const HostXentKernel> kHostXentKernels;
/// CrossentropySoftmax1HotWithBias's kernel (grad false) and its Dx's (grad true).
extern const std::span<const HostXentKernel> kHostXentSoftmaxKernels;
extern const std::span<const HostConvGemmKernels> kHostConvGemmKernels;
extern const std::span<const HostCumKernels> kHostCumKernels;
extern const std::span<const HostLinalgKernels> kHostLinalgKernels;
extern const std::span<const HostFromUniformKernel> kHostFromUniformKernels;
/// Repeat's kernels by element size in bytes (index size - 1; 1, 2, 4 and 8 are there).
extern void (*const kHostRepeatKernels[8])(const void* args);
extern void (*const kHostRepeatByVectorKernels[8])(const void* args);
/// The MRG generator's kernel for float32 and float64 draws, and the upload of at most
/// kMaxRecordedHostBytes.
namespace mrg32 {
void run(const void* args);
}
namespace mrg64 {
void run(const void* args);
}
namespace upload {
void run(const void* args);
}
