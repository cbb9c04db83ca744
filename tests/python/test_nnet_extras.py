"""T.nnet.softmax_grad (Theano's SoftmaxGrad) and T.nnet.dropout."""
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
