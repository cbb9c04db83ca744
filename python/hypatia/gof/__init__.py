"""hypatia.gof: Theano's graph package: the node classes (gof.graph), FunctionGraph (gof.fg), Op."""
from hypatia.gof import fg, graph  # noqa: F401
from hypatia.gof.fg import FunctionGraph, MissingInputError  # noqa: F401
from hypatia.gof.graph import Apply, Constant, Variable, view_roots  # noqa: F401
from hypatia.op import Op  # noqa: F401

__all__ = ["Apply", "Constant", "FunctionGraph", "MissingInputError", "Op", "Variable", "fg", "graph", "view_roots"]
