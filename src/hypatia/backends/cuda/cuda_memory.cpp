#include "hypatia/backends/cuda/cuda_memory.h"

#include <bit>

#include "hypatia/backends/cuda/cuda_api.h"
#include "hypatia/core/device.h"
#include "hypatia/core/error.h"

namespace hypatia::cuda {

size_t CachingAllocator::size_class(size_t bytes) {
  if (bytes == 0) bytes = 1;
  constexpr size_t kSmall = size_t{1} << 20;
  if (bytes <= kSmall) return (bytes + 511) / 512 * 512;
  const size_t p = std::bit_floor(bytes);  // p <= bytes < 2p
  const size_t quarter = p / 4;
  return (bytes + quarter - 1) / quarter * quarter;
}

std::shared_ptr<void> CachingAllocator::allocate(size_t bytes) {
  const size_t cls = size_class(bytes);
  void* p = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = free_.find(cls);
    if (it != free_.end() && !it->second.empty()) {
      p = it->second.back();
      it->second.pop_back();
      stats_.cached -= cls;
      ++stats_.reuses;
    }
  }
  if (!p) {
    p = raw_.alloc(cls);
    if (!p) {
      release_cached();
      p = raw_.alloc(cls);
    }
    if (!p) {
      const size_t free_bytes = raw_.free_bytes ? raw_.free_bytes() : 0;
      std::lock_guard<std::mutex> lock(mu_);
      fail<MemoryError>("CUDA: out of device memory: ", bytes, " bytes requested (size class ", cls, "); ", free_bytes,
                        " bytes free on the device, ", stats_.in_use, " bytes in use by Hypatia's arrays, ",
                        stats_.cached, " cached (released before this retry)");
    }
    std::lock_guard<std::mutex> lock(mu_);
    ++stats_.raw_allocs;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    stats_.in_use += cls;
    stats_.peak = std::max(stats_.peak, stats_.in_use);
  }
  return std::shared_ptr<void>(p, [this, cls](void* q) { give_back(q, cls); });
}

void CachingAllocator::give_back(void* p, size_t cls) {
  std::lock_guard<std::mutex> lock(mu_);
  free_[cls].push_back(p);
  stats_.in_use -= cls;
  stats_.cached += cls;
}

void CachingAllocator::release_cached() {
  std::map<size_t, std::vector<void*>> all;
  {
    std::lock_guard<std::mutex> lock(mu_);
    all.swap(free_);
    stats_.cached = 0;
  }
  for (auto& [cls, v] : all)
    for (void* p : v) raw_.free(p);
}

CachingAllocator::Stats CachingAllocator::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

CachingAllocator& device_allocator() {
  static CachingAllocator* a = new CachingAllocator(CachingAllocator::Raw{
      .alloc = [](size_t n) -> void* {
        void* p = nullptr;
        if (cudaMalloc(&p, n) != cudaSuccess) {
          cudaGetLastError();
          return nullptr;
        }
        return p;
      },
      // cudaFree waits for the device: every queued reader of the buffer is done.
      .free = [](void* p) { cudaFree(p); },
      .free_bytes =
          [] {
            size_t f = 0, t = 0;
            if (cudaMemGetInfo(&f, &t) != cudaSuccess) cudaGetLastError();
            return f;
          },
  });
  return *a;
}

void register_cuda_memory() {
  DeviceMemory m;
  m.allocate = [](size_t bytes) -> std::shared_ptr<void> {
    require_available("CUDA allocation");
    return device_allocator().allocate(bytes);
  };
  m.copy_from_host = [](void* d, const void* s, size_t n) {
    if (n == 0) return;
    // From pageable memory the call returns once the source is staged: the caller may free it.
    check(cudaMemcpyAsync(d, s, n, cudaMemcpyHostToDevice, stream()), "copy to the device (cudaMemcpyAsync)");
  };
  m.copy_to_host = [](void* d, const void* s, size_t n) {
    if (n == 0) return;
    check(cudaMemcpyAsync(d, s, n, cudaMemcpyDeviceToHost, stream()), "copy to the host (cudaMemcpyAsync)");
    synchronize();
  };
  m.copy_on_device = [](void* d, const void* s, size_t n) {
    if (n == 0) return;
    check(cudaMemcpyAsync(d, s, n, cudaMemcpyDeviceToDevice, stream()), "copy on the device (cudaMemcpyAsync)");
  };
  register_device_memory(DeviceKind::Cuda, std::move(m));
}

}  // namespace hypatia::cuda
