// Reference kernels of Join, ARange, Eye, Tile and Repeat: naive element loops (the test oracle).
#include <cmath>
#include <cstring>
#include <limits>

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

Shape join_output_shape(const std::string& op, int axis, const KernelArgs& args, DType* dtype) {
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
    // Views (broadcast ones have no memory behind them) can be long enough for the sum to wrap.
    auto len = checked_add(shape[axis], x.shape(axis));
    if (!len)
      fail<ValueError>(op, ": the joined length along axis ", axis, " does not fit in int64 (input ", k, " has shape ",
                       x.shape().str(), ")");
    shape[axis] = *len;
  }
  DType dt = first.dtype();
  for (NDArray* x : args.in) dt = promote_types(dt, x->dtype());
  check_shape_size(op, shape, dt);
  *dtype = dt;
  return shape;
}

ArangePlan arange_plan(const ARange& op, const KernelArgs& args) {
  const NDArray &a = *args.in[0], &b = *args.in[1], &c = *args.in[2];
  ArangePlan p;
  p.ints = is_integer(a.dtype()) && is_integer(b.dtype()) && is_integer(c.dtype());
  if (p.ints) {
    const int64_t start = read_int_scalar(a, op.name(), "start"), stop = read_int_scalar(b, op.name(), "stop"),
                  step = read_int_scalar(c, op.name(), "step");
    if (step == 0) fail<ValueError>(op.name(), ": step must not be zero");
    // In 128 bits: stop - start and the length (up to 2**64 - 1) overflow int64 at the extremes.
    const __int128 span = static_cast<__int128>(stop) - start, s = step;
    const __int128 len = s > 0 ? (span > 0 ? (span - 1) / s + 1 : 0) : (span < 0 ? (-span - 1) / -s + 1 : 0);
    if (len > std::numeric_limits<int64_t>::max())
      fail<ValueError>(op.name(), ": the range from ", start, " to ", stop, " by ", step,
                       " has more elements than int64 holds");
    p.n = static_cast<int64_t>(len);
    p.start_i = start;
    p.step_i = step;
  } else {
    const double start = a.get_flat(0), stop = b.get_flat(0), step = c.get_flat(0);
    if (step == 0) fail<ValueError>(op.name(), ": step must not be zero");
    const double len = std::ceil((stop - start) / step);
    if (!std::isfinite(len)) fail<ValueError>(op.name(), ": the length of the range is not finite");
    // 2**63 and beyond do not convert to int64.
    if (len >= 9223372036854775808.0)
      fail<ValueError>(op.name(), ": the range from ", start, " to ", stop, " by ", step, " has ", len,
                       " elements, more than int64 holds");
    p.n = len > 0 ? static_cast<int64_t>(len) : 0;
    p.start_d = start;
    p.step_d = step;
  }
  check_shape_size(op.name(), Shape{p.n}, op.dtype);
  return p;
}

Shape arange_run(const ARange& op, const KernelArgs& args) {
  const ArangePlan p = arange_plan(op, args);
  NDArray& out = prepare_output(*args.out[0], Shape{p.n}, op.dtype);
  dispatch_dtype(op.dtype, [&](auto t) {
    using T = decltype(t);
    // Modular arithmetic in uint64 gives the exact value where i * step alone would overflow.
    if (p.ints)
      for (int64_t i = 0; i < p.n; ++i)
        out.data<T>()[i] = static_cast<T>(static_cast<int64_t>(
            static_cast<uint64_t>(p.start_i) + static_cast<uint64_t>(i) * static_cast<uint64_t>(p.step_i)));
    else
      for (int64_t i = 0; i < p.n; ++i)
        out.data<T>()[i] = static_cast<T>(p.start_d + static_cast<double>(i) * p.step_d);
  });
  return out.shape();
}

std::vector<int64_t> repeat_counts(const Repeat& op, const KernelArgs& args, Shape* out_shape) {
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
  int64_t total = 0;
  for (int64_t c : counts) {
    if (c < 0) fail<ValueError>(op.name(), ": repeats must be non-negative, got ", c);
    auto t = checked_add(total, c);
    if (!t)
      fail<ValueError>(op.name(), ": the repeated length along axis ", op.axis, " does not fit in int64 (input ",
                       x.describe(), ")");
    total = *t;
  }
  Shape shape = x.shape();
  shape[op.axis] = total;
  check_shape_size(op.name(), shape, x.dtype());
  *out_shape = shape;
  return counts;
}

EyeShape eye_shape(const Eye& op, const KernelArgs& args) {
  const int64_t n = read_int_scalar(*args.in[0], op.name(), "n"), m = read_int_scalar(*args.in[1], op.name(), "m"),
                k = read_int_scalar(*args.in[2], op.name(), "k");
  if (n < 0 || m < 0) fail<ValueError>(op.name(), ": negative dimensions are not allowed (n=", n, ", m=", m, ")");
  check_shape_size(op.name(), Shape{n, m}, op.dtype);
  return {n, m, k};
}

Shape tile_output_shape(const Tile& op, const NDArray& x, int* off) {
  const int nd = static_cast<int>(op.reps.size());
  if (x.ndim() > nd) fail<ValueError>(op.name(), ": the input ", x.describe(), " has more dimensions than reps");
  *off = nd - x.ndim();
  Shape shape;
  for (int i = 0; i < nd; ++i) {
    const int64_t len = i < *off ? 1 : x.shape(i - *off);
    auto d = checked_mul(op.reps[i], len);
    if (!d)
      fail<ValueError>(op.name(), ": ", op.reps[i], " repetitions of length ", len, " along axis ", i,
                       " do not fit in int64 (input ", x.describe(), ")");
    shape.push_back(*d);
  }
  check_shape_size(op.name(), shape, x.dtype());
  return shape;
}

}  // namespace kernel_util

namespace {
using namespace kernel_util;

void join_ref(const Join& op, const KernelArgs& args) {
  DType dt;
  Shape shape = join_output_shape(op.name(), op.axis, args, &dt);
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
  const auto [n, m, k] = eye_shape(op, args);
  NDArray& out = prepare_output(*args.out[0], Shape{n, m}, op.dtype);
  out.fill(0);
  // The diagonal misses the matrix unless -n < k < m; then i + k cannot overflow (n + m fits, as
  // n * m does).
  if (out.size() == 0 || k >= m || k <= -n) return;
  dispatch_dtype(op.dtype, [&](auto t) {
    using T = decltype(t);
    for (int64_t i = std::max<int64_t>(0, -k); i < n && i + k < m; ++i)
      out.data<T>()[i * m + i + k] = static_cast<T>(1);
  });
}

void tile_ref(const Tile& op, const KernelArgs& args) {
  const NDArray& x = *args.in[0];
  int off = 0;
  Shape shape = tile_output_shape(op, x, &off);
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
  Shape shape;
  std::vector<int64_t> counts = repeat_counts(op, args, &shape);
  // The output first: a length the machine cannot hold fails there, not while building src.
  NDArray& out = prepare_output(*args.out[0], shape, x.dtype());
  if (out.size() == 0) return;
  std::vector<int64_t> src;
  src.reserve(static_cast<size_t>(shape[op.axis]));
  for (size_t j = 0; j < counts.size(); ++j)
    for (int64_t c = 0; c < counts[j]; ++c) src.push_back(static_cast<int64_t>(j));
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
  register_simple_kernel<Join>(kReferenceBackend, join_ref);
  register_simple_kernel<ARange>(kReferenceBackend, arange_kernel);
  register_simple_kernel<Eye>(kReferenceBackend, eye_kernel);
  register_simple_kernel<Tile>(kReferenceBackend, tile_ref);
  register_simple_kernel<Repeat>(kReferenceBackend, repeat_ref);
  register_shape_cpu_kernels();
}

}  // namespace hypatia
