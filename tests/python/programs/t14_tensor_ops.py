"""Broad tensor-API coverage that Theano users call every day, each checked against numpy
(forward) and, where differentiable, against central finite differences (gradient)."""
import sys
import traceback
import numpy as np
import hypatia as theano
import hypatia.tensor as T
from hypatia.tensor import extra_ops, nlinalg, slinalg

FAIL = []


def check(cond, msg):
    if not cond:
        FAIL.append(msg)
        print("FAIL:", msg)


rng = np.random.RandomState(5)
A = rng.rand(3, 4) + 0.5
B = rng.rand(4, 2) + 0.5
v3 = rng.rand(3) + 0.5
S = rng.rand(3, 3); S = S.dot(S.T) + 3 * np.eye(3)
X3 = rng.rand(2, 3, 4) + 0.5
m = T.dmatrix('m'); m2 = T.dmatrix('m2'); vv = T.dvector('vv'); t3 = T.dtensor3('t3')


def fd_grad(f, x, eps=1e-6):
    g = np.zeros_like(x)
    for idx in np.ndindex(*x.shape):
        xp = x.copy(); xp[idx] += eps
        xm = x.copy(); xm[idx] -= eps
        g[idx] = (f(xp) - f(xm)) / (2 * eps)
    return g


cases = [
    # name, inputs, values, theano expr builder, numpy reference, check grad wrt first input
    ("sum axis kwargs keepdims", [m], [A], lambda m: m.sum(axis=1, keepdims=True), lambda a: a.sum(1, keepdims=True), True),
    ("max axis tuple", [t3], [X3], lambda t: T.max(t, axis=(0, 2)), lambda x: x.max(axis=(0, 2)), True),
    ("argmax keepdims", [m], [A], lambda m: T.argmax(m, axis=0, keepdims=True), lambda a: a.argmax(0)[None], False),
    ("min/argmin", [m], [A], lambda m: T.min(m, axis=1) + T.argmin(m, axis=1), lambda a: a.min(1) + a.argmin(1), False),
    ("std", [m], [A], lambda m: T.std(m, axis=0), lambda a: a.std(0), True),
    ("prod no axis", [m], [A], lambda m: T.prod(m), lambda a: a.prod(), True),
    ("dot matrix-matrix", [m, m2], [A, B], lambda a, b: T.dot(a, b), lambda a, b: a.dot(b), True),
    ("dot vector-matrix", [vv, m], [v3, A], lambda v, a: T.dot(v, a), lambda v, a: v.dot(a), True),
    ("outer", [vv], [v3], lambda v: T.outer(v, v[::-1]), lambda v: np.outer(v, v[::-1]), True),
    ("tensordot", [t3, m], [X3, B], lambda t, b: T.tensordot(t, b, axes=[[2], [0]]), lambda t, b: np.tensordot(t, b, axes=[[2], [0]]), True),
    ("batched_dot", [t3], [X3], lambda t: T.batched_dot(t, t.dimshuffle(0, 2, 1)), lambda t: np.einsum('bij,bkj->bik', t, t), True),
    ("transpose/dimshuffle", [t3], [X3], lambda t: t.dimshuffle(2, 'x', 0, 1), lambda t: t.transpose(2, 0, 1)[:, None], True),
    ("reshape with -1", [t3], [X3], lambda t: t.reshape((-1, 4)), lambda t: t.reshape(-1, 4), True),
    ("flatten(ndim=2)", [t3], [X3], lambda t: t.flatten(2), lambda t: t.reshape(2, -1), True),
    ("concatenate", [m], [A], lambda a: T.concatenate([a, a * 2], axis=0), lambda a: np.concatenate([a, a * 2], 0), True),
    ("stack axis=1", [vv], [v3], lambda v: T.stack([v, v ** 2], axis=1), lambda v: np.stack([v, v ** 2], 1), True),
    ("stacklists", [vv], [v3], lambda v: T.stacklists([[v[0], v[1]], [v[2], v[0]]]), lambda v: np.array([[v[0], v[1]], [v[2], v[0]]]), True),
    ("tile", [m], [A], lambda a: T.tile(a, (2, 3)), lambda a: np.tile(a, (2, 3)), True),
    ("repeat", [vv], [v3], lambda v: T.repeat(v, 2), lambda v: np.repeat(v, 2), True),
    ("extra_ops.repeat axis", [m], [A], lambda a: extra_ops.repeat(a, 3, axis=1), lambda a: np.repeat(a, 3, axis=1), True),
    ("cumsum", [m], [A], lambda a: T.cumsum(a, axis=0), lambda a: np.cumsum(a, 0), True),
    ("cumprod", [vv], [v3], lambda v: T.cumprod(v), lambda v: np.cumprod(v), True),
    ("diff", [vv], [v3], lambda v: extra_ops.diff(v), lambda v: np.diff(v), True),
    ("sort", [m], [A], lambda a: T.sort(a, axis=1), lambda a: np.sort(a, 1), True),
    ("argsort", [vv], [v3], lambda v: T.argsort(v), lambda v: np.argsort(v), False),
    ("roll", [vv], [v3], lambda v: T.roll(v, 1), lambda v: np.roll(v, 1), True),
    ("diag of vector", [vv], [v3], lambda v: T.diag(v), lambda v: np.diag(v), True),
    ("diag of matrix", [m], [A], lambda a: T.diag(a), lambda a: np.diag(a), True),
    ("trace", [m], [S], lambda a: nlinalg.trace(a), lambda a: np.trace(a), True),
    ("eye/identity_like", [m], [A], lambda a: T.identity_like(a) * a, lambda a: np.eye(3, 4) * a, True),
    ("zeros_like/ones_like", [m], [A], lambda a: T.ones_like(a) * 2 + T.zeros_like(a), lambda a: np.ones_like(a) * 2, False),
    ("fill/alloc", [vv], [v3], lambda v: T.alloc(v, 2, 3), lambda v: np.tile(v, (2, 1)), True),
    ("matrix_inverse", [m], [S], lambda a: nlinalg.matrix_inverse(a), lambda a: np.linalg.inv(a), True),
    ("det", [m], [S], lambda a: nlinalg.det(a), lambda a: np.linalg.det(a), True),
    ("cholesky", [m], [S], lambda a: slinalg.cholesky(a), lambda a: np.linalg.cholesky(a), True),
    ("solve", [m], [S], lambda a: slinalg.solve(a, T.ones((3,), dtype='float64')), lambda a: np.linalg.solve(a, np.ones(3)), True),
    ("eigh values", [m], [S], lambda a: nlinalg.eigh(a)[0], lambda a: np.linalg.eigh(a)[0], True),
    ("pinv", [m], [A], lambda a: nlinalg.pinv(a), lambda a: np.linalg.pinv(a), False),
    ("norm via sqrt(sum sqr)", [m], [A], lambda a: T.sqrt(T.sqr(a).sum()), lambda a: np.sqrt((a ** 2).sum()), True),
    ("abs/sgn/maximum", [m], [A - 1], lambda a: abs(a) + T.maximum(a, 0.1) * T.minimum(a, 0.2), lambda a: np.abs(a) + np.maximum(a, .1) * np.minimum(a, .2), True),
    ("pow/exp/log1p/expm1", [m], [A], lambda a: a ** 2.5 + T.log1p(a) + T.expm1(a * 0.1), lambda a: a ** 2.5 + np.log1p(a) + np.expm1(a * .1), True),
    ("trig", [vv], [v3], lambda v: T.sin(v) * T.cos(v) + T.arctan(v) + T.arcsin(v / 2) + T.cosh(v), lambda v: np.sin(v) * np.cos(v) + np.arctan(v) + np.arcsin(v / 2) + np.cosh(v), True),
    ("erf/erfc/gamma", [vv], [v3], lambda v: T.erf(v) + T.erfc(v) * T.gamma(v + 1) + T.gammaln(v + 1), None, True),
    ("nnet.relu alpha", [m], [A - 1], lambda a: T.nnet.relu(a, alpha=0.1), lambda a: np.where(a > 0, a, 0.1 * a), True),
    ("nnet.elu", [m], [A - 1], lambda a: T.nnet.elu(a), lambda a: np.where(a > 0, a, np.exp(a) - 1), True),
    ("nnet.softsign", [m], [A - 1], lambda a: T.nnet.softsign(a), lambda a: a / (1 + np.abs(a)), True),
    ("nnet.hard_sigmoid", [m], [A - 1], lambda a: T.nnet.hard_sigmoid(a), lambda a: np.clip(0.2 * a + 0.5, 0, 1), False),
    ("nnet.ultra_fast_sigmoid approx", [m], [A - 1], lambda a: T.nnet.ultra_fast_sigmoid(a) * 0 + T.nnet.sigmoid(a), lambda a: 1 / (1 + np.exp(-a)), True),
    ("nnet.logsoftmax", [m], [A], lambda a: T.nnet.logsoftmax(a), lambda a: a - a.max(1, keepdims=True) - np.log(np.exp(a - a.max(1, keepdims=True)).sum(1, keepdims=True)), True),
    ("nnet.softmax of a vector (Theano pads to a 1xN matrix)", [vv], [v3], lambda v: T.nnet.softmax(v), lambda v: (np.exp(v) / np.exp(v).sum())[None], True),
    ("to_one_hot", [T.ivector('iv')], [np.array([0, 2, 1], dtype='int32')], lambda i: extra_ops.to_one_hot(i, 4), lambda i: np.eye(4)[i], False),
    ("nonzero_values", [vv], [np.array([0., 1., 0., 2.])], lambda v: v.nonzero_values(), lambda v: v[v != 0], False),
    ("where via switch with broadcasting", [m, vv], [A, v3], lambda a, v: T.switch(a > 1, a, v[:, None]), lambda a, v: np.where(a > 1, a, v[:, None]), True),
    ("clip", [m], [A], lambda a: T.clip(a, 0.8, 1.2), lambda a: np.clip(a, 0.8, 1.2), True),
    ("mean with dtype and axis=None", [m], [A], lambda a: T.mean(a), lambda a: a.mean(), True),
    ("var with ddof? (Theano has no ddof; corrected=False)", [m], [A], lambda a: T.var(a, axis=1), lambda a: a.var(1), True),
    ("shape_padleft/right", [vv], [v3], lambda v: T.shape_padright(T.shape_padleft(v)), lambda v: v[None, :, None], True),
    ("addbroadcast+broadcast add", [m], [A[:1]], lambda a: T.addbroadcast(a, 0) + T.ones((3, 4)), lambda a: a + np.ones((3, 4)), True),
    ("unbroadcast", [vv], [v3], lambda v: T.unbroadcast(v.dimshuffle('x', 0), 0) * 2, lambda v: v[None] * 2, True),
    ("arange float step", [], [], lambda: T.arange(0., 1., 0.25), lambda: np.arange(0., 1., .25), False),
    ("mgrid", [], [], lambda: T.mgrid[0:2, 0:3], lambda: np.mgrid[0:2, 0:3], False),
    ("linspace-like via arange/cast", [], [], lambda: T.cast(T.arange(4), 'float64') / 3, lambda: np.arange(4) / 3., False),
    ("squeeze (Theano removes only broadcastable dims)", [t3], [X3[:, :1]], lambda t: T.squeeze(T.addbroadcast(t, 1)) + T.squeeze(t).sum(), lambda t: t.squeeze() + t.sum(), True),
    ("take", [m], [A], lambda a: a.take([2, 0], axis=1), lambda a: a.take([2, 0], axis=1), True),
    ("round/floor/int cast chain", [m], [A * 3], lambda a: T.cast(T.floor(a), 'int64') + T.iround(a), lambda a: np.floor(a).astype('int64') + np.round(a).astype('int64'), False),
    ("all/any", [m], [A], lambda a: T.stack([T.all(a > 0.4), T.any(a > 1.4)]), lambda a: np.array([np.all(a > .4), np.any(a > 1.4)]), False),
    ("isnan/isinf", [vv], [np.array([np.nan, np.inf, 1.])], lambda v: T.isnan(v) + 2 * T.isinf(v), lambda v: np.isnan(v) + 2 * np.isinf(v), False),
    ("bitwise and/or", [T.ivector('iv2')], [np.array([1, 2, 3], dtype='int32')], lambda i: (i & 1) | (i ^ 2), lambda i: (i & 1) | (i ^ 2), False),
    ("chained inc_subtensor on a slice step", [vv], [v3], lambda v: T.inc_subtensor(v[::2], 10.), lambda v: v + np.array([10, 0, 10]), True),
]

for name, ins, vals, build, ref, do_grad in cases:
    try:
        expr = build(*ins)
        f = theano.function(ins, expr)
        got = np.asarray(f(*vals))
        if ref is not None:
            exp = np.asarray(ref(*vals))
            ok = got.shape == exp.shape and np.allclose(got, exp, rtol=1e-6, atol=1e-8)
            check(ok, "%s: got %s %r expected %s %r" % (name, got.shape, got.ravel()[:5], exp.shape, exp.ravel()[:5]))
        if do_grad and ins:
            wv = rng.rand(*got.shape) if got.ndim else np.array(1.3)
            cost = T.sum(expr * wv)
            gfn = theano.function(ins, T.grad(cost, ins[0]))
            cf = theano.function(ins, cost)
            num = fd_grad(lambda x0: float(cf(x0, *vals[1:])), np.array(vals[0], dtype='float64'))
            gg = gfn(*vals)
            check(np.allclose(gg, num, rtol=1e-4, atol=1e-6),
                  "%s: gradient mismatch, max abs diff %g" % (name, np.abs(np.asarray(gg) - num).max()))
    except Exception as e:
        check(False, "%s raised %s: %s" % (name, type(e).__name__, str(e).splitlines()[0][:200] if str(e) else ''))

if FAIL:
    print("%d FAILURES" % len(FAIL))
    sys.exit(1)
print("OK t14_tensor_ops")
