#include "hypatia/backends/cuda/cuda_memory.h"

#include <cstring>

#include "hypatia/backends/backend.h"
#include "hypatia/backends/cuda/cuda_api.h"
#include "hypatia/core/device.h"
#include "hypatia/core/error.h"

namespace hypatia::cuda {

CachingAllocator& device_allocator() {
  static CachingAllocator* a = new CachingAllocator(CachingAllocator::Raw{
      .alloc = [](size_t n) -> void* {
        DeviceScope on_device;
        void* p = nullptr;
        if (cudaMalloc(&p, n) != cudaSuccess) {
          cudaGetLastError();
          return nullptr;
        }
        return p;
      },
      // (release_cached waits for the device first: cudaFree may not.)
      .free =
          [](void* p) {
            DeviceScope on_device;
            cudaFree(p);
          },
      .free_bytes =
          [] {
            DeviceScope on_device;
            size_t f = 0, t = 0;
            if (cudaMemGetInfo(&f, &t) != cudaSuccess) cudaGetLastError();
            return f;
          },
      .relieve = [] { relieve_memory_pressure(DeviceKind::Cuda); },
      .exclusive =
          [] { return recording() ? std::unique_lock<std::mutex>() : std::unique_lock<std::mutex>(capture_mutex()); },
      .order =
          [](int into, int from) {
            DeviceScope on_device;
            wait_queue(into, from);
          },
      .synchronize =
          [] {
            DeviceScope on_device;
            if (cudaDeviceSynchronize() != cudaSuccess) cudaGetLastError();
          },
      .name = "CUDA",
  });
  return *a;
}

namespace {

/// Small host-to-device copies go through a ring of pinned staging slots: the host copies into a
/// slot and queues the DMA, which then needs no synchronisation with the stream (a copy from
/// pageable memory may wait for the work queued before it: a call's index vectors or labels would
/// stall the GPU mid-step). A slot is reused once the event recorded after its copy has passed.
class Staging {
 public:
  static constexpr size_t kSlotBytes = 64 << 10;
  static constexpr int kSlots = 32;

  /// Queues the copy and returns true, or returns false (too big, or no pinned memory here).
  bool upload(void* dst, const void* src, size_t n) {
    if (n > kSlotBytes) return false;
    std::lock_guard<std::mutex> lock(mu_);
    if (!ready_ && !init()) return false;
    const int slot = next_;
    next_ = (next_ + 1) % kSlots;
    check(cudaEventSynchronize(events_[slot]), "staging slot wait");
    char* buf = base_ + static_cast<size_t>(slot) * kSlotBytes;
    std::memcpy(buf, src, n);
    check(cudaMemcpyAsync(dst, buf, n, cudaMemcpyHostToDevice, stream()), "copy to the device (cudaMemcpyAsync)");
    check(cudaEventRecord(events_[slot], stream()), "staging event");
    return true;
  }

 private:
  bool init() {
    if (failed_) return false;
    void* p = nullptr;
    if (cudaHostAlloc(&p, kSlotBytes * kSlots, cudaHostAllocDefault) != cudaSuccess) {
      cudaGetLastError();
      failed_ = true;
      return false;
    }
    base_ = static_cast<char*>(p);
    for (auto& e : events_) check(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "staging event");
    ready_ = true;
    return true;
  }

  std::mutex mu_;
  bool ready_ = false, failed_ = false;
  char* base_ = nullptr;
  cudaEvent_t events_[kSlots] = {};
  int next_ = 0;
};

Staging& staging() {
  static Staging* s = new Staging();  // kept for the process (its pinned buffer too)
  return *s;
}

thread_local std::vector<std::shared_ptr<void>>* t_sink = nullptr;

/// The pinned host words of the DeviceCheckBlocks: slots carved from pinned pages kept for the
/// process, reused once their block is gone.
class CheckSlots {
 public:
  static constexpr size_t kSlotBytes = DeviceCheckBlock::kWords * sizeof(long long), kPageSlots = 128;
  long long* take() {
    std::lock_guard<std::mutex> lock(mu_);
    if (free_.empty()) {
      void* p = nullptr;
      check(cudaHostAlloc(&p, kSlotBytes * kPageSlots, cudaHostAllocDefault), "pinned memory for device checks");
      for (size_t i = 0; i < kPageSlots; ++i)
        free_.push_back(static_cast<long long*>(p) + i * DeviceCheckBlock::kWords);
    }
    long long* s = free_.back();
    free_.pop_back();
    std::memset(s, 0, kSlotBytes);
    return s;
  }
  void give(long long* s) {
    std::lock_guard<std::mutex> lock(mu_);
    free_.push_back(s);
  }

 private:
  std::mutex mu_;
  std::vector<long long*> free_;
};

CheckSlots& check_slots() {
  static CheckSlots* s = new CheckSlots();  // kept for the process, as its pinned pages
  return *s;
}

}  // namespace

void DeviceCheckBlock::ensure() {
  if (host_) return;
  device_ = device_allocator().allocate(kWords * sizeof(long long));
  host_ = check_slots().take();  // (the device words are cleared before each kernel: clear())
}

DeviceCheckBlock::~DeviceCheckBlock() {
  if (!host_) return;
  // A copy queued into the host words may still be pending (on any queue): wait before the slot
  // is reused. (At exit the runtime may be gone: the slot is then never reused, and nothing may
  // throw here.)
  try {
    if (available()) {
      DeviceScope on_device;
      synchronize_queues();
    }
  } catch (...) {
    return;
  }
  check_slots().give(host_);
}

void DeviceCheckBlock::clear() {
  ensure();
  check(cudaMemsetAsync(device_.get(), 0, kWords * sizeof(long long), stream()),
        "clearing a device check (cudaMemsetAsync)");
}

bool DeviceCheckBlock::take_failure(long long (&words)[kWords]) {
  if (!host_ || host_[0] == 0) return false;
  std::memcpy(words, host_, sizeof(words));
  std::memset(host_, 0, sizeof(words));
  return true;
}

void DeviceCheckBlock::fetch() {
  ensure();
  check(cudaMemcpyAsync(host_, device_.get(), kWords * sizeof(long long), cudaMemcpyDeviceToHost, stream()),
        "reading a device check (cudaMemcpyAsync)");
}

void set_allocation_sink(std::vector<std::shared_ptr<void>>* sink) { t_sink = sink; }

namespace {

/// The allocator's queues, each outermost call made on the device this process drives.
class CudaQueues final : public CallQueues {
 public:
  int assign() override { return queues_.assign(); }
  void enter(int queue) override {
    t_before.push_back(enter_device());
    try {
      queues_.enter(queue);
    } catch (...) {
      leave_device(t_before.back());
      t_before.pop_back();
      throw;
    }
  }
  void leave() override {
    queues_.leave();
    leave_device(t_before.back());
    t_before.pop_back();
  }
  void reads(const NDArray& a) override { queues_.reads(a); }
  void writes(const NDArray& a) override { queues_.writes(a); }

 private:
  AllocatorQueues queues_{device_allocator(), DeviceKind::Cuda, [] { return available() ? assign_queue() : 0; }};
  /// Per nested call on this thread, the context to give back at its leave().
  static thread_local std::vector<ContextSwitch> t_before;
};
thread_local std::vector<ContextSwitch> CudaQueues::t_before;

}  // namespace

std::shared_ptr<CallQueues> make_cuda_queues() { return std::make_shared<CudaQueues>(); }

void register_cuda_memory() {
  DeviceMemory m;
  m.allocate = [](size_t bytes) -> std::shared_ptr<void> {
    require_available("CUDA allocation");
    DeviceScope on_device;
    std::shared_ptr<void> p = device_allocator().allocate(bytes, current_queue(), allocation_pool());
    if (t_sink) t_sink->push_back(p);
    return p;
  };
  // A recording cannot hold a transfer (its host side would not be read again when replayed):
  // the recording fails and the steps run instead (a kernel that transfers is not recordable).
  m.copy_from_host = [](void* d, const void* s, size_t n) {
    if (n == 0) return;
    DeviceScope on_device;
    if (recording()) {
      recording_refused("a copy to the device");
      fail<Error>("CUDA: a copy to the device cannot be recorded");
    }
    if (staging().upload(d, s, n)) return;
    // From pageable memory the call returns once the source is staged: the caller may free it.
    check(cudaMemcpyAsync(d, s, n, cudaMemcpyHostToDevice, stream()), "copy to the device (cudaMemcpyAsync)");
  };
  m.copy_to_host = [](void* d, const void* s, size_t n) {
    if (n == 0) return;
    DeviceScope on_device;
    if (recording()) {
      recording_refused("a copy to the host");
      fail<Error>("CUDA: a copy to the host cannot be recorded");
    }
    check(cudaMemcpyAsync(d, s, n, cudaMemcpyDeviceToHost, stream()), "copy to the host (cudaMemcpyAsync)");
    synchronize();
  };
  m.copy_on_device = [](void* d, const void* s, size_t n) {
    if (n == 0) return;
    DeviceScope on_device;
    check(cudaMemcpyAsync(d, s, n, cudaMemcpyDeviceToDevice, stream()), "copy on the device (cudaMemcpyAsync)");
  };
  m.synchronize = [] {
    if (!available()) return;
    DeviceScope on_device;
    // (In a call, its queue's work; outside calls, every queue's.)
    if (current_queue() != 0)
      synchronize();
    else
      synchronize_queues();
  };
  m.synchronize_device = [] {
    if (!available()) return;
    // A wait for the whole device breaks a capture: not recorded, and another thread's waited for.
    if (recording()) {
      recording_refused("a wait for the whole device");
      fail<Error>("CUDA: a wait for the whole device cannot be recorded");
    }
    std::lock_guard<std::mutex> lock(capture_mutex());
    DeviceScope on_device;
    check(cudaDeviceSynchronize(), "waiting for the device (cudaDeviceSynchronize)");
  };
  register_device_memory(DeviceKind::Cuda, std::move(m));
}

}  // namespace hypatia::cuda
