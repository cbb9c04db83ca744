"""Gradients: verify_grad (finite differences) over the ops, T.grad's Theano options, Rop / Lop,
jacobian, hessian, and the gradient-shaping ops."""
import numpy as np
import pytest

import hypatia
import hypatia.tensor as T
from hypatia import gradient

rng = np.random.RandomState(1234)


def pos(*shape):
    return rng.rand(*shape) + 0.5


def anyv(*shape):
    return rng.randn(*shape)


# A function of symbolic inputs and a point to check its gradient at.
CASES = [
    ("add_broadcast", lambda a, b: a + b, [anyv(3, 4), anyv(4)]),
    ("sub_mul_div", lambda a, b: (a - b) * a / (b + 3), [anyv(3), pos(3)]),
    ("pow", lambda a, b: a ** b, [pos(4), anyv(4)]),
    ("exp_log_sqrt", lambda a: T.exp(a) + T.log(a) + T.sqrt(a), [pos(2, 3)]),
    ("trig", lambda a: T.sin(a) * T.cos(a) + T.tanh(a) + T.arctan(a), [anyv(5)]),
    ("sigmoid_softplus", lambda a: T.nnet.sigmoid(a) + T.nnet.softplus(a), [anyv(5)]),
    ("erf_gammaln_psi", lambda a: T.erf(a) + T.gammaln(a) + T.psi(a), [pos(4)]),
    ("maximum_abs", lambda a, b: T.maximum(a, b) + abs(a), [anyv(6), anyv(6)]),
    ("switch_clip", lambda a: T.switch(a > 0, a ** 2, -a) + T.clip(a, -0.5, 0.5), [anyv(6)]),
    ("sum_mean_prod", lambda a: a.sum(axis=0) + a.mean(axis=1).sum() + a.prod(axis=1).sum(), [pos(3, 4)]),
    ("max_min", lambda a: a.max(axis=1) - a.min(axis=0).sum(), [anyv(3, 4)]),
    ("var_std", lambda a: a.var(axis=0) + a.std(), [anyv(4, 3)]),
    ("dot_mm", lambda a, b: T.dot(a, b), [anyv(3, 4), anyv(4, 2)]),
    ("dot_mv_vv", lambda a, v: T.dot(a, v) + T.dot(v, v), [anyv(3, 3), anyv(3)]),
    ("tensordot", lambda a, b: T.tensordot(a, b, axes=1), [anyv(2, 3), anyv(3, 2, 2)]),
    ("batched_dot", lambda a, b: T.batched_dot(a, b), [anyv(2, 3, 4), anyv(2, 4, 2)]),
    ("softmax_ce", lambda a: T.nnet.categorical_crossentropy(T.nnet.softmax(a), np.array([0, 2, 1])), [anyv(3, 4)]),
    ("log_softmax", lambda a: T.nnet.log_softmax(a), [anyv(2, 5)]),
    ("bce", lambda a: T.nnet.binary_crossentropy(T.nnet.sigmoid(a), np.array([0.0, 1.0, 1.0])), [anyv(3)]),
    ("reshape_transpose", lambda a: a.reshape((2, 6)).T * 2, [anyv(3, 4)]),
    ("dimshuffle_flatten", lambda a: a.dimshuffle(1, "x", 0).flatten(), [anyv(2, 3)]),
    ("concatenate_stack", lambda a, b: T.concatenate([a, b], axis=1) + T.stack([a, a], 0).sum(0).sum(), [anyv(2, 2),
                                                                                                          anyv(2, 3)]),
    ("subtensor", lambda a: a[1:, ::-1] * a[0, 1], [anyv(3, 4)]),
    ("advanced_subtensor", lambda a: a[[0, 2, 0]] + a[a > 0].sum(), [anyv(3, 2)]),
    ("set_inc_subtensor", lambda a, b: T.inc_subtensor(T.set_subtensor(a[1:], b)[[0, 0]], b[0]), [anyv(3, 2),
                                                                                                  anyv(2, 2)]),
    ("cumsum_cumprod", lambda a: a.cumsum(axis=0) + a.cumprod(axis=1), [pos(3, 3)]),
    ("tile_repeat", lambda a: T.tile(a, (2, 1)).sum() + T.repeat(a, 2, axis=0), [anyv(2, 2)]),
    ("relu", lambda a: T.nnet.relu(a, 0.1), [anyv(7)]),
]


@pytest.mark.parametrize("name,fn,point", CASES, ids=[c[0] for c in CASES])
def test_verify_grad(name, fn, point):
    gradient.verify_grad(fn, point, rng=np.random.RandomState(0))


def test_verify_grad_float32_and_failure():
    gradient.verify_grad(lambda a: T.tanh(a) * 3, [np.linspace(-1, 1, 5).astype("float32")],
                         rng=np.random.RandomState(0))
    # A wrong gradient (grad_clip clips the true gradient 4x to [-1, 1]) is reported.
    with pytest.raises(gradient.verify_grad.E_grad):
        gradient.verify_grad(lambda a: T.sum(gradient.grad_clip(a, -1, 1) * 4), [np.array([1.0, 2.0])],
                             rng=np.random.RandomState(0))
    assert issubclass(hypatia.GradientError, ValueError)


def test_grad_returns_the_form_of_wrt():
    x, y = T.dscalars("x", "y")
    cost = x * x * y
    gx = T.grad(cost, x)
    assert isinstance(gx, T.TensorVariable)
    gl = T.grad(cost, [x, y])
    assert isinstance(gl, list) and len(gl) == 2
    gt = T.grad(cost, (x, y))
    assert isinstance(gt, tuple)
    f = hypatia.function([x, y], gl)
    np.testing.assert_allclose(f(3.0, 2.0), [12.0, 9.0])


def test_grad_options():
    x, y = T.dvectors("x", "y")
    cost = T.sum(x * y)
    with pytest.raises(hypatia.DisconnectedInputError):
        T.grad(cost, T.dvector("z"))
    assert issubclass(hypatia.DisconnectedInputError, ValueError)
    z = T.dvector("z")
    gz = T.grad(cost, z, disconnected_inputs="ignore")
    np.testing.assert_array_equal(gz.eval({z: np.ones(2)}), np.zeros(2))
    # return_disconnected='None': None for what the cost does not reach, the gradient otherwise.
    gx, gz2 = T.grad(cost, [x, z], disconnected_inputs="ignore", return_disconnected="None")
    assert gz2 is None and gx is not None
    np.testing.assert_array_equal(gx.eval({x: np.ones(2), y: np.array([3.0, 4.0])}), [3.0, 4.0])
    assert T.grad(None, z, known_grads={x: T.ones_like(x)}, disconnected_inputs="ignore",
                  return_disconnected="None") is None
    with pytest.raises(ValueError, match="Disconnected"):
        T.grad(cost, x, return_disconnected="Disconnected")
    # consider_constant: y's gradient does not flow through the product.
    h = x * y
    g = T.grad(T.sum(h * x), x, consider_constant=[h])
    f = hypatia.function([x, y], g)
    a, b = np.array([1.0, 2.0]), np.array([3.0, 4.0])
    np.testing.assert_allclose(f(a, b), a * b)
    # known_grads: start from a given gradient of an intermediate.
    gk = T.grad(None, x, known_grads={h: T.ones_like(h)})
    np.testing.assert_allclose(hypatia.function([x, y], gk)(a, b), b)


def test_grad_errors():
    x = T.dvector("x")
    with pytest.raises(TypeError, match="scalar"):
        T.grad(x * 2, x)
    with pytest.raises(hypatia.NullTypeGradError):
        T.grad(T.tri_gamma(x).sum(), x)
    assert issubclass(hypatia.NullTypeGradError, TypeError)


def test_gradient_shaping_ops():
    x = T.dscalar("x")
    f = hypatia.function([x], [T.grad(gradient.disconnected_grad(x) * x, x),
                               T.grad(gradient.grad_clip(x * 10, -1, 1), x),
                               T.grad(gradient.zero_grad(x ** 2) + x, x)])
    r = f(2.0)
    assert r[0] == 2.0 and r[1] == 10.0 and r[2] == 1.0
    g = T.grad(gradient.grad_clip(x, -1, 1) ** 2, x)
    assert hypatia.function([x], g)(3.0) == 1.0


def test_rop_lop_against_jacobian():
    x = T.dvector("x")
    W = T.dmatrix("W")
    v = T.dvector("v")
    u = T.dvector("u")
    y = T.tanh(T.dot(W, x))
    jv = T.Rop(y, x, v)
    uj = T.Lop(y, x, u)
    J = gradient.jacobian(y, x)
    f = hypatia.function([W, x, v, u], [jv, uj, J])
    Wv, xv = rng.randn(3, 4), rng.randn(4)
    vv, uv = rng.randn(4), rng.randn(3)
    r_jv, r_uj, r_J = f(Wv, xv, vv, uv)
    Jn = (1 - np.tanh(Wv @ xv) ** 2)[:, None] * Wv
    np.testing.assert_allclose(r_J, Jn, rtol=1e-10)
    np.testing.assert_allclose(r_jv, Jn @ vv, rtol=1e-10)
    np.testing.assert_allclose(r_uj, uv @ Jn, rtol=1e-10)
    # List forms.
    a, b = T.Rop([y, y], [x], [v])
    assert isinstance(a, T.TensorVariable) and isinstance(b, T.TensorVariable)


def test_rop_through_the_gradient_identities():
    # disconnected_grad carries no tangent (Theano's DisconnectedGrad.R_op); grad_clip and
    # grad_scale are identities forward, so the tangent passes through them.
    x, v = T.dvector("x"), T.dvector("v")
    f = hypatia.function([x, v], [T.Rop(gradient.disconnected_grad(x) * x, x, v),
                                  T.Rop(gradient.grad_clip(x, -1, 1) * 3, x, v),
                                  T.Rop(gradient.grad_scale(x ** 2, -2.0), x, v)])
    xv, vv = np.array([1.0, -2.0]), np.array([0.5, 4.0])
    a, b, c = f(xv, vv)
    np.testing.assert_allclose(a, xv * vv)  # only the second factor's tangent
    np.testing.assert_allclose(b, 3 * vv)
    np.testing.assert_allclose(c, 2 * xv * vv)


def test_hessian_and_jacobian_lists():
    x = T.dvector("x")
    cost = T.sum(x ** 3)
    H = gradient.hessian(cost, x)
    np.testing.assert_allclose(H.eval({x: np.array([1.0, 2.0])}), np.diag([6.0, 12.0]))
    Js = gradient.jacobian(x ** 2, [x])
    assert isinstance(Js, list)
    np.testing.assert_allclose(Js[0].eval({x: np.array([1.0, 3.0])}), np.diag([2.0, 6.0]))


def test_grad_names():
    x = T.dscalar("x")
    c = x ** 2
    c.name = "c"
    assert T.grad(c, x).name == "(dc/dx)"
