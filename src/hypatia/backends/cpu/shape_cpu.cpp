// CPU kernels of Join, Tile and Repeat: block copies through NDArray::assign (memcpy on
// contiguous runs) instead of per-element loops.
#include "hypatia/backends/shape_kernels_impl.h"
#include "hypatia/ops/shape.h"

namespace hypatia {
namespace {
using namespace kernel_util;

void join_cpu(const Join& op, const KernelArgs& args) {
  DType dt;
  Shape shape = join_output_shape(op.name(), op.axis, args, &dt);
  NDArray& out = prepare_output(*args.out[0], shape, dt);
  int64_t off = 0;
  for (NDArray* x : args.in) {
    const int64_t n = x->shape(op.axis);
    if (n > 0) out.slice(op.axis, off, off + n, 1).assign(*x);
    off += n;
  }
}

void tile_cpu(const Tile& op, const KernelArgs& args) {
  const NDArray& x = *args.in[0];
  const int nd = static_cast<int>(op.reps.size());
  int off = 0;
  const Shape shape = tile_output_shape(op, x, &off);
  Shape xs;
  for (int i = 0; i < nd; ++i) xs.push_back(i < off ? 1 : x.shape(i - off));
  NDArray& out = prepare_output(*args.out[0], shape, x.dtype());
  if (out.size() == 0) return;
  const NDArray src = x.reshape(xs);
  Shape reps(op.reps.begin(), op.reps.end());
  for_each_index(reps, [&](const int64_t* t) {
    NDArray dst = out;
    for (int d = 0; d < nd; ++d) dst = dst.slice(d, t[d] * xs[d], (t[d] + 1) * xs[d], 1);
    dst.assign(src);
  });
}

void repeat_cpu(const Repeat& op, const KernelArgs& args) {
  const NDArray& x = *args.in[0];
  Shape shape;
  std::vector<int64_t> counts = repeat_counts(op, args, &shape);
  NDArray& out = prepare_output(*args.out[0], shape, x.dtype());
  if (out.size() == 0) return;
  int64_t o = 0;
  for (size_t j = 0; j < counts.size(); ++j) {
    if (counts[j] == 0) continue;
    NDArray dst = out.slice(op.axis, o, o + counts[j], 1);
    const int64_t jj = static_cast<int64_t>(j);
    dst.assign(x.slice(op.axis, jj, jj + 1, 1).broadcast_to(dst.shape()));
    o += counts[j];
  }
}

}  // namespace

void register_shape_cpu_kernels() {
  register_simple_kernel<Join>(kCpuBackend, join_cpu);
  register_simple_kernel<Tile>(kCpuBackend, tile_cpu);
  register_simple_kernel<Repeat>(kCpuBackend, repeat_cpu);
}

}  // namespace hypatia
