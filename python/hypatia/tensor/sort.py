"""hypatia.tensor.sort: sort and argsort (Theano's tensor.sort), on the engine's SortOp and
ArgSortOp.

Both sort along one axis (the last by default; axis=None sorts the flattened input) in numpy's
order: ascending, NaN last. The sort is stable (equal elements keep their order), which is one of
the orders numpy's 'quicksort' and 'heapsort' may give, and the order of 'mergesort' / 'stable'.
The gradient of sort goes back through the permutation; argsort's is zero (an integer result).
"""
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


__all__ = ["sort", "argsort", "SortOp", "ArgSortOp"]
