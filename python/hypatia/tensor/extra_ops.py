"""hypatia.tensor.extra_ops: Theano's tensor.extra_ops: cumsum, cumprod, diff, repeat, squeeze and
to_one_hot, composed from the core ops."""
import numpy as np

from hypatia import _convert, _core
from hypatia.tensor import basic as B

CumOp = _core.CumOp
RepeatOp = _core.RepeatOp

cumsum = B.cumsum
cumprod = B.cumprod
repeat = B.repeat
squeeze = B.squeeze


def diff(x, n=1, axis=-1):
    """numpy.diff: the n-th discrete difference along axis (x[1:] - x[:-1], n times)."""
    x = _convert.as_tensor_variable(x)
    axis = int(axis)
    if not -x.ndim <= axis < x.ndim:
        raise IndexError(f"diff: axis {axis} is out of bounds for a {x.ndim}-d tensor")
    axis %= x.ndim
    head = (slice(None),) * axis
    for _ in range(int(n)):
        x = B.sub(x[head + (slice(1, None),)], x[head + (slice(None, -1),)])
    return x


def to_one_hot(y, nb_class, dtype=None):
    """A (y.shape[0], nb_class) matrix whose row i is the one-hot encoding of y[i] (Theano's):
    y a vector of integers in [0, nb_class), dtype floatX unless given. A label outside that
    range raises IndexError when the function runs."""
    y = _convert.as_tensor_variable(y)
    if y.ndim != 1 or y.dtype[:3] not in ("int", "uin"):
        raise TypeError(f"to_one_hot: y must be an integer vector, got {y.type}")
    n = y.shape[0]
    ret = B.zeros((n, nb_class), dtype=dtype)
    return B.set_subtensor(ret[B.arange(n), y], 1)


def fill_diagonal_offset(a, val, offset):
    """A copy of the matrix a with diagonal `offset` (above the main one when positive, below when
    negative, Theano's and numpy.diagonal's numbering) set to the scalar val (cast to a's dtype).
    Its gradient: a's with that diagonal zeroed; val's, the sum of that diagonal's."""
    a = _convert.as_tensor_variable(a)
    if a.ndim != 2:
        raise TypeError(f"fill_diagonal_offset: a must be a matrix, got {a.ndim} dimensions")
    if not isinstance(val, _core.Variable):
        # A number: a's dtype when it holds the value exactly (Theano's autocast of numbers).
        arr = np.asarray(val)
        if arr.ndim != 0:
            raise TypeError(f"fill_diagonal_offset: val must be a scalar, got shape {arr.shape}")
        if arr.astype(a.dtype) != arr:
            raise TypeError(f"fill_diagonal_offset: val {val!r} is not a value of a's dtype {a.dtype}")
        val = _convert.constant(arr.astype(a.dtype))
    if val.ndim != 0:
        raise TypeError(f"fill_diagonal_offset: val must be a scalar, got {val.ndim} dimensions")
    if val.dtype != a.dtype:
        if not np.can_cast(val.dtype, a.dtype, "safe"):
            raise TypeError(f"fill_diagonal_offset: val ({val.dtype}) must have a's dtype {a.dtype} or one that "
                            "casts to it without loss (Theano's rule); cast it")
        val = B.cast(val, a.dtype)
    offset = _convert._int_scalar(offset)
    zero = _core.int_constant(0)
    first_row = _core.maximum(-offset, zero)
    first_col = _core.maximum(offset, zero)
    n = _core.maximum(_core.minimum(a.shape[0] - first_row, a.shape[1] - first_col), zero)
    i = B.arange(n)
    return B.set_subtensor(a[i + first_row, i + first_col], val)


def fill_diagonal(a, val):
    """A copy of the matrix a with its main diagonal (min(rows, columns) elements) set to the
    scalar val, as numpy.fill_diagonal does in place (Theano's fill_diagonal). Tensors of more
    than two axes are not supported."""
    a = _convert.as_tensor_variable(a)
    if a.ndim != 2:
        raise NotImplementedError(f"fill_diagonal: a must be a matrix here (got {a.ndim} dimensions); "
                                  "the n-d diagonal of a tensor of equal axes is not built")
    return fill_diagonal_offset(a, val, 0)


__all__ = ["CumOp", "RepeatOp", "cumsum", "cumprod", "diff", "repeat", "squeeze", "to_one_hot", "fill_diagonal",
           "fill_diagonal_offset"]
