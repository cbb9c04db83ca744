// The host allocator behind NDArray: 64-byte aligned buffers, cached per thread by size class so
// that a compiled function called repeatedly with the same shapes does not go to malloc.
#pragma once
#include <cstddef>

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

}  // namespace hypatia
