"""Neural-network ops and linear algebra against numpy."""
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import hypatia
import hypatia.tensor as T
from util import FLOATS, layouts, random_array, seeds, with_layout


def np_softmax(a, axis=-1):
    e = np.exp(a - a.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


@given(rows=st.integers(1, 6), cols=st.integers(1, 6), dtype=st.sampled_from(FLOATS), seed=seeds, layout=layouts)
def test_softmax_family(rows, cols, dtype, seed, layout):
    rng = np.random.RandomState(seed)
    a = with_layout(random_array(rng, (rows, cols), dtype) * 3, layout)
    labels = rng.randint(0, cols, size=rows)
    onehot = np.eye(cols, dtype=dtype)[labels]
    x = T.TensorType(dtype, [False, False])("x")
    y = T.lvector("y")
    t = T.TensorType(dtype, [False, False])("t")
    sm = T.nnet.softmax(x)
    f = hypatia.function([x, y, t], [sm, T.nnet.log_softmax(x), T.nnet.softmax(x, axis=0),
                                     T.nnet.categorical_crossentropy(sm, y),
                                     T.nnet.categorical_crossentropy(sm, t)])
    r = f(a, labels, onehot)
    tol = dict(rtol=1e-5, atol=1e-6) if dtype == "float32" else dict(rtol=1e-12, atol=1e-14)
    want = np_softmax(a.astype(np.float64))
    np.testing.assert_allclose(r[0], want, **tol)
    np.testing.assert_allclose(r[1], np.log(want), **dict(tol, atol=1e-5))
    np.testing.assert_allclose(r[2], np_softmax(a.astype(np.float64), axis=0), **tol)
    ce = -np.log(want[np.arange(rows), labels])
    np.testing.assert_allclose(r[3], ce, **dict(tol, atol=1e-5))
    np.testing.assert_allclose(r[4], ce, **dict(tol, atol=1e-5))
    assert all(o.dtype == np.dtype(dtype) for o in r)


def test_binary_crossentropy_relu_and_friends():
    x = T.dvector("x")
    t = T.dvector("t")
    p = T.nnet.sigmoid(x)
    f = hypatia.function([x, t], [T.nnet.binary_crossentropy(p, t), T.nnet.relu(x), T.nnet.relu(x, 0.1),
                                  T.nnet.sigmoid_binary_crossentropy(x, t), T.nnet.hard_sigmoid(x),
                                  T.nnet.elu(x), T.nnet.softsign(x)])
    a = np.array([-2.0, -0.5, 0.0, 1.5])
    tv = np.array([0.0, 1.0, 1.0, 0.0])
    s = 1 / (1 + np.exp(-a))
    r = f(a, tv)
    bce = -(tv * np.log(s) + (1 - tv) * np.log(1 - s))
    np.testing.assert_allclose(r[0], bce, rtol=1e-12)
    np.testing.assert_allclose(r[1], np.maximum(a, 0))
    np.testing.assert_allclose(r[2], np.where(a > 0, a, 0.1 * a), rtol=1e-12)
    np.testing.assert_allclose(r[3], bce, rtol=1e-10)
    np.testing.assert_allclose(r[4], np.clip(0.2 * a + 0.5, 0, 1))
    np.testing.assert_allclose(r[5], np.where(a > 0, a, np.exp(a) - 1))
    np.testing.assert_allclose(r[6], a / (1 + np.abs(a)))


def test_crossentropy_label_out_of_range_is_an_index_error():
    x = T.dmatrix("x")
    y = T.lvector("y")
    f = hypatia.function([x, y], T.nnet.categorical_crossentropy(T.nnet.softmax(x), y))
    with pytest.raises(IndexError, match="label 3 at row 1 is out of range"):
        f(np.zeros((2, 3)), np.array([0, 3]))


@given(m=st.integers(1, 5), k=st.integers(1, 5), n=st.integers(1, 5), dtype=st.sampled_from(FLOATS + ["int64"]),
       seed=seeds, la=layouts, lb=layouts)
def test_dot_shapes_and_layouts(m, k, n, dtype, seed, la, lb):
    rng = np.random.RandomState(seed)
    A = with_layout(random_array(rng, (m, k), dtype, "small"), la)
    B = with_layout(random_array(rng, (k, n), dtype, "small"), lb)
    v = random_array(rng, (k,), dtype, "small")
    w = random_array(rng, (m,), dtype, "small")
    tA = T.TensorType(dtype, [False, False])("A")
    tB = T.TensorType(dtype, [False, False])("B")
    tv = T.TensorType(dtype, [False])("v")
    tw = T.TensorType(dtype, [False])("w")
    f = hypatia.function([tA, tB, tv, tw], [T.dot(tA, tB), tA @ tv, T.dot(tw, tA), T.dot(tv, tv), T.outer(tw, tv),
                                            tA.T.dot(tw)])
    r = f(A, B, v, w)
    tol = dict(rtol=1e-5, atol=1e-5) if dtype == "float32" else dict(rtol=1e-12, atol=1e-12)
    for got, want in zip(r, [A @ B, A @ v, w @ A, v @ v, np.outer(w, v), A.T @ w]):
        assert got.shape == np.shape(want)
        np.testing.assert_allclose(got, want, **tol)


def test_tensordot_batched_dot_gemm():
    rng = np.random.RandomState(0)
    a = rng.randn(2, 3, 4)
    b = rng.randn(4, 3, 5)
    x, y = T.dtensor3("x"), T.dtensor3("y")
    m1, m2, z = T.dmatrix(), T.dmatrix(), T.dmatrix()
    f = hypatia.function([x, y, m1, m2, z], [T.tensordot(x, y, axes=[[1, 2], [1, 0]]), T.tensordot(x, y, 1),
                                             T.batched_dot(x, x.dimshuffle(0, 2, 1)),
                                             T.basic.gemm(z, 2.0, m1, m2, 0.5)])
    c, d, e = rng.randn(3, 4), rng.randn(4, 2), rng.randn(3, 2)
    r = f(a, b, c, d, e)
    np.testing.assert_allclose(r[0], np.tensordot(a, b, axes=[[1, 2], [1, 0]]))
    np.testing.assert_allclose(r[1], np.tensordot(a, b, 1))
    np.testing.assert_allclose(r[2], np.einsum("bij,bkj->bik", a, a))
    np.testing.assert_allclose(r[3], 0.5 * e + 2.0 * c @ d)



@pytest.mark.parametrize("blas", ["auto", "onednn", "openblas"])
def test_blas_flag_chooses_the_library_and_every_choice_is_right(blas):
    """float32 products (plain, transposed operand, Gemm with z) equal numpy's under each library.
    Positive operands: the suite runs DebugMode, whose elementwise float32 tolerance (rtol 1e-4,
    atol 1e-5) a 300-term sum that cancels to near 0 can exceed with either library."""
    rng = np.random.RandomState(7)
    old = hypatia.config.blas
    hypatia.config.blas = blas
    try:
        assert hypatia.config.blas == blas
        a, b, z = T.fmatrix("a"), T.fmatrix("b"), T.fmatrix("z")
        f = hypatia.function([a, b, z], [T.dot(a, b), z + 0.5 * T.dot(a.T, a.dot(b))])
        for m, k, n in [(3, 5, 4), (64, 300, 200), (300, 200, 257)]:
            av = rng.uniform(0, 1, (m, k)).astype("float32")
            bv = rng.uniform(0, 1, (k, n)).astype("float32")
            zv = rng.uniform(0, 1, (k, n)).astype("float32")
            for a_in in (av, np.asfortranarray(av)):
                p, q = f(a_in, bv, zv)
                a64, b64 = av.astype(np.float64), bv.astype(np.float64)
                np.testing.assert_allclose(p, a64 @ b64, rtol=1e-4, atol=1e-4)
                np.testing.assert_allclose(q, zv + 0.5 * a64.T @ (a64 @ b64), rtol=1e-4)
    finally:
        hypatia.config.blas = old


def test_blas_flag_values_and_the_measured_choice():
    with pytest.raises(ValueError, match="auto, onednn, openblas"):
        hypatia.config.blas = "mkl"
    assert hypatia.config.blas == "auto"
    choices = T.blas.gemm_choices()
    assert [c["size_class"] for c in choices] == ["tiny", "small", "large"]
    for c in choices:
        assert c["openblas_gflops"] > 0 and c["onednn_gflops"] > 0
        assert c["chosen"] == ("onednn" if c["onednn_gflops"] > c["openblas_gflops"] else "openblas")
        assert len(c["shape"]) == 3


def test_blas_flag_from_the_environment():
    import os
    import subprocess
    import sys

    code = "import hypatia; print(hypatia.config.blas)"
    env = dict(os.environ, HYPATIA_FLAGS="blas=openblas")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "openblas"
    env["HYPATIA_FLAGS"] = "blas=cublas"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode != 0
    assert "HYPATIA_FLAGS" in out.stderr and "blas must be one of auto, onednn, openblas" in out.stderr
