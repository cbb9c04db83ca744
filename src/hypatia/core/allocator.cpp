#include "hypatia/core/allocator.h"

#include <array>
#include <bit>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <vector>

namespace hypatia {
namespace {

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kCache = false;  // let AddressSanitizer see every allocation and free
#else
constexpr bool kCache = true;
#endif

constexpr size_t kMaxCachedBytes = size_t{256} << 20;  // per thread
constexpr size_t kMaxPerClass = 8;
constexpr int kClasses = 4 * 48;

/// Size classes: multiples of 64 bytes up to 256, then four steps per power of two.
int size_class(size_t bytes, size_t* capacity) {
  if (bytes <= 256) {
    size_t c = bytes <= 64 ? 64 : (bytes + 63) / 64 * 64;
    *capacity = c;
    return static_cast<int>(c / 64) - 1;  // 0..3
  }
  size_t n = bytes - 1;
  int e = std::bit_width(n) - 1;  // 2^e <= n < 2^(e+1), e >= 8
  size_t step = size_t{1} << (e - 2);
  size_t sub = (n >> (e - 2)) & 3;
  *capacity = (4 + sub + 1) * step;
  return 4 + (e - 8) * 4 + static_cast<int>(sub);
}

struct ThreadCache;
/// The hot per-thread pointer: trivially constructible and in the initial-exec TLS model, so that
/// reading it costs one instruction instead of a __tls_get_addr call from this shared library.
struct TlsSlot {
  ThreadCache* cache;
  bool dead;
};
__attribute__((tls_model("initial-exec"))) thread_local TlsSlot tls_slot = {nullptr, false};

struct ThreadCache {
  std::array<std::vector<void*>, kClasses> lists;
  size_t cached = 0;
  ~ThreadCache() {
    for (auto& l : lists)
      for (void* p : l) std::free(p);
    tls_slot = {nullptr, true};
  }
};

[[gnu::noinline]] ThreadCache* init_cache() {
  if (tls_slot.dead) return nullptr;  // the thread is exiting
  // On the heap: an initial-exec variable puts the library's whole TLS block in glibc's static TLS
  // surplus, which is a few hundred bytes for libraries loaded by dlopen (Python's import of
  // hypatia._core); a 4.6 KB ThreadCache there makes the load fail.
  static thread_local std::unique_ptr<ThreadCache> c(new ThreadCache);
  tls_slot.cache = c.get();
  return c.get();
}

inline ThreadCache* cache() { return tls_slot.cache ? tls_slot.cache : init_cache(); }

}  // namespace

void* host_alloc(size_t bytes, size_t* capacity) {
  int cls = size_class(bytes, capacity);
  if (kCache && cls < kClasses) {
    if (ThreadCache* c = cache(); c && !c->lists[cls].empty()) {
      void* p = c->lists[cls].back();
      c->lists[cls].pop_back();
      c->cached -= *capacity;
      return p;
    }
  }
  return std::aligned_alloc(64, *capacity);
}

void host_free(void* p, size_t capacity) {
  if (!p) return;
  if (kCache) {
    size_t cap2 = 0;
    int cls = size_class(capacity, &cap2);
    ThreadCache* c = cache();
    if (c && cls < kClasses && cap2 == capacity && c->lists[cls].size() < kMaxPerClass &&
        c->cached + capacity <= kMaxCachedBytes) {
      c->lists[cls].push_back(p);
      c->cached += capacity;
      return;
    }
  }
  std::free(p);
}

void host_alloc_class_capacity(size_t bytes, size_t* capacity) { size_class(bytes, capacity); }

void host_cache_clear() {
  if (ThreadCache* c = cache()) {
    for (auto& l : c->lists) {
      for (void* p : l) std::free(p);
      l.clear();
    }
    c->cached = 0;
  }
}

}  // namespace hypatia
