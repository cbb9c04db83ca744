// oneDNN's convolution primitives behind the CPU convolution kernels (conv_cpu.cpp chooses).
#pragma once
#include "hypatia/core/ndarray.h"
#include "hypatia/ops/conv.h"

namespace hypatia::conv_detail {

enum class OnednnConv { Forward, BackwardData };

/// Forward: out (N, O, Ho, Wo) = conv2d(in = image, kern). BackwardData: out (N, C, H, W) = the
/// image gradient from in = the output gradient and kern. float32 only; `out` is C-contiguous
/// and of the right shape. Returns false (out untouched) where oneDNN has no implementation
/// (another dtype, parameters it refuses): the caller runs im2col.
bool onednn_conv2d(OnednnConv kind, const Conv2dParams& p, const Conv2dShape& s, const NDArray& in, const NDArray& kern,
                   NDArray& out);

}  // namespace hypatia::conv_detail
