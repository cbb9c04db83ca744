"""Transfers between the host and the GPU as graph nodes (Theano's GpuFromHost and HostFromGpu).

``gpu_from_host(y)`` as a function output keeps the result on the GPU (placement passes a value
the GPU computed straight through); ``host_from_gpu(y)`` brings a value back.

``as_cuda_ndarray_variable(x)`` and ``gpu_contiguous(x)`` are what a Python op's make_node wraps
its inputs in to run on the GPU (seed 001's PyCUDA op): a Python op whose inputs are device values
runs on the device, its perform or thunk gets C-contiguous GpuArrays (``.gpudata`` is the device
address a PyCUDA or CuPy kernel takes) and gives GpuArrays back (``CudaNdarray.zeros(shape)``)."""
from hypatia import _core
from hypatia._convert import as_tensor_variable
from hypatia._core import GpuFromHost, HostFromGpu  # noqa: F401  (the ops' classes)
from hypatia.configparser import config


def _target():
    d = str(config.device)
    return d if d.startswith("cuda") else "cuda"


def gpu_from_host(x):
    """x copied to the process's GPU (``config.device``'s, or the one in use; cuda0 by default)."""
    return _core.device_from_host(as_tensor_variable(x), _target())


def host_from_gpu(x):
    """x copied back to the host."""
    return _core.host_from_device(as_tensor_variable(x))


def _on_device(v):
    owner = v.owner
    return owner is not None and isinstance(owner.op, GpuFromHost)


def as_cuda_ndarray_variable(x):
    """x as a value on the GPU: itself when it is one already (a gpu_from_host result), else
    gpu_from_host(x) (Theano's; any dtype here, where Theano's old backend took float32 only)."""
    v = as_tensor_variable(x)
    return v if _on_device(v) else gpu_from_host(v)


def gpu_contiguous(x):
    """x on the GPU, for code that reads its buffer as C-contiguous (Theano's GpuContiguous). The
    inputs of a Python op that runs on the GPU are C-contiguous already (its kernel copies a
    strided view), so this is as_cuda_ndarray_variable."""
    return as_cuda_ndarray_variable(x)
