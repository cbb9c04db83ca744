"""Dropout MLP with MRG_RandomStreams: train fn applies masks (rng state advances), eval fn uses the
scaled deterministic path; no_default_updates freezes the rng; reproducibility via seed and via
get_value/set_value of rstate; masks inside scan; checks against numpy."""
import sys
import numpy as np
import hypatia as theano
import hypatia.tensor as T
from hypatia.sandbox.rng_mrg import MRG_RandomStreams

FAIL = []
def check(c, m):
    if not c:
        FAIL.append(m); print("FAIL:", m)
def close(a, b, m, rtol=1e-6, atol=1e-8):
    a, b = np.asarray(a), np.asarray(b)
    check(a.shape == b.shape and np.allclose(a, b, rtol=rtol, atol=atol),
          "%s: %s vs %s maxdiff %s" % (m, a.shape, b.shape, np.abs(a - b).max() if a.shape == b.shape else '-'))
fX = theano.config.floatX
rng = np.random.RandomState(5)
srng = MRG_RandomStreams(seed=1234)

def dropout(h, p, train):
    if train:
        mask = srng.binomial(n=1, p=1 - p, size=h.shape, dtype=fX)
        return h * mask / (1 - p), mask
    return h, None

# ---- 1. mask statistics and exposure ----------------------------------------------------
x = T.matrix('x')
hd, mask = dropout(x, 0.3, True)
f_mask = theano.function([x], [hd, mask])
X = rng.rand(200, 50) + 0.5
a1, m1 = f_mask(X)
a2, m2 = f_mask(X)
check(set(np.unique(m1)) <= {0.0, 1.0}, "mask is binary")
check(abs(m1.mean() - 0.7) < 0.02, "keep prob ~0.7 (%s)" % m1.mean())
close(a1, X * m1 / 0.7, "dropout output = x*mask/(1-p)")
check(not np.array_equal(m1, m2), "masks change between calls (default updates)")
# no_default_updates=True: rng state not advanced -> same mask each call
f_frozen = theano.function([x], mask, no_default_updates=True)
b1, b2 = f_frozen(X), f_frozen(X)
close(b1, b2, "no_default_updates=True freezes rng")
# the frozen fn does not advance state used by the other fn
st = [s.get_value() for s in srng.state_updates and [u[0] for u in srng.state_updates]]
f_frozen(X)
st2 = [u[0].get_value() for u in srng.state_updates]
for s_, t_ in zip(st, st2):
    close(s_, t_, "frozen fn left rstate unchanged")
# list form of no_default_updates
rstate_vars = [u[0] for u in srng.state_updates]
f_list = theano.function([x], mask, no_default_updates=rstate_vars)
close(f_list(X), f_list(X), "no_default_updates=[rstates] freezes too")
# explicit state save/restore reproduces the mask
saved = [v.get_value() for v in rstate_vars]
c1 = f_mask(X)[1]
for v, s in zip(rstate_vars, saved):
    v.set_value(s)
c2 = f_mask(X)[1]
close(c1, c2, "restoring rstate reproduces mask")
# reseeding reproduces
srng.seed(77); d1 = f_mask(X)[1]; srng.seed(77); d2 = f_mask(X)[1]
close(d1, d2, "srng.seed reproducible")

# ---- 2. dropout MLP training with eval function --------------------------------------------
N, D, H, C = 120, 10, 32, 2
Xd = rng.randn(N, D); Yd = (Xd[:, 0] + Xd[:, 1] * Xd[:, 2] > 0).astype('int32')
y = T.ivector('y')
W1 = theano.shared(rng.randn(D, H) * 0.3, name='W1'); b1 = theano.shared(np.zeros(H), name='b1')
W2 = theano.shared(rng.randn(H, C) * 0.3, name='W2'); b2 = theano.shared(np.zeros(C), name='b2')
params = [W1, b1, W2, b2]
def net(train):
    xi, _ = dropout(x, 0.1, train)
    h = T.tanh(T.dot(xi, W1) + b1)
    h, _ = dropout(h, 0.5, train)
    return T.nnet.softmax(T.dot(h, W2) + b2)
p_tr, p_te = net(True), net(False)
cost_tr = T.nnet.categorical_crossentropy(p_tr, y).mean()
cost_te = T.nnet.categorical_crossentropy(p_te, y).mean()
gr = T.grad(cost_tr, params)
train = theano.function([x, y], cost_tr, updates=[(p, p - 0.3 * g) for p, g in zip(params, gr)])
evaluate = theano.function([x, y], [cost_te, T.mean(T.eq(T.argmax(p_te, 1), y))])
# eval is deterministic and matches numpy
def np_eval():
    h = np.tanh(Xd @ W1.get_value() + b1.get_value()); z = h @ W2.get_value() + b2.get_value()
    z -= z.max(1, keepdims=True); p = np.exp(z) / np.exp(z).sum(1, keepdims=True)
    return -np.log(p[np.arange(N), Yd]).mean()
e0 = evaluate(Xd, Yd)
close(e0[0], np_eval(), "eval cost vs numpy")
close(evaluate(Xd, Yd)[0], e0[0], "eval deterministic")
check(len(train.maker.fgraph.inputs) >= 0 if hasattr(train, 'maker') else True, "maker")
for ep in range(150):
    train(Xd, Yd)
e1 = evaluate(Xd, Yd)
print("dropout MLP eval cost", e0[0], "->", e1[0], "acc", e0[1], "->", e1[1])
check(e1[0] < e0[0] * 0.7, "dropout training did not reduce eval cost")
close(e1[0], np_eval(), "eval cost vs numpy after training")

# gradient check of the train cost at fixed rng state: rerun the graph with the same mask
# (restore state) and compare grads to finite differences of the same-mask cost
f_cost_grad = theano.function([x, y], [cost_tr, T.grad(cost_tr, W2)])
rstate_vars = [u[0] for u in srng.state_updates]
saved = [v.get_value() for v in rstate_vars]
def cost_at(W2v):
    old = W2.get_value(); W2.set_value(W2v)
    for v, s in zip(rstate_vars, saved):
        v.set_value(s)
    c, g = f_cost_grad(Xd, Yd)
    W2.set_value(old)
    return c, g
W2v = W2.get_value()
_, g = cost_at(W2v)
eps = 1e-6
for ix in [(0, 0), (5, 1), (31, 0)]:
    A = W2v.copy(); A[ix] += eps; Bm = W2v.copy(); Bm[ix] -= eps
    fd = (cost_at(A)[0] - cost_at(Bm)[0]) / (2 * eps)
    close(g[ix], fd, "grad W2%s with fixed mask vs FD" % (ix,), rtol=1e-5, atol=1e-8)

# ---- 3. random masks inside scan (MRG in scan body): updates returned by scan -------------
h0 = T.vector('h0')
def step(hp):
    m = srng.binomial(size=hp.shape, p=0.5, dtype=fX)
    return hp * m + 1.0, m
(hs, ms), upd = theano.scan(step, outputs_info=[h0, None], n_steps=6)
check(len(upd) > 0, "scan returns rng updates")
f_scan = theano.function([h0], [hs, ms], updates=upd)
H0 = np.arange(20.)
hsv, msv = f_scan(H0)
hp = H0.copy(); ref = []
for t in range(6):
    hp = hp * msv[t] + 1.0; ref.append(hp)
close(hsv, np.array(ref), "scan with in-body random mask vs numpy replay")
hsv2, msv2 = f_scan(H0)
check(not np.array_equal(msv, msv2), "scan rng updates advance state")
check(not all(np.array_equal(msv[0], msv[t]) for t in range(1, 6)), "masks differ across scan steps")

if FAIL:
    print("%d FAILURES" % len(FAIL)); sys.exit(1)
print("OK p07_dropout")
