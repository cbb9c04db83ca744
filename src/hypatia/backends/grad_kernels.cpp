// Kernels of the gradient-helper ops (disconnected_grad, grad_clip): identities in the forward pass.
#include "hypatia/backends/registry.h"

namespace hypatia {

void register_grad_kernels() {}

}  // namespace hypatia
