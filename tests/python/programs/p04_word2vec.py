"""word2vec skip-gram with negative sampling: sparse row updates of embedding matrices via
T.inc_subtensor on advanced-indexed rows (duplicates must accumulate), T.set_subtensor for
renormalizing rows, grad w.r.t. a subtensor, advanced_inc_subtensor1."""
import sys
import numpy as np
import hypatia as theano
import hypatia.tensor as T

FAIL = []; GAPS = []
def check(c, m):
    if not c:
        FAIL.append(m); print("FAIL:", m)
def close(a, b, m, rtol=1e-6, atol=1e-8):
    a, b = np.asarray(a), np.asarray(b)
    check(a.shape == b.shape and np.allclose(a, b, rtol=rtol, atol=atol),
          "%s: %s vs %s maxdiff %s" % (m, a.shape, b.shape, np.abs(a - b).max() if a.shape == b.shape else '-'))
fX = theano.config.floatX
rng = np.random.RandomState(7)

# ---- 1. basic inc/set subtensor semantics with duplicates -------------------------------
M = T.matrix('M'); idx = T.ivector('idx'); R = T.matrix('R')
f_inc = theano.function([M, idx, R], T.inc_subtensor(M[idx], R))
f_set = theano.function([M, idx, R], T.set_subtensor(M[idx], R))
Mv = rng.randn(5, 3); iv = np.array([1, 3, 1, 1, 0], 'int32'); Rv = rng.randn(5, 3)
ref = Mv.copy(); np.add.at(ref, iv, Rv)
close(f_inc(Mv, iv, Rv), ref, "inc_subtensor with duplicate indices accumulates")
iu = np.array([4, 2, 0], 'int32'); Ru = rng.randn(3, 3)
ref = Mv.copy(); ref[iu] = Ru
close(f_set(Mv, iu, Ru), ref, "set_subtensor rows")
close(Mv, f_inc(Mv, iv, Rv) * 0 + Mv, "input not modified in place")
# broadcasting row increment and negative index
r = T.vector('r')
f_incb = theano.function([M, idx, r], T.inc_subtensor(M[idx], r))
rv = rng.randn(3); ref = Mv.copy(); np.add.at(ref, [-1, 2, -1], rv)
close(f_incb(Mv, np.array([-1, 2, -1], 'int32'), rv), ref, "inc_subtensor broadcast row, negative idx")
# inc into a column slice of selected rows: M[idx, 1:] (advanced + basic)
f_inc2 = theano.function([M, idx, R], T.inc_subtensor(M[idx, 1:], R))
Rv2 = rng.randn(5, 2); ref = Mv.copy(); np.add.at(ref, (iv[:, None], np.arange(1, 3)[None, :]), Rv2)
close(f_inc2(Mv, iv, Rv2), ref, "inc_subtensor M[idx, 1:] with dups")
# gradient of set/inc subtensor
s_out = (T.set_subtensor(M[iu], R[:3]) ** 2).sum()
gM, gR = T.grad(s_out, [M, R])
fg = theano.function([M, R], [gM, gR])
a, b = fg(Mv, Rv)
refM = 2 * Mv; refM[iu] = 0; refR = np.zeros_like(Rv); refR[:3] = 2 * Ru * 0 + 2 * Rv[:3]
close(a, refM, "grad set_subtensor wrt M"); close(b, refR, "grad set_subtensor wrt R")
# advanced_inc_subtensor1 API (theano.tensor.advanced_inc_subtensor1 / subtensor module)
try:
    from hypatia.tensor.subtensor import advanced_inc_subtensor1, advanced_set_subtensor1
    close(theano.function([M, idx, R], advanced_inc_subtensor1(M, R, idx))(Mv, iv, Rv),
          f_inc(Mv, iv, Rv), "advanced_inc_subtensor1")
except ImportError as e:
    GAPS.append("hypatia.tensor.subtensor.advanced_inc_subtensor1: %s" % e)
if not hasattr(T, 'advanced_inc_subtensor1'):
    GAPS.append("T.advanced_inc_subtensor1 missing")

# ---- 2. skip-gram negative sampling ------------------------------------------------------
V, D, K = 30, 8, 4
# corpus: words in 3 topics; context words drawn from same topic
topics = np.arange(V) % 3
def sample_pairs(n):
    c = rng.randint(0, V, n)
    o = np.array([rng.choice(np.where(topics == topics[w])[0]) for w in c])
    neg = rng.randint(0, V, (n, K))
    return c.astype('int32'), o.astype('int32'), neg.astype('int32')

Win = theano.shared((rng.rand(V, D) - 0.5).astype(fX), name='Win')
Wout = theano.shared(np.zeros((V, D), fX) + 0.3 * rng.randn(V, D), name='Wout')
cen = T.ivector('cen'); ctx = T.ivector('ctx'); neg = T.imatrix('neg'); lr = T.scalar('lr')
vc = Win[cen]                       # (n, D) subtensor
uo = Wout[ctx]                      # (n, D)
un = Wout[neg.flatten()].reshape((neg.shape[0], neg.shape[1], D))  # (n, K, D)
pos = T.log(T.nnet.sigmoid((vc * uo).sum(1)))
negs = T.log(T.nnet.sigmoid(-(un * vc[:, None, :]).sum(2))).sum(1)
loss = -(pos + negs).mean()
# gradients w.r.t. subtensors (the usual sparse trick)
g_vc, g_uo, g_un = T.grad(loss, [vc, uo, un])
updates = [(Win, T.inc_subtensor(vc, -lr * g_vc)),
           (Wout, T.inc_subtensor(T.inc_subtensor(uo, -lr * g_uo)[neg.flatten()] if False else Wout[ctx], -lr * g_uo))]
# Wout gets updates for both ctx rows and negative rows: chain two inc_subtensors
Wout_new = T.inc_subtensor(Wout[ctx], -lr * g_uo)
Wout_new = T.inc_subtensor(Wout_new[neg.flatten()], -lr * g_un.reshape((neg.shape[0] * neg.shape[1], D)))
updates = [(Win, T.inc_subtensor(vc, -lr * g_vc)), (Wout, Wout_new)]
train = theano.function([cen, ctx, neg, theano.In(lr, value=1.0)], loss, updates=updates)
f_loss = theano.function([cen, ctx, neg], loss)
# also dense gradients for comparison
gWin, gWout = T.grad(loss, [Win, Wout])
f_dense = theano.function([cen, ctx, neg], [gWin, gWout])

def np_loss(Wi, Wo, c, o, ng):
    s = lambda z: 1 / (1 + np.exp(-z))
    vc = Wi[c]; uo = Wo[o]; un = Wo[ng]
    return -(np.log(s((vc * uo).sum(1))) + np.log(s(-(un * vc[:, None]).sum(2))).sum(1)).mean()

c, o, ng = sample_pairs(16)
ng[0, :2] = o[0]; ng[1, 0] = c[1]   # force duplicates / overlaps of rows
Wi0, Wo0 = Win.get_value(), Wout.get_value()
close(f_loss(c, o, ng), np_loss(Wi0, Wo0, c, o, ng), "sgns loss forward")
gi, go = f_dense(c, o, ng)
eps = 1e-6
for (G, which) in [(gi, 0), (go, 1)]:
    rows = [c[0], o[0], ng[3, 1], c[1]]
    for rr in rows:
        for dd in [0, 5]:
            A = [Wi0.copy(), Wo0.copy()]; A[which][rr, dd] += eps
            Bm = [Wi0.copy(), Wo0.copy()]; Bm[which][rr, dd] -= eps
            fd = (np_loss(A[0], A[1], c, o, ng) - np_loss(Bm[0], Bm[1], c, o, ng)) / (2 * eps)
            close(G[rr, dd], fd, "dense grad W%d[%d,%d]" % (which, rr, dd), rtol=1e-4, atol=1e-8)
# sparse update must equal the dense SGD step (with accumulation over duplicate rows)
l0 = train(c, o, ng, 0.5)
close(l0, np_loss(Wi0, Wo0, c, o, ng), "train returns pre-update loss")
close(Win.get_value(), Wi0 - 0.5 * gi, "sparse Win update == dense SGD step")
close(Wout.get_value(), Wo0 - 0.5 * go, "sparse Wout update == dense SGD step")

# training loop: loss decreases; similar words (same topic) end up closer
Win.set_value(Wi0); Wout.set_value(Wo0)
hist = []
for ep in range(200):
    c, o, ng = sample_pairs(64)
    hist.append(float(train(c, o, ng)))
print("sgns loss", np.mean(hist[:5]), "->", np.mean(hist[-5:]))
check(np.mean(hist[-5:]) < np.mean(hist[:5]) * 0.8, "sgns training did not reduce loss")

# ---- 3. renormalize rows with set_subtensor (max-norm constraint on used rows) ----------
rows = T.ivector('rows')
Wr = Win[rows]
norms = T.sqrt((Wr ** 2).sum(1, keepdims=True))
renorm = theano.function([rows], [], updates=[(Win, T.set_subtensor(Wr, Wr / T.maximum(norms, 1.0) * 0.5))])
before = Win.get_value()
rws = np.array([0, 5, 7], 'int32')
renorm(rws)
after = Win.get_value()
ref = before.copy(); n = np.sqrt((before[rws] ** 2).sum(1, keepdims=True)); ref[rws] = before[rws] / np.maximum(n, 1.0) * 0.5
close(after, ref, "set_subtensor renorm rows")

print("GAPS:", GAPS)
if FAIL:
    print("%d FAILURES" % len(FAIL)); sys.exit(1)
print("OK p04_word2vec")
