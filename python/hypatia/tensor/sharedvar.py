"""hypatia.tensor.sharedvar: TensorSharedVariable (Theano's tensor.sharedvar): a shared variable
holding a tensor (every shared variable does; hypatia.shared makes them)."""
from hypatia.compile.sharedvalue import SharedVariable, shared  # noqa: F401


class TensorSharedVariable(SharedVariable):
    """isinstance(v, TensorSharedVariable): v is a shared variable (get_value / set_value)."""

    _kinds = ("shared",)


__all__ = ["TensorSharedVariable"]
