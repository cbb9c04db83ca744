"""hypatia.compile.sharedvalue: shared variables (Theano's compile.sharedvalue): shared() and the
SharedVariable class (isinstance(v, SharedVariable): v is a shared variable)."""
from hypatia import _convert, _core
from hypatia.gof.graph import _VariableKindMeta

Variable = _core.Variable


class SharedVariable(metaclass=_VariableKindMeta):
    """isinstance(v, SharedVariable): v is a shared variable (get_value / set_value, and a value
    that functions read and update)."""

    _kinds = ("shared",)


def shared(value, name=None, strict=False, allow_downcast=None, borrow=False, broadcastable=None, **kwargs):
    """A shared variable holding `value` (Theano's ``theano.shared``).

    The value is copied unless borrow=True, in which case a numpy array is used in place (no copy).
    broadcastable (any truthy or falsy entries, one per dimension) defaults to no broadcastable
    dimension.
    """
    if isinstance(value, Variable):
        raise TypeError("shared() takes a value (a numpy array or a number), not a symbolic Variable")
    bc = _convert._broadcastable(broadcastable) if broadcastable is not None else []
    return _core.shared(value, name or "", bool(borrow), bc)


__all__ = ["SharedVariable", "shared"]
