"""hypatia.tensor.subtensor (theano.tensor.subtensor): indexing and its updates as functions:
set_subtensor / inc_subtensor of an indexed region, and Theano's advanced_* helpers (x[ilist]
along the first axis for the *1 forms, x[args] for the others), with the op classes. T.subtensor
is this module, as in Theano (x[key] is the indexing itself)."""
from hypatia import _core
from hypatia._convert import as_tensor_variable
from hypatia.tensor.shape_ops import inc_subtensor, set_subtensor, take  # noqa: F401
from hypatia.tensor.shape_ops import subtensor as _index

Subtensor = _core.Subtensor
IncSubtensor = _core.IncSubtensor
AdvancedSubtensor = _core.AdvancedSubtensor
# (One op class serves integer-vector indexing along the first axis and the general case.)
AdvancedSubtensor1 = _core.AdvancedSubtensor
AdvancedIncSubtensor = AdvancedIncSubtensor1 = _core.IncSubtensor


def _vector_index(ilist, who):
    ilist = as_tensor_variable(ilist)
    if ilist.ndim != 1 or not ilist.dtype.startswith(("int", "uint")):
        raise TypeError(f"{who}: ilist must be a vector of integers, got {ilist.type}")
    return ilist


def advanced_subtensor1(x, ilist):
    """x[ilist]: the rows of x that the integer vector ilist names."""
    return _index(x, _vector_index(ilist, "advanced_subtensor1"))


def advanced_inc_subtensor1(x, y, ilist):
    """x with y added to its rows ilist (a repeated row accumulates)."""
    return inc_subtensor(_index(x, _vector_index(ilist, "advanced_inc_subtensor1")), y)


def advanced_set_subtensor1(x, y, ilist):
    """x with its rows ilist set to y."""
    return set_subtensor(_index(x, _vector_index(ilist, "advanced_set_subtensor1")), y)


def advanced_subtensor(x, *args):
    """x[args] (numpy's advanced indexing)."""
    return _index(x, tuple(args))


def advanced_inc_subtensor(x, y, *args):
    """x with y added to x[args]."""
    return inc_subtensor(_index(x, tuple(args)), y)


def advanced_set_subtensor(x, y, *args):
    """x with x[args] set to y."""
    return set_subtensor(_index(x, tuple(args)), y)


__all__ = ["Subtensor", "IncSubtensor", "AdvancedSubtensor", "AdvancedSubtensor1", "AdvancedIncSubtensor",
           "AdvancedIncSubtensor1", "set_subtensor", "inc_subtensor", "take", "advanced_subtensor1",
           "advanced_inc_subtensor1", "advanced_set_subtensor1", "advanced_subtensor", "advanced_inc_subtensor",
           "advanced_set_subtensor"]
