"""pydotprint: a compiled function's (or variables') graph as a Graphviz picture (Theano's
printing.pydotprint), drawn by the ``dot`` program (Debian's graphviz).

Apply nodes are ellipses filled by kind (elementwise, BLAS, reduction, shape, transfer, loop,
random, other); variables are boxes: function inputs green, shared variables cyan, constants
SpringGreen, outputs blue (as Theano drew them). Edges carry the dtype and the shape of the value
where it is known (a profiled function's calls, constants, shared variables, test values), else
its broadcast pattern (and the input position when a node has several); an input the node overwrites (its
destroy_map) is a bold red edge labelled "inplace", one it returns a view of (view_map) a dashed
edge labelled "view". A Scan's inner graph is a cluster beside its node; an IfElse's inputs are
labelled cond / then / else.
"""
import os
import shutil
import subprocess

from hypatia import _core

__all__ = ["pydotprint", "graph_to_dot", "NODE_COLORS"]

NODE_COLORS = {
    "elemwise": "#FFAABB",
    "blas": "#AACCFF",
    "reduction": "#FFDD88",
    "shape": "#C8A27A",  # Theano drew Shape brown
    "transfer": "red",
    "loop": "yellow",
    "branch": "magenta",
    "random": "#CCAAFF",
    "other": "white",
}
_KIND_OF_OP = {
    "Elemwise": "elemwise", "Composite": "elemwise", "Softmax": "elemwise", "LogSoftmax": "elemwise",
    "Dot": "blas", "Gemm": "blas", "Gemv": "blas", "Ger": "blas", "BatchedDot": "blas", "Dot22": "blas",
    "Conv2d": "blas", "Conv2dGradInputs": "blas", "Conv2dGradWeights": "blas", "Conv3d": "blas",
    "Conv3dGradInputs": "blas", "Conv3dGradWeights": "blas", "Linalg": "blas",
    "CAReduce": "reduction", "Reduce": "reduction", "Argmax": "reduction", "MaxAndArgmax": "reduction",
    "CumOp": "reduction", "Pool": "reduction", "MaxPoolGrad": "reduction", "AveragePoolGrad": "reduction",
    "Shape": "shape", "Shape_i": "shape", "ShapeI": "shape", "Reshape": "shape", "DimShuffle": "shape",
    "MakeVector": "shape", "Alloc": "shape", "Subtensor": "shape", "IncSubtensor": "shape",
    "AdvancedSubtensor": "shape", "AdvancedIncSubtensor": "shape", "Join": "shape", "Split": "shape",
    "Eye": "shape", "ARange": "shape", "Flatten": "shape", "Rebroadcast": "shape", "SpecifyShape": "shape",
    "HostFromDevice": "transfer", "DeviceFromHost": "transfer", "HostFromGpu": "transfer",
    "GpuFromHost": "transfer",
    "Scan": "loop", "ScanGrad": "loop", "IfElse": "branch",
}


def _kind(op):
    name = type(op).__name__
    if name in _KIND_OF_OP:
        return _KIND_OF_OP[name]
    shown = str(op).split("{")[0]  # the op's own name: fused kernels print as Elemwise{Composite...}
    if shown in _KIND_OF_OP:
        return _KIND_OF_OP[shown]
    if "Random" in name or "MRG" in name or name.startswith("Rng"):
        return "random"
    return "other"


def _q(text):
    return '"' + str(text).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _type_label(v):
    bc = "".join("1" if b else "n" for b in v.broadcastable) if v.ndim else "scalar"
    return f"{v.dtype} ({bc})" if v.ndim else f"{v.dtype} scalar"


def _known_shapes(obj, nodes):
    """Variable id -> "(64, 128)" where a shape is known: a profiled function's last calls (each node's
    output shapes), constants, shared variables and test values."""
    known = {}
    prof = getattr(obj, "profile", None)
    pnodes = prof.nodes if prof is not None else []
    if len(pnodes) == len(nodes):
        for n, pn in zip(nodes, pnodes):
            parts = pn.get("output_shapes", "").split("; ")
            if len(parts) == len(n.outputs):
                for o, part in zip(n.outputs, parts):
                    if part.startswith("("):
                        known[o.id] = part.rsplit(" ", 1)[0]
    return known


def _shape_of(v, known):
    if v.id in known:
        return known[v.id]
    try:
        if v.kind == "constant":
            value = v.data
        elif v.kind == "shared":
            value = v.get_value(borrow=True)
        else:
            value = getattr(getattr(v, "tag", None), "test_value", None)
        if value is not None and hasattr(value, "shape"):
            return "(" + ", ".join(str(d) for d in value.shape) + ("," if len(value.shape) == 1 else "") + ")"
    except Exception:  # noqa: BLE001 - a shape is a nicety of the picture
        pass
    return None


def _roots(obj):
    """(nodes in order, graph inputs, graph outputs) of a function, an fgraph, or variables."""
    if isinstance(obj, _core.Function) or hasattr(obj, "maker"):
        fg = obj.maker.fgraph
        return list(fg.toposort()), list(fg.inputs), list(fg.outputs)
    if hasattr(obj, "toposort") and hasattr(obj, "outputs"):
        return list(obj.toposort()), list(obj.inputs), list(obj.outputs)
    outs = list(obj) if isinstance(obj, (list, tuple)) else [obj]
    if not all(isinstance(o, _core.Variable) for o in outs):
        raise TypeError(f"pydotprint: expected a compiled function, a FunctionGraph or variables, got "
                        f"{type(obj).__name__}")
    order, seen = [], set()

    def visit(v):
        node = v.owner
        if node is None or node.id in seen:
            return
        seen.add(node.id)
        for i in node.inputs:
            visit(i)
        order.append(node)

    for o in outs:
        visit(o)
    inputs = []
    for n in order:
        for i in n.inputs:
            if i.owner is None and i.kind == "input" and all(i is not x for x in inputs):
                inputs.append(i)
    return order, inputs, outs


class _Dot:
    def __init__(self, known=None):
        self.known = known or {}
        self.lines = []
        self.var_ids = {}
        self.counter = 0
        self.info = {}  # DOT id -> what d3viz shows when the node is clicked

    def edge_label(self, v):
        """The dtype and shape of a value where its shape is known, else its broadcast pattern."""
        shape = _shape_of(v, self.known)
        return f"{v.dtype} {shape}" if shape is not None else _type_label(v)

    def new_id(self, prefix):
        self.counter += 1
        return f"{prefix}{self.counter}"

    def graph(self, nodes, inputs, outputs, indent="  ", prefix=""):
        out_ids = {id(o) for o in outputs}
        local = {}

        def var_node(v):
            key = (prefix, v.id)
            if key in local:
                return local[key]
            vid = self.new_id(prefix + "v")
            local[key] = vid
            label = v.name or ""
            if v.kind == "constant":
                try:
                    data = v.data
                    label = str(data) if getattr(data, "size", 2) <= 1 else (label or "constant")
                except Exception:
                    label = label or "constant"
                color = "SpringGreen"
            elif v.kind == "shared":
                color = "cyan"
            elif any(v is i for i in inputs) or v.kind == "input":
                color = "green"
            elif id(v) in out_ids:
                color = "dodgerblue"
            else:
                color = None
            if color is None and id(v) not in out_ids:
                return None  # an intermediate: the edge goes node to node
            text = (label + "\n" if label else "") + _type_label(v)
            self.lines.append(f"{indent}{vid} [label={_q(text)}, shape=box, style=filled, fillcolor={_q(color)}];")
            self.info[vid] = {"kind": "variable", "name": v.name or "", "role": v.kind, "type": _type_label(v),
                              "created_at": getattr(v, "created_at", "") or ""}
            return vid

        node_ids = {}
        for position, n in enumerate(nodes):
            nid = self.new_id(prefix + "n")
            node_ids[n.id] = nid
            kind = _kind(n.op)
            where = getattr(n, "created_at", "") or ""
            tooltip = f"{n.op}" + (f"\ncreated at {where}" if where else "")
            self.lines.append(f"{indent}{nid} [label={_q(str(n.op))}, shape=ellipse, style=filled, "
                              f"fillcolor={_q(NODE_COLORS[kind])}, tooltip={_q(tooltip)}];")
            self.info[nid] = {"kind": "apply", "op": str(n.op), "op_kind": kind,
                              "made_by": getattr(n, "made_by", "") or "", "created_at": where,
                              "inputs": [_type_label(v) for v in n.inputs],
                              "outputs": [_type_label(v) for v in n.outputs],
                              "inplace": sorted({i for ins in dict(getattr(n.op, "destroy_map", {}) or {}).values()
                                                 for i in ins}),
                              "position": position, "graph": prefix or "main"}
        for n in nodes:
            nid = node_ids[n.id]
            destroy = dict(getattr(n.op, "destroy_map", {}) or {})
            view = dict(getattr(n.op, "view_map", {}) or {})
            destroyed = {i for ins in destroy.values() for i in ins}
            viewed = {i for ins in view.values() for i in ins}
            is_ifelse = type(n.op).__name__ == "IfElse"
            n_out = len(n.outputs)
            for pos, v in enumerate(n.inputs):
                src = node_ids.get(v.owner.id) if v.owner is not None else None
                if src is None:
                    src = var_node(v)
                if src is None:
                    continue
                label = self.edge_label(v)
                if len(n.inputs) > 1:
                    if is_ifelse:
                        role = "cond" if pos == 0 else ("then" if pos <= n_out else "else")
                        label = f"{role} {pos}: {label}"
                    else:
                        label = f"{pos} {label}"
                attrs = [f"label={_q(label)}"]
                if pos in destroyed:
                    attrs += ['color="red"', 'style="bold"', f"xlabel={_q('inplace')}"]
                elif pos in viewed:
                    attrs += ['style="dashed"', f"xlabel={_q('view')}"]
                self.lines.append(f"{indent}{src} -> {nid} [{', '.join(attrs)}];")
        for o in outputs:
            if o.owner is not None and o.owner.id in node_ids:
                vid = var_node(o)
                if vid is not None:
                    self.lines.append(f"{indent}{node_ids[o.owner.id]} -> {vid} [label={_q(self.edge_label(o))}];")
        # Scan's inner graphs, as clusters beside their node.
        for n in nodes:
            if type(n.op).__name__ in ("Scan", "ScanGrad") and hasattr(n.op, "outputs"):
                try:
                    inner_out = list(n.op.outputs)
                    inner_in = list(n.op.inputs)
                except Exception:
                    continue
                inner_nodes, _, _ = _roots(inner_out)
                cid = self.new_id("cluster_")
                self.lines.append(f"{indent}subgraph {cid} {{")
                self.lines.append(f"{indent}  label={_q('inner graph of ' + str(n.op))}; style=dashed; color=gray40;")
                self.graph(inner_nodes, inner_in, inner_out, indent + "  ", cid + "_")
                self.lines.append(f"{indent}}}")
                first = next((ln.split()[0] for ln in self.lines if ln.strip().startswith(cid + "_")), None)
                if first:
                    self.lines.append(f"{indent}{node_ids[n.id]} -> {first} [style=dotted, arrowhead=none, "
                                      f"label={_q('body')}];")
        return node_ids


def graph_to_dot(fct):
    """The DOT text of a compiled function's graph (or of variables' graph)."""
    return _build(fct).text


def _build(fct):
    nodes, inputs, outputs = _roots(fct)
    d = _Dot(_known_shapes(fct, nodes))
    d.lines.append("digraph G {")
    d.lines.append('  graph [rankdir=TB, fontname="Helvetica"]; node [fontname="Helvetica"]; '
                   'edge [fontname="Helvetica", fontsize=9];')
    d.graph(nodes, inputs, outputs)
    d.lines.append("}")
    d.text = "\n".join(d.lines) + "\n"
    return d


def _render(text, format):
    """dot -T<format> of a DOT text (bytes)."""
    dot = shutil.which("dot")
    if dot is None:
        raise RuntimeError("pydotprint: Graphviz's 'dot' program was not found (Debian: apt-get install graphviz)")
    r = subprocess.run([dot, "-T" + format], input=text.encode(), capture_output=True, timeout=120)
    if r.returncode != 0:
        raise RuntimeError(f"pydotprint: dot -T{format} failed: {r.stderr.decode(errors='replace').strip()}")
    return r.stdout


def pydotprint(fct, outfile=None, compact=True, format="png", with_ids=False, high_contrast=True, cond_highlight=None,
               colorCodes=None, max_label_size=70, scan_graphs=False, var_with_name_simple=False,
               print_output_file=True, return_image=False):
    """Draws the graph of a compiled function (or of variables) with Graphviz: format 'png', 'svg',
    'pdf' (or anything ``dot -T`` takes), or 'dot' for the DOT text itself. outfile defaults to
    hypatia.pydotprint.<format> in the current directory; return_image=True returns the bytes
    instead of writing a file. Theano's other arguments are accepted for compatibility."""
    text = graph_to_dot(fct)
    data = text.encode() if format == "dot" else _render(text, format)
    if return_image:
        return data
    if outfile is None:
        outfile = os.path.join(os.getcwd(), "hypatia.pydotprint." + format)
    with open(outfile, "wb") as fh:
        fh.write(data)
    if print_output_file:
        print("The output file is available at", outfile)
    return None
