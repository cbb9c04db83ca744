"""hypatia.gof.fg: FunctionGraph, a graph with fixed inputs and outputs (Theano's gof.fg)."""
from hypatia import _core

FunctionGraph = _core.FunctionGraph
MissingInputError = _core.MissingInputError

__all__ = ["FunctionGraph", "MissingInputError"]
