// Transfers between devices as graph ops: DeviceFromHost (Theano's GpuFromHost) copies a host
// array to a device, HostFromDevice (HostFromGpu) copies it back. The placement pass of a device
// backend inserts them where values cross; debugprint and the profiler show them. Their kernels
// are host code calling the device's copy functions (core/device.h), registered on the CPU and
// reference backends.
#pragma once
#include "hypatia/core/device.h"
#include "hypatia/graph/graph.h"

namespace hypatia {

class DeviceFromHost : public OpWithProps<DeviceFromHost> {
 public:
  explicit DeviceFromHost(Device to) : device(to) {}
  Device device;
  auto props() const { return std::make_tuple(static_cast<int>(device.kind), static_cast<int>(device.index)); }
  /// "GpuFromHost<cuda:0>" for a CUDA device (Theano's name), "DeviceFromHost<...>" otherwise.
  std::string name() const override;
  std::vector<TensorType> make_output_types(const std::vector<Var>& in) const override;
  std::vector<ShapeVars> infer_shape(const Apply&, const std::vector<ShapeVars>& in) const override { return in; }
  std::vector<Var> grad(const Apply& node, const std::vector<Var>& g) const override;
  bool moves_between_devices() const override { return true; }
};

class HostFromDevice : public OpWithProps<HostFromDevice> {
 public:
  auto props() const { return std::make_tuple(); }
  /// "HostFromGpu" (Theano's name).
  std::string name() const override { return "HostFromGpu"; }
  std::vector<TensorType> make_output_types(const std::vector<Var>& in) const override;
  std::vector<ShapeVars> infer_shape(const Apply&, const std::vector<ShapeVars>& in) const override { return in; }
  /// The gradient goes back to the device the input came from (placed by the device backend).
  std::vector<Var> grad(const Apply& node, const std::vector<Var>& g) const override;
  bool moves_between_devices() const override { return true; }
  // No view_map: the output is always a fresh host array (a host input is copied), so an
  // in-place host node may overwrite it (placement puts transfers under nodes the in-place
  // rewrite already made destructive).
};

/// x copied to `device` / back to the host.
Var device_from_host(Var x, Device device);
Var host_from_device(Var x);

}  // namespace hypatia
