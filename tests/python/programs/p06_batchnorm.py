"""Batch normalization training with running averages as updates (T.nnet.bn.batch_normalization_train
/ _test), per-activation (2-D) and spatial (4-D conv) axes; checks vs numpy and FD; trains an MLP."""
import sys
import numpy as np
import hypatia as theano
import hypatia.tensor as T
from hypatia.tensor.nnet import bn

FAIL = []
def check(c, m):
    if not c:
        FAIL.append(m); print("FAIL:", m)
def close(a, b, m, rtol=1e-6, atol=1e-8):
    a, b = np.asarray(a), np.asarray(b)
    check(a.shape == b.shape and np.allclose(a, b, rtol=rtol, atol=atol),
          "%s: %s vs %s maxdiff %s" % (m, a.shape, b.shape, np.abs(a - b).max() if a.shape == b.shape else '-'))
fX = theano.config.floatX
rng = np.random.RandomState(11)
EPS = 1e-4

# ---------------- 1. per-activation, explicit function outputs ------------------------------
x = T.matrix('x'); gamma = T.vector('gamma'); beta = T.vector('beta')
rm = T.vector('rm'); rv = T.vector('rv')
out, mean, invstd, new_rm, new_rv = bn.batch_normalization_train(
    x, gamma, beta, 'per-activation', EPS, 0.1, rm, rv)
f = theano.function([x, gamma, beta, rm, rv], [out, mean, invstd, new_rm, new_rv])
X = rng.randn(8, 5) * 3 + 1; G = rng.rand(5) + 0.5; B = rng.randn(5); RM = rng.randn(5); RV = rng.rand(5) + 0.5
o = f(X, G, B, RM, RV)
mu = X.mean(0); var = X.var(0); inv = 1 / np.sqrt(var + EPS)
close(o[0], (X - mu) * inv * G + B, "bn train output"); close(o[1], mu, "bn mean"); close(o[2], inv, "bn invstd")
close(o[3], 0.9 * RM + 0.1 * mu, "running mean")
close(o[4], 0.9 * RV + 0.1 * var * 8 / 7., "running var (unbiased)")
# test mode
ot = bn.batch_normalization_test(x, gamma, beta, rm, rv, 'per-activation', EPS)
close(theano.function([x, gamma, beta, rm, rv], ot)(X, G, B, RM, RV), (X - RM) / np.sqrt(RV + EPS) * G + B, "bn test")
# 3-output form
o3 = bn.batch_normalization_train(x, gamma, beta, 'per-activation', EPS)
check(len(o3) == 3, "3 outputs without running averages")

# gradients wrt x, gamma, beta through the batch statistics vs FD
W = rng.randn(8, 5)
loss = (out * W).sum() + (mean ** 2).sum()
gx, gg, gb = T.grad(loss, [x, gamma, beta])
fg = theano.function([x, gamma, beta], [gx, gg, gb], givens={rm: T.zeros((5,)), rv: T.ones((5,))}, on_unused_input='ignore') \
    if False else theano.function([x, gamma, beta], [gx, gg, gb])
def np_loss(X, G, B):
    mu = X.mean(0); inv = 1 / np.sqrt(X.var(0) + EPS)
    return (((X - mu) * inv * G + B) * W).sum() + (mu ** 2).sum()
ag = fg(X, G, B)
eps = 1e-6
for name, arr, k in [('x', X, 0), ('gamma', G, 1), ('beta', B, 2)]:
    num = np.zeros_like(arr)
    for ix in np.ndindex(arr.shape):
        a = [X.copy(), G.copy(), B.copy()]; a[k][ix] += eps
        b = [X.copy(), G.copy(), B.copy()]; b[k][ix] -= eps
        num[ix] = (np_loss(*a) - np_loss(*b)) / (2 * eps)
    close(ag[k], num, "bn grad wrt %s" % name, rtol=1e-5, atol=1e-6)

# ---------------- 2. spatial on a 4-D conv output --------------------------------------------
x4 = T.tensor4('x4'); filt = T.tensor4('filt')
conv = T.nnet.conv2d(x4, filt, border_mode='half')
g4 = theano.shared(np.ones(3), name='g4'); b4 = theano.shared(np.zeros(3), name='b4')
rm4 = theano.shared(np.zeros(3), name='rm4'); rv4 = theano.shared(np.ones(3), name='rv4')
o4, m4, i4, nrm4, nrv4 = bn.batch_normalization_train(conv, g4, b4, 'spatial', EPS, 0.2, rm4, rv4)
f4 = theano.function([x4, filt], [o4, conv], updates=[(rm4, nrm4), (rv4, nrv4)])
X4 = rng.randn(2, 2, 5, 4); F4 = rng.randn(3, 2, 3, 3)
o4v, cv = f4(X4, F4)
# numpy conv (true convolution = flipped correlation), 'half' padding
Xp = np.pad(X4, ((0, 0), (0, 0), (1, 1), (1, 1)))
ref = np.zeros((2, 3, 5, 4)); Ff = F4[:, :, ::-1, ::-1]
for i in range(5):
    for j in range(4):
        ref[:, :, i, j] = np.einsum('bcij,fcij->bf', Xp[:, :, i:i + 3, j:j + 3], Ff)
close(cv, ref, "conv2d half")
mu4 = ref.mean((0, 2, 3)); var4 = ref.var((0, 2, 3))
close(o4v, (ref - mu4[None, :, None, None]) / np.sqrt(var4 + EPS)[None, :, None, None], "spatial bn output")
m = 2 * 5 * 4
close(rm4.get_value(), 0.2 * mu4, "spatial running mean update")
close(rv4.get_value(), 0.8 + 0.2 * var4 * m / (m - 1.), "spatial running var update")

# ---------------- 3. MLP with BN: train with running-average updates, evaluate in test mode --
N, D, Hh, C = 96, 6, 10, 3
Xd = rng.randn(N, D) * np.array([5, 0.1, 2, 1, 10, 3]) + 4
Wtrue = rng.randn(D, C)
Yd = np.argmax((Xd - Xd.mean(0)) / Xd.std(0) @ Wtrue, 1).astype('int32')
xs = T.matrix('xs'); ys = T.ivector('ys')
W1 = theano.shared(rng.randn(D, Hh) * 0.3); g1 = theano.shared(np.ones(Hh)); b1 = theano.shared(np.zeros(Hh))
rm1 = theano.shared(np.zeros(Hh)); rv1 = theano.shared(np.ones(Hh))
W2 = theano.shared(rng.randn(Hh, C) * 0.3); c2 = theano.shared(np.zeros(C))
params = [W1, g1, b1, W2, c2]
h_pre = T.dot(xs, W1)
h_bn, _, _, nrm1, nrv1 = bn.batch_normalization_train(h_pre, g1, b1, 'per-activation', EPS, 0.1, rm1, rv1)
p_tr = T.nnet.softmax(T.dot(T.nnet.relu(h_bn), W2) + c2)
cost = T.nnet.categorical_crossentropy(p_tr, ys).mean()
h_te = bn.batch_normalization_test(h_pre, g1, b1, rm1, rv1, 'per-activation', EPS)
p_te = T.nnet.softmax(T.dot(T.nnet.relu(h_te), W2) + c2)
cost_te = T.nnet.categorical_crossentropy(p_te, ys).mean()
gr = T.grad(cost, params)
upd = [(p, p - 0.2 * g) for p, g in zip(params, gr)] + [(rm1, nrm1), (rv1, nrv1)]
train = theano.function([xs, ys], cost, updates=upd)
test = theano.function([xs, ys], [cost_te, T.mean(T.eq(T.argmax(p_te, 1), ys))])
hist = []
rm_np, rv_np = np.zeros(Hh), np.ones(Hh)
for ep in range(40):
    for k in range(0, N, 32):
        Wv = W1.get_value()
        hb = Xd[k:k + 32] @ Wv
        rm_np = 0.9 * rm_np + 0.1 * hb.mean(0); rv_np = 0.9 * rv_np + 0.1 * hb.var(0) * 32 / 31.
        hist.append(float(train(Xd[k:k + 32], Yd[k:k + 32])))
close(rm1.get_value(), rm_np, "MLP running mean tracked across 120 updates")
close(rv1.get_value(), rv_np, "MLP running var tracked across 120 updates")
ct, acc = test(Xd, Yd)
print("bn mlp train cost", np.mean(hist[:3]), "->", np.mean(hist[-3:]), "test cost", ct, "acc", acc)
check(np.mean(hist[-3:]) < 0.5 * np.mean(hist[:3]), "BN MLP cost did not decrease")
check(acc > 0.8, "BN MLP test-mode accuracy too low")
# test mode value vs numpy
hv = Xd @ W1.get_value(); hn = (hv - rm1.get_value()) / np.sqrt(rv1.get_value() + EPS) * g1.get_value() + b1.get_value()
z = np.maximum(hn, 0) @ W2.get_value() + c2.get_value(); z -= z.max(1, keepdims=True)
pp = np.exp(z) / np.exp(z).sum(1, keepdims=True)
close(ct, -np.log(pp[np.arange(N), Yd]).mean(), "test-mode cost vs numpy")

if FAIL:
    print("%d FAILURES" % len(FAIL)); sys.exit(1)
print("OK p06_batchnorm")
