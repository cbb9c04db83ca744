// Kernels of the convolution family (declarations shared by the registration file), and the
// geometry both backends read their arguments with.
#pragma once
#include "hypatia/backends/registry.h"
#include "hypatia/ops/conv.h"

namespace hypatia::conv_detail {

/// Reference kernels: direct loops accumulating in double, the test oracle.
void conv2d_reference(const Conv2d& op, const KernelArgs& args);
void conv2d_grad_inputs_reference(const Conv2dGradInputs& op, const KernelArgs& args);
void conv2d_grad_weights_reference(const Conv2dGradWeights& op, const KernelArgs& args);
/// CPU kernels: im2col / col2im and the GEMM provider (cpu_matmul), images split over the
/// thread pool; a 1x1 filter of stride 1 without padding reads the image as the column matrix.
void conv2d_cpu(const Conv2d& op, const KernelArgs& args);
void conv2d_grad_inputs_cpu(const Conv2dGradInputs& op, const KernelArgs& args);
void conv2d_grad_weights_cpu(const Conv2dGradWeights& op, const KernelArgs& args);

/// The 3-d convolutions: reference (direct loops in double) and CPU (a 2-d im2col per output
/// depth and filter depth tap, accumulated by GEMMs).
void conv3d_reference(const Conv3d& op, const KernelArgs& args);
void conv3d_grad_inputs_reference(const Conv3dGradInputs& op, const KernelArgs& args);
void conv3d_grad_weights_reference(const Conv3dGradWeights& op, const KernelArgs& args);
void conv3d_cpu(const Conv3d& op, const KernelArgs& args);
void conv3d_grad_inputs_cpu(const Conv3dGradInputs& op, const KernelArgs& args);
void conv3d_grad_weights_cpu(const Conv3dGradWeights& op, const KernelArgs& args);

/// An integer size argument (the rows / cols inputs of the gradient ops).
int64_t size_arg(const NDArray& a, const std::string& who, const char* what);

}  // namespace hypatia::conv_detail
