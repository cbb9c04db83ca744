// Kernel registration of the elemwise family (reference and CPU).
#include "hypatia/backends/registry.h"

namespace hypatia {

void register_elemwise_reference_kernels();
void register_elemwise_cpu_kernels();

void register_elemwise_kernels() {
  register_elemwise_reference_kernels();
  register_elemwise_cpu_kernels();
}

}  // namespace hypatia
