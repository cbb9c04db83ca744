"""LeNet-style convnet: conv2d + pool_2d + tanh, flatten, hidden, softmax (DeepLearningTutorials
convolutional_mlp.py style), checked against a numpy implementation; pooling modes; gradients."""
import sys
import numpy as np
import hypatia as theano
import hypatia.tensor as T
from hypatia.tensor.nnet import conv2d
from hypatia.tensor.signal import pool

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


rng = np.random.RandomState(23455)


def np_conv2d(x, w, mode='valid', flip=True, subsample=(1, 1)):
    """x: (b, c, h, w); w: (k, c, kh, kw); true convolution if flip."""
    if flip:
        w = w[:, :, ::-1, ::-1]
    kh, kw = w.shape[2:]
    if mode == 'full':
        x = np.pad(x, ((0, 0), (0, 0), (kh - 1, kh - 1), (kw - 1, kw - 1)), mode='constant')
    elif mode == 'half':
        x = np.pad(x, ((0, 0), (0, 0), (kh // 2, kh // 2), (kw // 2, kw // 2)), mode='constant')
    b, c, H, W = x.shape
    oh, ow = H - kh + 1, W - kw + 1
    out = np.zeros((b, w.shape[0], oh, ow))
    for i in range(oh):
        for j in range(ow):
            patch = x[:, :, i:i + kh, j:j + kw]  # b c kh kw
            out[:, :, i, j] = np.tensordot(patch, w, axes=([1, 2, 3], [1, 2, 3]))
    return out[:, :, ::subsample[0], ::subsample[1]]


def np_pool(x, ws, ignore_border=True, stride=None, pad=(0, 0), mode='max'):
    stride = stride or ws
    b, c, H, W = x.shape
    Hp, Wp = H + 2 * pad[0], W + 2 * pad[1]
    xp = np.zeros((b, c, Hp, Wp))
    xp[:, :, pad[0]:pad[0] + H, pad[1]:pad[1] + W] = x
    if ignore_border:
        oh = (Hp - ws[0]) // stride[0] + 1
        ow = (Wp - ws[1]) // stride[1] + 1
    else:
        oh = max(0, (Hp - 1 - ws[0] + stride[0]) // stride[0]) + 1 if stride[0] < ws[0] else (Hp - 1) // stride[0] + 1
        ow = max(0, (Wp - 1 - ws[1] + stride[1]) // stride[1]) + 1 if stride[1] < ws[1] else (Wp - 1) // stride[1] + 1
    out = np.zeros((b, c, oh, ow))
    for i in range(oh):
        for j in range(ow):
            r0, c0 = i * stride[0], j * stride[1]
            r1, c1 = min(r0 + ws[0], Hp), min(c0 + ws[1], Wp)
            if mode != 'average_inc_pad':
                # Theano excludes the padding from the window for every mode but average_inc_pad
                r0, r1 = max(r0, pad[0]), min(r1, pad[0] + H)
                c0, c1 = max(c0, pad[1]), min(c1, pad[1] + W)
            win = xp[:, :, r0:r1, c0:c1]
            if mode == 'max':
                out[:, :, i, j] = win.max(axis=(2, 3))
            elif mode == 'sum':
                out[:, :, i, j] = win.sum(axis=(2, 3))
            else:
                out[:, :, i, j] = win.mean(axis=(2, 3))
    return out


# ---------------------------------------------------------------- standalone conv2d checks
xi = T.tensor4('xi')
wi = T.tensor4('wi')
xv = rng.randn(2, 3, 7, 6)
wv = rng.randn(4, 3, 3, 2)
for mode in ['valid', 'full', 'half']:
    if mode == 'half':
        wv_ = rng.randn(4, 3, 3, 3)
    else:
        wv_ = wv
    f = theano.function([xi, wi], conv2d(xi, wi, border_mode=mode))
    close(f(xv, wv_), np_conv2d(xv, wv_, mode), "conv2d border_mode=%s" % mode)
f = theano.function([xi, wi], conv2d(xi, wi, filter_flip=False))
close(f(xv, wv), np_conv2d(xv, wv, flip=False), "conv2d filter_flip=False (correlation)")
f = theano.function([xi, wi], conv2d(xi, wi, subsample=(2, 2), input_shape=(2, 3, 7, 6), filter_shape=(4, 3, 3, 2)))
close(f(xv, wv), np_conv2d(xv, wv, subsample=(2, 2)), "conv2d subsample=(2,2)")

# ---------------------------------------------------------------- pooling checks
pv = rng.randn(2, 3, 5, 7)
cases = [
    dict(ws=(2, 2), ignore_border=True),
    dict(ws=(2, 2), ignore_border=False),
    dict(ws=(3, 2), ignore_border=True, stride=(1, 2)),
    dict(ws=(2, 2), ignore_border=True, mode='sum'),
    dict(ws=(2, 2), ignore_border=True, mode='average_inc_pad'),
    dict(ws=(3, 3), ignore_border=True, pad=(1, 1), mode='average_exc_pad'),
    dict(ws=(3, 3), ignore_border=True, pad=(1, 1), mode='average_inc_pad'),
    dict(ws=(3, 3), ignore_border=True, pad=(1, 1), stride=(2, 2), mode='max'),
]
for kw in cases:
    try:
        f = theano.function([xi], pool.pool_2d(xi, **kw))
        close(f(pv), np_pool(pv, **kw), "pool_2d %r" % (kw,))
    except Exception as e:
        check(False, "pool_2d %r raised %s: %s" % (kw, type(e).__name__, e))

# gradient of max pooling: routes to the argmax
g = T.grad(pool.pool_2d(xi, ws=(2, 2), ignore_border=True).sum(), xi)
gv = theano.function([xi], g)(pv)
exp = np.zeros_like(pv)
for i in range(2):
    for j in range(3):
        blk = pv[:, :, 2 * i:2 * i + 2, 2 * j:2 * j + 2].reshape(2, 3, 4)
        am = blk.argmax(-1)
        for bb in range(2):
            for cc in range(3):
                exp[bb, cc, 2 * i + am[bb, cc] // 2, 2 * j + am[bb, cc] % 2] = 1
close(gv, exp, "grad of max pool")


# ---------------------------------------------------------------- LeNet
class LeNetConvPoolLayer(object):
    def __init__(self, rng, input, filter_shape, image_shape, poolsize=(2, 2)):
        assert image_shape[1] == filter_shape[1]
        fan_in = np.prod(filter_shape[1:])
        fan_out = (filter_shape[0] * np.prod(filter_shape[2:]) // np.prod(poolsize))
        W_bound = np.sqrt(6. / (fan_in + fan_out))
        self.W = theano.shared(np.asarray(rng.uniform(low=-W_bound, high=W_bound, size=filter_shape),
                                          dtype=theano.config.floatX), borrow=True)
        b_values = np.asarray(0.1 * rng.randn(filter_shape[0]), dtype=theano.config.floatX)
        self.b = theano.shared(value=b_values, borrow=True)
        conv_out = conv2d(input=input, filters=self.W, filter_shape=filter_shape, input_shape=image_shape)
        pooled_out = pool.pool_2d(input=conv_out, ws=poolsize, ignore_border=True)
        self.output = T.tanh(pooled_out + self.b.dimshuffle('x', 0, 'x', 'x'))
        self.params = [self.W, self.b]


batch_size = 5
x = T.matrix('x')
y = T.ivector('y')
layer0_input = x.reshape((batch_size, 1, 12, 12))
layer0 = LeNetConvPoolLayer(rng, input=layer0_input, image_shape=(batch_size, 1, 12, 12),
                            filter_shape=(4, 1, 3, 3), poolsize=(2, 2))
layer1 = LeNetConvPoolLayer(rng, input=layer0.output, image_shape=(batch_size, 4, 5, 5),
                            filter_shape=(6, 4, 2, 2), poolsize=(2, 2))
layer2_input = layer1.output.flatten(2)
W2 = theano.shared(np.asarray(rng.uniform(-0.3, 0.3, (24, 10)), dtype=theano.config.floatX), borrow=True)
b2 = theano.shared(np.zeros(10, dtype=theano.config.floatX), borrow=True)
hid = T.tanh(T.dot(layer2_input, W2) + b2)
W3 = theano.shared(np.asarray(rng.uniform(-0.3, 0.3, (10, 3)), dtype=theano.config.floatX), borrow=True)
b3 = theano.shared(np.zeros(3, dtype=theano.config.floatX), borrow=True)
p_y = T.nnet.softmax(T.dot(hid, W3) + b3)
cost = -T.mean(T.log(p_y)[T.arange(y.shape[0]), y])
params = layer0.params + layer1.params + [W2, b2, W3, b3]
grads = T.grad(cost, params)

Xd = rng.rand(batch_size, 144)
Yd = np.array([0, 1, 2, 1, 0], dtype='int32')


def np_forward(pv_):
    w0, bb0, w1, bb1, w2, bb2, w3, bb3 = pv_
    h0 = np.tanh(np_pool(np_conv2d(Xd.reshape(batch_size, 1, 12, 12), w0), (2, 2)) + bb0[None, :, None, None])
    h1 = np.tanh(np_pool(np_conv2d(h0, w1), (2, 2)) + bb1[None, :, None, None])
    h2 = np.tanh(h1.reshape(batch_size, -1).dot(w2) + bb2)
    a = h2.dot(w3) + bb3
    a = a - a.max(1, keepdims=True)
    lp = a - np.log(np.exp(a).sum(1, keepdims=True))
    return -np.mean(lp[np.arange(batch_size), Yd])


f = theano.function([x, y], [cost] + grads)
res = f(Xd, Yd)
P0 = [p.get_value() for p in params]
tol = 1e-9 if theano.config.floatX == 'float64' else 1e-4
close(res[0], np_forward(P0), "LeNet forward cost", rtol=max(tol, 1e-7))
eps = 1e-5 if theano.config.floatX == 'float64' else 1e-2
for k in range(len(params)):
    gk = np.asarray(res[1 + k])
    flat_idx = rng.choice(P0[k].size, size=min(6, P0[k].size), replace=False)
    for fi in flat_idx:
        idx = np.unravel_index(fi, P0[k].shape)
        Pp = [p.astype('float64').copy() for p in P0]
        Pp[k][idx] += eps
        cp = np_forward(Pp)
        Pp[k][idx] -= 2 * eps
        cm = np_forward(Pp)
        fd = (cp - cm) / (2 * eps)
        check(abs(fd - gk[idx]) <= 1e-4 + 1e-3 * abs(fd),
              "LeNet grad param %d idx %s: theano %r fd %r" % (k, idx, gk[idx], fd))

lr = 0.1
train = theano.function([x, y], cost, updates=[(p, p - lr * g) for p, g in zip(params, grads)])
costs = [float(train(Xd, Yd)) for _ in range(60)]
check(costs[-1] < 0.5 * costs[0], "LeNet training did not reduce cost: %r -> %r" % (costs[0], costs[-1]))

if FAIL:
    print("%d FAILURES" % len(FAIL))
    sys.exit(1)
print("OK t03_lenet")
