"""hypatia.compile.function_module: the compiled function's class (Theano's compile.function_module).

A compiled function is a ``hypatia._core.Function``: calling it runs entirely in C++ (arguments are
viewed in place when they are numpy arrays of the right dtype, outputs are numpy arrays that own
the C++ buffers). This module adds Theano's attributes: f.maker (what it was compiled from, with
f.maker.fgraph), f.container[v] / f[v] (the state of an In(v, update=...) input).
"""
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
    compiled function has storage of its own (the copy computes the same values either way)."""
    from hypatia.compile.function import function
    args = getattr(self, "_hyp_compile_args", None)
    if args is None:
        raise TypeError("Function.copy: this function was not built by hypatia.function()")
    args = dict(args)
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
    return function(**args)


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
Function.get_shared = _get_shared
Function.maker = property(FunctionMaker, doc="What the function was compiled from (Theano's f.maker).")
Function.free = lambda self: None
Function.__repr__ = lambda self: f"<hypatia.Function {self.name or '<unnamed>'}>"


def _state_of(fn, key):
    """The container of the In(update=...) input `key` (the variable or its name) of fn."""
    states = getattr(fn, "_hyp_states", [])
    for var, sv in states:
        if key is var or (isinstance(key, str) and key == var.name):
            return sv
    names = ", ".join(str(v) for v, _ in states) or "none"
    raise KeyError(f"{key!r} is not an input with an update of this function (those: {names})")


class _Containers:
    """f.container[v]: the shared variable holding the state of f's input v (In(v, update=...)),
    which another function may take as its In(v, value=f.container[v], update=...)."""

    def __init__(self, fn):
        self._fn = fn

    def __getitem__(self, key):
        return _state_of(self._fn, key)


def _function_getitem(self, key):
    return _state_of(self, key).get_value()


def _function_setitem(self, key, value):
    _state_of(self, key).set_value(value)


Function.__getitem__ = _function_getitem
Function.__setitem__ = _function_setitem
Function.container = property(_Containers)

__all__ = ["Function", "FunctionMaker"]
