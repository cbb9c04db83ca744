// Placement (a step of function(), after the rewrites): for a backend whose device is not the
// host, every node whose kernel that backend has runs on the device, every other node on the
// host backend of its fallback chain, and transfers (GpuFromHost / HostFromGpu) are inserted only
// where a value crosses between them. debugprint and the profiler show them.
#pragma once
#include <cstddef>

#include "hypatia/graph/fgraph.h"

namespace hypatia {

class Backend;

/// Places `fg` (its outputs: `n_outputs` function outputs, then the updates' values) on
/// `backend`'s device and the host:
/// - function inputs and constants start on the host; a constant a device node reads becomes a
///   constant in device memory (copied once, here), never a transfer per call;
/// - a shared variable keeps its value's device; one whose value is on the host and that a
///   device node reads, or whose update the device computes, moves to the device now (its value
///   is copied there once: Theano's shared variables under device=cuda), so that a training loop
///   of shared parameters transfers nothing; one created with a target (SharedCell::
///   fixed_device) stays where it is, and its device readers get a transfer;
/// - a node reads its inputs on its own side, except the inputs its kernel reads on the host
///   (KernelTraits::host_inputs) and shape readers (any_device_inputs); one transfer per value
///   and side serves every reader;
/// - a function output computed on the device is copied to the host, unless it is the user's own
///   device_from_host() (Theano's way to keep a result on the GPU); an update's value goes to its
///   shared variable's device.
/// - with `device_io` (FunctionOptions::device_io), the function's inputs start on the device and
///   its outputs end there, as shared values do.
/// Does nothing for a host backend. Every node must have a kernel on the backend's chain
/// (function()'s place step checks that first, naming the op and the backends).
void place_on_devices(FunctionGraph& fg, const Backend& backend, size_t n_outputs, bool device_io = false);

}  // namespace hypatia
