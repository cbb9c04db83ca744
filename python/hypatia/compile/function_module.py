"""hypatia.compile.function_module: the compiled function's class (Theano's compile.function_module).

A compiled function is a ``hypatia._core.Function``: calling it runs entirely in C++ (arguments are
viewed in place when they are numpy arrays of the right dtype, outputs are numpy arrays that own
the C++ buffers). This module adds Theano's attributes: f.maker (what it was compiled from, with
f.maker.fgraph), f[v] / f[v] = x (an input's default for the next call, or the state of an
In(v, update=...) input; f.value[v] too), f.container[v] (that state's shared variable), f.copy().
"""
import copy

import numpy as np

from hypatia import _core

Function = _core.Function


class FunctionGraphView:
    """``f.maker.fgraph``: the compiled graph of a function (inputs, outputs, toposort())."""

    def __init__(self, fn, inputs):
        self._fn = fn
        self.inputs = inputs

    def toposort(self):
        """The nodes in execution order; those that run on a GPU as hypatia.gpuarray.GpuApply
        (their op a GpuElemwise, GpuCAReduce, ...: Theano's names), but control flow: a Scan
        (ScanGrad) or IfElse on the GPU is a Scan or IfElse all the same, as Theano's were (its
        info['gpua'], IfElse's gpu flag)."""
        nodes = self._fn.toposort()
        devices = self._fn.node_devices()
        if all(d == "cpu" for d in devices):
            return nodes
        from hypatia import _core
        from hypatia.gpuarray import GpuApply

        control = (_core.Scan, _core.ScanGrad, _core.IfElse)
        return [n if d == "cpu" or isinstance(n.op, control) else GpuApply(n, d) for n, d in zip(nodes, devices)]

    @property
    def outputs(self):
        return self._fn.graph_outputs()

    @property
    def apply_nodes(self):
        return set(self.toposort())

    def __str__(self):
        return "FunctionGraph(" + ", ".join(str(o) for o in self.outputs) + ")"


class FunctionMaker:
    """``f.maker``: what the function was compiled from (Theano's FunctionMaker)."""

    def __init__(self, fn):
        self.inputs = fn._hyp_inputs
        self.outputs = fn._hyp_outputs
        self.mode = fn._hyp_mode
        self.fgraph = FunctionGraphView(fn, [i.variable for i in self.inputs])


def _copy(self, share_memory=False, swap=None, delete_updates=False, name=None, profile=None):
    """A new function compiled from what this one was (Theano's Function.copy). swap: {shared
    variable: shared variable of the same type}: the copy reads and updates the new ones instead.
    delete_updates: the copy has no updates. share_memory is accepted for Theano's signature: each
    compiled function has storage of its own (the copy computes the same values either way).

    As in Theano, the copy's inputs have containers of their own, holding the current values: an
    In(update=...) state starts from this function's current state and goes on separately (a
    container given as In(value=g.container[v]) stays shared), and a default that f[v] = x
    replaced for the next call is replaced in the copy too (not for a mutable input)."""
    from hypatia.compile.function import _set_pending, function
    args = getattr(self, "_hyp_compile_args", None)
    if args is None:
        raise TypeError("Function.copy: this function was not built by hypatia.function()")
    args = dict(args)
    slots = getattr(self, "_hyp_slots", [])
    ins = list(args["inputs"])
    for slot in slots:
        if slot.own_state:
            spec = copy.copy(ins[slot.index])
            spec.value = slot.state.get_value()
            spec.__dict__.pop("_hyp_own_state", None)
            ins[slot.index] = spec
    args["inputs"] = ins
    swap = dict(swap or {})
    for old, new in swap.items():
        if getattr(old, "kind", None) != "shared" or getattr(new, "kind", None) != "shared":
            raise TypeError(f"Function.copy: swap maps shared variables to shared variables, got {old!r}: {new!r}")
        if old.type != new.type:
            raise TypeError(f"Function.copy: swap's {old} ({old.type}) and {new} ({new.type}) differ in type")

    # The swapped variables are replaced where the graph reads them as givens are (outputs,
    # updates and the givens' own values alike), and their updates go to the new ones.
    args["updates"] = [] if delete_updates else [(swap.get(v, v), e) for v, e in args["updates"]]
    args["givens"] = list(args["givens"]) + list(swap.items())
    if name is not None:
        args["name"] = name
    if profile is not None:
        args["profile"] = profile
    new = function(**args)
    for old_slot, new_slot in zip(slots, getattr(new, "_hyp_slots", [])):
        if old_slot.pending is not None and not old_slot.spec.mutable:
            _set_pending(new, new_slot, old_slot.pending)
    return new


def _get_shared(self):
    """The shared variables the function reads or updates (Theano's Function.get_shared): those of
    the graph it was compiled from (outputs, update values, givens' values), in the order of that
    graph, then the updated ones it does not read; an In(update=...) input's own state is not
    one of them."""
    from hypatia.compile.io import Out

    args = getattr(self, "_hyp_compile_args", None)
    if args is None:
        raise TypeError("Function.get_shared: this function was not built by hypatia.function()")
    outs = args["outputs"]
    outs = outs if isinstance(outs, (list, tuple)) else [outs]
    roots = [o.variable if isinstance(o, Out) else o for o in outs]
    roots += [e for _, e in args["updates"]] + [v for _, v in args["givens"]]
    roots += [i.update for i in args["inputs"] if i.update is not None]
    state = {id(i.value) for i in args["inputs"] if i.update is not None}
    seen, out = set(), []
    graph = [v for n in _core.toposort(roots) for v in n.inputs] + roots + [v for v, _ in args["updates"]]
    for v in graph:
        if getattr(v, "kind", None) == "shared" and id(v) not in seen and id(v) not in state:
            seen.add(id(v))
            out.append(v)
    return out


Function.copy = _copy
Function.__copy__ = lambda self: self.copy()  # copy.copy(f), as Theano's
Function.get_shared = _get_shared
Function.maker = property(FunctionMaker, doc="What the function was compiled from (Theano's f.maker).")
Function.free = lambda self: None
Function.__repr__ = lambda self: f"<hypatia.Function {self.name or '<unnamed>'}>"


class UnknownInputError(KeyError, TypeError):
    """f[key] for a key that names no input of f: a KeyError, and the TypeError Theano raised."""

    def __str__(self):
        return str(self.args[0]) if self.args else ""


def _slot_of(fn, key):
    """The input of fn that key designates (Theano's Function.finder): its index in the inputs as
    function() was given them, its variable, or its name (a name two inputs have is ambiguous)."""
    slots = getattr(fn, "_hyp_slots", None)
    if slots is None:
        raise TypeError("f[...]: this function was not built by hypatia.function()")
    if isinstance(key, _core.Variable):
        found = [s for s in slots if s.variable is key]
    elif isinstance(key, str):
        found = [s for s in slots if s.name == key]
        if len(found) > 1:
            raise TypeError(f"Ambiguous name: {key!r} names {len(found)} inputs of function "
                            f"'{fn.name or '<unnamed>'}' - please check the names of the inputs of your function "
                            "for duplicates (use the variable or the input's index instead)")
    elif isinstance(key, (int, np.integer)) and not isinstance(key, bool):
        found = [slots[key]] if -len(slots) <= key < len(slots) else []
    else:
        found = []
    if not found:
        names = ", ".join(s.name or str(s.variable) for s in slots) or "none"
        raise UnknownInputError(f"{key!r} is not an input of function '{fn.name or '<unnamed>'}' (its inputs: {names})")
    return found[0]


def _state_of(fn, key):
    """The container of the In(update=...) input `key` (the variable, its name or its index) of fn."""
    slot = _slot_of(fn, key)
    if slot.state is None:
        names = ", ".join(s.name or str(s.variable) for s in fn._hyp_slots if s.state is not None) or "none"
        raise UnknownInputError(f"{key!r} is not an input with an update of function '{fn.name or '<unnamed>'}' "
                                f"(those: {names})")
    return slot.state


class _Containers:
    """f.container[v]: the shared variable holding the state of f's input v (In(v, update=...)),
    which another function may take as its In(v, value=f.container[v], update=...)."""

    def __init__(self, fn):
        self._fn = fn

    def __getitem__(self, key):
        return _state_of(self._fn, key)

    def __contains__(self, key):
        return _contains(self._fn, key)


def _function_getitem(self, key):
    """f[v] (Theano's f.value[v]): an In(update=...) input's state; an ordinary input's value
    for the next call that omits it (the default, or what f[v] = x set), None where there is none."""
    slot = _slot_of(self, key)
    if slot.state is not None:
        return slot.state.get_value()
    return slot.pending if slot.pending is not None else slot.default


def _function_setitem(self, key, value):
    """f[v] = value: an In(update=...) input's state becomes value; an ordinary input's default
    is value for the next call (Theano puts the default back after each call; an input without
    one stays required). The value is checked and converted as an argument is; a bad one raises
    TypeError and changes nothing."""
    from hypatia.compile.function import _filter_input, _set_pending

    slot = _slot_of(self, key)
    if slot.state is not None:
        what = f"the state set as f[{slot.name or slot.index!r}] (the old one stays)"
        slot.state.set_value(_filter_input(self, slot, value, what))
    else:
        _set_pending(self, slot, value)


def _contains(fn, key):
    """v in f: whether f[v] designates an input (an ambiguous name does, as in Theano)."""
    if getattr(fn, "_hyp_slots", None) is None:
        return False
    try:
        _slot_of(fn, key)
    except UnknownInputError:
        return False
    except TypeError:
        return True
    return True


Function.__getitem__ = _function_getitem
Function.__setitem__ = _function_setitem
Function.__contains__ = _contains
Function.container = property(_Containers)
Function.value = property(lambda self: _Values(self), doc="Theano's f.value[v]: the same as f[v].")


class _Values:
    """f.value[v] / f.value[v] = x: Theano's spelling of f[v]."""

    def __init__(self, fn):
        self._fn = fn

    def __getitem__(self, key):
        return _function_getitem(self._fn, key)

    def __setitem__(self, key, value):
        _function_setitem(self._fn, key, value)

    def __contains__(self, key):
        return _contains(self._fn, key)


__all__ = ["Function", "FunctionMaker"]
