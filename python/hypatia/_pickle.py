"""pickle support: shared variables (with their current values), graphs and compiled functions.

A graph pickles as its leaves (inputs by type and name, constants and shared variables by value)
and its Apply nodes (op class and attributes, inputs); a compiled function as the arguments it was
compiled from. Objects pickled together stay linked (a function and the shared variables it updates).
"""
import functools
import pickle
import warnings

import numpy as np

from hypatia import _core
from hypatia.compile.function import function

Variable = _core.Variable


def _rebuilds(what):
    """A rebuild function whose failure (a corrupted pickle, or one from an incompatible version)
    raises pickle.UnpicklingError naming what was being rebuilt, not a raw engine error."""

    def wrap(fn):
        @functools.wraps(fn)
        def rebuild(*args):
            try:
                return fn(*args)
            except pickle.UnpicklingError:
                raise
            except Exception as e:  # noqa: BLE001 - any failure means the pickle is unusable
                shown = ", ".join(_short_repr(a) for a in args)
                raise pickle.UnpicklingError(
                    f"hypatia: cannot rebuild {what} from the pickled data ({shown}): {type(e).__name__}: {e}. "
                    "The pickle is corrupted or was written by an incompatible version."
                ) from e

        return rebuild

    return wrap


def _short_repr(value, limit=60):
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


@_rebuilds("a symbolic input")
def _rebuild_input(dtype, broadcastable, name):
    return _core.TensorType(dtype, list(broadcastable))(name)


@_rebuilds("a constant")
def _rebuild_constant(value, name):
    return _core.constant(value, name or "")


@_rebuilds("a shared variable")
def _rebuild_shared(value, name, broadcastable, target=None):
    # target: the device the variable was created on with shared(target=) (None: it was not).
    if target is not None and target != "cpu":
        try:
            return _core.shared(value, name or "", True, list(broadcastable), target)
        except (NotImplementedError, ValueError) as e:
            warnings.warn(
                f"unpickling shared variable {name!r}: it was created on {target}, which is not available here "
                f"({e}); its value is on the host",
                stacklevel=2,
            )
            target = None
    return _core.shared(value, name or "", True, list(broadcastable), target)


@_rebuilds("an Apply node")
def _rebuild_apply(op, inputs):
    if isinstance(op, _core.Op):
        return op.make_node(list(inputs))
    return op.make_node(*inputs)  # an op defined in Python


@_rebuilds("an output variable")
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
        args = (v.get_value(borrow=False), v.name, v.broadcastable)
        target = _core.shared_target(v)
        return _rebuild_shared, args + ((target,) if target is not None else ()), state
    if kind == "output":
        return _output_of, (v.owner, v.index, v.name), state
    raise TypeError(f"cannot pickle {v}: an undefined gradient is not a value")


def _reduce_apply(node):
    return _rebuild_apply, (node.op, list(node.inputs))


@_rebuilds("a TensorType")
def _rebuild_type(dtype, broadcastable):
    return _core.TensorType(dtype, list(broadcastable))


@_rebuilds("an op")
def _rebuild_op(cls, args):
    if not (isinstance(cls, type) and issubclass(cls, _core.Op)):
        raise TypeError(f"expected a hypatia op class, got {cls!r}")
    return cls(*args)


def _reduce_type(t):
    return _rebuild_type, (t.dtype, list(t.broadcastable))


@_rebuilds("a compiled function")
def _rebuild_function(args):
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
