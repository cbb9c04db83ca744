// The host allocator behind NDArray: 64-byte aligned buffers, cached per thread by size class so
// that a compiled function called repeatedly with the same shapes does not go to malloc.
#pragma once
#include <cstddef>
#include <new>

namespace hypatia {

/// Allocates at least `bytes` (64-byte aligned); `*capacity` receives the size class to pass back.
/// Returns null when memory is exhausted.
void* host_alloc(size_t bytes, size_t* capacity);
/// Returns a buffer from host_alloc (cached for reuse up to a per-thread limit).
void host_free(void* p, size_t capacity);
/// The capacity (size class) host_alloc would give for `bytes`.
void host_alloc_class_capacity(size_t bytes, size_t* capacity);
/// Frees every cached buffer of the calling thread.
void host_cache_clear();

/// Allocator on host_alloc's per-thread size classes, for small objects made on every call
/// (shared_ptr control blocks): a repeated call then allocates nothing from malloc.
template <class T>
struct HostCacheAllocator {
  using value_type = T;
  HostCacheAllocator() = default;
  template <class U>
  HostCacheAllocator(const HostCacheAllocator<U>&) {}
  T* allocate(size_t n) {
    size_t cap = 0;
    void* p = host_alloc(n * sizeof(T), &cap);
    if (!p) throw std::bad_alloc();
    return static_cast<T*>(p);
  }
  void deallocate(T* p, size_t n) {
    size_t cap = 0;
    host_alloc_class_capacity(n * sizeof(T), &cap);
    host_free(p, cap);
  }
  template <class U>
  bool operator==(const HostCacheAllocator<U>&) const {
    return true;
  }
};

}  // namespace hypatia
