"""Small GAN on 1-D data: two optimizers (RMSprop for D, Adam for G) in two compiled functions
updating disjoint parameter sets; noise from MRG_RandomStreams inside the graph;
disconnected_grad; checks vs numpy forward and finite differences."""
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
rng = np.random.RandomState(3)
srng = MRG_RandomStreams(seed=234)
def sh(v, n): return theano.shared(np.asarray(v, dtype=fX), name=n)

nz, nh = 2, 16
G = [sh(rng.randn(nz, nh) * 0.5, 'gW1'), sh(np.zeros(nh), 'gb1'), sh(rng.randn(nh, 1) * 0.5, 'gW2'), sh([0.], 'gb2')]
D = [sh(rng.randn(1, nh) * 0.5, 'dW1'), sh(np.zeros(nh), 'db1'), sh(rng.randn(nh, 1) * 0.5, 'dW2'), sh([0.], 'db2')]

def gen(z, P): return T.dot(T.nnet.relu(T.dot(z, P[0]) + P[1]), P[2]) + P[3]
def disc(x, P): return T.nnet.sigmoid(T.dot(T.tanh(T.dot(x, P[0]) + P[1]), P[2]) + P[3]).flatten()

x_real = T.matrix('x_real'); z_in = T.matrix('z'); n = T.iscalar('n')

def losses(z):
    fake = gen(z, G)
    d_real, d_fake = disc(x_real, D), disc(fake, D)
    d_loss = -T.mean(T.log(d_real + 1e-8)) - T.mean(T.log(1 - d_fake + 1e-8))
    g_loss = -T.mean(T.log(d_fake + 1e-8))   # non-saturating
    return fake, d_loss, g_loss

def rmsprop(cost, params, lr=0.01, rho=0.9, eps=1e-6):
    gs = T.grad(cost, params)
    upd = []
    for p, g in zip(params, gs):
        acc = theano.shared(p.get_value() * 0.)
        acc_new = rho * acc + (1 - rho) * g ** 2
        upd += [(acc, acc_new), (p, p - lr * g / T.sqrt(acc_new + eps))]
    return upd

def adam(cost, params, lr=0.005, b1=0.5, b2=0.999, e=1e-8):
    gs = T.grad(cost, params)
    t = theano.shared(np.asarray(0., fX)); t1 = t + 1
    upd = [(t, t1)]
    for p, g in zip(params, gs):
        m = theano.shared(p.get_value() * 0.); v = theano.shared(p.get_value() * 0.)
        m1 = b1 * m + (1 - b1) * g; v1 = b2 * v + (1 - b2) * g ** 2
        upd += [(m, m1), (v, v1), (p, p - lr * (m1 / (1 - b1 ** t1)) / (T.sqrt(v1 / (1 - b2 ** t1)) + e))]
    return upd

# --- deterministic check path (z given) ---------------------------------------------------
fake_z, d_loss_z, g_loss_z = losses(z_in)
# D's loss must not send gradient into G: using disconnected_grad on fake
d_loss_dc = -T.mean(T.log(disc(x_real, D) + 1e-8)) - T.mean(T.log(1 - disc(theano.gradient.disconnected_grad(fake_z), D) + 1e-8))
f_check = theano.function([x_real, z_in], [fake_z, d_loss_z, g_loss_z] + T.grad(d_loss_z, D) + T.grad(g_loss_z, G))
gG_dc = T.grad(d_loss_dc, G, disconnected_inputs='ignore')
f_dc = theano.function([x_real, z_in], gG_dc, on_unused_input='ignore')

def np_fwd(Gp, Dp, xr, z):
    relu = lambda a: np.maximum(a, 0)
    s = lambda a: 1 / (1 + np.exp(-a))
    fake = relu(z.dot(Gp[0]) + Gp[1]).dot(Gp[2]) + Gp[3]
    dd = lambda x: s(np.tanh(x.dot(Dp[0]) + Dp[1]).dot(Dp[2]) + Dp[3]).ravel()
    dr, df = dd(xr), dd(fake)
    return fake, -np.mean(np.log(dr + 1e-8)) - np.mean(np.log(1 - df + 1e-8)), -np.mean(np.log(df + 1e-8))

xr = (rng.randn(12, 1) * 0.5 + 3.0).astype(fX); zv = rng.randn(12, nz).astype(fX)
Gv = [p.get_value() for p in G]; Dv = [p.get_value() for p in D]
out = f_check(xr, zv)
ref = np_fwd(Gv, Dv, xr, zv)
close(out[0], ref[0], "generator output"); close(out[1], ref[1], "d_loss"); close(out[2], ref[2], "g_loss")
eps = 1e-6
for which, Pv, goff, lidx in [('D', Dv, 3, 1), ('G', Gv, 7, 2)]:
    for k in range(4):
        for _ in range(2):
            ix = tuple(rng.randint(0, s) for s in Pv[k].shape)
            P1 = [q.copy() for q in Pv]; P1[k][ix] += eps
            P2 = [q.copy() for q in Pv]; P2[k][ix] -= eps
            if which == 'D':
                fd = (np_fwd(Gv, P1, xr, zv)[lidx] - np_fwd(Gv, P2, xr, zv)[lidx]) / (2 * eps)
            else:
                fd = (np_fwd(P1, Dv, xr, zv)[lidx] - np_fwd(P2, Dv, xr, zv)[lidx]) / (2 * eps)
            close(out[goff + k][ix], fd, "grad %s param %d %s" % (which, k, ix), rtol=1e-4, atol=1e-7)
for g in f_dc(xr, zv):
    close(g, np.zeros_like(g), "disconnected_grad blocks grad into G")

# --- training with noise drawn in-graph ------------------------------------------------------
z_s = srng.normal((n, nz), dtype=fX)
fake_s, d_loss_s, g_loss_s = losses(z_s)
d_train = theano.function([x_real, n], d_loss_s, updates=rmsprop(d_loss_s, D))
g_train = theano.function([n], g_loss_s, updates=adam(g_loss_s, G), givens={x_real: T.unbroadcast(T.zeros((1, 1)), 0, 1)},
                          on_unused_input='ignore')
sample = theano.function([n], fake_s)
# with a fixed noise input, losses on a fixed batch: D steps (G fixed) decrease D loss
eval_d = theano.function([x_real, z_in], d_loss_z)
eval_g = theano.function([z_in], g_loss_z)
zfix = rng.randn(64, nz).astype(fX); xfix = (rng.randn(64, 1) * 0.5 + 3.0).astype(fX)
G_before = [p.get_value() for p in G]
d0 = eval_d(xfix, zfix)
for _ in range(30):
    d_train((rng.randn(64, 1) * 0.5 + 3.0).astype(fX), 64)
d1 = eval_d(xfix, zfix)
print("D-only training: d_loss", d0, "->", d1)
check(d1 < d0, "D training did not decrease D loss")
for a, b in zip(G_before, G):
    close(b.get_value(), a, "d_train leaves G params untouched")
D_before = [p.get_value() for p in D]
g0 = eval_g(zfix)
for _ in range(30):
    g_train(64)
g1 = eval_g(zfix)
print("G-only training: g_loss", g0, "->", g1)
check(g1 < g0, "G training did not decrease G loss")
for a, b in zip(D_before, D):
    close(b.get_value(), a, "g_train leaves D params untouched")
# alternate training; generated mean should approach 3.0
m0 = float(sample(500).mean())
for it in range(300):
    d_train((rng.randn(64, 1) * 0.5 + 3.0).astype(fX), 64)
    g_train(64)
m1 = float(sample(500).mean())
print("generated mean", m0, "->", m1)
check(abs(m1 - 3.0) < abs(m0 - 3.0) and abs(m1 - 3.0) < 0.8, "generator mean did not approach data mean")
# samples differ between calls (rng state updates) but are reproducible after reseed
s1, s2 = sample(5), sample(5)
check(not np.allclose(s1, s2), "MRG noise changes between calls")
srng.seed(99); a1 = sample(5); srng.seed(99); a2 = sample(5)
close(a1, a2, "MRG reseed reproducible")

if FAIL:
    print("%d FAILURES" % len(FAIL)); sys.exit(1)
print("OK p05_gan")
