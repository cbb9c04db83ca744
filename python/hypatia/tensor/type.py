"""hypatia.tensor.type: TensorType, the static type of a symbolic tensor (Theano's tensor.type).

The types are the engine's (hypatia._core.TensorType: dtype, broadcastable, ndim; calling one
makes a variable). TensorType here builds them with Theano's signature: a dtype name (or
'floatX'), a broadcastable pattern of any truthy or falsy entries (numpy bools from
``shape == 1``, 0 and 1), and an optional name. isinstance(t, TensorType) holds for every type.
"""
from hypatia import _convert, _core


class _TensorTypeMeta(type):
    def __instancecheck__(cls, obj):
        return isinstance(obj, _core.TensorType)

    def __subclasscheck__(cls, sub):
        return isinstance(sub, type) and issubclass(sub, _core.TensorType)

    def __call__(cls, dtype, broadcastable, name=None, sparse_grad=False):
        return _core.TensorType(_convert._dtype_name(dtype), _convert._broadcastable(broadcastable))

    def __getattr__(cls, name):
        return getattr(_core.TensorType, name)


class TensorType(metaclass=_TensorTypeMeta):
    """TensorType(dtype, broadcastable, name=None): the type of tensors of that dtype and pattern
    (a hypatia._core.TensorType; t(name) makes a variable of it). The name is accepted and not
    kept (it only labelled the type in Theano's printing)."""


__all__ = ["TensorType"]
