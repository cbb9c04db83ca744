// Kernels of SortOp and ArgSortOp: the reference kernels (the CPU's: backends/cpu/sort_cpu.cpp).
// Each line along the axis is stable-sorted with NaN last (numpy's order) on a copy with the axis
// last.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <type_traits>
#include <vector>

#include "hypatia/backends/registry.h"
#include "hypatia/ops/sort.h"

namespace hypatia {
namespace {

template <class T>
bool less_nan_last(T a, T b) {
  if constexpr (std::is_floating_point_v<T>)
    return a < b || (std::isnan(b) && !std::isnan(a));
  else
    return a < b;
}

/// Writes x sorted along `axis` (Indices false) or the indices that sort it (Indices true).
template <bool Indices>
void sort_along_axis(int axis, const KernelArgs& args) {
  const NDArray& x = *args.in[0];
  std::vector<int> perm;
  for (int d = 0; d < x.ndim(); ++d)
    if (d != axis) perm.push_back(d);
  perm.push_back(axis);
  const NDArray xt = x.transpose(perm).copy();  // C-contiguous, the sorted axis last
  const DType out_dtype = Indices ? DType::Int64 : x.dtype();
  NDArray sorted = NDArray::empty(xt.shape(), out_dtype);
  const int64_t n = x.shape(axis);
  const int64_t rows = n == 0 ? 0 : x.size() / n;
  dispatch_dtype(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* src = xt.data<T>();
    std::vector<int64_t> order(static_cast<size_t>(n));
    for (int64_t r = 0; r < rows; ++r) {
      const T* line = src + r * n;
      std::iota(order.begin(), order.end(), int64_t{0});
      std::stable_sort(order.begin(), order.end(),
                       [line](int64_t a, int64_t b) { return less_nan_last(line[a], line[b]); });
      if constexpr (Indices) {
        std::copy(order.begin(), order.end(), sorted.data<int64_t>() + r * n);
      } else {
        T* dst = sorted.data<T>() + r * n;
        for (int64_t k = 0; k < n; ++k) dst[k] = line[order[k]];
      }
    }
  });
  NDArray& out = prepare_output(*args.out[0], x.shape(), out_dtype);
  out.transpose(perm).assign(sorted);
}

void sort_kernel(const SortOp& op, const KernelArgs& args) { sort_along_axis<false>(op.axis, args); }
void argsort_kernel(const ArgSortOp& op, const KernelArgs& args) { sort_along_axis<true>(op.axis, args); }

}  // namespace

void register_sort_cpu_kernels();

void register_sort_kernels() {
  register_simple_kernel<SortOp>(kReferenceBackend, &sort_kernel);
  register_simple_kernel<ArgSortOp>(kReferenceBackend, &argsort_kernel);
  register_sort_cpu_kernels();
}

}  // namespace hypatia
