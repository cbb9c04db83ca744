#include "hypatia/core/cancel.h"

namespace hypatia {
namespace detail {

constinit __attribute__((tls_model("initial-exec"))) thread_local const std::atomic<bool>* t_cancel_flag = nullptr;

void throw_cancelled() { throw Cancelled("the call was interrupted (its cancel flag was set)"); }

}  // namespace detail

CancelScope::CancelScope(const std::atomic<bool>* flag) noexcept : previous_(detail::t_cancel_flag) {
  detail::t_cancel_flag = flag;
}

CancelScope::~CancelScope() { detail::t_cancel_flag = previous_; }

}  // namespace hypatia
