"""pickle support: shared variables (with their current values), graphs and compiled functions.

A graph pickles as its leaves (inputs by type and name, constants and shared variables by value)
and its Apply nodes (op class and attributes, inputs); a compiled function as the arguments it was
compiled from. Objects pickled together stay linked (a function and the shared variables it updates).
"""
import numpy as np

from hypatia import _core

Variable = _core.Variable


def _rebuild_input(dtype, broadcastable, name):
    return _core.TensorType(dtype, list(broadcastable))(name)


def _rebuild_constant(value, name):
    return _core.constant(value, name or "")


def _rebuild_shared(value, name, broadcastable):
    return _core.shared(value, name or "", True, list(broadcastable))


def _rebuild_apply(op, inputs):
    if isinstance(op, _core.Op):
        return op.make_node(list(inputs))
    return op.make_node(*inputs)  # an op defined in Python


def _output_of(node, index, name):
    v = node.outputs[index]
    if name is not None:
        v.name = name
    return v


def _reduce_variable(v):
    state = dict(v.__dict__) or None  # tag annotations, default_update
    kind = v.kind
    if kind == "input":
        return _rebuild_input, (v.dtype, v.broadcastable, v.name), state
    if kind == "constant":
        return _rebuild_constant, (np.array(v.data), v.name), state
    if kind == "shared":
        return _rebuild_shared, (v.get_value(borrow=False), v.name, v.broadcastable), state
    if kind == "output":
        return _output_of, (v.owner, v.index, v.name), state
    raise TypeError(f"cannot pickle {v}: an undefined gradient is not a value")


def _reduce_apply(node):
    return _rebuild_apply, (node.op, list(node.inputs))


def _reduce_type(t):
    return _core.TensorType, (t.dtype, list(t.broadcastable))


def _rebuild_function(args):
    from hypatia.compile import function

    return function(**args)


def _reduce_function(f):
    args = getattr(f, "_hyp_compile_args", None)
    if args is None:
        raise TypeError("this Function was not built by hypatia.function() and cannot be pickled")
    return _rebuild_function, (args,)


Variable.__reduce__ = _reduce_variable
_core.Apply.__reduce__ = _reduce_apply
_core.TensorType.__reduce__ = _reduce_type
_core.Function.__reduce__ = _reduce_function
