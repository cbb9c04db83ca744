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
  register_simple_kernel<Conv3d>(kReferenceBackend, &conv3d_reference);
  register_simple_kernel<Conv3dGradInputs>(kReferenceBackend, &conv3d_grad_inputs_reference);
  register_simple_kernel<Conv3dGradWeights>(kReferenceBackend, &conv3d_grad_weights_reference);
  register_simple_kernel<Conv3d>(kCpuBackend, &conv3d_cpu);
  register_simple_kernel<Conv3dGradInputs>(kCpuBackend, &conv3d_grad_inputs_cpu);
  register_simple_kernel<Conv3dGradWeights>(kCpuBackend, &conv3d_grad_weights_cpu);
}

}  // namespace hypatia
