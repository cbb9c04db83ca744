"""Denoising autoencoder with RandomStreams corruption and tied weights
(DeepLearningTutorials dA.py style)."""
import sys
import numpy as np
import hypatia as theano
import hypatia.tensor as T
from hypatia.tensor.shared_randomstreams import RandomStreams

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
tol = 1e-6 if floatX == 'float64' else 1e-3


class dA(object):
    def __init__(self, numpy_rng, theano_rng=None, input=None, n_visible=16, n_hidden=8,
                 W=None, bhid=None, bvis=None):
        self.n_visible = n_visible
        self.n_hidden = n_hidden
        if not theano_rng:
            theano_rng = RandomStreams(numpy_rng.randint(2 ** 30))
        if not W:
            initial_W = np.asarray(numpy_rng.uniform(
                low=-4 * np.sqrt(6. / (n_hidden + n_visible)),
                high=4 * np.sqrt(6. / (n_hidden + n_visible)),
                size=(n_visible, n_hidden)), dtype=theano.config.floatX)
            W = theano.shared(value=initial_W, name='W', borrow=True)
        if not bvis:
            bvis = theano.shared(value=np.zeros(n_visible, dtype=theano.config.floatX), name='b_prime', borrow=True)
        if not bhid:
            bhid = theano.shared(value=np.zeros(n_hidden, dtype=theano.config.floatX), name='b', borrow=True)
        self.W = W
        self.b = bhid
        self.b_prime = bvis
        self.W_prime = self.W.T
        self.theano_rng = theano_rng
        if input is None:
            self.x = T.dmatrix(name='input')
        else:
            self.x = input
        self.params = [self.W, self.b, self.b_prime]

    def get_corrupted_input(self, input, corruption_level):
        return self.theano_rng.binomial(size=input.shape, n=1, p=1 - corruption_level,
                                        dtype=theano.config.floatX) * input

    def get_hidden_values(self, input):
        return T.nnet.sigmoid(T.dot(input, self.W) + self.b)

    def get_reconstructed_input(self, hidden):
        return T.nnet.sigmoid(T.dot(hidden, self.W_prime) + self.b_prime)

    def get_cost_updates(self, corruption_level, learning_rate):
        tilde_x = self.get_corrupted_input(self.x, corruption_level)
        y = self.get_hidden_values(tilde_x)
        z = self.get_reconstructed_input(y)
        L = - T.sum(self.x * T.log(z) + (1 - self.x) * T.log(1 - z), axis=1)
        cost = T.mean(L)
        gparams = T.grad(cost, self.params)
        updates = [(param, param - learning_rate * gparam) for param, gparam in zip(self.params, gparams)]
        return cost, updates, tilde_x, gparams


rng = np.random.RandomState(123)
theano_rng = RandomStreams(rng.randint(2 ** 30))
# data: noisy copies of 3 binary prototypes, values in (0, 1)
protos = (rng.rand(3, 16) > 0.5).astype('float64')
data = np.clip(protos[rng.randint(0, 3, size=60)] + 0.1 * rng.randn(60, 16), 0.01, 0.99).astype(floatX)
train_set_x = theano.shared(data, borrow=True)
batch_size = 20
index = T.lscalar()
x = T.matrix('x')
da = dA(numpy_rng=rng, theano_rng=theano_rng, input=x, n_visible=16, n_hidden=8)
cost, updates, tilde_x, gparams = da.get_cost_updates(corruption_level=0.3, learning_rate=0.1)

# --- a probe function (no param updates) exposing the sampled corruption and the gradients
probe = theano.function([index], [cost, tilde_x] + gparams,
                        givens={x: train_set_x[index * batch_size:(index + 1) * batch_size]})


def np_cost(W, b, bp, xin, xt):
    sig = lambda a: 1. / (1. + np.exp(-a))
    y = sig(xt.dot(W) + b)
    z = sig(y.dot(W.T) + bp)
    return np.mean(-np.sum(xin * np.log(z) + (1 - xin) * np.log(1 - z), axis=1))


xb = data[:batch_size].astype('float64')
c, xt, gW, gb, gbp = probe(0)
xt = np.asarray(xt)
mask = (xt != 0)
check(np.allclose(xt[mask], xb[mask]), "corrupted input must equal input where not zeroed")
frac = 1 - mask.mean()
check(0.15 < frac < 0.45, "corruption fraction %r far from 0.3" % frac)
P = [da.W.get_value().astype('float64'), da.b.get_value().astype('float64'), da.b_prime.get_value().astype('float64')]
close(c, np_cost(P[0], P[1], P[2], xb, xt), "dA cost vs numpy (given same corruption)", rtol=tol)
eps = 1e-6 if floatX == 'float64' else 1e-3
for k, g in enumerate([gW, gb, gbp]):
    g = np.asarray(g)
    fd = np.zeros_like(P[k])
    for idx in np.ndindex(*P[k].shape):
        Pp = [p.copy() for p in P]
        Pp[k][idx] += eps
        cp = np_cost(Pp[0], Pp[1], Pp[2], xb, xt)
        Pp[k][idx] -= 2 * eps
        cm = np_cost(Pp[0], Pp[1], Pp[2], xb, xt)
        fd[idx] = (cp - cm) / (2 * eps)
    close(g, fd, "dA gradient %d vs finite differences (tied weights)" % k, rtol=1e-4, atol=1e-6)

# --- random stream must advance between calls
_, xt2 = probe(0)[:2]
check(not np.array_equal(np.asarray(xt2) != 0, mask), "RandomStreams did not advance between calls")
# --- reseeding gives reproducible masks
theano_rng.seed(42)
m1 = np.asarray(probe(0)[1]) != 0
theano_rng.seed(42)
m2 = np.asarray(probe(0)[1]) != 0
check(np.array_equal(m1, m2), "RandomStreams.seed(42) not reproducible")

# --- corruption_level 0 must give the deterministic cost
cost0, _, _, _ = da.get_cost_updates(corruption_level=0., learning_rate=0.1)
f0 = theano.function([x], cost0)
close(f0(xb), np_cost(P[0], P[1], P[2], xb, xb), "dA cost with corruption 0", rtol=tol)

# binary_crossentropy equivalence
z = da.get_reconstructed_input(da.get_hidden_values(x))
bce = T.mean(T.sum(T.nnet.binary_crossentropy(z, x), axis=1))
f_bce = theano.function([x], bce)
close(f_bce(xb), np_cost(P[0], P[1], P[2], xb, xb), "T.nnet.binary_crossentropy", rtol=tol)

# --- training loop
train_da = theano.function([index], cost, updates=updates,
                           givens={x: train_set_x[index * batch_size:(index + 1) * batch_size]})
epoch_costs = []
for epoch in range(40):
    epoch_costs.append(np.mean([train_da(i) for i in range(data.shape[0] // batch_size)]))
check(np.mean(epoch_costs[-5:]) < 0.85 * np.mean(epoch_costs[:5]),
      "dA training did not reduce cost: %r ... %r" % (epoch_costs[:3], epoch_costs[-3:]))
check(np.all(np.isfinite(epoch_costs)), "non-finite dA cost")

# --- other RandomStreams distributions: shapes and rough moments
srng = RandomStreams(seed=234)
u = srng.uniform((2000,), low=-1., high=3.)
n = srng.normal((2000,), avg=2., std=0.5)
ri = srng.random_integers((2000,), low=0, high=4)
f_rng = theano.function([], [u, n, ri])
uv, nv, riv = f_rng()
check(uv.shape == (2000,) and uv.min() >= -1 and uv.max() < 3 and abs(uv.mean() - 1) < 0.1, "uniform moments")
check(abs(nv.mean() - 2) < 0.05 and abs(nv.std() - 0.5) < 0.05, "normal moments %r %r" % (nv.mean(), nv.std()))
check(riv.min() == 0 and riv.max() == 4 and 'int' in str(riv.dtype), "random_integers range/dtype")
uv2 = f_rng()[0]
check(not np.array_equal(uv, uv2), "uniform stream did not advance")
# no_default_updates: the same sample each call
f_fixed = theano.function([], u, no_default_updates=True)
check(np.array_equal(f_fixed(), f_fixed()), "no_default_updates=True should freeze the random state")

if FAIL:
    print("%d FAILURES" % len(FAIL))
    sys.exit(1)
print("OK t04_dA")
