"""hypatia.tensor.signal.pool: Theano 1.0's pooling API.

``pool_2d`` / ``pool_3d`` pool the last 2 / 3 axes of a tensor with a window ``ws``, a ``stride``
(default: the window) and zero ``pad`` (which needs ``ignore_border=True``); modes 'max', 'sum',
'average_inc_pad' (divides by the window's size within the padded image) and 'average_exc_pad'
(by the real elements of the window). ``ignore_border=False`` keeps a last partial window.
Gradients: MaxPoolGrad (to every element equal to its window's max), AveragePoolGrad, and the
gradient of MaxPoolGrad, DownsampleFactorMaxGradGrad.
"""
import numbers
import warnings

from hypatia import _core
from hypatia.tensor.basic import as_tensor_variable

__all__ = ["pool_2d", "pool_3d", "max_pool_2d_same_size", "Pool", "MaxPoolGrad", "AveragePoolGrad",
           "DownsampleFactorMaxGradGrad"]

Pool = _core.Pool
MaxPoolGrad = _core.MaxPoolGrad
AveragePoolGrad = _core.AveragePoolGrad
DownsampleFactorMaxGradGrad = _core.DownsampleFactorMaxGradGrad

_MODES = ("max", "sum", "average_inc_pad", "average_exc_pad")


def _ints(value, nd, name, fill):
    """nd ints, padded to 3 with `fill` for the unused leading axis of a 2-d pool."""
    if isinstance(value, numbers.Integral):
        value = (value,) * nd
    value = tuple(value)
    if len(value) != nd or not all(isinstance(v, numbers.Integral) for v in value):
        raise ValueError(f"pool: {name} must be {nd} ints (symbolic values are not supported), got {value!r}")
    return tuple(int(v) for v in value) + (fill,) * (3 - nd)


def _params(nd, ws, ignore_border, stride, pad, mode, stacklevel=4):
    if ws is None:
        raise ValueError("pool: ws (the window) must be given")
    if ignore_border is None:
        warnings.warn("pool: ignore_border was not given; it defaults to False (Theano 1.0's default). Pass it "
                      "explicitly (True is faster and usually what is meant)", UserWarning, stacklevel=stacklevel)
        ignore_border = False
    if mode == "average":
        mode = "average_inc_pad"
    if mode not in _MODES:
        raise ValueError(f"pool: mode must be one of {', '.join(_MODES)}, got {mode!r}")
    return (nd, _ints(ws, nd, "ws", 1), _ints(stride if stride is not None else ws, nd, "stride", 1),
            _ints(pad if pad is not None else (0,) * nd, nd, "pad", 0), bool(ignore_border), mode)


def _pool(nd, input, ws, ignore_border, stride, pad, mode, ds, st, padding):
    # ds, st, padding: Theano's old names of ws, stride, pad.
    ws = ds if ws is None else ws
    stride = st if stride is None else stride
    pad = padding if padding is not None else pad
    return _core.pool(as_tensor_variable(input), _params(nd, ws, ignore_border, stride, pad, mode))


def pool_2d(input, ws=None, ignore_border=None, stride=None, pad=(0, 0), mode="max", ds=None, st=None, padding=None):
    """Pools the last two axes of ``input`` (ndim >= 2). ``ds``, ``st``, ``padding`` are Theano's
    old names of ``ws``, ``stride``, ``pad``."""
    return _pool(2, input, ws, ignore_border, stride, pad, mode, ds, st, padding)


def pool_3d(input, ws=None, ignore_border=None, stride=None, pad=(0, 0, 0), mode="max", ds=None, st=None,
            padding=None):
    """Pools the last three axes of ``input`` (ndim >= 3)."""
    return _pool(3, input, ws, ignore_border, stride, pad, mode, ds, st, padding)


def max_pool_2d_same_size(input, patch_size):
    """Keeps the maximum of each (non-overlapping) patch in place and zeros the rest: the output
    has the input's shape (Theano's helper, built from MaxPoolGrad as there)."""
    x = as_tensor_variable(input)
    p = _params(2, patch_size, True, patch_size, (0, 0), "max")
    out = _core.pool(x, p)
    return _core.max_pool_grad(x, out, out, p)
