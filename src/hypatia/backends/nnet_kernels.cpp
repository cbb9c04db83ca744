// Kernel registration of the nnet family (reference and CPU).
#include "hypatia/backends/reference/nnet_common.h"
#include "hypatia/backends/registry.h"

namespace hypatia {

void register_nnet_kernels() {
  using namespace nnet_detail;
  register_simple_kernel<Softmax>(kReferenceBackend, &softmax_reference);
  register_simple_kernel<CrossentropyCategorical1Hot>(kReferenceBackend, &crossentropy_1hot_reference);
  register_simple_kernel<CrossentropyCategorical1HotGrad>(kReferenceBackend, &crossentropy_1hot_grad_reference);
  register_simple_kernel<CheckLabels>(kReferenceBackend, &check_labels_kernel);
  register_xent_kernel<CrossentropySoftmax1HotWithBias>(kReferenceBackend, &crossentropy_softmax_reference, 1);
  register_xent_kernel<CrossentropySoftmax1HotWithBiasDx>(kReferenceBackend, &crossentropy_softmax_dx_reference, 0);
  register_simple_kernel<Softmax>(kCpuBackend, &softmax_cpu);
  register_xent_kernel<CrossentropySoftmax1HotWithBias>(kCpuBackend, &crossentropy_softmax_cpu, 1);
  register_xent_kernel<CrossentropySoftmax1HotWithBiasDx>(kCpuBackend, &crossentropy_softmax_dx_cpu, 0);
}

}  // namespace hypatia
