// Multi-operand strided iteration: the loop every elementwise-like kernel is built on.
#pragma once
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

#include "hypatia/core/ndarray.h"

namespace hypatia {

/// A loop over `shape` for N operands with their own byte strides (0 for broadcast dims), with
/// length-1 dims dropped and adjacent dims merged where every operand allows. The innermost
/// dim is handed to a callback as one run: inner(ptrs, inner_strides, n).
template <int N>
class StridedLoop {
 public:
  StridedLoop(const Shape& shape, const std::array<const Strides*, N>& strides) {
    for (int d = 0; d < shape.size(); ++d) {
      if (shape[d] == 0) {
        empty_ = true;
        return;
      }
      if (shape[d] == 1) continue;
      if (nd_ > 0) {
        bool merge = true;
        for (int k = 0; k < N; ++k)
          if ((*strides[k])[last_dim_[nd_ - 1]] != (*strides[k])[d] * shape[d]) merge = false;
        if (merge) {
          shape_[nd_ - 1] *= shape[d];
          for (int k = 0; k < N; ++k) strides_[k][nd_ - 1] = (*strides[k])[d];
          last_dim_[nd_ - 1] = d;
          continue;
        }
      }
      shape_[nd_] = shape[d];
      for (int k = 0; k < N; ++k) strides_[k][nd_] = (*strides[k])[d];
      last_dim_[nd_] = d;
      ++nd_;
    }
  }

  bool empty() const { return empty_; }
  /// Length of each innermost run.
  int64_t inner_size() const { return nd_ == 0 ? 1 : shape_[nd_ - 1]; }
  /// Number of innermost runs.
  int64_t outer_size() const {
    if (empty_) return 0;
    int64_t n = 1;
    for (int d = 0; d + 1 < nd_; ++d) n *= shape_[d];
    return n;
  }
  int64_t inner_stride(int k) const { return nd_ == 0 ? 0 : strides_[k][nd_ - 1]; }

  /// Runs inner() for outer runs [begin, end) (all of them by default).
  template <class F>
  void run(std::array<std::byte*, N> base, F&& inner, int64_t begin = 0, int64_t end = -1) const {
    if (empty_) return;
    if (end < 0) end = outer_size();
    if (begin >= end) return;
    std::array<int64_t, N> istr;
    for (int k = 0; k < N; ++k) istr[k] = inner_stride(k);
    const int64_t n = inner_size();
    const int outer = nd_ > 0 ? nd_ - 1 : 0;
    // Position the odometer at `begin`.
    std::array<int64_t, kMaxNdim> idx{};
    int64_t rem = begin;
    for (int d = outer - 1; d >= 0; --d) {
      idx[d] = rem % shape_[d];
      rem /= shape_[d];
    }
    std::array<std::byte*, N> p;
    for (int k = 0; k < N; ++k) {
      p[k] = base[k];
      for (int d = 0; d < outer; ++d) p[k] += idx[d] * strides_[k][d];
    }
    for (int64_t it = begin; it < end; ++it) {
      inner(p, istr, n);
      for (int d = outer - 1; d >= 0; --d) {
        if (++idx[d] < shape_[d]) {
          for (int k = 0; k < N; ++k) p[k] += strides_[k][d];
          break;
        }
        idx[d] = 0;
        for (int k = 0; k < N; ++k) p[k] -= (shape_[d] - 1) * strides_[k][d];
      }
    }
  }

 private:
  int nd_ = 0;
  bool empty_ = false;
  std::array<int64_t, kMaxNdim> shape_{};
  std::array<std::array<int64_t, kMaxNdim>, N> strides_{};
  std::array<int, kMaxNdim> last_dim_{};
};

/// Sorts axes[0 .. n) by mag[axis] decreasing, stably (equal ones keep their order): an insertion
/// sort, which allocates nothing (std::stable_sort takes a buffer) and is quickest for the few
/// axes of an array. These orders are computed on every call of an elementwise kernel.
inline void sort_axes_decreasing(std::array<int, kMaxNdim>& axes, int n, const std::array<int64_t, kMaxNdim>& mag) {
  for (int i = 1; i < n; ++i) {
    const int a = axes[i];
    int j = i;
    for (; j > 0 && mag[axes[j - 1]] < mag[a]; --j) axes[j] = axes[j - 1];
    axes[j] = a;
  }
}

/// An axis order: axes[0 .. n), outermost first.
struct AxisOrder {
  std::array<int, kMaxNdim> axes{};
  int n = 0;
};

/// The order in which `a` (of `shape`) lays its axes of length > 1 in memory, outermost first
/// (|stride| decreasing), or nullopt when it has none: a different shape (a broadcast operand), an
/// axis of length 0, a zero stride or two axes with the same |stride|.
inline std::optional<AxisOrder> memory_axis_order(const NDArray& a, const Shape& shape) {
  if (!(a.shape() == shape)) return std::nullopt;
  AxisOrder o;
  std::array<int64_t, kMaxNdim> mag{};
  for (int d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1) continue;
    if (shape[d] == 0) return std::nullopt;
    mag[d] = a.strides()[d] < 0 ? -a.strides()[d] : a.strides()[d];
    if (mag[d] == 0) return std::nullopt;
    o.axes[o.n++] = d;
  }
  sort_axes_decreasing(o.axes, o.n, mag);
  for (int k = 1; k < o.n; ++k)
    if (mag[o.axes[k]] == mag[o.axes[k - 1]]) return std::nullopt;
  return o;
}

/// The strides of a dense array of `shape` laid out as the operands `like` agree to (numpy's
/// order "K"): the memory order of every operand of `shape` that has one (memory_axis_order),
/// when they all have the same and it is not C order; nullopt (C order) otherwise. An output
/// allocated so lets a loop over a Fortran-ordered or transposed input walk both in memory order.
inline std::optional<Strides> strides_following(const Shape& shape, size_t itemsize,
                                                std::span<const NDArray* const> like) {
  std::optional<AxisOrder> order;
  for (const NDArray* a : like) {
    // A C-contiguous operand of the shape settles it: C order, whether the others agree or not.
    if (a->shape() == shape && a->is_c_contiguous()) return std::nullopt;
    auto o = memory_axis_order(*a, shape);
    if (!o) continue;
    if (order && !std::equal(o->axes.begin(), o->axes.begin() + o->n, order->axes.begin())) return std::nullopt;
    order = o;
  }
  if (!order || std::is_sorted(order->axes.begin(), order->axes.begin() + order->n)) return std::nullopt;
  Strides st;
  st.resize(shape.size());
  int64_t acc = static_cast<int64_t>(itemsize);
  for (int k = order->n - 1; k >= 0; --k) {
    st[order->axes[k]] = acc;
    acc *= shape[order->axes[k]];
  }
  // Axes of length 1: any stride addresses their one element; the C-order one.
  int64_t c = static_cast<int64_t>(itemsize);
  for (int d = shape.size() - 1; d >= 0; --d) {
    if (shape[d] == 1) st[d] = c;
    c *= shape[d];
  }
  return st;
}

/// Puts the axes in the memory order of operand 0 (|stride| decreasing, innermost last; stable,
/// so a C-ordered operand 0 keeps the order), in `shape` and in the strides of each of the first
/// `operands` operands. For loops whose elements are independent (elementwise), so that a loop
/// writing a Fortran-ordered or transposed output walks it in memory order.
template <size_t K>
void sort_axes_by_first(Shape& shape, std::array<Strides, K>& strides, int operands) {
  const int nd = shape.size();
  std::array<int, kMaxNdim> perm{};
  std::array<int64_t, kMaxNdim> mag{};
  bool sorted = true;
  for (int d = 0; d < nd; ++d) {
    perm[d] = d;
    mag[d] = strides[0][d] < 0 ? -strides[0][d] : strides[0][d];
    sorted = sorted && (d == 0 || mag[d - 1] >= mag[d]);
  }
  if (sorted) return;  // C order (the common case): nothing to move
  sort_axes_decreasing(perm, nd, mag);
  const Shape s0 = shape;
  for (int d = 0; d < nd; ++d) shape[d] = s0[perm[d]];
  for (int k = 0; k < operands; ++k) {
    const Strides t = strides[k];
    for (int d = 0; d < nd; ++d) strides[k][d] = t[perm[d]];
  }
}

}  // namespace hypatia
