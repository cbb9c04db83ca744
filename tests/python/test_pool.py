"""hypatia.tensor.signal.pool against a numpy reference written from Theano's rules."""
import pickle
import warnings

import numpy as np
import pytest

import hypatia
import hypatia.tensor as T
from hypatia.tensor.signal import pool


def out_size(v, ws, st, pad, ignore_border):
    v = v + 2 * pad
    if ignore_border:
        return max((v - ws) // st + 1, 0) if v >= ws else 0
    if v <= 0:
        return 0
    return (v - 1) // st + 1 if st >= ws else max(0, (v - 1 - ws + st) // st) + 1


def np_pool(x, ws, st, pad, ignore_border, mode):
    """Pools the last len(ws) axes: window k covers [k*st - pad, k*st - pad + ws) clipped to the
    image; average_inc_pad divides by the window clipped to the padded image."""
    nd = len(ws)
    lead = x.shape[:-nd]
    sizes = x.shape[-nd:]
    outs = [out_size(sizes[d], ws[d], st[d], pad[d], ignore_border) for d in range(nd)]
    r = np.zeros(lead + tuple(outs), np.float64)
    for k in np.ndindex(*outs):
        sl, inc = [], 1
        for d in range(nd):
            start = k[d] * st[d] - pad[d]
            end = min(start + ws[d], sizes[d] + pad[d])
            inc *= end - start
            sl.append(slice(max(start, 0), min(end, sizes[d])))
        win = x[(Ellipsis,) + tuple(sl)].reshape(lead + (-1,)).astype(np.float64)
        if mode == "max":
            v = win.max(-1)
        elif mode == "sum":
            v = win.sum(-1)
        elif mode == "average_exc_pad":
            v = win.sum(-1) / win.shape[-1]
        else:
            v = win.sum(-1) / inc
        r[(Ellipsis,) + k] = v
    return r


CASES = [((2, 2), None, (0, 0), True), ((2, 2), None, (0, 0), False), ((3, 3), (2, 2), (0, 0), False),
         ((3, 2), (1, 2), (0, 0), True), ((3, 3), (2, 2), (1, 1), True), ((2, 3), (3, 1), (1, 2), True),
         ((1, 1), (2, 2), (0, 0), False)]


@pytest.mark.parametrize("mode", ["max", "sum", "average_inc_pad", "average_exc_pad"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_pool_2d_matches_numpy(mode, dtype):
    rng = np.random.RandomState(0)
    x = T.tensor4("x", dtype=dtype)
    tol = 1e-5 if dtype == "float32" else 1e-12
    for ws, st, pad, ib in CASES:
        f = hypatia.function([x], pool.pool_2d(x, ws=ws, ignore_border=ib, stride=st, pad=pad, mode=mode))
        for shape in [(2, 3, 7, 8), (1, 2, 5, 5), (1, 1, 3, 4)]:
            a = rng.uniform(-1, 1, shape).astype(dtype)
            want = np_pool(a, ws, st or ws, pad, ib, mode)
            got = f(a)
            assert got.dtype == dtype and got.shape == want.shape, (ws, st, pad, ib, shape)
            np.testing.assert_allclose(got, want, rtol=tol, atol=tol, err_msg=str((ws, st, pad, ib, shape)))
            np.testing.assert_allclose(f(np.asfortranarray(a)), want, rtol=tol, atol=tol)


def test_pool_3d_and_leading_axes():
    rng = np.random.RandomState(1)
    x = T.dtensor5("x")
    a = rng.uniform(-1, 1, (2, 2, 5, 6, 7))
    for mode in ["max", "average_exc_pad"]:
        f = hypatia.function([x], pool.pool_3d(x, ws=(2, 3, 2), ignore_border=False, stride=(2, 2, 3), mode=mode))
        np.testing.assert_allclose(f(a), np_pool(a, (2, 3, 2), (2, 2, 3), (0, 0, 0), False, mode), rtol=1e-12)
    y = T.dtensor3("y")
    b = rng.uniform(-1, 1, (3, 5, 5))
    g = hypatia.function([y], pool.pool_2d(y, (2, 2), ignore_border=True))
    np.testing.assert_allclose(g(b), np_pool(b, (2, 2), (2, 2), (0, 0), True, "max"), rtol=1e-12)


def test_gradients_second_derivatives_and_same_size():
    rng = np.random.RandomState(2)
    a = rng.uniform(-1, 1, (2, 2, 6, 5))
    for mode, ws, st, pad, ib in [("max", (2, 2), None, (0, 0), True), ("max", (3, 2), (2, 1), (1, 0), True),
                                  ("sum", (2, 2), (1, 1), (0, 0), False),
                                  ("average_inc_pad", (3, 3), (2, 2), (1, 1), True),
                                  ("average_exc_pad", (3, 3), (2, 2), (0, 0), False)]:
        def f(x):
            return pool.pool_2d(x, ws, ignore_border=ib, stride=st, pad=pad, mode=mode)

        hypatia.gradient.verify_grad(f, [a], rng=rng)

        def g(x):
            y = f(x)
            return T.sum(T.grad(T.sum(y ** 3), x) ** 2)

        hypatia.gradient.verify_grad(g, [a], rng=rng)
    x = T.dtensor4("x")
    s = hypatia.function([x], pool.max_pool_2d_same_size(x, (2, 2)))
    b = np.arange(16.0).reshape(1, 1, 4, 4)
    want = np.zeros_like(b)
    want[0, 0, 1::2, 1::2] = b[0, 0, 1::2, 1::2]
    np.testing.assert_array_equal(s(b), want)


def test_theano_names_defaults_errors_and_pickle():
    x = T.dtensor4("x")
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        y = pool.pool_2d(x, ds=(2, 2))
    assert any("ignore_border" in str(m.message) for m in w)
    assert isinstance(y.owner.op, pool.Pool)
    assert y.owner.op.ignore_border is False and y.owner.op.mode == "max"
    with pytest.raises(NotImplementedError, match="ignore_border"):
        pool.pool_2d(x, (2, 2), ignore_border=False, pad=(1, 1))
    with pytest.raises(ValueError, match="mode must be"):
        pool.pool_2d(x, (2, 2), ignore_border=True, mode="median")
    with pytest.raises(ValueError, match="symbolic"):
        pool.pool_2d(x, (T.iscalar("k"), 2), ignore_border=True)
    f = hypatia.function([x], [y, T.grad(T.sum(y), x)])
    g = pickle.loads(pickle.dumps(f))
    a = np.random.RandomState(3).uniform(size=(1, 2, 5, 5))
    for u, v in zip(f(a), g(a)):
        np.testing.assert_array_equal(u, v)
