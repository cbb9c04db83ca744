"""hypatia.tensor.nnet.basic: Theano's neural-network ops (softmax and its variants, the
cross-entropies, relu, elu, softsign, softmax_grad, dropout), re-exported by hypatia.tensor.nnet (T.nnet)."""
import warnings as _warnings

import numpy as np

from hypatia import _core
from hypatia._messages import HypatiaWarning as _HypatiaWarning
from hypatia.tensor import basic as _basic
from hypatia.tensor.basic import _operands, as_tensor_variable, sigmoid, softplus  # noqa: F401
from hypatia.tensor.nnet.sigm import hard_sigmoid, ultra_fast_sigmoid  # noqa: F401

Softmax = _core.Softmax
CrossentropyCategorical1Hot = _core.CrossentropyCategorical1Hot
CrossentropyCategorical1HotGrad = _core.CrossentropyCategorical1HotGrad
CheckLabels = _core.CheckLabels
CrossentropySoftmax1HotWithBias = _core.CrossentropySoftmax1HotWithBias
CrossentropySoftmax1HotWithBiasDx = _core.CrossentropySoftmax1HotWithBiasDx


def relu(x, alpha=0):
    """max(x, 0), or the leaky rectifier (x above 0, alpha * x below) when alpha != 0.

    alpha may be a number, an array (broadcast against x: one slope per channel) or a symbolic
    variable; those last two use Theano's formula 0.5 * (1 + alpha) * x + 0.5 * (1 - alpha) * |x|.
    """
    x = as_tensor_variable(x)
    if not isinstance(alpha, _core.Variable) and np.ndim(alpha) == 0:
        return _core.relu(x, float(alpha))
    if not isinstance(alpha, _core.Variable):
        alpha = as_tensor_variable(np.asarray(alpha, dtype=x.dtype if x.dtype.startswith("float") else None))
    f1 = 0.5 * (1 + alpha)
    f2 = 0.5 * (1 - alpha)
    return f1 * x + f2 * abs(x)


def elu(x, alpha=1):
    """x for x > 0, alpha * (exp(x) - 1) below."""
    x = as_tensor_variable(x)
    a, one = _operands(x, alpha, 1)[1:]
    return _core.switch(_core.gt(x, _core.scalar_like(0, x)), x, _core.mul(a, _core.sub(_core.exp(x), one)))


def selu(x):
    """Scaled exponential linear unit (Klambauer et al. 2017): scale * elu(x, alpha) with
    alpha = 1.6732632423543772, scale = 1.0507009873554805; exp(x) - 1 computed as expm1."""
    x = as_tensor_variable(x)
    alpha, scale = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946
    a, s = _operands(x, alpha, scale)[1:]
    return _core.mul(s, _core.switch(_core.gt(x, _core.scalar_like(0, x)), x, _core.mul(a, _core.expm1(x))))


def softsign(x):
    """x / (1 + |x|)."""
    x = as_tensor_variable(x)
    return _core.true_div(x, _core.add(_core.scalar_like(1, x), _core.abs(x)))


_VECTOR_PADDED = ("{}: a vector is taken as a matrix of one row, as Theano 1.0 did (the result has shape (1, n)); "
                  "pass axis=-1 for a vector result")


def _rows(c, axis, who):
    """c, and the axis: Theano 1.0's softmax and log_softmax had no axis and took a vector as a row
    (shape (1, n), with a deprecation warning); RNN code written for it indexes the result [0]. An
    explicit axis (PyTensor's keyword) keeps the vector."""
    c = as_tensor_variable(c)
    if axis is None:
        axis = -1
        if c.ndim == 1:
            _warnings.warn(_VECTOR_PADDED.format(who), _HypatiaWarning, stacklevel=3)
            c = c.dimshuffle("x", 0)
    return c, int(axis)


def softmax(c, axis=None):
    """exp(c) / sum(exp(c)) along axis (the last by default), computed stably. A vector without an
    axis is taken as a matrix of one row (shape (1, n)), as in Theano 1.0."""
    return _core.softmax(*_rows(c, axis, "softmax"))


def log_softmax(c, axis=None):
    """log(softmax(c)) along axis (the last by default), computed stably; a vector without an axis
    as softmax takes it."""
    return _core.log_softmax(*_rows(c, axis, "log_softmax"))


logsoftmax = log_softmax


def softmax_with_bias(x, b):
    """softmax(x + b) row by row."""
    x, b = _operands(x, b)
    return _core.softmax(_core.add(x, b), -1)


def categorical_crossentropy(coding_dist, true_dist):
    """-log(coding_dist[i, label[i]]) for integer labels, or -sum(true * log(coding)) per row."""
    return _core.categorical_crossentropy(as_tensor_variable(coding_dist), as_tensor_variable(true_dist))


def crossentropy_categorical_1hot(coding_dist, true_one_of_n):
    return categorical_crossentropy(coding_dist, true_one_of_n)


def _bias(x, b):
    x = as_tensor_variable(x)
    if isinstance(b, _core.Variable):
        return x, b
    return x, as_tensor_variable(np.asarray(b, dtype=x.dtype))


def crossentropy_softmax_1hot_with_bias(x, b, y_idx):
    """(nll, softmax(x + b)) for a matrix of logits x, a bias b (one per class, or a number) and
    integer labels y_idx (one per row): nll[i] = -log(softmax(x + b)[i, y_idx[i]]), computed stably
    in one pass per row (CrossentropySoftmax1HotWithBias); its gradient is
    crossentropy_softmax_1hot_with_bias_dx. A label outside [0, n_classes) raises IndexError."""
    x, b = _bias(x, b)
    return tuple(_core.crossentropy_softmax_1hot_with_bias(x, b, as_tensor_variable(y_idx)))


def crossentropy_softmax_argmax_1hot_with_bias(x, b, y_idx):
    """(nll, softmax(x + b), argmax(x + b) along the rows): Theano's three outputs."""
    x, b = _bias(x, b)
    nll, sm = crossentropy_softmax_1hot_with_bias(x, b, y_idx)
    return nll, sm, _basic.argmax(x + b, axis=1)


def crossentropy_softmax_max_and_argmax_1hot_with_bias(x, b, y_idx):
    """(nll, softmax(x + b), max of softmax(x + b) and its argmax along the rows)."""
    nll, sm = crossentropy_softmax_1hot_with_bias(x, b, y_idx)
    return nll, sm, _basic.max(sm, axis=1), _basic.argmax(sm, axis=1)


def crossentropy_softmax_1hot(x, y_idx):
    """(nll, softmax(x)): crossentropy_softmax_1hot_with_bias with no bias."""
    x = as_tensor_variable(x)
    return crossentropy_softmax_1hot_with_bias(x, np.zeros(1, dtype=x.dtype), y_idx)


def crossentropy_softmax_1hot_with_bias_dx(dy, sm, y_idx):
    """dy[:, None] * (sm - one_hot(y_idx)): the gradient of crossentropy_softmax_1hot_with_bias's
    nll w.r.t. its logits (CrossentropySoftmax1HotWithBiasDx)."""
    return _core.crossentropy_softmax_1hot_with_bias_dx(as_tensor_variable(dy), as_tensor_variable(sm),
                                                        as_tensor_variable(y_idx))


def binary_crossentropy(output, target):
    """-(target * log(output) + (1 - target) * log(1 - output)) elementwise."""
    output, target = _operands(output, target)
    return _core.binary_crossentropy(output, target)


def sigmoid_binary_crossentropy(output, target):
    """binary_crossentropy(sigmoid(output), target), computed stably through softplus."""
    output, target = _operands(output, target)
    one = _core.scalar_like(1, target)
    return _core.add(_core.mul(target, _core.softplus(_core.neg(output))),
                     _core.mul(_core.sub(one, target), _core.softplus(output)))


def h_softmax(x, batch_size, n_outputs, n_classes, n_outputs_per_class, W1, b1, W2, b2, target=None):
    """Two-level hierarchical softmax (Theano's h_softmax): p(output) = p(class) * p(output | class)
    with the outputs split into n_classes classes of n_outputs_per_class each. W1 (dim, n_classes),
    b1 (n_classes,), W2 (n_classes, dim, n_outputs_per_class), b2 (n_classes, n_outputs_per_class).
    Without ``target``: every output's probability, (batch_size, n_outputs). With integer targets
    (batch_size,): only their probabilities, (batch_size,), computing the second level for each
    row's own class only."""
    from hypatia.tensor import basic as T

    x, W1, b1, W2, b2 = (as_tensor_variable(v) for v in (x, W1, b1, W2, b2))
    class_probs = softmax(T.dot(x, W1) + b1)
    if target is None:
        activations = T.tensordot(x, W2, [[1], [1]]) + b2
        output_probs = softmax(activations.reshape((-1, n_outputs_per_class)))
        output_probs = output_probs.reshape((batch_size, n_classes, -1))
        output_probs = class_probs.dimshuffle(0, 1, "x") * output_probs
        return output_probs.reshape((batch_size, -1))[:, :n_outputs]
    target = as_tensor_variable(target).flatten()
    target_classes = target // n_outputs_per_class
    in_class = target % n_outputs_per_class
    activations = T.batched_dot(x, W2[target_classes]) + b2[target_classes]
    output_probs = softmax(activations)
    rows = T.arange(batch_size)
    return class_probs[rows, target_classes] * output_probs[rows, in_class]


def softmax_grad(dy, sm, axis=-1):
    """The gradient of softmax given its output sm and the output gradient dy (Theano's
    SoftmaxGrad): sm * (dy - sum(dy * sm, axis, keepdims=True)). The graph T.grad builds for a
    softmax is this one; the fusion pass runs it as one reduction and one fused loop."""
    dy, sm = as_tensor_variable(dy), as_tensor_variable(sm)
    return sm * (dy - _basic.sum(dy * sm, axis=axis, keepdims=True))


class SoftmaxGrad:
    """Theano's SoftmaxGrad op as a callable: SoftmaxGrad()(dy, sm)."""

    def __call__(self, dy, sm):
        return softmax_grad(dy, sm)


def dropout(x, p, srng=None, rescale=True, seed=None):
    """Inverted dropout: each element of x kept with probability 1 - p (a Bernoulli mask drawn from
    srng, an MRG_RandomStreams or RandomStreams; a new MRG_RandomStreams(seed) when None) and
    divided by 1 - p when rescale, so that the expectation is x. p = 0 returns x. The mask is a
    fresh draw at every call of the compiled function."""
    x = as_tensor_variable(x)
    if not 0 <= p < 1:
        raise ValueError(f"dropout: p must be in [0, 1), got {p}")
    if p == 0:
        return x
    if srng is None:
        from hypatia.sandbox.rng_mrg import MRG_RandomStreams

        srng = MRG_RandomStreams(1234 if seed is None else seed)
    mask = srng.binomial(size=x.shape, p=1 - p, dtype=x.dtype)
    return x * mask / (1 - p) if rescale else x * mask
