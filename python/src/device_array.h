// hypatia.gpuarray.GpuArray: an array in a device's memory, as Python sees it (Theano's
// CudaNdarray / pygpu's GpuArray). A function output kept on the device (gpu_from_host under
// Out(borrow=True)) and get_value(return_internal_type=True) give one; numpy.asarray copies it
// to the host; torch, CuPy and JAX take it without a copy (DLPack, __cuda_array_interface__);
// a function input that only transfers read accepts it as it is.
#pragma once
#include <nanobind/nanobind.h>

#include "hypatia/hypatia.h"

namespace hypatia::python {
namespace nb = nanobind;

struct GpuArray {
  NDArray array;  // never on the host
};

void init_device_array(nb::module_& m);
/// A new GpuArray object holding `a` (an array on a device); nullptr with a Python error set
/// on failure.
PyObject* wrap_device_array(const NDArray& a);
/// The array of `obj` when it is a GpuArray, else null.
const NDArray* device_array_of(PyObject* obj);

}  // namespace hypatia::python
