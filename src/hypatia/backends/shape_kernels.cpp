// Kernel registration of the shape family (reference and CPU).
#include "hypatia/backends/registry.h"

namespace hypatia {

void register_shape_kernels() {}

}  // namespace hypatia
