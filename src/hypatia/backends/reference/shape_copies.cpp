// Reference kernels of Join, ARange, Eye, Tile and Repeat: naive element loops (the test oracle).
#include <cmath>
#include <cstring>

#include "hypatia/backends/shape_kernels_impl.h"
#include "hypatia/ops/shape.h"

namespace hypatia {

namespace kernel_util {

void copy_element(std::byte* dst, DType dst_dt, const std::byte* src, DType src_dt) {
  dispatch_dtype(dst_dt, [&](auto td) {
    using D = decltype(td);
    dispatch_dtype(src_dt, [&](auto ts) {
      using S = decltype(ts);
      *reinterpret_cast<D*>(dst) = static_cast<D>(*reinterpret_cast<const S*>(src));
    });
  });
}

Shape join_output_shape(const std::string& op, int axis, const KernelArgs& args) {
  const NDArray& first = *args.in[0];
  if (first.ndim() <= axis) fail<ValueError>(op, ": axis ", axis, " is out of range for input 0 ", first.describe());
  Shape shape = first.shape();
  shape[axis] = 0;
  for (size_t k = 0; k < args.in.size(); ++k) {
    const NDArray& x = *args.in[k];
    if (x.ndim() != first.ndim())
      fail<ValueError>(op, ": input ", k, " has ", x.ndim(), " dimensions but input 0 has ", first.ndim());
    for (int d = 0; d < x.ndim(); ++d)
      if (d != axis && x.shape(d) != first.shape(d))
        fail<ValueError>(op, ": all input dimensions except the concatenation axis must match: input ", k,
                         " has shape ", x.shape().str(), " but input 0 has shape ", first.shape().str());
    shape[axis] += x.shape(axis);
  }
  return shape;
}

Shape arange_run(const ARange& op, const KernelArgs& args) {
  const NDArray &a = *args.in[0], &b = *args.in[1], &c = *args.in[2];
  const bool ints = is_integer(a.dtype()) && is_integer(b.dtype()) && is_integer(c.dtype());
  int64_t n = 0;
  if (ints) {
    const int64_t start = read_int_scalar(a, op.name(), "start"), stop = read_int_scalar(b, op.name(), "stop"),
                  step = read_int_scalar(c, op.name(), "step");
    if (step == 0) fail<ValueError>(op.name(), ": step must not be zero");
    const int64_t span = stop - start;
    n = step > 0 ? (span > 0 ? (span + step - 1) / step : 0) : (span < 0 ? (-span + (-step) - 1) / (-step) : 0);
    NDArray& out = prepare_output(*args.out[0], Shape{n}, op.dtype);
    dispatch_dtype(op.dtype, [&](auto t) {
      using T = decltype(t);
      for (int64_t i = 0; i < n; ++i) out.data<T>()[i] = static_cast<T>(start + i * step);
    });
    return out.shape();
  }
  const double start = a.get_flat(0), stop = b.get_flat(0), step = c.get_flat(0);
  if (step == 0) fail<ValueError>(op.name(), ": step must not be zero");
  const double len = std::ceil((stop - start) / step);
  if (!std::isfinite(len)) fail<ValueError>(op.name(), ": the length of the range is not finite");
  n = len > 0 ? static_cast<int64_t>(len) : 0;
  NDArray& out = prepare_output(*args.out[0], Shape{n}, op.dtype);
  dispatch_dtype(op.dtype, [&](auto t) {
    using T = decltype(t);
    for (int64_t i = 0; i < n; ++i) out.data<T>()[i] = static_cast<T>(start + static_cast<double>(i) * step);
  });
  return out.shape();
}

std::vector<int64_t> repeat_counts(const Repeat& op, const KernelArgs& args) {
  const NDArray &x = *args.in[0], &r = *args.in[1];
  if (x.ndim() <= op.axis) fail<ValueError>(op.name(), ": axis ", op.axis, " is out of range for ", x.describe());
  const int64_t n = x.shape(op.axis);
  std::vector<int64_t> counts;
  if (r.ndim() == 0) {
    counts.assign(n, read_int_scalar(r, op.name(), "repeats"));
  } else {
    counts = read_int_vector(r, op.name(), "repeats");
    if (static_cast<int64_t>(counts.size()) != n)
      fail<ValueError>(op.name(), ": repeats has ", counts.size(), " entries but axis ", op.axis,
                       " of the input has length ", n, " (", x.describe(), ")");
  }
  for (int64_t c : counts)
    if (c < 0) fail<ValueError>(op.name(), ": repeats must be non-negative, got ", c);
  return counts;
}

}  // namespace kernel_util

namespace {
using namespace kernel_util;

void join_ref(const Join& op, const KernelArgs& args) {
  Shape shape = join_output_shape(op.name(), op.axis, args);
  DType dt = args.in[0]->dtype();
  for (NDArray* x : args.in) dt = promote_types(dt, x->dtype());
  NDArray& out = prepare_output(*args.out[0], shape, dt);
  int64_t off = 0;
  for (NDArray* xp : args.in) {
    const NDArray& x = *xp;
    for_each_index(x.shape(), [&](const int64_t* idx) {
      std::array<int64_t, kMaxNdim> o{};
      std::copy(idx, idx + x.ndim(), o.begin());
      o[op.axis] += off;
      copy_element(out.raw() + offset_of(o.data(), out.strides()), dt, x.raw() + offset_of(idx, x.strides()),
                   x.dtype());
    });
    off += x.shape(op.axis);
  }
}

void arange_kernel(const ARange& op, const KernelArgs& args) { arange_run(op, args); }

void eye_kernel(const Eye& op, const KernelArgs& args) {
  const int64_t n = read_int_scalar(*args.in[0], op.name(), "n"), m = read_int_scalar(*args.in[1], op.name(), "m"),
                k = read_int_scalar(*args.in[2], op.name(), "k");
  if (n < 0 || m < 0) fail<ValueError>(op.name(), ": negative dimensions are not allowed (n=", n, ", m=", m, ")");
  NDArray& out = prepare_output(*args.out[0], Shape{n, m}, op.dtype);
  out.fill(0);
  dispatch_dtype(op.dtype, [&](auto t) {
    using T = decltype(t);
    for (int64_t i = 0; i < n; ++i)
      if (i + k >= 0 && i + k < m) out.data<T>()[i * m + i + k] = static_cast<T>(1);
  });
}

Shape tile_shape(const Tile& op, const NDArray& x, int* off) {
  const int nd = static_cast<int>(op.reps.size());
  if (x.ndim() > nd) fail<ValueError>(op.name(), ": the input ", x.describe(), " has more dimensions than reps");
  *off = nd - x.ndim();
  Shape shape;
  for (int i = 0; i < nd; ++i) shape.push_back(op.reps[i] * (i < *off ? 1 : x.shape(i - *off)));
  return shape;
}

void tile_ref(const Tile& op, const KernelArgs& args) {
  const NDArray& x = *args.in[0];
  int off = 0;
  Shape shape = tile_shape(op, x, &off);
  NDArray& out = prepare_output(*args.out[0], shape, x.dtype());
  const size_t isz = x.itemsize();
  for_each_index(shape, [&](const int64_t* idx) {
    std::array<int64_t, kMaxNdim> s{};
    for (int d = 0; d < x.ndim(); ++d) s[d] = idx[d + off] % x.shape(d);
    std::memcpy(out.raw() + offset_of(idx, out.strides()), x.raw() + offset_of(s.data(), x.strides()), isz);
  });
}

void repeat_ref(const Repeat& op, const KernelArgs& args) {
  const NDArray& x = *args.in[0];
  std::vector<int64_t> counts = repeat_counts(op, args);
  std::vector<int64_t> src;
  for (size_t j = 0; j < counts.size(); ++j)
    for (int64_t c = 0; c < counts[j]; ++c) src.push_back(static_cast<int64_t>(j));
  Shape shape = x.shape();
  shape[op.axis] = static_cast<int64_t>(src.size());
  NDArray& out = prepare_output(*args.out[0], shape, x.dtype());
  const size_t isz = x.itemsize();
  for_each_index(shape, [&](const int64_t* idx) {
    std::array<int64_t, kMaxNdim> s{};
    std::copy(idx, idx + x.ndim(), s.begin());
    s[op.axis] = src[idx[op.axis]];
    std::memcpy(out.raw() + offset_of(idx, out.strides()), x.raw() + offset_of(s.data(), x.strides()), isz);
  });
}

}  // namespace

void register_shape_copy_kernels() {
  register_simple_kernel<Join>(Backend::Reference, join_ref);
  register_simple_kernel<ARange>(Backend::Reference, arange_kernel);
  register_simple_kernel<Eye>(Backend::Reference, eye_kernel);
  register_simple_kernel<Tile>(Backend::Reference, tile_ref);
  register_simple_kernel<Repeat>(Backend::Reference, repeat_ref);
  register_shape_cpu_kernels();
}

}  // namespace hypatia
