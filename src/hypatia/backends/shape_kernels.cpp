// Kernel registration of the shape family (reference and CPU).
#include "hypatia/backends/registry.h"
#include "hypatia/backends/shape_kernels_impl.h"

namespace hypatia {

void register_shape_kernels() {
  register_shape_view_kernels();
  register_shape_copy_kernels();
}

}  // namespace hypatia
