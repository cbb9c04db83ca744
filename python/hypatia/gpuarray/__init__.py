"""hypatia.gpuarray: the GPU from Python (Theano's gpuarray back end).

``GpuArray`` is what a function output kept on the device gives (``Out(gpu_from_host(y),
borrow=True)``, seed 001) and what ``shared.get_value(return_internal_type=True)`` gives for a
shared variable on the GPU. ``numpy.asarray(a)`` copies it to the host; ``torch.from_dlpack(a)``,
``cupy.asarray(a)`` and ``jax.dlpack.from_dlpack(a)`` use the buffer in place; a function input
that only transfers read takes it as it is; ``set_value(a)`` keeps it on the device.
``GpuArray(numpy_array, device="cuda")`` copies a host array to the device.

A compiled function's nodes that run on a GPU show it as Theano's did: in
``f.maker.fgraph.toposort()`` their ops are ``GpuElemwise``, ``GpuCAReduce``, ``GpuGemm``, ...
(``Gpu`` and the host op's class name, printed ``GpuElemwise{exp,no_inplace}``), which are not
instances of the host classes, so seed 001's ``isinstance(node.op, T.Elemwise)`` tells where
``exp`` ran. The GPU runs the same op: ``view.host_op`` is it, and its attributes read through."""
import warnings

import numpy as np

from hypatia import _core
from hypatia._core import GpuArray
from hypatia.configparser import config

__all__ = ["GpuArray", "GpuOp", "GpuApply", "gpu_op_class", "GpuElemwise", "GpuCAReduce", "use"]

# Theano's use() options, taken and left to the flags (shared variables follow their functions'
# placement; memory is the caching allocator's).
_USE_OPTIONS = {"default_to_device", "move_shared_to_gpu", "preallocate", "tests", "default_to_move_computation_to_gpu",
                "move_shared_float32_to_gpu", "enable_cuda", "test_driver"}


def use(device, force=False, **options):
    """Theano's ``theano.gpuarray.use`` (and ``theano.sandbox.cuda.use``): runs the functions
    compiled from now on on `device` ('cuda', 'cudaN', 'cuda:N', or the old 'gpu', 'gpuN'), as
    ``config.device = device`` does, and makes it this process's GPU (a process drives one:
    naming another than the one in use raises NotImplementedError). Where no GPU can be used,
    a warning says why and config.device is left as it was; with force=True, the error.
    ``use('cpu')`` goes back to the CPU for functions compiled later."""
    unknown = set(options) - _USE_OPTIONS
    if unknown:
        raise TypeError(f"use() got unexpected keyword arguments {sorted(unknown)}")
    if device == "cpu":
        config.device = "cpu"
        return
    _core._claim_device(device)
    try:
        GpuArray(np.zeros(1, dtype="float32"), device=device)  # its memory: says why it cannot be used
    except NotImplementedError as e:
        if force:
            raise
        warnings.warn(f"use({device!r}): {e}; functions stay where config.device ({config.device!r}) puts them",
                      stacklevel=2)
        return
    config.device = device


class GpuOp:
    """An op as it runs on a GPU (the base of GpuElemwise, GpuCAReduce, ...)."""

    __slots__ = ("host_op", "device")

    def __init__(self, host_op, device):
        object.__setattr__(self, "host_op", host_op)
        object.__setattr__(self, "device", device)

    def __getattr__(self, name):
        return getattr(self.host_op, name)

    def __str__(self):
        return "Gpu" + str(self.host_op)

    __repr__ = __str__

    def __eq__(self, other):
        return type(other) is type(self) and other.host_op == self.host_op and other.device == self.device

    def __hash__(self):
        return hash((type(self), self.host_op, self.device))

    def __reduce__(self):
        # Its class is made per host class (gpu_op_class): pickled as the view it is of.
        return _view_of, (self.host_op, self.device)


_classes = {}


def gpu_op_class(host_class):
    """The GpuOp subclass standing for `host_class` on a GPU: GpuElemwise for every elementwise op
    (fused ones included: T.Elemwise's classes), else 'Gpu' + its name (GpuCAReduce, GpuGemm,
    GpuSoftmax, ...)."""
    if issubclass(host_class, GpuOp):
        return host_class
    name = "GpuElemwise" if issubclass(host_class, _ELEMWISE) else "Gpu" + host_class.__name__
    cls = _classes.get(name)
    if cls is None:
        cls = _classes[name] = type(name, (GpuOp,), {"__slots__": (), "__module__": __name__})
    return cls


# The classes isinstance(op, T.Elemwise) accepts (hypatia.tensor.basic), named here so that the
# compile package's toposort can use this module without importing hypatia.tensor.
_ELEMWISE = (_core.Elemwise, _core.Composite, _core.MultiComposite)


def _view_of(op, device):
    return gpu_op_class(type(op))(op, device)


class GpuApply:
    """A node of a compiled function that runs on a GPU, as toposort() gives it: ``op`` is the
    GpuOp view; inputs, outputs and the rest are the node's (``host_node``)."""

    __slots__ = ("host_node", "op")

    def __init__(self, node, device):
        object.__setattr__(self, "host_node", node)
        object.__setattr__(self, "op", _view_of(node.op, device))

    def __getattr__(self, name):
        return getattr(self.host_node, name)

    def __str__(self):
        return str(self.op) + "(" + ", ".join(str(v) for v in self.host_node.inputs) + ")"

    __repr__ = __str__

    def __eq__(self, other):
        return isinstance(other, GpuApply) and other.host_node == self.host_node

    def __hash__(self):
        return hash(self.host_node)


GpuElemwise = gpu_op_class(_core.Elemwise)
GpuCAReduce = gpu_op_class(_core.CAReduce)
