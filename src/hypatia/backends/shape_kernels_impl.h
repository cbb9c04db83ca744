// Internal: the kernel files of the shape family and helpers they share.
#pragma once
#include <string>

#include "hypatia/backends/registry.h"
#include "hypatia/core/ndarray.h"

namespace hypatia {

/// DimShuffle, Shape, Shape_i, MakeVector, Alloc, Reshape, Split (reference/views).
void register_shape_view_kernels();
/// Join, ARange, Eye, Tile, Repeat (reference and CPU).
void register_shape_copy_kernels();

namespace kernel_util {

/// The value of a 0-d integer array (any integer dtype); throws ValueError naming `op` otherwise.
int64_t read_int_scalar(const NDArray& a, const std::string& op, const char* role);
/// The values of an integer vector; throws ValueError naming `op` otherwise.
std::vector<int64_t> read_int_vector(const NDArray& a, const std::string& op, const char* role);
/// Calls f(idx) for every multi-index of `shape` in C order (nothing for a zero-size shape).
template <class F>
void for_each_index(const Shape& shape, F&& f) {
  const int nd = shape.size();
  if (shape.prod() == 0) return;
  std::array<int64_t, kMaxNdim> idx{};
  const int64_t total = shape.prod();
  for (int64_t it = 0; it < total; ++it) {
    f(static_cast<const int64_t*>(idx.data()));
    for (int d = nd - 1; d >= 0; --d) {
      if (++idx[d] < shape[d]) break;
      idx[d] = 0;
    }
  }
}
/// Byte offset of a multi-index.
inline int64_t offset_of(const int64_t* idx, const Strides& strides) {
  int64_t o = 0;
  for (int d = 0; d < strides.size(); ++d) o += idx[d] * strides[d];
  return o;
}

}  // namespace kernel_util
}  // namespace hypatia
