import numpy as np
import hypatia as theano
import hypatia.tensor as T
rng = np.random.RandomState(1)
fX = theano.config.floatX
# Keras 1.x theano backend idioms
def variable(value, dtype=None, name=None):
    value = np.asarray(value, dtype=dtype or fX)
    return theano.shared(value=value, name=name, strict=False)
def placeholder(shape=None, ndim=None, dtype=None, name=None):
    if shape is not None: ndim = len(shape)
    broadcast = (False,) * ndim
    x = T.TensorType(dtype or fX, broadcast)(name)
    x._keras_shape = shape
    x._uses_learning_phase = False
    return x
def batch_dot(x, y, axes=None):
    if isinstance(axes, int): axes = (axes, axes)
    if axes is None: axes = [x.ndim - 1, y.ndim - 2]
    out = T.batched_tensordot(x, y, axes=axes)
    if out.ndim == 1: out = T.shape_padright(out)  # keras expand_dims
    return out
class Function(object):
    def __init__(self, inputs, outputs, updates=[], **kwargs):
        unique_variables_to_update = {}
        for v, nv in updates:
            if v not in unique_variables_to_update:
                unique_variables_to_update[v] = nv
        updates = list(unique_variables_to_update.items())
        self.function = theano.function(inputs, outputs, updates=updates,
                                        allow_input_downcast=True, on_unused_input='ignore', **kwargs)
    def __call__(self, inputs):
        assert isinstance(inputs, (list, tuple))
        return self.function(*inputs)
def rnn(step_function, inputs, initial_states, go_backwards=False, mask=None, constants=None, unroll=False, input_length=None):
    ndim = inputs.ndim
    axes = [1, 0] + list(range(2, ndim))
    inputs = inputs.dimshuffle(axes)
    if constants is None: constants = []
    if mask is not None:
        if mask.ndim == ndim - 1:
            mask = T.shape_padright(mask)  # expand_dims
        mask = mask.dimshuffle(axes)
        initial_output = step_function(inputs[0], initial_states + constants)[0] * 0
        initial_output = T.unbroadcast(initial_output, 0, 1)
        def _step(input, mask, output_tm1, *states):
            output, new_states = step_function(input, states)
            output = T.switch(mask, output, output_tm1)
            return_states = []
            for state, new_state in zip(states, new_states):
                return_states.append(T.switch(mask, new_state, state))
            return [output] + return_states
        results, _ = theano.scan(_step, sequences=[inputs, mask], outputs_info=[initial_output] + initial_states,
                                 non_sequences=constants, go_backwards=go_backwards)
    else:
        def _step(input, *states):
            output, new_states = step_function(input, states)
            return [output] + new_states
        results, _ = theano.scan(_step, sequences=inputs, outputs_info=[None] + initial_states,
                                 non_sequences=constants, go_backwards=go_backwards)
    if type(results) is list:
        outputs = results[0]; states = results[1:]
    else:
        outputs = results; states = []
    outputs = T.squeeze(outputs)
    last_output = outputs[-1]
    axes = [1, 0] + list(range(2, outputs.ndim))
    outputs = outputs.dimshuffle(axes)
    states = [T.squeeze(state[-1]) for state in states]
    return last_output, outputs, states

FAIL = []
def check(c, m):
    if not c: FAIL.append(m); print("FAIL", m)
# batch_dot
a = placeholder(ndim=3); b = placeholder(ndim=3)
av = rng.randn(4, 2, 3).astype(fX); bv = rng.randn(4, 3, 5).astype(fX)
f = Function([a, b], [batch_dot(a, b, axes=[2, 1])])
check(np.allclose(f([av, bv])[0], np.einsum('bij,bjk->bik', av, bv)), "batch_dot 3d")
m1 = placeholder(ndim=2); m2 = placeholder(ndim=2)
f = Function([m1, m2], [batch_dot(m1, m2, axes=1)])
mv1 = rng.randn(4, 3).astype(fX); mv2 = rng.randn(4, 3).astype(fX)
r = f([mv1, mv2])[0]
check(r.shape == (4, 1) and np.allclose(r[:, 0], (mv1 * mv2).sum(1)), "batch_dot 2d axes=1 %r" % (r.shape,))
# masked simple RNN
units = 5
W = variable(rng.randn(3, units) * 0.3); U = variable(rng.randn(units, units) * 0.3); bias = variable(np.zeros(units))
def step(x, states):
    h = T.tanh(T.dot(x, W) + T.dot(states[0], U) + bias)
    return h, [h]
X = placeholder(ndim=3); M = placeholder(ndim=2)
init = T.zeros((X.shape[0], units))
last, outs, states = rnn(step, X, [init], mask=M)
loss = (last ** 2).mean()
grads = T.grad(loss, [W, U, bias])
lr = 0.1
updates = [(p, p - lr * g) for p, g in zip([W, U, bias], grads)]
train = Function([X, M], [loss, last, outs], updates=updates)
xv = rng.randn(4, 6, 3).astype(fX)
mv = np.ones((4, 6), dtype=fX); mv[1, 4:] = 0; mv[2, 2:] = 0
Wv, Uv, bv0 = W.get_value(), U.get_value(), bias.get_value()
def np_rnn(xv, mv):
    h = np.zeros((4, units)); outs = []
    o = np.zeros((4, units))
    for t in range(6):
        hn = np.tanh(xv[:, t] @ Wv + h @ Uv + bv0)
        mm = mv[:, t:t+1]
        o = np.where(mm, hn, o); h = np.where(mm, hn, h)
        outs.append(o)
    return h, np.stack(outs, 1)
l, lo, oo = train([xv, mv])
hr, outr = np_rnn(xv, mv)
check(np.allclose(lo, hr) and np.allclose(oo, outr), "masked rnn forward")
check(np.allclose(l, (hr ** 2).mean()), "loss")
ls = [float(train([xv, mv])[0]) for _ in range(10)]
check(ls[-1] < ls[0], "loss falls %r" % ls)
# go_backwards
last_b, outs_b, _ = rnn(step, X, [init], mask=M, go_backwards=True)
fb = Function([X, M], [last_b])
check(fb([xv, mv])[0].shape == (4, units), "go backwards")
# in-place style update: K.update_add / moving average
mov = variable(np.zeros(units))
upd = Function([X, M], [], updates=[(mov, 0.9 * mov + 0.1 * last.mean(0))])
upd([xv, mv])
check(np.abs(mov.get_value()).sum() > 0, "moving average update")
# K.gradients, K.stop_gradient
g_stop = T.grad((theano.gradient.disconnected_grad(W) * W).sum(), W)
check(np.allclose(theano.function([], g_stop)(), W.get_value()), "stop_gradient")
print("FAILED" if FAIL else "OK", FAIL)
