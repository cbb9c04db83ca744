"""DLT lstm.py (imdb sentiment) as written: OrderedDict params, _slice, masks, dropout through
use_noise and tensor.switch, adadelta with two functions."""
from collections import OrderedDict
import sys
import numpy
import hypatia as theano
from hypatia import config
import hypatia.tensor as tensor
from hypatia.sandbox.rng_mrg import MRG_RandomStreams as RandomStreams

FAIL = []
def check(c, m):
    if not c:
        FAIL.append(m); print("FAIL:", m)

SEED = 123
numpy.random.seed(SEED)
def numpy_floatX(data):
    return numpy.asarray(data, dtype=config.floatX)
def zipp(params, tparams):
    for kk, vv in params.items():
        tparams[kk].set_value(vv)
def unzip(zipped):
    new_params = OrderedDict()
    for kk, vv in zipped.items():
        new_params[kk] = vv.get_value()
    return new_params
def dropout_layer(state_before, use_noise, trng):
    proj = tensor.switch(use_noise,
                         (state_before * trng.binomial(state_before.shape, p=0.5, n=1, dtype=state_before.dtype)),
                         state_before * 0.5)
    return proj
def _p(pp, name):
    return '%s_%s' % (pp, name)
def ortho_weight(ndim):
    W = numpy.random.randn(ndim, ndim)
    u, s, v = numpy.linalg.svd(W)
    return u.astype(config.floatX)
def param_init_lstm(options, params, prefix='lstm'):
    W = numpy.concatenate([ortho_weight(options['dim_proj']) for _ in range(4)], axis=1)
    params[_p(prefix, 'W')] = W
    U = numpy.concatenate([ortho_weight(options['dim_proj']) for _ in range(4)], axis=1)
    params[_p(prefix, 'U')] = U
    b = numpy.zeros((4 * options['dim_proj'],))
    params[_p(prefix, 'b')] = b.astype(config.floatX)
    return params
def init_params(options):
    params = OrderedDict()
    randn = numpy.random.rand(options['n_words'], options['dim_proj'])
    params['Wemb'] = (0.01 * randn).astype(config.floatX)
    params = param_init_lstm(options, params, prefix='lstm')
    params['U'] = 0.01 * numpy.random.randn(options['dim_proj'], options['ydim']).astype(config.floatX)
    params['b'] = numpy.zeros((options['ydim'],)).astype(config.floatX)
    return params
def init_tparams(params):
    tparams = OrderedDict()
    for kk, pp in params.items():
        tparams[kk] = theano.shared(params[kk], name=kk)
    return tparams
def lstm_layer(tparams, state_below, options, prefix='lstm', mask=None):
    nsteps = state_below.shape[0]
    if state_below.ndim == 3:
        n_samples = state_below.shape[1]
    else:
        n_samples = 1
    assert mask is not None
    def _slice(_x, n, dim):
        if _x.ndim == 3:
            return _x[:, :, n * dim:(n + 1) * dim]
        return _x[:, n * dim:(n + 1) * dim]
    def _step(m_, x_, h_, c_):
        preact = tensor.dot(h_, tparams[_p(prefix, 'U')])
        preact += x_
        i = tensor.nnet.sigmoid(_slice(preact, 0, options['dim_proj']))
        f = tensor.nnet.sigmoid(_slice(preact, 1, options['dim_proj']))
        o = tensor.nnet.sigmoid(_slice(preact, 2, options['dim_proj']))
        c = tensor.tanh(_slice(preact, 3, options['dim_proj']))
        c = f * c_ + i * c
        c = m_[:, None] * c + (1. - m_)[:, None] * c_
        h = o * tensor.tanh(c)
        h = m_[:, None] * h + (1. - m_)[:, None] * h_
        return h, c
    state_below = (tensor.dot(state_below, tparams[_p(prefix, 'W')]) + tparams[_p(prefix, 'b')])
    dim_proj = options['dim_proj']
    rval, updates = theano.scan(_step, sequences=[mask, state_below],
                                outputs_info=[tensor.alloc(numpy_floatX(0.), n_samples, dim_proj),
                                              tensor.alloc(numpy_floatX(0.), n_samples, dim_proj)],
                                name=_p(prefix, '_layers'), n_steps=nsteps)
    return rval[0]
def adadelta(lr, tparams, grads, x, mask, y, cost):
    zipped_grads = [theano.shared(p.get_value() * numpy_floatX(0.), name='%s_grad' % k) for k, p in tparams.items()]
    running_up2 = [theano.shared(p.get_value() * numpy_floatX(0.), name='%s_rup2' % k) for k, p in tparams.items()]
    running_grads2 = [theano.shared(p.get_value() * numpy_floatX(0.), name='%s_rgrad2' % k) for k, p in tparams.items()]
    zgup = [(zg, g) for zg, g in zip(zipped_grads, grads)]
    rg2up = [(rg2, 0.95 * rg2 + 0.05 * (g ** 2)) for rg2, g in zip(running_grads2, grads)]
    f_grad_shared = theano.function([x, mask, y], cost, updates=zgup + rg2up, name='adadelta_f_grad_shared')
    updir = [-tensor.sqrt(ru2 + 1e-6) / tensor.sqrt(rg2 + 1e-6) * zg for zg, ru2, rg2 in zip(zipped_grads, running_up2, running_grads2)]
    ru2up = [(ru2, 0.95 * ru2 + 0.05 * (ud ** 2)) for ru2, ud in zip(running_up2, updir)]
    param_up = [(p, p + ud) for p, ud in zip(tparams.values(), updir)]
    f_update = theano.function([lr], [], updates=ru2up + param_up, on_unused_input='ignore', name='adadelta_f_update')
    return f_grad_shared, f_update
def build_model(tparams, options):
    trng = RandomStreams(SEED)
    use_noise = theano.shared(numpy_floatX(0.))
    x = tensor.matrix('x', dtype='int64')
    mask = tensor.matrix('mask', dtype=config.floatX)
    y = tensor.vector('y', dtype='int64')
    n_timesteps = x.shape[0]
    n_samples = x.shape[1]
    emb = tparams['Wemb'][x.flatten()].reshape([n_timesteps, n_samples, options['dim_proj']])
    proj = lstm_layer(tparams, emb, options, prefix='lstm', mask=mask)
    proj = (proj * mask[:, :, None]).sum(axis=0)
    proj = proj / mask.sum(axis=0)[:, None]
    if options['use_dropout']:
        proj = dropout_layer(proj, use_noise, trng)
    pred = tensor.nnet.softmax(tensor.dot(proj, tparams['U']) + tparams['b'])
    f_pred_prob = theano.function([x, mask], pred, name='f_pred_prob')
    f_pred = theano.function([x, mask], pred.argmax(axis=1), name='f_pred')
    off = 1e-8
    if pred.dtype == 'float16':
        off = 1e-6
    cost = -tensor.log(pred[tensor.arange(n_samples), y] + off).mean()
    return use_noise, x, mask, y, f_pred_prob, f_pred, cost

options = dict(n_words=30, dim_proj=8, ydim=2, use_dropout=True, decay_c=0.)
params = init_params(options)
tparams = init_tparams(params)
(use_noise, x, mask, y, f_pred_prob, f_pred, cost) = build_model(tparams, options)
decay_c = theano.shared(numpy_floatX(1e-4), name='decay_c')
weight_decay = 0.
weight_decay += (tparams['U'] ** 2).sum()
weight_decay *= decay_c
cost += weight_decay
f_cost = theano.function([x, mask, y], cost, name='f_cost')
grads = tensor.grad(cost, wrt=list(tparams.values()))
f_grad = theano.function([x, mask, y], grads, name='f_grad')
lr = tensor.scalar(name='lr')
f_grad_shared, f_update = adadelta(lr, tparams, grads, x, mask, y, cost)

rng = numpy.random.RandomState(0)
maxlen, nb = 7, 6
xs = rng.randint(1, 30, (maxlen, nb)).astype('int64')
lengths = rng.randint(2, maxlen + 1, nb)
mk = (numpy.arange(maxlen)[:, None] < lengths[None, :]).astype(config.floatX)
xs = xs * mk.astype('int64')
ys = (xs.sum(0) % 2).astype('int64')

# dropout: test mode halves, train mode zeroes about half
use_noise.set_value(0.)
p_test = f_pred_prob(xs, mk)
check(numpy.allclose(p_test.sum(1), 1), "softmax rows")
use_noise.set_value(1.)
costs = [float(f_cost(xs, mk, ys)) for _ in range(6)]
check(len(set(numpy.round(costs, 12))) > 1, "train-mode cost is random (dropout applied): %r" % costs[:3])
proj_fn = theano.function([x], dropout_layer(tensor.ones_like(x, dtype=config.floatX), use_noise, RandomStreams(1)))
d = proj_fn(xs)
check(set(numpy.unique(d)) <= {0.0, 1.0} and 0.2 < d.mean() < 0.8, "dropout mask in train mode: values %r" % numpy.unique(d)[:5])
use_noise.set_value(0.)
d = proj_fn(xs)
check(numpy.allclose(d, 0.5), "test-mode dropout scales by 0.5")

# training
use_noise.set_value(1.)
losses = []
for it in range(30):
    losses.append(float(f_grad_shared(xs, mk, ys)))
    f_update(0.0001)
use_noise.set_value(0.)
check(losses[-1] < losses[0], "adadelta training lowers cost %r -> %r" % (losses[0], losses[-1]))
best_p = unzip(tparams)
zipp(best_p, tparams)
print("FAILED" if FAIL else "OK", FAIL)
sys.exit(1 if FAIL else 0)
