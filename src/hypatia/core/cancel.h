// Cancelling a running call: a flag that another thread or a signal handler sets, checked by the
// runtime between nodes and by parallel kernels between chunks of work.
#pragma once
#include <atomic>

#include "hypatia/core/error.h"

namespace hypatia {

/// Thrown (by the runtime, on the calling thread) when a call stops because its cancel flag was
/// set; Python raises KeyboardInterrupt for it. A cancelled call changes no shared variable.
class Cancelled : public Error {
 public:
  using Error::Error;
};

namespace detail {
/// The calling thread's cancel flag (set by CancelScope). Initial-exec and read inline: the
/// runtime reads it around every node of every call (through a call into the library and a
/// __tls_get_addr it cost a few nanoseconds each time). Eight bytes of glibc's static TLS surplus.
extern constinit __attribute__((tls_model("initial-exec"))) thread_local const std::atomic<bool>* t_cancel_flag;
[[noreturn]] void throw_cancelled();
}  // namespace detail

/// The flag the calling thread's current call obeys (null: the call cannot be cancelled).
inline const std::atomic<bool>* current_cancel_flag() noexcept { return detail::t_cancel_flag; }

/// Whether the calling thread's current call was asked to stop. A relaxed load: cheap enough for
/// every chunk of a parallel loop.
inline bool cancel_requested() noexcept {
  const std::atomic<bool>* f = current_cancel_flag();
  return f != nullptr && f->load(std::memory_order_relaxed);
}

/// Throws Cancelled when the calling thread's current call was asked to stop.
inline void check_cancelled() {
  if (cancel_requested()) detail::throw_cancelled();
}

/// Makes `flag` the calling thread's cancel flag for the scope's lifetime (scopes nest; the
/// previous flag comes back at the end). A parallel kernel reads the caller's flag once and hands
/// it to its workers.
class CancelScope {
 public:
  explicit CancelScope(const std::atomic<bool>* flag) noexcept;
  ~CancelScope();
  CancelScope(const CancelScope&) = delete;
  CancelScope& operator=(const CancelScope&) = delete;

 private:
  const std::atomic<bool>* previous_;
};

}  // namespace hypatia
