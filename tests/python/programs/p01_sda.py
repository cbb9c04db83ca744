"""Stacked denoising autoencoder: layer-wise pretraining then fine-tuning (DLT SdA.py style).
Several compiled functions share parameters; checks forward values vs numpy, grads vs FD."""
import sys
import numpy as np
import hypatia as theano
import hypatia.tensor as T
from hypatia.tensor.shared_randomstreams import RandomStreams

FAIL = []
def check(c, m):
    if not c:
        FAIL.append(m); print("FAIL:", m)
def close(a, b, m, rtol=1e-6, atol=1e-8):
    a, b = np.asarray(a), np.asarray(b)
    check(a.shape == b.shape and np.allclose(a, b, rtol=rtol, atol=atol),
          "%s: %s vs %s maxdiff %s" % (m, a.shape, b.shape, np.abs(a - b).max() if a.shape == b.shape else '-'))

fX = theano.config.floatX
rng = np.random.RandomState(0)
trng = RandomStreams(rng.randint(2 ** 30))
def sig(z): return 1 / (1 + np.exp(-z))

class HiddenLayer(object):
    def __init__(self, inp, n_in, n_out, W=None, b=None, activation=T.nnet.sigmoid):
        if W is None:
            W = theano.shared(np.asarray(rng.uniform(-4 * np.sqrt(6. / (n_in + n_out)), 4 * np.sqrt(6. / (n_in + n_out)),
                                                     (n_in, n_out)), dtype=fX), name='W', borrow=True)
        if b is None:
            b = theano.shared(np.zeros(n_out, dtype=fX), name='b', borrow=True)
        self.W, self.b = W, b
        self.output = activation(T.dot(inp, W) + b)
        self.params = [W, b]

class dA(object):
    def __init__(self, inp, n_vis, n_hid, W, bhid):
        self.W, self.b = W, bhid
        self.b_prime = theano.shared(np.zeros(n_vis, dtype=fX), name='bvis', borrow=True)
        self.W_prime = self.W.T
        self.x = inp
        self.params = [self.W, self.b, self.b_prime]
    def get_corrupted_input(self, inp, level):
        return trng.binomial(size=inp.shape, n=1, p=1 - level, dtype=fX) * inp
    def cost_updates(self, corruption_level, lr):
        tx = self.get_corrupted_input(self.x, corruption_level)
        y = T.nnet.sigmoid(T.dot(tx, self.W) + self.b)
        z = T.nnet.sigmoid(T.dot(y, self.W_prime) + self.b_prime)
        L = -T.sum(self.x * T.log(z) + (1 - self.x) * T.log(1 - z), axis=1)
        cost = T.mean(L)
        gp = T.grad(cost, self.params)
        return cost, [(p, p - lr * g) for p, g in zip(self.params, gp)]

class LogReg(object):
    def __init__(self, inp, n_in, n_out):
        self.W = theano.shared(np.zeros((n_in, n_out), dtype=fX), name='W', borrow=True)
        self.b = theano.shared(np.zeros(n_out, dtype=fX), name='b', borrow=True)
        self.p_y_given_x = T.nnet.softmax(T.dot(inp, self.W) + self.b)
        self.y_pred = T.argmax(self.p_y_given_x, axis=1)
        self.params = [self.W, self.b]
    def nll(self, y):
        return -T.mean(T.log(self.p_y_given_x)[T.arange(y.shape[0]), y])
    def errors(self, y):
        return T.mean(T.neq(self.y_pred, y))

n_in, sizes, n_out = 20, [16, 12], 3
N, bs = 60, 10
# data: 3 clusters of binary-ish vectors
centers = rng.rand(3, n_in)
ys = rng.randint(0, 3, N).astype('int32')
xs = np.clip(centers[ys] + 0.15 * rng.randn(N, n_in), 0, 1).astype(fX)
train_x = theano.shared(xs, borrow=True)
train_y = T.cast(theano.shared(ys.astype(fX), borrow=True), 'int32')

x = T.matrix('x'); y = T.ivector('y'); index = T.lscalar('index')
layers, das, params = [], [], []
inp, nin = x, n_in
for h in sizes:
    hl = HiddenLayer(inp, nin, h)
    layers.append(hl); params.extend(hl.params)
    das.append(dA(inp, nin, h, hl.W, hl.b))
    inp, nin = hl.output, h
logreg = LogReg(inp, nin, n_out)
params.extend(logreg.params)
finetune_cost = logreg.nll(y)

# pretraining functions
corruption = T.scalar('corruption'); lr = T.scalar('lr')
pretrain_fns = []
for da in das:
    cost, upd = da.cost_updates(corruption, lr)
    f = theano.function([index, theano.In(corruption, value=0.2), theano.In(lr, value=0.1)], cost, updates=upd,
                        givens={x: train_x[index * bs:(index + 1) * bs]})
    pretrain_fns.append(f)

# check layer-0 dA cost with corruption 0 vs numpy
W0, b0, bv0 = [p.get_value() for p in das[0].params]
xb = xs[0:bs]
yh = sig(xb.dot(W0) + b0); z = sig(yh.dot(W0.T) + bv0)
ref = np.mean(-np.sum(xb * np.log(z) + (1 - xb) * np.log(1 - z), axis=1))
c0 = pretrain_fns[0](0, corruption=0.0, lr=0.0)
close(c0, ref, "dA0 cost (no corruption, lr=0)")
close(das[0].W.get_value(), W0, "lr=0 update keeps W")

# pretraining: mean cost per epoch should decrease
for i, f in enumerate(pretrain_fns):
    hist = []
    for ep in range(15):
        hist.append(np.mean([f(k, lr=0.1) for k in range(N // bs)]))
    print("layer", i, "pretrain", hist[0], "->", hist[-1])
    check(hist[-1] < hist[0], "pretrain layer %d cost did not decrease %s" % (i, hist))
# shared param identity: hidden layer W is updated by pretraining
check(layers[0].W is das[0].W, "dA and hidden layer share W")

# finetune
gparams = T.grad(finetune_cost, params)
ft_lr = 0.1
train_fn = theano.function([index], finetune_cost,
                           updates=[(p, p - ft_lr * g) for p, g in zip(params, gparams)],
                           givens={x: train_x[index * bs:(index + 1) * bs], y: train_y[index * bs:(index + 1) * bs]})
err_fn = theano.function([], logreg.errors(y), givens={x: train_x, y: train_y})
cost_fn = theano.function([x, y], finetune_cost)
grad_fn = theano.function([x, y], gparams)

# numpy forward of finetune cost
def np_cost(pv, xb, yb):
    h = xb
    for l in range(len(sizes)):
        h = sig(h.dot(pv[2 * l]) + pv[2 * l + 1])
    a = h.dot(pv[-2]) + pv[-1]
    a = a - a.max(1, keepdims=True)
    p = np.exp(a) / np.exp(a).sum(1, keepdims=True)
    return -np.mean(np.log(p[np.arange(len(yb)), yb]))

# make logreg weights nonzero so grads flow everywhere
logreg.W.set_value(rng.randn(nin, n_out).astype(fX) * 0.3)
pv = [p.get_value() for p in params]
xb, yb = xs[:bs], ys[:bs]
close(cost_fn(xb, yb), np_cost(pv, xb, yb), "finetune cost forward")
gs = grad_fn(xb, yb)
eps = 1e-6
for pi in [0, 1, 2, 4, 5]:
    P = pv[pi]
    idxs = [tuple(rng.randint(0, s) for s in P.shape) for _ in range(3)]
    for ix in idxs:
        pp = [q.copy() for q in pv]; pp[pi][ix] += eps
        pm = [q.copy() for q in pv]; pm[pi][ix] -= eps
        fd = (np_cost(pp, xb, yb) - np_cost(pm, xb, yb)) / (2 * eps)
        close(gs[pi][ix], fd, "finetune grad param %d %s" % (pi, ix), rtol=1e-4, atol=1e-7)

e0 = err_fn()
hist = []
for ep in range(30):
    hist.append(np.mean([train_fn(k) for k in range(N // bs)]))
e1 = err_fn()
print("finetune", hist[0], "->", hist[-1], "err", e0, "->", e1)
check(hist[-1] < hist[0] * 0.7, "finetune cost did not decrease enough %s" % hist[::5])
check(e1 <= e0, "error did not improve")
# after finetune, pretraining fn sees the updated W (shared)
W0n = das[0].W.get_value()
check(not np.allclose(W0n, W0), "W changed through finetuning")
xb = xs[0:bs]
yh = sig(xb.dot(W0n) + das[0].b.get_value()); z = sig(yh.dot(W0n.T) + das[0].b_prime.get_value())
ref = np.mean(-np.sum(xb * np.log(z) + (1 - xb) * np.log(1 - z), axis=1))
close(pretrain_fns[0](0, corruption=0.0, lr=0.0), ref, "dA0 cost after finetune sees shared W")

if FAIL:
    print("%d FAILURES" % len(FAIL)); sys.exit(1)
print("OK p01_sda")
