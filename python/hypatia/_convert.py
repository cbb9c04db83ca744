"""Python values as symbolic variables: the conversions every layer of the package uses.

Below the public modules (it imports only _core and configparser), so that hypatia.compile,
hypatia.gradient and hypatia.tensor share one set of rules without importing each other:
Python floats become floatX constants, Python ints int64, lists holding Variables are stacked,
Python scalars among Variables take a dtype that fits them (numpy's rule). hypatia.tensor
re-exports the public names (constant, as_tensor_variable, cast, get_vector_length).
"""
import builtins
import numbers

import numpy as np

from hypatia import _core
from hypatia.configparser import config

Variable = _core.Variable
Apply = _core.Apply


def _dtype_name(dtype):
    if dtype is None:
        return None
    if isinstance(dtype, str):
        return config.floatX if dtype == "floatX" else np.dtype(dtype).name
    return np.dtype(dtype).name


def _is_python_scalar(x):
    return isinstance(x, (bool, int, float)) and not isinstance(x, np.generic)


def _numpy_value(x, dtype=None):
    """numpy array for a constant: Python floats become floatX, ints int64, bools bool."""
    if dtype is not None:
        return np.array(x, dtype=_dtype_name(dtype))
    if isinstance(x, np.ndarray):
        return np.array(x)
    if isinstance(x, bool):
        return np.array(x, dtype=bool)
    if isinstance(x, int):
        return np.array(x, dtype=np.int64)
    if isinstance(x, float):
        return np.array(x, dtype=config.floatX)
    arr = np.asarray(x)
    if arr.dtype == np.float64 and not isinstance(x, np.generic) and _all_python_floats(x):
        arr = arr.astype(config.floatX)
    return arr


def _all_python_floats(x):
    if isinstance(x, (list, tuple)):
        return builtins.all(_all_python_floats(e) for e in x)
    return isinstance(x, float)


def constant(x, name=None, ndim=None, dtype=None):
    """A constant holding x (Python floats become floatX, Python ints int64)."""
    arr = _numpy_value(x, dtype)
    if ndim is not None and arr.ndim != ndim:
        if arr.ndim < ndim:
            arr = arr.reshape((1,) * (ndim - arr.ndim) + arr.shape)
        else:
            raise ValueError(f"constant: value has {arr.ndim} dimensions, expected {ndim}")
    if arr.dtype.kind not in "biuf" or arr.dtype.kind == "f" and arr.dtype.itemsize > 8:
        raise TypeError(f"constant: unsupported dtype {arr.dtype} (bool, int, uint, float16, float32, float64 only)")
    return _core.constant(arr, name or "")


def _flatten_list(x):
    for e in x:
        if isinstance(e, (list, tuple)):
            yield from _flatten_list(e)
        else:
            yield e


def as_tensor_variable(x, name=None, ndim=None, dtype=None):
    """x as a symbolic variable: Variables as they are, lists holding Variables stacked, anything
    else a constant."""
    if isinstance(x, Variable):
        v = x
    elif isinstance(x, Apply):
        if x.nout != 1:
            raise TypeError(f"as_tensor_variable: {x} has {x.nout} outputs; pick one")
        v = x.outputs[0]
    elif isinstance(x, (list, tuple)) and builtins.any(isinstance(e, Variable) for e in _flatten_list(x)):
        v = _core.stack([as_tensor_variable(e) for e in x], 0)
    else:
        v = constant(x, name=name, dtype=dtype)
    if dtype is not None and v.dtype != _dtype_name(dtype):
        v = cast(v, dtype)
    if ndim is not None and v.ndim != ndim:
        if v.ndim > ndim and builtins.all(v.broadcastable[: v.ndim - ndim]):
            v = _core.dimshuffle(v, list(range(v.ndim - ndim, v.ndim)))
        elif v.ndim < ndim:
            v = _core.dimshuffle(v, [-1] * (ndim - v.ndim) + list(range(v.ndim)))
        else:
            raise ValueError(f"as_tensor_variable: {v} has {v.ndim} dimensions, expected {ndim}")
    return v


as_tensor = as_tensor_variable


def cast(x, dtype):
    """x converted to dtype elementwise (x itself when it already has it)."""
    x = as_tensor_variable(x)
    dt = _dtype_name(dtype)
    return x if x.dtype == dt else _core.cast(x, dt)


def _broadcastable(pattern):
    """A broadcastable pattern as a list of bools: Theano takes any truthy or falsy entries
    (numpy bools from `shape == 1`, 0 and 1)."""
    if isinstance(pattern, (str, bytes)) or not hasattr(pattern, "__iter__"):
        raise TypeError(f"broadcastable must be a sequence of booleans, one per dimension, got {pattern!r}")
    return [bool(b) for b in pattern]


def _operands(*xs):
    """Variables for op arguments: Python scalars take a dtype that fits the first Variable among
    them (numpy's rule for Python scalars); other values become constants."""
    like = next((x for x in xs if isinstance(x, Variable)), None)
    out = []
    for x in xs:
        if isinstance(x, Variable):
            out.append(x)
        elif like is not None and _is_python_scalar(x):
            if isinstance(x, bool) and like.dtype == "bool":
                out.append(constant(x))
            elif isinstance(x, float) and not like.dtype.startswith("float"):
                # A Python float with integers is a float, 1.0 included (x * 1.0 casts, as in numpy
                # and Theano): floatX, whose upcast with the integers gives the result's dtype.
                out.append(constant(np.asarray(x, dtype=config.floatX)))
            else:
                out.append(_core.scalar_like(float(x), like))
        else:
            out.append(as_tensor_variable(x))
    return out


def _axes(axis):
    if axis is None:
        return None
    if isinstance(axis, Variable):
        if axis.kind != "constant":
            raise TypeError("axis must be known when the graph is built (an int, a list of ints or a constant)")
        axis = axis.data.tolist()
    if isinstance(axis, (numbers.Integral, np.integer)):
        return [int(axis)]
    return [int(a) for a in axis]


def _one_axis(axis, who):
    axes = _axes(axis)
    if axes is None:
        return None
    if len(axes) != 1:
        raise ValueError(f"{who}: expected a single axis, got {axis}")
    return axes[0]


def _int_scalar(x):
    """A 0-d integer variable for a shape entry or bound."""
    if isinstance(x, Variable):
        if x.ndim != 0:
            raise TypeError(f"expected a 0-d integer variable, got {x.type}")
        return x
    v = int(x)
    if not -2**63 <= v < 2**63:
        raise ValueError(f"{v} does not fit in int64 (the largest shape entry, bound or index Hypatia takes)")
    return _core.int_constant(v)


def get_vector_length(v):
    """Length of a symbolic vector when it is known while the graph is built."""
    v = as_tensor_variable(v)
    if v.ndim != 1:
        raise TypeError(f"get_vector_length: expected a vector, got {v.type}")
    if v.broadcastable[0]:
        return 1
    if v.kind == "constant":
        return len(v.data)
    if v.owner is not None:
        op = v.owner.op
        if isinstance(op, _core.Shape):
            return v.owner.inputs[0].ndim
        if isinstance(op, _core.MakeVector):
            return len(v.owner.inputs)
        if isinstance(op, _core.Subtensor) and len(op.idx_list) == 1:
            entry = op.idx_list[0]
            if isinstance(entry, slice) and "input" not in (entry.start, entry.stop, entry.step):
                return len(range(get_vector_length(v.owner.inputs[0]))[entry])
    raise ValueError(f"length of {v} cannot be determined while the graph is built")


def _shape_list(shape):
    """A shape as a list of 0-d int Variables (from ints, Variables, or a symbolic vector)."""
    if isinstance(shape, Variable):
        if shape.ndim == 0:
            return [shape]
        return [shape[i] for i in range(get_vector_length(shape))]
    if isinstance(shape, (numbers.Integral, np.integer)):
        return [_int_scalar(shape)]
    return [_int_scalar(s) for s in shape]

