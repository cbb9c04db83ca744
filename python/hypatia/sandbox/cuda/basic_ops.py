"""Transfers between the host and the GPU as graph nodes (Theano's GpuFromHost and HostFromGpu).

``gpu_from_host(y)`` as a function output keeps the result on the GPU (placement passes a value
the GPU computed straight through); ``host_from_gpu(y)`` brings a value back."""
from hypatia import _core
from hypatia._convert import as_tensor_variable
from hypatia._core import GpuFromHost, HostFromGpu  # noqa: F401  (the ops' classes)
from hypatia.configparser import config


def _target():
    d = str(config.device)
    return d if d.startswith("cuda") else "cuda"


def gpu_from_host(x):
    """x copied to the GPU of ``config.device`` (cuda0 when the device is the CPU)."""
    return _core.device_from_host(as_tensor_variable(x), _target())


def host_from_gpu(x):
    """x copied back to the host."""
    return _core.host_from_device(as_tensor_variable(x))
