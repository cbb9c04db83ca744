"""hypatia.scan_module.scan: Theano's scan, map, reduce, foldl, foldr and scan_checkpoints.

``scan`` calls ``fn`` once on symbolic stand-ins for one step (sequence elements at their taps,
past states at theirs, the non-sequences) and builds one Scan node (C++: the body is compiled with
the function into a sub-program run once per step; its gradient is BPTT through a ScanGrad node).
Shared variables the body updates (the updates it returns, and the default updates of shared
variables it reads, such as random states drawn in the body) become states carried from step to
step; the returned updates dictionary holds their final values, for ``function(updates=...)``.
"""
import collections
import numbers

import numpy as np

from hypatia import _convert, _core
from hypatia.gof import graph as _graph

Variable = _core.Variable


class until:
    """The stop condition of a scan body (Theano's scan_module.until): return it with the outputs,
    ``return h, until(h > 10)``; the loop stops after the step where it holds."""

    def __init__(self, condition):
        c = _convert.as_tensor_variable(condition)
        if c.ndim != 0:
            raise TypeError(f"until: the condition must be a scalar, got {c.type}")
        self.condition = c


class OrderedUpdates(collections.OrderedDict):
    """The updates scan returns: shared variable -> its value after the loop."""


def _as_list(x):
    if x is None:
        return []
    if isinstance(x, (list, tuple)):
        return list(x)
    return [x]


def _fresh(type_, name):
    return type_(name) if name else type_()


def _split_return(ret, who):
    """Theano's forms: outputs; (outputs, updates); (outputs, until); (outputs, updates, until);
    updates alone (a dict)."""
    outputs, updates, cond = [], [], None
    if isinstance(ret, dict) or (isinstance(ret, (list, tuple)) and ret and all(
            isinstance(e, tuple) and len(e) == 2 and isinstance(e[0], Variable) and e[0].kind == "shared"
            for e in ret) and not isinstance(ret, tuple)):
        return [], list(ret.items()) if isinstance(ret, dict) else list(ret), None
    if isinstance(ret, until):
        return [], [], ret.condition
    if isinstance(ret, tuple) and ret and (isinstance(ret[-1], until) or isinstance(ret[-1], (dict, OrderedUpdates))):
        parts = list(ret)
        if isinstance(parts[-1], until):
            cond = parts.pop().condition
        if parts and isinstance(parts[-1], dict):
            updates = list(parts.pop().items())
        if len(parts) == 1:
            outputs = _as_list(parts[0])
        elif len(parts) == 0:
            outputs = []
        else:
            raise ValueError(f"{who}: the body returned {ret!r}; expected outputs, (outputs, updates), "
                             "(outputs, until) or (outputs, updates, until)")
        return outputs, updates, cond
    return _as_list(ret), [], None


def scan(fn, sequences=None, outputs_info=None, non_sequences=None, n_steps=None, truncate_gradient=-1,
         go_backwards=False, mode=None, name=None, profile=False, allow_gc=None, strict=False, return_list=False):
    """Theano's scan: returns (outputs, updates). outputs is one variable, or a list when there are
    several (or return_list); each recurrent output is the trace of its state over the steps
    (without the initial values), each output without an initial value the trace of what fn
    returned for it. updates maps every shared variable the body updates to its value after the
    loop. mode, profile and allow_gc are accepted for Theano's signature (the body is compiled
    with the outer function's mode and backend)."""
    who = f"scan '{name}'" if name else "scan"
    seqs_in = _as_list(sequences)
    outs_info = _as_list(outputs_info)
    non_seqs = _as_list(non_sequences)

    # ---- sequences: (outer variable, user taps)
    seq_specs = []
    for s in seqs_in:
        if isinstance(s, dict):
            if "input" not in s:
                raise ValueError(f"{who}: a sequence given as a dict needs an 'input' entry")
            taps = s.get("taps", [0])
            taps = [0] if taps is None else [int(t) for t in _as_list(taps)]
            v = _convert.as_tensor_variable(s["input"])
        else:
            v, taps = _convert.as_tensor_variable(s), [0]
        if v.ndim < 1:
            raise ValueError(f"{who}: sequence {v} has no dimension to iterate over")
        if len(set(taps)) != len(taps) or not taps:
            raise ValueError(f"{who}: the taps of sequence {v} must be distinct, got {taps}")
        seq_specs.append((v, taps))

    # ---- outputs_info: per output, None (a nit-sot) or (initial value, taps)
    out_specs = []
    for o in outs_info:
        if o is None:
            out_specs.append(None)
            continue
        if isinstance(o, dict):
            init = o.get("initial")
            if init is None:
                out_specs.append(None)
                continue
            taps = o.get("taps", [-1])
            taps = [-1] if taps is None else [int(t) for t in _as_list(taps)]
        else:
            init, taps = o, [-1]
        if any(t >= 0 for t in taps):
            raise ValueError(f"{who}: an output's taps must be negative (past steps), got {taps}")
        if len(set(taps)) != len(taps) or not taps:
            raise ValueError(f"{who}: an output's taps must be distinct, got {taps}")
        out_specs.append((_convert.as_tensor_variable(init), taps))

    # ---- stand-ins for fn's arguments, in Theano's order
    args = []
    seq_vars, seq_layout = [], []
    for v, taps in seq_specs:
        x = v[::-1] if go_backwards else v
        # Reversed, a tap k reads what tap -k reads of the reversed sequence (Theano reverses each
        # shifted slice).
        eff = [-t for t in taps] if go_backwards else list(taps)
        order = sorted(range(len(taps)), key=lambda i: eff[i])
        elem_type = x[0].type
        stand = [_fresh(elem_type, f"{v.name}[t{taps[i]:+d}]" if v.name else None) for i in range(len(taps))]
        args.extend(stand)
        seq_vars.append(x)
        seq_layout.append(([eff[i] for i in order], [stand[i] for i in order]))

    state_windows, state_layout, state_out_index = [], [], []
    for idx, spec in enumerate(out_specs):
        if spec is None:
            continue
        init, taps = spec
        window = -min(taps)
        if window == 1 and taps == [-1]:
            win = _core.expand_dims(init, 0)
            elem_type = init.type
        else:
            if init.ndim < 1:
                raise ValueError(f"{who}: output {idx} reads {window} past values (taps {taps}); its initial "
                                 f"value needs a first axis of at least {window} entries, got {init.type}")
            if init.kind == "constant" and init.data.shape[0] < window:
                raise ValueError(f"{who}: output {idx} reads {window} past values (taps {taps}) but its initial "
                                 f"value has only {init.data.shape[0]} entries on its first axis")
            win = init
            elem_type = init[0].type
        order = sorted(range(len(taps)), key=lambda i: taps[i])
        stand = [_fresh(elem_type, f"{init.name}[t{t:+d}]" if init.name else None) for t in taps]
        args.extend(stand)
        state_windows.append(win)
        state_layout.append(([taps[i] for i in order], [stand[i] for i in order]))
        state_out_index.append(idx)

    # Non-sequences: the variables themselves (leaves are closed over by the C++ builder), a
    # stand-in for a computed one (so it is computed once, outside the loop).
    ns_outer, ns_inner = [], []
    for v in non_seqs:
        if not isinstance(v, Variable):
            v = _convert.as_tensor_variable(v)
        if v.owner is None:
            args.append(v)
        else:
            stand = _fresh(v.type, v.name)
            args.append(stand)
            ns_outer.append(v)
            ns_inner.append(stand)

    ret = fn(*args)
    outputs, updates, cond = _split_return(ret, who)
    outputs = [_convert.as_tensor_variable(o) for o in outputs]
    if out_specs and len(outputs) != len(out_specs):
        raise ValueError(f"{who}: fn returned {len(outputs)} outputs but outputs_info has {len(out_specs)} entries")
    if not out_specs:
        out_specs = [None] * len(outputs)

    # ---- shared variables updated by the body become untraced states
    upd = collections.OrderedDict()
    for sv, val in updates:
        if not (isinstance(sv, Variable) and sv.kind == "shared"):
            raise TypeError(f"{who}: updates must target shared variables, got {sv!r}")
        upd[sv] = val if isinstance(val, Variable) else _convert.constant(np.asarray(val, dtype=sv.dtype))
    roots = outputs + list(upd.values()) + ([cond] if cond is not None else [])
    changed = True
    while changed:  # default updates, also those their expressions reach
        changed = False
        for leaf in _graph.inputs(roots + list(upd.values())):
            du = getattr(leaf, "default_update", None) if leaf.kind == "shared" else None
            if du is not None and leaf not in upd:
                upd[leaf] = du
                changed = True
    shared_states = list(upd.keys())
    if shared_states:
        stand = [_fresh(sv.type, sv.name) for sv in shared_states]
        repl = dict(zip(shared_states, stand))
        exprs = [_cast_like(e, sv, who) for sv, e in upd.items()]
        rebuilt = _graph.clone_replace(outputs + exprs + ([cond] if cond is not None else []), replace=repl)
        outputs = rebuilt[:len(outputs)]
        exprs = rebuilt[len(outputs):len(outputs) + len(exprs)]
        if cond is not None:
            cond = rebuilt[-1]
    else:
        stand, exprs = [], []

    # ---- the layout
    state_outputs, nitsot_outputs, nitsot_index = [], [], []
    si = 0
    for idx, spec in enumerate(out_specs):
        if spec is None:
            nitsot_outputs.append(outputs[idx])
            nitsot_index.append(idx)
        else:
            o = outputs[idx]
            init_dtype = state_windows[si].dtype
            if o.dtype != init_dtype and not strict and np.can_cast(o.dtype, init_dtype, "same_kind") and \
                    np.dtype(o.dtype).itemsize <= np.dtype(init_dtype).itemsize:
                o = _convert.cast(o, init_dtype)
            state_outputs.append(o)
            si += 1
    seq_taps = [taps for taps, _ in seq_layout]
    state_taps = [taps for taps, _ in state_layout] + [[-1]] * len(shared_states)
    traced = [True] * len(state_layout) + [False] * len(shared_states)
    inner_inputs = [v for _, vs in seq_layout for v in vs] + [v for _, vs in state_layout for v in vs] + stand + \
        ns_inner
    # nit-sots come after every state in the op: the shared states are states too.
    inner_outputs = state_outputs + exprs + nitsot_outputs + ([cond] if cond is not None else [])
    windows = state_windows + [_core.expand_dims(sv, 0) for sv in shared_states]

    # ---- n_steps: given, or the shortest sequence (after its taps)
    if n_steps is not None:
        if isinstance(n_steps, numbers.Integral) and n_steps < 0:
            raise ValueError(f"{who}: n_steps must be >= 0, got {n_steps}")
        dtype = str(getattr(n_steps, "dtype", ""))
        if (isinstance(n_steps, (bool, np.bool_)) or not isinstance(n_steps, (numbers.Integral, Variable, np.ndarray))
                or (dtype and not dtype.startswith(("int", "uint"))) or getattr(n_steps, "ndim", 0) != 0):
            raise TypeError(f"{who}: n_steps must be an integer scalar (a Python int or a 0-d integer tensor), got "
                            f"{n_steps!r}" + (f" of dtype {dtype}" if dtype else ""))
        steps = _convert._int_scalar(n_steps) if not isinstance(n_steps, Variable) else n_steps
    else:
        if not seq_specs:
            raise ValueError(f"{who}: give n_steps or at least one sequence")
        steps = None
        for (taps, _), x in zip(seq_layout, seq_vars):
            avail = x.shape[0] - (max(taps) - min(taps))
            steps = avail if steps is None else _core.minimum(steps, avail)
        steps = _core.maximum(steps, _core.int_constant(0))
    outs = _core.scan_node(seq_taps, state_taps, traced, len(nitsot_outputs), cond is not None,
                           int(truncate_gradient) if truncate_gradient is not None else -1, name or "",
                           inner_inputs, inner_outputs, steps, seq_vars, windows, ns_outer)
    n_user_states = len(state_layout)
    results = [None] * len(out_specs)
    for k, idx in enumerate(state_out_index):
        results[idx] = outs[k]
    for j, idx in enumerate(nitsot_index):
        results[idx] = outs[n_user_states + len(shared_states) + j]
    updates_out = OrderedUpdates()
    for k, sv in enumerate(shared_states):
        updates_out[sv] = outs[n_user_states + k]
    if len(results) == 1 and not return_list:
        return results[0], updates_out
    return results, updates_out


def _cast_like(expr, sv, who):
    expr = _convert.as_tensor_variable(expr)
    if expr.dtype != sv.dtype:
        if np.can_cast(expr.dtype, sv.dtype, "same_kind"):
            expr = _convert.cast(expr, sv.dtype)
        else:
            raise TypeError(f"{who}: the update of shared variable {sv} is {expr.type} but the variable is "
                            f"{sv.type}; cast it (T.cast)")
    return expr


def map(fn, sequences, non_sequences=None, truncate_gradient=-1, go_backwards=False, mode=None, name=None):
    """fn applied to each element of the sequences: scan without recurrent outputs."""
    return scan(fn, sequences=sequences, outputs_info=None, non_sequences=non_sequences,
                truncate_gradient=truncate_gradient, go_backwards=go_backwards, mode=mode, name=name)


def reduce(fn, sequences, outputs_info, non_sequences=None, go_backwards=False, mode=None, name=None):
    """The final value of each recurrent output of scan (fn folds the sequences into the
    states); returns (results, updates)."""
    outs, upd = scan(fn, sequences=sequences, outputs_info=outputs_info, non_sequences=non_sequences,
                     go_backwards=go_backwards, mode=mode, name=name, return_list=True)
    last = [o[-1] for o in outs]
    return (last[0] if len(last) == 1 else last), upd


def foldl(fn, sequences, outputs_info, non_sequences=None, mode=None, name=None):
    """reduce from the first element on."""
    return reduce(fn, sequences, outputs_info, non_sequences=non_sequences, go_backwards=False, mode=mode, name=name)


def foldr(fn, sequences, outputs_info, non_sequences=None, mode=None, name=None):
    """reduce from the last element back."""
    return reduce(fn, sequences, outputs_info, non_sequences=non_sequences, go_backwards=True, mode=mode, name=name)


__all__ = ["scan", "until", "map", "reduce", "foldl", "foldr", "OrderedUpdates"]
