"""Hessian-free optimisation pieces (Martens 2010 style): Gauss-Newton vector products via
T.Rop + T.Lop, Hessian-vector products via R-op of the gradient and via grad-of-dot,
conjugate gradient implemented as a scan while-loop (until) on flattened parameters,
damped HF steps decreasing the loss; all checked against numpy."""
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
rng = np.random.RandomState(4)
N, D, H, O = 30, 4, 5, 2
Xd = rng.randn(N, D); Yd = np.tanh(Xd @ rng.randn(D, O)) + 0.05 * rng.randn(N, O)
# parameters as one flat shared vector (the usual HF trick), views via reshape
shapes = [(D, H), (H,), (H, O), (O,)]
sizes = [int(np.prod(s)) for s in shapes]
theta = theano.shared(rng.randn(sum(sizes)) * 0.4, name='theta')
def unflat(t):
    out, k = [], 0
    for s, n in zip(shapes, sizes):
        out.append(t[k:k + n].reshape(s)); k += n
    return out
x = T.matrix('x'); y = T.matrix('y')
W1, b1, W2, b2 = unflat(theta)
hid = T.tanh(T.dot(x, W1) + b1)
z = T.dot(hid, W2) + b2                 # network output (pre-loss)
loss = 0.5 * ((z - y) ** 2).sum() / N
g = T.grad(loss, theta)

def np_unflat(t):
    out, k = [], 0
    for s, n in zip(shapes, sizes):
        out.append(t[k:k + n].reshape(s)); k += n
    return out
def np_loss(t):
    W1, b1, W2, b2 = np_unflat(t)
    zz = np.tanh(Xd @ W1 + b1) @ W2 + b2
    return 0.5 * ((zz - Yd) ** 2).sum() / N
def np_grad(t, eps=1e-6):
    return np.array([(np_loss(t + eps * e) - np_loss(t - eps * e)) / (2 * eps) for e in np.eye(len(t))])
def np_jac_z(t, eps=1e-6):
    def zf(t):
        W1, b1, W2, b2 = np_unflat(t); return (np.tanh(Xd @ W1 + b1) @ W2 + b2).ravel()
    return np.array([(zf(t + eps * e) - zf(t - eps * e)) / (2 * eps) for e in np.eye(len(t))]).T

v = T.vector('v')
# Gauss-Newton product: J^T H_L J v, with H_L = I/N for squared loss on z
Jv = T.Rop(z, theta, v)
JtHJv = T.Lop(z, theta, Jv / N)
# Hessian-vector product: R-op of the gradient, and grad of (g . v)
Hv_rop = T.Rop(g, theta, v)
Hv_lop = T.grad(T.sum(g * v), theta)
f_prod = theano.function([v], [g, Jv, JtHJv, Hv_rop, Hv_lop], givens={x: theano.shared(Xd), y: theano.shared(Yd)})
t0 = theta.get_value(); vv = rng.randn(len(t0))
gv, jv, gnv, hv1, hv2 = f_prod(vv)
close(gv, np_grad(t0), "gradient vs FD", rtol=1e-5, atol=1e-8)
J = np_jac_z(t0)
close(jv, (J @ vv).reshape(N, O), "Rop J v", rtol=1e-5, atol=1e-7)
close(gnv, J.T @ (J @ vv) / N, "Gauss-Newton product", rtol=1e-5, atol=1e-7)
Hfd = np.array([(np_grad(t0 + 1e-4 * e, 1e-5) - np_grad(t0 - 1e-4 * e, 1e-5)) / 2e-4 for e in np.eye(len(t0))[:3]])
close(hv1, hv2, "Hv via Rop == Hv via grad(g.v)", rtol=1e-8, atol=1e-10)
H_ex = theano.function([], theano.gradient.hessian(loss, theta), givens={x: theano.shared(Xd), y: theano.shared(Yd)})()
close(hv1, H_ex @ vv, "Hv vs full hessian", rtol=1e-7, atol=1e-9)
close(H_ex[:3], Hfd, "hessian rows vs FD of FD", rtol=1e-3, atol=1e-5)

# ---- CG in a scan while-loop solving (G + lambda I) d = -g ---------------------------------
lam = T.scalar('lam'); b_vec = T.vector('b'); maxit = 60
def Gv_fn(vec):
    return T.Lop(z, theta, T.Rop(z, theta, vec) / N) + lam * vec
def cg_step(xk, rk, pk, rr):
    Ap = Gv_fn(pk)
    alpha = rr / T.dot(pk, Ap)
    xn = xk + alpha * pk
    rn = rk - alpha * Ap
    rrn = T.dot(rn, rn)
    pn = rn + (rrn / rr) * pk
    return [xn, rn, pn, rrn], until(T.sqrt(rrn) < 1e-10)
x0 = T.zeros_like(b_vec)
(xs, rs, ps, rrs), _ = theano.scan(cg_step, outputs_info=[x0, b_vec, b_vec, T.dot(b_vec, b_vec)], n_steps=maxit)
cg = theano.function([b_vec, lam], [xs[-1], xs.shape[0], T.sqrt(rrs[-1])],
                     givens={x: theano.shared(Xd), y: theano.shared(Yd)})
G_np = J.T @ J / N
d, iters, res = cg(-gv, 0.1)
ref = np.linalg.solve(G_np + 0.1 * np.eye(len(t0)), -gv)
close(d, ref, "CG solution vs numpy solve", rtol=1e-6, atol=1e-8)
check(iters < maxit and res < 1e-8, "CG converged early (%d iters, res %g)" % (iters, res))
print("CG iterations:", iters, "residual:", res)

# ---- damped HF loop -----------------------------------------------------------------------------
f_loss = theano.function([], loss, givens={x: theano.shared(Xd), y: theano.shared(Yd)})
f_grad = theano.function([], g, givens={x: theano.shared(Xd), y: theano.shared(Yd)})
step = theano.function([v], [], updates=[(theta, theta + v)])
hist = [float(f_loss())]; lamv = 1.0
for it in range(8):
    gg = f_grad()
    d, iters, _ = cg(-gg, lamv)
    old = theta.get_value()
    step(d)
    new_loss = float(f_loss())
    close(new_loss, np_loss(theta.get_value()), "loss after HF step vs numpy")
    if new_loss < hist[-1]:
        hist.append(new_loss); lamv *= 0.5
    else:
        theta.set_value(old); lamv *= 3.0
print("HF loss", hist[0], "->", hist[-1])
check(hist[-1] < 0.3 * hist[0], "HF optimisation did not reduce the loss enough")

if FAIL:
    print("%d FAILURES" % len(FAIL)); sys.exit(1)
print("OK p12_hessian_free")
