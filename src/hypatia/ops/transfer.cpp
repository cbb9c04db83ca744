#include "hypatia/ops/transfer.h"

#include "hypatia/core/error.h"

namespace hypatia {
namespace {

std::vector<TensorType> one_input(const Op& op, const std::vector<Var>& in) {
  if (in.size() != 1) fail<TypeError>(op.name(), ": expected 1 input, got ", in.size());
  return {in[0]->type};
}

}  // namespace

std::string DeviceFromHost::name() const {
  return (device.kind == DeviceKind::Cuda ? "GpuFromHost<" : "DeviceFromHost<") + device.str() + ">";
}

std::vector<TensorType> DeviceFromHost::make_output_types(const std::vector<Var>& in) const {
  return one_input(*this, in);
}

std::vector<Var> DeviceFromHost::grad(const Apply&, const std::vector<Var>& g) const {
  return {host_from_device(g[0])};
}

std::vector<TensorType> HostFromDevice::make_output_types(const std::vector<Var>& in) const {
  return one_input(*this, in);
}

std::vector<Var> HostFromDevice::grad(const Apply& node, const std::vector<Var>& g) const {
  // The input was produced on a device by a DeviceFromHost (or a device node): send the gradient
  // there; a graph built by hand from a host variable gets the host's gradient.
  if (const Apply* src = node.inputs[0]->owner; src && typeid(*src->op) == typeid(DeviceFromHost))
    return {device_from_host(g[0], static_cast<const DeviceFromHost&>(*src->op).device)};
  return {g[0]};
}

Var device_from_host(Var x, Device device) {
  claim_device(device);
  return apply_op1(std::make_shared<DeviceFromHost>(device), {std::move(x)});
}
Var host_from_device(Var x) { return apply_op1(std::make_shared<HostFromDevice>(), {std::move(x)}); }

}  // namespace hypatia
