// Scan's and ScanGrad's kernels for any backend: the loop runs on the host, the body (an inner program compiled
// for the backend that runs the node) once per step, and the loop's buffers (state rows, traces)
// live in the memory of that backend's device, touched only through LoopMemory. The CPU and
// reference backends register it with host memory; a device backend with its own copies, so
// that a scan on a GPU moves nothing between the host and the device per step (only the
// condition of an `until` loop is read back, once per step).
#pragma once
#include <functional>
#include <memory>
#include <string_view>
#include <vector>

#include "hypatia/backends/registry.h"
#include "hypatia/core/ndarray.h"

namespace hypatia {

class Scan;
class ScanGrad;
class Backend;

/// How a loop kernel reads and writes its buffers.
struct LoopMemory {
  /// Where the buffers are allocated (the node's inputs and outputs are there too).
  Device device = Device::host();
  /// dst = src: same shape and dtype, any strides on either side.
  std::function<void(const NDArray& dst, const NDArray& src)> copy;
  /// dst += src: same shape, dst writeable (gradients summed over the steps).
  std::function<void(const NDArray& dst, const NDArray& src)> add;
  /// dst = 0 (any strides).
  std::function<void(const NDArray& dst)> fill_zero;
  /// Whether the first element of a non-empty array is non-zero (a device waits for it).
  std::function<bool(const NDArray& a)> truthy;

  NDArray empty(const Shape& shape, DType dtype) const { return NDArray::empty(shape, dtype, device); }
  NDArray zeros(const Shape& shape, DType dtype) const {
    NDArray z = empty(shape, dtype);
    if (z.size() > 0) fill_zero(z);
    return z;
  }
};

/// Host memory: memcpy for contiguous rows, else an element loop.
LoopMemory host_loop_memory();
/// Scan's kernel and ScanGrad's (back-propagation through the steps) with their buffers in `memory`.
std::unique_ptr<Kernel> make_scan_kernel(const Scan& op, LoopMemory memory);
std::unique_ptr<Kernel> make_scan_grad_kernel(const ScanGrad& op, LoopMemory memory);
/// Whether `backend` runs every node of a body (the graph of `outputs`) on its device, not
/// through a host fallback (shape readers aside): a device backend runs a loop only then, else
/// the node and its body run on the host.
bool graph_runs_on_device(const Backend& backend, const std::vector<Var>& outputs);
/// Registers on the device backend named `backend` the control flow a device backend runs:
/// Scan and ScanGrad with their buffers in `memory()` (the loops whose bodies run on its device,
/// graph_runs_on_device; the step count read on the host) and IfElse (ifelse_kernels.h: the
/// condition read on the host).
void register_device_control_flow(std::string_view backend, std::function<LoopMemory()> memory);

}  // namespace hypatia
