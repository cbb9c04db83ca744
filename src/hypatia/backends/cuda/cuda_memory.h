// Device memory for the CUDA backend (internal to backends/cuda): a caching allocator and the
// DeviceMemory functions NDArray uses for cuda arrays.
//
// The allocator keeps freed buffers by size class and gives them out again, so that a compiled
// function called in a loop never reaches cudaMalloc (59 us for 1 MB on an H200) after its first
// call. Reuse is stream-ordered: every kernel and copy of the backend is queued on one stream, so a
// buffer the host lets go of while queued work still reads it is only written by work queued
// later. When the device is out of memory the cache is released and the allocation retried; then
// the holders of memory they can rebuild let go of what is idle (relieve_memory_pressure: the
// recordings of device work of functions not running now), and the allocation is retried once
// more; if it still fails the MemoryError names the bytes asked for, the device's free bytes and
// the cache.
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
  /// free, the device's free bytes (for messages), what lets other holders of device memory
  /// give theirs back (null: nothing; the device's allocator: relieve_memory_pressure), and the
  /// lock that freeing needs (null: none; the device's: capture_mutex(), which waits for another
  /// thread's capture; an empty lock when the calling thread captures: nothing is freed then).
  struct Raw {
    std::function<void*(size_t)> alloc;
    std::function<void(void*)> free;
    std::function<size_t()> free_bytes;
    std::function<void()> relieve;
    std::function<std::unique_lock<std::mutex>()> exclusive;
  };
  struct Stats {
    size_t in_use = 0;      // bytes (size classes) handed out and not yet returned
    size_t cached = 0;      // bytes held for reuse
    size_t peak = 0;        // most in_use so far
    size_t raw_allocs = 0;  // calls of Raw::alloc that succeeded
    size_t reuses = 0;      // allocations served from the cache
    size_t pressure = 0;    // allocations that needed other holders to give memory back
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

/// Registers the DeviceMemory of the Cuda kind (allocation through device_allocator(), copies on
/// the backend's stream; a copy to the host waits for it).
void register_cuda_memory();

}  // namespace hypatia::cuda
