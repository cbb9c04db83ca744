"""Reductions and shape ops against numpy, on hypothesis-drawn shapes, axes, dtypes and layouts."""
import warnings

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st
from hypothesis.extra.numpy import array_shapes

import hypatia
import hypatia.tensor as T
from util import FLOATS, NUMERIC, assert_close, input_for, layouts, random_array, seeds, with_layout


@st.composite
def shape_and_axis(draw, min_side=1):
    shape = draw(array_shapes(min_dims=1, max_dims=4, min_side=min_side, max_side=5))
    kind = draw(st.sampled_from(["none", "int", "tuple"]))
    if kind == "none":
        return shape, None
    if kind == "int":
        return shape, draw(st.integers(-len(shape), len(shape) - 1))
    axes = draw(st.lists(st.integers(0, len(shape) - 1), min_size=1, max_size=len(shape), unique=True))
    return shape, tuple(axes)


# name, builder(x, axis, keepdims), numpy reference, dtypes, domain
REDUCTIONS = [
    ("sum", lambda x, a, k: T.sum(x, axis=a, keepdims=k), lambda v, a, k: np.sum(v, axis=a, keepdims=k), NUMERIC),
    ("prod", lambda x, a, k: T.prod(x, axis=a, keepdims=k), lambda v, a, k: np.prod(v, axis=a, keepdims=k),
     ["int32", "int64", "float64"]),
    ("mean", lambda x, a, k: T.mean(x, axis=a, keepdims=k), lambda v, a, k: np.mean(v, axis=a, keepdims=k),
     NUMERIC),
    ("max", lambda x, a, k: T.max(x, axis=a, keepdims=k), lambda v, a, k: np.max(v, axis=a, keepdims=k), NUMERIC),
    ("min", lambda x, a, k: T.min(x, axis=a, keepdims=k), lambda v, a, k: np.min(v, axis=a, keepdims=k), NUMERIC),
    ("var", lambda x, a, k: T.var(x, axis=a, keepdims=k), lambda v, a, k: np.var(v, axis=a, keepdims=k), FLOATS),
    ("std", lambda x, a, k: T.std(x, axis=a, keepdims=k), lambda v, a, k: np.std(v, axis=a, keepdims=k), FLOATS),
    ("all", lambda x, a, k: T.all(x, axis=a, keepdims=k), lambda v, a, k: np.all(v, axis=a, keepdims=k),
     ["bool", "int32"]),
    ("any", lambda x, a, k: T.any(x, axis=a, keepdims=k), lambda v, a, k: np.any(v, axis=a, keepdims=k),
     ["bool", "float64"]),
]


@pytest.mark.parametrize("name,build,ref,dtypes", REDUCTIONS, ids=[r[0] for r in REDUCTIONS])
@given(data=st.data(), sa=shape_and_axis(), keepdims=st.booleans(), layout=layouts, seed=seeds)
def test_reduction(name, build, ref, dtypes, data, sa, keepdims, layout, seed):
    shape, axis = sa
    dtype = data.draw(st.sampled_from(dtypes), label="dtype")
    domain = "small" if name == "prod" else "any"
    a = with_layout(random_array(np.random.RandomState(seed), shape, dtype, domain), layout)
    x = input_for(shape, dtype, "x")
    out = hypatia.function([x], build(x, axis, keepdims))(a)
    expected = np.asarray(ref(a, axis, keepdims))
    assert out.shape == expected.shape
    if name in ("sum", "prod", "max", "min", "all", "any") or np.dtype(dtype).kind == "f":
        assert out.dtype == expected.dtype, (out.dtype, expected.dtype)
    if out.dtype == np.float32:
        np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-5)
    else:
        assert_close(out, expected, "float64" if out.dtype.kind == "f" else out.dtype)


@given(data=st.data(), shape=array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=5), seed=seeds,
       layout=layouts, keepdims=st.booleans())
def test_argmax_argmin_cumulative(data, shape, seed, layout, keepdims):
    axis = data.draw(st.one_of(st.none(), st.integers(-len(shape), len(shape) - 1)), label="axis")
    dtype = data.draw(st.sampled_from(["int32", "float32", "float64"]), label="dtype")
    a = with_layout(random_array(np.random.RandomState(seed), shape, dtype, "small"), layout)
    x = input_for(shape, dtype, "x")
    f = hypatia.function([x], [T.argmax(x, axis, keepdims), T.argmin(x, axis, keepdims), T.cumsum(x, axis),
                               T.cumprod(x, axis)])
    amax, amin, csum, cprod = f(a)
    np.testing.assert_array_equal(amax, np.argmax(a, axis=axis, keepdims=keepdims))
    np.testing.assert_array_equal(amin, np.argmin(a, axis=axis, keepdims=keepdims))
    tol = dict(rtol=1e-4, atol=1e-4) if dtype == "float32" else dict(rtol=1e-10)
    np.testing.assert_allclose(csum, np.cumsum(a, axis=axis), **tol)
    np.testing.assert_allclose(cprod, np.cumprod(a, axis=axis), **tol)
    assert amax.dtype == np.int64


def test_reduction_of_empty_axis():
    x = T.dmatrix("x")
    a = np.zeros((0, 3))
    s, p, m = hypatia.function([x], [x.sum(axis=0), x.prod(axis=0), x.mean(axis=0)])(a)
    np.testing.assert_array_equal(s, np.zeros(3))
    np.testing.assert_array_equal(p, np.ones(3))
    assert np.all(np.isnan(m))
    with pytest.raises(ValueError, match="zero-size"):
        hypatia.function([x], x.max(axis=0))(a)


@given(shape=array_shapes(min_dims=1, max_dims=4, min_side=1, max_side=4), seed=seeds, layout=layouts,
       data=st.data())
def test_reshape_flatten_transpose(shape, seed, layout, data):
    a = with_layout(random_array(np.random.RandomState(seed), shape, "float64"), layout)
    x = input_for(shape, "float64", "x")
    perm = data.draw(st.permutations(range(len(shape))), label="perm")
    outdim = data.draw(st.integers(1, len(shape)), label="outdim")
    f = hypatia.function([x], [x.reshape((-1,)), x.flatten(outdim), x.transpose(perm), x.T,
                               x.reshape((int(np.prod(shape)), 1)), x.dimshuffle("x", *range(len(shape)))])
    r = f(a)
    np.testing.assert_array_equal(r[0], a.reshape(-1))
    np.testing.assert_array_equal(r[1], a.reshape(a.shape[:outdim - 1] + (-1,)))
    np.testing.assert_array_equal(r[2], np.transpose(a, perm))
    np.testing.assert_array_equal(r[3], a.T)
    np.testing.assert_array_equal(r[4], a.reshape(-1, 1))
    np.testing.assert_array_equal(r[5], a[None])


def test_symbolic_reshape():
    x = T.dmatrix("x")
    n = T.lscalar("n")
    y = x.reshape((n, -1))
    z = x.reshape(x.shape[::-1])
    f = hypatia.function([x, n], [y, z, x.shape, x.shape[0], x.size])
    a = np.arange(12.0).reshape(3, 4)
    r = f(a, 2)
    np.testing.assert_array_equal(r[0], a.reshape(2, -1))
    np.testing.assert_array_equal(r[1], a.reshape(4, 3))
    np.testing.assert_array_equal(r[2], [3, 4])
    assert r[3] == 3 and r[4] == 12
    rows, cols = x.shape  # unpacking a symbolic shape of known length
    assert hypatia.function([x], rows * cols)(a) == 12


@given(data=st.data(), seed=seeds)
def test_join_stack_split(data, seed):
    ndim = data.draw(st.integers(1, 3), label="ndim")
    axis = data.draw(st.integers(-ndim, ndim - 1), label="axis")
    base = data.draw(array_shapes(min_dims=ndim, max_dims=ndim, min_side=1, max_side=4), label="shape")
    lens = data.draw(st.lists(st.integers(0, 3), min_size=1, max_size=3), label="lens")
    assume(sum(lens) > 0)
    rng = np.random.RandomState(seed)
    arrays, variables = [], []
    for n in lens:
        s = list(base)
        s[axis] = n
        arrays.append(random_array(rng, s, "float32"))
        variables.append(T.TensorType("float32", [False] * ndim)())
    joined = T.concatenate(variables, axis=axis)
    f = hypatia.function(variables, [joined, T.stack([variables[0], variables[0]], axis=0),
                                     *T.split(joined, lens, len(lens), axis=axis)])
    r = f(*arrays)
    np.testing.assert_array_equal(r[0], np.concatenate(arrays, axis=axis))
    np.testing.assert_array_equal(r[1], np.stack([arrays[0], arrays[0]]))
    for got, want in zip(r[2:], np.split(np.concatenate(arrays, axis=axis), np.cumsum(lens)[:-1], axis=axis)):
        np.testing.assert_array_equal(got, want)


def test_constructors_and_shape_helpers():
    x = T.dmatrix("x")
    n = T.lscalar("n")
    f = hypatia.function([x, n], [
        T.zeros((n, 2)), T.ones((2, n), dtype="int32"), T.zeros_like(x), T.ones_like(x, dtype="float32"),
        T.arange(n), T.arange(1, 7, 2), T.arange(0.0, 1.0, 0.25), T.eye(3), T.eye(n, 4, 1, dtype="int64"),
        T.alloc(7.0, n, 3), T.fill(x, 2.0), T.tile(x, (2, 1)), T.repeat(x, 2, axis=1), T.roll(x, 1, axis=0),
        T.shape_padleft(x), T.shape_padright(x), T.shape_padaxis(x, 1), T.swapaxes(x, 0, 1),
        T.identity_like(x)])
    a = np.arange(6.0).reshape(2, 3)
    r = f(a, 3)
    np.testing.assert_array_equal(r[0], np.zeros((3, 2)))
    assert r[1].dtype == np.int32 and r[1].shape == (2, 3)
    np.testing.assert_array_equal(r[2], np.zeros_like(a))
    assert r[3].dtype == np.float32
    np.testing.assert_array_equal(r[4], np.arange(3))
    np.testing.assert_array_equal(r[5], np.arange(1, 7, 2))
    np.testing.assert_array_equal(r[6], np.arange(0.0, 1.0, 0.25))
    np.testing.assert_array_equal(r[7], np.eye(3))
    np.testing.assert_array_equal(r[8], np.eye(3, 4, 1, dtype=np.int64))
    np.testing.assert_array_equal(r[9], np.full((3, 3), 7.0))
    np.testing.assert_array_equal(r[10], np.full_like(a, 2.0))
    np.testing.assert_array_equal(r[11], np.tile(a, (2, 1)))
    np.testing.assert_array_equal(r[12], np.repeat(a, 2, axis=1))
    np.testing.assert_array_equal(r[13], np.roll(a, 1, axis=0))
    assert r[14].shape == (1, 2, 3) and r[15].shape == (2, 3, 1) and r[16].shape == (2, 1, 3)
    np.testing.assert_array_equal(r[17], a.T)
    np.testing.assert_array_equal(r[18], np.eye(2, 3))
    assert T.zeros((2, 3)).dtype == hypatia.config.floatX


def test_broadcast_patterns():
    r = T.row("r")
    assert r.broadcastable == (True, False)
    m = T.dmatrix()
    assert T.addbroadcast(m, 0).broadcastable == (True, False)
    assert T.unbroadcast(r, 0).broadcastable == (False, False)
    assert T.patternbroadcast(m, (False, True)).broadcastable == (False, True)
    c = T.dcol("c")
    assert T.squeeze(c).ndim == 1
    f = hypatia.function([m], T.addbroadcast(m, 0))
    with pytest.raises(ValueError):
        f(np.zeros((2, 2)))


def test_shape_inference_through_reshape_chains_stays_small():
    """A chain of reshapes whose sizes each read every size of the level below, differentiated twice:
    lifting its Shape_i nodes once made a new tree per lift (exponential in the chain's length; the
    rewriter hit its step bound after ~18 s). Now each variable's sizes are read through one
    Shape_i per axis and the sizes of reshapes to array sizes are those sizes."""
    x = T.dtensor4("x")
    a = T.lscalar("a")
    y = x
    for _ in range(6):
        n0, n1, n2, n3 = [y.shape[j] for j in range(4)]
        y = y.reshape((n0 * n1, a - 1, n3, -1)).dimshuffle(0, 2, 1, 3)
        y = y.reshape((n0, n1 + 0 * a, n2 - a + a, n3))
        y = y * y
    g = T.grad((y ** 2).sum(), x)
    gg = T.grad((g * g).sum(), x)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        f = hypatia.function([x, a], [gg, y.shape])
    assert not [w for w in caught if "rewriting stopped" in str(w.message)]
    v = np.random.RandomState(0).uniform(0.5, 1, (2, 3, 4, 5))
    out, shp = f(v, 5)
    assert list(shp) == [2, 3, 4, 5] and out.shape == v.shape
    # A reshape to sizes read from arrays infers exactly those sizes (no switch on -1 left).
    m = T.dmatrix("m")
    r = m.reshape((m.shape[1], m.shape[0] * 1))
    h = hypatia.function([m], r.shape)
    assert list(h(np.zeros((2, 3)))) == [3, 2]
    assert "switch" not in hypatia.printing.debugprint(h, file="str")


@given(st.integers(0, 2**31 - 1), st.sampled_from(["float32", "float64", "int8", "uint16", "int64", "float16"]),
       st.sampled_from(["C", "F"]), st.sampled_from([1, 31, 32, 33, 100, 517]), st.integers(0, 3))
def test_extremes_and_their_positions_on_long_rows_match_numpy(seed, dtype, order, n, nans):
    # The CPU's vectorized extreme (rows of 32 elements and more) and its position, NaN first
    # (numpy's), and the Fortran-ordered argmax read in place.
    rng = np.random.RandomState(seed)
    a = random_array(rng, (3, n), dtype)
    if dtype.startswith("float"):
        for _ in range(nans):
            a[rng.randint(3), rng.randint(n)] = np.nan
        if seed % 3 == 0:
            a[1] = -np.inf
    a = np.asfortranarray(a) if order == "F" else a
    x = T.matrix("x", dtype=dtype)
    outs = [T.max(x), T.min(x, axis=1), T.max(x, axis=0), T.argmax(x, axis=1), T.argmin(x, axis=1),
            T.argmax(x, axis=0), T.argmax(x)]
    got = hypatia.function([x], outs)(a)
    want = [np.max(a), np.min(a, axis=1), np.max(a, axis=0), np.argmax(a, axis=1), np.argmin(a, axis=1),
            np.argmax(a, axis=0), np.argmax(a)]
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
