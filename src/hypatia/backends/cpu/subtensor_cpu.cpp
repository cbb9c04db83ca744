// CPU kernels of the subtensor family: x[int_array] on the first axis of a C-contiguous array
// (embedding lookups, take) copies whole rows with memcpy, split across threads when large; one
// index array on another axis (x[:, :, idx], take(axis=k)) writes the output in order, a block of
// the axes after it at a time; a boolean mask over the leading axes of a C-contiguous array
// (x[mask], x[x > 0] = 0, the gradient's inc_subtensor(zeros[mask], g)) is read once, with the
// selected rows copied in order (no nonzero index arrays); other indexes run the engine's gather.
#include <bit>
#include <cstring>
#include <optional>

#include "hypatia/backends/cpu/thread_pool.h"
#include "hypatia/backends/shape_kernels_impl.h"
#include "hypatia/backends/subtensor_engine.h"
#include "hypatia/ops/scalar_functors.h"

namespace hypatia {

void register_subtensor_cpu_kernels();

namespace {

template <size_t N>
void copy_picked(std::byte* dst, const std::byte* src, const int64_t* idx, int64_t n, int64_t stride) {
  for (int64_t k = 0; k < n; ++k, dst += N) std::memcpy(dst, src + idx[k] * stride, N);
}

// A resolved index that is one index array on axis a of the view (numpy puts its dims at a), the
// view's axes after a one contiguous block: the layout both paths below walk.
struct AlongAxis {
  int a;
  int64_t inner;    // elements per block (the axes after a)
  int64_t n_outer;  // positions of the axes before a
  int64_t nb;       // indices
  const int64_t* idx;
  int64_t stride;  // bytes between rows of axis a
};

std::optional<AlongAxis> along_axis(const subtensor_engine::Resolved& r) {
  if (!r.advanced || r.arrays.size() != 1 || r.adv_axes.size() != 1 || r.insert_pos != r.adv_axes[0])
    return std::nullopt;
  const NDArray& p = r.view;
  AlongAxis g{r.adv_axes[0], 1, 1, r.bshape.prod(), r.arrays[0].data<int64_t>(), 0};
  g.stride = p.strides()[g.a];
  for (int d = p.ndim() - 1; d > g.a; --d) {
    if (p.shape(d) != 1 && p.strides()[d] != g.inner * p.itemsize()) return std::nullopt;
    g.inner *= p.shape(d);
  }
  for (int d = 0; d < g.a; ++d) g.n_outer *= p.shape(d);
  return g;
}

// The byte offset in p of position o of its axes before a (any strides).
int64_t outer_offset(const NDArray& p, int a, int64_t o) {
  int64_t off = 0;
  for (int d = a - 1; d >= 0; --d) {
    off += (o % p.shape(d)) * p.strides()[d];
    o /= p.shape(d);
  }
  return off;
}

// out = x[..., idx, ...] for one index array on axis a of the resolved view (numpy puts its dims
// at a): for each position of the axes before a, the blocks of the axes after a that idx picks,
// copied in the output's order. The engine's gather walks the whole output once per index, a
// stride apart (on the last axis of a (32, 3, 64, 64) array: 36 ms against numpy's 7). Returns
// false when the index or layout is another (the axes after a not one contiguous block, or an
// output that is not C-contiguous).
bool gather_along_axis(const subtensor_engine::Resolved& r, NDArray& out) {
  const std::optional<AlongAxis> g = out.is_c_contiguous() ? along_axis(r) : std::nullopt;
  if (!g) return false;
  const NDArray& p = r.view;
  const int a = g->a;
  const int64_t nb = g->nb, n_outer = g->n_outer, block = g->inner * p.itemsize(), stride = g->stride;
  const int64_t* idx = g->idx;
  if (nb == 0 || n_outer == 0 || block == 0) return true;
  const std::byte* src = p.raw();
  std::byte* dst = out.raw();
  const int64_t words = n_outer * nb * block / 8;
  const int threads = parallel_worth(words) ? parallel_threads() : 1;
  parallel_ranges(n_outer, parallel_task_count(words, threads), threads, [&](int64_t o0, int64_t o1) {
    for (int64_t o = o0; o < o1; ++o) {
      const std::byte* s = src + outer_offset(p, a, o);
      std::byte* dp = dst + o * nb * block;
      switch (block) {
        case 1:
          copy_picked<1>(dp, s, idx, nb, stride);
          break;
        case 2:
          copy_picked<2>(dp, s, idx, nb, stride);
          break;
        case 4:
          copy_picked<4>(dp, s, idx, nb, stride);
          break;
        case 8:
          copy_picked<8>(dp, s, idx, nb, stride);
          break;
        default:
          for (int64_t k = 0; k < nb; ++k, dp += block) std::memcpy(dp, s + idx[k] * stride, block);
      }
    }
  });
  return true;
}

// x[..., idx, ...] += y (or = y) for one index array on axis a of the resolved view and a
// C-contiguous y of the indexed region's shape (a gradient of gather_along_axis): for each
// position of the axes before a, y's blocks added into the rows idx picks, in y's order (repeated
// indices accumulate, in order). Split across threads by those positions when none of their axes
// has a zero stride (distinct positions, distinct rows). Returns false for other indexes.
bool scatter_along_axis(const subtensor_engine::Resolved& r, const NDArray& y, bool set) {
  const std::optional<AlongAxis> g = y.shape() == r.result_shape && y.is_c_contiguous() ? along_axis(r) : std::nullopt;
  if (!g) return false;
  const NDArray& p = r.view;
  const int a = g->a;
  const int64_t item = p.itemsize(), inner = g->inner, nb = g->nb, n_outer = g->n_outer, stride = g->stride;
  const int64_t* idx = g->idx;
  bool distinct = true;
  for (int d = 0; d < a; ++d) distinct = distinct && (p.shape(d) == 1 || p.strides()[d] != 0);
  if (nb == 0 || n_outer == 0 || inner == 0) return true;
  const int64_t words = n_outer * nb * inner * item / 8;
  const int threads = distinct && parallel_worth(words) ? parallel_threads() : 1;
  dispatch_dtype(p.dtype(), [&](auto t) {
    using T = decltype(t);
    parallel_ranges(n_outer, parallel_task_count(words, threads), threads, [&](int64_t o0, int64_t o1) {
      for (int64_t o = o0; o < o1; ++o) {
        std::byte* base = p.raw() + outer_offset(p, a, o);
        const T* src = reinterpret_cast<const T*>(y.raw()) + o * nb * inner;
        for (int64_t k = 0; k < nb; ++k, src += inner) {
          T* dst = reinterpret_cast<T*>(base + idx[k] * stride);
          if (set) {
            std::memcpy(dst, src, static_cast<size_t>(inner) * sizeof(T));
          } else if constexpr (std::is_same_v<T, bool>) {
            for (int64_t i = 0; i < inner; ++i) dst[i] = dst[i] || src[i];
          } else {
            for (int64_t i = 0; i < inner; ++i) dst[i] = static_cast<T>(dst[i] + src[i]);
          }
        }
      }
    });
  });
  return true;
}

// A boolean mask over the leading axes of a C-contiguous array, the index's only entry: the rows
// it selects (each a block of the trailing axes), counted, and the last one, so that loops without
// branches write (and read) only inside the selected rows' count.
struct MaskRows {
  const uint8_t* m;   // one byte per row, non-zero: selected (a bool's reading)
  int64_t count;      // selected rows
  int64_t last;       // the last selected row (-1: none)
  int64_t row_elems;  // elements per row
  Shape result;       // x[mask]'s shape: (count, the trailing axes...)
  NDArray hold;       // a contiguous copy of the mask when it had other strides
};

std::optional<MaskRows> mask_rows(const IndexSpec& spec, const NDArray& x, std::span<NDArray* const> idx) {
  if (spec.size() != 1 || spec[0].kind != IndexEntry::Kind::BoolArray || idx.size() != 1) return std::nullopt;
  const NDArray& m = *idx[0];
  // Anything else (a wrong dtype or shape) goes to the engine, whose errors name the op.
  if (!is_bool(m.dtype()) || m.ndim() == 0 || m.ndim() > x.ndim() || !x.is_c_contiguous()) return std::nullopt;
  for (int d = 0; d < m.ndim(); ++d)
    if (m.shape(d) != x.shape(d)) return std::nullopt;
  MaskRows r;
  r.hold = m.ascontiguous();
  r.m = reinterpret_cast<const uint8_t*>(r.hold.raw());
  const int64_t rows = m.size();
  r.row_elems = rows == 0 ? 0 : x.size() / rows;
  r.count = 0;
  for (int64_t i = 0; i < rows; ++i) r.count += r.m[i] != 0;
  r.last = rows - 1;
  while (r.last >= 0 && r.m[r.last] == 0) --r.last;
  r.result = Shape{r.count};
  for (int d = m.ndim(); d < x.ndim(); ++d) r.result.push_back(x.shape(d));
  return r;
}

template <class T>
void gather_mask_elements(const T* __restrict x, const uint8_t* __restrict m, int64_t last, T* __restrict out) {
  // out[k] takes every x[i] and k moves on past the selected ones: up to the last selected row
  // each write lands below the count.
  int64_t k = 0;
  for (int64_t i = 0; i <= last; ++i) {
    out[k] = x[i];
    k += m[i] != 0;
  }
}

/// out = x[mask] (MaskRows): (count, trailing axes...).
void gather_mask(const MaskRows& mr, const NDArray& x, NDArray& out) {
  if (mr.count == 0) return;
  const size_t row = static_cast<size_t>(mr.row_elems) * x.itemsize();
  if (mr.row_elems == 1 && (row == 4 || row == 8 || row == 2 || row == 1)) {
    switch (row) {
      case 1:
        return gather_mask_elements(x.data<uint8_t>(), mr.m, mr.last, out.data<uint8_t>());
      case 2:
        return gather_mask_elements(reinterpret_cast<const uint16_t*>(x.raw()), mr.m, mr.last,
                                    reinterpret_cast<uint16_t*>(out.raw()));
      case 4:
        return gather_mask_elements(reinterpret_cast<const uint32_t*>(x.raw()), mr.m, mr.last,
                                    reinterpret_cast<uint32_t*>(out.raw()));
      default:
        return gather_mask_elements(reinterpret_cast<const uint64_t*>(x.raw()), mr.m, mr.last,
                                    reinterpret_cast<uint64_t*>(out.raw()));
    }
  }
  std::byte* dst = out.raw();
  for (int64_t i = 0; i <= mr.last; ++i)
    if (mr.m[i]) {
      std::memcpy(dst, x.raw() + static_cast<size_t>(i) * row, row);
      dst += row;
    }
}

/// The additive identity of every x, -0 for floats (x + 0 would turn a -0 into +0).
template <class T>
constexpr T kAddIdentity = std::is_floating_point_v<T> ? T(-0.0) : T(0);

/// x[mask] = y (set) or x[mask] += y on the rows of one element each of a float32 / float64 /
/// int32 / int64 x, for a y of one element (`one`) or of the selected elements in order
/// (C-contiguous): selects, no branches. False for a y of another layout (the engine's scatter).
template <class T>
bool scatter_mask_elements(const MaskRows& mr, T* __restrict x, const NDArray& y, bool one, bool set) {
  const uint8_t* __restrict m = mr.m;
  if (one) {
    const T v = *reinterpret_cast<const T*>(y.raw());
    // An unselected element gets the identity added: a blend and an add that vectorize, where
    // `m ? x + v : x` became a branch (4.8 ms for a random 1024 x 1024 mask).
    if (set)
      for (int64_t i = 0; i <= mr.last; ++i) x[i] = m[i] ? v : x[i];
    else
      for (int64_t i = 0; i <= mr.last; ++i) x[i] = scalar_math::add(x[i], m[i] ? v : kAddIdentity<T>);
    return true;
  }
  if (!y.is_c_contiguous()) return false;
  const T* __restrict yv = reinterpret_cast<const T*>(y.raw());
  using U = std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>;
  int64_t k = 0;
  // Up to the last selected row, k stays below the count: every y[k] read is inside y. The
  // select is done on the bits: with a select gcc made a branch, mispredicted on a random mask
  // (5 ms for 1024 x 1024).
  for (int64_t i = 0; i <= mr.last; ++i) {
    const U sel = U(0) - static_cast<U>(m[i] != 0);
    const U yk = std::bit_cast<U>(yv[k]);
    if (set) {
      x[i] = std::bit_cast<T>((yk & sel) | (std::bit_cast<U>(x[i]) & ~sel));
    } else {
      x[i] = scalar_math::add(x[i], std::bit_cast<T>((yk & sel) | (std::bit_cast<U>(kAddIdentity<T>) & ~sel)));
    }
    k += m[i] != 0;
  }
  return true;
}

bool scatter_mask_typed(const MaskRows& mr, NDArray& x, const NDArray& y, bool one, bool set) {
  switch (x.dtype()) {
    case DType::Float32:
      return scatter_mask_elements(mr, x.data<float>(), y, one, set);
    case DType::Float64:
      return scatter_mask_elements(mr, x.data<double>(), y, one, set);
    case DType::Int32:
      return scatter_mask_elements(mr, x.data<int32_t>(), y, one, set);
    case DType::Int64:
      return scatter_mask_elements(mr, x.data<int64_t>(), y, one, set);
    default:
      return false;
  }
}

/// x[mask] = y or x[mask] += y (MaskRows) for y as numpy takes it for the result (count, trailing
/// axes...): one element broadcast, or the result's own shape. False for any other y (the engine
/// broadcasts it or names the mismatch), dtype or row length.
bool scatter_mask(const MaskRows& mr, NDArray& x, const NDArray& y, bool set) {
  const bool one = y.size() == 1 && y.ndim() <= mr.result.size();
  if (!one && !(y.shape() == mr.result)) return false;
  if (mr.count == 0) return true;
  if (mr.row_elems != 1) return false;
  return scatter_mask_typed(mr, x, y, one, set);
}

void inc_subtensor_cpu(const IncSubtensor& op, const KernelArgs& args) {
  NDArray& out = subtensor_engine::inc_subtensor_output(op, args);
  if (auto mr = mask_rows(op.spec, out, args.in.subspan(2)))
    if (scatter_mask(*mr, out, *args.in[1], op.set_instead_of_inc)) return;
  subtensor_engine::Resolved r = subtensor_engine::resolve(op.name(), op.spec, out, args.in.subspan(2));
  if (!scatter_along_axis(r, *args.in[1], op.set_instead_of_inc))
    subtensor_engine::scatter(op.name(), r, *args.in[1], op.set_instead_of_inc);
}

void advanced_subtensor_cpu(const AdvancedSubtensor& op, const KernelArgs& args) {
  const NDArray& x = *args.in[0];
  const bool rows = op.spec.size() == 1 && op.spec[0].kind == IndexEntry::Kind::IntArray && x.ndim() >= 1 &&
                    x.is_c_contiguous() && args.in[1]->ndim() == 1;
  if (auto mr = mask_rows(op.spec, x, args.in.subspan(1))) {
    NDArray& out = prepare_output(*args.out[0], mr->result, x.dtype());
    gather_mask(*mr, x, out);
    return;
  }
  if (!rows) {
    subtensor_engine::Resolved r = subtensor_engine::resolve(op.name(), op.spec, x, args.in.subspan(1));
    NDArray& out = prepare_output(*args.out[0], r.result_shape, x.dtype());
    if (!gather_along_axis(r, out)) subtensor_engine::gather(r, out);
    return;
  }
  const NDArray& ia = *args.in[1];
  if (!is_integer(ia.dtype())) fail<IndexError>(op.name(), ": index arrays must be integers, got ", ia.describe());
  const NDArray idx = ia.astype(DType::Int64);
  const int64_t n = idx.size(), len = x.shape(0);
  const int64_t* v = idx.data<int64_t>();
  for (int64_t i = 0; i < n; ++i)
    if (v[i] < -len || v[i] >= len)
      fail<IndexError>(op.name(), ": index ", v[i], " is out of bounds for axis 0 with size ", len);
  Shape shape = x.shape();
  shape[0] = n;
  NDArray& out = prepare_output(*args.out[0], shape, x.dtype());
  const size_t row = static_cast<size_t>(x.size() / std::max<int64_t>(len, 1)) * x.itemsize();
  if (row == 0 || n == 0) return;
  const std::byte* src = x.raw();
  std::byte* dst = out.raw();
  // Threads above the threshold counted in 8-byte words (a copy moves bytes, no arithmetic).
  const int64_t words = static_cast<int64_t>(n * static_cast<int64_t>(row) / 8);
  const int threads = parallel_worth(words) ? parallel_threads() : 1;
  parallel_ranges(n, parallel_task_count(words, threads), threads, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) {
      const int64_t j = v[i] < 0 ? v[i] + len : v[i];
      std::memcpy(dst + static_cast<size_t>(i) * row, src + static_cast<size_t>(j) * row, row);
    }
  });
}

}  // namespace

void register_subtensor_cpu_kernels() {
  register_simple_kernel<AdvancedSubtensor>(kCpuBackend, advanced_subtensor_cpu);
  register_simple_kernel<IncSubtensor>(kCpuBackend, inc_subtensor_cpu);
}

}  // namespace hypatia
