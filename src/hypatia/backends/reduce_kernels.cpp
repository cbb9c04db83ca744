// Kernel registration of the reduce family (reference and CPU).
#include "hypatia/backends/registry.h"

namespace hypatia {

void register_reduce_kernels() {}

}  // namespace hypatia
