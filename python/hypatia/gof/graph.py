"""hypatia.gof.graph: Theano's gof.graph: the node classes.

Variables and Apply nodes are the engine's (hypatia._core). Python keeps one object per live node,
so identity (``is``, ``==``, sets and dicts of variables) works as in Theano.
"""
from hypatia import _core

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


__all__ = ["Apply", "Constant", "Variable"]
