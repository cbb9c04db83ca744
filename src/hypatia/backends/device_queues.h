// Device memory shared by the device backends: a caching allocator whose buffers belong to
// queues (a device's streams), and the CallQueues (backend.h) that order the work of different
// functions' calls through the buffers they share. Nothing here calls a device: the device's
// functions come in CachingAllocator::Raw (the CUDA backend's: backends/cuda/cuda_memory.cpp;
// the emulated GPU's and the tests': host stand-ins).
//
// The allocator keeps freed buffers by size class and gives them out again, so that a compiled
// function called in a loop never reaches the device's allocation (cudaMalloc: 59 us for 1 MB on
// an H200) after its first call. Reuse is stream-ordered: a buffer belongs to the queue it was
// allocated on (the calling thread's: current_queue()) and returns to that queue's cache, so a
// buffer the host lets go of while queued work still reads it is only written by work queued
// there later; where other queues used it (a function's call read or wrote a value another
// function made), its queue first waits on the device for theirs (Raw::order). When the device
// is out of memory the cache is released and the allocation retried; then the holders of memory
// they can rebuild let go of what is idle (relieve_memory_pressure: the recordings of device work
// of functions not running now), and the allocation is retried once more; if it still fails the
// MemoryError names the bytes asked for, the device's free bytes and the cache.
//
// Queue 0 takes the work done outside calls and needs no bookkeeping: it is never waited for and
// never waits (the CUDA backend's queue 0 is CUDA's legacy default stream, which CUDA orders with
// every other queue; with one queue for everything, nothing needs ordering).
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "hypatia/backends/backend.h"

namespace hypatia {

/// Queues are numbered 0 to kMaxQueues - 1.
inline constexpr int kMaxQueues = 32;
/// The calling thread's queue: the function's during its calls (AllocatorQueues::enter), else 0.
int current_queue();
void set_current_queue(int q);
/// The queue whose cache the calling thread's allocations use and return to: its queue, but
/// queue 0 in a call made inside another function's call on another queue (a buffer such a call
/// keeps, a recording's, may be used later on its own queue). Queue 0's cache needs no waits when
/// a buffer returns to it: reused by queue 0, its work waits for every queue's earlier work by
/// itself; handed to another queue (such a call's), that queue first waits for queue 0's work
/// queued so far (Raw::order(q, 0)), which is every queue's.
int allocation_pool();

class CachingAllocator {
 public:
  /// The raw device functions (tests give host stand-ins): allocate (null when out of memory),
  /// free, the device's free bytes (for messages), what lets other holders of device memory
  /// give theirs back (null: nothing; the device's allocator: relieve_memory_pressure), and the
  /// lock that freeing needs (null: none; the device's: capture_mutex(), which waits for another
  /// thread's capture; an empty lock when the calling thread captures: nothing is freed then),
  /// and what makes one queue's later work wait for another's work queued so far (null: nothing
  /// to order; the CUDA backend's: an event recorded on one stream and waited for on the other;
  /// `from` 0 is the legacy stream, whose event follows every stream's work queued before it),
  /// and what waits for all the device's queued work before the cache is freed (null: nothing;
  /// the CUDA backend's: cudaDeviceSynchronize, called under `exclusive`).
  struct Raw {
    std::function<void*(size_t)> alloc;
    std::function<void(void*)> free;
    std::function<size_t()> free_bytes;
    std::function<void()> relieve;
    std::function<std::unique_lock<std::mutex>()> exclusive;
    std::function<void(int into, int from)> order;
    std::function<void()> synchronize;
    /// The device, in messages.
    std::string name = "device";
  };
  /// A buffer's queues (the deleter of the pointer allocate() gives; block_of finds it): the one
  /// whose cache it comes from and returns to (`owner`), the last that wrote it (at first the one
  /// it was allocated for) and those that read it since (bits).
  struct Block {
    CachingAllocator* allocator;
    size_t cls;
    int owner, writer;
    uint32_t readers;
    void operator()(void* p) { allocator->give_back(p, *this); }
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
  /// A buffer of at least `bytes` (256-byte aligned as cudaMalloc's) written by work on `queue`,
  /// from and back to the cache of queue `pool` (-1: `queue`'s) when its last owner lets go;
  /// MemoryError when the device has no room even after the cache is released.
  std::shared_ptr<void> allocate(size_t bytes, int queue = 0, int pool = -1);
  /// The Block of a buffer allocate() gave (any pointer sharing its ownership); null otherwise.
  static Block* block_of(const std::shared_ptr<void>& p);
  /// Before queue `q` reads `b`: makes q wait for b's last writer (Raw::order) and notes q as a
  /// reader. Before q writes into `b`: makes q wait for its writer and readers, and notes q as its
  /// writer. (Queue 0 never waits, and is never waited for; nor is q itself.)
  void reads(Block& b, int q);
  void writes(Block& b, int q);
  /// Makes `into` wait for `from` (neither 0 nor the same; else nothing).
  void order(int into, int from);
  /// Frees every cached buffer (on memory pressure, and for tests), after the device's queued work
  /// (Raw::synchronize: a cached buffer's last users are ordered on the device only).
  void release_cached();
  Stats stats() const;
  /// The size class `bytes` is rounded up to: a multiple of 512 below 1 MiB, above it the next
  /// of 1, 1.25, 1.5 and 1.75 times a power of two (at most a quarter wasted).
  static size_t size_class(size_t bytes);

 private:
  void give_back(void* p, const Block& b);
  /// Makes `q` wait for the queues of `bits` (q and 0 left out).
  void wait_for(uint32_t bits, int q);

  Raw raw_;
  mutable std::mutex mu_;
  /// Cached buffers by (queue, size class).
  std::map<std::pair<int, size_t>, std::vector<void*>> free_;
  Stats stats_;
};

/// The CallQueues of a device whose buffers come from `allocator`: a call runs on its function's
/// queue (assign() gives one per function) and the buffers it reads and writes that were made
/// outside it are ordered through their Blocks. A buffer of the device that is not the
/// allocator's (another library's, imported) has none: its readers and writers wait for every
/// other queue a function was given.
class AllocatorQueues final : public CallQueues {
 public:
  AllocatorQueues(CachingAllocator& allocator, DeviceKind kind, std::function<int()> assign)
      : allocator_(allocator), kind_(kind), assign_(std::move(assign)) {}
  int assign() override {
    const int q = assign_();
    given_.fetch_or(1u << q, std::memory_order_relaxed);
    return q;
  }
  void enter(int queue) override;
  void leave() override;
  void reads(const NDArray& a) override;
  void writes(const NDArray& a) override;

 private:
  /// Orders a use of `a` by the calling thread's queue: through its Block (reads or writes), or,
  /// for a buffer of this device without one, after every other queue.
  void use(const NDArray& a, bool write);

  CachingAllocator& allocator_;
  DeviceKind kind_;
  std::function<int()> assign_;
  std::atomic<uint32_t> given_{0};  // the queues given to functions (bits)
};

}  // namespace hypatia
