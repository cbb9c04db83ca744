// The one explicit list of kernel families. A family registers its reference and CPU kernels.
#include "hypatia/backends/registry.h"

namespace hypatia {

void register_elemwise_kernels();
void register_shape_kernels();
void register_subtensor_kernels();
void register_reduce_kernels();
void register_nnet_kernels();
void register_blas_kernels();
void register_grad_kernels();
void register_composite_kernels();
void register_print_kernels();
void register_sort_kernels();

void register_all_kernels() {
  register_elemwise_kernels();
  register_shape_kernels();
  register_subtensor_kernels();
  register_reduce_kernels();
  register_nnet_kernels();
  register_blas_kernels();
  register_grad_kernels();
  register_composite_kernels();
  register_print_kernels();
  register_sort_kernels();
}

}  // namespace hypatia
