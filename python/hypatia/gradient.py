"""hypatia.gradient: symbolic differentiation (Theano's theano.gradient), on the C++ grad module."""
import numpy as np

from hypatia import _core
from hypatia._convert import _shape_list, as_tensor_variable

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


def _held_constant(expression, wrt, consider_constant):
    """(expression, wrt) with every variable of consider_constant seen through disconnected_grad:
    cloned together, so that a wrt computed inside the expression is the copy's."""
    if not consider_constant:
        return expression, wrt
    from hypatia.gof.graph import clone_replace
    cloned = clone_replace([expression] + list(wrt), {c: disconnected_grad(c) for c in consider_constant})
    return cloned[0], cloned[1:]


def _reaches(expression, w, disconnected_inputs, who):
    """Whether a gradient of expression reaches w; where none does, raises DisconnectedInputError,
    warns or says nothing, as disconnected_inputs ('raise', 'warn', 'ignore') asks."""
    if disconnected_inputs not in ("raise", "warn", "ignore"):
        raise ValueError(f"{who}: disconnected_inputs must be 'raise', 'warn' or 'ignore', got {disconnected_inputs!r}")
    probe = expression if expression.ndim == 0 else _core.sum(expression)
    try:
        _core.grad(probe, [w], [], "raise", [])
        return True
    except DisconnectedInputError as e:
        if disconnected_inputs == "raise":
            raise DisconnectedInputError(f"{who}: {e}") from None
        if disconnected_inputs == "warn":
            import warnings
            from hypatia._messages import HypatiaWarning
            warnings.warn(f"{who}: {e}", HypatiaWarning, stacklevel=4)
        return False


def _per_wrt(who, expression, wrt, consider_constant, disconnected_inputs, derive, lead_dims):
    """derive(expression, w) for each w of wrt, with consider_constant held; a w the expression
    does not reach gets zeros of shape lead_dims(expression, w) + w.shape (or raises, or warns)."""
    ws, kind = _as_list(wrt)
    expression, ws = _held_constant(as_tensor_variable(expression), ws, consider_constant)
    out = []
    for w in ws:
        if _reaches(expression, w, disconnected_inputs, who):
            out.append(derive(expression, w))
        else:
            dims = lead_dims(expression, w) + [w.shape[i] for i in range(w.ndim)]
            out.append(_core.zeros(_shape_list(dims), w.dtype if w.dtype.startswith("float") else "float64"))
    return _format_as(kind, out)


def jacobian(expression, wrt, consider_constant=None, disconnected_inputs="raise"):
    """d expression / d wrt (shape expression.shape + wrt.shape for a 0-d or 1-d expression; a
    larger one is flattened first). consider_constant: variables the derivative does not go
    through. disconnected_inputs: what a wrt the expression does not depend on gets: 'raise'
    (DisconnectedInputError), 'warn' or 'ignore' (zeros)."""
    def rows(e, w):
        return [] if e.ndim == 0 else [e.shape[0] if e.ndim == 1 else e.size]

    return _per_wrt("jacobian", expression, wrt, consider_constant, disconnected_inputs, _core.jacobian, rows)


def hessian(cost, wrt, consider_constant=None, disconnected_inputs="raise"):
    """d^2 cost / d wrt^2 for a 0-d cost (shape wrt.shape + wrt.shape); consider_constant and
    disconnected_inputs as jacobian's."""
    return _per_wrt("hessian", cost, wrt, consider_constant, disconnected_inputs, _core.hessian,
                    lambda e, w: [w.shape[i] for i in range(w.ndim)])


def disconnected_grad(x):
    """x, with a zero gradient (no gradient flows through it)."""
    return _core.disconnected_grad(as_tensor_variable(x))


consider_constant = disconnected_grad
zero_grad = disconnected_grad


def grad_clip(x, lower_bound, upper_bound):
    """x in the forward pass; its gradient clipped to [lower_bound, upper_bound]."""
    return _core.grad_clip(as_tensor_variable(x), float(lower_bound), float(upper_bound))


def grad_scale(x, multiplier):
    """x in the forward pass; its gradient multiplied by multiplier (a number: -1 reverses the
    gradient, as in domain-adversarial training)."""
    if isinstance(multiplier, Variable):
        raise TypeError("grad_scale: the multiplier must be a number; a symbolic multiplier is not supported "
                        "(multiply the cost's term instead)")
    return _core.grad_scale(as_tensor_variable(x), float(multiplier))


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
