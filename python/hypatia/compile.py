"""function(), In, Out, shared and Mode: Theano's compile module on hypatia._core.

A compiled function is a ``hypatia._core.Function``: calling it runs entirely in C++ (arguments are
viewed in place when they are numpy arrays of the right dtype, outputs are numpy arrays that own
the C++ buffers).
"""
import atexit
import sys
from collections import OrderedDict

import numpy as np

from hypatia import _core
from hypatia.configparser import change_flags, config

Function = _core.Function
Variable = _core.Variable


class In:
    """A function input with options (Theano's ``In``).

    value: default used when the caller leaves the input out. name: lets callers pass the input by
    keyword. borrow: the function may keep the argument between calls. mutable: the function may
    overwrite the argument's buffer. update: the input's value after each call; the input then
    holds state (initially `value`, or the container another function's ``f.container[v]``
    gives) that the caller does not pass and reads or sets as ``f[v]``.
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
            if implicit is False:
                raise ValueError(f"In({variable}, update=..., implicit=False): an input with an update is "
                                 "implicit (callers do not pass it; read and set its state as f[variable])")
            if not isinstance(update, Variable):
                from hypatia.tensor.basic import constant

                update = constant(np.asarray(update, dtype=variable.dtype))
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
            from hypatia.tensor.basic import as_tensor_variable

            variable = as_tensor_variable(variable)
        self.variable = variable
        self.borrow = bool(borrow)

    def __repr__(self):
        return f"Out({self.variable}, borrow={self.borrow})"


class Mode:
    """A compilation mode: the rewrite pipeline and the kernels.

    optimizer: 'fast_run' (every rewrite), 'fast_compile' (the cheap ones), None (the graph as
    written) or 'default' (config.mode and config.optimizer). linker='reference' runs the naive
    reference kernels (the test oracle) on the graph as written unless an optimizer is named.
    including() / excluding() add or remove rewrites by name or tag.
    """

    def __init__(self, linker=None, optimizer="default", including=(), excluding=(), name=None):
        self.linker = linker or "cpu"
        self.optimizer = optimizer
        self._including = tuple(including)
        self._excluding = tuple(excluding)
        self._name = name  # an engine mode with its own behavior (DebugMode)

    @property
    def backend(self):
        return "reference" if self.linker in ("reference", "py") else "cpu"

    @property
    def pipeline(self):
        """The C++ pipeline name, or None for the configuration's default."""
        if self._name is not None:
            return self._name
        opt = self.optimizer
        if opt == "default":
            return None
        if opt is None or opt == "None":
            return "NONE"
        if opt in ("fast_compile", "merge", "o1"):
            return "FAST_COMPILE"
        return "FAST_RUN"

    def including(self, *tags):
        return Mode(self.linker, self.optimizer, self._including + tags, self._excluding, self._name)

    def excluding(self, *tags):
        return Mode(self.linker, self.optimizer, self._including, self._excluding + tags, self._name)

    def requiring(self, *tags):
        return self.including(*tags)

    def __repr__(self):
        return f"Mode(linker={self.linker!r}, optimizer={self.optimizer!r})"


class DebugMode(Mode):
    """FAST_RUN, with every kernel checked against its node's reference kernel on each call (outputs
    must agree, inputs outside the destroy_map must come out unchanged)."""

    def __init__(self, **kwargs):
        super().__init__("cpu", "fast_run", name="DebugMode")


_PREDEFINED_MODES = {
    "FAST_RUN": Mode("cpu", "fast_run"),
    "FAST_COMPILE": Mode("cpu", "fast_compile"),
    "DebugMode": DebugMode(),
    "DEBUG_MODE": DebugMode(),
    "ProfileMode": Mode("cpu", "fast_run"),
    "NONE": Mode("cpu", None),
    "REFERENCE": Mode("reference", "default"),
}


def get_mode(mode):
    """The Mode for a mode argument (None: config.mode)."""
    if mode is None:
        mode = config.mode
    if isinstance(mode, Mode):
        return mode
    if isinstance(mode, str):
        try:
            return _PREDEFINED_MODES[mode]
        except KeyError:
            raise ValueError(f"unknown mode {mode!r}; expected one of {sorted(_PREDEFINED_MODES)}") from None
    raise TypeError(f"mode must be a string or a Mode, got {type(mode).__name__}")


def get_default_mode():
    return get_mode(None)


class FunctionGraphView:
    """``f.maker.fgraph``: the compiled graph of a function (inputs, outputs, toposort())."""

    def __init__(self, fn, inputs):
        self._fn = fn
        self.inputs = inputs

    def toposort(self):
        return self._fn.toposort()

    @property
    def outputs(self):
        return self._fn.graph_outputs()

    @property
    def apply_nodes(self):
        return set(self._fn.toposort())

    def __str__(self):
        return "FunctionGraph(" + ", ".join(str(o) for o in self.outputs) + ")"


class FunctionMaker:
    """``f.maker``: what the function was compiled from (Theano's FunctionMaker)."""

    def __init__(self, fn):
        self.inputs = fn._hyp_inputs
        self.outputs = fn._hyp_outputs
        self.mode = fn._hyp_mode
        self.fgraph = FunctionGraphView(fn, [i.variable for i in self.inputs])


def _profile_summary(self, file=sys.stderr, n_ops_to_print=20, n_apply_to_print=20):
    """Prints Theano-style profile tables (per op class, per op, per apply node)."""
    print(self.summary_text(), file=file)


_core.Profile.summary = _profile_summary
Function.maker = property(FunctionMaker, doc="What the function was compiled from (Theano's f.maker).")
Function.free = lambda self: None
Function.__repr__ = lambda self: f"<hypatia.Function {self.name or '<unnamed>'}>"

_profiled = []


@atexit.register
def _print_profiles():
    if not _profiled:
        return
    for f in _profiled:
        if f.profile is not None:
            f.profile.summary(file=sys.stderr)
    _profiled.clear()
    # Printed here: the C++ registry would print them again at static destruction.
    config.profile = False


def _pairs(x, what):
    if x is None:
        return []
    if isinstance(x, dict):
        return list(x.items())
    if isinstance(x, (list, tuple)):
        out = []
        for p in x:
            if not isinstance(p, (list, tuple)) or len(p) != 2:
                raise TypeError(f"{what} must be a dict or a list of (variable, value) pairs; got item {p!r}")
            out.append(tuple(p))
        return out
    raise TypeError(f"{what} must be a dict, OrderedDict or a list of pairs, got {type(x).__name__}")


def _leaves(roots):
    seen, out = set(), []
    for node in _core.toposort(roots):
        for v in node.inputs:
            if v.owner is None and id(v) not in seen:
                seen.add(id(v))
                out.append(v)
    for v in roots:
        if v.owner is None and id(v) not in seen:
            seen.add(id(v))
            out.append(v)
    return out


def function(inputs, outputs=None, mode=None, updates=None, givens=None, no_default_updates=False,
             accept_inplace=False, name=None, rebuild_strict=True, allow_input_downcast=None, profile=None,
             on_unused_input=None):
    """Compiles a callable from symbolic inputs to outputs (Theano's ``theano.function``).

    inputs: a list of Variables or In. outputs: a Variable or Out (the call returns one array), a
    list of them (the call returns a list), or None. updates: shared variable -> new value (dict,
    OrderedDict or pairs), computed from the values before the call and committed together.
    givens: variable -> replacement. allow_input_downcast: accept lossy casts of arguments (None:
    only Python floats to floatX). profile: time every node (``f.profile.summary()``).
    on_unused_input: 'raise' (default), 'warn' or 'ignore'.
    """
    from hypatia.tensor.basic import as_tensor_variable, constant

    if not isinstance(inputs, (list, tuple)):
        raise TypeError("Input variables of a hypatia function should be contained in a list, even when there "
                        "is a single input.")
    ins = [i if isinstance(i, In) else In(i) for i in inputs]
    unpack = False
    if outputs is None:
        outs = []
    elif isinstance(outputs, (list, tuple)):
        outs = [o if isinstance(o, Out) else Out(o) for o in outputs]
    else:
        outs = [outputs if isinstance(outputs, Out) else Out(outputs)]
        unpack = True

    upd = []
    for var, val in _pairs(updates, "updates"):
        if not isinstance(var, Variable) or var.kind != "shared":
            raise TypeError(f"updates must target shared variables; got {var!r}")
        if not isinstance(val, Variable):
            val = constant(np.asarray(val, dtype=var.dtype))
        upd.append((var, val))
    if not no_default_updates:
        updated = {id(v) for v, _ in upd}
        roots = [o.variable for o in outs] + [v for _, v in upd]
        for leaf in _leaves(roots):
            du = getattr(leaf, "default_update", None) if leaf.kind == "shared" else None
            if du is not None and id(leaf) not in updated:
                if isinstance(no_default_updates, (list, tuple)) and any(leaf is v for v in no_default_updates):
                    continue
                upd.append((leaf, du))
                updated.add(id(leaf))
    giv = [(k, v if isinstance(v, Variable) else as_tensor_variable(v)) for k, v in _pairs(givens, "givens")]

    # Inputs with an update keep their state in a shared variable (their container): the graph
    # reads the container in their place and the update writes it, committed with the others.
    states = []
    declared, user_upd, user_giv = list(ins), list(upd), list(giv)
    for k, i in enumerate(ins):
        if i.update is None:
            continue
        sv = i.value
        if not (isinstance(sv, Variable) and sv.kind == "shared"):
            sv = shared(np.asarray(i.value, dtype=i.variable.dtype), name=i.variable.name,
                        broadcastable=i.variable.broadcastable)
        if sv.dtype != i.variable.dtype or tuple(sv.broadcastable) != tuple(i.variable.broadcastable):
            raise TypeError(f"In({i.variable}, update=...): the container {sv} is {sv.dtype} "
                            f"{tuple(sv.broadcastable)}, the input {i.variable.dtype} {tuple(i.variable.broadcastable)}")
        states.append((i.variable, sv))
        giv.append((i.variable, sv))
        upd.append((sv, i.update))
        declared[k] = In(i.variable, name=i.name, value=sv, update=i.update)
    ins = [i for i in ins if i.update is None]

    m = get_mode(mode)
    compile_args = dict(inputs=declared, outputs=outputs if unpack else outs, mode=m, updates=user_upd, givens=user_giv,
                        no_default_updates=True, name=name, allow_input_downcast=allow_input_downcast,
                        profile=profile, on_unused_input=on_unused_input)
    want_profile = None if profile is None else bool(profile)
    if want_profile is None and config.profile:
        want_profile = True
    flags = {}
    if m._including:
        flags["optimizer_including"] = ":".join(filter(None, [config.optimizer_including, *m._including]))
    if m._excluding:
        flags["optimizer_excluding"] = ":".join(filter(None, [config.optimizer_excluding, *m._excluding]))
    with change_flags(**flags):
        fn = _core.compile_function(
            [(i.variable, i.name or "", i.value, i.borrow, i.mutable) for i in ins],
            [(o.variable, o.borrow) for o in outs],
            upd,
            giv,
            allow_input_downcast,
            want_profile,
            None,
            name or "",
            on_unused_input or "raise",
            m.backend,
            m.pipeline,
            unpack,
        )
    fn._hyp_inputs = ins
    fn._hyp_states = states
    fn._hyp_outputs = outs
    fn._hyp_mode = m
    fn._hyp_compile_args = compile_args  # what pickle stores
    if want_profile:
        _profiled.append(fn)
    return fn


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


_core.Function.__getitem__ = _function_getitem
_core.Function.__setitem__ = _function_setitem
_core.Function.container = property(_Containers)


def shared(value, name=None, strict=False, allow_downcast=None, borrow=False, broadcastable=None, **kwargs):
    """A shared variable holding `value` (Theano's ``theano.shared``).

    The value is copied unless borrow=True, in which case a numpy array is used in place (no copy).
    broadcastable defaults to no broadcastable dimension.
    """
    if isinstance(value, Variable):
        raise TypeError("shared() takes a value (a numpy array or a number), not a symbolic Variable")
    return _core.shared(value, name or "", bool(borrow), list(broadcastable) if broadcastable is not None else [])


__all__ = ["function", "In", "Out", "Mode", "DebugMode", "shared", "Function", "get_mode", "get_default_mode",
           "FunctionMaker", "OrderedDict"]
