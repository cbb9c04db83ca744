"""hypatia.Op: the base class of ops defined in Python (Theano's gof.Op).

    class Double(hypatia.Op):
        __props__ = ()
        def make_node(self, x):
            x = T.as_tensor_variable(x)
            return hypatia.Apply(self, [x], [x.type()])
        def perform(self, node, inputs, output_storage):
            output_storage[0][0] = inputs[0] * 2
        def grad(self, inputs, output_grads):
            return [output_grads[0] * 2]
        def infer_shape(self, node, input_shapes):
            return input_shapes

    y = Double()(x)     # usable in graphs, gradients and compiled functions

perform receives read-only numpy arrays and sets output_storage[i][0] to each output's value (a
value of the output's type; an output that aliases an input is copied unless view_map declares it).
Optional: grad(inputs, output_grads) -> one variable (or None: disconnected) per input,
R_op(inputs, eval_points), infer_shape(node, input_shapes), connection_pattern(node), view_map,
destroy_map. Equality and hashing follow __props__ (identity when it is None).

Instead of perform, an op may define Theano's make_thunk(node, storage_map, compute_map,
no_recycling): storage_map maps each input and output variable of the node to a one-element list;
the thunk it returns reads the inputs' cells and sets the outputs' (compute_map's output entries
may be set to True; nothing requires it). It is called once per compiled function and thread, and
the output cells are emptied before every run (an earlier output may be the caller's by then).

On the GPU: an op whose make_node takes device values (sandbox.cuda.basic_ops.gpu_from_host,
as_cuda_ndarray_variable or gpu_contiguous of its inputs, as Theano's CudaNdarrayType inputs) runs
on the device under device=cuda: perform or the thunk gets those inputs as read-only C-contiguous
GpuArrays (``.gpudata``: the device address for a PyCUDA or CuPy kernel; cupy.asarray(a) uses the
buffer in place) once the device has computed them, and its other inputs as numpy arrays; it gives
GpuArrays (GpuArray.zeros(shape)), CuPy or torch CUDA arrays (a numpy value is copied to the
device). Its own device work, on any stream, is waited for before the function goes on. PyCUDA
must work in the CUDA primary context, as Hypatia does: ``import pycuda.autoprimaryctx`` (not
``pycuda.autoinit``, whose context of its own cannot read Hypatia's buffers). It needs a device
backend: the CPU backend refuses it.
"""
from hypatia import _core
from hypatia._core import NullTypeGradError


class _OpMeta(type):
    def __instancecheck__(cls, obj):
        # Ops of the C++ engine are hypatia.Op instances too.
        if cls is Op and isinstance(obj, _core.Op):
            return True
        return super().__instancecheck__(obj)


class Op(metaclass=_OpMeta):
    """Base class of ops written in Python (see the module docstring)."""

    __props__ = None
    view_map = {}
    destroy_map = {}

    def make_node(self, *inputs):
        # Theano's default: an op with `itypes` and `otypes` (lists of types) takes inputs of
        # exactly those types and makes one output of each of otypes.
        itypes, otypes = getattr(self, "itypes", None), getattr(self, "otypes", None)
        if itypes is None or otypes is None:
            raise NotImplementedError(f"{type(self).__name__} must define make_node (or itypes and otypes)")
        from hypatia import _convert

        if len(inputs) != len(itypes):
            raise ValueError(f"{self}: expected {len(itypes)} inputs, got {len(inputs)}")
        inputs = [_convert.as_tensor_variable(i) for i in inputs]
        for k, (v, t) in enumerate(zip(inputs, itypes)):
            if v.type != t:
                raise TypeError(f"{self}: input {k} must be of type {t}, got {v.type} ({v})")
        return _core.Apply(self, inputs, [t() for t in otypes])

    def perform(self, node, inputs, output_storage):
        raise NotImplementedError(f"{type(self).__name__} must define perform")

    def make_thunk(self, node, storage_map, compute_map, no_recycling, impl=None):
        """Theano's default: a thunk that runs perform on the storage cells (what a subclass's
        make_thunk may fall back to with super().make_thunk(...))."""
        inputs = [storage_map[v] for v in node.inputs]
        outputs = [storage_map[v] for v in node.outputs]
        computed = [compute_map[v] for v in node.outputs]

        def thunk():
            self.perform(node, [cell[0] for cell in inputs], outputs)
            for cell in computed:
                cell[0] = True

        return thunk

    def grad(self, inputs, output_grads):
        raise NullTypeGradError(f"{self}: the gradient is not implemented (define grad)")

    def R_op(self, inputs, eval_points):
        raise NullTypeGradError(f"{self}: R_op is not implemented")

    # infer_shape(node, input_shapes) and connection_pattern(node) are optional: the C++ side calls
    # them only when a subclass defines them (otherwise shapes come from running the op, and every
    # input connects to every output).

    def __call__(self, *inputs, **kwargs):
        node = self.make_node(*inputs, **kwargs)
        outs = node.outputs
        return outs[0] if len(outs) == 1 else outs

    def _props(self):
        return tuple(getattr(self, p) for p in self.__props__)

    def __eq__(self, other):
        if self.__props__ is None:
            return self is other
        return type(self) is type(other) and self._props() == other._props()

    def __hash__(self):
        if self.__props__ is None:
            return id(self)
        return hash((type(self), self._props()))

    def __str__(self):
        if not self.__props__:
            return type(self).__name__
        return f"{type(self).__name__}{{{', '.join(f'{p}={getattr(self, p)!r}' for p in self.__props__)}}}"

    __repr__ = __str__


__all__ = ["Op"]
