#include "hypatia/core/cancel.h"

namespace hypatia {
namespace {
// Initial-exec: read on every node of every call; the general model costs a __tls_get_addr call
// from this shared library. (Eight bytes of glibc's static TLS surplus, like the allocator's slot.)
__attribute__((tls_model("initial-exec"))) thread_local const std::atomic<bool>* t_cancel_flag = nullptr;
}  // namespace

const std::atomic<bool>* current_cancel_flag() noexcept { return t_cancel_flag; }

void check_cancelled() {
  if (cancel_requested()) throw Cancelled("the call was interrupted (its cancel flag was set)");
}

CancelScope::CancelScope(const std::atomic<bool>* flag) noexcept : previous_(t_cancel_flag) { t_cancel_flag = flag; }

CancelScope::~CancelScope() { t_cancel_flag = previous_; }

}  // namespace hypatia
