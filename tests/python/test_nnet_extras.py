"""T.nnet.softmax_grad (Theano's SoftmaxGrad), T.nnet.dropout and the fused cross-entropy of a softmax
(crossentropy_softmax_1hot_with_bias and its relatives)."""
import numpy as np
import pytest

import hypatia
import hypatia.tensor as T


def test_softmax_grad_matches_the_gradient_of_softmax():
    x, dy = T.dmatrix("x"), T.dmatrix("dy")
    sm = T.nnet.softmax(x)
    g_auto = T.grad(T.sum(sm * dy), x)
    f = hypatia.function([x, dy], [T.nnet.softmax_grad(dy, sm), T.nnet.SoftmaxGrad()(dy, sm), g_auto])
    rng = np.random.default_rng(3)
    a, b, c = f(rng.normal(size=(4, 7)), rng.normal(size=(4, 7)))
    np.testing.assert_allclose(a, c, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(b, c, rtol=1e-12, atol=1e-14)


def test_dropout_keeps_the_expectation_and_draws_a_new_mask_per_call():
    x = T.fmatrix("x")
    f = hypatia.function([x], T.nnet.dropout(x, 0.25, seed=7))
    ones = np.ones((200, 300), "float32")
    a, b = f(ones), f(ones)
    assert a.dtype == np.float32
    assert set(np.unique(a)) <= {0.0, np.float32(1 / 0.75)}
    kept = (a != 0).mean()
    assert abs(kept - 0.75) < 0.01
    assert abs(a.mean() - 1.0) < 0.02
    assert (a != b).any()
    g = hypatia.function([x], T.nnet.dropout(x, 0.5, seed=7, rescale=False))
    assert set(np.unique(g(ones))) <= {0.0, 1.0}
    assert T.nnet.dropout(x, 0.0) is x
    with pytest.raises(ValueError, match=r"p must be in \[0, 1\)"):
        T.nnet.dropout(x, 1.0)


def _np_softmax(z):
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_crossentropy_softmax_1hot_with_bias_and_its_relatives_match_numpy(dtype):
    rng = np.random.default_rng(11)
    xv = rng.normal(size=(6, 5)).astype(dtype) * 3
    bv = rng.normal(size=5).astype(dtype)
    yv = np.array([0, 4, 2, 2, 1, 3], dtype="int32")
    x, b, y = T.matrix("x", dtype=dtype), T.vector("b", dtype=dtype), T.ivector("y")
    nll, sm = T.nnet.crossentropy_softmax_1hot_with_bias(x, b, y)
    nll3, sm3, am = T.nnet.crossentropy_softmax_argmax_1hot_with_bias(x, b, y)
    nll0, sm0 = T.nnet.crossentropy_softmax_1hot(x, y)
    assert isinstance(nll.owner.op, T.nnet.CrossentropySoftmax1HotWithBias)
    g = T.grad(T.sum(nll), [x, b])
    f = hypatia.function([x, b, y], [nll, sm, nll3, am, nll0, sm0] + g)
    got = f(xv, bv, yv)
    z = xv.astype("float64") + bv
    want_sm = _np_softmax(z)
    want_nll = -np.log(want_sm[np.arange(6), yv])
    tol = dict(rtol=1e-5, atol=1e-6) if dtype == "float32" else dict(rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(got[0], want_nll, **tol)
    np.testing.assert_allclose(got[1], want_sm, **tol)
    np.testing.assert_allclose(got[2], want_nll, **tol)
    np.testing.assert_array_equal(got[3], z.argmax(axis=1))
    np.testing.assert_allclose(got[4], -np.log(_np_softmax(xv.astype("float64"))[np.arange(6), yv]), **tol)
    np.testing.assert_allclose(got[5], _np_softmax(xv.astype("float64")), **tol)
    one_hot = np.eye(5)[yv]
    np.testing.assert_allclose(got[6], want_sm - one_hot, **tol)
    np.testing.assert_allclose(got[7], (want_sm - one_hot).sum(axis=0), **tol)
    # The gradient op by hand, and its own gradient (second order) against finite differences.
    dy = T.vector("dy", dtype=dtype)
    dx = T.nnet.crossentropy_softmax_1hot_with_bias_dx(dy, sm, y)
    assert isinstance(dx.owner.op, T.nnet.CrossentropySoftmax1HotWithBiasDx)
    dyv = rng.normal(size=6).astype(dtype)
    np.testing.assert_allclose(hypatia.function([dy, x, b, y], dx)(dyv, xv, bv, yv),
                               dyv[:, None] * (want_sm - one_hot), **tol)
    if dtype == "float64":
        hypatia.gradient.verify_grad(lambda xx, dd: T.nnet.crossentropy_softmax_1hot_with_bias_dx(
            dd, T.nnet.softmax(xx), hypatia.shared(yv)), [xv, dyv], rng=np.random.RandomState(2))


def test_crossentropy_softmax_1hot_refuses_a_label_out_of_range_and_keeps_the_stable_form():
    x, y = T.dmatrix("x"), T.lvector("y")
    cost = T.mean(T.nnet.categorical_crossentropy(T.nnet.softmax(x), y))
    f = hypatia.function([x, y], [cost, T.grad(cost, x)])
    ops = [type(n.op).__name__ for n in f.maker.fgraph.toposort()]  # (Gpu... under device=cuda)
    for name in ("CrossentropySoftmax1HotWithBias", "CrossentropySoftmax1HotWithBiasDx"):
        assert any(o.endswith(name) for o in ops), ops
    c, g = f(np.array([[1000.0, -1000.0, 0.0]]), np.array([1]))
    assert np.isfinite(c) and c == pytest.approx(2000.0)
    assert np.isfinite(g).all()
    with pytest.raises(IndexError, match="label -1 at row 0 is out of range for 3 classes"):
        f(np.zeros((2, 3)), np.array([-1, 0]))
    with pytest.raises(IndexError, match="CrossentropySoftmax1HotWithBias: label 3 at row 1"):
        hypatia.function([x, y], T.nnet.crossentropy_softmax_1hot(x, y)[0])(np.zeros((2, 3)), np.array([0, 3]))


def test_the_fused_cross_entropy_meets_columns_lengths_and_dtypes_as_elemwise_does():
    # A bias from a column (DimShuffle{x,0} drops its broadcastable axis): compiled, numpy's values.
    a, c, y = T.dmatrix("a"), T.dcol("c"), T.lvector("y")
    cost = T.nnet.categorical_crossentropy(T.nnet.softmax(a + c.dimshuffle("x", 0)), y)
    av, cv, yv = np.arange(12.0).reshape(3, 4) / 7, np.array([[0.5], [-1.0], [2.0], [0.0]]), np.array([3, 0, 1])
    z = av + cv[:, 0]
    want = -np.log(_np_softmax(z)[np.arange(3), yv])
    np.testing.assert_allclose(hypatia.function([a, c, y], cost)(av, cv, yv), want, rtol=1e-12)
    # A bias of one element whose type does not broadcast is refused, as Elemwise refuses it
    # (its gradient would have one element per class).
    b = hypatia.shared(np.zeros(1), name="b")
    nll, _ = T.nnet.crossentropy_softmax_1hot_with_bias(a, b, y)
    with pytest.raises(ValueError, match=r"expected b of shape \(4,\) \(one per class\), got"):
        hypatia.function([a, y], nll)(av, yv)
    # A dy or b of another float dtype is cast to the softmax's.
    x32, dy64 = T.fmatrix("x32"), T.dvector("dy64")
    nll32, sm32 = T.nnet.crossentropy_softmax_1hot_with_bias(x32, T.dvector("b64"), y)
    assert nll32.dtype == "float32"
    dx = T.nnet.crossentropy_softmax_1hot_with_bias_dx(dy64, sm32, y)
    assert dx.dtype == "float32"
    smv = _np_softmax(av).astype("float32")
    np.testing.assert_allclose(hypatia.function([x32, y], T.nnet.crossentropy_softmax_1hot_with_bias_dx(
        1.0, T.nnet.softmax(x32), y))(av.astype("float32"), yv), smv - np.eye(4, dtype="float32")[yv], rtol=1e-5)
