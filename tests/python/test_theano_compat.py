"""Theano 1.0 behaviour that users' programs rely on, found by an audit of Theano's API against
Hypatia's: softmax of a vector as one row, the truth value of variables, tile with symbolic
repetitions, nonzero and its relatives, batched_tensordot, grad_scale, a dict of outputs, In's
allow_downcast, jacobian's and hessian's options, THEANO_FLAGS and Theano's config sections,
the variable methods and the names Theano's modules carry. Each checked against numpy or
Theano's documented result."""
import os
import pickle
import subprocess
import sys
import warnings

import numpy as np
import pytest

import hypatia
import hypatia as theano
import hypatia.tensor as T
from hypatia._messages import HypatiaWarning


def _softmax(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


# ------------------------------------------------------------------------------------------------
# softmax and log_softmax of a vector


def test_softmax_of_a_vector_is_one_row_as_in_theano():
    v = T.dvector("v")
    with pytest.warns(HypatiaWarning, match="matrix of one row"):
        s = T.nnet.softmax(v)
    with pytest.warns(HypatiaWarning, match="matrix of one row"):
        ls = T.nnet.log_softmax(v)
    assert s.ndim == 2 and s.broadcastable == (True, False) and ls.ndim == 2
    x = np.array([1.0, -2.0, 3.0, 0.5])
    got_s, got_ls = theano.function([v], [s, ls])(x)
    assert got_s.shape == (1, 4) and got_ls.shape == (1, 4)
    np.testing.assert_allclose(got_s[0], _softmax(x), rtol=1e-12)
    np.testing.assert_allclose(got_ls[0], np.log(_softmax(x)), rtol=1e-12)
    # An explicit axis (PyTensor's keyword) keeps the vector, without a warning; so do matrices.
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert T.nnet.softmax(v, axis=-1).ndim == 1 and T.nnet.log_softmax(v, axis=0).ndim == 1
        m = T.dmatrix("m")
        assert T.nnet.softmax(m).ndim == 2
    np.testing.assert_allclose(theano.function([v], T.nnet.softmax(v, axis=-1))(x), _softmax(x), rtol=1e-12)


def test_an_rnn_step_that_indexes_its_softmax_row_runs_as_written_for_theano():
    # The WildML tutorial's forward step: o_t = softmax(V.dot(s_t)); return [o_t[0], s_t].
    rng = np.random.default_rng(0)
    U, V, W = (theano.shared(rng.normal(size=s) * 0.3, name=n) for s, n in (((4, 3), "U"), ((3, 4), "V"),
                                                                          ((4, 4), "W")))
    xs = T.ivector("xs")

    def step(x_t, s_prev):
        s_t = T.tanh(U[:, x_t] + W.dot(s_prev))
        o_t = T.nnet.softmax(V.dot(s_t))
        return [o_t[0], s_t]

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", HypatiaWarning)
        (o, s), _ = theano.scan(step, sequences=xs, outputs_info=[None, dict(initial=T.zeros(4))])
    seq = np.array([0, 2, 1, 1], dtype=np.int32)
    got = theano.function([xs], o)(seq)
    state, want = np.zeros(4), []
    for t in seq:
        state = np.tanh(U.get_value()[:, t] + W.get_value() @ state)
        want.append(_softmax(V.get_value() @ state))
    assert got.shape == (4, 3)
    np.testing.assert_allclose(got, np.array(want), rtol=1e-10)


def test_the_softmax_op_class_takes_theanos_arguments():
    m = T.dmatrix("m")
    x = np.array([[1.0, 2.0, 0.0], [3.0, -1.0, 2.0]])
    np.testing.assert_allclose(theano.function([m], T.nnet.Softmax()(m))(x), _softmax(x), rtol=1e-12)


# ------------------------------------------------------------------------------------------------
# tile


def test_tile_with_symbolic_repetitions_matches_numpy():
    v, m = T.dvector("v"), T.dmatrix("m")
    n, k = T.iscalar("n"), T.lscalar("k")
    a, b = np.array([1.0, 2.0, 3.0]), np.arange(6.0).reshape(2, 3)
    cases = [
        (T.tile(v, (m.shape[0], 1)), np.tile(a, (2, 1))),  # a row per row of m (attention code)
        (T.tile(v, n), np.tile(a, 3)),
        (T.tile(m, [n, k]), np.tile(b, (3, 2))),
        (T.tile(m, [2, k]), np.tile(b, (2, 2))),
        (T.tile(v, [n, 1, k]), np.tile(a, (3, 1, 2))),
        (T.tile(m, m.shape, ndim=2), np.tile(b, b.shape)),  # a vector of known length
        (T.tile(v, [k], ndim=3), np.tile(a, (1, 1, 2))),  # reps padded to ndim
        (T.tile(v, 2, ndim=2), np.tile(a, (1, 2))),  # constant reps: one Tile op, padded to ndim
    ]
    f = theano.function([v, m, n, k], [c for c, _ in cases], on_unused_input="ignore")
    for i, (got, (_, want)) in enumerate(zip(f(a, b, 3, 2), cases)):
        assert got.shape == want.shape, (i, got.shape, want.shape)
        np.testing.assert_array_equal(got, want, err_msg=f"case {i}")
    # Zero repetitions make an empty result, as numpy's.
    assert f(a, b, 0, 2)[1].shape == (0,)


def test_tile_with_symbolic_repetitions_has_the_summed_gradient():
    m, n = T.dmatrix("m"), T.iscalar("n")
    w = np.arange(1.0, 13.0).reshape(2, 6)  # weights on the (2, 6) tiling of a (1, 3) m
    g = theano.function([m, n], T.grad(T.sum(T.tile(m, (n, 2)) * w), m))(np.ones((1, 3)), 2)
    np.testing.assert_allclose(g, (w[:, :3] + w[:, 3:]).sum(axis=0, keepdims=True))


def test_tile_by_a_vector_of_unknown_length_pads_it_to_ndim():
    m, r = T.dmatrix("m"), T.lvector("r")
    f = theano.function([m, r], T.tile(m, r, ndim=3))
    a = np.arange(6.0).reshape(2, 3)
    np.testing.assert_array_equal(f(a, [2, 1]), np.tile(a, (1, 2, 1)))
    np.testing.assert_array_equal(f(a, [3, 2, 1]), np.tile(a, (3, 2, 1)))
    with pytest.raises(ValueError, match="cannot reshape"):
        f(a, [1, 2, 2, 1])  # longer than ndim


def test_tile_refuses_what_it_cannot_do_by_name():
    v = T.dvector("v")
    with pytest.raises(ValueError, match="ndim must be given"):
        T.tile(v, T.lvector("r"))
    with pytest.raises(ValueError, match="integers"):
        T.tile(v, T.dscalar("r"))
    with pytest.raises(ValueError, match="integers"):
        T.tile(v, [1.5])
    with pytest.raises(ValueError, match="repetitions for ndim"):
        T.tile(v, [1, 2, 3], ndim=2)
    with pytest.raises(ValueError, match="at least x.ndim"):
        T.tile(T.dmatrix(), [2], ndim=1)


# ------------------------------------------------------------------------------------------------
# nonzero, flatnonzero, nonzero_values


@pytest.mark.parametrize("shape", [(7,), (3, 4), (2, 3, 4), (0,), (2, 0, 3)])
def test_nonzero_and_its_relatives_match_numpy(shape):
    rng = np.random.default_rng(len(shape))
    a = rng.integers(-1, 2, size=shape).astype(np.float64)
    if a.size:
        a.reshape(-1)[-1] = np.nan  # NaN is nonzero, as in numpy
    x = T.TensorType("float64", [False] * len(shape))("x")
    outs = list(T.nonzero(x)) + [T.nonzero(x, return_matrix=True), T.flatnonzero(x), T.nonzero_values(x),
                                 x.nonzero_values()] + list(x.nonzero())
    got = theano.function([x], outs)(a)
    nd = len(shape)
    want = list(np.nonzero(a)) + [np.array(np.nonzero(a)).reshape(nd, -1), np.flatnonzero(a), a[a != 0],
                                  a[a != 0]] + list(np.nonzero(a))
    for i, (g, w) in enumerate(zip(got, want)):
        assert g.shape == w.shape, (i, g.shape, w.shape)
        np.testing.assert_array_equal(g, w, err_msg=f"output {i}")
    assert all(g.dtype == np.int64 for g in got[:nd + 2])


def test_masking_with_nonzero_and_the_gradient_of_nonzero_values():
    x, y = T.dvector("x"), T.ivector("y")
    xv, yv = np.array([0.5, -1.0, 2.0, 3.0]), np.array([0, 3, 0, 1], dtype=np.int32)
    masked = x[T.neq(y, 0).nonzero()]  # code written before boolean indexing
    np.testing.assert_array_equal(theano.function([x, y], masked)(xv, yv), xv[yv != 0])
    g = theano.function([x], T.grad(T.sum(T.nonzero_values(x) ** 2), x))(np.array([0.0, 3.0, 0.0, -2.0]))
    np.testing.assert_allclose(g, [0.0, 6.0, 0.0, -4.0])
    with pytest.raises(ValueError, match="at least one axis"):
        T.flatnonzero(T.dscalar())


# ------------------------------------------------------------------------------------------------
# batched_tensordot


@pytest.mark.parametrize("xs,ys,axes,spec", [
    ((4, 3, 5), (4, 5, 2), 1, "bij,bjk->bik"),
    ((4, 3, 5), (4, 3, 5), [[1, 2], [1, 2]], "bij,bij->b"),
    ((4, 3, 5), (4, 2, 5), [[2], [2]], "bij,bkj->bik"),  # Keras' batch_dot(x, y, axes=[2, 2])
    ((4, 3, 5), (4, 3, 2), (1, 1), "bji,bjk->bik"),
    ((2, 3, 4, 5), (2, 5, 4, 6), [[2, 3], [2, 1]], "bijk,bkjl->bil"),
    ((3, 4), (3, 4, 2), [[1], [1]], "bi,bik->bk"),
    ((2, 3, 4), (2, 3, 4), 2, "bij,bij->b"),  # an int i: x's last i axes against y's first i, in order
])
def test_batched_tensordot_matches_einsum(xs, ys, axes, spec):
    rng = np.random.default_rng(7)
    a, b = rng.normal(size=xs), rng.normal(size=ys)
    x = T.TensorType("float64", [False] * len(xs))("x")
    y = T.TensorType("float64", [False] * len(ys))("y")
    want = np.einsum(spec, a, b)
    got = theano.function([x, y], T.batched_tensordot(x, y, axes))(a, b)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_batched_tensordot_names_bad_axes():
    x, y = T.dtensor3(), T.dtensor3()
    with pytest.raises(ValueError, match="batch"):
        T.batched_tensordot(x, y, [[0], [1]])
    with pytest.raises(ValueError, match="axes of x against"):
        T.batched_tensordot(x, y, [[1, 2], [1]])
    with pytest.raises(ValueError, match="axes=3"):
        T.batched_tensordot(x, y, 3)


# ------------------------------------------------------------------------------------------------
# fill_diagonal


@pytest.mark.parametrize("shape", [(3, 3), (2, 4), (4, 2), (0, 3)])
def test_fill_diagonal_and_its_offsets_match_numpy_and_have_gradients(shape):
    m, v = T.dmatrix("m"), T.dscalar("v")
    a = np.arange(1.0, 1.0 + np.prod(shape)).reshape(shape)
    offsets = [-3, -1, 0, 1, 2, 5]
    outs = [T.fill_diagonal(m, v)] + [T.extra_ops.fill_diagonal_offset(m, v, k) for k in offsets]
    got = theano.function([m, v], outs)(a, -7.0)
    want = a.copy()
    np.fill_diagonal(want, -7.0)
    np.testing.assert_array_equal(got[0], want)
    for k, g in zip(offsets, got[1:]):
        w = a.copy()
        rows, cols = np.nonzero(np.eye(*shape, k=k)) if min(shape) else ((), ())
        w[rows, cols] = -7.0
        np.testing.assert_array_equal(g, w, err_msg=f"offset {k}")
    # d sum(out * w) / d a is w off the diagonal, 0 on it; / d v, the diagonal's sum of w.
    wts = np.arange(2.0, 2.0 + np.prod(shape)).reshape(shape)
    cost = T.sum(T.extra_ops.fill_diagonal_offset(m, v, 1) * wts)
    ga, gv = theano.function([m, v], T.grad(cost, [m, v]))(a, 3.0)
    on = np.eye(*shape, k=1, dtype=bool)
    np.testing.assert_array_equal(ga, np.where(on, 0.0, wts))
    assert gv == wts[on].sum()


def test_fill_diagonal_casts_val_and_names_what_it_refuses():
    m = T.fmatrix("m")
    out = T.fill_diagonal(m, 2)
    assert out.dtype == "float32"
    np.testing.assert_array_equal(theano.function([m], out)(np.zeros((2, 2), np.float32)), [[2, 0], [0, 2]])
    np.testing.assert_array_equal(theano.function([m], T.fill_diagonal(m, T.constant(np.int8(3))))(
        np.zeros((2, 2), np.float32)), [[3, 0], [0, 3]])  # a safe cast
    with pytest.raises(TypeError, match="casts to it without loss"):
        T.fill_diagonal(T.lmatrix(), T.dscalar())
    with pytest.raises(TypeError, match="not a value of"):
        T.fill_diagonal(T.lmatrix(), 2.5)
    with pytest.raises(NotImplementedError, match="n-d diagonal"):
        T.fill_diagonal(T.dtensor3(), 1.0)
    with pytest.raises(TypeError, match="scalar"):
        T.fill_diagonal(m, T.fvector())


# ------------------------------------------------------------------------------------------------
# conv2d_transpose


def test_conv2d_transpose_is_the_gradient_of_a_strided_convolution():
    # <conv2d(x, w, stride 2), y> = <x, conv2d_transpose(y, w)>: the transposed operator.
    rng = np.random.default_rng(3)
    xv, wv, yv = rng.normal(size=(2, 3, 7, 7)), rng.normal(size=(4, 3, 3, 3)), rng.normal(size=(2, 4, 3, 3))
    x, w, y = T.dtensor4("x"), T.dtensor4("w"), T.dtensor4("y")
    fwd = T.nnet.conv2d(x, w, subsample=(2, 2))
    up = T.nnet.conv2d_transpose(y, w, (2, 3, 7, 7), input_dilation=(2, 2))
    a, b = theano.function([x, w, y], [fwd, up])(xv, wv, yv)
    assert a.shape == (2, 4, 3, 3) and b.shape == (2, 3, 7, 7)
    assert np.sum(a * yv) == pytest.approx(np.sum(xv * b), rel=1e-12)


# ------------------------------------------------------------------------------------------------
# grad_scale


def test_grad_scale_keeps_the_value_and_scales_the_gradient():
    from hypatia.gradient import grad_scale

    x = T.fvector("x")
    y = T.sum(grad_scale(x, -0.5) ** 2)
    f = theano.function([x], [y, T.grad(y, x)])
    v, g = f(np.array([1.0, -2.0], dtype=np.float32))
    assert v == pytest.approx(5.0) and g.dtype == np.float32
    np.testing.assert_allclose(g, [-1.0, 2.0])
    with pytest.raises(TypeError, match="number"):
        grad_scale(x, T.fscalar())
    g = pickle.loads(pickle.dumps(f))
    np.testing.assert_allclose(g(np.array([1.0, -2.0], dtype=np.float32))[1], [-1.0, 2.0])


# ------------------------------------------------------------------------------------------------
# function: a dict of outputs, In(allow_downcast)


def test_a_dict_of_outputs_returns_a_dict_and_pickles():
    x = T.dvector("x")
    f = theano.function([x], {"double": x * 2, "sum": x.sum(), "neg": -x})
    r = f(np.array([1.0, 2.0]))
    assert isinstance(r, dict) and sorted(r) == ["double", "neg", "sum"]
    np.testing.assert_array_equal(r["double"], [2.0, 4.0])
    assert r["sum"] == 3.0
    np.testing.assert_array_equal(f(x=np.array([1.0]))["neg"], [-1.0])
    g = pickle.loads(pickle.dumps(f))
    np.testing.assert_array_equal(g(np.array([3.0]))["double"], [6.0])
    with pytest.raises(TypeError, match="keys of a dict of outputs must be strings"):
        theano.function([x], {1: x})


def test_givens_take_a_more_broadcastable_replacement():
    # Theano's filter_variable: T.ones((1, 1)) for a matrix is given the matrix's pattern.
    x, s = T.dmatrix("x"), T.dscalar("s")
    f = theano.function([s], (x * s).sum(), givens={x: T.ones((1, 1), dtype="float64")})
    assert f(3.0) == 3.0
    with pytest.raises(TypeError, match="replacement"):
        theano.function([s], (x * s).sum(), givens={x: T.ones((1, 1), dtype="float32")})  # another dtype
    r = T.row("r", dtype="float64")
    with pytest.raises(TypeError, match="replacement"):
        theano.function([x], r.sum(), givens={r: x}, on_unused_input="ignore")  # less broadcastable


def test_in_allow_downcast_decides_for_its_input():
    x, y = T.fvector("x"), T.fvector("y")
    f = theano.function([theano.In(x, allow_downcast=True), y], x + y)
    d = np.array([1.5, 2.5])  # float64
    np.testing.assert_allclose(f(d, d.astype(np.float32)), [3.0, 5.0])  # x is cast
    with pytest.raises(TypeError, match="allow_input_downcast"):
        f(d, d)  # y is not
    np.testing.assert_allclose(f([1.5, 2.5], np.ones(2, np.float32)), [2.5, 3.5])  # a list, through the filter
    # In's own False wins over the function's True.
    g = theano.function([theano.In(x, allow_downcast=False), y], x + y, allow_input_downcast=True)
    np.testing.assert_allclose(g(d.astype(np.float32), d), [3.0, 5.0])
    with pytest.raises(TypeError, match="allow_input_downcast"):
        g(d, d)


def test_function_copy_swaps_shared_variables_and_drops_updates():
    x = T.dvector("x")
    w, w2 = theano.shared(np.array([1.0, 2.0]), name="w"), theano.shared(np.array([10.0, 20.0]), name="w2")
    f = theano.function([x], theano.Out(x * w), updates=[(w, w + 1)], name="f")
    g = f.copy(swap={w: w2}, name="g")
    np.testing.assert_array_equal(g(np.ones(2)), [10.0, 20.0])
    np.testing.assert_array_equal(w2.get_value(), [11.0, 21.0])
    np.testing.assert_array_equal(w.get_value(), [1.0, 2.0])  # the original's variable is left alone
    assert [v.name for v in f.get_shared()] == ["w"]
    c = theano.shared(0.0, name="c")
    assert sorted(v.name for v in theano.function([x], x * w, updates=[(c, c + 1)]).get_shared()) == ["c", "w"]
    assert [v.name for v in theano.function([x], x * 2, updates=[(c, 5.0)]).get_shared()] == ["c"]  # (updated only)
    # A shared output, one a rewrite takes out, and not an In(update=...)'s own state.
    assert [v.name for v in theano.function([], w).get_shared()] == ["w"]
    assert [v.name for v in theano.function([x], x + 0 * c).get_shared()] == ["c"]
    y = T.dscalar("y")
    counter = theano.function([theano.In(y, value=0.0, update=y + c)], y)
    assert [v.name for v in counter.get_shared()] == ["c"]
    h = f.copy(delete_updates=True)
    np.testing.assert_array_equal(h(np.ones(2)), [1.0, 2.0])
    np.testing.assert_array_equal(w.get_value(), [1.0, 2.0])
    np.testing.assert_array_equal(f(np.ones(2)), [1.0, 2.0])
    np.testing.assert_array_equal(w.get_value(), [2.0, 3.0])
    with pytest.raises(TypeError, match="differ in type"):
        f.copy(swap={w: theano.shared(np.zeros((2, 2)))})
    # Givens of an intermediate value still apply in the copy; a dict of outputs stays one.
    s, s3, xx = theano.shared(1.0), theano.shared(100.0), T.dscalar("xx")
    hh = xx * 3
    g = theano.function([xx], hh + s, givens=[(hh, xx * 5)])
    assert g.copy(swap={s: s3})(1.0) == 105.0
    assert theano.function([xx], {"a": xx + 1}).copy()(1.0) == {"a": 2.0}


# ------------------------------------------------------------------------------------------------
# jacobian and hessian options


def test_jacobian_and_hessian_take_consider_constant_and_disconnected_inputs():
    x, c, z = T.dvector("x"), T.dvector("c"), T.dvector("z")
    k = x * 2  # held constant: d(k * x)/dx is k, not 4x
    xv = np.array([1.0, 3.0])
    j = theano.function([x], T.jacobian(k * x, x, consider_constant=[k]))(xv)
    np.testing.assert_allclose(j, np.diag(2 * xv))
    h = theano.function([x], T.hessian(T.sum(k * x ** 2), x, consider_constant=[k]))(xv)
    np.testing.assert_allclose(h, np.diag(2 * 2 * xv))
    with pytest.raises(theano.gradient.DisconnectedInputError, match="jacobian"):
        T.jacobian(x * 2, z)
    with pytest.warns(HypatiaWarning, match="hessian"):
        hz = T.hessian(T.sum(x ** 2), z, disconnected_inputs="warn")
    jz = T.jacobian(x * 2, [z, c], disconnected_inputs="ignore")
    f = theano.function([x, z, c], [hz] + jz)
    got = f(xv, np.ones(3), np.ones(4))
    assert [g.shape for g in got] == [(3, 3), (2, 3), (2, 4)] and not any(g.any() for g in got)
    with pytest.raises(ValueError, match="disconnected_inputs"):
        T.jacobian(x * 2, x, disconnected_inputs="drop")
    # With respect to a value computed in the expression, consider_constant elsewhere.
    h, e = x * 2, T.exp(x)
    j = theano.function([x], T.jacobian(h ** 2 + e, h, consider_constant=[e]))(xv)
    np.testing.assert_allclose(j, np.diag(2 * 2 * xv))


# ------------------------------------------------------------------------------------------------
# THEANO_FLAGS and Theano's config sections


def _fresh(code, **env_vars):
    env = {k: v for k, v in os.environ.items() if k not in ("HYPATIA_FLAGS", "THEANO_FLAGS")}
    env.update(env_vars)
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)


def test_theano_flags_are_read_below_hypatia_flags():
    code = "import hypatia; print(hypatia.config.floatX, hypatia.config.optimizer, hypatia.config.allow_gc)"
    r = _fresh(code, THEANO_FLAGS="floatX=float32,optimizer=fast_compile,lib.cnmem=0.8,gpuarray.preallocate=1")
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.split() == ["float32", "fast_compile", "True"]
    assert "'lib.cnmem', 'gpuarray.preallocate' have no effect in Hypatia" in r.stderr
    r = _fresh(code, THEANO_FLAGS="floatX=float32,allow_gc=False", HYPATIA_FLAGS="floatX=float64")
    assert r.returncode == 0 and r.stdout.split() == ["float64", "fast_run", "False"], (r.stdout, r.stderr[-2000:])
    r = _fresh(code, THEANO_FLAGS="floatX=float33")
    assert r.returncode != 0 and "THEANO_FLAGS" in r.stderr and "float33" in r.stderr
    # Theano's parsing: an item without a value is ignored with a warning; quotes keep a comma.
    r = _fresh(code, THEANO_FLAGS="floatX=float32,blah,'gcc.cxxflags=-O3,-g'")
    assert r.returncode == 0 and r.stdout.split()[0] == "float32", r.stderr[-2000:]
    assert "'blah' has no value" in r.stderr and "'gcc.cxxflags' has no effect" in r.stderr


def test_theanos_config_sections_take_writes_with_a_warning():
    from hypatia.configparser import change_flags, config

    with pytest.warns(UserWarning, match="warn.round"):
        config.warn.round = False
    with pytest.warns(UserWarning, match="gpuarray.preallocate"):
        config.gpuarray.preallocate = 0.9
    with pytest.raises(AttributeError, match="Theano option"):
        config.warn.round  # noqa: B018  (nothing to read)
    before = config.floatX
    with pytest.warns(UserWarning, match="warn_float64"):
        with change_flags(warn_float64="ignore", floatX="float32"):
            assert config.floatX == "float32"
    assert config.floatX == before


# ------------------------------------------------------------------------------------------------
# as_op


def test_as_op_makes_an_op_of_a_numpy_function():
    from hypatia.compile.ops import as_op as as_op_of_compile_ops

    assert theano.as_op is theano.compile.as_op is as_op_of_compile_ops

    @theano.as_op(itypes=[T.dmatrix, T.dvector], otypes=[T.dvector])
    def solve(a, b):
        return np.linalg.solve(a, b)

    @theano.as_op(itypes=[T.dvector], otypes=[T.dvector, T.dscalar],
                  infer_shape=lambda node, shapes: [shapes[0], ()])
    def sorted_and_sum(v):
        return np.sort(v), np.float64(v.sum())

    a, b = T.dmatrix("a"), T.dvector("b")
    s, t = sorted_and_sum(solve(a, b) * 2)
    am, bv = np.array([[2.0, 1.0], [1.0, 3.0]]), np.array([3.0, 5.0])
    got_s, got_t, shape = theano.function([a, b], [s, t, s.shape])(am, bv)
    x = np.linalg.solve(am, bv) * 2
    np.testing.assert_allclose(got_s, np.sort(x))
    assert got_t == pytest.approx(x.sum()) and tuple(shape) == (2,)
    assert str(solve) == "FromFunctionOp{solve}" and solve == solve
    with pytest.raises(TypeError, match="input 1 must be of type"):
        solve(a, T.fvector())
    with pytest.raises(ValueError, match="expected 2 inputs"):
        solve(a)
    with pytest.raises(TypeError, match="tensor types"):
        theano.as_op(itypes=["float64"], otypes=[T.dvector])


def test_an_as_op_op_pickles_by_its_module_and_name(tmp_path, monkeypatch):
    (tmp_path / "asop_module.py").write_text(
        "import numpy as np\nimport hypatia as theano\nimport hypatia.tensor as T\n\n\n"
        "@theano.as_op(itypes=[T.dvector], otypes=[T.dvector])\ndef reverse(v):\n    return v[::-1].copy()\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    import asop_module

    x = T.dvector("x")
    f = pickle.loads(pickle.dumps(theano.function([x], asop_module.reverse(x) * 2)))
    np.testing.assert_array_equal(f(np.array([1.0, 2.0, 3.0])), [6.0, 4.0, 2.0])

    @theano.as_op(itypes=[T.dvector], otypes=[T.dvector])
    def local(v):
        return v

    with pytest.raises(pickle.PicklingError, match="top level"):
        pickle.dumps(local(x))


# ------------------------------------------------------------------------------------------------
# Variable methods, constants and the names Theano's modules carry


def test_the_elementwise_and_matrix_methods_of_variables():
    m = T.dmatrix("m")
    a = np.array([[0.5, 0.25], [0.75, 0.125]])
    names = ["arccos", "arcsin", "arctan", "arcsinh", "ceil", "cos", "cosh", "deg2rad", "exp", "exp2", "expm1",
             "floor", "log", "log10", "log1p", "log2", "rad2deg", "sin", "sinh", "sqrt", "tan", "tanh", "trunc"]
    got = theano.function([m], [getattr(m, n)() for n in names] + [(m + 1).arccosh(), (m - 0.5).arctanh()])(a)
    want = [getattr(np, n)(a) for n in names] + [np.arccosh(a + 1), np.arctanh(a - 0.5)]
    for n, g, w in zip(names + ["arccosh", "arctanh"], got, want):
        np.testing.assert_allclose(g, w, rtol=1e-12, err_msg=n)
    d, t, p, p0 = theano.function([m], [m.diagonal(), m.trace(), m.ptp(), m.ptp(axis=0)])(a)
    np.testing.assert_array_equal(d, np.diagonal(a))
    assert t == np.trace(a) and p == np.ptp(a)
    np.testing.assert_array_equal(p0, np.ptp(a, axis=0))
    assert m.conjugate() is m


def test_get_scalar_constant_value_and_extract_constant():
    c = T.constant(np.full((2, 3), 4.0))
    assert T.get_scalar_constant_value(c) == 4.0
    assert T.get_scalar_constant_value(c.dimshuffle(1, 0)) == 4.0
    assert T.get_scalar_constant_value(T.alloc(T.constant(2.5), 3, 4)) == 2.5
    assert T.get_scalar_constant_value(7) == 7 and theano.get_scalar_constant_value(np.float32(1.5)) == 1.5
    # Through elementwise ops of constants (computed), unless elemwise=False.
    six = T.constant(3.0) * 2
    assert T.get_scalar_constant_value(six) == 6.0 and T.get_scalar_constant_value(T.exp(T.constant(0.0))) == 1.0
    with pytest.raises(T.NotScalarConstantError):
        T.get_scalar_constant_value(six, elemwise=False)
    with pytest.raises(T.NotScalarConstantError):
        T.get_scalar_constant_value(T.dscalar() * 2)
    for bad in (T.dscalar("x"), T.constant(np.array([1.0, 2.0])), T.dscalar("y") * 2, theano.shared(1.0)):
        with pytest.raises(T.NotScalarConstantError):
            T.get_scalar_constant_value(bad)
    with pytest.raises(T.NotScalarConstantError):
        T.get_scalar_constant_value(c.dimshuffle(1, 0), only_process_constants=True)
    e = T.extract_constant(c.dimshuffle(1, 0))
    assert e.ndim == 0 and e.data == 4.0
    x = T.dscalar("x")
    assert T.extract_constant(x) is x


def test_stacklists_mgrid_and_ogrid_match_numpy():
    a, b, c, d = T.dscalars("abcd")
    n, m = T.lscalar("n"), T.lscalar("m")
    outs = [T.stacklists([[a, b], [c, d]])] + T.mgrid[0:n, 1:m:2] + T.ogrid[0:n, 1:m:2] + T.mgrid[2:n]
    got = theano.function([a, b, c, d, n, m], outs)(1.0, 2.0, 3.0, 4.0, 3, 6)
    want = [np.array([[1.0, 2.0], [3.0, 4.0]])] + list(np.mgrid[0:3, 1:6:2]) + list(np.ogrid[0:3, 1:6:2]) + \
        list(np.mgrid[2:3][None])
    assert len(got) == len(want)
    for i, (g, w) in enumerate(zip(got, want)):
        assert g.shape == w.shape, (i, g.shape, w.shape)
        np.testing.assert_array_equal(g, w, err_msg=f"output {i}")
    with pytest.raises(TypeError, match="slices with a stop"):
        T.mgrid[0:]


def test_a_gradient_that_does_not_depend_on_its_variable_still_uses_it():
    # Theano's gradient starts from fill(cost, 1), which reads the cost: d(3a)/da is a function of a
    # (not an unused input), as is d(a)/da.
    a = T.dscalar("a")
    assert theano.function([a], T.grad(3 * a, a))(2.0) == 3.0
    assert theano.function([a], T.grad(a, a))(2.0) == 1.0
    x = T.dvector("x")
    np.testing.assert_array_equal(theano.function([x], T.grad(T.sum(2 * x), x))(np.ones(3)), [2.0, 2.0, 2.0])
    # Compiled, the seed is the constant 1: nothing of the cost is computed for it.
    f = theano.function([a], T.grad(3 * a, a))
    assert not any("Shape" in str(n.op) or "Reshape" in str(n.op) for n in f.maker.fgraph.toposort())


def test_the_tutorials_hessian_times_a_vector_through_rop():
    x, v = T.dvectors("x", "v")
    gy = T.grad(T.sum(x ** 2), x)
    np.testing.assert_allclose(theano.function([x, v], T.Rop(gy, x, v))([4, 4], [2, 2]), [4.0, 4.0])


def test_the_subtensor_module_and_its_advanced_helpers():
    from hypatia.tensor.subtensor import advanced_inc_subtensor1, set_subtensor  # noqa: F401

    assert T.subtensor.__name__ == "hypatia.tensor.subtensor"
    x, y, i = T.dmatrix("x"), T.dmatrix("y"), T.lvector("i")
    xv, yv, iv = np.arange(6.0).reshape(3, 2), np.ones((3, 2)), np.array([0, 0, 2])
    got = theano.function([x, y, i], [T.advanced_inc_subtensor1(x, y, i), T.advanced_set_subtensor1(x, y * 2, i),
                                      T.advanced_subtensor1(x, i), T.subtensor.advanced_inc_subtensor(x, y[:2], i[:2]),
                                      T.subtensor.advanced_subtensor(x, i, 1)])(xv, yv, iv)
    want0 = xv.copy()
    np.add.at(want0, iv, yv)
    want1 = xv.copy()
    want1[iv] = 2.0
    want3 = xv.copy()
    np.add.at(want3, iv[:2], yv[:2])
    for g, w in zip(got, [want0, want1, xv[iv], want3, xv[iv, 1]]):
        np.testing.assert_array_equal(g, w)
    with pytest.raises(TypeError, match="vector of integers"):
        T.advanced_subtensor1(x, T.dvector())


def test_theano_scalar_upcast():
    assert theano.scalar.upcast("int8", "float32") == "float32"
    assert theano.scalar.upcast("int32", "float32") == "float64"
    assert theano.scalar.upcast("uint8", "int8", "int16") == "int16"


@pytest.mark.parametrize("kind", ["mrg", "numpy"])
def test_random_streams_pickle_with_their_variables_and_go_on_with_the_same_numbers(kind):
    from hypatia.sandbox.rng_mrg import MRG_RandomStreams
    from hypatia.tensor.shared_randomstreams import RandomStreams

    # What users pickle: a model holding the streams and a draw they made.
    rng = MRG_RandomStreams(42) if kind == "mrg" else RandomStreams(42)
    m = {"rng": rng, "noise": rng.uniform((3,))}
    f = theano.function([], m["noise"])
    f()
    m2 = pickle.loads(pickle.dumps(m))
    g = theano.function([], m2["noise"])
    np.testing.assert_array_equal(g(), f())  # the state went on from where it was when pickled
    # A variable made after unpickling is the one the original would have made next.
    a, b = m["rng"].normal((2,)), m2["rng"].normal((2,))
    np.testing.assert_array_equal(theano.function([], b)(), theano.function([], a)())
    # seed() reaches the restored variables.
    m["rng"].seed(7)
    m2["rng"].seed(7)
    np.testing.assert_array_equal(g(), f())


def test_the_names_theanos_modules_carry():
    import hypatia.printing
    import hypatia.updates

    x = T.dscalar("x")
    assert hypatia.printing.pprint(x * 2) == hypatia.pp(x * 2) == theano.pprint(x * 2)
    assert theano.OrderedUpdates is hypatia.updates.OrderedUpdates
    assert T.nnet.batch_normalization is T.nnet.bn.batch_normalization
    assert T.shared_randomstreams.RandomStreams(1) is not None and T.raw_random is not None


def test_a_python_float_with_integers_is_a_float():
    # labels * 1.0 is the idiom for a float copy: 1.0 is a float even though it is integral.
    x = T.lscalar("x")
    assert (x * 1.0).dtype == "float64" and (1.0 * x).dtype == "float64"
    assert (x * 2).dtype == "int64"
    assert hypatia.function([x], x * 1.0)(3) == 3.0
    with hypatia.config.change_flags(floatX="float32"):
        assert (T.bvector() * 1.0).dtype == "float32"  # int8 with floatX, Theano's upcast
        assert (T.ivector() + 2.0).dtype == "float64"
    assert (T.fvector() * 1.0).dtype == "float32"


def test_clone_of_a_shared_variable_shares_its_value_not_its_default_update():
    # Lasagne's BatchNormLayer: running averages are clones whose default_update only the training
    # function (which reads the clone) applies; a validation function reading the original must
    # not update them.
    mean = theano.shared(np.zeros(3), name="mean")
    X = T.dmatrix("X")
    running = theano.clone(mean, share_inputs=False)
    assert running is not mean and running.name == "mean"
    running.default_update = 0.9 * running + 0.1 * X.mean(0)
    train = theano.function([X], X - (X.mean(0) + 0 * running))
    test = theano.function([X], X - mean)
    train(np.ones((2, 3)))
    np.testing.assert_allclose(mean.get_value(), [0.1] * 3)
    test(np.full((2, 3), 100.0))
    np.testing.assert_allclose(mean.get_value(), [0.1] * 3)
    mean.set_value(np.full(3, 5.0))
    np.testing.assert_array_equal(running.get_value(), [5.0] * 3)  # one value
    c = mean.clone()
    assert isinstance(c, theano.compile.SharedVariable) and c is not mean
    with pytest.raises(ValueError, match="updated twice"):
        theano.function([], [], updates=[(mean, mean + 1), (c, c + 2)])
    x = T.dvector("x")
    y = (x * 2).clone()
    assert y.owner is None and y.type == x.type
    assert T.constant(3.0).clone().data == 3.0


def test_a_function_with_a_gradient_through_scan_pickles():
    v = T.dvector("v")
    h, _ = theano.scan(lambda a, p: a * p, sequences=v, outputs_info=T.constant(1.0))
    f = theano.function([v], T.grad(h[-1], v))
    g = pickle.loads(pickle.dumps(f))
    a = np.array([2.0, 3.0, 4.0])
    np.testing.assert_allclose(g(a), f(a))
    np.testing.assert_allclose(g(a), [12.0, 8.0, 6.0])


def test_givens_may_read_an_input_holding_state():
    a, x = T.dvector("a"), T.dvector("x")
    s = T.dvector("s")
    f = theano.function([a, theano.In(s, value=np.ones(3), update=s * a, implicit=False)], x.sum(),
                        givens={x: s * 2})
    assert f(np.full(3, 2.0)) == 6.0
    assert f(np.full(3, 2.0)) == 12.0  # the state was updated to s * a
    assert f(np.full(3, 2.0), np.zeros(3)) == 0.0  # a value passed replaces the state


def test_a_default_update_outlives_the_python_object_it_was_set_on():
    # Set on a shared variable made inside a layer function and dropped there: the graph still
    # reads the variable, and its default update must still run (it silently did not).
    import gc

    def layer(x):
        t = theano.shared(np.zeros(2), name="t")
        t.default_update = t + 1
        return (x * t).sum()

    x = T.dvector("x")
    out = layer(x)
    gc.collect()
    f = theano.function([x], out)
    f(np.ones(2))
    f(np.ones(2))
    (t,) = [v for v in theano.gof.graph.inputs([out]) if v.kind == "shared"]
    np.testing.assert_array_equal(t.get_value(), [2.0, 2.0])
