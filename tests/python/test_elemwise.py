"""Elementwise ops against numpy: hypothesis draws shapes (broadcasting included), dtypes, memory
layouts (C, Fortran, negative strides, steps) and data; one table drives every op."""
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import array_shapes, mutually_broadcastable_shapes

import hypatia
import hypatia.tensor as T
from util import ALL, FLOATS, INTS, NUMERIC, SIGNED, assert_close, input_for, layouts, random_array, seeds, \
    with_layout



def _math(fn):
    """A math-module function over arrays, in the input's dtype."""
    vec = np.vectorize(fn, otypes=[float])
    return lambda x: np.asarray(vec(x)).astype(x.dtype)


_erf, _erfc, _gamma, _lgamma = _math(math.erf), _math(math.erfc), _math(math.gamma), _math(math.lgamma)

# name, builder, numpy reference, input domain, dtypes
UNARY = [
    ("neg", T.neg, np.negative, "any", SIGNED + FLOATS),
    ("abs_", T.abs_, np.abs, "any", SIGNED + FLOATS),
    ("sgn", T.sgn, np.sign, "any", SIGNED + FLOATS),
    ("sqr", T.sqr, np.square, "small", NUMERIC),
    ("inv", T.inv, lambda x: 1.0 / x, "nonzero", FLOATS),
    ("sqrt", T.sqrt, np.sqrt, "pos", FLOATS + ["int32", "int64"]),
    ("exp", T.exp, np.exp, "small", FLOATS + ["int64"]),
    ("exp2", T.exp2, np.exp2, "small", FLOATS),
    ("expm1", T.expm1, np.expm1, "small", FLOATS),
    ("log", T.log, np.log, "pos", FLOATS + ["int32"]),
    ("log2", T.log2, np.log2, "pos", FLOATS),
    ("log10", T.log10, np.log10, "pos", FLOATS),
    ("log1p", T.log1p, np.log1p, "pos", FLOATS),
    ("sin", T.sin, np.sin, "small", FLOATS),
    ("cos", T.cos, np.cos, "small", FLOATS),
    ("tan", T.tan, np.tan, "unit", FLOATS),
    ("arcsin", T.arcsin, np.arcsin, "unit", FLOATS),
    ("arccos", T.arccos, np.arccos, "unit", FLOATS),
    ("arctan", T.arctan, np.arctan, "any", FLOATS),
    ("sinh", T.sinh, np.sinh, "small", FLOATS),
    ("cosh", T.cosh, np.cosh, "small", FLOATS),
    ("tanh", T.tanh, np.tanh, "any", FLOATS),
    ("arcsinh", T.arcsinh, np.arcsinh, "any", FLOATS),
    ("arccosh", T.arccosh, np.arccosh, "ge1", FLOATS),
    ("arctanh", T.arctanh, np.arctanh, "unit", FLOATS),
    ("sigmoid", T.nnet.sigmoid, lambda x: 1 / (1 + np.exp(-x)), "any", FLOATS),
    ("softplus", T.nnet.softplus, lambda x: np.logaddexp(0, x), "any", FLOATS),
    ("erf", T.erf, _erf, "small", FLOATS),
    ("erfc", T.erfc, _erfc, "small", FLOATS),
    ("gamma", T.gamma, _gamma, "pos", FLOATS),
    ("gammaln", T.gammaln, _lgamma, "pos", FLOATS),
    ("floor", T.floor, np.floor, "any", FLOATS),
    ("ceil", T.ceil, np.ceil, "any", FLOATS),
    ("trunc", T.trunc, np.trunc, "any", FLOATS),
    ("round", T.round, np.round, "any", FLOATS),
    ("isnan", T.isnan, np.isnan, "any", FLOATS),
    ("isinf", T.isinf, np.isinf, "any", FLOATS),
    ("invert", T.invert, np.invert, "any", ["bool"] + INTS),
    ("relu", T.nnet.relu, lambda x: np.maximum(x, 0), "any", FLOATS),
]

# name, builder, numpy reference, domains of (a, b), dtypes, numpy gives the same dtype
BINARY = [
    ("add", T.add, np.add, ("any", "any"), ALL, True),
    ("sub", T.sub, np.subtract, ("any", "any"), NUMERIC, True),
    ("mul", T.mul, np.multiply, ("any", "any"), ALL, True),
    ("true_div", T.true_div, np.true_divide, ("any", "nonzero"), NUMERIC, False),
    ("int_div", T.int_div, np.floor_divide, ("any", "nonzero"), NUMERIC, True),
    ("mod", T.mod, np.mod, ("any", "nonzero"), NUMERIC, True),
    ("pow", T.pow, np.power, ("pos", "small"), FLOATS, True),
    ("pow_int", T.pow, np.power, ("small", "nonneg"), ["int32", "int64"], True),
    ("maximum", T.maximum, np.maximum, ("any", "any"), NUMERIC, True),
    ("minimum", T.minimum, np.minimum, ("any", "any"), NUMERIC, True),
    ("arctan2", T.arctan2, np.arctan2, ("any", "nonzero"), FLOATS, True),
    ("eq", T.eq, np.equal, ("small", "small"), ALL, True),
    ("neq", T.neq, np.not_equal, ("small", "small"), ALL, True),
    ("lt", T.lt, np.less, ("small", "small"), NUMERIC, True),
    ("le", T.le, np.less_equal, ("small", "small"), NUMERIC, True),
    ("gt", T.gt, np.greater, ("small", "small"), NUMERIC, True),
    ("ge", T.ge, np.greater_equal, ("small", "small"), NUMERIC, True),
    ("and_", T.and_, np.bitwise_and, ("any", "any"), ["bool"] + INTS, True),
    ("or_", T.or_, np.bitwise_or, ("any", "any"), ["bool"] + INTS, True),
    ("xor", T.xor, np.bitwise_xor, ("any", "any"), ["bool"] + INTS, True),
]


def _compile(inputs, output):
    return hypatia.function(inputs, output)


@pytest.mark.parametrize("name,build,ref,domain,dtypes", UNARY, ids=[u[0] for u in UNARY])
@given(data=st.data(), shape=array_shapes(min_dims=0, max_dims=3, min_side=1, max_side=5), layout=layouts,
       seed=seeds)
def test_unary(name, build, ref, domain, dtypes, data, shape, layout, seed):
    dtype = data.draw(st.sampled_from(dtypes), label="dtype")
    a = with_layout(random_array(np.random.RandomState(seed), shape, dtype, domain), layout)
    x = input_for(shape, dtype, "x")
    out = _compile([x], build(x))(a)
    with np.errstate(all="ignore"):
        expected = ref(a)
    assert out.shape == expected.shape
    if np.dtype(dtype).kind in "iub" and np.asarray(expected).dtype.kind == "f":
        assert out.dtype.kind == "f"
        np.testing.assert_allclose(out, expected, rtol=1e-5 if out.dtype == np.float32 else 1e-12)
    else:
        assert out.dtype == np.asarray(expected).dtype, (out.dtype, np.asarray(expected).dtype)
        assert_close(out, expected)


@pytest.mark.parametrize("name,build,ref,domains,dtypes,same_dtype", BINARY, ids=[b[0] for b in BINARY])
@given(data=st.data(), shapes=mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=3, max_side=4),
       layout_a=layouts, layout_b=layouts, seed=seeds)
def test_binary(name, build, ref, domains, dtypes, same_dtype, data, shapes, layout_a, layout_b, seed):
    da = data.draw(st.sampled_from(dtypes), label="dtype_a")
    db = data.draw(st.sampled_from(dtypes), label="dtype_b")
    sa, sb = shapes.input_shapes
    rng = np.random.RandomState(seed)
    a = with_layout(random_array(rng, sa, da, domains[0]), layout_a)
    b = with_layout(random_array(rng, sb, db, domains[1]), layout_b)
    x, y = input_for(sa, da, "x"), input_for(sb, db, "y")
    try:
        with np.errstate(all="ignore"):
            expected = np.asarray(ref(a, b))
    except TypeError:
        with pytest.raises(TypeError):  # numpy refuses these dtypes (int8 & uint64): so does Hypatia
            build(x, y)
        return
    out = _compile([x, y], build(x, y))(a, b)
    assert out.shape == expected.shape == shapes.result_shape
    if same_dtype:
        assert out.dtype == expected.dtype, (out.dtype, expected.dtype)
        assert_close(out, expected)
    else:
        np.testing.assert_allclose(out, expected, rtol=1e-5 if out.dtype == np.float32 else 1e-12)


@given(shapes=mutually_broadcastable_shapes(num_shapes=3, min_dims=0, max_dims=3, max_side=4), seed=seeds,
       dtype=st.sampled_from(FLOATS))
def test_switch_and_clip(shapes, seed, dtype):
    sc, sa, sb = shapes.input_shapes
    rng = np.random.RandomState(seed)
    c = random_array(rng, sc, "bool")
    a, b = random_array(rng, sa, dtype), random_array(rng, sb, dtype)
    vc, va, vb = input_for(sc, "bool"), input_for(sa, dtype), input_for(sb, dtype)
    f = hypatia.function([vc, va, vb], [T.switch(vc, va, vb), T.clip(va, -1.0, 1.0)])
    sw, cl = f(c, a, b)
    assert_close(sw, np.where(c, a, b))
    assert_close(cl, np.clip(a, -1, 1))


@pytest.mark.parametrize("dtype", ALL)
def test_cast(dtype):
    a = random_array(np.random.RandomState(0), (3, 4), "float64", "small")
    x = T.dmatrix()
    out = hypatia.function([x], T.cast(x, dtype))(a)
    np.testing.assert_array_equal(out, a.astype(dtype))
    assert out.dtype == np.dtype(dtype)


def test_zero_size_and_scalars():
    x = T.TensorType("float32", [False, False])("x")
    f = hypatia.function([x], T.exp(x) + 1)
    assert f(np.zeros((0, 3), np.float32)).shape == (0, 3)
    s = T.dscalar("s")
    out = hypatia.function([s], s * 2)(3.0)
    assert out.shape == () and out == 6.0


def test_python_scalar_operands_take_the_tensor_dtype():
    x = T.fvector("x")
    i = T.bvector("i")
    assert (x + 1).dtype == "float32"
    assert (x * 2.5).dtype == "float32"
    assert (2 - x).dtype == "float32"
    assert (i + 1).dtype == "int8"
    assert (i + 1000).dtype == "int64"
    b = T.TensorType("bool", [False])()
    assert (b & True).dtype == "bool"
    f = hypatia.function([x, i], [1 - x, 2 ** x, x / 2, i // 2, -x, abs(x)])
    a = np.array([1.5, -2.0], np.float32)
    ia = np.array([5, -3], np.int8)
    r = f(a, ia)
    np.testing.assert_allclose(r[0], 1 - a)
    np.testing.assert_allclose(r[1], 2 ** a, rtol=1e-6)
    np.testing.assert_allclose(r[2], a / 2)
    np.testing.assert_array_equal(r[3], ia // 2)
    np.testing.assert_array_equal(r[4], -a)
    np.testing.assert_array_equal(r[5], np.abs(a))


def test_numpy_array_operands_are_constants():
    x = T.dvector("x")
    c = np.array([1.0, 2.0, 3.0])
    f = hypatia.function([x], [x + c, c + x, c * x, x @ c])
    a = np.array([3.0, 4.0, 5.0])
    r = f(a)
    np.testing.assert_allclose(r[0], a + c)
    np.testing.assert_allclose(r[1], c + a)
    np.testing.assert_allclose(r[2], c * a)
    np.testing.assert_allclose(r[3], a @ c)
    assert isinstance(c + x, T.TensorVariable)


def test_variadic_add_mul_and_isclose():
    x, y, z = T.dvectors("x", "y", "z")
    f = hypatia.function([x, y, z], [T.add(x, y, z), T.mul(x, y, z), T.isclose(x, y), T.largest(x, y, z)])
    a, b, c = np.array([1.0, 2.0]), np.array([1.0, 3.0]), np.array([4.0, -1.0])
    r = f(a, b, c)
    np.testing.assert_allclose(r[0], a + b + c)
    np.testing.assert_allclose(r[1], a * b * c)
    np.testing.assert_array_equal(r[2], np.isclose(a, b))
    np.testing.assert_allclose(r[3], np.maximum(np.maximum(a, b), c))


def test_reference_backend_agrees():
    x = T.fmatrix("x")
    y = T.tanh(x) * 2 + T.exp(-x)
    a = random_array(np.random.RandomState(1), (5, 7), "float32")
    cpu = hypatia.function([x], y)(a)
    ref = hypatia.function([x], y, mode="REFERENCE")(a)
    np.testing.assert_allclose(cpu, ref, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_round_half_away_from_zero_is_c_round_bit_for_bit(dtype):
    # Theano's round(x, mode="half_away_from_zero") was C's round(). Just below a half, and odd
    # floats from 2**mantissa on, where |x| + 0.5 itself rounds, the textbook sign(x) *
    # floor(|x| + 0.5) is off by one; a zero result keeps x's sign.
    x = T.vector(dtype=dtype)
    f = hypatia.function([x], T.round(x, mode="half_away_from_zero"))
    g = hypatia.function([x], T.round(x))  # half to even, numpy's
    big = 2.0 ** (24 if dtype == "float32" else 53)
    half_minus = np.nextafter(np.array(0.5, dtype), np.array(0, dtype))
    v = np.array([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, -0.4, 0.4, -0.0, 0.0, np.inf, -np.inf, np.nan, big / 2 + 1,
                  -(big / 2 + 1), big - 1, 1e30, half_minus, -half_minus, 2.4999999, 7.5, -7.5], dtype)
    v = np.concatenate([v, np.random.default_rng(0).uniform(-1e4, 1e4, 1000).astype(dtype)])
    want = np.array([math.copysign(math.floor(abs(t)) + (abs(t) - math.floor(abs(t)) >= 0.5), t)
                     if math.isfinite(t) else t for t in v.tolist()], dtype)
    got = f(v)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(np.signbit(got), np.signbit(want))
    np.testing.assert_array_equal(g(v), np.round(v))
    np.testing.assert_array_equal(np.signbit(g(v)), np.signbit(np.round(v)))
    i = T.ivector()
    r = hypatia.function([i], T.round(i, mode="half_away_from_zero"))(np.array([3, -4], "int32"))
    assert r.dtype == np.int32 and r.tolist() == [3, -4]
