"""hypatia.compile.io: In and Out, a compiled function's inputs and outputs with options (Theano's
compile.io)."""
import numpy as np

from hypatia import _convert, _core

Variable = _core.Variable


class In:
    """A function input with options (Theano's ``In``).

    value: default used when the caller leaves the input out (``f[v] = x`` replaces it for the next
    call, as Theano's refeed does). name: lets callers pass the input by keyword. borrow: the
    function may keep the argument between calls. mutable: the function may overwrite the
    argument's buffer. strict: the argument must already be a numpy array of the input's dtype and
    ndim (no conversion). update: the input's value after each call; the input then holds state
    (initially `value`, or the container another function's ``f.container[v]`` gives), read and
    set as ``f[v]``. Callers do not pass it unless implicit=False: a value passed then replaces
    the state, and the update is computed from it (Theano's semantics; unlike Theano, implicit=None
    means True for such an input).
    """

    def __init__(self, variable, name=None, value=None, update=None, mutable=None, strict=False,
                 allow_downcast=None, autoname=True, implicit=None, borrow=None, shared=False):
        if not isinstance(variable, Variable):
            raise TypeError(f"In: expected a symbolic Variable, got {type(variable).__name__}")
        if update is not None:
            # The input holds state between calls: `value` is its initial value (or another
            # function's container, f.container[v]) and `update` its value after each call.
            if value is None:
                raise ValueError(f"In({variable}, update=...): give the initial state as value=")
            if not isinstance(update, Variable):
                update = _convert.constant(np.asarray(update, dtype=variable.dtype))
        self.update = update
        self.variable = variable
        self.name = name if name is not None else (variable.name if autoname else None)
        self.value = value
        self.mutable = bool(mutable)
        self.borrow = bool(borrow) or self.mutable
        self.strict = strict
        self.allow_downcast = allow_downcast
        self.implicit = implicit

    def __repr__(self):
        return f"In({self.variable})"


class Out:
    """A function output; borrow=True returns a view of the function's internal storage, which a
    later call may overwrite (Theano's ``Out``)."""

    def __init__(self, variable, borrow=False):
        if not isinstance(variable, Variable):
            variable = _convert.as_tensor_variable(variable)
        self.variable = variable
        self.borrow = bool(borrow)

    def __repr__(self):
        return f"Out({self.variable}, borrow={self.borrow})"


# Theano's base classes of In and Out.
SymbolicInput = In
SymbolicOutput = Out

__all__ = ["In", "Out", "SymbolicInput", "SymbolicOutput"]
