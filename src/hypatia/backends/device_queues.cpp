#include "hypatia/backends/device_queues.h"

#include <bit>
#include <vector>

#include "hypatia/core/error.h"
#include "hypatia/core/ndarray.h"

namespace hypatia {
namespace {

thread_local int t_queue = 0, t_pool = 0;
/// The calls entered on this thread, the outermost first: their queues, and the allocation pool
/// each found (restored when it leaves).
thread_local std::vector<std::pair<int, int>> t_calls;

}  // namespace

int current_queue() { return t_queue; }
void set_current_queue(int q) { t_queue = q; }
int allocation_pool() { return t_queue == 0 ? 0 : t_pool; }

size_t CachingAllocator::size_class(size_t bytes) {
  if (bytes == 0) bytes = 1;
  constexpr size_t kSmall = size_t{1} << 20;
  if (bytes <= kSmall) return (bytes + 511) / 512 * 512;
  const size_t p = std::bit_floor(bytes);  // p <= bytes < 2p
  const size_t quarter = p / 4;
  return (bytes + quarter - 1) / quarter * quarter;
}

std::shared_ptr<void> CachingAllocator::allocate(size_t bytes, int queue, int pool) {
  if (pool < 0) pool = queue;
  const size_t cls = size_class(bytes);
  void* p = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = free_.find({pool, cls});
    if (it != free_.end() && !it->second.empty()) {
      p = it->second.back();
      it->second.pop_back();
      stats_.cached -= cls;
      ++stats_.reuses;
      // Queue 0's buffer for another queue (a call inside a call): after queue 0's work so far,
      // which follows every queue's (its last users' on their streams included).
      if (pool == 0 && queue != 0 && raw_.order) raw_.order(queue, 0);
    }
  }
  if (!p) {
    p = raw_.alloc(cls);
    if (!p) {
      // Freeing device memory breaks a stream capture: it waits for another thread's, and the
      // capturing thread itself frees nothing (its recording fails, and its steps run again
      // outside it, where this path frees).
      std::unique_lock<std::mutex> exclusive = raw_.exclusive ? raw_.exclusive() : std::unique_lock<std::mutex>();
      if (!raw_.exclusive || exclusive.owns_lock()) {
        release_cached();
        p = raw_.alloc(cls);
        if (!p && raw_.relieve) {
          raw_.relieve();  // (what the holders let go of returns to the cache)
          release_cached();
          p = raw_.alloc(cls);
          std::lock_guard<std::mutex> lock(mu_);
          ++stats_.pressure;
        }
      }
    }
    if (!p) {
      const size_t free_bytes = raw_.free_bytes ? raw_.free_bytes() : 0;
      std::lock_guard<std::mutex> lock(mu_);
      fail<MemoryError>(raw_.name, ": out of device memory: ", bytes, " bytes requested (size class ", cls, "); ",
                        free_bytes, " bytes free on the device, ", stats_.in_use, " bytes in use by Hypatia's arrays, ",
                        stats_.cached, " cached (released before this retry, with the recorded device work of ",
                        "functions not running now)");
    }
    std::lock_guard<std::mutex> lock(mu_);
    ++stats_.raw_allocs;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    stats_.in_use += cls;
    stats_.peak = std::max(stats_.peak, stats_.in_use);
  }
  return std::shared_ptr<void>(p, Block{.allocator = this, .cls = cls, .owner = pool, .writer = queue, .readers = 0});
}

CachingAllocator::Block* CachingAllocator::block_of(const std::shared_ptr<void>& p) {
  return std::get_deleter<Block>(p);
}

void CachingAllocator::wait_for(uint32_t bits, int q) {
  bits &= ~((1u << q) | 1u);
  if (!bits || q == 0 || !raw_.order) [[likely]]
    return;
  for (int from = 1; bits; ++from, bits >>= 1)
    if (bits & 2u) raw_.order(q, from);
}

void CachingAllocator::reads(Block& b, int q) {
  std::lock_guard<std::mutex> lock(mu_);
  wait_for(1u << b.writer, q);
  if (b.writer != q && q != 0) b.readers |= 1u << q;
}

void CachingAllocator::writes(Block& b, int q) {
  std::lock_guard<std::mutex> lock(mu_);
  wait_for(b.readers | (1u << b.writer), q);
  b.writer = q;
  b.readers = 0;
}

void CachingAllocator::give_back(void* p, const Block& b) {
  std::lock_guard<std::mutex> lock(mu_);
  // Queue 0's later work waits for every queue's earlier work by itself (the legacy stream).
  if (b.owner != 0) wait_for(b.readers | (1u << b.writer), b.owner);
  free_[{b.owner, b.cls}].push_back(p);
  stats_.in_use -= b.cls;
  stats_.cached += b.cls;
}

void CachingAllocator::release_cached() {
  std::map<std::pair<int, size_t>, std::vector<void*>> all;
  {
    std::lock_guard<std::mutex> lock(mu_);
    all.swap(free_);
    stats_.cached = 0;
  }
  if (all.empty()) return;
  if (raw_.synchronize) raw_.synchronize();
  for (auto& [key, v] : all)
    for (void* p : v) raw_.free(p);
}

CachingAllocator::Stats CachingAllocator::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

void CachingAllocator::order(int into, int from) {
  if (into == 0 || from == 0 || into == from || !raw_.order) return;
  std::lock_guard<std::mutex> lock(mu_);
  raw_.order(into, from);
}

void AllocatorQueues::enter(int queue) {
  t_calls.emplace_back(queue, t_pool);
  if (t_calls.size() == 1) {
    t_queue = t_pool = queue;
    return;
  }
  // A call inside a call: on the outer queue, after its own queue's work; what it allocates
  // comes from queue 0's cache if the queues differ.
  if (queue != t_queue) {
    allocator_.order(t_queue, queue);
    t_pool = 0;
  }
}

void AllocatorQueues::leave() {
  const auto [queue, pool] = t_calls.back();
  t_calls.pop_back();
  t_pool = pool;
  if (t_calls.empty())
    t_queue = 0;
  else
    allocator_.order(queue, t_queue);  // (its own queue's later work after what it queued here)
}

void AllocatorQueues::use(const NDArray& a, bool write) {
  if (t_queue == 0 || !a.valid() || a.device().kind != kind_) return;
  CachingAllocator::Block* b = CachingAllocator::block_of(a.storage());
  if (b && b->allocator == &allocator_) {
    write ? allocator_.writes(*b, t_queue) : allocator_.reads(*b, t_queue);
    return;
  }
  const uint32_t given = given_.load(std::memory_order_relaxed);
  for (int q = 1; q < kMaxQueues; ++q)
    if (given & (1u << q)) allocator_.order(t_queue, q);
}

void AllocatorQueues::reads(const NDArray& a) { use(a, false); }
void AllocatorQueues::writes(const NDArray& a) { use(a, true); }

}  // namespace hypatia
