// Device memory for the CUDA backend (internal to backends/cuda): the caching allocator of device
// 0 (backends/device_queues.h, on cudaMalloc and cudaFree, its queues CUDA streams: cuda_api.h),
// the blocks where kernels report failed checks, and the DeviceMemory functions NDArray uses for
// cuda arrays.
#pragma once
#include <memory>
#include <vector>

#include "hypatia/backends/device_queues.h"

namespace hypatia::cuda {

/// The allocator of the CUDA device this process drives (made on first use; never destroyed, so that arrays freed at
/// exit still find it).
CachingAllocator& device_allocator();
/// While set, every device allocation the calling thread makes is also kept in `sink` (a
/// recording keeps the buffers its replays write: cuda_graphs.cpp); null ends it.
void set_allocation_sink(std::vector<std::shared_ptr<void>>* sink);
/// Where a kernel's checks on the device report (KernelTraits::device_checks): kWords int64 in
/// device memory (word 0 nonzero once a check failed, the others what failed), cleared before the
/// kernel and copied after it into pinned host memory, which the host reads once it has waited for
/// the device. Both copies are queued on the kernel's stream, so a recording replays them too.
class DeviceCheckBlock {
 public:
  static constexpr int kWords = 4;
  DeviceCheckBlock() = default;  // (its memory is taken at the first use: compiling touches no device)
  ~DeviceCheckBlock();
  DeviceCheckBlock(const DeviceCheckBlock&) = delete;
  DeviceCheckBlock& operator=(const DeviceCheckBlock&) = delete;
  /// The device words (a kernel argument).
  unsigned long long device() {
    ensure();
    return reinterpret_cast<unsigned long long>(device_.get());
  }
  /// Queues the clearing of the device words (before the kernel).
  void clear();
  /// Queues their copy to the host words (after the kernel).
  void fetch();
  /// Whether the last fetch found a failed check (read after waiting for the device); its words
  /// go to `words` and the host's copy is cleared (an error is raised once).
  bool take_failure(long long (&words)[kWords]);

 private:
  /// Takes the device and host words if it has none yet (the host words cleared).
  void ensure();

  std::shared_ptr<void> device_;
  long long* host_ = nullptr;
};

/// Registers the DeviceMemory of the Cuda kind (allocation through device_allocator() for the
/// calling thread's queue, copies on its stream; a copy to the host waits for it).
void register_cuda_memory();
/// The backend's CallQueues (backends/backend.h): a function's calls run on its queue (a stream of
/// its own with cuda_streams=function); what they read and write of other calls' buffers is
/// ordered through device_allocator()'s Blocks.
std::shared_ptr<CallQueues> make_cuda_queues();

}  // namespace hypatia::cuda
