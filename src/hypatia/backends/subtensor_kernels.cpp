// Kernel registration of the subtensor family (reference and CPU).
#include "hypatia/backends/registry.h"

namespace hypatia {

void register_subtensor_kernels() {}

}  // namespace hypatia
