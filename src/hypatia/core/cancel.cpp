#include "hypatia/core/cancel.h"

namespace hypatia {
namespace {
thread_local const std::atomic<bool>* t_cancel_flag = nullptr;
}  // namespace

const std::atomic<bool>* current_cancel_flag() noexcept { return t_cancel_flag; }

void check_cancelled() {
  if (cancel_requested()) throw Cancelled("the call was interrupted (its cancel flag was set)");
}

CancelScope::CancelScope(const std::atomic<bool>* flag) noexcept : previous_(t_cancel_flag) { t_cancel_flag = flag; }

CancelScope::~CancelScope() { t_cancel_flag = previous_; }

}  // namespace hypatia
