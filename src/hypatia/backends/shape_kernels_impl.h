// Internal: the kernel files of the shape family and helpers they share.
#pragma once
#include <array>
#include <string>
#include <vector>

#include "hypatia/backends/registry.h"
#include "hypatia/core/ndarray.h"

namespace hypatia {

/// DimShuffle, Shape, Shape_i, MakeVector, Alloc, Reshape, Split (reference/views).
void register_shape_view_kernels();
/// Join, ARange, Eye, Tile, Repeat (reference; then the CPU ones).
void register_shape_copy_kernels();
/// Join, Tile, Repeat on the CPU backend.
void register_shape_cpu_kernels();

class ARange;
class Eye;
class Repeat;
class Tile;

namespace kernel_util {

/// The value of a 0-d integer array (any integer dtype); throws ValueError naming `op` otherwise.
int64_t read_int_scalar(const NDArray& a, const std::string& op, const char* role);
/// The values of an integer vector; throws ValueError naming `op` otherwise.
std::vector<int64_t> read_int_vector(const NDArray& a, const std::string& op, const char* role);
/// The shape of an Alloc node's output from its inputs (value, then one 0-d integer per dim),
/// checked (negative or oversized shapes, a value that does not broadcast, or broadcasts where its
/// type's `value_bc` says it may not): ValueError naming Alloc.
Shape alloc_shape(const KernelArgs& args, const std::vector<bool>& value_bc);
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

/// Copies one element converting its dtype.
void copy_element(std::byte* dst, DType dst_dt, const std::byte* src, DType src_dt);
/// Checks Join's inputs and returns the output shape (checked: the summed length and the size fit)
/// and its dtype (the promotion of the inputs'); errors name `op`.
Shape join_output_shape(const std::string& op, int axis, const KernelArgs& args, DType* dtype);
/// An ARange node's range from its inputs (checked: a zero step, a length int64 does not hold,
/// the size): n values, element i being start + i * step, in int64 arithmetic modulo 2^64 when
/// every input is an integer (`ints`: each value lies between start and stop, though i * step
/// alone may not fit), else in double.
struct ArangePlan {
  int64_t n = 0;
  bool ints = false;
  int64_t start_i = 0, step_i = 0;
  double start_d = 0, step_d = 0;
};
ArangePlan arange_plan(const ARange& op, const KernelArgs& args);
/// An Eye node's n, m and k from its inputs (checked: negative dimensions, the size).
struct EyeShape {
  int64_t n = 0, m = 0, k = 0;
};
EyeShape eye_shape(const Eye& op, const KernelArgs& args);
/// Runs ARange into args.out[0]; returns its shape.
Shape arange_run(const ARange& op, const KernelArgs& args);
/// Per-element repeat counts of a Repeat node's inputs (checked), and the output shape (its length
/// on the axis, the counts' sum, checked against overflow like the size).
std::vector<int64_t> repeat_counts(const Repeat& op, const KernelArgs& args, Shape* out_shape);
/// Tile's output shape for input x (checked: reps * length and the size fit); `off` receives the
/// number of leading axes the input lacks.
Shape tile_output_shape(const Tile& op, const NDArray& x, int* off);

}  // namespace kernel_util
}  // namespace hypatia
