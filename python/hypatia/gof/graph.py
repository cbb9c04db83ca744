"""hypatia.gof.graph: Theano's gof.graph: the node classes, and the functions that walk, copy and
compare graphs.

Variables and Apply nodes are the engine's (hypatia._core). Python keeps one object per live node,
so identity (``is``, ``==``, sets and dicts of variables) works as in Theano. The orders are
Theano's: ancestors() and inputs() search depth first from the last output, first input first;
io_toposort() is Theano's stack algorithm. Copies rebuild each node with its op's make_node, so a
copy whose inputs changed type (clone_replace(strict=False)) gets the types the op infers.
"""
from collections import deque

import numpy as np

from hypatia import _convert, _core

Variable = _core.Variable
Apply = _core.Apply


class _VariableKindMeta(type):
    """isinstance(v, cls): v is a Variable of one of the kinds in cls._kinds (the engine has one
    Variable class; inputs, outputs, constants and shared variables are kinds of it)."""

    def __instancecheck__(cls, obj):
        return isinstance(obj, Variable) and obj.kind in cls._kinds


class Constant(metaclass=_VariableKindMeta):
    """isinstance(v, Constant): v is a constant (v.data holds its value)."""

    _kinds = ("constant",)


def _var_list(xs):
    """A list of variables from a list, a tuple or one variable."""
    if isinstance(xs, Variable):
        return [xs]
    return list(xs)


def _ids(xs):
    return {id(x) for x in _var_list(xs or [])}


# ------------------------------------------------------------------------------------------------
# Walking a graph


def stack_search(start, expand, mode="bfs", build_inv=False):
    """Theano's stack_search: visits the nodes reachable from the deque `start` through
    expand(node) (a list or None), each once, breadth first ('bfs', from the left of `start`) or
    depth first ('dfs', from its right). Returns them in visiting order (and, with build_inv,
    {id(node): the nodes that expanded to it})."""
    if mode not in ("bfs", "dfs"):
        raise ValueError("mode should be bfs or dfs", mode)
    seen, order, inv = set(), [], {}
    pop = start.popleft if mode == "bfs" else start.pop
    while start:
        node = pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        order.append(node)
        expanded = expand(node)
        if expanded:
            expanded = list(expanded)
            if build_inv:
                for r in expanded:
                    inv.setdefault(id(r), []).append(node)
            start.extend(expanded)
    return (order, inv) if build_inv else order


def ancestors(variable_list, blockers=None):
    """The variables that contribute to those in variable_list, themselves included, in the order of
    a depth-first search from the last of them (first inputs first). The search does not go
    past the variables in `blockers`."""
    blocked = _ids(blockers)

    def expand(r):
        if r.owner is not None and id(r) not in blocked:
            return reversed(r.owner.inputs)
        return None

    return stack_search(deque(_var_list(variable_list)), expand, "dfs")


def inputs(variable_list, blockers=None):
    """The root variables (no owner: inputs, constants, shared variables) needed to compute those in
    variable_list, in ancestors() order."""
    return [r for r in ancestors(variable_list, blockers) if r.owner is None]


graph_inputs = inputs


def variables_and_orphans(i, o):
    """(every variable between inputs i and outputs o, i and o included; the orphans among them:
    variables without owner that are not in i, such as constants)."""
    iset = _ids(i)

    def expand(r):
        if r.owner is not None and id(r) not in iset:
            nodes = list(r.owner.inputs) + list(r.owner.outputs)
            nodes.reverse()
            return nodes
        return None

    found = stack_search(deque(_var_list(o)), expand, "dfs")
    return found, [r for r in found if r.owner is None and id(r) not in iset]


def variables(i, o):
    """Every variable of the subgraph between inputs i and outputs o (i, o and the orphans too)."""
    return variables_and_orphans(i, o)[0]


def orphans(i, o):
    """The variables o depends on that have no owner and are not in i: orphans([x], [x + y]) == [y]."""
    return variables_and_orphans(i, o)[1]


def ops(i, o):
    """The set of Apply nodes between inputs i and outputs o (the owners of o included, those of i
    not)."""
    found, orph = variables_and_orphans(i, o)
    skip = _ids(i) | {id(r) for r in orph}
    return {r.owner for r in found if id(r) not in skip and r.owner is not None}


def general_toposort(outputs, deps, clients=None):
    """Theano's general_toposort: the nodes reachable from `outputs` through deps(node) (a list or
    None), each after its dependencies. `clients`, a dict, receives {node: nodes depending on it}."""
    cache = {}

    def dependencies(node):
        if id(node) not in cache:
            d = deps(node)
            cache[id(node)] = list(d) if d else []
        return cache[id(node)]

    reachable, inv = stack_search(deque(list(outputs)), dependencies, "dfs", True)
    if clients is not None:
        for node in reachable:
            if id(node) in inv:
                clients[node] = list(inv[id(node)])
    remaining = {id(n): list(dependencies(n)) for n in reachable}
    sources = deque(n for n in reachable if not remaining[id(n)])
    done, order = set(), []
    while sources:
        node = sources.popleft()
        if id(node) in done:
            continue
        done.add(id(node))
        order.append(node)
        for client in inv.get(id(node), []):
            left = [d for d in remaining[id(client)] if d is not node]
            remaining[id(client)] = left
            if not left:
                sources.append(client)
    if len(order) != len(reachable):
        raise ValueError("graph contains cycles")
    return order


def io_toposort(inputs, outputs, orderings=None, clients=None):
    """The Apply nodes between `inputs` and `outputs`, each after the nodes it reads (Theano's
    algorithm and order). orderings: {node: [nodes that must come before it]}; clients: a dict that
    receives {node or variable: its clients}."""
    outputs = _var_list(outputs)
    if not orderings and clients is None:
        computed = set(_var_list(inputs))
        stack = [o.owner for o in reversed(outputs) if o.owner is not None]
        order = []
        while stack:
            cur = stack.pop()
            if cur.outputs[0] in computed:
                continue
            if all(i in computed or i.owner is None for i in cur.inputs):
                computed.update(cur.outputs)
                order.append(cur)
            else:
                stack.append(cur)
                stack.extend(i.owner for i in cur.inputs if i.owner is not None)
        return order

    iset = _ids(inputs)
    orderings = orderings or {}

    def deps(obj):
        if isinstance(obj, Variable):
            if id(obj) in iset or obj.owner is None:
                return []
            return [obj.owner]
        return list(obj.inputs) + list(orderings.get(obj, []))

    return [n for n in general_toposort(outputs, deps, clients) if isinstance(n, Apply)]


def view_roots(r):
    """The variables r is a view of, following view_maps back (r itself when it is no view)."""
    owner = r.owner
    if owner is None:
        return [r]
    view_map = owner.op.view_map or {}
    if r.index not in view_map:
        return [r]
    roots = []
    for i in view_map[r.index]:
        roots += view_roots(owner.inputs[i])
    return roots


# ------------------------------------------------------------------------------------------------
# Copying a graph


def _copy_variable(v):
    """A new root variable standing for v (Theano's Variable.clone(): no owner): an input of v's
    type and name, a constant with v's value, or for a shared variable another one holding the
    same value (the same cell, as Theano's clone shares the container; attributes such as a
    default_update stay with v)."""
    kind = v.kind
    if kind == "shared":
        return _core.shared_alias(v)
    if kind == "constant":
        c = _core.constant(np.array(v.data), v.name or "")
    else:
        c = v.type(v.name)
        try:
            c.test_value = v.test_value
        except AttributeError:
            pass
    tag = v.__dict__.get("_hyp_tag")
    if tag:
        c.__dict__["_hyp_tag"] = dict(tag)
    return c


def _make_node(op, new_inputs):
    """A new Apply of `op` (an engine op or a hypatia.Op) on new_inputs. Elementwise ops get their
    lower-ndim inputs padded with broadcastable dimensions on the left, as Theano's Elemwise does
    (a copy whose inputs changed rank)."""
    if isinstance(op, (_core.Elemwise, _core.Composite, _core.MultiComposite)):
        nd = max((v.ndim for v in new_inputs), default=0)
        new_inputs = [v if v.ndim == nd else _core.dimshuffle(v, [-1] * (nd - v.ndim) + list(range(v.ndim)))
                      for v in new_inputs]
    if isinstance(op, _core.Op):
        return op.make_node(list(new_inputs))
    return op.make_node(*new_inputs)


def _filter_variable(old, new):
    """new where old was, under Theano's strict rule: the same type, or the same dtype and ndim
    with new broadcastable wherever old is (new is then given old's pattern)."""
    if new.type == old.type:
        return new
    t, o = old.type, new.type
    if t.dtype == o.dtype and t.ndim == o.ndim and all(ob or ob == tb for tb, ob in zip(t.broadcastable,
                                                                                        o.broadcastable)):
        return _core.patternbroadcast(new, list(t.broadcastable))
    raise TypeError(f"Cannot convert Type {o} (of Variable {new}) into Type {t}. You can try to manually convert "
                    f"{new} into a {t}.")


def _nodes_to_copy(outputs, memo):
    """The Apply nodes that outputs depend on without going through a variable of `memo`, each
    after the nodes it reads."""
    order, seen = [], set()
    for out in outputs:
        if id(out) in memo or out.owner is None or id(out.owner) in seen:
            continue
        seen.add(id(out.owner))
        stack = [(out.owner, iter(out.owner.inputs))]
        while stack:
            node, pending = stack[-1]
            for v in pending:
                owner = v.owner
                if id(v) not in memo and owner is not None and id(owner) not in seen:
                    seen.add(id(owner))
                    stack.append((owner, iter(owner.inputs)))
                    break
            else:
                stack.pop()
                order.append(node)
    return order


def _copy_graph(outputs, memo, copy_leaf, strict):
    """Copies of `outputs`; memo {id(old): (old, new)} holds what is already mapped (a variable
    there is not looked behind) and receives every node and variable copied; a root variable not
    in memo becomes copy_leaf(v)."""

    def mapped(v):
        entry = memo.get(id(v))
        if entry is None:
            entry = memo[id(v)] = (v, copy_leaf(v))
        return entry[1]

    for node in _nodes_to_copy(outputs, memo):
        new_inputs = []
        for v in node.inputs:
            new = mapped(v)
            new_inputs.append(_filter_variable(v, new) if strict else new)
        copy = _make_node(node.op, new_inputs)
        memo[id(node)] = (node, copy)
        for old, new in zip(node.outputs, copy.outputs):
            if old.name is not None:
                new.name = old.name
            memo[id(old)] = (old, new)
    return [mapped(o) for o in outputs]


def clone_get_equiv(inputs, outputs, copy_inputs=True, copy_orphans=True, memo=None):
    """{old: new} for every variable and Apply node of a copy of the graph between inputs and
    outputs (Theano's): copy_inputs gives the copy new inputs, copy_orphans new constants."""
    entries = {}
    if memo:
        for old, new in memo.items():
            entries[id(old)] = (old, new)
    for v in _var_list(inputs):
        if id(v) not in entries:
            entries[id(v)] = (v, _copy_variable(v) if copy_inputs else v)
    _copy_graph(_var_list(outputs), entries, _copy_variable if copy_orphans else (lambda v: v), strict=False)
    return {old: new for old, new in entries.values()}


def clone(i, o, copy_inputs=True, copy_orphans=None):
    """Copies the subgraph between inputs i and outputs o; returns (the copy's inputs, its
    outputs). copy_inputs: new input variables (else the copy reads i); copy_orphans (default:
    copy_inputs): new constants (else the copy shares them)."""
    if copy_orphans is None:
        copy_orphans = copy_inputs
    i, o = _var_list(i), _var_list(o)
    entries = {}
    for v in i:
        if id(v) not in entries:
            entries[id(v)] = (v, _copy_variable(v) if copy_inputs else v)
    new_o = _copy_graph(o, entries, _copy_variable if copy_orphans else (lambda v: v), strict=False)
    return [entries[id(v)][1] for v in i], new_o


def clone_replace(output, replace=None, strict=True, share_inputs=True):
    """Theano's theano.clone: a copy of output (a variable, or a list or tuple of them) with the
    replacements made, all at once (a replacement's own graph is copied without them).

    replace: {variable: replacement} or a list of pairs; a replacement that is not a variable
    becomes a constant. strict=True: a replacement must have the type of what it replaces (or be
    broadcastable where that is not; it then gets that pattern), else TypeError; strict=False: the
    nodes reading it are rebuilt, so types follow it. share_inputs=False gives the copy new input
    variables and constants (shared variables stay shared).
    """
    if replace is None:
        items = []
    elif isinstance(replace, dict):
        items = list(replace.items())
    elif isinstance(replace, (list, tuple)):
        items = list(replace)
    else:
        raise ValueError(f"replace is neither a dictionary, list, tuple or None ! The value provided is {replace}, "
                         f"of type {type(replace)}")
    leaves = {}

    def copy_leaf(v):
        if share_inputs:
            return v
        if id(v) not in leaves:
            leaves[id(v)] = (v, _copy_variable(v))
        return leaves[id(v)][1]

    memo = {}
    for pair in items:
        if len(pair) != 2:
            raise ValueError(f"replace: expected (variable, replacement) pairs, got {pair!r}")
        old, new = pair
        if not isinstance(old, Variable):
            raise TypeError("given keys must be Variable", old)
        if not isinstance(new, Variable):
            new = _convert.as_tensor_variable(new)
        memo[id(old)] = (old, _copy_graph([new], {}, copy_leaf, strict)[0])
    outs = _copy_graph(_var_list(output), memo, copy_leaf, strict)
    if isinstance(output, (list, tuple)):
        return type(output)(outs)
    return outs[0]


# ------------------------------------------------------------------------------------------------
# Comparing graphs


def _constants_equal(a, b):
    if a.type != b.type:
        return False
    da, db = a.data, b.data
    if da.shape != db.shape:
        return False
    return bool(np.array_equal(da, db, equal_nan=da.dtype.kind == "f"))


class _Comparer:
    """Whether pairs of variables compute the same thing: the same variable, equal constants, pairs
    declared equal, or outputs of the same index of nodes with equal ops on inputs that compare
    equal. `subst` maps a variable to what stands for it (is_same_graph's givens)."""

    def __init__(self, equal_pairs=(), subst=None):
        self.known = {}  # (id(a), id(b)) -> (result, a, b): the variables are kept alive
        for a, b in equal_pairs:
            self.known[(id(a), id(b))] = (True, a, b)
        self.subst = subst or (lambda v: v)

    def _result(self, a, b):
        return self.known[(id(a), id(b))][0]

    def same(self, x, y):
        s = self.subst
        x, y = s(x), s(y)
        stack = [(x, y, False)]
        while stack:
            a, b, expanded = stack.pop()
            key = (id(a), id(b))
            if expanded:
                na, nb = a.owner, b.owner
                ok = all(self._result(s(ia), s(ib)) for ia, ib in zip(na.inputs, nb.inputs))
                self.known[key] = (ok, a, b)
                if ok:  # the nodes are equal: so are their other outputs
                    for oa, ob in zip(na.outputs, nb.outputs):
                        self.known.setdefault((id(oa), id(ob)), (True, oa, ob))
                continue
            if key in self.known:
                continue
            if a is b:
                result = True
            elif a.owner is None or b.owner is None:
                result = a.owner is None and b.owner is None and a.kind == b.kind == "constant" and _constants_equal(a,
                                                                                                                    b)
            else:
                na, nb = a.owner, b.owner
                result = None
                if a.index != b.index or len(na.inputs) != len(nb.inputs) or na.nout != nb.nout or na.op != nb.op:
                    result = False
            if result is not None:
                self.known[key] = (result, a, b)
                continue
            stack.append((a, b, True))
            for ia, ib in zip(na.inputs, nb.inputs):
                ia, ib = s(ia), s(ib)
                if (id(ia), id(ib)) not in self.known:
                    stack.append((ia, ib, False))
        return self._result(x, y)


def equal_computations(xs, ys, in_xs=None, in_ys=None):
    """Whether xs[i] and ys[i] compute the same thing for every i (Theano's, from scan_utils):
    the same variable, equal constants, or the same op applied to inputs that compare equal, the
    pairs (in_xs[j], in_ys[j]) counting as equal."""
    xs, ys = _var_list(xs), _var_list(ys)
    if len(xs) != len(ys):
        raise ValueError(f"equal_computations: {len(xs)} xs but {len(ys)} ys")
    in_xs, in_ys = _var_list(in_xs or []), _var_list(in_ys or [])
    in_x_ids = {id(v) for v in in_xs}
    for x, y in zip(xs, ys):
        if (x.owner is None) != (y.owner is None):
            return False
        if x.owner is not None:
            if x.index != y.index:
                return False
            if id(x) not in in_x_ids and x.type != y.type:
                return False
    if len(in_xs) != len(in_ys):
        return False
    if any(a.type != b.type for a, b in zip(in_xs, in_ys)):
        return False
    comparer = _Comparer(zip(in_xs, in_ys))
    return all(comparer.same(x, y) for x, y in zip(xs, ys))


def is_same_graph(var1, var2, givens=None, debug=False):
    """Whether var1 and var2 compute the same thing once every variable of `givens` ({variable:
    replacement} or pairs) is replaced in both graphs (Theano's): x + 1 and x + 1 are the same
    graph, x + 1 and y + 1 are not unless givens maps x to y (or y to x)."""
    pairs = list(givens.items()) if isinstance(givens, dict) else list(givens or [])
    table = {id(a): (a, b) for a, b in pairs}

    def subst(v):
        for _ in range(len(table) + 1):
            entry = table.get(id(v))
            if entry is None:
                return v
            v = entry[1]
        raise ValueError("is_same_graph: the givens replace a variable by itself through a cycle")

    return _Comparer(subst=subst).same(var1, var2)


__all__ = ["Apply", "Constant", "Variable", "ancestors", "clone", "clone_get_equiv", "clone_replace",
           "equal_computations", "general_toposort", "graph_inputs", "inputs", "io_toposort", "is_same_graph", "ops",
           "orphans", "stack_search", "variables", "variables_and_orphans", "view_roots"]
