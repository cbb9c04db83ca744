"""hypatia.compile.function: function(), which compiles symbolic inputs and outputs (with
updates and givens) into a callable (Theano's compile.function; hypatia.function is this one)."""
import copy

import numpy as np

from hypatia import _convert, _core
from hypatia.compile.io import In, Out
from hypatia.compile.mode import get_mode
from hypatia.compile.profiling import _profiled
from hypatia.compile.sharedvalue import shared
from hypatia.configparser import change_flags, config
from hypatia.gof.graph import ancestors, clone_replace

Variable = _core.Variable
Function = _core.Function


def _pairs(x, what):
    if x is None:
        return []
    if isinstance(x, dict):
        return list(x.items())
    if isinstance(x, (set, frozenset)):
        raise TypeError(f"{what} must be ordered (a dict or a list of pairs), got a {type(x).__name__}")
    if not isinstance(x, (list, tuple, Variable, str)) and hasattr(x, "__iter__"):
        x = list(x)  # d.items() (Keras' backend), a generator of pairs, zip(...)
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


class _Slot:
    """One input of a compiled function, in the order function() was given them (Theano's
    positional order and f[i]'s index). kind: 'arg' (a C++ input, at index cpp), 'state' (an
    In(update=...) input callers do not pass) or 'explicit_state' (In(update=..., implicit=False):
    callers may pass it). pos: the input's position among those callers pass (None for 'state').
    default: an 'arg' input's value from In(value=...), converted (None: required). pending: the
    value f[v] = x set, used by the next call that omits the input (Theano's refeed then puts the
    default back). state: the shared variable holding a state input's value; own_state: made by
    function() (a copy of the function gets a container of its own) rather than given by the
    caller (f.container[v] of another function, shared by copies)."""

    __slots__ = ("index", "spec", "variable", "name", "kind", "pos", "cpp", "strict", "downcast", "default",
                 "pending", "state", "own_state")

    def __init__(self, index, spec, kind, pos, cpp, downcast):
        self.index, self.spec, self.kind, self.pos, self.cpp = index, spec, kind, pos, cpp
        self.variable = spec.variable
        self.name = spec.name
        self.strict = bool(spec.strict)
        self.downcast = downcast
        self.default = self.pending = self.state = None
        self.own_state = False


def _fn_name(fn):
    """fn: a compiled function, or the name of one being compiled."""
    return (fn if isinstance(fn, str) else fn.name) or "<unnamed>"


def _label(fn, slot):
    """How messages name an input: as the C++ call's messages do (its position among the inputs
    callers pass, and its name)."""
    name = f" ('{slot.name}')" if slot.name else ""
    if slot.pos is None:
        return f"function '{_fn_name(fn)}': state input {slot.variable}{name}"
    return f"function '{_fn_name(fn)}': input {slot.pos}{name}"


def _describe(value):
    """What a value is, for messages: 'a numpy.ndarray of dtype float64 with 1 dimensions', 'an int (3)'."""
    d = _what(value)
    return ("an " if d[0] in "aeiou" else "a ") + d


def _what(value):
    if isinstance(value, np.ndarray):
        kind = "numpy.ndarray" if type(value) is np.ndarray else type(value).__name__
        return f"{kind} of dtype {value.dtype} with {value.ndim} dimensions"
    if isinstance(value, _core.GpuArray):
        return f"GpuArray of dtype {value.dtype} with {value.ndim} dimensions"
    if isinstance(value, np.generic):
        return f"numpy scalar ({type(value).__name__})"
    return f"{type(value).__name__} ({value!r:.60})"


def _check_strict(fn, slot, value, what):
    """In(strict=True): the value must already be of the input's type (Theano's filter with
    strict=True): a numpy array (or memmap) or a GpuArray whose dtype is the input's, with its ndim."""
    t = slot.variable.type
    if (type(value) is np.ndarray or isinstance(value, (np.memmap, _core.GpuArray))) and \
            value.dtype == np.dtype(t.dtype) and value.ndim == t.ndim:
        return
    raise TypeError(f"{_label(fn, slot)} is strict (In(..., strict=True)): {what} must be a numpy.ndarray of dtype "
                    f"{t.dtype} with {t.ndim} dimensions ({t}), as it is (no conversion); got {_describe(value)}")


def _filter_input(fn, slot, value, what):
    """value as the input takes it (In's strict and allow_downcast, the input's ndim and
    broadcastable dimensions): a numpy array, or a TypeError naming the function and the input.
    what: the value in messages ('the argument', 'the value set', ...)."""
    if value is None:
        raise TypeError(f"{_label(fn, slot)}: {what} is None, not a value of {slot.variable.type}")
    if slot.strict:
        _check_strict(fn, slot, value, what)
    try:
        return _core.filter_value(value, slot.variable.type, slot.downcast)
    except TypeError as e:
        msg = str(e)
        msg = msg[len("filter: "):] if msg.startswith("filter: ") else msg
        raise TypeError(f"{_label(fn, slot)}: {what} does not fit: {msg}") from None


_MISSING = object()


def _py_call(fn, args, kwargs):
    """The call of a function whose inputs need Python: strict ones, ones with a state callers
    may pass, or a default that f[v] = x replaced for this call. The arguments are matched to
    the inputs as Theano does, then the C++ call runs with every ordinary input given in order."""
    slots = fn._hyp_slots
    passable = fn._hyp_passable
    if len(args) > len(passable):
        raise TypeError(f"function '{_fn_name(fn)}': got {len(args)} positional arguments but the function has "
                        f"{len(passable)} inputs")
    given = {s.index: v for s, v in zip(passable, args)}
    for k, v in kwargs.items():
        named = [s for s in slots if s.name == k]
        if not named:
            raise TypeError(f"function '{_fn_name(fn)}' got an unexpected keyword argument '{k}'")
        if len(named) > 1:
            raise TypeError(f"function '{_fn_name(fn)}': ambiguous keyword argument '{k}': {len(named)} inputs "
                            "have that name")
        s = named[0]
        if s.kind == "state":
            raise TypeError(f"{_label(fn, s)} is implicit (In(update=...)): callers do not pass it; set its "
                            f"state as f[{k!r}] = value, or make it In(..., implicit=False)")
        if s.index in given:
            raise TypeError(f"function '{_fn_name(fn)}' got multiple values for input '{k}'")
        given[s.index] = v
    cargs = [None] * fn._hyp_n_cpp
    states = []
    for s in slots:
        v = given.get(s.index, _MISSING)
        if s.kind == "arg":
            if v is _MISSING:
                v = s.pending if s.pending is not None and s.default is not None else s.default
                if v is None:
                    raise TypeError(f"{_label(fn, s)} ({s.variable.type}) is missing: it was not given and has no "
                                    "default value")
            elif s.strict:
                _check_strict(fn, s, v, "the argument")
            cargs[s.cpp] = v
        elif v is not _MISSING:
            states.append((s, _filter_input(fn, s, v, "the argument")))
    old = [(s, s.state.get_value(borrow=True)) for s, _ in states]
    for s, v in states:
        s.state.set_value(v)
    try:
        out = _cpp_call(fn, *cargs)
    except BaseException:
        # A failed call changes no state, the one a caller passed included.
        for s, v in old:
            s.state.set_value(v, borrow=True)
        raise
    if any(s.pending is not None for s in slots):
        # Theano's refeed: the defaults are back after a call.
        for s in slots:
            s.pending = None
        if not fn._hyp_needs_py:
            fn.__class__ = Function
        fn._hyp_fast = _fast_checks(slots)
    return out


def _fast_checks(slots):
    """PyCallFunction's quick path where every input is an ordinary one and none is pending: per
    input, (dtype, ndim) a strict one's argument must have, or None; None where it does not apply."""
    if any(s.kind != "arg" or s.pending is not None for s in slots):
        return None
    return tuple((np.dtype(s.variable.dtype), s.variable.ndim) if s.strict else None for s in slots)


class PyCallFunction(Function):
    """A compiled function whose calls go through Python first (_py_call): one with strict inputs or
    a state callers may pass (for good), or one whose default f[v] = x replaced (until the next
    call). Everything else is the C++ Function's; other functions keep the C++ call path."""

    __slots__ = ()

    def __call__(self, *args, **kwargs):
        fast = self._hyp_fast
        if fast is not None and not kwargs and len(args) == len(fast):
            # Every ordinary input given in order, none pending: only the strict ones' checks.
            for want, v in zip(fast, args):
                if want is not None and not (type(v) is np.ndarray and v.dtype == want[0] and v.ndim == want[1]):
                    break
            else:
                return _cpp_call(self, *args)
        return _py_call(self, args, kwargs)


_cpp_call = Function.__call__


def _set_pending(fn, slot, value):
    """f[v] = value for an ordinary input: the next call that omits v uses value (Theano's
    container, refed with the default after the call)."""
    what = f"the value set as f[{slot.name or slot.index!r}] (the old one stays)"
    slot.pending = _filter_input(fn, slot, value, what)
    fn._hyp_fast = None
    if type(fn) is Function:
        fn.__class__ = PyCallFunction


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

    def __getitem__(self, key):
        return self._fn[key]

    def __setitem__(self, key, value):
        self._fn[key] = value

    def __contains__(self, key):
        return key in self._fn

    def copy(self, *args, **kwargs):
        """Function.copy, keeping the dict of outputs."""
        return KeyedOutputsFunction(self._fn.copy(*args, **kwargs), self.output_keys)

    def __copy__(self):
        return self.copy()

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

    # Every input as callers see it (Theano's order): ordinary ones are the C++ function's
    # inputs; those with an update keep their state in a shared variable (their container): the
    # graph reads the container in their place and the update writes it, committed with the others.
    states, slots = [], []
    declared, user_upd, user_giv = list(ins), list(upd), list(giv)
    n_pos = n_cpp = 0
    for k, i in enumerate(ins):
        downcast = i.allow_downcast if i.allow_downcast is not None else allow_input_downcast
        if i.update is None:
            slot = _Slot(k, i, "arg", n_pos, n_cpp, downcast)
            n_pos, n_cpp = n_pos + 1, n_cpp + 1
            slots.append(slot)
            continue
        explicit = i.implicit is False
        slot = _Slot(k, i, "explicit_state" if explicit else "state", n_pos if explicit else None, None, downcast)
        n_pos += explicit
        slots.append(slot)
        sv = i.value
        own = getattr(i, "_hyp_own_state", False)  # (a container function() made, as pickled)
        if not (isinstance(sv, Variable) and sv.kind == "shared"):
            if slot.strict:
                _check_strict(name or "", slot, sv, "its initial value")
            sv = shared(np.asarray(i.value, dtype=i.variable.dtype), name=i.variable.name,
                        broadcastable=i.variable.broadcastable)
            own = True
        if sv.dtype != i.variable.dtype or tuple(sv.broadcastable) != tuple(i.variable.broadcastable):
            raise TypeError(f"In({i.variable}, update=...): the container {sv} is {sv.dtype} "
                            f"{tuple(sv.broadcastable)}, the input {i.variable.dtype} {tuple(i.variable.broadcastable)}")
        slot.state, slot.own_state = sv, own
        states.append((i.variable, sv))
        giv.append((i.variable, sv))
        upd.append((sv, i.update))
        spec = copy.copy(i)
        spec.value = sv
        spec._hyp_own_state = own
        declared[k] = spec
    if states:
        # A given's replacement reading a state input reads its container too (the givens are
        # substituted all at once, so the container's given would not reach into it).
        state_ids = {id(v) for v, _ in states}
        subst = [(v, sv) for v, sv in states]
        giv = [(k, clone_replace(v, subst)
                if id(k) not in state_ids and any(id(a) in state_ids for a in ancestors([v])) else v)
               for k, v in giv]
    for slot in slots:
        if slot.kind == "arg" and slot.spec.value is not None:
            # The default as the C++ function takes it (a view of a numpy array that fits), and
            # as f[v] reads it.
            slot.default = _filter_input(name or "", slot, slot.spec.value, "its default value")
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
            [(i.variable, i.name or "", sl.default, i.borrow, i.mutable, i.allow_downcast)
             for i, sl in zip(ins, [sl for sl in slots if sl.kind == "arg"])],
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
    fn._hyp_slots = slots
    fn._hyp_passable = [s for s in slots if s.pos is not None]
    fn._hyp_n_cpp = n_cpp
    fn._hyp_needs_py = any(s.strict or s.kind == "explicit_state" for s in slots)
    fn._hyp_fast = _fast_checks(slots)
    if fn._hyp_needs_py:
        fn.__class__ = PyCallFunction
    fn._hyp_outputs = outs
    fn._hyp_mode = m
    fn._hyp_compile_args = compile_args  # what pickle stores
    if want_profile:
        _profiled.append(fn)
    return fn


__all__ = ["function"]
