// The passes of the bitonic sorting network the CUDA backend's SortOp and ArgSortOp kernels run
// (cuda_sort_kernels.cpp), shared with the host test that runs the generated kernels on the CPU
// (tests/cpp/test_cuda_on_host.cpp), so that both follow one schedule. A line of n elements is
// padded to P, the next power of two; pass (k, j) compare-exchanges element i with i + j for
// every i whose bit j is clear, ascending where bit k of i is clear.
#pragma once
#include <cstdint>

namespace hypatia::cuda::sort_network {

/// The padded length of a line of n elements.
inline int64_t padded(int64_t n) {
  int64_t p = 1;
  while (p < n) p <<= 1;
  return p;
}

/// Calls pass(k, j) for each pass of the network over lines of padded length p, in order.
template <class F>
void for_each_pass(int64_t p, F pass) {
  for (int64_t k = 2; k <= p; k <<= 1)
    for (int64_t j = k >> 1; j > 0; j >>= 1) pass(k, j);
}

}  // namespace hypatia::cuda::sort_network
