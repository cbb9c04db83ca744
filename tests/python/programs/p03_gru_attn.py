"""GRU encoder + attention GRU decoder (seq2seq) with scan over a masked batch; gradient flows
through both scans. Checks forward vs numpy, grads vs finite differences, training (Adam)."""
import sys
from collections import OrderedDict
import numpy as np
import hypatia as theano
import hypatia.tensor as T

FAIL = []
def check(c, m):
    if not c:
        FAIL.append(m); print("FAIL:", m)
def close(a, b, m, rtol=1e-6, atol=1e-8):
    a, b = np.asarray(a), np.asarray(b)
    check(a.shape == b.shape and np.allclose(a, b, rtol=rtol, atol=atol),
          "%s: %s vs %s maxdiff %s" % (m, a.shape, b.shape, np.abs(a - b).max() if a.shape == b.shape else '-'))

fX = theano.config.floatX
rng = np.random.RandomState(42)
V, E, H = 7, 5, 6   # vocab, embedding, hidden
def init(*shape): return (0.3 * rng.randn(*shape)).astype(fX)
pvals = OrderedDict([
    ('Emb', init(V, E)),
    ('enc_W', init(E, 3 * H)), ('enc_U', init(H, 3 * H)), ('enc_b', init(3 * H)),
    ('dec_W', init(E, 3 * H)), ('dec_U', init(H, 3 * H)), ('dec_C', init(H, 3 * H)), ('dec_b', init(3 * H)),
    ('att_W', init(H, H)), ('att_U', init(H, H)), ('att_v', init(H)),
    ('out_W', init(H, V)), ('out_C', init(H, V)), ('out_b', init(V)),
])
tparams = OrderedDict((k, theano.shared(v, name=k)) for k, v in pvals.items())

def _slice(x, n, dim):
    return x[:, n * dim:(n + 1) * dim]

# ------------------------------- theano model --------------------------------------------
x = T.imatrix('x'); xm = T.matrix('xm')        # (Tin, B)
y = T.imatrix('y'); ym = T.matrix('ym')        # (Tout, B)
n_steps_in, B = x.shape[0], x.shape[1]
P = tparams
xemb = P['Emb'][x.flatten()].reshape([x.shape[0], x.shape[1], E])
xproj = T.dot(xemb, P['enc_W']) + P['enc_b']

def enc_step(m_, xp_, h_, U):
    preact = T.dot(h_, U[:, :2 * H]) + xp_[:, :2 * H]
    r = T.nnet.sigmoid(_slice(preact, 0, H)); u = T.nnet.sigmoid(_slice(preact, 1, H))
    hbar = T.tanh(T.dot(r * h_, U[:, 2 * H:]) + xp_[:, 2 * H:])
    h = u * h_ + (1. - u) * hbar
    h = m_[:, None] * h + (1. - m_)[:, None] * h_
    return h

enc, _ = theano.scan(enc_step, sequences=[xm, xproj], outputs_info=[T.alloc(np.asarray(0., dtype=fX), B, H)],
                     non_sequences=[P['enc_U']], name='encoder', strict=True)
# mean of encoder states as init of decoder
ctx_mean = (enc * xm[:, :, None]).sum(0) / xm.sum(0)[:, None]
# decoder input: shifted targets (teacher forcing) - first input is zero embedding
yemb = P['Emb'][y.flatten()].reshape([y.shape[0], y.shape[1], E])
yemb_shift = T.zeros_like(yemb)
yemb_shift = T.set_subtensor(yemb_shift[1:], yemb[:-1])
yproj = T.dot(yemb_shift, P['dec_W']) + P['dec_b']
enc_att = T.dot(enc, P['att_U'])   # (Tin, B, H)

def dec_step(m_, yp_, s_, c_, enc_, enc_att_, xm_, U, C, attW, attv):
    # attention with previous state
    e = T.dot(T.tanh(enc_att_ + T.dot(s_, attW)[None, :, :]), attv)   # (Tin, B)
    e = e - e.max(0, keepdims=True)
    a = T.exp(e) * xm_
    a = a / a.sum(0, keepdims=True)
    c = (enc_ * a[:, :, None]).sum(0)                                  # (B, H)
    preact = T.dot(s_, U[:, :2 * H]) + T.dot(c, C[:, :2 * H]) + yp_[:, :2 * H]
    r = T.nnet.sigmoid(_slice(preact, 0, H)); u = T.nnet.sigmoid(_slice(preact, 1, H))
    sbar = T.tanh(T.dot(r * s_, U[:, 2 * H:]) + T.dot(c, C[:, 2 * H:]) + yp_[:, 2 * H:])
    s = u * s_ + (1. - u) * sbar
    s = m_[:, None] * s + (1. - m_)[:, None] * s_
    return s, c

(dec_s, dec_c), _ = theano.scan(dec_step, sequences=[ym, yproj],
                                outputs_info=[ctx_mean, T.zeros_like(ctx_mean)],
                                non_sequences=[enc, enc_att, xm, P['dec_U'], P['dec_C'], P['att_W'], P['att_v']],
                                name='decoder', strict=True)
logit = T.dot(dec_s, P['out_W']) + T.dot(dec_c, P['out_C']) + P['out_b']    # (Tout, B, V)
probs = T.nnet.softmax(logit.reshape([logit.shape[0] * logit.shape[1], V]))
y_flat = y.flatten()
y_idx = T.arange(y_flat.shape[0]) * V + y_flat
cost = -T.log(probs.flatten()[y_idx])
cost = cost.reshape([y.shape[0], y.shape[1]])
cost = (cost * ym).sum(0).mean()

grads = T.grad(cost, list(tparams.values()))
f_cost = theano.function([x, xm, y, ym], [cost, enc, dec_s, dec_c])
f_grad = theano.function([x, xm, y, ym], grads)

# ------------------------------- numpy reference -----------------------------------------
def sig(z): return 1 / (1 + np.exp(-z))
def np_model(p, x, xm, y, ym):
    Tin, B = x.shape
    xe = p['Emb'][x]
    xp = xe.dot(p['enc_W']) + p['enc_b']
    h = np.zeros((B, H)); hs = []
    U = p['enc_U']
    for t in range(Tin):
        pre = h.dot(U[:, :2 * H]) + xp[t, :, :2 * H]
        r, u = sig(pre[:, :H]), sig(pre[:, H:])
        hb = np.tanh((r * h).dot(U[:, 2 * H:]) + xp[t, :, 2 * H:])
        hn = u * h + (1 - u) * hb
        h = xm[t][:, None] * hn + (1 - xm[t])[:, None] * h
        hs.append(h)
    enc = np.array(hs)
    s = (enc * xm[:, :, None]).sum(0) / xm.sum(0)[:, None]
    ye = p['Emb'][y]; ys = np.zeros_like(ye); ys[1:] = ye[:-1]
    yp = ys.dot(p['dec_W']) + p['dec_b']
    ea = enc.dot(p['att_U'])
    U, C = p['dec_U'], p['dec_C']
    ss, cs = [], []
    for t in range(y.shape[0]):
        e = np.tanh(ea + s.dot(p['att_W'])[None]).dot(p['att_v'])
        e = e - e.max(0, keepdims=True)
        a = np.exp(e) * xm; a = a / a.sum(0, keepdims=True)
        c = (enc * a[:, :, None]).sum(0)
        pre = s.dot(U[:, :2 * H]) + c.dot(C[:, :2 * H]) + yp[t, :, :2 * H]
        r, u = sig(pre[:, :H]), sig(pre[:, H:])
        sb = np.tanh((r * s).dot(U[:, 2 * H:]) + c.dot(C[:, 2 * H:]) + yp[t, :, 2 * H:])
        sn = u * s + (1 - u) * sb
        s = ym[t][:, None] * sn + (1 - ym[t])[:, None] * s
        ss.append(s); cs.append(c)
    ss, cs = np.array(ss), np.array(cs)
    lg = ss.dot(p['out_W']) + cs.dot(p['out_C']) + p['out_b']
    lg = lg - lg.max(-1, keepdims=True)
    pr = np.exp(lg) / np.exp(lg).sum(-1, keepdims=True)
    Tout = y.shape[0]
    nll = -np.log(pr[np.arange(Tout)[:, None], np.arange(y.shape[1])[None, :], y])
    return (nll * ym).sum(0).mean(), enc, ss, cs

# ------------------------------- data ----------------------------------------------------
Bn = 4
lens_x = [5, 3, 4, 2]; lens_y = [4, 4, 2, 3]
Xd = np.zeros((max(lens_x), Bn), 'int32'); XM = np.zeros((max(lens_x), Bn), fX)
Yd = np.zeros((max(lens_y), Bn), 'int32'); YM = np.zeros((max(lens_y), Bn), fX)
for b in range(Bn):
    seq = rng.randint(1, V, lens_x[b])
    Xd[:lens_x[b], b] = seq; XM[:lens_x[b], b] = 1
    tgt = (seq[::-1][:lens_y[b]] if lens_y[b] <= lens_x[b] else np.r_[seq[::-1], seq[:lens_y[b] - lens_x[b]]])
    Yd[:lens_y[b], b] = tgt; YM[:lens_y[b], b] = 1

c_t, enc_t, s_t, cc_t = f_cost(Xd, XM, Yd, YM)
c_n, enc_n, s_n, cc_n = np_model(pvals, Xd, XM, Yd, YM)
close(enc_t, enc_n, "encoder states"); close(s_t, s_n, "decoder states"); close(cc_t, cc_n, "contexts")
close(c_t, c_n, "cost")
# masked steps keep previous state
close(enc_t[3, 3], enc_t[1, 3], "masked encoder step copies state")

gs = f_grad(Xd, XM, Yd, YM)
eps = 1e-6
for (k, v), g in zip(pvals.items(), gs):
    check(g.shape == v.shape, "grad shape %s" % k)
    for _ in range(3):
        ix = tuple(rng.randint(0, s) for s in v.shape)
        if k == 'Emb':
            ix = (int(Xd[0, 0]), ix[1])
        pp = {kk: vv.copy() for kk, vv in pvals.items()}; pp[k][ix] += eps
        pm = {kk: vv.copy() for kk, vv in pvals.items()}; pm[k][ix] -= eps
        fd = (np_model(pp, Xd, XM, Yd, YM)[0] - np_model(pm, Xd, XM, Yd, YM)[0]) / (2 * eps)
        close(g[ix], fd, "grad %s%s" % (k, ix), rtol=1e-4, atol=1e-7)
# embedding row of the padding token 0 is used only at masked positions and the shifted start
# -> its gradient comes only through masked steps? No: decoder input at t=1 for sequences... just FD it
pp = {kk: vv.copy() for kk, vv in pvals.items()}; pp['Emb'][0, 2] += eps
pm = {kk: vv.copy() for kk, vv in pvals.items()}; pm['Emb'][0, 2] -= eps
fd = (np_model(pp, Xd, XM, Yd, YM)[0] - np_model(pm, Xd, XM, Yd, YM)[0]) / (2 * eps)
close(gs[0][0, 2], fd, "grad Emb pad row", rtol=1e-4, atol=1e-7)

# ------------------------------- training with Adam --------------------------------------
def adam(cost, params, lr=0.02, b1=0.9, b2=0.999, e=1e-8):
    updates = []
    gr = T.grad(cost, params)
    t_prev = theano.shared(np.asarray(0., dtype=fX))
    t = t_prev + 1
    a_t = lr * T.sqrt(1 - b2 ** t) / (1 - b1 ** t)
    for p, g in zip(params, gr):
        v = p.get_value(borrow=True)
        m_prev = theano.shared(np.zeros(v.shape, dtype=v.dtype), broadcastable=p.broadcastable)
        v_prev = theano.shared(np.zeros(v.shape, dtype=v.dtype), broadcastable=p.broadcastable)
        m_t = b1 * m_prev + (1 - b1) * g
        v_t = b2 * v_prev + (1 - b2) * g ** 2
        updates += [(m_prev, m_t), (v_prev, v_t), (p, p - a_t * m_t / (T.sqrt(v_t) + e))]
    updates.append((t_prev, t))
    return updates

train = theano.function([x, xm, y, ym], cost, updates=adam(cost, list(tparams.values())))
hist = [float(train(Xd, XM, Yd, YM)) for _ in range(60)]
print("train cost", hist[0], "->", hist[-1])
check(hist[-1] < 0.5 * hist[0], "training did not reduce cost enough")
# consistency: f_cost sees trained shared params
newp = {k: v.get_value() for k, v in tparams.items()}
close(f_cost(Xd, XM, Yd, YM)[0], np_model(newp, Xd, XM, Yd, YM)[0], "cost after training vs numpy")

if FAIL:
    print("%d FAILURES" % len(FAIL)); sys.exit(1)
print("OK p03_gru_attn")
