"""hypatia.compile.builders (theano.compile.builders): OpFromGraph, an op made of a graph.

    x, y, z = T.scalars('xyz')
    op = OpFromGraph([x, y, z], [x + y * z])
    e2 = op(x, y, z) + op(z, y, x)          # as the inner graph on these arguments
    fn = hypatia.function([x, y, z], e2)

Design. The compiler is C++ and sees a Python op as one opaque node: it cannot fuse it with its
neighbours, turn its products into GEMMs, move it to a GPU or look into it, and each run of it is a
Python call (perform) under the GIL. Theano's inline=True expands the inner graph at compile time;
the compile pipeline has no hook to do that for a Python op, so here the expansion is done when the
op is applied:

* An op without overrides (grad_overrides, lop_overrides, rop_overrides and connection_pattern at
  their defaults) whose outputs read all its inputs is expanded, for inline=True and inline=False
  alike: ``op(*args)`` is the inner graph copied onto the arguments (only the op's own nodes are
  copied; the arguments' graphs are shared). A function using it is optimized as one graph with its
  surroundings (fusion, GEMM, merging of repeated uses, the GPU); gradients and R_op go through the
  copy as through any graph; nothing but ordinary nodes is left to pickle or print. That is what
  Theano's inline=True compiles to. For inline=False Theano keeps an opaque node whose precompiled
  inner function saves compile time; here that node would cost a Python call per run and block the
  optimizations above, so it is not kept, and the op's ``kwargs`` (mode, ...) for that inner
  function have nothing to apply to.
* Otherwise (an override, a connection_pattern, or an input the outputs do not read: the node
  reads it, so that a function given it does not call it unused, as with Theano's node),
  ``op(*args)`` is one OpFromGraph node, Theano's inline=False: its inputs are the arguments, then
  the shared variables the inner graph reads (implicit inputs, so that a function updating them, or
  their default_update, is seen); perform runs the inner graph compiled once with ``kwargs``
  (hypatia.function); grad, L_op, R_op and connection_pattern follow Theano's rules for the
  overrides. The overriding graphs are built once, on the op's inner inputs, and copied onto each
  node's variables: gradients are ordinary graphs, optimized with the rest (a gradient that reads
  the op's outputs reads the node's). Expanding the forward graph of an op with overrides (Theano's
  inline=True) would need an identity that cuts the gradient and keeps R_op, which hypatia lacks
  (DisconnectedGrad carries no tangent), so such an op is one node for inline=True too.

The node shows in debugprint as ``OpFromGraph{inline=False}`` (``name{inline=...}`` when named), is
equal only to itself (as Theano's), pickles with its graphs (override callables must then be
picklable: module-level functions, as in Theano), and, as other Python ops, has its output shapes
computed by running it.

Overrides take Theano 1.0's forms. grad_overrides: a callable(inputs, output_grads) returning a
list of gradients, an OpFromGraph taking inputs + output_grads, or a list of one entry per input
('default', a callable returning that input's gradient, an OpFromGraph, or None). lop_overrides
(exclusive with grad_overrides): the same with callable(inputs, outputs, output_grads) and an
OpFromGraph taking inputs + outputs + output_grads. rop_overrides: a callable(inputs, eval_points)
returning a list of one value per output, an OpFromGraph taking inputs + eval_points, or a list of
one entry per output. As in Theano, ``inputs`` are the inner inputs followed by one stand-in per
shared variable of the inner graph, and the callables are called once (at the first gradient or
R_op) on stand-ins. A gradient of None means disconnected, as Theano's DisconnectedType: hypatia
has no DisconnectedType or NullType variables, and one given as an override is refused
(NotImplementedError).
"""
import atexit
import inspect
import threading
import weakref

import numpy as np

from hypatia import _convert, _core
from hypatia.gof.graph import _make_node, _nodes_to_copy, ancestors
from hypatia.gradient import Rop as _Rop
from hypatia.gradient import grad as _grad
from hypatia.op import Op

Variable = _core.Variable
Apply = _core.Apply
MissingInputError = _core.MissingInputError


class OpFromGraphArityError(TypeError, ValueError):
    """An OpFromGraph applied to the wrong number of arguments: a TypeError, as calling a Python
    function so is, and a ValueError, which Theano raised."""


def _rebind(outputs, pairs):
    """`outputs` (None entries allowed) with each variable of `pairs` (old, new) replaced: only the
    nodes between the replaced variables and the outputs are rebuilt (through their ops' make_node),
    so the graph around them is shared, not copied."""
    # memo: id(old) -> (old, new). Holding `old` keeps the id its own: the Python object of a graph
    # variable lives only while referenced, and a freed one's id may be reused.
    memo = {}
    for old, new in pairs:
        memo.setdefault(id(old), (old, new))
    for node in _nodes_to_copy([o for o in outputs if o is not None], memo):
        old_ins = list(node.inputs)
        ins = [memo[id(v)][1] if id(v) in memo else v for v in old_ins]
        if all(a is b for a, b in zip(ins, old_ins)):
            continue
        new = _make_node(node.op, ins)
        for old, out in zip(node.outputs, new.outputs):
            if id(old) not in memo:
                if old.name is not None:
                    out.name = old.name
                memo[id(old)] = (old, out)
    return [None if o is None else memo[id(o)][1] if id(o) in memo else o for o in outputs]


# The ops alive, whose state is dropped at exit (see _release_at_exit).
_live_ops = weakref.WeakSet()


@atexit.register
def _release_at_exit():
    # A node holds its op through the engine, which, once the interpreter is finalizing, keeps the
    # op (and the graph variables and compiled function it holds) rather than release it: a graph
    # still referenced at exit would be reported as leaked. Drop that state while Python runs.
    for op in list(_live_ops):
        op.__dict__.clear()


def _function_parameters():
    from hypatia.compile.function import function

    return set(inspect.signature(function).parameters) - {"inputs", "outputs"}


def _is_default(spec):
    return isinstance(spec, str) and spec == "default"


class OpFromGraph(Op):
    """An op whose outputs are those of the graph from `inputs` to `outputs` (Theano 1.0's
    OpFromGraph; see the module docstring for what is expanded and what stays one node).

    inputs: the inner graph's inputs (variables that are not constants; a computed variable cuts the
    graph there). outputs: a list of variables. Shared variables the outputs read become implicit
    inputs. inline: Theano's flag (kept, shown in the op's name). grad_overrides / lop_overrides /
    rop_overrides: 'default' or Theano's overriding forms. connection_pattern: a list, one row per
    input (the implicit ones too) of one bool per output, used as the op's connection pattern.
    name: shown in the op's name and in its errors. kwargs: arguments of hypatia.function for the
    compiled inner graph of a node (mode, on_unused_input, ...; updates and givens are refused).
    """

    __props__ = None  # equal only to itself, as Theano's

    def __init__(self, inputs, outputs, inline=False, lop_overrides="default", grad_overrides="default",
                 rop_overrides="default", connection_pattern=None, name=None, **kwargs):
        if name is not None and not isinstance(name, str):
            raise TypeError(f"OpFromGraph: name must be None or a string, got {name!r}")
        self.name = name
        who = self._who()
        if not isinstance(inputs, (list, tuple)):
            raise TypeError(f"{who}: inputs must be a list of variables, got {type(inputs).__name__}")
        if not isinstance(outputs, (list, tuple)):
            raise TypeError(f"{who}: outputs must be a list of variables, got {type(outputs).__name__} (write "
                            "[out] for one output)")
        inputs, outputs = list(inputs), list(outputs)
        for what, vs in (("inputs", inputs), ("outputs", outputs)):
            for k, v in enumerate(vs):
                if not isinstance(v, Variable):
                    raise TypeError(f"{who}: {what} must be Variable instances; {what}[{k}] is {v!r}")
        seen = set()
        for k, v in enumerate(inputs):
            if v.kind == "constant":
                raise TypeError(f"{who}: constants are not allowed as inputs; inputs[{k}] is {v}")
            if v.kind == "nullgrad":
                raise TypeError(f"{who}: inputs[{k}] is an undefined gradient, not a value")
            if id(v) in seen:
                raise ValueError(f"{who}: inputs[{k}] ({v}) is given twice")
            seen.add(id(v))
        if "updates" in kwargs or "givens" in kwargs:
            raise TypeError(f"{who}: updates and givens are not allowed here")
        unknown = sorted(set(kwargs) - _function_parameters())
        if unknown:
            raise TypeError(f"{who}: unexpected keyword argument(s) {', '.join(unknown)} (the keyword arguments go "
                            "to hypatia.function for the inner graph)")
        if not isinstance(inline, (bool, np.bool_)):
            raise TypeError(f"{who}: inline must be True or False, got {inline!r}")

        # The roots the outputs read: the inputs, shared variables (implicit inputs), constants.
        shared_inputs = []
        for v in ancestors(outputs, blockers=inputs):
            if v.owner is not None or id(v) in seen:
                continue
            if v.kind == "shared":
                shared_inputs.append(v)
            elif v.kind != "constant":
                raise MissingInputError(f"{who}: the outputs depend on {v} ({v.type}), which is not among the "
                                        "inputs (nor a shared variable or a constant); add it to the inputs")
        self.inputs = inputs
        self.outputs = outputs
        self.shared_inputs = shared_inputs
        self.is_inline = bool(inline)
        self.kwargs = kwargs
        self.input_types = [v.type for v in inputs]
        self.output_types = [v.type for v in outputs]
        # The op's own copy of the graph, on stand-ins for its inputs and shared variables.
        self.local_inputs = [v.type(v.name) for v in inputs + shared_inputs]
        self.local_outputs = _rebind(outputs, list(zip(inputs + shared_inputs, self.local_inputs)))
        read = ancestors(self.local_outputs)
        read_ids = {id(v) for v in read}
        self._reads_all = all(id(v) in read_ids for v in self.local_inputs)

        if not _is_default(lop_overrides) and not _is_default(grad_overrides):
            raise ValueError(f"{who}: lop_overrides and grad_overrides are mutually exclusive")
        self._lop_spec, self._lop_type = "default", "lop"
        if not _is_default(lop_overrides):
            self.set_lop_overrides(lop_overrides)
        elif not _is_default(grad_overrides):
            self.set_grad_overrides(grad_overrides)
        self.set_rop_overrides(rop_overrides)
        if connection_pattern is not None:
            connection_pattern = self._check_pattern(connection_pattern)
        self._connection_pattern = connection_pattern
        self._init_caches()

    # --------------------------------------------------------------------------------------------
    # Naming, equality, pickling

    def _who(self):
        return "OpFromGraph" if self.name is None else f"OpFromGraph '{self.name}'"

    def __str__(self):
        return f"{type(self).__name__ if self.name is None else self.name}{{inline={self.is_inline}}}"

    __repr__ = __str__

    def _init_caches(self):
        _live_ops.add(self)
        self._lock = threading.Lock()
        self._fn = None
        self._lop_cache = None  # (gradient per local input or None, output-grad stand-ins)
        self._rop_cache = None  # (R_op per output or None, eval-point stand-ins)
        self._pattern_cache = None

    def __getstate__(self):
        state = dict(self.__dict__)
        for k in ("_lock", "_fn", "_lop_cache", "_rop_cache", "_pattern_cache"):
            state.pop(k, None)
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._init_caches()

    @property
    def inner_inputs(self):
        """The inner graph's inputs: stand-ins for the inputs, then for the shared variables."""
        return self.local_inputs

    @property
    def inner_outputs(self):
        return self.local_outputs

    def _plain(self):
        """No override and no connection_pattern: the op's gradients and R_op are its graph's."""
        return (_is_default(self._lop_spec) and _is_default(self._rop_spec) and self._connection_pattern is None)

    @property
    def expands(self):
        """Whether applying the op copies its graph onto the arguments rather than making one
        OpFromGraph node: it has no override (nor connection_pattern) and its outputs read every
        input (an input they do not read is read by the node, so that a function given it takes it,
        as Theano's does)."""
        return self._plain() and self._reads_all

    def _apply_inner(self, args):
        """The op on args inside a graph the op builds (an overriding op's gradient): expanded when
        it has no overrides, even if some argument is unused (nothing compiles that graph alone)."""
        if self._plain():
            return self.expand(*args)
        return list(self.make_node(*args).outputs)

    # --------------------------------------------------------------------------------------------
    # Overrides

    def set_grad_overrides(self, grad_overrides):
        """Theano's: replaces the gradient (or L_op) override (see the module docstring). Nodes
        made before keep what they were made with."""
        self._check_override("grad_overrides", grad_overrides)
        self._lop_spec, self._lop_type = grad_overrides, "grad"
        self._lop_cache = self._pattern_cache = None

    def set_lop_overrides(self, lop_overrides):
        """Theano's: replaces the L_op (or gradient) override."""
        self._check_override("lop_overrides", lop_overrides)
        self._lop_spec, self._lop_type = lop_overrides, "lop"
        self._lop_cache = self._pattern_cache = None

    def set_rop_overrides(self, rop_overrides):
        """Theano's: replaces the R_op override."""
        self._check_override("rop_overrides", rop_overrides)
        self._rop_spec = rop_overrides
        self._rop_cache = None

    def _check_override(self, arg, spec):
        who = self._who()
        if _is_default(spec) or isinstance(spec, OpFromGraph) or (callable(spec) and not isinstance(spec, Variable)):
            return
        if isinstance(spec, (list, tuple)):
            n = len(self.local_outputs) if arg == "rop_overrides" else len(self.local_inputs)
            what = "outputs" if arg == "rop_overrides" else "inputs (the shared variables' stand-ins included)"
            if len(spec) != n:
                raise ValueError(f"{who}: {arg} needs one entry per {what}: {n}, got {len(spec)}")
            for k, e in enumerate(spec):
                if not (_is_default(e) or e is None or isinstance(e, OpFromGraph) or
                        (callable(e) and not isinstance(e, Variable))):
                    raise TypeError(f"{who}: {arg}[{k}] must be 'default', a callable, an OpFromGraph or None, "
                                    f"got {e!r}")
            return
        if isinstance(spec, Variable):
            raise NotImplementedError(f"{who}: {arg} given as a variable (Theano's DisconnectedType or NullType "
                                      "variables) is not supported: use None entries for disconnected gradients")
        raise TypeError(f"{who}: {arg} must be 'default', a callable, an OpFromGraph or a list of them, "
                        f"got {spec!r}")

    def _check_pattern(self, pattern):
        who = self._who()
        n_in, n_out = len(self.local_inputs), len(self.local_outputs)
        try:
            rows = [[bool(c) for c in row] for row in pattern]
        except TypeError:
            raise TypeError(f"{who}: connection_pattern must be a list of lists of bools, got {pattern!r}") from None
        if len(rows) != n_in or any(len(r) != n_out for r in rows):
            raise ValueError(f"{who}: connection_pattern must have {n_in} rows (inputs, the shared variables "
                             f"included) of {n_out} entries (outputs), got {pattern!r}")
        return rows

    # --------------------------------------------------------------------------------------------
    # Applying

    def _filter_argument(self, k, arg):
        """arg as a variable of inner input k's type (Theano's filter_variable): the same dtype and
        number of dimensions, broadcastable at least where the inner input is."""
        who = self._who()
        inner = self.local_inputs[k]
        t = inner.type
        shown = f"inner input {k}" + (f" ({inner.name})" if inner.name else "")
        if not isinstance(arg, Variable):
            try:
                value = np.asarray(arg)
            except (TypeError, ValueError):  # what numpy cannot read is the wrong type
                value = None
            if value is None or value.dtype.kind not in "biuf":
                raise TypeError(f"{who}: argument {k} must be a variable or a value of type {t} (for {shown}), got "
                                f"{arg!r}")
            cast = value.astype(t.dtype)
            python_float = isinstance(arg, float) and cast.dtype.kind == "f"  # floatX's rule
            if value.dtype != cast.dtype and not (python_float or np.can_cast(value.dtype, cast.dtype, "safe") or
                                                  np.array_equal(cast, value)):
                raise TypeError(f"{who}: argument {k} ({arg!r}, {value.dtype}) cannot be converted to {t.dtype} "
                                f"without loss (for {shown}, of type {t})")
            if value.ndim != t.ndim:
                raise TypeError(f"{who}: argument {k} has {value.ndim} dimensions; {shown} is {t} ({t.ndim} "
                                "dimensions)")
            arg = _convert.constant(cast)
        at = arg.type
        if at == t:
            return arg
        problems = []
        if at.dtype != t.dtype:
            problems.append(f"its dtype is {at.dtype}, not {t.dtype} (cast it: T.cast(x, '{t.dtype}'))")
        if at.ndim != t.ndim:
            problems.append(f"it has {at.ndim} dimensions, not {t.ndim}")
        elif any(tb and not ab for tb, ab in zip(t.broadcastable, at.broadcastable)):
            dims = [d for d, (tb, ab) in enumerate(zip(t.broadcastable, at.broadcastable)) if tb and not ab]
            listed = ", ".join(map(str, dims))
            problems.append(f"dimension(s) {dims} must be broadcastable (T.addbroadcast(x, {listed}))")
        if problems:
            raise TypeError(f"{who}: argument {k} ({arg}) has type {at}, but {shown} has type {t}: "
                            + "; ".join(problems))
        return _core.patternbroadcast(arg, list(t.broadcastable))

    def _arguments(self, args):
        n, n_all = len(self.inputs), len(self.local_inputs)
        if len(args) not in (n, n_all):
            more = f" (or {n_all}, the shared variables included)" if n_all != n else ""
            raise OpFromGraphArityError(f"{self._who()}: expected {n} argument(s){more}, got {len(args)}")
        args = list(args) + (self.shared_inputs if len(args) == n else [])
        return [self._filter_argument(k, a) for k, a in enumerate(args)]

    def make_node(self, *inputs):
        """One OpFromGraph node (whatever the overrides): its inputs are the arguments, then the
        shared variables of the inner graph (which may also be given, as a copy of a node does)."""
        args = self._arguments(inputs)
        return Apply(self, args, [t() for t in self.output_types])

    def __call__(self, *inputs, return_list=False, **kwargs):
        if kwargs:
            raise TypeError(f"{self._who()}: unexpected keyword argument(s) {', '.join(sorted(kwargs))}")
        if self.expands:
            outs = self.expand(*inputs)
        else:
            outs = list(self.make_node(*inputs).outputs)
        return outs if return_list or len(outs) != 1 else outs[0]

    def expand(self, *inputs):
        """The inner graph copied onto these arguments (a list, one variable per output)."""
        args = self._arguments(inputs)
        return _rebind(self.local_outputs, list(zip(self.local_inputs, args)))

    # --------------------------------------------------------------------------------------------
    # Running a node

    @property
    def fn(self):
        """The inner graph compiled (hypatia.function with the op's kwargs), as perform runs it."""
        with self._lock:
            if self._fn is None:
                from hypatia.compile.function import function

                kw = dict(self.kwargs)
                kw.setdefault("on_unused_input", "ignore")
                kw.setdefault("name", str(self))
                self._fn = function(self.local_inputs, list(self.local_outputs), **kw)
            return self._fn

    def perform(self, node, inputs, output_storage):
        values = self.fn(*inputs)
        for cell, value in zip(output_storage, values):
            cell[0] = value

    # --------------------------------------------------------------------------------------------
    # Gradients

    def _default_grads(self, wrt, output_grads):
        """The inner graph's gradients (None where disconnected) of the local inputs `wrt`, the
        local outputs having the gradients output_grads."""
        known = {}
        for out, g in zip(self.local_outputs, output_grads):
            if out.dtype.startswith(("float", "complex")) and out.kind != "constant":
                known[out] = g if out not in known else _core.add(known[out], g)
        if not known or not wrt:
            return [None] * len(wrt)
        return list(_grad(None, list(wrt), known_grads=known, disconnected_inputs="ignore",
                          return_disconnected="None"))

    def _one_gradient(self, entry, k, gs):
        """A user's gradient for local input k: None or a variable of its number of dimensions."""
        if entry is None:
            return None
        inp = self.local_inputs[k]
        g = entry if isinstance(entry, Variable) else _convert.as_tensor_variable(entry)
        if g.ndim != inp.ndim:
            raise TypeError(f"{self._who()}: the overriding gradient of input {k} ({inp}, {inp.type}) has "
                            f"{g.ndim} dimensions, expected {inp.ndim}")
        return g

    def _lop_template(self):
        """(the gradient of each local input or None, built on the local inputs, the local outputs and
        stand-ins for the output gradients; those stand-ins), computed once."""
        if self._lop_cache is not None:
            return self._lop_cache
        who = self._who()
        n_in, n_out = len(self.local_inputs), len(self.local_outputs)
        gs = [t(None if o.name is None else f"{o.name}_grad") for t, o in zip(self.output_types,
                                                                              self.local_outputs)]
        ins, outs = list(self.local_inputs), list(self.local_outputs)
        spec, kind = self._lop_spec, self._lop_type
        args = (ins, gs) if kind == "grad" else (ins, outs, gs)

        def call_ofg(ofg, arg):
            flat = ins + gs if kind == "grad" else ins + outs + gs
            if len(ofg.inputs) != len(flat):
                raise ValueError(f"{who}: {arg}: expected an overriding OpFromGraph with {len(flat)} inputs "
                                 f"({'inputs, output_grads' if kind == 'grad' else 'inputs, outputs, output_grads'}), "
                                 f"got {len(ofg.inputs)}")
            return ofg._apply_inner(flat)

        arg = "grad_overrides" if kind == "grad" else "lop_overrides"
        if _is_default(spec):
            grads = self._default_grads(ins, gs)
        elif isinstance(spec, (list, tuple)):
            wrt = [i for i, e in zip(ins, spec) if _is_default(e)]
            defaults = iter(self._default_grads(wrt, gs))
            grads = []
            for k, e in enumerate(spec):
                if _is_default(e):
                    grads.append(next(defaults))
                elif e is None:
                    grads.append(None)
                else:
                    r = call_ofg(e, f"{arg}[{k}]") if isinstance(e, OpFromGraph) else e(*args)
                    if isinstance(r, (list, tuple)):
                        if len(r) != 1:
                            raise TypeError(f"{who}: {arg}[{k}] must return one gradient (of input {k}), got "
                                            f"{len(r)}")
                        r = r[0]
                    grads.append(self._one_gradient(r, k, gs))
        else:
            r = call_ofg(spec, arg) if isinstance(spec, OpFromGraph) else spec(*args)
            if not isinstance(r, (list, tuple)):
                raise TypeError(f"{who}: the {arg} function must return a list (one gradient per input), got "
                                f"{type(r).__name__}")
            if len(r) != n_in:
                raise ValueError(f"{who}: the {arg} function must return {n_in} gradients (one per input, the "
                                 f"shared variables included), got {len(r)}")
            grads = [self._one_gradient(e, k, gs) for k, e in enumerate(r)]
        assert len(grads) == n_in and len(gs) == n_out
        self._lop_cache = (grads, gs)
        return self._lop_cache

    def _output_pairs(self, inputs, templates, outputs=None):
        """(local output, node output) pairs for the local outputs the template graphs read: the
        node's outputs (`outputs`, or those of the op applied again to the same inputs, which is
        merged with the node when compiled); none when no template reads a local output."""
        needed = {id(v) for v in ancestors([t for t in templates if t is not None])}
        if not any(id(o) in needed and o.owner is not None for o in self.local_outputs):
            return []
        if outputs is None:
            outputs = self.make_node(*inputs).outputs
        return [(lo, o) for lo, o in zip(self.local_outputs, outputs) if lo.owner is not None]

    def L_op(self, inputs, outputs, output_grads):
        """Theano's L_op: the gradients of the inputs, given the node's outputs."""
        return self._lop(inputs, list(outputs), output_grads)

    def grad(self, inputs, output_grads):
        return self._lop(inputs, None, output_grads)

    def _lop(self, inputs, outputs, output_grads):
        grads, gs = self._lop_template()
        inputs = list(inputs)
        if len(inputs) != len(self.local_inputs):
            raise OpFromGraphArityError(f"{self._who()}.grad: expected {len(self.local_inputs)} inputs, got "
                                        f"{len(inputs)}")
        if len(output_grads) != len(gs):
            raise OpFromGraphArityError(f"{self._who()}.grad: expected {len(gs)} output gradients, got "
                                        f"{len(output_grads)}")
        if any(g is None for g in output_grads) and outputs is None:
            outputs = self.make_node(*inputs).outputs
        ogs = [_convert.as_tensor_variable(g) if g is not None else _core.zeros_like(o)
               for g, o in zip(output_grads, outputs or [None] * len(gs))]
        pairs = list(zip(self.local_inputs, inputs)) + self._output_pairs(inputs, grads, outputs) + \
            list(zip(gs, ogs))
        return _rebind(grads, pairs)

    def _rop_template(self):
        if self._rop_cache is not None:
            return self._rop_cache
        who = self._who()
        ins, outs = list(self.local_inputs), list(self.local_outputs)
        eps = [v.type(None if v.name is None else f"{v.name}_eval") for v in ins]
        spec = self._rop_spec

        def default_rops(fs):
            wrt = [(i, e) for i, e in zip(ins, eps) if i.dtype.startswith("float")]
            result = []
            for f in fs:
                reached = {id(v) for v in ancestors([f])}
                pts = [(i, e) for i, e in wrt if id(i) in reached]
                if not f.dtype.startswith("float") or not pts:
                    result.append(None)
                    continue
                result.append(_Rop(f, [i for i, _ in pts], [e for _, e in pts]))
            return result

        def checked(r, o):
            if r is None:
                return None
            r = r if isinstance(r, Variable) else _convert.as_tensor_variable(r)
            if r.ndim != outs[o].ndim:
                raise TypeError(f"{who}: the overriding R_op of output {o} ({outs[o].type}) has {r.ndim} "
                                f"dimensions, expected {outs[o].ndim}")
            return r

        if _is_default(spec):
            rops = default_rops(outs)
        elif isinstance(spec, (list, tuple)):
            rops = []
            for o, e in enumerate(spec):
                if _is_default(e):
                    rops.append(default_rops([outs[o]])[0])
                elif e is None:
                    rops.append(None)
                else:
                    if isinstance(e, OpFromGraph):
                        r = self._call_rop_ofg(e, f"rop_overrides[{o}]", ins, eps)
                    else:
                        r = e(ins, eps)
                    if isinstance(r, (list, tuple)):
                        if len(r) != 1:
                            raise TypeError(f"{who}: rop_overrides[{o}] must return one value (for output {o}), got "
                                            f"{len(r)}")
                        r = r[0]
                    rops.append(checked(r, o))
        else:
            r = self._call_rop_ofg(spec, "rop_overrides", ins, eps) if isinstance(spec, OpFromGraph) else spec(ins, eps)
            if not isinstance(r, (list, tuple)):
                raise TypeError(f"{who}: the rop_overrides function must return a list (one value per output), got "
                                f"{type(r).__name__}")
            if len(r) != len(outs):
                raise ValueError(f"{who}: the rop_overrides function must return {len(outs)} values (one per "
                                 f"output), got {len(r)}")
            rops = [checked(e, o) for o, e in enumerate(r)]
        self._rop_cache = (rops, eps)
        return self._rop_cache

    def _call_rop_ofg(self, ofg, arg, ins, eps):
        if len(ofg.inputs) != len(ins) + len(eps):
            raise ValueError(f"{self._who()}: {arg}: expected an overriding OpFromGraph with {len(ins) + len(eps)} "
                             f"inputs (inputs, eval_points), got {len(ofg.inputs)}")
        return ofg._apply_inner(ins + eps)

    def R_op(self, inputs, eval_points):
        rops, eps = self._rop_template()
        inputs = list(inputs)
        points = [e if e is not None else _core.zeros_like(i) for e, i in zip(eval_points, inputs)]
        points = [_convert.as_tensor_variable(p) for p in points]
        pairs = list(zip(self.local_inputs, inputs)) + self._output_pairs(inputs, rops) + list(zip(eps, points))
        return _rebind(rops, pairs)

    def connection_pattern(self, node):
        """Theano's: the user's pattern when given; else input i connects to output j when the
        gradient of i reads j's output gradient, or (for an overridden, not disconnected gradient)
        when output j is computed from input i."""
        if self._connection_pattern is not None:
            return [list(r) for r in self._connection_pattern]
        if self._pattern_cache is None:
            self._pattern_cache = self._computed_pattern()
        return [list(r) for r in self._pattern_cache]

    def _computed_pattern(self):
        grads, gs = self._lop_template()
        spec = self._lop_spec
        overridden = [not _is_default(spec) and not (isinstance(spec, (list, tuple)) and _is_default(e))
                      for e in (spec if isinstance(spec, (list, tuple)) else [None] * len(grads))]
        reach = [{id(v) for v in ancestors([o])} for o in self.local_outputs]
        pattern = []
        for k, (inp, g) in enumerate(zip(self.local_inputs, grads)):
            if g is None:
                pattern.append([False] * len(gs))
                continue
            read = {id(v) for v in ancestors([g])}
            pattern.append([id(go) in read or (overridden[k] and id(inp) in reach[o]) for o, go in enumerate(gs)])
        return pattern


__all__ = ["OpFromGraph", "OpFromGraphArityError"]
