"""hypatia.printing: debugprint (the C++ graph printer) and pp (an infix pretty-printer)."""
import sys

from hypatia import _core

Variable = _core.Variable


def _collect(obj, variables, texts, opts):
    if isinstance(obj, Variable):
        variables.append(obj)
    elif isinstance(obj, _core.Apply):
        variables.extend(obj.outputs)
    elif isinstance(obj, _core.Function):
        _flush(variables, texts, opts)
        texts.append(obj.debugprint_text(**opts))
    elif isinstance(obj, _core.FunctionGraph):
        _flush(variables, texts, opts)
        texts.append(_core.debugprint_fgraph(obj, **opts))
    elif hasattr(obj, "toposort") and hasattr(obj, "_fn"):  # f.maker.fgraph
        _flush(variables, texts, opts)
        texts.append(obj._fn.debugprint_text(**opts))
    elif isinstance(obj, (list, tuple)):
        for o in obj:
            _collect(o, variables, texts, opts)
    else:
        raise TypeError(f"debugprint cannot print a {type(obj).__name__}")


def _flush(variables, texts, opts):
    if variables:
        texts.append(_core.debugprint(list(variables), **opts))
        variables.clear()


def debugprint(obj, depth=-1, print_type=False, file=None, ids="CHAR", stop_on_name=False, done=None,
               print_storage=False, print_clients=False, used_ids=None, provenance=False):
    """Prints a graph as Theano's indented tree: a variable, an Apply, a compiled function, a
    FunctionGraph, or a list of them. file=None prints to stdout; file='str' returns the text.
    provenance=True adds after each node the rewrite that made it ("as written" for the user's
    own nodes) and the line of user code its ancestor was built on."""
    opts = dict(print_type=bool(print_type), depth=int(depth), provenance=bool(provenance))
    variables, texts = [], []
    _collect(obj, variables, texts, opts)
    _flush(variables, texts, opts)
    text = "".join(texts)
    if file == "str":
        return text
    out = sys.stdout if file is None else file
    out.write(text)
    return out


_INFIX = {"add": ("+", 1), "sub": ("-", 1), "mul": ("*", 2), "true_div": ("/", 2), "int_div": ("//", 2),
          "mod": ("%", 2), "pow": ("**", 3), "eq": ("==", 0), "neq": ("!=", 0), "lt": ("<", 0),
          "le": ("<=", 0), "gt": (">", 0), "ge": (">=", 0), "and": ("&", 0), "or": ("|", 0), "xor": ("^", 0)}


def _pp(v, parent_prec):
    node = v.owner
    if node is None:
        return str(v)
    op = node.op
    args = node.inputs
    if isinstance(op, _core.Elemwise):
        name = op.scalar_op
        if name in _INFIX and len(args) == 2:
            sym, prec = _INFIX[name]
            return f"({_pp(args[0], prec)} {sym} {_pp(args[1], prec)})"
        if name == "neg":
            return f"-{_pp(args[0], 4)}"
        return f"{name}({', '.join(_pp(a, -1) for a in args)})"
    if isinstance(op, _core.DimShuffle):
        pattern = op.new_order
        if list(pattern) == list(reversed(range(args[0].ndim))) and args[0].ndim == 2:
            return f"{_pp(args[0], 5)}.T"
        if [p for p in pattern if p != "x"] == list(range(args[0].ndim)):
            return _pp(args[0], parent_prec)  # only pads broadcastable axes
    return f"{op.name}({', '.join(_pp(a, -1) for a in args)})"


def pp(var):
    """An infix, one-line rendering of a variable's graph: '((x * TensorConstant{2.0}) + y)'."""
    if isinstance(var, (list, tuple)):
        return "\n".join(pp(v) for v in var)
    return _pp(var, -1)


pprint = pp  # (Theano's theano.printing.pprint, of which theano.pp was the call)




def Print(message="", attrs=("__str__",)):
    """Theano's ``Print(message, attrs)``: ``Print("x")(x)`` is x, printed as
    ``x __str__ = [1. 2.]`` (numpy's str) each time a compiled function computes it, on
    ``sys.stdout`` (so redirect_stdout, pytest and notebooks capture it). attrs name any
    ``numpy.ndarray`` attribute (``"shape"``, ``"min"``, ``"dtype"``...; a method is called).
    The op (C++ ``PrintOp``) passes gradients through."""
    import numpy as np

    attrs = list(attrs) if not isinstance(attrs, str) else [attrs]
    for a in attrs:
        if not isinstance(a, str) or not hasattr(np.ndarray, a):
            raise ValueError(f"Print: {a!r} is not an attribute of numpy.ndarray")
    return _core.PrintOp(message, attrs)


from hypatia._pydot import graph_to_dot, pydotprint  # noqa: E402

__all__ = ["debugprint", "pp", "Print", "pydotprint", "graph_to_dot"]
