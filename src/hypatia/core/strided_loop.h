// Multi-operand strided iteration: the loop every elementwise-like kernel is built on.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>

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

}  // namespace hypatia
