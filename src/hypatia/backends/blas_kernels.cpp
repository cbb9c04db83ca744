// Kernel registration of the blas family (reference and CPU).
#include "hypatia/backends/registry.h"

namespace hypatia {

void register_blas_kernels() {}

}  // namespace hypatia
