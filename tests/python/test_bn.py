"""Batch normalization (T.nnet.bn) and selu against numpy."""
import numpy as np
import pytest

import hypatia
import hypatia.tensor as T
from hypatia.tensor.nnet import bn


def np_bn_train(x, gamma, beta, axes, eps):
    mean = x.mean(axis=axes, keepdims=True)
    var = x.var(axis=axes, keepdims=True)
    invstd = 1 / np.sqrt(var + eps)
    return (x - mean) * invstd * gamma + beta, mean, invstd, var


@pytest.mark.parametrize("axes", ["per-activation", "spatial", (0, 3)])
def test_batch_normalization_train_values_running_averages_and_gradients(axes):
    rng = np.random.RandomState(0)
    x = T.dtensor4("x")
    xv = rng.uniform(-2, 3, (5, 3, 4, 2))
    ax = {"per-activation": (0,), "spatial": (0, 2, 3)}.get(axes, axes)
    pshape = tuple(1 if a in ax else s for a, s in enumerate(xv.shape))
    reduced = tuple(s for a, s in enumerate(xv.shape) if a not in ax)
    g = T.TensorType("float64", [a in ax for a in range(4)])("g")
    b = T.TensorType("float64", [a in ax for a in range(4)])("b")
    gv, bv = rng.uniform(0.5, 2, pshape), rng.uniform(-1, 1, pshape)
    rm = T.TensorType("float64", [a in ax for a in range(4)])("rm")
    rv = T.TensorType("float64", [a in ax for a in range(4)])("rv")
    rmv, rvv = rng.uniform(-1, 1, pshape), rng.uniform(0.5, 2, pshape)
    out, mean, invstd, new_rm, new_rv = bn.batch_normalization_train(x, g, b, axes, 1e-3, 0.2, rm, rv)
    f = hypatia.function([x, g, b, rm, rv], [out, mean, invstd, new_rm, new_rv])
    o, m, s, nrm, nrv = f(xv, gv, bv, rmv, rvv)
    wo, wm, ws, wvar = np_bn_train(xv, gv, bv, ax, 1e-3)
    n = np.prod([xv.shape[a] for a in ax])
    np.testing.assert_allclose(o, wo, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(m, wm, rtol=1e-12)
    np.testing.assert_allclose(s, ws, rtol=1e-12)
    np.testing.assert_allclose(nrm, rmv * 0.8 + wm * 0.2, rtol=1e-12)
    np.testing.assert_allclose(nrv, rvv * 0.8 + wvar * n / (n - 1) * 0.2, rtol=1e-12)
    # Parameters given without the reduced axes: the statistics come back the same way.
    g2 = T.TensorType("float64", [False] * len(reduced))("g2")
    b2 = T.TensorType("float64", [False] * len(reduced))("b2")
    out2, mean2, invstd2 = bn.batch_normalization_train(x, g2, b2, axes, 1e-3)
    f2 = hypatia.function([x, g2, b2], [out2, mean2, invstd2])
    o2, m2, s2 = f2(xv, gv.reshape(reduced), bv.reshape(reduced))
    np.testing.assert_allclose(o2, wo, rtol=1e-12, atol=1e-12)
    assert m2.shape == reduced and s2.shape == reduced
    # Gradients through the batch statistics.
    hypatia.gradient.verify_grad(lambda xx, gg, bb: bn.batch_normalization_train(xx, gg, bb, axes, 1e-3)[0],
                                 [xv, gv.reshape(reduced), bv.reshape(reduced)], rng=rng)


def test_batch_normalization_test_and_plain_form():
    rng = np.random.RandomState(1)
    x = T.dmatrix("x")
    xv = rng.uniform(-1, 1, (6, 4))
    g, b, m, v = (rng.uniform(0.5, 1.5, 4) for _ in range(4))
    gs, bs, ms, vs = T.dvector("g"), T.dvector("b"), T.dvector("m"), T.dvector("v")
    f = hypatia.function([x, gs, bs, ms, vs], [bn.batch_normalization_test(x, gs, bs, ms, vs, epsilon=1e-4),
                                               bn.batch_normalization(x, gs, bs, ms, T.sqrt(vs + 1e-4))])
    a, c = f(xv, g, b, m, v)
    want = (xv - m) * g / np.sqrt(v + 1e-4) + b
    np.testing.assert_allclose(a, want, rtol=1e-12)
    np.testing.assert_allclose(c, want, rtol=1e-12)
    with pytest.raises(ValueError, match="axes"):
        bn.batch_normalization_train(x, gs, bs, axes="channel")
    with pytest.raises(ValueError, match="epsilon"):
        bn.batch_normalization_train(x, gs, bs, epsilon=1e-7)
    with pytest.raises(ValueError, match="both running_mean and running_var"):
        bn.batch_normalization_train(x, gs, bs, running_mean=ms)


def test_selu():
    x = T.dvector("x")
    f = hypatia.function([x], [T.nnet.selu(x), T.grad(T.sum(T.nnet.selu(x)), x)])
    a = np.array([-50.0, -1.0, -1e-9, 0.0, 1e-9, 2.0])
    alpha, scale = 1.6732632423543772, 1.0507009873554805
    v, g = f(a)
    np.testing.assert_allclose(v, scale * np.where(a > 0, a, alpha * np.expm1(a)), rtol=1e-15)
    np.testing.assert_allclose(g, scale * np.where(a > 0, 1.0, alpha * np.exp(a)), rtol=1e-15)


def test_h_softmax_against_numpy():
    rng = np.random.RandomState(2)
    batch, dim, n_out, n_cls, per = 4, 5, 10, 3, 4  # 12 slots, the last 2 unused
    xv = rng.uniform(-1, 1, (batch, dim))
    w1, b1 = rng.uniform(-1, 1, (dim, n_cls)), rng.uniform(-1, 1, n_cls)
    w2, b2 = rng.uniform(-1, 1, (n_cls, dim, per)), rng.uniform(-1, 1, (n_cls, per))
    tv = np.array([0, 9, 5, 7])
    x, t = T.dmatrix("x"), T.lvector("t")
    W1, B1, W2, B2 = T.dmatrix("W1"), T.dvector("b1"), T.dtensor3("W2"), T.dmatrix("b2")
    full = T.nnet.h_softmax(x, batch, n_out, n_cls, per, W1, B1, W2, B2)
    picked = T.nnet.h_softmax(x, batch, n_out, n_cls, per, W1, B1, W2, B2, target=t)
    f = hypatia.function([x, t, W1, B1, W2, B2], [full, picked, T.grad(T.sum(T.log(picked)), W2)])
    a, p, g = f(xv, tv, w1, b1, w2, b2)

    def sm(z):
        e = np.exp(z - z.max(-1, keepdims=True))
        return e / e.sum(-1, keepdims=True)

    cls = sm(xv @ w1 + b1)
    inner = sm(np.einsum("bd,cdo->bco", xv, w2) + b2)
    want = (cls[:, :, None] * inner).reshape(batch, -1)[:, :n_out]
    np.testing.assert_allclose(a, want, rtol=1e-12)
    np.testing.assert_allclose(p, want[np.arange(batch), tv], rtol=1e-12)
    assert g.shape == w2.shape and np.all(np.isfinite(g))

