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

/// The flag the calling thread's current call obeys (null: the call cannot be cancelled).
const std::atomic<bool>* current_cancel_flag() noexcept;

/// Whether the calling thread's current call was asked to stop. A relaxed load: cheap enough for
/// every chunk of a parallel loop.
inline bool cancel_requested() noexcept {
  const std::atomic<bool>* f = current_cancel_flag();
  return f != nullptr && f->load(std::memory_order_relaxed);
}

/// Throws Cancelled when the calling thread's current call was asked to stop.
void check_cancelled();

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
