"""hypatia.tensor.type: TensorType, the static type of a symbolic tensor (Theano's tensor.type):
the engine's hypatia._core.TensorType (dtype, broadcastable, ndim; calling one makes a variable)."""
from hypatia import _core

TensorType = _core.TensorType

__all__ = ["TensorType"]
