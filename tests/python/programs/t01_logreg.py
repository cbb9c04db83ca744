"""Logistic regression with minibatches and givens (DeepLearningTutorials logistic_sgd.py style)."""
import sys
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
    check(ok, "%s: got %r expected %r" % (msg, a if a.size < 20 else a.ravel()[:10],
                                          b if b.size < 20 else b.ravel()[:10]))


floatX = theano.config.floatX
tol = 1e-5 if floatX == 'float64' else 1e-3

rng = np.random.RandomState(1234)
n_in, n_out, n_train, batch_size = 20, 4, 200, 25
W_true = rng.randn(n_in, n_out)
X = rng.randn(n_train, n_in)
Y = np.argmax(X.dot(W_true) + 0.5 * rng.randn(n_train, n_out), axis=1)


def shared_dataset(data_xy, borrow=True):
    data_x, data_y = data_xy
    shared_x = theano.shared(np.asarray(data_x, dtype=theano.config.floatX), borrow=borrow)
    shared_y = theano.shared(np.asarray(data_y, dtype=theano.config.floatX), borrow=borrow)
    return shared_x, T.cast(shared_y, 'int32')


class LogisticRegression(object):
    def __init__(self, input, n_in, n_out):
        self.W = theano.shared(value=np.zeros((n_in, n_out), dtype=theano.config.floatX),
                               name='W', borrow=True)
        self.b = theano.shared(value=np.zeros((n_out,), dtype=theano.config.floatX),
                               name='b', borrow=True)
        self.p_y_given_x = T.nnet.softmax(T.dot(input, self.W) + self.b)
        self.y_pred = T.argmax(self.p_y_given_x, axis=1)
        self.params = [self.W, self.b]
        self.input = input

    def negative_log_likelihood(self, y):
        return -T.mean(T.log(self.p_y_given_x)[T.arange(y.shape[0]), y])

    def errors(self, y):
        if y.ndim != self.y_pred.ndim:
            raise TypeError('y should have the same shape as self.y_pred',
                            ('y', y.type, 'y_pred', self.y_pred.type))
        if y.dtype.startswith('int'):
            return T.mean(T.neq(self.y_pred, y))
        else:
            raise NotImplementedError()


train_set_x, train_set_y = shared_dataset((X, Y))
check(train_set_y.dtype == 'int32', "T.cast(shared,'int32').dtype = %r" % train_set_y.dtype)
n_train_batches = train_set_x.get_value(borrow=True).shape[0] // batch_size

index = T.lscalar()
x = T.matrix('x')
y = T.ivector('y')
classifier = LogisticRegression(input=x, n_in=n_in, n_out=n_out)
cost = classifier.negative_log_likelihood(y)

g_W = T.grad(cost=cost, wrt=classifier.W)
g_b = T.grad(cost=cost, wrt=classifier.b)
learning_rate = 0.13
updates = [(classifier.W, classifier.W - learning_rate * g_W),
           (classifier.b, classifier.b - learning_rate * g_b)]

train_model = theano.function(
    inputs=[index], outputs=cost, updates=updates,
    givens={x: train_set_x[index * batch_size: (index + 1) * batch_size],
            y: train_set_y[index * batch_size: (index + 1) * batch_size]})
test_model = theano.function(
    inputs=[index], outputs=classifier.errors(y),
    givens={x: train_set_x[index * batch_size: (index + 1) * batch_size],
            y: train_set_y[index * batch_size: (index + 1) * batch_size]})
grad_fn = theano.function([x, y], [cost, g_W, g_b, classifier.y_pred, classifier.p_y_given_x])


def np_softmax(a):
    e = np.exp(a - a.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def np_all(Wv, bv, xb, yb):
    P = np_softmax(xb.dot(Wv) + bv)
    n = xb.shape[0]
    nll = -np.mean(np.log(P[np.arange(n), yb]))
    Yh = np.zeros_like(P)
    Yh[np.arange(n), yb] = 1
    gW = xb.T.dot(P - Yh) / n
    gb = (P - Yh).mean(axis=0)
    return nll, gW, gb, P


# nonzero start to make the gradient check meaningful
W0 = (0.1 * rng.randn(n_in, n_out)).astype(floatX)
b0 = (0.1 * rng.randn(n_out)).astype(floatX)
classifier.W.set_value(W0)
classifier.b.set_value(b0)

xb = X[:batch_size].astype(floatX)
yb = Y[:batch_size].astype('int32')
c, gW, gb, yp, P = grad_fn(xb, yb)
nll_np, gW_np, gb_np, P_np = np_all(W0.astype('float64'), b0.astype('float64'), xb.astype('float64'), yb)
close(c, nll_np, "nll forward", rtol=tol)
close(gW, gW_np, "grad W", rtol=tol, atol=tol)
close(gb, gb_np, "grad b", rtol=tol, atol=tol)
close(P, P_np, "softmax", rtol=tol, atol=tol)
check(np.array_equal(yp, P_np.argmax(1)), "y_pred argmax")

# one training step on minibatch 0 must equal a numpy SGD step
c0 = train_model(0)
close(c0, nll_np, "train_model(0) returns pre-update cost", rtol=tol)
close(classifier.W.get_value(), W0 - learning_rate * gW_np, "W after one SGD step", rtol=tol, atol=tol)
close(classifier.b.get_value(), b0 - learning_rate * gb_np, "b after one SGD step", rtol=tol, atol=tol)

# train several epochs; the epoch-mean cost must decrease
epoch_costs = []
for epoch in range(15):
    cs = [train_model(i) for i in range(n_train_batches)]
    epoch_costs.append(float(np.mean(cs)))
check(epoch_costs[-1] < epoch_costs[0] * 0.8, "training cost did not decrease: %r" % epoch_costs)
errs = np.mean([test_model(i) for i in range(n_train_batches)])
Wf, bf = classifier.W.get_value(), classifier.b.get_value()
np_err = np.mean(np.argmax(X.dot(Wf) + bf, axis=1) != Y)
close(errs, np_err, "test_model error rate vs numpy")
check(errs < 0.3, "training error too high: %r" % errs)

# the returned cost type: a 0-d numpy array (Theano returns numpy.ndarray of shape ())
check(isinstance(c0, np.ndarray) and c0.shape == (), "scalar output should be 0-d ndarray, got %r" % type(c0))

if FAIL:
    print("%d FAILURES" % len(FAIL))
    sys.exit(1)
print("OK t01_logreg")
