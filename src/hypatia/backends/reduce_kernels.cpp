// Kernel registration of the reduce family (reference and CPU).
#include "hypatia/backends/reference/reduce_common.h"
#include "hypatia/backends/registry.h"

namespace hypatia {

void register_reduce_kernels() {
  using namespace reduce_detail;
  register_simple_kernel<Reduce>(kReferenceBackend, &reduce_reference);
  register_simple_kernel<ArgReduce>(kReferenceBackend, &arg_reduce_reference);
  register_simple_kernel<CumOp>(kReferenceBackend, &cum_op_reference);
  register_simple_kernel<Reduce>(kCpuBackend, &reduce_cpu);
  register_simple_kernel<ArgReduce>(kCpuBackend, &arg_reduce_cpu);
  register_simple_kernel<CumOp>(kCpuBackend, &cum_op_cpu);
}

}  // namespace hypatia
