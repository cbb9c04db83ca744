// The CUDA backend's caching allocator (backends/cuda/cuda_memory.h) on host stand-ins, and the
// memory-pressure handlers: no GPU needed.
#include <string>
#include <vector>

#include "hypatia/backends/cuda/cuda_memory.h"
#include "test_cuda_util.h"

namespace hypatia {
namespace {

using testing::error_of;

TEST(CudaAllocator, SizeClassesReuseAndPressure) {
  EXPECT_EQ(CachingAllocator::size_class(1), 512u);
  EXPECT_EQ(CachingAllocator::size_class(513), 1024u);
  EXPECT_EQ(CachingAllocator::size_class(1 << 20), size_t{1} << 20);
  EXPECT_EQ(CachingAllocator::size_class((1 << 20) + 1), (size_t{1} << 20) + (size_t{1} << 18));
  EXPECT_EQ(CachingAllocator::size_class(size_t{3} << 30), size_t{3} << 30);
  // Host stand-ins with a budget of 4 MiB.
  struct Pool {
    size_t used = 0, budget = 4 << 20;
    int allocs = 0, frees = 0;
    std::map<void*, size_t> live;
  } pool;
  CachingAllocator a(CachingAllocator::Raw{.alloc = [&](size_t n) -> void* {
                                             if (pool.used + n > pool.budget) return nullptr;
                                             void* p = std::malloc(n);
                                             pool.used += n;
                                             pool.live[p] = n;
                                             ++pool.allocs;
                                             return p;
                                           },
                                           .free =
                                               [&](void* p) {
                                                 pool.used -= pool.live.at(p);
                                                 pool.live.erase(p);
                                                 std::free(p);
                                                 ++pool.frees;
                                               },
                                           .free_bytes = [&] { return pool.budget - pool.used; }});
  {
    auto b1 = a.allocate(1000);
    EXPECT_EQ(a.stats().in_use, 1024u);
  }
  EXPECT_EQ(a.stats().cached, 1024u);
  {
    auto b2 = a.allocate(900);  // the same size class: served from the cache
    EXPECT_EQ(a.stats().reuses, 1u);
    EXPECT_EQ(pool.allocs, 1);
  }
  {
    auto big = a.allocate(3 << 20);
    EXPECT_EQ(pool.allocs, 2);
  }
  // 3 MiB cached + 1 KiB: a 2 MiB request only fits once the cache is released.
  auto c = a.allocate(2 << 20);
  EXPECT_GE(pool.frees, 1);
  EXPECT_EQ(a.stats().cached, 0u);
  std::string msg = error_of<MemoryError>([&] { auto d = a.allocate(3 << 20); });
  EXPECT_NE(msg.find("3145728 bytes requested"), std::string::npos) << msg;
  EXPECT_NE(msg.find("bytes free on the device"), std::string::npos) << msg;
  EXPECT_NE(msg.find("in use by Hypatia's arrays"), std::string::npos) << msg;
  c.reset();
  a.release_cached();
  EXPECT_EQ(pool.used, 0u);
}

TEST(CudaAllocator, OutOfMemoryAsksOtherHoldersToLetGoAndRetries) {
  // Host stand-ins with a budget of 4 MiB; `held` stands for a recording of an idle function
  // (its buffers came from this allocator), which the pressure handler drops.
  size_t used = 0;
  std::map<void*, size_t> live;
  std::vector<std::shared_ptr<void>> held;
  int relieved = 0;
  CachingAllocator a(CachingAllocator::Raw{.alloc = [&](size_t n) -> void* {
                                             if (used + n > (4u << 20)) return nullptr;
                                             void* p = std::malloc(n);
                                             used += n;
                                             live[p] = n;
                                             return p;
                                           },
                                           .free =
                                               [&](void* p) {
                                                 used -= live.at(p);
                                                 live.erase(p);
                                                 std::free(p);
                                               },
                                           .free_bytes = [&] { return (4u << 20) - used; },
                                           .relieve =
                                               [&] {
                                                 ++relieved;
                                                 held.clear();
                                               }});
  held.push_back(a.allocate(3 << 20));
  // 3 MiB held, nothing cached: a 2 MiB request fits only once the holder lets go.
  auto b = a.allocate(2 << 20);
  EXPECT_EQ(relieved, 1);
  EXPECT_EQ(a.stats().pressure, 1u);
  EXPECT_TRUE(held.empty());
  // Nothing more to give: the error says what was tried.
  std::string msg = error_of<MemoryError>([&] { auto c = a.allocate(3 << 20); });
  EXPECT_EQ(relieved, 2);
  EXPECT_NE(msg.find("with the recorded device work of functions not running now"), std::string::npos) << msg;
  b.reset();
  a.release_cached();
  EXPECT_EQ(used, 0u);
  // A thread that captures a recording frees nothing (freeing would break the capture): its lock
  // is empty, and the allocation fails at once (the recording fails; its steps run again).
  CachingAllocator capturing(CachingAllocator::Raw{.alloc = [&](size_t n) -> void* { return nullptr; },
                                                   .free = [&](void* p) { ADD_FAILURE() << "freed while capturing"; },
                                                   .free_bytes = [] { return size_t{0}; },
                                                   .relieve = [&] { ++relieved; },
                                                   .exclusive = [] { return std::unique_lock<std::mutex>(); }});
  EXPECT_ERROR(MemoryError, capturing.allocate(100), "out of device memory");
  EXPECT_EQ(relieved, 2);
  EXPECT_EQ(capturing.stats().pressure, 0u);
}

TEST(CudaAllocator, BuffersStayWithTheirQueueAndOtherQueuesAreWaitedFor) {
  // Host stand-ins; `order` notes each "queue `into` waits for `from`'s work so far".
  int allocs = 0, syncs = 0;
  std::vector<std::pair<int, int>> waits;
  CachingAllocator a(CachingAllocator::Raw{.alloc = [&](size_t n) -> void* {
                                             ++allocs;
                                             return std::malloc(n);
                                           },
                                           .free = [](void* p) { std::free(p); },
                                           .order = [&](int into, int from) { waits.emplace_back(into, from); },
                                           .synchronize = [&] { ++syncs; }});
  using W = std::vector<std::pair<int, int>>;
  // A buffer freed by queue 1 goes back to queue 1's cache: queue 2 gets a new one (its work could
  // run before queue 1's last reader), queue 1 the cached one.
  void* first = a.allocate(1000, 1).get();
  { auto b = a.allocate(1000, 2); }
  EXPECT_EQ(allocs, 2);
  {
    auto b = a.allocate(1000, 1);
    EXPECT_EQ(b.get(), first);
  }
  EXPECT_EQ(allocs, 2);
  EXPECT_TRUE(waits.empty());
  // A value queue 1 made: queue 2 reads it after queue 1's work; queue 1 itself waits for nothing.
  std::shared_ptr<void> v = a.allocate(4096, 1);
  CachingAllocator::Block* b = CachingAllocator::block_of(v);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(CachingAllocator::block_of(std::shared_ptr<void>(v, static_cast<char*>(v.get()) + 8)), b);
  EXPECT_EQ(CachingAllocator::block_of(std::make_shared<int>(1)), nullptr);
  a.reads(*b, 1);
  EXPECT_TRUE(waits.empty());
  a.reads(*b, 2);
  a.reads(*b, 3);
  EXPECT_EQ(waits, (W{{2, 1}, {3, 1}}));
  // Queue 2 writes it in place: after queue 1 (its writer) and queue 3 (a reader since).
  waits.clear();
  a.writes(*b, 2);
  EXPECT_EQ(waits, (W{{2, 1}, {2, 3}}));
  // Now queue 1 reads what queue 2 wrote; queue 0 (outside calls: the legacy stream, ordered
  // with every queue by CUDA) is never waited for, nor does it wait.
  waits.clear();
  a.reads(*b, 1);
  a.reads(*b, 0);
  EXPECT_EQ(waits, (W{{1, 2}}));
  // Freed, it returns to queue 1's cache once queue 1 waits for queue 2 (its last writer).
  waits.clear();
  v.reset();
  EXPECT_EQ(waits, (W{{1, 2}}));
  // A buffer of queue 0 that a function's queue wrote: freed without waits (queue 0's later work
  // waits for every queue by itself).
  waits.clear();
  std::shared_ptr<void> z = a.allocate(512, 0);
  void* const zp = z.get();
  a.writes(*CachingAllocator::block_of(z), 4);
  z.reset();
  EXPECT_TRUE(waits.empty());
  // Reused outside calls (queue 0) it needs none; handed from queue 0's cache to queue 3 (a call
  // inside a call allocates from queue 0's cache), queue 3 first waits for queue 0's work so far,
  // which on the device follows every queue's (queue 4's write included).
  z = a.allocate(512, 0);
  EXPECT_EQ(z.get(), zp);
  z.reset();
  EXPECT_TRUE(waits.empty());
  z = a.allocate(512, 3, /*pool=*/0);
  EXPECT_EQ(z.get(), zp);
  EXPECT_EQ(waits, (W{{3, 0}}));
  z.reset();
  // The cache is freed after the device's queued work (once), and not waited for when empty.
  EXPECT_EQ(syncs, 0);
  a.release_cached();
  EXPECT_EQ(syncs, 1);
  a.release_cached();
  EXPECT_EQ(syncs, 1);
}

TEST(CudaAllocator, ImportedBuffersWaitForEveryQueueAndACallInsideACallStaysInOrder) {
  std::vector<std::pair<int, int>> waits;
  CachingAllocator a(CachingAllocator::Raw{.alloc = [](size_t n) { return std::malloc(n); },
                                           .free = [](void* p) { std::free(p); },
                                           .order = [&](int into, int from) { waits.emplace_back(into, from); }});
  int next = 0;
  AllocatorQueues q(a, DeviceKind::Cuda, [&] { return ++next; });
  using W = std::vector<std::pair<int, int>>;
  const int f = q.assign(), g = q.assign(), h = q.assign();  // 1, 2, 3
  // A buffer of the device that is not the allocator's (imported): after every queue given out.
  void* mem = std::malloc(64);
  const NDArray imported = NDArray::wrap(std::shared_ptr<void>(mem, std::free), static_cast<std::byte*>(mem), {8}, {8},
                                         DType::Float64, Device::cuda());
  q.enter(g);
  q.reads(imported);
  EXPECT_EQ(waits, (W{{g, f}, {g, h}}));
  // The allocator's own buffer of this queue: nothing; a host array: nothing.
  waits.clear();
  q.writes(NDArray::wrap(a.allocate(64, g), nullptr, {0}, {8}, DType::Float64, Device::cuda()));
  q.reads(NDArray::zeros({2}, DType::Float64));
  EXPECT_TRUE(waits.empty());
  // f called inside g's call: on g's queue, after f's earlier work, and f's later work after it;
  // what it allocates comes from (and returns to) queue 0's cache, written by g's queue.
  EXPECT_EQ(allocation_pool(), g);
  q.enter(f);
  EXPECT_EQ(current_queue(), g);
  EXPECT_EQ(allocation_pool(), 0);
  {
    auto kept = a.allocate(64, current_queue(), allocation_pool());
    const CachingAllocator::Block* b = CachingAllocator::block_of(kept);
    EXPECT_EQ(b->owner, 0);
    EXPECT_EQ(b->writer, g);
  }
  q.enter(g);  // (g inside f inside g: same queue, same pool)
  EXPECT_EQ(allocation_pool(), 0);
  q.leave();
  q.leave();
  EXPECT_EQ(allocation_pool(), g);
  EXPECT_EQ(waits, (W{{g, f}, {f, g}}));
  EXPECT_EQ(current_queue(), g);
  q.leave();
  EXPECT_EQ(current_queue(), 0);
  // Outside calls nothing is ordered (queue 0 is ordered with every queue by CUDA).
  waits.clear();
  q.reads(imported);
  EXPECT_TRUE(waits.empty());
  a.release_cached();
}

TEST(MemoryPressure, HandlersRunForEachEventAndNotAfterTheyAreRemoved) {
  std::vector<DeviceKind> seen;
  const uint64_t count0 = memory_pressure_count(DeviceKind::Cuda), host0 = memory_pressure_count(DeviceKind::Host);
  const uint64_t id = add_memory_pressure_handler([&](DeviceKind k) {
    seen.push_back(k);
    relieve_memory_pressure(k);  // pressure from inside a handler: counted, no handler runs again
  });
  relieve_memory_pressure(DeviceKind::Cuda);
  EXPECT_EQ(seen, std::vector<DeviceKind>{DeviceKind::Cuda});
  EXPECT_EQ(memory_pressure_count(DeviceKind::Cuda), count0 + 2);
  EXPECT_EQ(memory_pressure_count(DeviceKind::Host), host0);
  remove_memory_pressure_handler(id);
  relieve_memory_pressure(DeviceKind::Cuda);
  EXPECT_EQ(seen.size(), 1u);
}

}  // namespace
}  // namespace hypatia
