"""Char-RNN-style model: scan with outputs_info taps [-1, -2], non_sequences, strict=True, n_steps;
Adam / RMSprop updates as OrderedDicts; gradient-norm clipping with T.switch and
theano.gradient.grad_clip; greedy generation with a scan feeding back its own argmax."""
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


floatX = theano.config.floatX
text = "hello world, hello theano. "
chars = sorted(set(text))
V = len(chars)
c2i = {c: i for i, c in enumerate(chars)}
seq = np.array([c2i[c] for c in text], dtype='int32')
H = 12
rng = np.random.RandomState(0)


def sh(shape, name, scale=0.2):
    return theano.shared(np.asarray(scale * rng.randn(*shape), dtype=floatX), name=name)


Wx, Wh1, Wh2, bh, Wy, by = sh((V, H), 'Wx'), sh((H, H), 'Wh1'), sh((H, H), 'Wh2', 0.1), \
    sh((H,), 'bh'), sh((H, V), 'Wy'), sh((V,), 'by')
params = [Wx, Wh1, Wh2, bh, Wy, by]

inp = T.ivector('inp')    # indices x_0..x_{T-1}
tgt = T.ivector('tgt')    # indices x_1..x_T
h_init = T.matrix('h_init')  # (2, H): h_{-2}, h_{-1}


def step(x_t, h_tm1, h_tm2, Wx, Wh1, Wh2, bh, Wy, by):
    h_t = T.tanh(Wx[x_t] + T.dot(h_tm1, Wh1) + T.dot(h_tm2, Wh2) + bh)
    logits = T.dot(h_t, Wy) + by
    return h_t, logits


(hs, logits), scan_updates = theano.scan(step, sequences=inp,
                                         outputs_info=[dict(initial=h_init, taps=[-1, -2]), None],
                                         non_sequences=params, strict=True)
check(len(scan_updates) == 0, "scan without random numbers should return empty updates")
probs = T.nnet.softmax(logits)
loss = T.mean(T.nnet.categorical_crossentropy(probs, tgt))
grads = T.grad(loss, params)


def sm(a):
    e = np.exp(a - a.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def np_forward(P, xs, ts, h0):
    Wx, Wh1, Wh2, bh, Wy, by = P
    hm2, hm1 = h0[0], h0[1]
    hs, lg = [], []
    for xt in xs:
        h = np.tanh(Wx[xt] + hm1.dot(Wh1) + hm2.dot(Wh2) + bh)
        hs.append(h)
        lg.append(h.dot(Wy) + by)
        hm2, hm1 = hm1, h
    p = sm(np.array(lg))
    return np.array(hs), np.array(lg), -np.mean(np.log(p[np.arange(len(ts)), ts]))


xs, ts = seq[:-1], seq[1:]
h0v = np.asarray(0.3 * rng.randn(2, H), dtype=floatX)
f = theano.function([inp, tgt, h_init], [hs, logits, loss] + grads)
res = f(xs, ts, h0v)
P0 = [p.get_value().astype('float64') for p in params]
hs_np, lg_np, loss_np = np_forward(P0, xs, ts, h0v.astype('float64'))
tol = 1e-8 if floatX == 'float64' else 1e-4
close(res[0], hs_np, "scan with taps [-1,-2]: hidden states", rtol=tol, atol=tol)
close(res[1], lg_np, "scan second output (outputs_info None)", rtol=tol, atol=tol)
close(res[2], loss_np, "char-rnn loss", rtol=tol)
eps = 1e-6 if floatX == 'float64' else 1e-3
for k in range(len(P0)):
    g = np.asarray(res[3 + k])
    for fi in rng.choice(P0[k].size, size=min(8, P0[k].size), replace=False):
        idx = np.unravel_index(fi, P0[k].shape)
        Pp = [p.copy() for p in P0]
        Pp[k][idx] += eps
        cp = np_forward(Pp, xs, ts, h0v)[2]
        Pp[k][idx] -= 2 * eps
        cm = np_forward(Pp, xs, ts, h0v)[2]
        fd = (cp - cm) / (2 * eps)
        check(abs(fd - g[idx]) < 1e-5 + 1e-4 * abs(fd), "char-rnn grad %s%s: %r vs fd %r" % (params[k].name, idx, g[idx], fd))
# gradient w.r.t. the initial state of a 2-tap output
gh0 = theano.function([inp, tgt, h_init], T.grad(loss, h_init))(xs, ts, h0v)
for idx in [(0, 0), (1, 3), (0, 5)]:
    hp = h0v.astype('float64').copy(); hp[idx] += eps
    cp = np_forward(P0, xs, ts, hp)[2]
    hp[idx] -= 2 * eps
    cm = np_forward(P0, xs, ts, hp)[2]
    check(abs((cp - cm) / (2 * eps) - gh0[idx]) < 1e-6 + 1e-4 * abs(gh0[idx]), "grad wrt taps initial state %s" % (idx,))


# ------------------------------------------------------------- optimizers
def adam(loss, params, lr=0.01, b1=0.9, b2=0.999, e=1e-8, clip_norm=None):
    updates = OrderedDict()
    grads = T.grad(loss, params)
    if clip_norm is not None:
        norm = T.sqrt(sum(T.sum(g ** 2) for g in grads))
        grads = [T.switch(norm > clip_norm, g * clip_norm / norm, g) for g in grads]
    t_prev = theano.shared(np.asarray(0., dtype=floatX), name='t')
    t = t_prev + 1
    a_t = lr * T.sqrt(1 - b2 ** t) / (1 - b1 ** t)
    for p, g in zip(params, grads):
        m_prev = theano.shared(np.zeros(p.get_value().shape, dtype=floatX))
        v_prev = theano.shared(np.zeros(p.get_value().shape, dtype=floatX))
        m_t = b1 * m_prev + (1 - b1) * g
        v_t = b2 * v_prev + (1 - b2) * g ** 2
        step = a_t * m_t / (T.sqrt(v_t) + e)
        updates[m_prev] = m_t
        updates[v_prev] = v_t
        updates[p] = p - step
    updates[t_prev] = t
    return updates


def rmsprop(loss, params, lr=0.01, rho=0.9, eps=1e-6):
    grads = T.grad(loss, params)
    updates = OrderedDict()
    for p, g in zip(params, grads):
        acc = theano.shared(np.zeros(p.get_value().shape, dtype=p.dtype), broadcastable=p.broadcastable)
        acc_new = rho * acc + (1 - rho) * g ** 2
        updates[acc] = acc_new
        updates[p] = p - lr * g / T.sqrt(acc_new + eps)
    return updates


h0_zero = np.zeros((2, H), dtype=floatX)
start = [p.get_value() for p in params]
g_start = f(xs, ts, h0_zero)[3:]
clip = 0.5
gnorm = np.sqrt(sum((np.asarray(g, dtype='float64') ** 2).sum() for g in g_start))
check(gnorm > clip, "test setup: gradient norm %r should exceed the clip threshold" % gnorm)
train_adam = theano.function([inp, tgt, h_init], loss, updates=adam(loss, params, lr=0.02, clip_norm=clip))
l0 = train_adam(xs, ts, h0_zero)
# first Adam step: with m=(1-b1)g, v=(1-b2)g^2, a_1=lr*sqrt(1-b2)/(1-b1) -> step = lr*g/(|g|+e') ~ lr*sign(g)
for p, p0, g in zip(params, start, g_start):
    gc = np.asarray(g, dtype='float64') * clip / gnorm
    a1 = 0.02 * np.sqrt(1 - 0.999) / (1 - 0.9)
    expected = p0 - a1 * (0.1 * gc) / (np.sqrt(0.001 * gc ** 2) + 1e-8)
    close(p.get_value(), expected, "first Adam step with clipping (%s)" % p.name, rtol=1e-5, atol=1e-6)
adam_losses = [float(train_adam(xs, ts, h0_zero)) for _ in range(150)]
check(adam_losses[-1] < 0.5 * float(l0), "Adam char-rnn loss did not drop: %r -> %r" % (float(l0), adam_losses[-1]))

for p, v in zip(params, start):
    p.set_value(v)
train_rms = theano.function([inp, tgt, h_init], loss, updates=rmsprop(loss, params, lr=0.01))
rms_losses = [float(train_rms(xs, ts, h0_zero)) for _ in range(150)]
check(rms_losses[-1] < 0.6 * rms_losses[0], "RMSprop char-rnn loss did not drop: %r -> %r" % (rms_losses[0], rms_losses[-1]))

# ------------------------------------------------------------- grad_clip
a = T.vector('a')
gc_expr = T.grad(T.sum(theano.gradient.grad_clip(a, -0.5, 0.5) * 3.0), a)
close(theano.function([a], gc_expr)(np.ones(3, dtype=floatX)), np.full(3, 0.5), "theano.gradient.grad_clip")

# ------------------------------------------------------------- greedy generation with n_steps
first = T.iscalar('first')
n_gen = T.iscalar('n_gen')


def gen_step(x_tm1, h_tm1, h_tm2, Wx, Wh1, Wh2, bh, Wy, by):
    h_t = T.tanh(Wx[x_tm1] + T.dot(h_tm1, Wh1) + T.dot(h_tm2, Wh2) + bh)
    x_t = T.cast(T.argmax(T.dot(h_t, Wy) + by), 'int32')
    return x_t, h_t


(gen_chars, gen_h), _ = theano.scan(gen_step,
                                    outputs_info=[dict(initial=first, taps=[-1]),
                                                  dict(initial=T.zeros((2, H), dtype=floatX), taps=[-1, -2])],
                                    non_sequences=params, n_steps=n_gen, strict=True)
generate = theano.function([first, n_gen], gen_chars)
out_chars = generate(c2i['h'], 10)
# numpy greedy decode
Pn = [p.get_value().astype('float64') for p in params]
hm1 = np.zeros(H); hm2 = np.zeros(H); xt = c2i['h']; exp_chars = []
for _ in range(10):
    h = np.tanh(Pn[0][xt] + hm1.dot(Pn[1]) + hm2.dot(Pn[2]) + Pn[3])
    xt = int(np.argmax(h.dot(Pn[4]) + Pn[5]))
    exp_chars.append(xt)
    hm2, hm1 = hm1, h
check(list(np.asarray(out_chars)) == exp_chars, "greedy generation: %r vs numpy %r" % (list(out_chars), exp_chars))
check(np.asarray(out_chars).dtype == np.int32, "generated dtype %r" % np.asarray(out_chars).dtype)
check(len(generate(c2i['h'], 3)) == 3, "n_steps symbolic")

if FAIL:
    print("%d FAILURES" % len(FAIL))
    sys.exit(1)
print("OK t07_charrnn")
