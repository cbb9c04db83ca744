"""theano.scan feature coverage: go_backwards, truncate_gradient, n_steps without sequences,
sequence taps, until (while loops), shared-variable updates returned from the step,
random numbers inside scan, map/reduce/foldl/foldr, scan over integer ranges, scan_checkpoints."""
import sys
import numpy as np
import hypatia as theano
import hypatia.tensor as T
from hypatia.tensor.shared_randomstreams import RandomStreams
import hypatia.scan_module

FAIL = []


def check(cond, msg):
    if not cond:
        FAIL.append(msg)
        print("FAIL:", msg)


def close(a, b, msg, rtol=1e-7, atol=1e-9):
    a = np.asarray(a)
    b = np.asarray(b)
    ok = a.shape == b.shape and np.allclose(a, b, rtol=rtol, atol=atol)
    check(ok, "%s: shapes %s vs %s; got %r expected %r" % (msg, a.shape, b.shape, a.ravel()[:6], b.ravel()[:6]))


def attempt(name, fn):
    try:
        fn()
    except Exception as e:
        import traceback
        traceback.print_exc()
        check(False, "%s raised %s: %s" % (name, type(e).__name__, str(e)[:300]))


rng = np.random.RandomState(11)


# ---------------------------------------------------------------- power iteration via n_steps
def t_power():
    A = T.dmatrix('A')
    x0 = T.dvector('x0')
    k = T.iscalar('k')
    res, upd = theano.scan(lambda prev, A: T.dot(A, prev), outputs_info=x0, non_sequences=A, n_steps=k)
    f = theano.function([A, x0, k], [res, res[-1]])
    Av = rng.randn(3, 3); xv = rng.randn(3)
    allr, last = f(Av, xv, 4)
    exp = [xv]
    for _ in range(4):
        exp.append(Av.dot(exp[-1]))
    close(allr, np.array(exp[1:]), "scan n_steps all outputs")
    close(last, exp[-1], "scan n_steps last")
    # A^k via the classic tutorial
    res2, _ = theano.scan(fn=lambda prior_result, A: prior_result * A, outputs_info=T.ones_like(A),
                          non_sequences=A, n_steps=k)
    close(theano.function([A, k], res2[-1])(Av, 3), Av ** 3, "elementwise power tutorial")
    # gradient through n_steps recurrence
    g = T.grad(res[-1].sum(), A)
    gv = theano.function([A, x0, k], g)(Av, xv, 3)
    num = np.zeros_like(Av)
    for idx in np.ndindex(3, 3):
        Ap = Av.copy(); Ap[idx] += 1e-6
        Am = Av.copy(); Am[idx] -= 1e-6
        num[idx] = (np.linalg.matrix_power(Ap, 3).dot(xv).sum() - np.linalg.matrix_power(Am, 3).dot(xv).sum()) / 2e-6
    close(gv, num, "grad through scan n_steps", rtol=1e-5, atol=1e-7)


attempt("power iteration", t_power)


# ---------------------------------------------------------------- sequence taps
def t_seq_taps():
    s = T.dvector('s')
    out, _ = theano.scan(lambda a, b, c: a - 2 * b + c, sequences=dict(input=s, taps=[-1, 0, 1]))
    sv = rng.randn(7)
    close(theano.function([s], out)(sv), sv[:-2] - 2 * sv[1:-1] + sv[2:], "sequence taps [-1,0,1]")
    # two sequences of different lengths: scan uses the shortest
    s2 = T.dvector('s2')
    out2, _ = theano.scan(lambda a, b: a * b, sequences=[s, s2])
    close(theano.function([s, s2], out2)(sv, np.arange(4.)), sv[:4] * np.arange(4.), "shortest sequence wins")
    # sequence over matrix rows plus an integer range
    M = T.dmatrix('M')
    out3, _ = theano.scan(lambda row, i: row * i, sequences=[M, T.arange(M.shape[0])])
    Mv = rng.randn(4, 3)
    close(theano.function([M], out3)(Mv), Mv * np.arange(4)[:, None], "scan with T.arange sequence")


attempt("sequence taps", t_seq_taps)


# ---------------------------------------------------------------- go_backwards
def t_backwards():
    s = T.dvector('s')
    cums, _ = theano.scan(lambda x_t, acc: acc + x_t, sequences=s, outputs_info=T.constant(0., dtype='float64'),
                          go_backwards=True)
    sv = np.arange(1., 6.)
    close(theano.function([s], cums)(sv), np.cumsum(sv[::-1]), "go_backwards cumulative sum")
    g = T.grad(cums[2], s)
    close(theano.function([s], g)(sv), [0, 0, 1, 1, 1], "grad through go_backwards")


attempt("go_backwards", t_backwards)


# ---------------------------------------------------------------- truncate_gradient vs numpy truncated BPTT
def t_truncate():
    X = T.dmatrix('X')
    C = T.dmatrix('C')
    W = theano.shared(0.5 * rng.randn(3, 4), name='W')
    U = theano.shared(0.5 * rng.randn(4, 4), name='U')
    h0 = T.zeros((4,), dtype='float64')
    Tn = 6
    Xv = rng.randn(Tn, 3)
    Cv = rng.randn(Tn, 4)

    def np_bptt(k):
        Wv, Uv = W.get_value(), U.get_value()
        hs = [np.zeros(4)]
        for t in range(Tn):
            hs.append(np.tanh(Xv[t].dot(Wv) + hs[-1].dot(Uv)))
        dW = np.zeros_like(Wv); dU = np.zeros_like(Uv)
        carry = np.zeros(4)
        for t in range(Tn - 1, Tn - 1 - k, -1):
            dh = Cv[t] + carry
            da = dh * (1 - hs[t + 1] ** 2)
            dW += np.outer(Xv[t], da)
            dU += np.outer(hs[t], da)
            carry = da.dot(Uv.T)
        return np.array(hs[1:]), dW, dU

    for trunc in [-1, 2, 4]:
        hs, _ = theano.scan(lambda x_t, h_tm1: T.tanh(T.dot(x_t, W) + T.dot(h_tm1, U)),
                            sequences=X, outputs_info=h0, truncate_gradient=trunc)
        cost = T.sum(hs * C)
        gW, gU = T.grad(cost, [W, U])
        f = theano.function([X, C], [hs, gW, gU])
        hv, gWv, gUv = f(Xv, Cv)
        hs_np, dW, dU = np_bptt(Tn if trunc == -1 else trunc)
        close(hv, hs_np, "rnn forward (truncate_gradient=%d)" % trunc)
        close(gWv, dW, "grad W with truncate_gradient=%d" % trunc, rtol=1e-6)
        close(gUv, dU, "grad U with truncate_gradient=%d" % trunc, rtol=1e-6)


attempt("truncate_gradient", t_truncate)


# ---------------------------------------------------------------- until
def t_until():
    def power_of_2(previous_power, max_value):
        return previous_power * 2, hypatia.scan_module.until(previous_power * 2 > max_value)

    max_value = T.scalar()
    values, _ = theano.scan(power_of_2, outputs_info=T.constant(1.), non_sequences=max_value, n_steps=1024)
    f = theano.function([max_value], values)
    close(f(45), [2., 4., 8., 16., 32., 64.], "scan until (documentation example)")
    close(f(0.5), [2.], "scan until stops after first step")


attempt("until", t_until)


# ---------------------------------------------------------------- shared updates inside scan
def t_shared_updates():
    counter = theano.shared(np.asarray(0, dtype='int64'), name='counter')
    acc = theano.shared(np.zeros(2), name='acc')
    s = T.dmatrix('s')

    def step(row):
        return row.sum() + counter, {counter: counter + 1, acc: acc + row}

    out, upd = theano.scan(step, sequences=s)
    check(counter in upd and acc in upd, "scan must return the shared-variable updates")
    f = theano.function([s], out, updates=upd)
    sv = np.arange(6.).reshape(3, 2)
    close(f(sv), sv.sum(1) + np.arange(3), "step sees counter values 0,1,2")
    check(int(counter.get_value()) == 3, "counter after first call: %r" % counter.get_value())
    close(acc.get_value(), sv.sum(0), "accumulated rows")
    close(f(sv), sv.sum(1) + np.arange(3, 6), "counter persists across calls")


attempt("shared updates", t_shared_updates)


# ---------------------------------------------------------------- random numbers in scan
def t_random():
    srng = RandomStreams(seed=7)
    n = T.iscalar('n')

    def walk(prev):
        return prev + srng.normal((), avg=0., std=1.)

    path, upd = theano.scan(walk, outputs_info=T.constant(0., dtype='float64'), n_steps=n)
    check(len(upd) >= 1, "scan with random numbers must return rng updates")
    f = theano.function([n], path, updates=upd)
    p1 = f(50)
    p2 = f(50)
    steps = np.diff(np.concatenate([[0.], p1]))
    check(len(np.unique(np.round(steps, 12))) == 50, "each scan step must draw a fresh sample")
    check(not np.allclose(p1, p2), "successive calls must differ (rng updates applied)")
    check(abs(steps.mean()) < 0.6 and 0.6 < steps.std() < 1.5, "random walk step moments")


attempt("random in scan", t_random)


# ---------------------------------------------------------------- map / reduce / foldl / foldr
def t_map_reduce():
    v = T.dvector('v')
    sq, _ = theano.map(lambda x: x ** 2, sequences=[v])
    sm, _ = theano.reduce(lambda x, acc: acc + x, sequences=v, outputs_info=T.as_tensor_variable(np.float64(0)))
    fl, _ = theano.foldl(lambda x, acc: acc * 2 + x, sequences=v, outputs_info=T.as_tensor_variable(np.float64(0)))
    fr, _ = theano.foldr(lambda x, acc: acc * 2 + x, sequences=v, outputs_info=T.as_tensor_variable(np.float64(0)))
    f = theano.function([v], [sq, sm, fl, fr])
    vv = np.array([1., 0., 1., 1.])
    a, b, c, d = f(vv)
    close(a, vv ** 2, "theano.map")
    close(b, 3., "theano.reduce")
    close(c, 11., "theano.foldl (binary 1011)")
    close(d, 13., "theano.foldr (binary 1101)")


attempt("map/reduce", t_map_reduce)


# ---------------------------------------------------------------- polynomial (tutorial) with multiple outputs
def t_poly():
    coefficients = T.vector("coefficients")
    x = T.scalar("x")
    max_coefficients_supported = 10000
    full_range = T.arange(max_coefficients_supported)
    components, updates = theano.scan(fn=lambda coeff, power, free_var: coeff * (free_var ** power),
                                      outputs_info=None, sequences=[coefficients, full_range],
                                      non_sequences=x)
    polynomial = components.sum()
    f = theano.function(inputs=[coefficients, x], outputs=polynomial)
    close(f(np.asarray([1, 0, 2], dtype=theano.config.floatX), 3), 19., "polynomial tutorial")


attempt("polynomial", t_poly)


# ---------------------------------------------------------------- nested scan and scan inside gradient
def t_nested():
    M = T.dmatrix('M')

    def row_fn(row):
        r, _ = theano.scan(lambda e, acc: acc + e * e, sequences=row, outputs_info=T.constant(0., dtype='float64'))
        return r[-1]

    out, _ = theano.scan(row_fn, sequences=M)
    Mv = rng.randn(3, 4)
    f = theano.function([M], [out, T.grad(out.sum(), M)])
    o, g = f(Mv)
    close(o, (Mv ** 2).sum(1), "nested scan")
    close(g, 2 * Mv, "grad through nested scan")


attempt("nested scan", t_nested)


# ---------------------------------------------------------------- scan_checkpoints
def t_checkpoints():
    X = T.dmatrix('X')
    W = theano.shared(0.5 * rng.randn(3, 3), name='Wc')
    h0 = T.zeros((3,), dtype='float64')
    hs1, _ = theano.scan(lambda x, h, W: T.tanh(x + T.dot(h, W)), sequences=[X], outputs_info=[h0], non_sequences=[W])
    hs2, _ = theano.scan_checkpoints(lambda x, h, W: T.tanh(x + T.dot(h, W)), sequences=[X], outputs_info=[h0],
                                     non_sequences=[W], save_every_N=3)
    Xv = rng.randn(8, 3)
    # Theano: scan_checkpoints only guarantees the last time step of each output
    f = theano.function([X], [hs1[-1], hs2[-1], T.grad(hs1[-1].sum(), W), T.grad(hs2[-1].sum(), W)])
    a, b, ga, gb = f(Xv)
    close(b, a, "scan_checkpoints last step equals scan")
    close(gb, ga, "scan_checkpoints gradient equals scan")


attempt("scan_checkpoints", t_checkpoints)

if FAIL:
    print("%d FAILURES" % len(FAIL))
    sys.exit(1)
print("OK t10_scan_features")
