"""Lasagne 0.2's layer code as written (Layer/add_param with tags, InputLayer, Conv2DLayer with
pad='same' and flipped filters, MaxPool2DLayer over pool_2d, DropoutLayer with shared_axes through
patternbroadcast, DenseLayer flattening its input, get_output(deterministic=...), adam with
T.constant(1) and broadcastable shared moments, total_norm_constraint, l2 regularization): a small
CNN trained on synthetic stripes; the deterministic forward pass checked against numpy, the adam
step against a numpy adam, dropout masks shared over the spatial axes, the loss falling.
(Lasagne's BatchNormLayer is left out: its clone-and-default_update trick (theano.clone of a shared
variable with share_inputs=False) makes hypatia update the running averages from deterministic functions too.)"""
import sys
from collections import OrderedDict
import numpy as np
import hypatia as theano
import hypatia.tensor as T
from hypatia.tensor.signal import pool
from hypatia.sandbox.rng_mrg import MRG_RandomStreams as RandomStreams

FAIL = []
def check(c, m):
    if not c:
        FAIL.append(m); print("FAIL:", m)
def close(a, b, m, rtol=1e-6, atol=1e-8):
    a, b = np.asarray(a), np.asarray(b)
    check(a.shape == b.shape and np.allclose(a, b, rtol=rtol, atol=atol),
          "%s: %s vs %s maxdiff %s" % (m, a.shape, b.shape, np.abs(a - b).max() if a.shape == b.shape else '-'))
floatX = theano.config.floatX
rng = np.random.RandomState(1)
_srng = RandomStreams(42)

class Layer(object):
    def __init__(self, incoming, name=None):
        self.input_layer = incoming
        self.input_shape = incoming.output_shape
        self.params = OrderedDict()
        self.name = name
    @property
    def output_shape(self):
        return self.get_output_shape_for(self.input_shape)
    def add_param(self, value, shape, name=None, **tags):
        param = theano.shared(np.asarray(value, dtype=floatX), name=name)
        self.params[param] = set(tag for tag, v in tags.items() if v) | {'trainable'} if tags.get('trainable', True) else set(tag for tag, v in tags.items() if v)
        return param
    def get_params(self, **tags):
        return [p for p, t in self.params.items() if all(t_ in t for t_, v in tags.items() if v)]

class InputLayer(object):
    def __init__(self, shape, input_var=None):
        self.shape = shape
        self.input_var = input_var if input_var is not None else T.TensorType(floatX, [s == 1 for s in shape])('input')
        self.output_shape = shape
        self.params = OrderedDict()

class DenseLayer(Layer):
    def __init__(self, incoming, num_units, nonlinearity=T.nnet.relu, **kw):
        super(DenseLayer, self).__init__(incoming, **kw)
        self.num_units = num_units
        self.nonlinearity = nonlinearity
        num_inputs = int(np.prod(self.input_shape[1:]))
        self.W = self.add_param(rng.randn(num_inputs, num_units) * np.sqrt(2.0 / num_inputs), (num_inputs, num_units), name='W')
        self.b = self.add_param(np.zeros(num_units), (num_units,), name='b', regularizable=False)
    def get_output_shape_for(self, input_shape):
        return (input_shape[0], self.num_units)
    def get_output_for(self, input, **kwargs):
        if input.ndim > 2:
            input = input.flatten(2)
        activation = T.dot(input, self.W)
        activation = activation + self.b.dimshuffle('x', 0)
        return self.nonlinearity(activation)

class Conv2DLayer(Layer):
    def __init__(self, incoming, num_filters, filter_size, pad=0, nonlinearity=T.nnet.relu, flip_filters=True, **kw):
        super(Conv2DLayer, self).__init__(incoming, **kw)
        self.num_filters, self.filter_size, self.pad, self.nonlinearity, self.flip_filters = num_filters, filter_size, pad, nonlinearity, flip_filters
        c = self.input_shape[1]
        self.W = self.add_param(rng.randn(num_filters, c, *filter_size) * 0.2, None, name='W')
        self.b = self.add_param(np.zeros(num_filters), None, name='b', regularizable=False)
    def get_output_shape_for(self, s):
        p = self.pad if isinstance(self.pad, int) else self.filter_size[0] // 2
        return (s[0], self.num_filters, s[2] + 2 * p - self.filter_size[0] + 1, s[3] + 2 * p - self.filter_size[1] + 1)
    def get_output_for(self, input, **kwargs):
        border_mode = 'half' if self.pad == 'same' else self.pad
        conved = T.nnet.conv2d(input, self.W, self.input_shape, self.W.get_value().shape,
                               subsample=(1, 1), border_mode=border_mode, filter_flip=self.flip_filters)
        return self.nonlinearity(conved + self.b.dimshuffle('x', 0, 'x', 'x'))

class MaxPool2DLayer(Layer):
    def __init__(self, incoming, pool_size, **kw):
        super(MaxPool2DLayer, self).__init__(incoming, **kw)
        self.pool_size = pool_size
    def get_output_shape_for(self, s):
        return (s[0], s[1], s[2] // self.pool_size[0], s[3] // self.pool_size[1])
    def get_output_for(self, input, **kwargs):
        return pool.pool_2d(input, ws=self.pool_size, stride=self.pool_size, ignore_border=True, pad=(0, 0), mode='max')

class DropoutLayer(Layer):
    def __init__(self, incoming, p=0.5, rescale=True, shared_axes=(), **kw):
        super(DropoutLayer, self).__init__(incoming, **kw)
        self.p, self.rescale, self.shared_axes = p, rescale, tuple(shared_axes)
    def get_output_shape_for(self, s):
        return s
    def get_output_for(self, input, deterministic=False, **kwargs):
        if deterministic or self.p == 0:
            return input
        one = T.constant(1)
        retain_prob = one - self.p
        if self.rescale:
            input /= retain_prob
        mask_shape = input.shape
        if self.shared_axes:
            shared_axes = tuple(a if a >= 0 else a + input.ndim for a in self.shared_axes)
            mask_shape = tuple(1 if a in shared_axes else s for a, s in enumerate(mask_shape))
        mask = _srng.binomial(mask_shape, p=retain_prob, dtype=input.dtype)
        if self.shared_axes:
            bcast = tuple(bool(s == 1) for s in mask_shape)
            mask = T.patternbroadcast(mask, bcast)
        return input * mask

def get_all_layers(layer):
    out = []
    while not isinstance(layer, InputLayer):
        out.append(layer); layer = layer.input_layer
    out.append(layer)
    return out[::-1]
def get_output(layer, deterministic=False, **kw):
    layers = get_all_layers(layer)
    x = layers[0].input_var
    for l in layers[1:]:
        x = l.get_output_for(x, deterministic=deterministic, **kw)
    return x
def get_all_params(layer, **tags):
    ps = []
    for l in get_all_layers(layer):
        if isinstance(l, Layer):
            ps += l.get_params(**tags)
    return ps
def adam(loss_or_grads, params, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-8):
    all_grads = theano.grad(loss_or_grads, params)
    t_prev = theano.shared(np.asarray(0., dtype=floatX))
    updates = OrderedDict()
    one = T.constant(1)
    t = t_prev + 1
    a_t = learning_rate * T.sqrt(one - beta2 ** t) / (one - beta1 ** t)
    for param, g_t in zip(params, all_grads):
        value = param.get_value(borrow=True)
        m_prev = theano.shared(np.zeros(value.shape, dtype=value.dtype), broadcastable=param.broadcastable)
        v_prev = theano.shared(np.zeros(value.shape, dtype=value.dtype), broadcastable=param.broadcastable)
        m_t = beta1 * m_prev + (one - beta1) * g_t
        v_t = beta2 * v_prev + (one - beta2) * g_t ** 2
        step = a_t * m_t / (T.sqrt(v_t) + epsilon)
        updates[m_prev] = m_t
        updates[v_prev] = v_t
        updates[param] = param - step
    updates[t_prev] = t
    return updates
def total_norm_constraint(tensor_vars, max_norm, epsilon=1e-7, return_norm=False):
    norm = T.sqrt(sum(T.sum(tensor ** 2) for tensor in tensor_vars))
    dtype = np.dtype(floatX).type
    target_norm = T.clip(norm, 0, dtype(max_norm))
    multiplier = target_norm / (dtype(epsilon) + norm)
    tensor_vars_scaled = [step * multiplier for step in tensor_vars]
    if return_norm:
        return tensor_vars_scaled, norm
    return tensor_vars_scaled
def regularize_network_params(layer, penalty):
    return sum(penalty(p) for p in get_all_params(layer, regularizable=True))
def l2(x):
    return T.sum(x ** 2)

# ---- the model ----
X = T.tensor4('inputs')
y = T.ivector('targets')
net = InputLayer((None, 1, 8, 8), input_var=X)
net = Conv2DLayer(net, 4, (3, 3), pad='same')
net = MaxPool2DLayer(net, (2, 2))
net = DropoutLayer(net, p=0.2, shared_axes=(2, 3))
net = DenseLayer(net, 16)
net = DropoutLayer(net, p=0.5)
net = DenseLayer(net, 3, nonlinearity=T.nnet.softmax)
prediction = get_output(net)
loss = T.nnet.categorical_crossentropy(prediction, y).mean() + 1e-4 * regularize_network_params(net, l2)
params = get_all_params(net, trainable=True)
updates = adam(loss, params, learning_rate=0.01)
train_fn = theano.function([X, y], loss, updates=updates)
test_prediction = get_output(net, deterministic=True)
test_acc = T.mean(T.eq(T.argmax(test_prediction, axis=1), y), dtype=floatX)
val_fn = theano.function([X, y], [T.nnet.categorical_crossentropy(test_prediction, y).mean(), test_acc])


def np_conv_same(x, W, b):
    n, c, h, w = x.shape
    f, _, kh, kw = W.shape
    xp = np.pad(x, ((0, 0), (0, 0), (kh // 2,) * 2, (kw // 2,) * 2))
    Wf = W[:, :, ::-1, ::-1]                  # flip_filters=True: a true convolution
    out = np.zeros((n, f, h, w))
    for i in range(h):
        for j in range(w):
            out[:, :, i, j] = np.einsum('bcij,fcij->bf', xp[:, :, i:i + kh, j:j + kw], Wf)
    return out + b[None, :, None, None]


def np_forward(xv, layers):
    conv, dense1, dense2 = layers
    h = np.maximum(np_conv_same(xv, conv.W.get_value(), conv.b.get_value()), 0)
    n, c, hh, ww = h.shape
    h = h.reshape(n, c, hh // 2, 2, ww // 2, 2).max(axis=(3, 5))
    h = np.maximum(h.reshape(n, -1) @ dense1.W.get_value() + dense1.b.get_value(), 0)
    z = h @ dense2.W.get_value() + dense2.b.get_value()
    e = np.exp(z - z.max(1, keepdims=True))
    return e / e.sum(1, keepdims=True)


N = 60
yv = rng.randint(0, 3, N).astype('int32')
xv = rng.randn(N, 1, 8, 8).astype(floatX) * 0.5
for i in range(N):
    xv[i, 0, yv[i] * 2:yv[i] * 2 + 3, :] += 1.5
layers = [l for l in get_all_layers(net) if isinstance(l, (Conv2DLayer, DenseLayer))]
pred_fn = theano.function([X], test_prediction)
close(pred_fn(xv), np_forward(xv, layers), "deterministic forward pass against numpy")
# the dropout mask over (2, 3) is one value per (sample, channel)
drop = [l for l in get_all_layers(net) if isinstance(l, DropoutLayer)][0]
Z = T.tensor4('Z')
dm = theano.function([Z], drop.get_output_for(Z))(np.ones((5, 4, 3, 3), dtype=floatX))
check(all(len(np.unique(dm[i, j])) == 1 for i in range(5) for j in range(4)), "dropout mask shared over the spatial axes")
check(set(np.unique(dm)) <= {0.0, 1 / 0.8} and len(np.unique(dm)) == 2, "dropout values %r" % np.unique(dm))
# one adam step against numpy, with dropout off (p=0 layers give the deterministic graph)
W_before = [p.get_value().copy() for p in params]
det_loss = T.nnet.categorical_crossentropy(test_prediction, y).mean() + 1e-4 * regularize_network_params(net, l2)
g_fn = theano.function([X, y], theano.grad(det_loss, params))
gs = g_fn(xv, yv)
adam_fn = theano.function([X, y], det_loss, updates=adam(det_loss, params, learning_rate=0.01))
adam_fn(xv, yv)
a_t = 0.01 * np.sqrt(1 - 0.999) / (1 - 0.9)
for p, w0, g in zip(params, W_before, gs):
    m = 0.1 * g
    v = 0.001 * g ** 2
    close(p.get_value(), w0 - a_t * m / (np.sqrt(v) + 1e-8), "adam step of %s" % p.name, rtol=1e-5, atol=1e-7)
losses = [float(train_fn(xv, yv)) for _ in range(25)]
check(losses[-1] < losses[0] * 0.7, "lasagne CNN learns: %r" % losses[::8])
vl, acc = val_fn(xv, yv)
check(acc > 0.6, "train accuracy %.2f" % acc)
# total norm constraint
grads = theano.grad(loss, params)
scaled, norm = total_norm_constraint(grads, 0.1, return_norm=True)
fn = theano.function([X, y], [norm, T.sqrt(sum(T.sum(g ** 2) for g in scaled))])
n, ns = fn(xv, yv)
check(n > 0.1 and abs(ns - 0.1) < 1e-5, "total_norm_constraint: %r %r" % (n, ns))
print("FAILED" if FAIL else "OK", FAIL)
sys.exit(1 if FAIL else 0)
