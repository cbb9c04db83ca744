"""scan (Theano's signature) against numpy loops: taps on sequences and outputs, nit-sots,
non-sequences, n_steps, go_backwards, until, shared-variable updates and random draws in the body,
map/reduce/foldl/foldr, scan_checkpoints; gradients (BPTT) against finite differences on an RNN,
an LSTM, several taps, go_backwards and until; truncate_gradient; errors; pickling."""
import pickle

import numpy as np
import pytest
from hypothesis import given, strategies as st

import hypatia as theano
import hypatia.tensor as T
from hypatia.sandbox.rng_mrg import MRG_RandomStreams
from hypatia.scan_module import until
from hypatia.tensor.shared_randomstreams import RandomStreams

rng = np.random.RandomState(42)


def test_cumsum_and_power():
    x, s0 = T.dvector("x"), T.dscalar("s0")
    out, upd = theano.scan(lambda xt, s: s + xt, sequences=x, outputs_info=s0)
    assert len(upd) == 0
    np.testing.assert_allclose(theano.function([x, s0], out)(np.arange(5.0), 10.0), 10 + np.cumsum(np.arange(5.0)))
    # Theano's tutorial: A ** k by scan with a non-sequence and n_steps.
    k, A = T.iscalar("k"), T.dvector("A")
    result, _ = theano.scan(fn=lambda prior, A: prior * A, outputs_info=T.ones_like(A), non_sequences=A, n_steps=k)
    f = theano.function([A, k], result[-1])
    np.testing.assert_allclose(f(np.arange(10.0), 2), np.arange(10.0) ** 2)


def test_taps_nitsots_and_order_of_arguments():
    # seq taps [-1, 1], a state with taps [-2, -1], a nit-sot, a non-sequence: fn's arguments
    # come in Theano's order (sequence taps, state taps, non-sequences).
    seq, init, c = T.dvector("seq"), T.dvector("init"), T.dscalar("c")

    def step(s_m1, s_p1, h_m2, h_m1, c):
        return h_m2 + h_m1 * c + s_m1, s_p1 * 2

    (h, y), _ = theano.scan(step, sequences=dict(input=seq, taps=[-1, 1]),
                            outputs_info=[dict(initial=init, taps=[-2, -1]), None], non_sequences=c)
    f = theano.function([seq, init, c], [h, y])
    sv, iv = rng.randn(8), rng.randn(2)
    hv, yv = f(sv, iv, 0.5)
    hist = list(iv)
    want_h, want_y = [], []
    for t in range(6):  # 8 entries, taps span 2
        v = hist[-2] + hist[-1] * 0.5 + sv[t]
        hist.append(v)
        want_h.append(v)
        want_y.append(sv[t + 2] * 2)
    np.testing.assert_allclose(hv, want_h)
    np.testing.assert_allclose(yv, want_y)


def test_shortest_sequence_n_steps_and_zero_steps():
    a, b = T.dvector("a"), T.dvector("b")
    out, _ = theano.scan(lambda x, y: x * y, sequences=[a, b])
    np.testing.assert_allclose(theano.function([a, b], out)(np.arange(5.0), np.arange(3.0)), [0, 1, 4])
    n = T.iscalar("n")
    out, _ = theano.scan(lambda x, s: s + x, sequences=a, outputs_info=T.constant(0.0, dtype="float64"), n_steps=n)
    f = theano.function([a, n], out)
    np.testing.assert_allclose(f(np.arange(5.0), 3), [0, 1, 3])
    assert f(np.arange(5.0), 0).shape == (0,)
    with pytest.raises(ValueError, match="sequence 0 has 5 entries; 6 steps"):
        f(np.arange(5.0), 6)


def test_go_backwards_with_taps_is_theanos():
    x = T.dvector("x")
    out, _ = theano.scan(lambda a, b: a - 2 * b, sequences=dict(input=x, taps=[0, 2]), go_backwards=True)
    xv = rng.randn(7)
    # Theano reverses each shifted slice: tap k reads x[len - 1 - t - (maxtap - k)].
    want = [xv[6 - t - 2] - 2 * xv[6 - t] for t in range(5)]
    np.testing.assert_allclose(theano.function([x], out)(xv), want)
    s0 = T.dscalar("s0")
    out2, _ = theano.scan(lambda a, s: s * 10 + a, sequences=x, outputs_info=s0, go_backwards=True)
    v = theano.function([x, s0], out2)(np.array([1.0, 2.0, 3.0]), 0.0)
    np.testing.assert_allclose(v, [3, 32, 321])


def test_until_stops_the_loop():
    x0 = T.dscalar("x0")
    out, _ = theano.scan(lambda x: (x * 2, until(x * 2 > 100)), outputs_info=x0, n_steps=1000)
    np.testing.assert_allclose(theano.function([x0], out)(3.0), [6, 12, 24, 48, 96, 192])


def test_shared_updates_and_random_draws_in_the_body():
    counter = theano.shared(np.float64(0.0), name="counter")
    x = T.dvector("x")

    def step(xt):
        return xt * 2, {counter: counter + xt}

    out, upd = theano.scan(step, sequences=x)
    assert list(upd.keys()) == [counter]
    f = theano.function([x], out, updates=upd)
    np.testing.assert_allclose(f(np.arange(4.0)), [0, 2, 4, 6])
    assert counter.get_value() == 6.0
    f(np.arange(4.0))
    assert counter.get_value() == 12.0
    # Random draws in the body: each step draws anew, and the state advances across calls.
    for srng in (RandomStreams(3), MRG_RandomStreams(3)):
        noise, upd = theano.scan(lambda xt: xt + srng.uniform((2,), dtype="float64"), sequences=x)
        g = theano.function([x], noise, updates=upd)
        a, b = g(np.zeros(3)), g(np.zeros(3))
        assert a.shape == (3, 2) and len(np.unique(a)) == 6 and not np.array_equal(a, b)
        assert np.all((a > 0) & (a < 1))


def test_dropout_in_the_body_under_a_gradient_runs_one_loop():
    # An RNN with a dropout mask drawn per step (the random state is an untraced state of the loop)
    # and a shared counter updated per step: its gradient's twin traces every state, and the
    # user's loop takes the twin's outputs, so one Scan runs one copy of the body. The cost and the
    # counter equal those of the function without the gradient from the same seed, and the
    # gradient matches finite differences (the same draws each time: the generator reseeded).
    Wv = rng.uniform(-0.5, 0.5, (4, 4))
    xv, hv = rng.randn(6, 3, 4), rng.randn(3, 4)
    for make in (RandomStreams, MRG_RandomStreams):
        W = theano.shared(Wv.copy(), name="W")
        counter = theano.shared(np.float64(0.0), name="counter")
        srng = make(5)
        X, h0 = T.tensor3("X"), T.dmatrix("h0")

        def step(x, h):
            m = srng.binomial(size=h.shape, p=0.7, dtype="float64")
            return T.tanh(T.dot(h * m, W) + x), {counter: counter + 1}

        hs, upd = theano.scan(step, sequences=X, outputs_info=h0)
        cost = hs[-1].sum()
        f = theano.function([X, h0], [cost, T.grad(cost, W)], updates=upd)
        plain = theano.function([X, h0], cost, updates=upd)
        scans = [n for n in f.maker.fgraph.toposort() if type(n.op).__name__ == "Scan"]
        assert len(scans) == 1 and len(scans[0].op.outputs) == 3  # h, the counter, the random state
        srng.seed(11)
        c, g = f(xv, hv)
        assert counter.get_value() == 6.0
        srng.seed(11)
        assert plain(xv, hv) == c
        assert counter.get_value() == 12.0
        eps, fd = 1e-6, np.zeros_like(Wv)
        for i in range(4):
            for j in range(4):
                for sign in (1, -1):
                    w = Wv.copy()
                    w[i, j] += sign * eps
                    W.set_value(w)
                    srng.seed(11)
                    fd[i, j] += sign * plain(xv, hv) / (2 * eps)
        np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-8)


def test_random_draws_match_numpy_per_step():
    srng = RandomStreams(7)
    x = T.dvector("x")
    out, upd = theano.scan(lambda xt: srng.normal((), dtype="float64") + xt, sequences=x)
    f = theano.function([x], out, updates=upd)
    rs = np.random.RandomState(np.random.RandomState(7).randint(2**30))
    np.testing.assert_array_equal(f(np.zeros(4)), [rs.normal() for _ in range(4)])


def test_map_reduce_foldl_foldr():
    x = T.dvector("x")
    sq, _ = theano.map(lambda v: v ** 2, x)
    tot, _ = theano.reduce(lambda v, acc: acc + v, x, T.constant(0.0, dtype="float64"))
    left, _ = theano.foldl(lambda v, acc: acc * 10 + v, x, T.constant(0.0, dtype="float64"))
    right, _ = theano.foldr(lambda v, acc: acc * 10 + v, x, T.constant(0.0, dtype="float64"))
    f = theano.function([x], [sq, tot, left, right])
    r = f(np.array([1.0, 2.0, 3.0]))
    np.testing.assert_allclose(r[0], [1, 4, 9])
    assert r[1] == 6 and r[2] == 123 and r[3] == 321


def rnn_cost(X, h0, W, U):
    hs, _ = theano.scan(lambda x, h, W, U: T.tanh(T.dot(W, h) + T.dot(U, x)), sequences=X, outputs_info=h0,
                        non_sequences=[W, U])
    return hs


def test_gradient_rnn_lstm_taps_backwards_until():
    X, h0, W, U = rng.randn(6, 2), rng.randn(3), rng.randn(3, 3) * 0.5, rng.randn(3, 2) * 0.5
    T.verify_grad(lambda X, h0, W, U: rnn_cost(X, h0, W, U), [X, h0, W, U], rng=rng)

    def lstm(X, h0, c0, Wx, Wh):
        def step(x, h, c, Wx, Wh):
            z = T.dot(Wx, x) + T.dot(Wh, h)
            i, f, o, g = T.nnet.sigmoid(z[0:3]), T.nnet.sigmoid(z[3:6]), T.nnet.sigmoid(z[6:9]), T.tanh(z[9:12])
            c_new = f * c + i * g
            return o * T.tanh(c_new), c_new

        (hs, cs), _ = theano.scan(step, sequences=X, outputs_info=[h0, c0], non_sequences=[Wx, Wh])
        return hs.sum() + cs[-1].sum()

    T.verify_grad(lstm, [rng.randn(5, 2), rng.randn(3), rng.randn(3), rng.randn(12, 2) * 0.5,
                         rng.randn(12, 3) * 0.5], rng=rng)

    def taps_backwards(x, init, w):
        out, _ = theano.scan(lambda a, b, h2, h1, w: T.tanh(h2 * w + h1 * a - b),
                             sequences=dict(input=x, taps=[0, 1]),
                             outputs_info=dict(initial=init, taps=[-2, -1]), non_sequences=w, go_backwards=True)
        return out

    T.verify_grad(taps_backwards, [rng.randn(7), rng.randn(2), np.array(0.7)], rng=rng)

    def until_loop(a):
        out, _ = theano.scan(lambda p, a: (p * a + 1.0, until(p * a + 1.0 > 2.5)), outputs_info=a, non_sequences=a,
                             n_steps=50)
        return out

    T.verify_grad(until_loop, [np.array(0.7)], rng=rng)


@given(st.data())
def test_gradient_of_costs_reading_rows_traces_or_nothing(data):
    # Random loops (a state with one or two taps, a second state, a nit-sot) and costs that read
    # each output whole, at one or two steps, or not at all: the ScanGrad gets each output's
    # gradient as a trace, as one step or as nothing (local_scan_grad_zero_rows), and its pending
    # state gradients pass between steps as cells. verify_grad against finite differences.
    n = data.draw(st.integers(1, 4), label="steps")
    two_taps = data.draw(st.booleans(), label="two taps")
    reads = [data.draw(st.sampled_from(["none", "whole", "row", "rows"]), label=f"output {o}") for o in range(3)]
    if reads == ["none"] * 3:
        reads[0] = "row"
    rows = [sorted({data.draw(st.integers(-n, n - 1)) for _ in range(2 if r == "rows" else 1)}) for r in reads]
    window = 2 if two_taps else 1

    def cost(x, a0, b0, w):
        def step(xt, *args):
            if two_taps:
                a2, a1, b, w = args
                a = T.tanh(a1 * w + a2 * 0.5 + xt)
            else:
                a1, b, w = args
                a = T.tanh(a1 * w + xt)
            return a, b * 0.9 + a.sum(), a * a

        outs, _ = theano.scan(step, sequences=x,
                              outputs_info=[dict(initial=a0, taps=[-2, -1]) if two_taps else a0, b0, None],
                              non_sequences=w)
        total = 0
        for out, r, ks in zip(outs, reads, rows):
            if r == "whole":
                total = total + (out * out).sum()
            elif r != "none":
                for k in ks:
                    total = total + (out[k] * (k + 2.5)).sum()
        return total

    a0 = rng.randn(window, 3) if two_taps else rng.randn(3)
    T.verify_grad(cost, [rng.randn(n, 3), a0, np.array(0.3), rng.randn(3) * 0.5], rng=rng)


def test_truncate_gradient():
    w, s0 = T.dscalar("w"), T.dscalar("s0")
    out, _ = theano.scan(lambda s, w: s * w, outputs_info=s0, non_sequences=w, n_steps=4, truncate_gradient=2)
    g = T.grad(out[-1], w)
    assert theano.function([w, s0], g)(2.0, 1.0) == pytest.approx(16.0)  # the last 2 of 4 steps


def test_scan_checkpoints_values_and_gradient():
    X, h0, W = T.dmatrix("X"), T.dvector("h0"), T.dmatrix("W")
    full, _ = theano.scan(lambda x, h, W: T.tanh(T.dot(W, h) + x), sequences=X, outputs_info=h0, non_sequences=W)
    ck, _ = theano.scan_checkpoints(lambda x, h, W: T.tanh(T.dot(W, h) + x), sequences=[X], outputs_info=[h0],
                                    non_sequences=[W], save_every_N=4)
    gf, gc = T.grad(full[-1].sum(), W), T.grad(ck[-1].sum(), W)
    f = theano.function([X, h0, W], [full, ck, gf, gc])
    Xv, hv, Wv = rng.randn(10, 3), rng.randn(3), rng.randn(3, 3) * 0.5
    fv, cv, gfv, gcv = f(Xv, hv, Wv)
    np.testing.assert_allclose(cv, fv[[3, 7, 9]])  # the blocks' last steps (10 = 4 + 4 + 2)
    np.testing.assert_allclose(gcv, gfv, rtol=1e-10)


def test_errors():
    x = T.dvector("x")
    s32 = T.fscalar("s32")
    with pytest.raises(TypeError, match=r"initial value \(outputs_info\) is TensorType\(float32, scalar\)"):
        theano.scan(lambda xt, s: s + xt, sequences=x, outputs_info=s32)
    with pytest.raises(ValueError, match="reads 3 past values"):
        theano.scan(lambda a, b: a + b, outputs_info=dict(initial=np.zeros(2), taps=[-3, -1]), n_steps=2)
    with pytest.raises(ValueError, match="taps must be negative"):
        theano.scan(lambda a: a, outputs_info=dict(initial=np.zeros(2), taps=[0]), n_steps=2)
    with pytest.raises(ValueError, match="give n_steps"):
        theano.scan(lambda s: s + 1, outputs_info=T.dscalar())
    with pytest.raises(ValueError, match="fn returned 2 outputs but outputs_info has 1"):
        theano.scan(lambda xt, s: [s, s], sequences=x, outputs_info=T.dscalar())
    # A state whose shape changes: a clear error at run time.
    v = T.dvector("v")
    out, _ = theano.scan(lambda s: T.concatenate([s, s]), outputs_info=v, n_steps=2)
    with pytest.raises(ValueError, match="keeps the shape of its initial value"):
        theano.function([v], out)(np.ones(2))


def test_pickle_and_graph():
    X, h0, W, U = T.dmatrix("X"), T.dvector("h0"), T.dmatrix("W"), T.dmatrix("U")
    hs = rnn_cost(X, h0, W, U)
    f = theano.function([X, h0, W, U], hs)
    assert any(isinstance(n.op, theano._core.Scan) for n in f.maker.fgraph.toposort())
    g = pickle.loads(pickle.dumps(f))
    args = [rng.randn(4, 2), rng.randn(3), rng.randn(3, 3), rng.randn(3, 2)]
    np.testing.assert_array_equal(g(*args), f(*args))


def test_seed_002_echo_state_network():
    # The lecture's example (../shared/seeds/002): sequence taps [-4, 0], a state with taps [-3, -1],
    # a second state, five non-sequences, strict=True.
    n_in, n_x, n_y = 2, 4, 3
    u, x0, y0 = T.dmatrix("u"), T.dmatrix("x0"), T.dvector("y0")
    W, W_in_1, W_in_2 = T.dmatrix("W"), T.dmatrix("W_in_1"), T.dmatrix("W_in_2")
    W_feedback, W_out = T.dmatrix("W_feedback"), T.dmatrix("W_out")

    def oneStep(u_tm4, u_t, x_tm3, x_tm1, y_tm1, W, W_in_1, W_in_2, W_feedback, W_out):
        x_t = T.tanh(theano.dot(x_tm1, W) + theano.dot(u_t, W_in_1) + theano.dot(u_tm4, W_in_2) +
                     theano.dot(y_tm1, W_feedback))
        y_t = theano.dot(x_tm3, W_out)
        return [x_t, y_t]

    (x_vals, y_vals), updates = theano.scan(fn=oneStep, sequences=dict(input=u, taps=[-4, -0]),
                                            outputs_info=[dict(initial=x0, taps=[-3, -1]), y0],
                                            non_sequences=[W, W_in_1, W_in_2, W_feedback, W_out], strict=True)
    f = theano.function([u, x0, y0, W, W_in_1, W_in_2, W_feedback, W_out], [x_vals, y_vals])
    uv, x0v, y0v = rng.randn(10, n_in), rng.randn(3, n_x), rng.randn(n_y)
    Wv, W1v, W2v = rng.randn(n_x, n_x) * 0.3, rng.randn(n_in, n_x), rng.randn(n_in, n_x)
    Wfv, Wov = rng.randn(n_y, n_x), rng.randn(n_x, n_y)
    xs, ys = f(uv, x0v, y0v, Wv, W1v, W2v, Wfv, Wov)
    xh, yh = list(x0v), [y0v]
    for t in range(6):  # 10 entries, taps span 4
        x_t = np.tanh(xh[-1] @ Wv + uv[t + 4] @ W1v + uv[t] @ W2v + yh[-1] @ Wfv)
        y_t = xh[-3] @ Wov
        xh.append(x_t)
        yh.append(y_t)
    np.testing.assert_allclose(xs, xh[3:])
    np.testing.assert_allclose(ys, yh[1:])


def test_rop_through_scan():
    X, h0, W = T.dmatrix("X"), T.dvector("h0"), T.dmatrix("W")
    hs, _ = theano.scan(lambda x, h, W: T.tanh(T.dot(W, h) + x), sequences=X, outputs_info=h0, non_sequences=W)
    V = T.dmatrix("V")
    jv = T.Rop(hs, W, V)
    f = theano.function([X, h0, W, V], jv)
    g = theano.function([X, h0, W], hs)
    Xv, hv, Wv, Vv = rng.randn(5, 3), rng.randn(3), rng.randn(3, 3) * 0.5, rng.randn(3, 3)
    eps = 1e-6
    num = (g(Xv, hv, Wv + eps * Vv) - g(Xv, hv, Wv - eps * Vv)) / (2 * eps)
    np.testing.assert_allclose(f(Xv, hv, Wv, Vv), num, atol=1e-7)


def test_hessian_vector_products_through_scan():
    # Second derivatives: the gradient of <grad(cost, W), V> (a Hessian-vector product, as
    # Hessian-free optimisation uses) through an RNN with batched (matrix) states, and the full
    # Hessian of a scalar recurrence, against finite differences of the first-order gradient.
    X, h0, W, V = T.dtensor3("X"), T.dmatrix("h0"), T.dmatrix("W"), T.dmatrix("V")
    hs, _ = theano.scan(lambda x, h, W: T.tanh(T.dot(h, W) + x), sequences=X, outputs_info=h0, non_sequences=W)
    cost = (hs ** 2).sum()
    gW = T.grad(cost, W)
    hv = T.grad((gW * V).sum(), W)
    f = theano.function([X, h0, W, V], hv)
    g = theano.function([X, h0, W], gW)
    Xv, h0v, Wv, Vv = rng.randn(6, 2, 3), rng.randn(2, 3), rng.randn(3, 3) * 0.5, rng.randn(3, 3)
    eps = 1e-6
    num = (g(Xv, h0v, Wv + eps * Vv) - g(Xv, h0v, Wv - eps * Vv)) / (2 * eps)
    np.testing.assert_allclose(f(Xv, h0v, Wv, Vv), num, rtol=1e-6, atol=1e-7)

    w, s0 = T.dscalar("w"), T.dscalar("s0")
    out, _ = theano.scan(lambda s, w: T.sin(s * w), outputs_info=s0, non_sequences=w, n_steps=5)
    gw = T.grad(out[-1], w)
    fh = theano.function([w, s0], [T.grad(gw, w), T.grad(gw, s0)])
    fg = theano.function([w, s0], [gw, T.grad(out[-1], s0)])
    d_ww, d_ws = fh(0.9, 0.4)
    assert d_ww == pytest.approx((fg(0.9 + eps, 0.4)[0] - fg(0.9 - eps, 0.4)[0]) / (2 * eps), rel=1e-6)
    assert d_ws == pytest.approx((fg(0.9, 0.4 + eps)[0] - fg(0.9, 0.4 - eps)[0]) / (2 * eps), rel=1e-6)


def test_rewrites_save_mem_and_loop_invariants():
    Scan = theano._core.Scan
    x0, n = T.dscalar("x0"), T.lscalar("n")
    out, _ = theano.scan(lambda x: x + 1, outputs_info=x0, n_steps=n)
    f = theano.function([x0, n], out[-1])
    ops = [node.op for node in f.maker.fgraph.toposort() if isinstance(node.op, Scan)]
    assert len(ops) == 1 and ops[0].state_traced == [False]  # only the last step is read: no trace
    assert f(0.0, 1000) == 1000.0
    with pytest.raises(IndexError):  # out[-1] of zero steps, as without the rewrite
        f(2.0, 0)
    full = theano.function([x0, n], [out[-1], out])  # the trace is read: kept
    assert [node.op for node in full.maker.fgraph.toposort() if isinstance(node.op, Scan)][0].state_traced == [True]
    # W.T depends only on a non-sequence: computed once, outside the body.
    W, h0 = T.dmatrix("W"), T.dvector("h0")
    hs, _ = theano.scan(lambda h, W: T.tanh(T.dot(W.T, h)), outputs_info=h0, non_sequences=W, n_steps=3)
    g = theano.function([h0, W], hs)
    op = [node.op for node in g.maker.fgraph.toposort() if isinstance(node.op, Scan)][0]
    inner = [str(a.op) for a in theano.gof.graph.io_toposort(op.inputs, op.outputs)]
    assert not any(s.startswith("DimShuffle") for s in inner), inner
    Wv, hv = rng.randn(3, 3) * 0.5, rng.randn(3)
    h, want = hv, []
    for _ in range(3):
        h = np.tanh(Wv.T @ h)
        want.append(h)
    np.testing.assert_allclose(g(hv, Wv), want)
