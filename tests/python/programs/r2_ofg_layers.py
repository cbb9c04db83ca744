"""OpFromGraph as a Theano 1.0 user wrote layers with it: a dense layer defined once as an
OpFromGraph and reused (two layers of an MLP trained by SGD, checked step by step against numpy),
a straight-through estimator (round with grad_overrides) inside a scan trained on a shared weight,
a linear op over a shared weight whose grad_overrides gives the weight's gradient (compared with the
same model written without the op), grad_overrides as an OpFromGraph and as a per-input list with
None, lop/rop overrides, connection_pattern, nested ops, Rop/Lop/hessian through the ops, and the
ops and a compiled training function pickled and resumed."""
import pickle
import sys

import numpy as np

import hypatia as theano
import hypatia.tensor as T
from hypatia import OpFromGraph

FAIL = []


def check(c, m):
    if not c:
        FAIL.append(m)
        print("FAIL:", m)


def close(a, b, m, rtol=1e-7, atol=1e-9):
    a, b = np.asarray(a), np.asarray(b)
    check(a.shape == b.shape and np.allclose(a, b, rtol=rtol, atol=atol),
          "%s: %s vs %s maxdiff %s" % (m, a.shape, b.shape, np.abs(a - b).max() if a.shape == b.shape else '-'))


def attempt(name, fn):
    try:
        fn()
    except Exception as e:
        check(False, "%s raised %s: %s" % (name, type(e).__name__, str(e).splitlines()[0][:300] if str(e) else ''))


rng = np.random.RandomState(3)


# Module-level override functions, so that the ops pickle (as in Theano).
def ste_grad(inps, gouts):
    """Straight-through estimator: the gradient of round() is taken as the identity."""
    return [gouts[0]]


def linear_grad(inps, gouts):
    x, W = inps          # the inner input, then a stand-in for the shared weight
    g, = gouts
    return [T.dot(g, W.T), T.dot(x.T, g)]


def t_dense_mlp():
    x = T.matrix('x')
    W = T.matrix('W')
    b = T.vector('b')
    dense = OpFromGraph([x, W, b], [T.tanh(T.dot(x, W) + b)], name='dense')
    W1 = theano.shared(rng.randn(4, 6) * 0.5, name='W1')
    b1 = theano.shared(np.zeros(6), name='b1')
    W2 = theano.shared(rng.randn(6, 5) * 0.5, name='W2')
    b2 = theano.shared(np.zeros(5), name='b2')
    W3 = theano.shared(rng.randn(5, 3) * 0.5, name='W3')
    X = T.matrix('X')
    y = T.ivector('y')
    h = dense(dense(X, W1, b1), W2, b2)
    p = T.nnet.softmax(T.dot(h, W3))
    cost = T.nnet.categorical_crossentropy(p, y).mean()
    params = [W1, b1, W2, b2, W3]
    grads = T.grad(cost, params)
    train = theano.function([X, y], cost, updates=[(q, q - 0.2 * g) for q, g in zip(params, grads)])
    xv = rng.randn(12, 4)
    yv = rng.randint(0, 3, 12).astype('int32')

    P = [q.get_value() for q in params]

    def np_step(P):
        w1, c1, w2, c2, w3 = P
        h1 = np.tanh(xv @ w1 + c1)
        h2 = np.tanh(h1 @ w2 + c2)
        z = h2 @ w3
        e = np.exp(z - z.max(1, keepdims=True))
        pr = e / e.sum(1, keepdims=True)
        loss = -np.log(pr[np.arange(12), yv]).mean()
        dz = pr.copy()
        dz[np.arange(12), yv] -= 1
        dz /= 12
        gw3 = h2.T @ dz
        dh2 = dz @ w3.T * (1 - h2 ** 2)
        gw2, gc2 = h1.T @ dh2, dh2.sum(0)
        dh1 = dh2 @ w2.T * (1 - h1 ** 2)
        gw1, gc1 = xv.T @ dh1, dh1.sum(0)
        return loss, [q - 0.2 * g for q, g in zip(P, [gw1, gc1, gw2, gc2, gw3])]

    losses = []
    for it in range(15):
        c = train(xv, yv)
        ref, P = np_step(P)
        close(c, ref, "dense OFG MLP loss at step %d" % it)
        losses.append(float(c))
    for q, r in zip(params, P):
        close(q.get_value(), r, "param %s after training" % q.name)
    check(losses[-1] < losses[0] * 0.8, "MLP of OFG layers learns: %r" % losses[::5])

    # The op and the whole training function pickle; the unpickled function goes on training the
    # same way as the original does.
    dense2 = pickle.loads(pickle.dumps(dense))
    close(theano.function([X], dense2(X, W1, b1))(xv), np.tanh(xv @ W1.get_value() + b1.get_value()), "unpickled op")
    blob = pickle.dumps((train, params))
    train2, params2 = pickle.loads(blob)
    a = [float(train(xv, yv)) for _ in range(3)]
    b = [float(train2(xv, yv)) for _ in range(3)]
    close(a, b, "unpickled training function resumes identically")
    close(params2[0].get_value(), W1.get_value(), "unpickled shared weight follows its function")


attempt("dense OFG MLP", t_dense_mlp)


def t_straight_through_in_scan():
    a = T.vector('a')
    rnd = OpFromGraph([a], [T.round(a)], grad_overrides=ste_grad, name='ste_round')
    seq = T.matrix('seq')
    w = theano.shared(rng.randn(3), name='w')

    def step(x_t, h):
        return rnd(x_t * w) + 0.5 * h

    hs, _ = theano.scan(step, sequences=seq, outputs_info=T.zeros((3,)))
    cost = hs.sum()
    gw = T.grad(cost, w)
    f = theano.function([seq], [cost, gw])
    sv = rng.randn(5, 3) * 2
    c, g = f(sv)
    wv = w.get_value()
    h = np.zeros(3)
    total = 0.0
    dh = np.zeros(3)
    gref = np.zeros(3)
    for t in range(5):
        h = np.round(sv[t] * wv) + 0.5 * h
        total += h.sum()
        dh = sv[t] + 0.5 * dh       # d h_t / d w under the straight-through rule
        gref += dh
    close(c, total, "rounded recurrence value")
    close(g, gref, "straight-through gradient through scan")
    check(not np.allclose(g, 0), "STE gradient is not zero")
    # Training with it moves w.
    train = theano.function([seq], cost, updates=[(w, w - 0.01 * gw)])
    w0 = w.get_value().copy()
    train(sv)
    close(w.get_value(), w0 - 0.01 * gref, "STE SGD step")
    # The op pickles with its override (a module-level function).
    rnd2 = pickle.loads(pickle.dumps(rnd))
    v = T.vector('v')
    close(theano.function([v], T.grad((rnd2(v) * v).sum(), v))(np.array([0.2, 1.7, -0.6])),
          np.round([0.2, 1.7, -0.6]) + [0.2, 1.7, -0.6], "unpickled STE gradient")


attempt("straight-through estimator in scan", t_straight_through_in_scan)


def t_shared_weight_override():
    W = theano.shared(rng.randn(3, 2), name='W')
    Wp = theano.shared(W.get_value().copy(), name='Wp')
    x = T.matrix('x')
    lin = OpFromGraph([x], [T.dot(x, W)], grad_overrides=linear_grad, name='lin')
    X = T.matrix('X')
    xv = rng.randn(6, 3)
    yv = rng.randn(6, 2)
    cost = ((T.tanh(lin(X)) - yv) ** 2).mean()
    cost_p = ((T.tanh(T.dot(X, Wp)) - yv) ** 2).mean()
    tr = theano.function([X], cost, updates=[(W, W - 0.5 * T.grad(cost, W))])
    trp = theano.function([X], cost_p, updates=[(Wp, Wp - 0.5 * T.grad(cost_p, Wp))])
    for it in range(6):
        close(tr(xv), trp(xv), "OFG over a shared weight trains as the plain graph (step %d)" % it)
    close(W.get_value(), Wp.get_value(), "weights after training")
    # Changing the shared value is seen by the op's node.
    W.set_value(np.ones((3, 2)))
    close(theano.function([X], lin(X))(xv), xv @ np.ones((3, 2)), "op reads the shared variable's new value")
    # The same op in a scan (a linear RNN), its gradient against the plain version.
    hs, _ = theano.scan(lambda xt, h: T.tanh(lin(xt.dimshuffle('x', 0))[0] + h[:2].sum()), sequences=X,
                        outputs_info=T.zeros((2,)))
    Wp.set_value(np.ones((3, 2)))
    hp, _ = theano.scan(lambda xt, h: T.tanh(T.dot(xt, Wp) + h[:2].sum()), sequences=X, outputs_info=T.zeros((2,)))
    g1 = theano.function([X], T.grad((hs[-1] ** 2).sum(), W))(xv)
    g2 = theano.function([X], T.grad((hp[-1] ** 2).sum(), Wp))(xv)
    close(g1, g2, "gradient of an overridden op in a scan body")


attempt("OFG over a shared weight", t_shared_weight_override)


def t_override_forms():
    xx, yy, gg = T.dscalars('xx', 'yy', 'gg')
    a, b = T.dscalars('a', 'b')
    # Theano's documentation example: a graph used twice.
    x, y, z = T.vectors('x', 'y', 'z')
    op = OpFromGraph([x, y, z], [x + y * z])
    fn = theano.function([x, y, z], op(x, y, z) + op(z, y, x))
    av, bv, cv = np.ones(3), np.ones(3) * 2, np.ones(3) * 3
    close(fn(av, bv, cv), av + bv * cv + cv + bv * av, "OFG documentation example")
    # grad_overrides as an OpFromGraph taking inputs + output gradients
    gop = OpFromGraph([xx, yy, gg], [gg * yy * 5, gg * xx * 7])
    op2 = OpFromGraph([xx, yy], [xx * yy], grad_overrides=gop)
    close(theano.function([a, b], T.grad(op2(a, b), [a, b]))(2., 3.), [15., 14.], "OFG as grad override")
    # list form: 'default' and a callable
    op3 = OpFromGraph([xx, yy], [xx * yy], grad_overrides=['default', lambda i, g: g[0] * 100])
    close(theano.function([a, b], T.grad(op3(a, b), [a, b]))(2., 3.), [3., 100.], "per-input grad overrides")
    # None: disconnected, as Theano's DisconnectedType
    op4 = OpFromGraph([xx, yy], [xx * yy], grad_overrides=[None, 'default'])
    close(theano.function([a, b], T.grad(op4(a, b), b))(2., 3.), 2., "grad through the connected input")
    try:
        T.grad(op4(a, b), a)
        check(False, "gradient through a None override should be disconnected")
    except theano.gradient.DisconnectedInputError:
        pass
    close(theano.function([a, b], T.grad(op4(a, b), a, disconnected_inputs='ignore'), on_unused_input='ignore')(2., 3.),
          0., "disconnected gradient ignored is zero")
    # lop_overrides reads the op's output
    op5 = OpFromGraph([xx], [T.exp(xx)], lop_overrides=lambda i, o, g: [o[0] * g[0]])
    close(theano.function([a], T.grad(op5(a), a))(1.5), np.exp(1.5), "lop override")
    u = T.vector('u')
    op5v = OpFromGraph([x], [T.exp(x)], lop_overrides=lambda i, o, g: [o[0] * g[0]])
    close(theano.function([u], theano.gradient.hessian(op5v(u).sum(), u))(np.array([0., 1.])),
          np.diag(np.exp([0., 1.])), "hessian through a lop override")
    # rop_overrides
    rop = OpFromGraph([xx, yy], [xx * yy], rop_overrides=lambda i, ep: [ep[0] * i[1] + ep[1] * i[0]])
    ea, eb = T.dscalars('ea', 'eb')
    close(theano.function([a, b, ea, eb], theano.gradient.Rop(rop(a, b), [a, b], [ea, eb]))(2., 3., 1., 10.), 23.,
          "rop override")
    # default Rop / Lop of an op without overrides
    sq = OpFromGraph([x], [x ** 2])
    v = T.vector('v')
    uv, vv = np.array([1., 2., 3.]), np.array([4., 5., 6.])
    close(theano.function([u, v], theano.gradient.Rop(sq(u), u, v))(uv, vv), 2 * uv * vv, "Rop through OFG")
    close(theano.function([u, v], theano.gradient.Lop(sq(u), u, v))(uv, vv), 2 * uv * vv, "Lop through OFG")
    # connection_pattern: the second output does not depend on the first input
    m, n = T.matrices('m', 'n')
    op6 = OpFromGraph([m, n], [m * 2, n * 3], connection_pattern=[[True, False], [False, True]])
    M = T.matrix('M')
    o1, o2 = op6(M, M)
    close(theano.function([M], T.grad(o1.sum() + 10 * o2.sum(), M))(np.ones((2, 2))), np.full((2, 2), 32.),
          "connection pattern gradients")
    # nested ops, one with an override inside
    inner = OpFromGraph([x], [x ** 2])
    outer = OpFromGraph([x, y], [inner(x) + inner(y)])
    close(theano.function([u, v], outer(u, v))(uv, vv), uv ** 2 + vv ** 2, "nested OFG")
    outer2 = OpFromGraph([x, y], [op5v(x) * y])
    close(theano.function([u, v], T.grad(outer2(u, v).sum(), u))(uv, vv), np.exp(uv) * vv, "nested override grad")
    # a non-inline op applied twice to the same input is computed once
    op7 = OpFromGraph([xx], [T.exp(xx)], grad_overrides=lambda i, g: [g[0]], name='MyExp')
    f = theano.function([a], op7(a) + op7(a))
    close(f(0.), 2., "repeated op value")
    check(sum(1 for nd in f.maker.fgraph.toposort() if 'MyExp' in str(nd.op)) == 1, "repeated op nodes merged")
    # wrong argument types are TypeErrors naming the op
    try:
        op7(T.fscalar('f'))
        check(False, "float32 argument to a float64 op accepted")
    except TypeError as e:
        check('MyExp' in str(e), "type error names the op: %s" % e)


attempt("override forms", t_override_forms)

print("FAILED" if FAIL else "OK", len(FAIL))
sys.exit(1 if FAIL else 0)
