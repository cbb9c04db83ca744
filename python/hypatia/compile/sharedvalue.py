"""hypatia.compile.sharedvalue: shared variables (Theano's compile.sharedvalue): shared() and the
SharedVariable class (isinstance(v, SharedVariable): v is a shared variable)."""
from hypatia import _convert, _core
from hypatia.gof.graph import _VariableKindMeta

Variable = _core.Variable


class SharedVariable(metaclass=_VariableKindMeta):
    """isinstance(v, SharedVariable): v is a shared variable (get_value / set_value, and a value
    that functions read and update)."""

    _kinds = ("shared",)


def shared(value, name=None, strict=False, allow_downcast=None, borrow=False, broadcastable=None, target=None,
           **kwargs):
    """A shared variable holding `value` (Theano's ``theano.shared``).

    The value is copied unless borrow=True, in which case a numpy array is used in place (no copy).
    broadcastable (any truthy or falsy entries, one per dimension) defaults to no broadcastable
    dimension.

    target (Theano gpuarray's): where the value lives. None (the default): where `value` is; under
    ``device=cuda`` a value on the host moves to the GPU when a function that reads or updates it
    there is compiled. ``'cpu'``: on the host, always (GPU nodes that read it get a transfer per
    call). ``'cuda'`` (the process's GPU: ``device=cuda1`` makes it the second), ``'cudaN'`` (or
    Theano's ``'gpu'``, ``'gpuN'``): copied to that GPU now, and kept there (a process drives one
    GPU: another than the one in use is refused by name).
    """
    if kwargs:
        raise TypeError(
            f"shared() got unexpected keyword argument(s) {', '.join(sorted(kwargs))}; it takes name, strict, "
            "allow_downcast, borrow, broadcastable and target"
        )
    if isinstance(value, Variable):
        raise TypeError("shared() takes a value (a numpy array or a number), not a symbolic Variable")
    if target is not None and not isinstance(target, str):
        raise TypeError(f"shared(target=...) takes a device name ('cpu', 'cuda', 'cuda0') or None; got {target!r}")
    bc = _convert._broadcastable(broadcastable) if broadcastable is not None else []
    try:
        return _core.shared(value, name or "", bool(borrow), bc, target)
    except ValueError as e:
        if target is not None and str(e).startswith("device:"):
            raise ValueError(f"shared(target={target!r}): {e}") from None
        raise


__all__ = ["SharedVariable", "shared"]
