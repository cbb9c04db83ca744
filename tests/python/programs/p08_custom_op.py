"""Custom theano.Op subclasses (perform, grad, infer_shape, multiple outputs, __props__) used
directly and inside scan; theano.gradient.verify_grad on custom expressions (including detection
of a wrong gradient); as_op; checks vs numpy and finite differences."""
import sys
import numpy as np
import hypatia as theano
import hypatia.tensor as T
from hypatia import gof
from hypatia.gradient import verify_grad

FAIL = []
def check(c, m):
    if not c:
        FAIL.append(m); print("FAIL:", m)
def close(a, b, m, rtol=1e-6, atol=1e-8):
    a, b = np.asarray(a), np.asarray(b)
    check(a.shape == b.shape and np.allclose(a, b, rtol=rtol, atol=atol),
          "%s: %s vs %s maxdiff %s" % (m, a.shape, b.shape, np.abs(a - b).max() if a.shape == b.shape else '-'))
rng = np.random.RandomState(21)
CALLS = {'softplus': 0, 'shape': 0}

class SoftplusGrad(theano.Op):
    __props__ = ()
    def make_node(self, x, gz):
        x = T.as_tensor_variable(x); gz = T.as_tensor_variable(gz)
        return theano.Apply(self, [x, gz], [x.type()])
    def perform(self, node, inputs, out):
        x, gz = inputs
        out[0][0] = gz / (1 + np.exp(-x))
    def infer_shape(self, node, shapes):
        return [shapes[0]]

class Softplus(theano.Op):
    """log(1 + exp(x)) computed in numpy; gradient via another custom op."""
    __props__ = ('scale',)
    def __init__(self, scale=1.0):
        self.scale = scale
    def make_node(self, x):
        x = T.as_tensor_variable(x)
        return theano.Apply(self, [x], [x.type()])
    def perform(self, node, inputs, out):
        CALLS['softplus'] += 1
        x, = inputs
        out[0][0] = np.asarray(self.scale * np.logaddexp(0, x), dtype=node.outputs[0].dtype)
    def grad(self, inputs, gout):
        x, = inputs; gz, = gout
        return [SoftplusGrad()(x, gz * self.scale)]
    def infer_shape(self, node, shapes):
        CALLS['shape'] += 1
        return shapes

class SortWithArg(theano.Op):
    """Two outputs: sorted rows and argsort (int64); grad only w.r.t. values."""
    __props__ = ()
    def make_node(self, x):
        x = T.as_tensor_variable(x)
        return theano.Apply(self, [x], [x.type(), T.lmatrix()])
    def perform(self, node, inputs, out):
        x, = inputs
        idx = np.argsort(x, axis=1, kind='stable')
        out[0][0] = np.take_along_axis(x, idx, 1)
        out[1][0] = idx.astype('int64')
    def grad(self, inputs, gout):
        x, = inputs
        gs, gi = gout
        sorted_, idx = self(x)
        # scatter back: gx[i, idx[i, j]] = gs[i, j]
        rows = T.arange(x.shape[0]).dimshuffle(0, 'x') * T.ones_like(idx)
        gx = T.inc_subtensor(T.zeros_like(x)[rows.flatten(), idx.flatten()], gs.flatten())
        return [gx]
    def infer_shape(self, node, shapes):
        return [shapes[0], shapes[0]]

class BadGrad(theano.Op):
    __props__ = ()
    def make_node(self, x):
        x = T.as_tensor_variable(x); return theano.Apply(self, [x], [x.type()])
    def perform(self, node, inputs, out):
        out[0][0] = inputs[0] ** 3
    def grad(self, inputs, gout):
        return [gout[0] * 2 * inputs[0]]   # wrong on purpose (should be 3x^2)

sp = Softplus()
check(Softplus(2.0) == Softplus(2.0) and hash(Softplus(2.0)) == hash(Softplus(2.0)), "__props__ equality")
check(Softplus(2.0) != Softplus(3.0), "__props__ inequality")

# ---- 1. forward, grad, infer_shape --------------------------------------------------------
x = T.matrix('x')
y = sp(x)
f = theano.function([x], [y, T.grad(y.sum() * 2, x)])
X = rng.randn(4, 3) * 3
yv, gv = f(X)
close(yv, np.logaddexp(0, X), "softplus forward"); close(gv, 2 / (1 + np.exp(-X)), "softplus grad")
close(gv, theano.function([x], T.grad(T.nnet.softplus(x).sum() * 2, x))(X), "matches T.nnet.softplus grad")
before = CALLS['softplus']
fs = theano.function([x], sp(x).shape)
close(fs(X), [4, 3], "shape of custom op output")
print("perform calls for shape-only fn:", CALLS['softplus'] - before, "infer_shape calls:", CALLS['shape'])
# Theano's shape feature uses infer_shape so perform should not be needed for y.shape
if CALLS['softplus'] - before != 0:
    print("GAP (hypatia): infer_shape not used for y.shape; perform ran %d time(s)" % (CALLS['softplus'] - before))

# ---- 2. verify_grad on custom expressions ---------------------------------------------------
verify_grad(lambda a: sp(a) * T.tanh(a), [X], rng=rng)
verify_grad(lambda a, b: (Softplus(0.5)(T.dot(a, b)) ** 2).sum(axis=0), [rng.randn(3, 4), rng.randn(4, 2)], rng=rng)
verify_grad(lambda a: SortWithArg()(a)[0] * T.arange(a.shape[1]), [rng.randn(3, 5)], rng=rng)
try:
    verify_grad(lambda a: BadGrad()(a), [rng.rand(3) + 1.0], rng=rng)
    check(False, "verify_grad did not detect a wrong gradient")
except Exception as e:
    check(isinstance(e, theano.gradient.GradientError) or type(e).__name__ == 'GradientError',
          "verify_grad raised %s instead of GradientError" % type(e).__name__)
    print("wrong grad detected:", type(e).__name__, str(e).splitlines()[0][:100])

# two outputs
s_, i_ = SortWithArg()(x)
fsort = theano.function([x], [s_, i_, T.grad((s_ * T.arange(3)).sum(), x)])
sv, iv, gsv = fsort(X)
close(sv, np.sort(X, 1), "sorted"); close(iv, np.argsort(X, 1, kind='stable'), "argsort")
check(iv.dtype == np.int64, "int64 output dtype")
ref = np.zeros_like(X)
for r in range(4):
    ref[r, iv[r]] = np.arange(3)
close(gsv, ref, "grad through sort")

# ---- 3. custom op inside scan, gradient through scan ---------------------------------------
W = theano.shared(rng.randn(3, 3) * 0.5, name='W')
h0 = T.vector('h0'); xs = T.matrix('xs')
def step(x_t, h_tm1, W):
    return sp(T.dot(h_tm1, W) + x_t) - 1.0
hs, _ = theano.scan(step, sequences=xs, outputs_info=h0, non_sequences=W)
cost = (hs[-1] ** 2).sum() + hs.sum()
gW, gh0, gxs = T.grad(cost, [W, h0, xs])
fscan = theano.function([xs, h0], [hs, cost, gW, gh0, gxs])
XS = rng.randn(5, 3); H0 = rng.randn(3)
def np_scan(XS, H0, Wv):
    h = H0; out = []
    for t in range(len(XS)):
        h = np.logaddexp(0, h @ Wv + XS[t]) - 1.0; out.append(h)
    out = np.array(out)
    return out, (out[-1] ** 2).sum() + out.sum()
r = fscan(XS, H0)
Wv = W.get_value()
ro, rc = np_scan(XS, H0, Wv)
close(r[0], ro, "scan with custom op: states"); close(r[1], rc, "scan cost")
eps = 1e-6
for name, k, arr in [('W', 2, Wv), ('h0', 3, H0), ('xs', 4, XS)]:
    num = np.zeros_like(arr)
    for ix in np.ndindex(arr.shape):
        A = arr.copy(); A[ix] += eps; Bm = arr.copy(); Bm[ix] -= eps
        args_p = {'W': (XS, H0, Wv), 'h0': (XS, H0, Wv), 'xs': (XS, H0, Wv)}
        if name == 'W':
            fp, fm = np_scan(XS, H0, A)[1], np_scan(XS, H0, Bm)[1]
        elif name == 'h0':
            fp, fm = np_scan(XS, A, Wv)[1], np_scan(XS, Bm, Wv)[1]
        else:
            fp, fm = np_scan(A, H0, Wv)[1], np_scan(Bm, H0, Wv)[1]
        num[ix] = (fp - fm) / (2 * eps)
    close(r[k], num, "grad through scan with custom op wrt %s" % name, rtol=1e-5, atol=1e-7)
# training with the custom op in scan: loss decreases
upd = theano.function([xs, h0], cost, updates=[(W, W - 0.02 * gW)])
hist = [float(upd(XS, H0)) for _ in range(30)]
print("scan custom-op training", hist[0], "->", hist[-1])
check(hist[-1] < hist[0], "training with custom op in scan did not reduce cost")

# ---- 4. as_op decorator -------------------------------------------------------------------
from hypatia.compile.ops import as_op
@as_op(itypes=[T.dmatrix], otypes=[T.dvector])
def rownorm(a):
    return np.sqrt((a ** 2).sum(1))
close(theano.function([x], rownorm(x))(X), np.sqrt((X ** 2).sum(1)), "as_op forward")
# itypes/otypes Op subclass
class Cube(theano.Op):
    itypes = [T.dvector]; otypes = [T.dvector]
    __props__ = ()
    def perform(self, node, inputs, out):
        out[0][0] = inputs[0] ** 3
    def grad(self, inputs, g):
        return [3 * inputs[0] ** 2 * g[0]]
v = T.dvector('v')
verify_grad(Cube(), [rng.rand(4) + 0.5], rng=rng)
close(theano.function([v], Cube()(v))(np.arange(3.)), np.arange(3.) ** 3, "itypes/otypes op")

if FAIL:
    print("%d FAILURES" % len(FAIL)); sys.exit(1)
print("OK p08_custom_op")
