"""What the random-stream modules share (hypatia.sandbox.rng_mrg, hypatia.tensor.raw_random and
shared_randomstreams): Theano's dtype rule for the operands of a draw and the conversion of a size
to an integer vector whose length the C++ side can read. Below the public modules (imports only
_core, _convert and configparser)."""
import numbers

import numpy as np

from hypatia import _convert, _core
from hypatia.configparser import config

Variable = _core.Variable


def scalar_dtype(x):
    """The dtype Theano gives x as an operand: Python floats autocast (floatX when floatX is not
    float64, else float32 when exact, else float64), Python ints the smallest of int8..int64 that
    holds them, anything else its own dtype."""
    if isinstance(x, Variable):
        return x.dtype
    if isinstance(x, bool):
        return "bool"
    if isinstance(x, float):
        if config.floatX != "float64":
            return config.floatX
        return "float32" if float(np.float32(x)) == x else "float64"
    if isinstance(x, numbers.Integral) and not isinstance(x, np.integer):
        for dt in ("int8", "int16", "int32", "int64"):
            if np.iinfo(dt).min <= x <= np.iinfo(dt).max:
                return dt
    return np.asarray(x).dtype.name


def operand(x):
    """x as a variable with the dtype Theano's autocasting gives it."""
    if isinstance(x, Variable):
        return x
    if np.ndim(x) == 0:
        return _convert.as_tensor_variable(x, dtype=scalar_dtype(x))
    return _convert.as_tensor_variable(x)


def default_dtype(*operands):
    """Theano's scal.upcast(floatX, *operand dtypes)."""
    return np.result_type(*[np.dtype(d) for d in (config.floatX, *[scalar_dtype(x) for x in operands])]).name


def size_var(size, ndim, who):
    """The size as an int64 vector whose length can be read from the graph: a tuple of ints and
    scalar variables, an int, or an integer vector variable (ndim gives its length when the graph
    cannot)."""
    if isinstance(size, Variable):
        if size.ndim == 0:
            return _core.make_vector([_convert.cast(size, "int64")])
        if size.ndim != 1:
            raise TypeError(f"{who}: size must be a tuple of int or a Variable with 1 dimension, got {size.type}")
        if size.kind == "constant" or (size.owner is not None and
                                       isinstance(size.owner.op, (_core.MakeVector, _core.Shape))):
            return size
        n = ndim if ndim is not None else _convert.get_vector_length(size)
        return _core.make_vector([_convert.cast(size[i], "int64") for i in range(n)])
    if isinstance(size, (numbers.Integral, np.integer)):
        size = (size,)
    if not isinstance(size, (tuple, list)):
        raise TypeError(f"{who}: size must be a tuple of int or a Variable with 1 dimension, got {size!r} "
                        f"of type {type(size).__name__}")
    for i in size:
        if isinstance(i, Variable):
            if i.ndim != 0:
                raise ValueError(f"{who}: non-scalar variable {i} in size {size}")
        elif isinstance(i, (numbers.Integral, np.integer)):
            if i < 0:
                raise ValueError(f"{who}: the specified size contains a negative dimension: {size}")
        else:
            raise ValueError(f"{who}: only variables and integers are allowed in a size tuple, got {i!r}")
    if ndim is not None and ndim != len(size):
        raise ValueError(f"{who}: ndim should be equal to len(size), got ndim={ndim} and size={size}")
    if any(isinstance(i, Variable) for i in size):
        return _core.make_vector([_convert.cast(_convert._int_scalar(i), "int64") for i in size])
    return _convert.constant(np.asarray([int(i) for i in size], dtype="int64").reshape(len(size)))
