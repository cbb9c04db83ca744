"""MLP with L1/L2 regularization, momentum SGD via OrderedDict updates, theano.clone,
finite-difference gradient check (DeepLearningTutorials mlp.py style)."""
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


def close(a, b, msg, rtol=1e-5, atol=1e-7):
    a = np.asarray(a)
    b = np.asarray(b)
    ok = a.shape == b.shape and np.allclose(a, b, rtol=rtol, atol=atol)
    check(ok, "%s: shapes %s vs %s; got %r expected %r" % (msg, a.shape, b.shape, a.ravel()[:6], b.ravel()[:6]))


rng = np.random.RandomState(23455)
floatX = 'float64'  # the gradient check wants double precision


class HiddenLayer(object):
    def __init__(self, rng, input, n_in, n_out, W=None, b=None, activation=T.tanh):
        self.input = input
        if W is None:
            W_values = np.asarray(
                rng.uniform(low=-np.sqrt(6. / (n_in + n_out)), high=np.sqrt(6. / (n_in + n_out)),
                            size=(n_in, n_out)), dtype=floatX)
            if activation == T.nnet.sigmoid:
                W_values *= 4
            W = theano.shared(value=W_values, name='W', borrow=True)
        if b is None:
            b_values = np.asarray(0.1 * rng.randn(n_out), dtype=floatX)
            b = theano.shared(value=b_values, name='b', borrow=True)
        self.W = W
        self.b = b
        lin_output = T.dot(input, self.W) + self.b
        self.output = lin_output if activation is None else activation(lin_output)
        self.params = [self.W, self.b]


class LogisticRegression(object):
    def __init__(self, input, n_in, n_out):
        self.W = theano.shared(np.asarray(0.1 * rng.randn(n_in, n_out), dtype=floatX), name='W', borrow=True)
        self.b = theano.shared(np.zeros((n_out,), dtype=floatX), name='b', borrow=True)
        self.p_y_given_x = T.nnet.softmax(T.dot(input, self.W) + self.b)
        self.y_pred = T.argmax(self.p_y_given_x, axis=1)
        self.params = [self.W, self.b]

    def negative_log_likelihood(self, y):
        return -T.mean(T.log(self.p_y_given_x)[T.arange(y.shape[0]), y])


class MLP(object):
    def __init__(self, rng, input, n_in, n_hidden, n_out):
        self.hiddenLayer = HiddenLayer(rng=rng, input=input, n_in=n_in, n_out=n_hidden, activation=T.tanh)
        self.logRegressionLayer = LogisticRegression(input=self.hiddenLayer.output, n_in=n_hidden, n_out=n_out)
        self.L1 = abs(self.hiddenLayer.W).sum() + abs(self.logRegressionLayer.W).sum()
        self.L2_sqr = (self.hiddenLayer.W ** 2).sum() + (self.logRegressionLayer.W ** 2).sum()
        self.negative_log_likelihood = self.logRegressionLayer.negative_log_likelihood
        self.params = self.hiddenLayer.params + self.logRegressionLayer.params
        self.input = input


n_in, n_hidden, n_out, N = 8, 6, 3, 40
X = rng.randn(N, n_in)
Y = (np.abs(X[:, 0]) + X[:, 1] > 0.8).astype('int32') + (X[:, 2] > 1).astype('int32')
x = T.matrix('x', dtype=floatX)
y = T.ivector('y')
classifier = MLP(rng=rng, input=x, n_in=n_in, n_hidden=n_hidden, n_out=n_out)
L1_reg, L2_reg = 0.001, 0.0001
cost = classifier.negative_log_likelihood(y) + L1_reg * classifier.L1 + L2_reg * classifier.L2_sqr
gparams = [T.grad(cost, param) for param in classifier.params]


def np_cost(params, Xv, Yv):
    W1, b1, W2, b2 = params
    h = np.tanh(Xv.dot(W1) + b1)
    a = h.dot(W2) + b2
    a = a - a.max(1, keepdims=True)
    logp = a - np.log(np.exp(a).sum(1, keepdims=True))
    nll = -np.mean(logp[np.arange(len(Yv)), Yv])
    return nll + L1_reg * (np.abs(W1).sum() + np.abs(W2).sum()) + L2_reg * ((W1 ** 2).sum() + (W2 ** 2).sum())


f_cost_grads = theano.function([x, y], [cost] + gparams)
out = f_cost_grads(X, Y)
params0 = [p.get_value() for p in classifier.params]
close(out[0], np_cost(params0, X, Y), "MLP cost forward", rtol=1e-10)

eps = 1e-6
for pi, (p, g) in enumerate(zip(params0, out[1:])):
    fd = np.zeros_like(p)
    it = np.nditer(p, flags=['multi_index'])
    while not it.finished:
        idx = it.multi_index
        pp_ = [q.copy() for q in params0]
        pp_[pi][idx] += eps
        cp = np_cost(pp_, X, Y)
        pp_[pi][idx] -= 2 * eps
        cm = np_cost(pp_, X, Y)
        fd[idx] = (cp - cm) / (2 * eps)
        it.iternext()
    close(g, fd, "grad of param %d (%s) vs finite differences" % (pi, classifier.params[pi].name),
          rtol=1e-4, atol=1e-6)

# momentum SGD via OrderedDict
learning_rate, momentum = 0.05, 0.9
updates = OrderedDict()
velocities = []
for param, gparam in zip(classifier.params, gparams):
    v = theano.shared(np.zeros(param.get_value(borrow=True).shape, dtype=param.dtype),
                      broadcastable=param.broadcastable, name='v_' + str(param.name))
    velocities.append(v)
    new_v = momentum * v - learning_rate * gparam
    updates[v] = new_v
    updates[param] = param + new_v
train = theano.function([x, y], cost, updates=updates)

c_first = train(X, Y)
close(c_first, np_cost(params0, X, Y), "train returns pre-update cost", rtol=1e-10)
for p, p0, g in zip(classifier.params, params0, out[1:]):
    close(p.get_value(), p0 - learning_rate * g, "param %s after first momentum step" % p.name, rtol=1e-8, atol=1e-10)
for v, g in zip(velocities, out[1:]):
    close(v.get_value(), -learning_rate * g, "velocity after first step", rtol=1e-8, atol=1e-12)
# second step: v2 = m v1 - lr g(p1)
params1 = [p.get_value() for p in classifier.params]
g1 = f_cost_grads(X, Y)[1:]
train(X, Y)
for p, p1, v, g in zip(classifier.params, params1, velocities, g1):
    v2 = momentum * (-learning_rate * np.asarray(out[1 + classifier.params.index(p)])) - learning_rate * g
    close(p.get_value(), p1 + v2, "param %s after second momentum step" % p.name, rtol=1e-8, atol=1e-10)

costs = [float(train(X, Y)) for _ in range(150)]
check(costs[-1] < 0.6 * c_first, "MLP training did not reduce cost enough: first %r last %r" % (c_first, costs[-1]))

# theano.clone: replace the input by another expression
x2 = T.matrix('x2', dtype=floatX)
hid_clone = theano.clone(classifier.hiddenLayer.output, replace={x: 2 * x2})
f_clone = theano.function([x2], hid_clone)
W1, b1 = classifier.hiddenLayer.W.get_value(), classifier.hiddenLayer.b.get_value()
close(f_clone(X), np.tanh((2 * X).dot(W1) + b1), "theano.clone replace input")
# clone replacing a shared variable with a different one; the original graph must be untouched
W_alt = theano.shared(np.ones_like(W1), name='W_alt')
hid_alt = theano.clone(classifier.hiddenLayer.output, replace=[(classifier.hiddenLayer.W, W_alt)])
f_alt = theano.function([x], [hid_alt, classifier.hiddenLayer.output])
a1, a2 = f_alt(X)
close(a1, np.tanh(X.dot(np.ones_like(W1)) + b1), "clone replacing shared W")
close(a2, np.tanh(X.dot(W1) + b1), "original graph after clone")

if FAIL:
    print("%d FAILURES" % len(FAIL))
    sys.exit(1)
print("OK t02_mlp")
