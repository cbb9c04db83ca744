// Conv2dParams as the plain tuple the bindings pass around (and pickle stores):
// (border, pad_h, pad_w, pad_h_end, pad_w_end, stride_h, stride_w, dil_h, dil_w, groups, flip).
#pragma once
#include <string>
#include <tuple>

#include "hypatia/ops/conv.h"

namespace hypatia::python {

using ConvTuple =
    std::tuple<std::string, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, bool>;

inline Conv2dParams conv_params(const ConvTuple& t, const char* who) {
  Conv2dParams p;
  std::tie(p.border, p.pad_h, p.pad_w, p.pad_h_end, p.pad_w_end, p.stride_h, p.stride_w, p.dil_h, p.dil_w, p.groups,
           p.flip) = t;
  p.check(who);
  return p;
}

inline ConvTuple conv_tuple(const Conv2dParams& p) {
  return {p.border, p.pad_h, p.pad_w, p.end_h(), p.end_w(), p.stride_h, p.stride_w, p.dil_h, p.dil_w, p.groups, p.flip};
}

// Conv3dParams: (border, pad_d, pad_h, pad_w, stride_d, stride_h, stride_w, dil_d, dil_h, dil_w,
// groups, flip).
using Conv3dTuple = std::tuple<std::string, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t,
                               int64_t, int64_t, bool>;

inline Conv3dParams conv3d_params(const Conv3dTuple& t, const char* who) {
  Conv3dParams p;
  std::tie(p.hw.border, p.pad_d, p.hw.pad_h, p.hw.pad_w, p.stride_d, p.hw.stride_h, p.hw.stride_w, p.dil_d, p.hw.dil_h,
           p.hw.dil_w, p.hw.groups, p.hw.flip) = t;
  p.check(who);
  return p;
}

inline Conv3dTuple conv3d_tuple(const Conv3dParams& p) {
  return {p.hw.border,   p.pad_d, p.hw.pad_h, p.hw.pad_w, p.stride_d,  p.hw.stride_h,
          p.hw.stride_w, p.dil_d, p.hw.dil_h, p.hw.dil_w, p.hw.groups, p.hw.flip};
}

}  // namespace hypatia::python
