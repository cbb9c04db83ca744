"""hypatia.gradient: symbolic differentiation (Theano's theano.gradient), on the C++ grad module."""
import numpy as np

from hypatia import _core
from hypatia._convert import as_tensor_variable

Variable = _core.Variable
DisconnectedInputError = _core.DisconnectedInputError
NullTypeGradError = _core.NullTypeGradError
GradientError = _core.GradientError


def _as_list(x):
    if isinstance(x, (list, tuple)):
        return list(x), type(x)
    return [x], None


def _format_as(kind, xs):
    if kind is None:
        return xs[0]
    return kind(xs)


def grad(cost, wrt, consider_constant=None, disconnected_inputs="raise", add_names=True, known_grads=None,
         return_disconnected="zero", null_gradients="raise"):
    """d cost / d wrt (reverse mode). wrt is a variable or a list of them; the result has the same form.

    consider_constant: variables whose gradient is not propagated. disconnected_inputs: 'raise',
    'warn' or 'ignore' when a wrt does not reach the cost; return_disconnected: what such a wrt
    gets, 'zero' (zeros of its shape) or 'None'. known_grads: {variable: gradient} to start from
    (cost may then be None).
    """
    wrt_list, kind = _as_list(wrt)
    for w in wrt_list:
        if not isinstance(w, Variable):
            raise TypeError(f"grad: wrt must be symbolic Variables, got {type(w).__name__}")
    if return_disconnected not in ("zero", "None"):
        raise ValueError(f"grad: return_disconnected must be 'zero' or 'None' (Theano's 'Disconnected', "
                         f"DisconnectedType results, does not exist here), got {return_disconnected!r}")
    if cost is not None:
        cost = as_tensor_variable(cost)
    known = [(k, as_tensor_variable(v)) for k, v in (known_grads or {}).items()]
    gs = _core.grad(cost, wrt_list, list(consider_constant or []), disconnected_inputs, known)
    if return_disconnected == "None":
        # A wrt the cost (or a known gradient's variable) does not reach gets None, not zeros.
        roots = ([cost] if cost is not None else []) + [k for k, _ in known]
        reach = {id(v) for v in roots} | {id(v) for node in _core.toposort(roots) for v in node.inputs}
        gs = [g if id(w) in reach else None for w, g in zip(wrt_list, gs)]
    if add_names and cost is not None and cost.name:
        for g, w in zip(gs, wrt_list):
            if g.name is None and g.owner is not None:
                g.name = f"(d{cost.name}/d{w.name or w})"
    return _format_as(kind, gs)


def Lop(f, wrt, eval_points, consider_constant=None, disconnected_inputs="raise"):
    """Vector-Jacobian products: sum_i eval_points[i] * d f[i] / d wrt (same form as wrt)."""
    fs, _ = _as_list(f)
    ws, kind = _as_list(wrt)
    es, _ = _as_list(eval_points)
    es = [as_tensor_variable(e) for e in es]
    return _format_as(kind, _core.Lop(fs, ws, es))


def Rop(f, wrt, eval_points):
    """Jacobian-vector products: sum_j d f / d wrt[j] * eval_points[j] (same form as f)."""
    fs, kind = _as_list(f)
    ws, _ = _as_list(wrt)
    es, _ = _as_list(eval_points)
    es = [as_tensor_variable(e) for e in es]
    return _format_as(kind, _core.Rop(fs, ws, es))


def jacobian(expression, wrt, consider_constant=None, disconnected_inputs="raise"):
    """d expression / d wrt for a 0-d or 1-d expression (shape expression.shape + wrt.shape)."""
    ws, kind = _as_list(wrt)
    return _format_as(kind, [_core.jacobian(as_tensor_variable(expression), w) for w in ws])


def hessian(cost, wrt, consider_constant=None, disconnected_inputs="raise"):
    """d^2 cost / d wrt^2 for a 0-d cost."""
    ws, kind = _as_list(wrt)
    return _format_as(kind, [_core.hessian(as_tensor_variable(cost), w) for w in ws])


def disconnected_grad(x):
    """x, with a zero gradient (no gradient flows through it)."""
    return _core.disconnected_grad(as_tensor_variable(x))


consider_constant = disconnected_grad
zero_grad = disconnected_grad


def grad_clip(x, lower_bound, upper_bound):
    """x in the forward pass; its gradient clipped to [lower_bound, upper_bound]."""
    return _core.grad_clip(as_tensor_variable(x), float(lower_bound), float(upper_bound))


def verify_grad(fun, pt, n_tests=2, rng=None, eps=None, out_type=None, abs_tol=None, rel_tol=None, mode=None,
                cast_to_output_type=False, no_debug_ref=True):
    """Checks the symbolic gradient of fun(*inputs) at pt against finite differences of a random
    projection of its output; raises verify_grad.E_grad (GradientError) when they disagree."""
    if not isinstance(pt, (list, tuple)):
        raise TypeError("verify_grad: pt must be a list or tuple of numpy arrays")
    point = [np.asarray(p) for p in pt]
    # A numpy RandomState (Theano's convention) or a Generator.
    seed = 42 if rng is None else int(rng.integers(2**31) if hasattr(rng, "integers") else rng.randint(2**31))

    def fn(variables):
        return as_tensor_variable(fun(*variables))

    _core.verify_grad(fn, point, n_tests, seed, eps or 0.0, abs_tol or 0.0, rel_tol or 0.0)


verify_grad.E_grad = GradientError

__all__ = ["grad", "Lop", "Rop", "jacobian", "hessian", "disconnected_grad", "consider_constant", "zero_grad",
           "grad_clip", "verify_grad", "DisconnectedInputError", "NullTypeGradError", "GradientError"]
