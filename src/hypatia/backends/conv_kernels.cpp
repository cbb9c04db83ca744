// Kernel registration of the convolution family (reference and CPU).
#include "hypatia/backends/reference/conv_common.h"

namespace hypatia {

void register_conv_kernels() {
  using namespace conv_detail;
  register_simple_kernel<Conv2d>(kReferenceBackend, &conv2d_reference);
  register_simple_kernel<Conv2dGradInputs>(kReferenceBackend, &conv2d_grad_inputs_reference);
  register_simple_kernel<Conv2dGradWeights>(kReferenceBackend, &conv2d_grad_weights_reference);
  register_simple_kernel<Conv2d>(kCpuBackend, &conv2d_cpu);
  register_simple_kernel<Conv2dGradInputs>(kCpuBackend, &conv2d_grad_inputs_cpu);
  register_simple_kernel<Conv2dGradWeights>(kCpuBackend, &conv2d_grad_weights_cpu);
}

}  // namespace hypatia
