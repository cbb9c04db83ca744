// oneDNN's convolution primitives behind the CPU convolution kernels (conv_cpu.cpp chooses).
#pragma once
#include <array>
#include <cstdint>

#include "hypatia/core/ndarray.h"
#include "hypatia/ops/conv.h"

namespace hypatia::conv_detail {

enum class OnednnConv { Forward, BackwardData };

/// What identifies a convolution call's shape: the kind, the images per call `n`, every size and
/// parameter (the key of the primitive cache and of conv=auto's measured choice).
using ConvKey = std::array<int64_t, 17>;
ConvKey conv_key(OnednnConv kind, const Conv2dParams& p, const Conv2dShape& s, int64_t n);

/// Forward: out (N, O, Ho, Wo) = conv2d(in = image, kern). BackwardData: out (N, C, H, W) = the
/// image gradient from in = the output gradient and kern. float32 only; `out` is C-contiguous
/// and of the right shape. Returns false (out untouched) where oneDNN has no implementation
/// (another dtype, parameters it refuses): the caller runs im2col.
bool onednn_conv2d(OnednnConv kind, const Conv2dParams& p, const Conv2dShape& s, const NDArray& in, const NDArray& kern,
                   NDArray& out);

}  // namespace hypatia::conv_detail
