// Device memory for the CUDA backend (internal to backends/cuda): a caching allocator and the
// DeviceMemory functions NDArray uses for cuda arrays.
//
// The allocator keeps freed buffers by size class and gives them out again, so that a compiled
// function called in a loop never reaches cudaMalloc (59 us for 1 MB on an H200) after its first
// call. Reuse is stream-ordered: every kernel and copy of the backend is queued on one stream, so a
// buffer the host lets go of while queued work still reads it is only written by work queued
// later. When the device is out of memory the cache is released and the allocation retried; if it
// still fails the MemoryError names the bytes asked for, the device's free bytes and the cache.
#pragma once
#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

namespace hypatia::cuda {

class CachingAllocator {
 public:
  /// The raw device functions (tests give host stand-ins): allocate (null when out of memory),
  /// free, and the device's free bytes (for messages).
  struct Raw {
    std::function<void*(size_t)> alloc;
    std::function<void(void*)> free;
    std::function<size_t()> free_bytes;
  };
  struct Stats {
    size_t in_use = 0;      // bytes (size classes) handed out and not yet returned
    size_t cached = 0;      // bytes held for reuse
    size_t peak = 0;        // most in_use so far
    size_t raw_allocs = 0;  // calls of Raw::alloc that succeeded
    size_t reuses = 0;      // allocations served from the cache
  };

  explicit CachingAllocator(Raw raw) : raw_(std::move(raw)) {}
  /// A buffer of at least `bytes` (256-byte aligned as cudaMalloc's) that returns to the cache
  /// when its last owner lets go; MemoryError when the device has no room even after the cache
  /// is released.
  std::shared_ptr<void> allocate(size_t bytes);
  /// Frees every cached buffer (on memory pressure, and for tests).
  void release_cached();
  Stats stats() const;
  /// The size class `bytes` is rounded up to: a multiple of 512 below 1 MiB, above it the next
  /// of 1, 1.25, 1.5 and 1.75 times a power of two (at most a quarter wasted).
  static size_t size_class(size_t bytes);

 private:
  void give_back(void* p, size_t cls);

  Raw raw_;
  mutable std::mutex mu_;
  std::map<size_t, std::vector<void*>> free_;
  Stats stats_;
};

/// The allocator of CUDA device 0 (made on first use; never destroyed, so that arrays freed at
/// exit still find it).
CachingAllocator& device_allocator();
/// While set, every device allocation the calling thread makes is also kept in `sink` (a
/// recording keeps the buffers its replays write: cuda_graphs.cpp); null ends it.
void set_allocation_sink(std::vector<std::shared_ptr<void>>* sink);
/// Registers the DeviceMemory of the Cuda kind (allocation through device_allocator(), copies on
/// the backend's stream; a copy to the host waits for it).
void register_cuda_memory();

}  // namespace hypatia::cuda
