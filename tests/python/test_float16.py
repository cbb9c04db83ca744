"""float16 as a storage dtype (Theano's and numpy's float16): arrays are kept as IEEE binary16,
every op computes in float32 and rounds its result to float16, in every mode. Conversions are
checked bit for bit against numpy's."""
import numpy as np
import pytest

import hypatia
import hypatia.tensor as T

MODES = ["FAST_RUN", "FAST_COMPILE", "NONE", pytest.param("DebugMode", marks=pytest.mark.host_graphs)]


def f16(a):
    return np.asarray(a, dtype=np.float16)


def same_bits(a, b):
    a, b = np.asarray(a), np.asarray(b)
    assert a.dtype == b.dtype == np.float16, (a.dtype, b.dtype)
    nan = np.isnan(a)
    np.testing.assert_array_equal(nan, np.isnan(b))
    np.testing.assert_array_equal(a[~nan].view(np.uint16), b[~nan].view(np.uint16))


def every_float16():
    return np.arange(65536, dtype=np.uint32).astype(np.uint16).view(np.float16)


@pytest.mark.parametrize("mode", MODES)
def test_casts_match_numpy_bit_for_bit(mode):
    x = T.vector("x", dtype="float16")
    d = T.dvector("d")
    s = T.vector("s", dtype="float32")
    f = hypatia.function([x, d, s], [T.cast(x, "float32"), T.cast(d, "float16"), T.cast(s, "float16"),
                                     T.cast(x, "int32"), x], mode=mode)
    h = every_float16()
    rng = np.random.default_rng(0)
    # Doubles around float16's range, the ties between neighbours, and its edges.
    dd = np.concatenate([rng.standard_normal(20000) * 10.0 ** rng.integers(-9, 6, 20000),
                         (h[np.isfinite(h)].astype(np.float64)[:-1] + h[np.isfinite(h)].astype(np.float64)[1:]) / 2,
                         [65504.0, 65519.99, 65520.0, 1e300, -1e300, 2.0 ** -24, 2.0 ** -25, 1.5 * 2.0 ** -25,
                          np.inf, -np.inf, np.nan, -0.0]])
    with np.errstate(invalid="ignore", over="ignore"):
        ss = dd.astype(np.float32)
        wide, narrow_d, narrow_s, as_int, same = f(h, dd, ss)
        np.testing.assert_array_equal(wide, h.astype(np.float32))
        same_bits(narrow_d, dd.astype(np.float16))
        same_bits(narrow_s, ss.astype(np.float16))
        finite = np.isfinite(h)
        np.testing.assert_array_equal(as_int[finite], h[finite].astype(np.int32))
    same_bits(same, h)


@pytest.mark.parametrize("mode", MODES)
def test_each_op_is_computed_in_float32_and_rounded(mode):
    x = T.vector("x", dtype="float16")
    y = T.vector("y", dtype="float16")
    z = (x * y + 1) / (T.exp(x) + y)
    assert z.dtype == "float16"
    f = hypatia.function([x, y], [z, T.tanh(x) - y, x.sum(), x.mean(), T.sqr(x).max()], mode=mode)
    rng = np.random.default_rng(1)
    a, b = f16(rng.uniform(-3, 3, 1000)), f16(rng.uniform(0.5, 3, 1000))
    got = f(a, b)
    A, B = a.astype(np.float32), b.astype(np.float32)
    r = lambda v: np.asarray(v, np.float32).astype(np.float16).astype(np.float32)  # noqa: E731
    want = r(r(r(A * B) + 1) / r(r(np.exp(A)) + B))
    for g in got:
        assert g.dtype == np.float16
    # Fused loops may keep an intermediate in float32: one float16 rounding apart at most.
    np.testing.assert_allclose(got[0].astype(np.float32), want, rtol=2e-3, atol=1e-3)
    np.testing.assert_allclose(got[1].astype(np.float32), r(r(np.tanh(A)) - B), rtol=2e-3, atol=1e-3)
    assert got[2] == np.float16(A.sum(dtype=np.float64))
    np.testing.assert_allclose(float(got[3]), A.mean(dtype=np.float64), rtol=1e-3)
    assert got[4] == np.float16(np.max(r(A * A)))


@pytest.mark.parametrize("mode", MODES)
def test_sum_accumulates_in_float32(mode):
    x = T.vector("x", dtype="float16")
    f = hypatia.function([x], x.sum(), mode=mode)
    # Past 2048 a float16 accumulator would step by 2 and stop growing.
    assert f(np.ones(5000, np.float16)) == 5000
    assert f(np.ones(5000, np.float16)).dtype == np.float16


def test_promotion_follows_numpy():
    h = T.vector("h", dtype="float16")
    assert (h + T.vector("f", dtype="float32")).dtype == "float32"
    assert (h + T.vector("i", dtype="int8")).dtype == "float16"
    assert (h + T.vector("u", dtype="uint8")).dtype == "float16"
    assert (h + T.vector("s", dtype="int16")).dtype == "float32"
    assert (h + T.ivector("i32")).dtype == "float64"
    assert (h * 2.0).dtype == "float16"
    assert (2 * h).dtype == "float16"
    assert T.exp(h).dtype == "float16"
    assert (h > 0).dtype == "bool"


@pytest.mark.parametrize("mode", ["FAST_RUN", "NONE"])
def test_shared_variables_updates_and_gradients(mode):
    w = hypatia.shared(np.full((3,), 2.0, np.float16), "w")
    assert w.dtype == "float16" and w.get_value().dtype == np.float16
    x = T.vector("x", dtype="float16")
    cost = T.sum((w * x) ** 2)
    g = T.grad(cost, w)
    assert g.dtype == "float16"
    step = hypatia.function([x], cost, updates=[(w, w - np.float16(0.125) * g)], mode=mode)
    xv = f16([1.0, 0.5, 0.25])
    c0 = step(xv)
    assert c0.dtype == np.float16 and c0 == np.float16(4 + 1 + 0.25)
    # d/dw sum((w x)^2) = 2 w x^2
    np.testing.assert_array_equal(w.get_value(), f16([2 - 0.125 * 4, 2 - 0.125 * 1, 2 - 0.125 * 0.25]))
    assert w.get_value().dtype == np.float16


@pytest.mark.parametrize("mode", MODES)
def test_shape_ops_views_and_constructors(mode):
    x = T.matrix("x", dtype="float16")
    outs = [x.T, x.reshape((-1,)), x[1:, ::-1], x.dimshuffle(1, "x", 0), T.concatenate([x, x], axis=0),
            T.set_subtensor(x[0], 7), x[[0, 0]], T.zeros((2, 3), dtype="float16"), T.ones((2,), dtype="float16"),
            T.eye(3, dtype="float16"), T.arange(0, 3, dtype="float16"), T.dot(x, x.T), T.nnet.softmax(x),
            T.alloc(np.float16(0.5), 2, 2), x.flatten(), T.stack([x[0], x[1]])]
    f = hypatia.function([x], outs, mode=mode)
    a = f16(np.arange(6).reshape(2, 3) / 7)
    got = f(a)
    A = a.astype(np.float32)
    e = np.exp(A - A.max(1, keepdims=True))
    want = [a.T, a.reshape(-1), a[1:, ::-1], a.T[:, None, :], np.concatenate([a, a]), np.vstack([f16([7, 7, 7]), a[1:]]),
            a[[0, 0]], np.zeros((2, 3), np.float16), np.ones(2, np.float16), np.eye(3, dtype=np.float16),
            np.arange(3, dtype=np.float16), f16(A @ A.T), f16(e / e.sum(1, keepdims=True)),
            np.full((2, 2), 0.5, np.float16), a.reshape(-1), np.stack([a[0], a[1]])]
    for g, w in zip(got, want):
        assert g.dtype == np.float16, (g.dtype, w)
        np.testing.assert_allclose(g.astype(np.float32), w.astype(np.float32), rtol=1e-3, atol=1e-3)


def test_inputs_filter_like_theano():
    x = T.vector("x", dtype="float16")
    f = hypatia.function([x], x * 2)
    assert f([1.5, 2.0]).dtype == np.float16  # Python floats that float16 holds exactly
    with pytest.raises(TypeError, match="float16"):
        f(np.array([1.0, 2.0], np.float32))  # a downcast needs allow_input_downcast
    g = hypatia.function([x], x * 2, allow_input_downcast=True)
    with np.errstate(over="ignore"):
        same_bits(g(np.array([0.1, 70000.0], np.float32)), f16([0.1, 70000.0]) * np.float16(2))
    # Theano's TensorType with a float16 dtype; numpy float16 constants.
    t = T.TensorType("float16", (False, True))
    v = t("v")
    assert v.broadcastable == (False, True) and v.dtype == "float16"
    c = T.constant(np.float16(0.5))
    assert c.dtype == "float16"


def test_read_only_and_strided_float16_inputs():
    x = T.vector("x", dtype="float16")
    f = hypatia.function([x], x + 1)
    a = f16(np.arange(20))
    a.setflags(write=False)
    np.testing.assert_array_equal(f(a[::3]), a[::3] + np.float16(1))


def test_floatx_float16():
    with hypatia.change_flags(floatX="float16"):
        x = T.vector("x")
        assert x.dtype == "float16"
        assert T.constant(0.5).dtype == "float16"
        f = hypatia.function([x], x * 0.1 + 1)
        r = f([1.0, 2.0])
        assert r.dtype == np.float16
        np.testing.assert_array_equal(r, (f16([1, 2]) * np.float16(0.1)) + np.float16(1))
    assert T.vector("y").dtype != "float16"


def test_jacobian_inc_subtensor_and_mutable_inputs():
    x = T.vector("x", dtype="float16")
    J = hypatia.gradient.jacobian(T.tanh(x) * 2, x)
    assert J.dtype == "float16"
    xv = f16([0.1, 0.5])
    got = hypatia.function([x], J)(xv)
    want = np.diag(2 * (1 - np.tanh(xv.astype(np.float32)) ** 2))
    assert got.dtype == np.float16
    np.testing.assert_allclose(got.astype(np.float32), want, rtol=2e-3, atol=1e-3)
    w = hypatia.shared(np.ones((2, 2), np.float16), "w")
    hypatia.function([], [], updates=[(w, T.inc_subtensor(w[0], 1))])()
    np.testing.assert_array_equal(w.get_value(), f16([[2, 2], [1, 1]]))
    assert w.get_value().dtype == np.float16
    # A mutable float16 input: the float32 work happens in buffers of its own.
    a = np.ones(3, np.float16)
    out = hypatia.function([hypatia.In(x, mutable=True)], x * 2)(a)
    np.testing.assert_array_equal(out, f16([2, 2, 2]))


@pytest.mark.host_graphs
def test_fused_loops_load_round_and_store_float16():
    """FAST_RUN fuses float16 graphs through their casts: one loop loads float16, computes in
    float32, rounds where each op's result is float16 and stores float16, with the bits of the
    unfused graph (numpy's per-op float16 rounding)."""
    x = T.vector("x", dtype="float16")
    y = T.vector("y", dtype="float16")
    outs = [x * 2 + 1, T.exp(x) * y - x, (x * y).sum(), T.cast(x, "float32") * 3]
    f = hypatia.function([x, y], outs, mode="FAST_RUN")
    g = hypatia.function([x, y], outs, mode="FAST_COMPILE")
    ops = [n.op for n in f.maker.fgraph.toposort()]
    names = [str(op) for op in ops]
    assert any("Composite" in n and "cast{float16}" in n for n in names), names
    rng = np.random.default_rng(3)
    a = f16(np.concatenate([rng.uniform(-4, 4, 9000), [65504, -65504, 6e-8, np.inf, -np.inf, np.nan, -0.0]]))
    b = f16(rng.uniform(-2, 2, a.size))
    with np.errstate(over="ignore", invalid="ignore"):
        got, ref = f(a, b), g(a, b)
        r = lambda v: np.asarray(v, np.float32).astype(np.float16)  # noqa: E731
        A, B = a.astype(np.float32), b.astype(np.float32)
        same_bits(got[0], r(r(A * 2).astype(np.float32) + 1))
        same_bits(got[1], r(r(r(np.exp(A)).astype(np.float32) * B).astype(np.float32) - A))
    for k in (0, 1, 2):
        same_bits(got[k], ref[k])
    np.testing.assert_array_equal(got[3], ref[3])
    assert got[3].dtype == np.float32
    # The x * 2 + 1 loop alone: one node reading float16, no separate casts.
    h = hypatia.function([x], x * 2 + 1)
    nodes = h.maker.fgraph.toposort()
    assert len(nodes) == 1 and nodes[0].op.in_dtypes[0] == "float16", [str(n.op) for n in nodes]


def test_fused_float16_ops_pickle_and_build_from_python():
    import pickle

    x = T.vector("x", dtype="float16")
    f = hypatia.function([x], [T.tanh(x * 2) + 1, x.sum()])
    ops = [n.op for n in f.maker.fgraph.toposort()]
    assert any("cast{float16}" in str(op) for op in ops)
    for op in ops:
        op2 = pickle.loads(pickle.dumps(op))
        assert op2 == op and hash(op2) == hash(op)
    # cast{float32}(i0) * i1 on a float16 input and a float32 one, stored as float16.
    op = T.Composite(2, "float32", [("cast{float32}", [0]), ("mul", [2, 1]), ("cast{float16}", [3])],
                     in_dtypes=["float16", "float32"])
    assert op.steps[0] == ("cast{float32}", [0])
    w = T.vector("w", dtype="float32")
    out = op(x, w)
    assert out.dtype == "float16"
    a, b = f16([1.5, -2, 3]), np.array([0.1, 2, 3], np.float32)
    same_bits(hypatia.function([x, w], out)(a, b), (a.astype(np.float32) * b).astype(np.float16))
    with pytest.raises(ValueError, match="only Cast steps read float16"):
        T.Composite(1, "float32", [("exp", [0])], in_dtypes=["float16"])
