// Kernel registration of the nnet family (reference and CPU).
#include "hypatia/backends/registry.h"

namespace hypatia {

void register_nnet_kernels() {}

}  // namespace hypatia
