"""hypatia.tensor.sort: sort and argsort (Theano's tensor.sort), on the engine's SortOp and
ArgSortOp; topk, argtopk and topk_and_argtopk composed from them.

Both sort along one axis (the last by default; axis=None sorts the flattened input) in numpy's
order: ascending, NaN last. The sort is stable (equal elements keep their order), which is one of
the orders numpy's 'quicksort' and 'heapsort' may give, and the order of 'mergesort' / 'stable'.
The gradient of sort goes back through the permutation; argsort's is zero (an integer result).
"""
import numpy as np

from hypatia import _convert, _core

SortOp = _core.SortOp
ArgSortOp = _core.ArgSortOp

_KINDS = ("quicksort", "mergesort", "heapsort", "stable")


def _check(kind, order, who):
    if kind not in _KINDS:
        raise ValueError(f"{who}: kind must be one of {', '.join(_KINDS)}, got {kind!r}")
    if order is not None:
        raise ValueError(f"{who}: order is for arrays with fields (numpy's structured arrays), which tensors are not")


def _axis(axis, who):
    if axis is None:
        return None
    if isinstance(axis, _core.Variable):
        if axis.kind != "constant" or axis.ndim != 0:
            raise TypeError(f"{who}: axis must be known when the graph is built (an int or None)")
        axis = axis.data.item()
    return int(axis)


def sort(a, axis=-1, kind="quicksort", order=None):
    """a sorted along axis (numpy.sort; the flattened a when axis is None)."""
    _check(kind, order, "sort")
    return _core.sort(_convert.as_tensor_variable(a), _axis(axis, "sort"))


def argsort(a, axis=-1, kind="quicksort", order=None):
    """The int64 indices that sort a along axis (numpy.argsort; of the flattened a when axis is
    None)."""
    _check(kind, order, "argsort")
    return _core.argsort(_convert.as_tensor_variable(a), _axis(axis, "argsort"))


def inverse_permutation(perm):
    """The inverse of each permutation along perm's last axis (Theano's inverse_permutation):
    out[..., perm[..., i]] = i, in perm's dtype. A stable argsort of perm, which is that inverse
    when perm holds a permutation of 0 .. n - 1."""
    perm = _convert.as_tensor_variable(perm)
    if perm.ndim == 0 or perm.dtype[:3] not in ("int", "uin"):
        raise TypeError(f"inverse_permutation: perm must be an integer tensor of at least one axis, got {perm.type}")
    inv = argsort(perm, axis=-1, kind="stable")
    return inv if perm.dtype == "int64" else _core.cast(inv, perm.dtype)


def _topk(x, kth, axis, idx_dtype, who):
    """(values, indices) of the kth largest (kth > 0, largest first) or -kth smallest (kth < 0,
    smallest first) elements of x along axis: one stable sort and one argsort, then a take of
    the positions wanted. kth 0 or past the axis' length raises (ValueError when known while
    building, AssertionError when the function runs)."""
    from hypatia.tensor import shape_ops  # (basic imports this module: shape_ops imports neither)
    x = _convert.as_tensor_variable(x)
    if x.ndim == 0:
        raise ValueError(f"{who}: x must have at least one axis, got a 0-d {x.type}")
    if axis is None:
        x, axis = x.flatten(), 0
    axis = _axis(axis, who)
    if not -x.ndim <= axis < x.ndim:
        raise IndexError(f"{who}: axis {axis} is out of bounds for a {x.ndim}-d tensor")
    axis %= x.ndim
    if np.dtype(idx_dtype).kind not in "iu":
        raise TypeError(f"{who}: idx_dtype must be an integer dtype, got {idx_dtype!r}")
    if isinstance(kth, _core.Variable):
        if kth.ndim != 0 or kth.dtype[:3] not in ("int", "uin"):
            raise TypeError(f"{who}: kth must be an int or a 0-d integer variable, got {kth.type}")
        k = _core.cast(kth, "int64")
    else:
        if int(kth) == 0:
            raise ValueError(f"{who}: kth must not be 0")
        k = _convert._int_scalar(int(kth))
    n = x.shape[axis]
    count = abs(k)
    ok = _core.and_(_core.neq(k, _convert._int_scalar(0)), _core.le(count, n))
    r = shape_ops.arange(count)
    # Ascending order, NaN last (numpy's): the largest are the last positions, read backwards.
    # Both results read the positions, so the check guards each (a wrong kth never wraps).
    pos = _core.Assert(f"{who}: kth must be nonzero and its absolute value at most the length of axis {axis}")(
        _core.switch(_core.gt(k, _convert._int_scalar(0)), n - 1 - r, r), ok)
    values = shape_ops.take(sort(x, axis=axis, kind="stable"), pos, axis=axis)
    indices = shape_ops.take(argsort(x, axis=axis, kind="stable"), pos, axis=axis)
    if np.dtype(idx_dtype) != np.int64:
        indices = _core.cast(indices, np.dtype(idx_dtype).name)
    return values, indices


def topk(x, kth, axis=-1, sorted=True, idx_dtype="int64"):
    """The kth largest elements of x along axis (Theano's topk; the flattened x when axis is
    None), largest first; kth < 0: the -kth smallest, smallest first. Always sorted (Theano's
    sorted=False, an unspecified order, gets this order too). Its gradient goes to the elements
    picked."""
    return _topk(x, kth, axis, idx_dtype, "topk")[0]


def argtopk(x, kth, axis=-1, sorted=True, idx_dtype="int64"):
    """The indices along axis of topk's elements, in its order (Theano's argtopk)."""
    return _topk(x, kth, axis, idx_dtype, "argtopk")[1]


def topk_and_argtopk(x, kth, axis=-1, sorted=True, idx_dtype="int64"):
    """(topk, argtopk) in one call (Theano's topk_and_argtopk)."""
    return _topk(x, kth, axis, idx_dtype, "topk_and_argtopk")


__all__ = ["sort", "argsort", "SortOp", "ArgSortOp", "topk", "argtopk", "topk_and_argtopk", "inverse_permutation"]
