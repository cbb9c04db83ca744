// CPU kernels of SortOp and ArgSortOp (ops/sort.h): each line along the axis in numpy's stable
// order with NaN last, as the reference kernels give it. A line is sorted as unsigned keys by
// Highway's vectorized quicksort (hwy/contrib/sort): the value, mapped to an unsigned integer of
// the same order, in the high half and its index in the low half, so that equal values keep their
// order (the sort is stable although quicksort is not) and one unsigned sort serves every dtype.
// Types of 32 bits or fewer use 64-bit keys, 64-bit types 128-bit keys. Lines are spread over the
// thread pool.
#include <hwy/contrib/sort/vqsort.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstring>
#include <type_traits>
#include <vector>

#include "hypatia/backends/cpu/thread_pool.h"
#include "hypatia/backends/registry.h"
#include "hypatia/core/half.h"
#include "hypatia/ops/sort.h"

namespace hypatia {
namespace {

/// The unsigned integer whose order is numpy's sort order of x: -0 and 0 equal (both 0's key),
/// every NaN last and equal to one another.
template <class T>
auto order_key(T x) {
  if constexpr (std::is_same_v<T, half>) {
    return order_key(static_cast<float>(x));
  } else if constexpr (std::is_floating_point_v<T>) {
    using U = std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>;
    constexpr U sign = U{1} << (8 * sizeof(T) - 1);
    if (std::isnan(x)) return ~U{0};
    if (x == T(0)) x = T(0);
    const U u = std::bit_cast<U>(x);
    return (u & sign) ? ~u : (u | sign);
  } else if constexpr (std::is_same_v<T, bool>) {
    return static_cast<uint32_t>(x);
  } else if constexpr (std::is_signed_v<T>) {
    using U = std::make_unsigned_t<T>;
    using W = std::conditional_t<sizeof(T) <= 4, uint32_t, uint64_t>;
    return static_cast<W>(static_cast<U>(x) ^ (U{1} << (8 * sizeof(T) - 1)));
  } else {
    return static_cast<std::conditional_t<sizeof(T) <= 4, uint32_t, uint64_t>>(x);
  }
}

/// Sorts lines [begin, end) of x (`rows` lines of n elements along `axis`, the others walked by an
/// odometer) into out: the values (Indices false) or their int64 indices. Wide: 128-bit keys (a
/// 64-bit type, or a line too long for a 32-bit index).
template <bool Indices, class T, bool Wide>
void sort_lines(const NDArray& x, const NDArray& out, int axis, int64_t begin, int64_t end) {
  const int64_t n = x.shape(axis);
  const int64_t xs = x.strides()[axis], os = out.strides()[axis];
  using Key = std::conditional_t<Wide, hwy::uint128_t, uint64_t>;
  std::vector<Key> keys(static_cast<size_t>(n));
  hwy::Sorter sorter;
  // The other axes, and the position of line `begin` on them.
  std::array<int, kMaxNdim> other{};
  int no = 0;
  for (int d = 0; d < x.ndim(); ++d)
    if (d != axis) other[no++] = d;
  std::array<int64_t, kMaxNdim> idx{};
  int64_t rem = begin;
  for (int k = no - 1; k >= 0; --k) {
    idx[k] = rem % x.shape(other[k]);
    rem /= x.shape(other[k]);
  }
  for (int64_t r = begin; r < end; ++r) {
    const std::byte* src = x.raw();
    std::byte* dst = out.raw();
    for (int k = 0; k < no; ++k) {
      src += idx[k] * x.strides()[other[k]];
      dst += idx[k] * out.strides()[other[k]];
    }
    for (int64_t i = 0; i < n; ++i) {
      T v;
      std::memcpy(&v, src + i * xs, sizeof(T));
      if constexpr (Wide)
        keys[i] = hwy::uint128_t{static_cast<uint64_t>(i), static_cast<uint64_t>(order_key(v))};
      else
        keys[i] = (static_cast<uint64_t>(order_key(v)) << 32) | static_cast<uint64_t>(i);
    }
    sorter(keys.data(), static_cast<size_t>(n), hwy::SortAscending());
    for (int64_t i = 0; i < n; ++i) {
      int64_t from;
      if constexpr (Wide)
        from = static_cast<int64_t>(keys[i].lo);
      else
        from = static_cast<int64_t>(keys[i] & 0xFFFFFFFFu);
      if constexpr (Indices)
        std::memcpy(dst + i * os, &from, sizeof(int64_t));
      else
        std::memcpy(dst + i * os, src + from * xs, sizeof(T));
    }
    for (int k = no - 1; k >= 0; --k) {
      if (++idx[k] < x.shape(other[k])) break;
      idx[k] = 0;
    }
  }
}

template <bool Indices>
void sort_along_axis_cpu(int axis, const KernelArgs& args) {
  const NDArray& x = *args.in[0];
  const DType out_dtype = Indices ? DType::Int64 : x.dtype();
  NDArray& out = prepare_output(*args.out[0], x.shape(), out_dtype);
  const int64_t n = x.shape(axis);
  if (x.size() == 0) return;
  const int64_t rows = x.size() / n;
  dispatch_storage_dtype(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    // A narrow key holds a 32-bit value key and a 32-bit index: for types of 32 bits or fewer, in
    // lines of fewer than 2^32 elements.
    auto lines = &sort_lines<Indices, T, true>;
    if constexpr (sizeof(decltype(order_key(T{}))) == 4)
      if (n <= int64_t{0xFFFFFFFF}) lines = &sort_lines<Indices, T, false>;
    // Sorting costs about log2(n) passes over a line: threads when that work is worth them.
    const int64_t work = x.size() * std::max<int64_t>(1, std::bit_width(static_cast<uint64_t>(n)));
    const int nt = rows > 1 && parallel_worth(work) ? parallel_threads() : 1;
    if (nt == 1) return lines(x, out, axis, 0, rows);
    parallel_ranges(rows, std::min<int64_t>(rows, 4 * nt), nt,
                    [&](int64_t b, int64_t e) { lines(x, out, axis, b, e); });
  });
}

void sort_cpu(const SortOp& op, const KernelArgs& args) { sort_along_axis_cpu<false>(op.axis, args); }
void argsort_cpu(const ArgSortOp& op, const KernelArgs& args) { sort_along_axis_cpu<true>(op.axis, args); }

}  // namespace

void register_sort_cpu_kernels() {
  register_simple_kernel<SortOp>(kCpuBackend, &sort_cpu);
  register_simple_kernel<ArgSortOp>(kCpuBackend, &argsort_cpu);
}

}  // namespace hypatia
