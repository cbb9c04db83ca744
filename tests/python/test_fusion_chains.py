"""Random elementwise programs (unary math, scalar mul/add/sub/neg, binary ops on earlier values,
several outputs) compiled with and without the fusion phase: the fused kernels, including the
scalar steps they fold into their neighbours' SIMD loops, give the same bits."""
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import hypatia
import hypatia.tensor as T

UNARY = [T.exp, T.tanh, T.sin, T.neg, T.abs_, T.sqr, T.sigmoid, lambda v: T.log1p(T.abs_(v))]
BINARY = [lambda a, b: a + b, lambda a, b: a * b, T.maximum, lambda a, b: a - b]
SCALAR = [lambda v, c: v * c, lambda v, c: v + c, lambda v, c: v - c, lambda v, c: c - v, lambda v, c: c * v,
          lambda v, c: -v]


@st.composite
def programs(draw):
    """A list of (kind, op index, operand indices, constant) steps over value 0 (the input)."""
    steps = []
    for k in range(draw(st.integers(1, 9))):
        kind = draw(st.sampled_from(["unary", "scalar", "scalar", "binary", "switch"]))
        a = draw(st.integers(0, k))
        b = draw(st.integers(0, k))
        op = draw(st.integers(0, {"unary": len(UNARY), "scalar": len(SCALAR), "binary": len(BINARY),
                                  "switch": 1}[kind] - 1))
        c = draw(st.sampled_from([0.5, -1.5, 2.0, 3.0, 0.1, -0.0, 1.0]))
        steps.append((kind, op, a, b, c))
    outs = draw(st.lists(st.integers(1, len(steps)), min_size=1, max_size=3, unique=True))
    return steps, outs


def build(x, steps, dtype, row=None):
    """The program's values on input x; with `row`, binary steps with an odd second operand read
    the row (broadcast against x) instead."""
    vals = [x]
    for kind, op, a, b, c in steps:
        if kind == "unary":
            vals.append(UNARY[op](vals[a]))
        elif kind == "scalar":
            vals.append(SCALAR[op](vals[a], np.asarray(c, dtype=dtype)))
        elif kind == "switch":
            # A float condition (a mask, dropout's use_noise): true where nonzero, NaN included.
            vals.append(T.switch(vals[a], vals[b], vals[-1]))
        else:
            vals.append(BINARY[op](vals[a], row if row is not None and b % 2 else vals[b]))
    return vals


def fused_and_plain(ins, ys):
    """ys compiled with every rewrite, and with all but the fusion phase."""
    fast = hypatia.Mode(optimizer="fast_run")
    return (hypatia.function(ins, ys, mode=fast, on_unused_input="ignore"),
            hypatia.function(ins, ys, mode=fast.excluding("fusion"), on_unused_input="ignore"))


@given(programs(), st.sampled_from(["float32", "float64"]), st.sampled_from([1, 7, 64, 5003]),
       st.booleans(), st.integers(0, 2**31 - 1))
def test_fused_programs_match_unfused_bitwise(program, dtype, n, strided, seed):
    steps, outs = program
    x = T.vector("x", dtype=dtype)
    vals = build(x, steps, dtype)
    fused, plain = fused_and_plain([x], [vals[k] for k in outs])
    rng = np.random.default_rng(seed)
    data = (rng.standard_normal(2 * n) * 3).astype(dtype)
    arg = data[::2] if strided else data[:n]
    if n >= 4:
        arg[:4] = [0.0, -0.0, np.inf, np.nan]
    for got, want in zip(fused(arg), plain(arg)):
        np.testing.assert_array_equal(got, want)  # NaN matches NaN
        finite = ~np.isnan(want)
        np.testing.assert_array_equal(np.signbit(got[finite]), np.signbit(want[finite]))


@given(programs(), st.sampled_from(["float32", "float64"]), st.sampled_from([(1, 1), (3, 7), (5, 300)]),
       st.sampled_from([None, 0, 1]), st.booleans(), st.integers(0, 2**31 - 1))
def test_fused_programs_with_broadcast_rows_and_reductions(program, dtype, shape, axis, fortran, seed):
    """The same programs on a matrix, with a broadcast row mixed in by the binary steps and the
    outputs reduced (CompositeReduce when the fusion phase runs): fused elementwise outputs give
    the same bits, fused sums agree to rounding (they accumulate float32 in float64 tiles)."""
    steps, outs = program
    x = T.matrix("x", dtype=dtype)
    r = T.row("r", dtype=dtype)
    vals = build(x, steps, dtype, row=r)
    fused, plain = fused_and_plain([x, r], [vals[outs[0]]] + [T.sum(vals[k], axis=axis) for k in outs[1:]])
    rng = np.random.default_rng(seed)
    xv = (rng.standard_normal(shape)).astype(dtype)
    xv = np.asfortranarray(xv) if fortran else xv
    rv = (rng.standard_normal((1, shape[1]))).astype(dtype)
    got, want = fused(xv, rv), plain(xv, rv)
    np.testing.assert_array_equal(got[0], want[0])
    rtol = 1e-4 if dtype == "float32" else 1e-10
    for g, w in zip(got[1:], want[1:]):
        np.testing.assert_allclose(g, w, rtol=rtol, atol=rtol * (1 + np.nanmax(np.abs(w), initial=0) * shape[0]))


def test_a_fused_switch_reads_a_float_condition_as_numpy_does():
    # The Deep Learning Tutorials' dropout (switch(use_noise, x * mask, x * 0.5) with a float
    # shared use_noise) and float masks in recurrent layers: 1.0, 0.5 and NaN are true.
    for dtype in ("float32", "float64"):
        c, a = T.vector("c", dtype=dtype), T.vector("a", dtype=dtype)
        f = hypatia.function([c, a], T.switch(c, T.exp(a), -a))
        assert any("Composite" in str(n.op) for n in f.maker.fgraph.toposort())
        cv = np.array([1.0, 0.5, 2.0, 1.1, 0.0, -0.0, np.nan], dtype)
        av = np.linspace(-1, 1, 7).astype(dtype)
        np.testing.assert_allclose(f(cv, av), np.where(cv, np.exp(av), -av), rtol=1e-6)
    use_noise = hypatia.shared(np.asarray(1.0), name="use_noise")
    x = T.dvector("x")
    g = hypatia.function([x], T.switch(use_noise, x * 2.0, x * 0.5))
    assert g(np.ones(3)).tolist() == [2.0, 2.0, 2.0]
    use_noise.set_value(np.asarray(0.0))
    assert g(np.ones(3)).tolist() == [0.5, 0.5, 0.5]


def test_integer_powers_of_a_float_exponent_are_computed_in_the_float_dtype():
    # int8 ** 2.0 is a float64 square (not int8's wrapped one, cast), ** 0.5 a float64 sqrt.
    for dtype in ("int8", "uint8", "int16", "int32"):
        x = T.vector("x", dtype=dtype)
        v = np.array([100, 3, 0], dtype)
        fast = hypatia.function([x], [x ** 2.0, x ** 0.5, x ** -1.0, x ** 1.0])
        slow = hypatia.function([x], [x ** 2.0, x ** 0.5, x ** -1.0, x ** 1.0], mode="FAST_COMPILE")
        with np.errstate(divide="ignore"):
            want = [v ** 2.0, v ** 0.5, v ** -1.0, v ** 1.0]
        for got, ref, w in zip(fast(v), slow(v), want):
            assert got.dtype == np.float64
            np.testing.assert_array_equal(got, ref)
            np.testing.assert_allclose(got, w, rtol=1e-15)


def test_clip_runs_as_maximum_then_minimum_with_numpy_s_values():
    x = T.fvector("x")
    f = hypatia.function([x], T.clip(x, np.float32(-0.5), np.float32(0.5)) * 2)
    names = " ".join(str(n.op) for n in f.maker.fgraph.toposort())
    assert "clip" not in names and "maximum" in names and "minimum" in names, names
    v = np.array([-1, -0.5, 0.2, 0.7, np.nan, np.inf, -np.inf], np.float32)
    np.testing.assert_array_equal(f(v), np.clip(v, -0.5, 0.5) * 2)
    # Its gradient is still clip's (taken before the rewrite): 1 inside, 0 outside.
    g = hypatia.function([x], T.grad(T.sum(T.clip(x, -0.5, 0.5)), x))
    np.testing.assert_array_equal(g(np.array([-1, 0.2, 0.7], np.float32)), [0, 1, 0])


def test_results_follow_a_fortran_ordered_or_transposed_input_and_every_consumer_reads_them_right():
    # An elementwise result is laid out as its inputs agree to (numpy's order "K"), so that the
    # loop walks memory in order: a Fortran-ordered input gives a Fortran-ordered result, as
    # numpy's. What reads it (reshape, flatten, dot, a reduction, a shared variable's update, the
    # next call reusing buffers) sees the same values as with C-ordered inputs.
    rng = np.random.default_rng(3)
    a = rng.standard_normal((64, 48)).astype("float32")
    b = rng.standard_normal((64, 48)).astype("float32")
    x, y = T.fmatrix("x"), T.fmatrix("y")
    s = hypatia.shared(np.zeros((64, 48), "float32"), name="s")
    e = T.tanh(x * y + 1)
    f = hypatia.function([x, y], [T.exp(x), e, e.reshape((48, 64)), e.flatten(), T.dot(e, e.T), e.sum(axis=1),
                                  x.T * 2, (x * y)[3:9, ::2]], updates=[(s, s + e)])
    want = [np.exp(a), np.tanh(a * b + 1)]
    want += [want[1].reshape(48, 64), want[1].ravel(), want[1] @ want[1].T, want[1].sum(axis=1), a.T * 2,
             (a * b)[3:9, ::2]]
    for rep, (xa, ya) in enumerate([(np.asfortranarray(a), np.asfortranarray(b)), (a, b),
                                    (np.asfortranarray(a), b), (a.T.copy().T, b.T.copy().T)]):
        got = f(xa, ya)
        for r, w in zip(got, want):
            np.testing.assert_allclose(r, w, rtol=1e-5, atol=1e-4)
        np.testing.assert_allclose(s.get_value(), (rep + 1) * want[1], rtol=1e-5, atol=1e-5)


@pytest.mark.host_graphs
def test_cpu_elementwise_results_take_the_layout_their_inputs_agree_to():
    # Where no C-ordered operand (a shared variable) joins the loop; one fused loop computes both
    # outputs: Fortran order when x and y agree on it.
    rng = np.random.default_rng(4)
    a = rng.standard_normal((64, 48)).astype("float32")
    b = rng.standard_normal((64, 48)).astype("float32")
    x, y = T.fmatrix("x"), T.fmatrix("y")
    g = hypatia.function([x, y], [T.exp(x), T.tanh(x * y + 1), x.T * 2])
    for xa, ya in [(np.asfortranarray(a), np.asfortranarray(b)), (a, b), (np.asfortranarray(a), b),
                   (a.T.copy().T, b.T.copy().T)]:
        ex, ee, xt = g(xa, ya)
        np.testing.assert_allclose(ee, np.tanh(a * b + 1), rtol=1e-5, atol=1e-5)
        fortran = xa.flags.f_contiguous and ya.flags.f_contiguous
        assert ex.flags.f_contiguous == fortran and ee.flags.f_contiguous == fortran, (ex.strides, ee.strides)
        assert xt.flags.c_contiguous == xa.flags.f_contiguous  # follows x.T's layout
