"""hypatia.tensor.extra_ops: Theano's tensor.extra_ops: cumsum, cumprod, diff, repeat, squeeze and
to_one_hot, composed from the core ops."""
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


__all__ = ["CumOp", "RepeatOp", "cumsum", "cumprod", "diff", "repeat", "squeeze", "to_one_hot"]
