"""LSTM over masked variable-length minibatches with theano.scan (DeepLearningTutorials lstm.py style),
mean pooling, softmax classifier, gradients vs finite differences, Adadelta-like updates,
plus a GRU and a bidirectional (go_backwards) encoder checked against numpy."""
import sys
from collections import OrderedDict
import numpy as np
import hypatia as theano
import hypatia.tensor as T

FAIL = []


def check(cond, msg):
    if not cond:
        FAIL.append(msg)
        print("FAIL:", msg)


def close(a, b, msg, rtol=1e-6, atol=1e-8):
    a = np.asarray(a)
    b = np.asarray(b)
    ok = a.shape == b.shape and np.allclose(a, b, rtol=rtol, atol=atol)
    check(ok, "%s: shapes %s vs %s; maxdiff %s" % (msg, a.shape, b.shape,
                                                  np.abs(a - b).max() if a.shape == b.shape else '-'))


config = theano.config
floatX = 'float64'
rng = np.random.RandomState(42)
dim, n_in, ydim = 5, 4, 3
nsteps, n_samples = 6, 4


def ortho(n, m):
    return rng.randn(n, m) * 0.3


tparams = OrderedDict()
tparams['lstm_W'] = theano.shared(np.concatenate([ortho(n_in, dim) for _ in range(4)], axis=1), name='lstm_W')
tparams['lstm_U'] = theano.shared(np.concatenate([ortho(dim, dim) for _ in range(4)], axis=1), name='lstm_U')
tparams['lstm_b'] = theano.shared(0.1 * rng.randn(4 * dim), name='lstm_b')
tparams['U'] = theano.shared(0.3 * rng.randn(dim, ydim), name='U')
tparams['b'] = theano.shared(np.zeros(ydim), name='b')


def _slice(_x, n, dim):
    if _x.ndim == 3:
        return _x[:, :, n * dim:(n + 1) * dim]
    return _x[:, n * dim:(n + 1) * dim]


def lstm_layer(tparams, state_below, mask):
    nsteps = state_below.shape[0]
    n_samples = state_below.shape[1] if state_below.ndim == 3 else 1

    def _step(m_, x_, h_, c_):
        preact = T.dot(h_, tparams['lstm_U'])
        preact += x_
        i = T.nnet.sigmoid(_slice(preact, 0, dim))
        f = T.nnet.sigmoid(_slice(preact, 1, dim))
        o = T.nnet.sigmoid(_slice(preact, 2, dim))
        c = T.tanh(_slice(preact, 3, dim))
        c = f * c_ + i * c
        c = m_[:, None] * c + (1. - m_)[:, None] * c_
        h = o * T.tanh(c)
        h = m_[:, None] * h + (1. - m_)[:, None] * h_
        return h, c

    state_below = (T.dot(state_below, tparams['lstm_W']) + tparams['lstm_b'])
    rval, updates = theano.scan(_step, sequences=[mask, state_below],
                                outputs_info=[T.alloc(np.asarray(0., dtype=floatX), n_samples, dim),
                                              T.alloc(np.asarray(0., dtype=floatX), n_samples, dim)],
                                name='lstm_layers', n_steps=nsteps)
    return rval[0]


x = T.tensor3('x', dtype=floatX)
mask = T.matrix('mask', dtype=floatX)
y = T.vector('y', dtype='int64')
proj = lstm_layer(tparams, x, mask)
proj = (proj * mask[:, :, None]).sum(axis=0)
proj = proj / mask.sum(axis=0)[:, None]
pred = T.nnet.softmax(T.dot(proj, tparams['U']) + tparams['b'])
off = 1e-8
cost = -T.log(pred[T.arange(n_samples), y] + off).mean()
params = list(tparams.values())
grads = T.grad(cost, wrt=params)
f_grad = theano.function([x, mask, y], [cost] + grads, name='f_grad')

lengths = [6, 3, 5, 1]
Xv = rng.randn(nsteps, n_samples, n_in)
Mv = np.zeros((nsteps, n_samples))
for j, L in enumerate(lengths):
    Mv[:L, j] = 1.
Yv = np.array([0, 2, 1, 2], dtype='int64')


def sig(a):
    return 1. / (1. + np.exp(-a))


def np_lstm_cost(P):
    W, Uh, bl, U, b = P
    sb = Xv.dot(W) + bl
    h = np.zeros((n_samples, dim))
    c = np.zeros((n_samples, dim))
    hs = []
    for t in range(nsteps):
        pre = h.dot(Uh) + sb[t]
        i = sig(pre[:, :dim]); f = sig(pre[:, dim:2 * dim]); o = sig(pre[:, 2 * dim:3 * dim])
        cc = np.tanh(pre[:, 3 * dim:])
        cn = f * c + i * cc
        m = Mv[t][:, None]
        cn = m * cn + (1 - m) * c
        hn = o * np.tanh(cn)
        hn = m * hn + (1 - m) * h
        h, c = hn, cn
        hs.append(h)
    hs = np.array(hs)
    pr = (hs * Mv[:, :, None]).sum(0) / Mv.sum(0)[:, None]
    a = pr.dot(U) + b
    e = np.exp(a - a.max(1, keepdims=True))
    p = e / e.sum(1, keepdims=True)
    return -np.log(p[np.arange(n_samples), Yv] + off).mean()


out = f_grad(Xv, Mv, Yv)
P0 = [p.get_value() for p in params]
close(out[0], np_lstm_cost(P0), "LSTM cost forward", rtol=1e-10)
eps = 1e-6
for k in range(len(P0)):
    fd = np.zeros_like(P0[k])
    for idx in np.ndindex(*P0[k].shape):
        Pp = [p.copy() for p in P0]
        Pp[k][idx] += eps
        cp = np_lstm_cost(Pp)
        Pp[k][idx] -= 2 * eps
        cm = np_lstm_cost(Pp)
        fd[idx] = (cp - cm) / (2 * eps)
    close(out[1 + k], fd, "LSTM grad %s vs finite differences" % params[k].name, rtol=1e-4, atol=1e-7)

# gradient w.r.t. the input sequence: zero where the mask is zero
gx = theano.function([x, mask, y], T.grad(cost, x))(Xv, Mv, Yv)
check(np.all(gx[Mv == 0] == 0), "grad wrt masked-out inputs must be exactly 0")
check(np.all(np.abs(gx[Mv == 1]).sum(-1) > 0), "grad wrt unmasked inputs must be nonzero")


# Adadelta (as in lstm.py) with shared gradient buffers: f_grad_shared / f_update split
def adadelta(lr, tparams, grads, x, mask, y, cost):
    zipped_grads = [theano.shared(p.get_value() * np.asarray(0., dtype=floatX), name='%s_grad' % k)
                    for k, p in tparams.items()]
    running_up2 = [theano.shared(p.get_value() * np.asarray(0., dtype=floatX), name='%s_rup2' % k)
                   for k, p in tparams.items()]
    running_grads2 = [theano.shared(p.get_value() * np.asarray(0., dtype=floatX), name='%s_rgrad2' % k)
                      for k, p in tparams.items()]
    zgup = [(zg, g) for zg, g in zip(zipped_grads, grads)]
    rg2up = [(rg2, 0.95 * rg2 + 0.05 * (g ** 2)) for rg2, g in zip(running_grads2, grads)]
    f_grad_shared = theano.function([x, mask, y], cost, updates=zgup + rg2up, name='adadelta_f_grad_shared')
    updir = [-T.sqrt(ru2 + 1e-6) / T.sqrt(rg2 + 1e-6) * zg
             for zg, ru2, rg2 in zip(zipped_grads, running_up2, running_grads2)]
    ru2up = [(ru2, 0.95 * ru2 + 0.05 * (ud ** 2)) for ru2, ud in zip(running_up2, updir)]
    param_up = [(p, p + ud) for p, ud in zip(tparams.values(), updir)]
    f_update = theano.function([lr], [], updates=ru2up + param_up, on_unused_input='ignore', name='adadelta_f_update')
    return f_grad_shared, f_update


lr = T.scalar(name='lr', dtype=floatX)
f_grad_shared, f_update = adadelta(lr, tparams, grads, x, mask, y, cost)
c_before = float(f_grad_shared(Xv, Mv, Yv))
close(c_before, out[0], "f_grad_shared cost")
# the first adadelta step computed in numpy
g0 = out[1:]
exp_params = [p - np.sqrt(1e-6) / np.sqrt(0.05 * g ** 2 + 1e-6) * g for p, g in zip(P0, g0)]
r = f_update(0.1)
check(r == [], "function with no outputs should return [] (got %r)" % (r,))
for p, e in zip(params, exp_params):
    close(p.get_value(), e, "adadelta first step %s" % p.name, rtol=1e-8, atol=1e-12)
costs = []
for it in range(300):
    costs.append(float(f_grad_shared(Xv, Mv, Yv)))
    f_update(0.1)
check(costs[-1] < 0.7 * costs[0], "LSTM adadelta training did not reduce cost: %r -> %r" % (costs[0], costs[-1]))

# ------------------------------------------------------------------ GRU + bidirectional encoder
Wz = theano.shared(0.4 * rng.randn(n_in, dim), name='Wz')
Uz = theano.shared(0.4 * rng.randn(dim, dim), name='Uz')
Wr = theano.shared(0.4 * rng.randn(n_in, dim), name='Wr')
Ur = theano.shared(0.4 * rng.randn(dim, dim), name='Ur')
Wh = theano.shared(0.4 * rng.randn(n_in, dim), name='Wh')
Uh = theano.shared(0.4 * rng.randn(dim, dim), name='Uh')
gru_params = [Wz, Uz, Wr, Ur, Wh, Uh]


def gru_step(x_t, m_t, h_tm1, Wz, Uz, Wr, Ur, Wh, Uh):
    z = T.nnet.sigmoid(T.dot(x_t, Wz) + T.dot(h_tm1, Uz))
    r = T.nnet.sigmoid(T.dot(x_t, Wr) + T.dot(h_tm1, Ur))
    hh = T.tanh(T.dot(x_t, Wh) + T.dot(r * h_tm1, Uh))
    h = (1 - z) * h_tm1 + z * hh
    return T.switch(m_t[:, None] > 0, h, h_tm1)


h0 = T.zeros((x.shape[1], dim), dtype=floatX)
h_fwd, _ = theano.scan(gru_step, sequences=[x, mask], outputs_info=h0, non_sequences=gru_params, strict=True)
h_bwd, _ = theano.scan(gru_step, sequences=[x, mask], outputs_info=h0, non_sequences=gru_params,
                       go_backwards=True, strict=True)
enc = T.concatenate([h_fwd, h_bwd[::-1]], axis=2)
loss = T.sum(enc ** 2)
gru_grads = T.grad(loss, gru_params)
f_gru = theano.function([x, mask], [enc, loss] + gru_grads)


def np_gru(P, xs, ms):
    Wz, Uz, Wr, Ur, Wh, Uh = P
    h = np.zeros((xs.shape[1], dim))
    out = []
    for t in range(xs.shape[0]):
        z = sig(xs[t].dot(Wz) + h.dot(Uz))
        r = sig(xs[t].dot(Wr) + h.dot(Ur))
        hh = np.tanh(xs[t].dot(Wh) + (r * h).dot(Uh))
        hn = (1 - z) * h + z * hh
        h = np.where(ms[t][:, None] > 0, hn, h)
        out.append(h)
    return np.array(out)


def np_enc(P):
    f = np_gru(P, Xv, Mv)
    b = np_gru(P, Xv[::-1], Mv[::-1])[::-1]
    return np.concatenate([f, b], axis=2)


res = f_gru(Xv, Mv)
G0 = [p.get_value() for p in gru_params]
close(res[0], np_enc(G0), "bidirectional GRU encoder (go_backwards) forward", rtol=1e-10)
for k in range(len(G0)):
    fd = np.zeros_like(G0[k])
    for idx in np.ndindex(*G0[k].shape):
        Pp = [p.copy() for p in G0]
        Pp[k][idx] += eps
        cp = np.sum(np_enc(Pp) ** 2)
        Pp[k][idx] -= 2 * eps
        cm = np.sum(np_enc(Pp) ** 2)
        fd[idx] = (cp - cm) / (2 * eps)
    close(res[2 + k], fd, "GRU grad %s vs finite differences" % gru_params[k].name, rtol=1e-4, atol=1e-7)

if FAIL:
    print("%d FAILURES" % len(FAIL))
    sys.exit(1)
print("OK t06_lstm")
