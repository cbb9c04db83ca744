"""hypatia.tensor.nnet.sigm: the sigmoid family (Theano's tensor.nnet.sigm)."""
from hypatia import _convert, _core
from hypatia.tensor.basic import sigmoid, softplus  # noqa: F401

ultra_fast_sigmoid = sigmoid


def hard_sigmoid(x):
    """clip(0.2 * x + 0.5, 0, 1)."""
    return _core.hard_sigmoid(_convert.as_tensor_variable(x))


__all__ = ["sigmoid", "softplus", "ultra_fast_sigmoid", "hard_sigmoid"]
