"""hypatia.tensor.nnet.bn: Theano 1.0's batch normalization.

Written as graphs of elementwise ops and reductions (the fusion pass makes one loop of the
normalization, the reductions run as reductions), so their gradients are the graph's own:
``batch_normalization_train``'s gradient flows through the batch statistics as in Theano's
AbstractBatchNormTrainGrad.
"""
from hypatia import _core
from hypatia.tensor import basic as _T
from hypatia.tensor.basic import as_tensor_variable

__all__ = ["batch_normalization", "batch_normalization_train", "batch_normalization_test"]


def batch_normalization(inputs, gamma, beta, mean, std, mode="low_mem"):
    """(inputs - mean) * (gamma / std) + beta, elementwise with broadcasting. ``mode`` ('low_mem' or
    'high_mem') is Theano's memory/speed hint; both compute the same here."""
    if mode not in ("low_mem", "high_mem"):
        raise ValueError(f"batch_normalization: mode must be 'low_mem' or 'high_mem', got {mode!r}")
    inputs, gamma, beta, mean, std = (as_tensor_variable(v) for v in (inputs, gamma, beta, mean, std))
    return (inputs - mean) * (gamma / std) + beta


def _axes(axes, ndim, who):
    if axes == "per-activation":
        return (0,)
    if axes == "spatial":
        return (0,) + tuple(range(2, ndim))
    if isinstance(axes, (tuple, list)) and all(isinstance(a, int) for a in axes):
        out = tuple(sorted(a + ndim if a < 0 else a for a in axes))
        if len(set(out)) != len(out) or any(a < 0 or a >= ndim for a in out):
            raise ValueError(f"{who}: axes {axes!r} are not distinct axes of a {ndim}-d input")
        return out
    raise ValueError(f"{who}: axes must be 'per-activation', 'spatial' or a tuple of ints, got {axes!r}")


def _params_to_full(v, axes, ndim, who, name):
    """A parameter given with the reduced axes dropped gets them back as broadcastable axes; one of
    the input's ndim must already have them broadcastable. Returns (variable, was_reduced)."""
    v = as_tensor_variable(v)
    kept = [a for a in range(ndim) if a not in axes]
    if v.ndim == len(kept) and v.ndim != ndim:
        pattern, it = [], iter(range(v.ndim))
        for a in range(ndim):
            pattern.append("x" if a in axes else next(it))
        return v.dimshuffle(*pattern), True
    if v.ndim != ndim:
        raise ValueError(f"{who}: {name} must have {ndim} dimensions (the reduced axes {axes} broadcastable) or "
                         f"{len(kept)} (without them), got {v.type}")
    for a in axes:
        if not v.broadcastable[a]:
            raise ValueError(f"{who}: {name} must be broadcastable on the reduced axes {axes}, got {v.type}")
    return v, False


def _setup(who, inputs, axes, epsilon):
    """The input as a variable, its normalized axes; checks epsilon (Theano's cuDNN bound)."""
    x = as_tensor_variable(inputs)
    if epsilon < 1e-5:
        raise ValueError(f"{who}: epsilon must be at least 1e-5 (as cuDNN requires in Theano), got {epsilon}")
    return x, x.ndim, _axes(axes, x.ndim, who)


def _reduce_back(v, axes, ndim):
    return v.dimshuffle(*[a for a in range(ndim) if a not in axes])


def batch_normalization_train(inputs, gamma, beta, axes="per-activation", epsilon=1e-4,
                              running_average_factor=0.1, running_mean=None, running_var=None):
    """Normalizes ``inputs`` with the batch's statistics over ``axes`` ('per-activation': axis 0;
    'spatial': 0 and 2...; or a tuple of ints): out = (x - mean) * invstd * gamma + beta with
    invstd = 1 / sqrt(var + epsilon) (var of the batch, biased). Returns (out, mean, invstd), and
    also the updated running averages when ``running_mean`` / ``running_var`` are given:
    running_mean * (1 - f) + mean * f and running_var * (1 - f) + var * m / (m - 1) * f (the
    unbiased variance over the m reduced elements), f = running_average_factor."""
    who = "batch_normalization_train"
    x, ndim, axes = _setup(who, inputs, axes, epsilon)
    gamma, reduced = _params_to_full(gamma, axes, ndim, who, "gamma")
    beta, _ = _params_to_full(beta, axes, ndim, who, "beta")
    if (running_mean is None) != (running_var is None):
        raise ValueError(f"{who}: give both running_mean and running_var, or neither")
    mean = _T.mean(x, axis=axes, keepdims=True)
    centered = x - mean
    var = _T.mean(_T.sqr(centered), axis=axes, keepdims=True)
    eps = _core.scalar_like(float(epsilon), var)
    invstd = _T.inv(_T.sqrt(var + eps))
    out = centered * invstd * gamma + beta
    results = [out, mean, invstd]
    if running_mean is not None:
        rm, _ = _params_to_full(running_mean, axes, ndim, who, "running_mean")
        rv, _ = _params_to_full(running_var, axes, ndim, who, "running_var")
        f = _core.scalar_like(float(running_average_factor), mean)
        m = _T.prod(_T.stack([x.shape[a] for a in axes])) if axes else 1
        m = _T.cast(m, var.dtype)
        unbiased = var * m / _T.maximum(m - 1, 1)
        results += [rm * (1 - f) + mean * f, rv * (1 - f) + unbiased * f]
    if reduced:
        results = [results[0]] + [_reduce_back(r, axes, ndim) for r in results[1:]]
    return tuple(results)


def batch_normalization_test(inputs, gamma, beta, mean, var, axes="per-activation", epsilon=1e-4):
    """Normalizes with given statistics: (x - mean) * gamma / sqrt(var + epsilon) + beta."""
    who = "batch_normalization_test"
    x, ndim, axes = _setup(who, inputs, axes, epsilon)
    gamma, _ = _params_to_full(gamma, axes, ndim, who, "gamma")
    beta, _ = _params_to_full(beta, axes, ndim, who, "beta")
    mean, _ = _params_to_full(mean, axes, ndim, who, "mean")
    var, _ = _params_to_full(var, axes, ndim, who, "var")
    eps = _core.scalar_like(float(epsilon), var)
    return (x - mean) * (gamma / _T.sqrt(var + eps)) + beta
