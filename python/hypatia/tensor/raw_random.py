"""hypatia.tensor.raw_random: Theano's raw_random draws on an explicit state.

Each function takes the state (a shared variable holding a generator state, as RandomStreams makes
them) and returns (new_state, draws) of a RandomFunction node: numpy's RandomState algorithms in
C++, so a state seeded like ``numpy.random.RandomState(s)`` gives RandomState(s)'s numbers. Sizes
follow Theano's rules: a tuple of ints and scalar variables, an integer vector variable (with ndim
when its length cannot be read from the graph), or None for the parameters' broadcast shape.
"""
import numpy as np

from hypatia import _convert, _core, _random

RandomFunction = _core.RandomFunction


def _draw(dist, random_state, size, params, ndim, dtype):
    who = f"raw_random.{dist}"
    size_v = None if size is None else _random.size_var(size, ndim, who)
    return tuple(_core.random_draw(dist, random_state, size_v, [_random.operand(p) for p in params],
                                   _convert._dtype_name(dtype), -1 if ndim is None or size is None else int(ndim)))


def uniform(random_state, size=None, low=0.0, high=1.0, ndim=None, dtype=None):
    """Uniform draws in [low, high) (numpy's RandomState.uniform); dtype defaults to
    upcast(floatX, low, high)."""
    dtype = _random.default_dtype(low, high) if dtype is None else dtype
    return _draw("uniform", random_state, size, [low, high], ndim, dtype)


def normal(random_state, size=None, avg=0.0, std=1.0, ndim=None, dtype=None):
    """Normal draws (RandomState.normal(avg, std))."""
    dtype = _random.default_dtype(avg, std) if dtype is None else dtype
    return _draw("normal", random_state, size, [avg, std], ndim, dtype)


def binomial(random_state, size=None, n=1, p=0.5, ndim=None, dtype="int64", prob=None):
    """Binomial draws (RandomState.binomial(n, p)); prob is Theano's old name of p."""
    if prob is not None:
        p = prob
    return _draw("binomial", random_state, size, [n, p], ndim, dtype)


def random_integers(random_state, size=None, low=0, high=1, ndim=None, dtype="int64"):
    """Integers in [low, high], both included, one RandomState.random_integers call per element."""
    return _draw("random_integers", random_state, size, [low, high], ndim, dtype)


def choice(random_state, size=None, a=2, replace=True, p=None, ndim=None, dtype="int64"):
    """RandomState.choice(a, size, replace, p): a an int (values in range(a)) or a vector (its
    elements); p None for equal probabilities."""
    who = "raw_random.choice"
    size_v = None if size is None else _random.size_var(size, ndim, who)
    p_v = _convert.constant(np.zeros(0, dtype="float64")) if p is None else _convert.as_tensor_variable(p)
    rep = replace if isinstance(replace, _core.Variable) else _convert.constant(np.int8(bool(replace)))
    return tuple(_core.random_draw("choice", random_state, size_v, [_convert.as_tensor_variable(a), rep, p_v],
                                   _convert._dtype_name(dtype), -1 if ndim is None or size is None else int(ndim)))


def poisson(random_state, size=None, lam=1.0, ndim=None, dtype="int64"):
    """Poisson draws (RandomState.poisson(lam))."""
    return _draw("poisson", random_state, size, [lam], ndim, dtype)


def permutation(random_state, size=None, n=1, ndim=None, dtype="int64"):
    """RandomState.permutation(n) for each element of size (None: one permutation); the result has
    one more axis, of length n."""
    return _draw("permutation", random_state, size, [n], ndim, dtype)


def multinomial(random_state, size=None, n=1, pvals=(0.5, 0.5), ndim=None, dtype="int64"):
    """RandomState.multinomial(n, pvals) for each element of size (n and pvals' leading axes
    broadcast against it); the result has pvals' last axis added."""
    return _draw("multinomial", random_state, size, [n, _convert.as_tensor_variable(np.asarray(pvals))
                                                     if not isinstance(pvals, _core.Variable) else pvals],
                 ndim, dtype)


def gamma(random_state, size=None, shape=1.0, scale=1.0, ndim=None, dtype=None):
    """Gamma draws (RandomState.gamma(shape, scale))."""
    dtype = _random.default_dtype(shape, scale) if dtype is None else dtype
    return _draw("gamma", random_state, size, [shape, scale], ndim, dtype)


def beta(random_state, size=None, a=1.0, b=1.0, ndim=None, dtype=None):
    """Beta draws (RandomState.beta(a, b))."""
    dtype = _random.default_dtype(a, b) if dtype is None else dtype
    return _draw("beta", random_state, size, [a, b], ndim, dtype)


def state_to_randomstate(words):
    """A numpy RandomState in the state `words` (a generator state, e.g. state.get_value())."""
    w = np.asarray(words, dtype=np.uint32)
    if w.shape != (_core.random_state_words,):
        raise ValueError(f"a generator state has {_core.random_state_words} uint32 words, got shape {w.shape}")
    rs = np.random.RandomState()
    gauss = w[626:628].view(np.float64)[0] if w[626:628].flags.c_contiguous else w[626:628].copy().view(np.float64)[0]
    rs.set_state(("MT19937", w[:624].copy(), int(w[624]), int(w[625]), float(gauss)))
    return rs


def randomstate_to_state(rs):
    """The generator state (uint32 words) of a numpy RandomState."""
    name, key, pos, has_gauss, gauss = rs.get_state()
    if name != "MT19937":
        raise TypeError(f"expected an MT19937 RandomState, got {name}")
    w = np.empty(_core.random_state_words, dtype=np.uint32)
    w[:624] = key
    w[624], w[625] = pos, has_gauss
    w[626:628] = np.array([gauss], dtype=np.float64).view(np.uint32)
    return w


__all__ = ["RandomFunction", "uniform", "normal", "binomial", "random_integers", "choice", "poisson",
           "permutation", "multinomial", "gamma", "beta", "state_to_randomstate", "randomstate_to_state"]
