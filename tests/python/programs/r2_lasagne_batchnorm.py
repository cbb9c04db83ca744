"""A Lasagne-0.2-style mini library (layers, get_output, adam, norm constraints) on hypatia."""
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

class BatchNormLayer(Layer):
    def __init__(self, incoming, axes='auto', epsilon=1e-4, alpha=0.1, **kw):
        super(BatchNormLayer, self).__init__(incoming, **kw)
        if axes == 'auto':
            axes = (0,) + tuple(range(2, len(self.input_shape)))
        self.axes, self.epsilon, self.alpha = axes, epsilon, alpha
        shape = [size for axis, size in enumerate(self.input_shape) if axis not in self.axes]
        self.beta = self.add_param(np.zeros(shape), shape, 'beta', regularizable=False)
        self.gamma = self.add_param(np.ones(shape), shape, 'gamma', regularizable=True)
        self.mean = self.add_param(np.zeros(shape), shape, 'mean', trainable=False, regularizable=False)
        self.inv_std = self.add_param(np.ones(shape), shape, 'inv_std', trainable=False, regularizable=False)
    def get_output_shape_for(self, s):
        return s
    def get_output_for(self, input, deterministic=False, batch_norm_use_averages=None, batch_norm_update_averages=None, **kwargs):
        input_mean = input.mean(self.axes)
        input_inv_std = T.inv(T.sqrt(input.var(self.axes) + self.epsilon))
        use_averages = deterministic if batch_norm_use_averages is None else batch_norm_use_averages
        if use_averages:
            mean = self.mean
            inv_std = self.inv_std
        else:
            mean = input_mean
            inv_std = input_inv_std
        update_averages = (not deterministic) if batch_norm_update_averages is None else batch_norm_update_averages
        if update_averages:
            running_mean = theano.clone(self.mean, share_inputs=False)
            running_inv_std = theano.clone(self.inv_std, share_inputs=False)
            running_mean.default_update = ((1 - self.alpha) * running_mean + self.alpha * input_mean)
            running_inv_std.default_update = ((1 - self.alpha) * running_inv_std + self.alpha * input_inv_std)
            mean += 0 * running_mean
            inv_std += 0 * running_inv_std
        param_axes = iter(range(input.ndim - len(self.axes)))
        pattern = ['x' if input_axis in self.axes else next(param_axes) for input_axis in range(input.ndim)]
        beta = self.beta.dimshuffle(pattern)
        gamma = self.gamma.dimshuffle(pattern)
        mean = mean.dimshuffle(pattern)
        inv_std = inv_std.dimshuffle(pattern)
        normalized = (input - mean) * (gamma * inv_std) + beta
        return normalized

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
net = BatchNormLayer(net)
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

N = 60
yv = rng.randint(0, 3, N).astype('int32')
xv = rng.randn(N, 1, 8, 8).astype(floatX) * 0.5
for i in range(N):
    xv[i, 0, yv[i] * 2:yv[i] * 2 + 3, :] += 1.5
bn = [l for l in get_all_layers(net) if isinstance(l, BatchNormLayer)][0]
losses = [float(train_fn(xv, yv)) for _ in range(25)]
check(losses[-1] < losses[0], "lasagne CNN learns: %r" % losses[::8])
check(not np.allclose(bn.mean.get_value(), 0), "BatchNorm running mean updated by training")
m0 = bn.mean.get_value().copy(); s0 = bn.inv_std.get_value().copy()
vl, acc = val_fn(xv + 5, yv)
close(bn.mean.get_value(), m0, "BatchNorm running mean NOT changed by a deterministic (validation) function")
close(bn.inv_std.get_value(), s0, "BatchNorm running inv_std NOT changed by validation")
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
