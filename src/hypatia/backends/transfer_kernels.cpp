// Kernels of the transfer ops (host code calling the device's copy functions), on the host
// backends: a device backend's placement pass puts its transfers on the host side of the edge.
#include "hypatia/backends/registry.h"
#include "hypatia/ops/transfer.h"

namespace hypatia {
namespace {

void device_from_host_kernel(const DeviceFromHost& op, const KernelArgs& a) {
  // An argument already on the device (a function input that only transfers read) is copied
  // there: the output is a fresh buffer, which device nodes may overwrite in place.
  if (a.in[0]->device() == op.device) {
    *a.out[0] = a.in[0]->copy();
    return;
  }
  a.in[0]->require_host(op.name());
  *a.out[0] = a.in[0]->to_device(op.device);
}

void host_from_device_kernel(const HostFromDevice& op, const KernelArgs& a) {
  // A host input (a graph built by hand) is copied: the output is never a view (the op has no
  // view_map, so a node may overwrite it in place).
  (void)op;
  *a.out[0] = a.in[0]->to_device(Device::host());
}

}  // namespace

void register_transfer_kernels() {
  for (std::string_view b : {kReferenceBackend, kCpuBackend}) {
    register_simple_kernel<DeviceFromHost>(b, device_from_host_kernel);
    register_simple_kernel<HostFromDevice>(b, host_from_device_kernel);
  }
}

}  // namespace hypatia
