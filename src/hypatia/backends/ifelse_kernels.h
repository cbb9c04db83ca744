// IfElse's kernel (lazy: Kernel::run_lazy) for any backend: it reads the condition on the host
// (KernelTraits::host_inputs {0}), asks for the taken branch's values only and makes each output
// a view of one, so a device backend registers the same kernel: its branches' values stay on the
// device, and only the condition comes to the host.
#pragma once
#include <memory>

#include "hypatia/backends/registry.h"

namespace hypatia {

class IfElse;

std::unique_ptr<Kernel> make_ifelse_kernel(const IfElse& op);

}  // namespace hypatia
