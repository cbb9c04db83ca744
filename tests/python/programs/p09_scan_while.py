"""scan as a while loop (theano.scan_module.until): Newton's method for roots / sqrt, bisection,
vectorized convergence; gradient through a while-scan; truncate_gradient (truncated BPTT)
compared to a numpy truncated-BPTT reference; scan with n_steps symbolic + taps."""
import sys
import numpy as np
import hypatia as theano
import hypatia.tensor as T
from hypatia.scan_module import until

FAIL = []
def check(c, m):
    if not c:
        FAIL.append(m); print("FAIL:", m)
def close(a, b, m, rtol=1e-6, atol=1e-8):
    a, b = np.asarray(a), np.asarray(b)
    check(a.shape == b.shape and np.allclose(a, b, rtol=rtol, atol=atol),
          "%s: %s vs %s maxdiff %s" % (m, a.shape, b.shape, np.abs(a - b).max() if a.shape == b.shape else '-'))
rng = np.random.RandomState(8)

# ---- 1. Newton for the real root of x^3 + x - a = 0 (scalar), derivative via T.grad ----------
a = T.scalar('a'); x0 = T.scalar('x0')
def newton_step(x_prev, a):
    fx = x_prev ** 3 + x_prev - a
    dfx = T.grad(fx, x_prev)
    x_new = x_prev - fx / dfx
    return x_new, until(T.abs_(x_new - x_prev) < 1e-12)
xs, upd = theano.scan(newton_step, outputs_info=x0, non_sequences=a, n_steps=100)
newton = theano.function([a, x0], [xs[-1], xs.shape[0], xs])
def np_newton(av, x):
    it = []
    for _ in range(100):
        xn = x - (x ** 3 + x - av) / (3 * x ** 2 + 1); it.append(xn)
        if abs(xn - x) < 1e-12:
            break
        x = xn
    return np.array(it)
for av in [2.0, 10.0, -5.0, 0.5]:
    root, nst, traj = newton(av, 1.0)
    ref = np_newton(av, 1.0)
    close(traj, ref, "newton trajectory a=%s" % av, rtol=1e-12)
    check(nst == len(ref) and nst < 100, "newton stopped early at %s (ref %s)" % (nst, len(ref)))
    close(root ** 3 + root - av, 0.0, "newton residual a=%s" % av, atol=1e-10)
# gradient of root w.r.t. a through the while-scan (implicit fn theorem: dr/da = 1/(3r^2+1))
try:
    g = theano.function([a, x0], T.grad(xs[-1], a))
    for av in [2.0, 10.0]:
        r = newton(av, 1.0)[0]
        close(g(av, 1.0), 1 / (3 * r ** 2 + 1), "d root / d a through while-scan", rtol=1e-6)
except Exception as e:
    check(False, "grad through while-scan raised %s: %s" % (type(e).__name__, str(e)[:200]))

# ---- 2. vectorized Newton sqrt; stop when all converged; n_steps bound respected ---------------
v = T.vector('v')
def sqrt_step(y, v):
    yn = 0.5 * (y + v / y)
    return yn, until(T.all(T.abs_(yn - y) < 1e-10))
ys, _ = theano.scan(sqrt_step, outputs_info=v, non_sequences=v, n_steps=50)
fsq = theano.function([v], [ys[-1], ys.shape[0]])
V = rng.rand(6) * 100 + 1
r, n = fsq(V)
close(r, np.sqrt(V), "vector newton sqrt"); check(n < 50, "sqrt loop terminated early (%d)" % n)
# hitting the n_steps bound before convergence
ys3, _ = theano.scan(sqrt_step, outputs_info=v, non_sequences=v, n_steps=3)
r3, n3 = theano.function([v], [ys3[-1], ys3.shape[0]])(V)
check(n3 == 3, "n_steps bound respected (%d)" % n3)
yy = V.copy()
for _ in range(3):
    yy = 0.5 * (yy + V / yy)
close(r3, yy, "3 Newton steps")

# ---- 3. bisection with several recurrent states + while condition on an integer counter -------
lo0 = T.scalar('lo'); hi0 = T.scalar('hi')
def bis(lo, hi, k):
    mid = (lo + hi) / 2
    fm = T.cos(mid) - mid
    lo_n = T.switch(fm > 0, mid, lo); hi_n = T.switch(fm > 0, hi, mid)
    return [lo_n, hi_n, k + 1], until((hi_n - lo_n) < 1e-9)
(los, his, ks), _ = theano.scan(bis, outputs_info=[lo0, hi0, T.constant(np.int64(0))], n_steps=200)
fb = theano.function([lo0, hi0], [los[-1], his[-1], ks[-1]])
l, h, k = fb(0.0, 1.0)
lo_, hi_, kk = 0.0, 1.0, 0
while True:
    mid = (lo_ + hi_) / 2
    if np.cos(mid) - mid > 0: lo_ = mid
    else: hi_ = mid
    kk += 1
    if hi_ - lo_ < 1e-9: break
close([l, h], [lo_, hi_], "bisection interval", rtol=1e-14); check(k == kk, "bisection iterations %s vs %s" % (k, kk))

# ---- 4. truncate_gradient (truncated BPTT) ------------------------------------------------------
n_in = 3
W = theano.shared(rng.randn(n_in, n_in) * 0.6, name='W')
U = theano.shared(rng.randn(n_in, n_in) * 0.6, name='U')
vv = theano.shared(rng.randn(n_in), name='vv')
X = T.matrix('X'); h0 = T.vector('h0')
def rnn(x_t, h_tm1):
    return T.tanh(T.dot(h_tm1, W) + T.dot(x_t, U))
def np_bptt(Xv, H0, Wv, Uv, vvv, k):
    n = len(Xv); hs = [H0]
    for t in range(n):
        hs.append(np.tanh(hs[-1] @ Wv + Xv[t] @ Uv))
    gW = np.zeros_like(Wv); gU = np.zeros_like(Uv); gX = np.zeros_like(Xv); carry = np.zeros(n_in)
    start = 0 if k == -1 else max(0, n - k)
    for t in range(n - 1, start - 1, -1):
        dh = vvv + carry
        da = dh * (1 - hs[t + 1] ** 2)
        gW += np.outer(hs[t], da); gU += np.outer(Xv[t], da); gX[t] = da @ Uv.T
        carry = da @ Wv.T
    gh0 = carry if start == 0 else np.zeros(n_in)
    return gW, gU, gX, gh0, hs
Xv = rng.randn(8, n_in); H0 = rng.randn(n_in)
for k in [-1, 3, 8, 20]:
    hs_k, _ = theano.scan(rnn, sequences=X, outputs_info=h0, truncate_gradient=k)
    cost = T.dot(hs_k, vv).sum()
    grads = T.grad(cost, [W, U, X, h0])
    fg = theano.function([X, h0], [hs_k] + grads)
    out = fg(Xv, H0)
    rW, rU, rX, rh0, hs_np = np_bptt(Xv, H0, W.get_value(), U.get_value(), vv.get_value(), k)
    close(out[0], np.array(hs_np[1:]), "rnn states (k=%d)" % k)
    close(out[1], rW, "truncated grad W (k=%d)" % k); close(out[2], rU, "truncated grad U (k=%d)" % k)
    close(out[3], rX, "truncated grad X (k=%d)" % k); close(out[4], rh0, "truncated grad h0 (k=%d)" % k)
# truncated-BPTT training: loss on a next-step prediction task decreases
tgt = T.matrix('tgt')
hs_t, _ = theano.scan(rnn, sequences=X, outputs_info=h0, truncate_gradient=4)
loss = ((hs_t - tgt) ** 2).mean()
params = [W, U]
train = theano.function([X, h0, tgt], loss, updates=[(p, p - 0.3 * g) for p, g in zip(params, T.grad(loss, params))])
seq = np.sin(np.linspace(0, 6, 13))[:, None] * np.array([1.0, 0.5, -0.7])
hist = [float(train(seq[:-1], np.zeros(n_in), 0.8 * seq[1:])) for _ in range(80)]
print("truncated BPTT loss", hist[0], "->", hist[-1])
check(hist[-1] < 0.5 * hist[0], "truncated BPTT training did not reduce loss")

if FAIL:
    print("%d FAILURES" % len(FAIL)); sys.exit(1)
print("OK p09_scan_while")
