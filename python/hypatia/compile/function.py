"""hypatia.compile.function: function(), which compiles symbolic inputs and outputs (with
updates and givens) into a callable (Theano's compile.function; hypatia.function is this one)."""
import numpy as np

from hypatia import _convert, _core
from hypatia.compile.io import In, Out
from hypatia.compile.mode import get_mode
from hypatia.compile.profiling import _profiled
from hypatia.compile.sharedvalue import shared
from hypatia.configparser import change_flags, config

Variable = _core.Variable


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


def _given(var, value):
    """A given's replacement of var's type: as Theano's filter_variable, a value broadcastable where
    var is not (T.ones((1, 1)) for a matrix) takes var's pattern."""
    if not isinstance(value, Variable):
        value = _convert.as_tensor_variable(value)
    if isinstance(var, Variable) and value.type != var.type and value.dtype == var.dtype and \
            value.ndim == var.ndim and all(b or not vb for b, vb in zip(value.broadcastable, var.broadcastable)):
        value = _core.patternbroadcast(value, list(var.broadcastable))
    return value


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


class KeyedOutputsFunction:
    """A function compiled with a dict of outputs: each call returns a dict, key -> value (Theano's
    output_keys). Everything else (f.profile, f.maker, debugprint) is the compiled function's."""

    def __init__(self, fn, keys):
        self._fn = fn
        self.output_keys = keys

    def __call__(self, *args, **kwargs):
        return dict(zip(self.output_keys, self._fn(*args, **kwargs)))

    def __getattr__(self, name):
        return getattr(self._fn, name)

    def copy(self, *args, **kwargs):
        """Function.copy, keeping the dict of outputs."""
        return KeyedOutputsFunction(self._fn.copy(*args, **kwargs), self.output_keys)

    def __reduce__(self):
        return KeyedOutputsFunction, (self._fn, self.output_keys)


def function(inputs, outputs=None, mode=None, updates=None, givens=None, no_default_updates=False,
             accept_inplace=False, name=None, rebuild_strict=True, allow_input_downcast=None, profile=None,
             on_unused_input=None):
    """Compiles a callable from symbolic inputs to outputs (Theano's ``theano.function``).

    inputs: a list of Variables or In. outputs: a Variable or Out (the call returns one array), a
    list of them (the call returns a list), a dict of them with string keys (the call returns a
    dict; the outputs are computed in the keys' sorted order, as Theano's), or None. updates: shared variable -> new value (dict,
    OrderedDict or pairs), computed from the values before the call and committed together.
    givens: variable -> replacement. allow_input_downcast: accept lossy casts of arguments (None:
    only Python floats to floatX). profile: time every node (``f.profile.summary()``).
    on_unused_input: 'raise' (default), 'warn' or 'ignore'.
    """
    if not isinstance(inputs, (list, tuple)):
        raise TypeError("Input variables of a hypatia function should be contained in a list, even when there "
                        "is a single input.")
    if isinstance(outputs, dict):
        bad = [k for k in outputs if not isinstance(k, str)]
        if bad:
            raise TypeError(f"function: the keys of a dict of outputs must be strings, got {bad[0]!r}")
        keys = sorted(outputs)
        fn = function(inputs, [outputs[k] for k in keys], mode=mode, updates=updates, givens=givens,
                      no_default_updates=no_default_updates, accept_inplace=accept_inplace, name=name,
                      rebuild_strict=rebuild_strict, allow_input_downcast=allow_input_downcast, profile=profile,
                      on_unused_input=on_unused_input)
        return KeyedOutputsFunction(fn, keys)
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
            val = _convert.constant(np.asarray(val, dtype=var.dtype))
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
    giv = [(k, _given(k, v)) for k, v in _pairs(givens, "givens")]

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
            [(i.variable, i.name or "", i.value, i.borrow, i.mutable, i.allow_downcast) for i in ins],
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
            m._nan_guard,
            m._pre_func,
            m._post_func,
        )
    fn._hyp_inputs = ins
    fn._hyp_states = states
    fn._hyp_outputs = outs
    fn._hyp_mode = m
    fn._hyp_compile_args = compile_args  # what pickle stores
    if want_profile:
        _profiled.append(fn)
    return fn


__all__ = ["function"]
