"""Run-time checks in models: T.specify_shape on a minibatch (constant, symbolic and shape-vector
lengths), the shape it gives later ops, its gradient; theano.tensor.opt.Assert / assert_op guarding
a log-likelihood and a softmax's input in a logistic regression trained by SGD (values and
gradients against numpy), in a scan body (a failing step fails the call and changes no shared
variable), in a gradient, and the messages the failures give."""
import sys

import numpy as np

import hypatia as theano
import hypatia.tensor as T
from hypatia.tensor.opt import Assert, assert_op

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


def raises_assertion(fn, *args, contains=()):
    try:
        fn(*args)
    except AssertionError as e:
        for s in contains:
            check(s in str(e), "message %r lacks %r" % (str(e).splitlines()[0], s))
        return True
    return False


rng = np.random.RandomState(5)


def t_specify_shape():
    x = T.matrix('x')
    xs = T.specify_shape(x, (4, 3))
    f = theano.function([x], xs * 2)
    close(f(np.ones((4, 3))), np.full((4, 3), 2.), "specify_shape passes the value")
    check(raises_assertion(f, np.ones((5, 3)), contains=("(4, 3)", "(5, 3)")), "wrong shape raises AssertionError")
    # symbolic lengths
    n = T.iscalar('n')
    f2 = theano.function([x, n], T.specify_shape(x, (n, 3)).sum())
    close(f2(np.ones((6, 3)), 6), 18., "symbolic length")
    check(raises_assertion(f2, np.ones((6, 3)), 7), "symbolic length mismatch")
    # a shape vector: a square-matrix check
    fsq = theano.function([x], T.specify_shape(x, x.shape[::-1]))
    check(fsq(np.ones((3, 3))).shape == (3, 3), "square check passes a square")
    check(raises_assertion(fsq, np.ones((2, 3))), "square check refuses a rectangle")
    # later ops read the given shape
    close(theano.function([x], xs.shape)(np.ones((4, 3))), [4, 3], "shape of the specified value")
    # gradient passes through
    g = theano.function([x], T.grad((xs ** 2).sum(), x))
    xv = rng.randn(4, 3)
    close(g(xv), 2 * xv, "gradient through specify_shape")
    # a model whose minibatch size is fixed by specify_shape (as Lasagne's input_shape did)
    W = theano.shared(rng.randn(3, 2), name='W')
    X = T.matrix('X')
    Xb = T.specify_shape(X, (8, 3))
    out = T.nnet.sigmoid(T.dot(Xb, W))
    loss = ((out - 0.5) ** 2).sum()
    train = theano.function([X], loss, updates=[(W, W - 0.1 * T.grad(loss, W))])
    xb = rng.randn(8, 3)
    W0 = W.get_value().copy()
    l0 = train(xb)
    s = 1 / (1 + np.exp(-xb @ W0))
    close(l0, ((s - 0.5) ** 2).sum(), "loss of the fixed-batch model")
    close(W.get_value(), W0 - 0.1 * xb.T @ (2 * (s - 0.5) * s * (1 - s)), "SGD step of the fixed-batch model")
    Wb = W.get_value().copy()
    check(raises_assertion(train, rng.randn(7, 3)), "wrong batch size refused")
    close(W.get_value(), Wb, "a failed check writes no shared variable")


attempt("specify_shape", t_specify_shape)


def t_assert_in_logreg():
    X = T.matrix('X')
    y = T.ivector('y')
    W = theano.shared(np.zeros((4, 3)), name='W')
    b = theano.shared(np.zeros(3), name='b')
    p = T.nnet.softmax(T.dot(X, W) + b)
    # guard the labels: all within [0, 3)
    yc = Assert("labels out of range")(y, T.all(T.ge(y, 0)), T.all(T.lt(y, 3)))
    nll = -T.mean(T.log(p)[T.arange(yc.shape[0]), yc])
    gW, gb = T.grad(nll, [W, b])
    train = theano.function([X, y], nll, updates=[(W, W - 0.5 * gW), (b, b - 0.5 * gb)])
    xv = rng.randn(20, 4)
    yv = np.argmax(xv[:, :3] + 0.1 * rng.randn(20, 3), 1).astype('int32')
    Wn, bn = np.zeros((4, 3)), np.zeros(3)
    for it in range(10):
        c = train(xv, yv)
        z = xv @ Wn + bn
        pr = np.exp(z - z.max(1, keepdims=True))
        pr /= pr.sum(1, keepdims=True)
        close(c, -np.log(pr[np.arange(20), yv]).mean(), "guarded NLL at step %d" % it)
        d = pr.copy()
        d[np.arange(20), yv] -= 1
        d /= 20
        Wn, bn = Wn - 0.5 * xv.T @ d, bn - 0.5 * d.sum(0)
    close(W.get_value(), Wn, "W after guarded training")
    Wb = W.get_value().copy()
    bad = yv.copy()
    bad[3] = 7
    check(raises_assertion(train, xv, bad, contains=("labels out of range",)), "bad label refused")
    close(W.get_value(), Wb, "no update after a failed assert")
    # the gradient of an asserted value
    v = T.vector('v')
    a = assert_op(v, T.all(v > 0))
    close(theano.function([v], T.grad(T.log(a).sum(), v))(np.array([1., 2., 4.])), [1., .5, .25],
          "gradient through assert_op")
    check(raises_assertion(theano.function([v], T.log(a).sum()), np.array([1., -1.])), "assert_op fails")
    # conditions known true at compile time are dropped; the value is unchanged
    f = theano.function([v], assert_op(v, T.constant(1)) * 2)
    close(f(np.array([1., 2.])), [2., 4.], "constant-true assert")
    check(not any('Assert' in str(nd.op) for nd in f.maker.fgraph.toposort()), "constant-true assert removed")


attempt("Assert in a logistic regression", t_assert_in_logreg)


def t_checks_in_scan():
    acc0 = theano.shared(np.float64(0.), name='acc0')
    y = T.vector('y')

    def step(y_t, s):
        yy = assert_op(y_t, T.ge(y_t, 0))
        return s + T.sqrt(yy)

    out, _ = theano.scan(step, sequences=y, outputs_info=T.constant(0.))
    f = theano.function([y], [out[-1], T.grad(out[-1], y)], updates=[(acc0, acc0 + out[-1])])
    r, g = f(np.array([1., 4., 9.]))
    close(r, 6., "sum of square roots")
    close(g, 0.5 / np.sqrt([1., 4., 9.]), "gradient through the asserted scan")
    close(acc0.get_value(), 6., "update after a passing scan")
    check(raises_assertion(f, np.array([1., -4., 9.])), "negative entry fails inside the scan")
    close(acc0.get_value(), 6., "failed scan changes no shared variable")
    # specify_shape of each step
    M = T.tensor3('M')
    o2, _ = theano.scan(lambda m_t, a: a + T.specify_shape(m_t, (2, 2)).sum(), sequences=M,
                        outputs_info=T.constant(0.))
    fs = theano.function([M], o2)
    close(fs(np.ones((3, 2, 2))), [4., 8., 12.], "specify_shape in a scan body")
    check(raises_assertion(fs, np.ones((3, 2, 3))), "specify_shape fails in a scan body")
    # specify_shape on the initial state
    h0 = T.vector('h0')
    X = T.matrix('X')
    hs, _ = theano.scan(lambda r, h: r + h, sequences=X, outputs_info=T.specify_shape(h0, (3,)))
    fh = theano.function([X, h0], hs)
    close(fh(np.ones((2, 3)), np.zeros(3)), [[1.] * 3, [2.] * 3], "specified initial state")
    check(raises_assertion(fh, np.ones((2, 3)), np.zeros(4)) or False, "initial state of the wrong length")


attempt("checks in scan", t_checks_in_scan)

print("FAILED" if FAIL else "OK", len(FAIL))
sys.exit(1 if FAIL else 0)
