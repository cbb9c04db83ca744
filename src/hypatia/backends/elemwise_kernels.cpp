// Kernel registration of the elemwise family (reference and CPU).
#include "hypatia/backends/registry.h"

namespace hypatia {

void register_elemwise_kernels() {}

}  // namespace hypatia
