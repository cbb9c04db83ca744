// Kernel registration of the reduce family (reference and CPU).
#include "hypatia/backends/reference/reduce_common.h"
#include "hypatia/backends/registry.h"

namespace hypatia {

void register_reduce_kernels() {
  using namespace reduce_detail;
  register_simple_kernel<Reduce>(Backend::Reference, &reduce_reference);
  register_simple_kernel<ArgReduce>(Backend::Reference, &arg_reduce_reference);
  register_simple_kernel<CumOp>(Backend::Reference, &cum_op_reference);
  register_simple_kernel<Reduce>(Backend::Cpu, &reduce_cpu);
  register_simple_kernel<ArgReduce>(Backend::Cpu, &arg_reduce_cpu);
  register_simple_kernel<CumOp>(Backend::Cpu, &cum_op_cpu);
}

}  // namespace hypatia
