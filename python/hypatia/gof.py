"""hypatia.gof: the graph classes under Theano's old module name."""
from hypatia._core import Apply, FunctionGraph, Variable  # noqa: F401
from hypatia.op import Op  # noqa: F401
from hypatia.tensor.basic import Constant  # noqa: F401
from hypatia.compile import Mode  # noqa: F401

__all__ = ["Apply", "FunctionGraph", "Op", "Variable", "Constant", "Mode"]
