// Kernel registration of the subtensor family (reference and CPU).
#include "hypatia/backends/registry.h"
#include "hypatia/backends/subtensor_engine.h"

namespace hypatia {

void register_subtensor_cpu_kernels();

namespace {
using subtensor_engine::Resolved;

void subtensor_kernel(const Subtensor& op, const KernelArgs& args) {
  Resolved r = subtensor_engine::resolve(op.name(), op.spec, *args.in[0], args.in.subspan(1));
  *args.out[0] = r.view;
}

void advanced_subtensor_kernel(const AdvancedSubtensor& op, const KernelArgs& args) {
  Resolved r = subtensor_engine::resolve(op.name(), op.spec, *args.in[0], args.in.subspan(1));
  NDArray& out = prepare_output(*args.out[0], r.result_shape, args.in[0]->dtype());
  subtensor_engine::gather(r, out);
}

void inc_subtensor_kernel(const IncSubtensor& op, const KernelArgs& args) {
  NDArray& out = subtensor_engine::inc_subtensor_output(op, args);
  Resolved r = subtensor_engine::resolve(op.name(), op.spec, out, args.in.subspan(2));
  subtensor_engine::scatter(op.name(), r, *args.in[1], op.set_instead_of_inc);
}

}  // namespace

void register_subtensor_kernels() {
  register_simple_kernel<Subtensor>(kReferenceBackend, subtensor_kernel);
  register_simple_kernel<AdvancedSubtensor>(kReferenceBackend, advanced_subtensor_kernel);
  register_simple_kernel<IncSubtensor>(kReferenceBackend, inc_subtensor_kernel);
  register_subtensor_cpu_kernels();
}

}  // namespace hypatia
