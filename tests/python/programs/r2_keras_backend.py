"""Keras 2's Theano backend idioms on hypatia: variable/placeholder, K.function (its Function class,
updates deduplicated through a dict), batch_dot (batched_tensordot + expand_dims), K.rnn over scan
with a boolean mask (Embedding's not_equal(x, 0)) and go_backwards, K.update_add / moving averages,
stop_gradient, one_hot over to_one_hot, sparse categorical cross-entropy, in_top_k over argsort,
temporal padding with set_subtensor, repeat_elements; a masked SimpleRNN classifier trained with SGD,
its forward pass checked against numpy."""
import sys

import numpy as np

import hypatia as theano
import hypatia.tensor as T
from hypatia.tensor import extra_ops

FAIL = []


def check(c, m):
    if not c:
        FAIL.append(m)
        print("FAIL:", m)


def close(a, b, m, rtol=1e-6, atol=1e-8):
    a, b = np.asarray(a), np.asarray(b)
    check(a.shape == b.shape and np.allclose(a, b, rtol=rtol, atol=atol),
          "%s: %s vs %s maxdiff %s" % (m, a.shape, b.shape, np.abs(a - b).max() if a.shape == b.shape else '-'))


def attempt(name, fn):
    try:
        fn()
    except Exception as e:
        check(False, "%s raised %s: %s" % (name, type(e).__name__, str(e).splitlines()[0][:300] if str(e) else ''))


floatx = theano.config.floatX
rng = np.random.RandomState(7)


# ---- a slice of keras/backend/theano_backend.py (Keras 2.0) ----
def variable(value, dtype=None, name=None):
    value = np.asarray(value, dtype=dtype or floatx)
    v = theano.shared(value=value, name=name, strict=False)
    v._keras_shape = value.shape
    v._uses_learning_phase = False
    return v


def placeholder(shape=None, ndim=None, dtype=None, name=None):
    if shape is None and ndim is None:
        raise ValueError('Specify either a shape or ndim value.')
    if shape is not None:
        ndim = len(shape)
    else:
        shape = tuple([None for _ in range(ndim)])
    broadcast = (False,) * ndim
    x = T.TensorType(dtype or floatx, broadcast)(name)
    x._keras_shape = shape
    x._uses_learning_phase = False
    return x


def expand_dims(x, dim=-1):
    pattern = [i for i in range(x.type.ndim)]
    if dim < 0:
        if x.type.ndim == 0:
            dim = 0
        else:
            dim = dim % x.type.ndim + 1
    pattern.insert(dim, 'x')
    return x.dimshuffle(pattern)


def batch_dot(x, y, axes=None):
    if isinstance(axes, int):
        axes = (axes, axes)
    if axes is None:
        axes = [x.ndim - 1, y.ndim - 2]
    out = T.batched_tensordot(x, y, axes=axes)
    if out.ndim == 1:
        out = expand_dims(out, 1)
    return out


def update_add(x, increment):
    return (x, x + increment)


def moving_average_update(variable, value, momentum):
    return (variable, variable * momentum + value * (1. - momentum))


def stop_gradient(variables):
    if isinstance(variables, (list, tuple)):
        return map(theano.gradient.disconnected_grad, variables)
    return theano.gradient.disconnected_grad(variables)


def one_hot(indices, num_classes):
    input_shape = tuple((indices.shape[i] for i in range(indices.ndim)))
    indices = T.flatten(indices)
    oh = extra_ops.to_one_hot(indices, num_classes)
    oh = T.reshape(oh, input_shape + (num_classes,))
    return oh


def sparse_categorical_crossentropy(target, output, from_logits=False):
    target = T.cast(T.flatten(target), 'int32')
    target = extra_ops.to_one_hot(target, nb_class=output.shape[-1])
    target = T.reshape(target, output.shape)
    output /= output.sum(axis=-1, keepdims=True)
    output = T.clip(output, 1e-7, 1.0 - 1e-7)
    return T.nnet.categorical_crossentropy(output, target)


def in_top_k(predictions, targets, k):
    if k < 1:
        return T.zeros_like(targets, dtype='bool')
    predictions_k = T.sort(predictions)[:, -k]
    targets_values = predictions[T.arange(targets.shape[0]), targets]
    return T.ge(targets_values, predictions_k)


def temporal_padding(x, padding=(1, 1)):
    input_shape = x.shape
    output_shape = (input_shape[0], input_shape[1] + padding[0] + padding[1], input_shape[2])
    output = T.zeros(output_shape)
    result = T.set_subtensor(output[:, padding[0]:x.shape[1] + padding[0], :], x)
    return result


def repeat_elements(x, rep, axis):
    y = T.repeat(x, rep, axis=axis)
    return y


_GAP = []


class Function(object):
    def __init__(self, inputs, outputs, updates=[], name=None, **kwargs):
        unique_variables_to_update = {}
        for v, nv in updates:
            if v not in unique_variables_to_update:
                unique_variables_to_update[v] = nv
        updates = unique_variables_to_update.items()
        try:
            self.function = theano.function(inputs, outputs, updates=updates, allow_input_downcast=True,
                                            on_unused_input='ignore', name=name, **kwargs)
        except TypeError as e:
            if 'dict_items' not in str(e):
                raise
            if not _GAP:
                _GAP.append(1)
                print("GAP (hypatia): function(updates=dict.items()) refused:", str(e)[:80])
            self.function = theano.function(inputs, outputs, updates=list(updates), allow_input_downcast=True,
                                            on_unused_input='ignore', name=name, **kwargs)
        self.name = name

    def __call__(self, inputs):
        assert isinstance(inputs, (list, tuple))
        return self.function(*inputs)


def function(inputs, outputs, updates=[], **kwargs):
    return Function(inputs, outputs, updates=updates, **kwargs)


def rnn(step_function, inputs, initial_states, go_backwards=False, mask=None, constants=None):
    ndim = inputs.ndim
    assert ndim >= 3, 'Input should be at least 3D.'
    axes = [1, 0] + list(range(2, ndim))
    inputs = inputs.dimshuffle(axes)
    if constants is None:
        constants = []
    if mask is not None:
        if mask.ndim == ndim - 1:
            mask = expand_dims(mask)
        assert mask.ndim == ndim
        mask = mask.dimshuffle(axes)
        initial_output = step_function(inputs[0], initial_states + constants)[0] * 0
        initial_output = T.unbroadcast(initial_output, 0, 1)
        if len(initial_states) > 0:
            initial_states[0] = T.unbroadcast(initial_states[0], 0, 1)

        def _step(inputs, mask, output_tm1, *states):
            outputs, new_states = step_function(inputs, states)
            outputs = T.switch(mask, outputs, output_tm1)
            return_states = []
            for state, new_state in zip(states, new_states):
                return_states.append(T.switch(mask, new_state, state))
            return [outputs] + return_states

        results, _ = theano.scan(_step, sequences=[inputs, mask], outputs_info=[initial_output] + initial_states,
                                 non_sequences=constants, go_backwards=go_backwards)
    else:
        def _step(inputs, *states):
            outputs, new_states = step_function(inputs, states)
            return [outputs] + new_states

        results, _ = theano.scan(_step, sequences=inputs, outputs_info=[None] + initial_states,
                                 non_sequences=constants, go_backwards=go_backwards)
    if type(results) is list:
        outputs = results[0]
        states = results[1:]
    else:
        outputs = results
        states = []
    outputs = T.squeeze(outputs)
    last_output = outputs[-1]
    axes = [1, 0] + list(range(2, outputs.ndim))
    outputs = outputs.dimshuffle(axes)
    states = [T.squeeze(state[-1]) for state in states]
    return last_output, outputs, states
# ---- end of the backend slice ----


def t_ops():
    a = placeholder(ndim=3)
    b = placeholder(ndim=3)
    av = rng.randn(4, 2, 3).astype(floatx)
    bv = rng.randn(4, 3, 5).astype(floatx)
    close(function([a, b], [batch_dot(a, b, axes=[2, 1])])([av, bv])[0], np.einsum('bij,bjk->bik', av, bv), "batch_dot 3d")
    m1 = placeholder(ndim=2)
    m2 = placeholder(ndim=2)
    mv1 = rng.randn(4, 3).astype(floatx)
    mv2 = rng.randn(4, 3).astype(floatx)
    r = function([m1, m2], [batch_dot(m1, m2, axes=1)])([mv1, mv2])[0]
    close(r, (mv1 * mv2).sum(1)[:, None], "batch_dot 2d, axes=1, expand_dims")
    idx = placeholder(ndim=2, dtype='int32')
    iv = rng.randint(0, 5, (3, 4)).astype('int32')
    close(function([idx], [one_hot(idx, 5)])([iv])[0], np.eye(5)[iv], "one_hot")
    out = placeholder(ndim=2)
    tgt = placeholder(ndim=1, dtype='int32')
    pv = rng.rand(6, 4).astype(floatx) + 0.1
    tv = rng.randint(0, 4, 6).astype('int32')
    pn = pv / pv.sum(1, keepdims=True)
    close(function([tgt, out], [sparse_categorical_crossentropy(tgt, out)])([tv, pv])[0],
          -np.log(pn[np.arange(6), tv]), "sparse categorical cross-entropy")
    topk = function([out, tgt], [in_top_k(out, tgt, 2)])([pv, tv])[0]
    ref = [pv[i, tv[i]] >= np.sort(pv[i])[-2] for i in range(6)]
    check(list(np.asarray(topk).astype(bool)) == ref, "in_top_k: %r vs %r" % (topk, ref))
    x3 = placeholder(ndim=3)
    xv = rng.randn(2, 3, 4).astype(floatx)
    close(function([x3], [temporal_padding(x3, (1, 2))])([xv])[0], np.pad(xv, ((0, 0), (1, 2), (0, 0))),
          "temporal_padding")
    close(function([x3], [repeat_elements(x3, 2, 1)])([xv])[0], np.repeat(xv, 2, axis=1), "repeat_elements")


attempt("backend ops", t_ops)


def t_masked_rnn():
    units, n_in, n_cls = 5, 3, 2
    W = variable(rng.randn(n_in, units) * 0.4, name='W')
    U = variable(rng.randn(units, units) * 0.4, name='U')
    bias = variable(np.zeros(units), name='bias')
    Wo = variable(rng.randn(units, n_cls) * 0.4, name='Wo')

    def step(x, states):
        h = T.tanh(T.dot(x, W) + T.dot(states[0], U) + bias)
        return h, [h]

    tokens = placeholder(ndim=2, dtype='int32', name='tokens')
    emb = variable(rng.randn(10, n_in), name='emb')
    X = emb[tokens]
    mask = T.neq(tokens, 0)          # Embedding(mask_zero=True).compute_mask: a boolean mask
    init = T.zeros((X.shape[0], units))
    last, outs, states = rnn(step, X, [init], mask=mask)
    probs = T.nnet.softmax(T.dot(last, Wo))
    y = placeholder(ndim=1, dtype='int32', name='y')
    loss = sparse_categorical_crossentropy(y, probs).mean()
    params = [W, U, bias, Wo, emb]
    grads = T.grad(loss, params)
    updates = [(p, p - 0.3 * g) for p, g in zip(params, grads)]
    seen = variable(0., name='iterations')
    updates.append(update_add(seen, 1.))
    updates.append(update_add(seen, 100.))      # a duplicate: Keras keeps the first
    train = function([tokens, y], [loss, last, outs], updates=updates, name='train')
    tv = rng.randint(1, 10, (4, 6)).astype('int32')
    tv[1, 4:] = 0
    tv[2, 2:] = 0
    yv = np.array([0, 1, 1, 0], dtype='int32')

    def np_forward():
        Wv, Uv, bv, ev = W.get_value(), U.get_value(), bias.get_value(), emb.get_value()
        h = np.zeros((4, units))
        o = np.zeros((4, units))
        outs_ = []
        for t in range(6):
            hn = np.tanh(ev[tv[:, t]] @ Wv + h @ Uv + bv)
            m = (tv[:, t] != 0)[:, None]
            o = np.where(m, hn, o)
            h = np.where(m, hn, h)
            outs_.append(o)
        return h, np.stack(outs_, 1)

    href, oref = np_forward()
    l, lo, oo = train([tv, yv])
    close(lo, href, "masked RNN last output")
    close(oo, oref, "masked RNN outputs (held where masked)")
    close(seen.get_value(), 1., "duplicate update dropped as Keras does")
    losses = [float(l)] + [float(train([tv, yv])[0]) for _ in range(15)]
    check(losses[-1] < losses[0], "masked RNN classifier learns: %r" % losses[::5])
    # go_backwards over the same mask
    last_b, outs_b, _ = rnn(step, X, [init], mask=mask, go_backwards=True)
    rb = function([tokens], [last_b])([tv])[0]
    Wv, Uv, bv, ev = W.get_value(), U.get_value(), bias.get_value(), emb.get_value()
    h = np.zeros((4, units))
    for t in range(5, -1, -1):
        hn = np.tanh(ev[tv[:, t]] @ Wv + h @ Uv + bv)
        h = np.where((tv[:, t] != 0)[:, None], hn, h)
    close(rb, h, "go_backwards masked RNN")
    # no mask
    last_n, _, _ = rnn(step, X, [init])
    h = np.zeros((4, units))
    for t in range(6):
        h = np.tanh(ev[tv[:, t]] @ Wv + h @ Uv + bv)
    close(function([tokens], [last_n])([tv])[0], h, "unmasked RNN")
    # moving average of the activations (BatchNormalization's running mean)
    running = variable(np.zeros(units), name='running_mean')
    upd = function([tokens], [], updates=[moving_average_update(running, last_n.mean(0), 0.9)])
    upd([tv])
    close(running.get_value(), 0.1 * h.mean(0), "moving_average_update")
    # stop_gradient
    g = theano.function([], T.grad((stop_gradient(W) * W).sum(), W))()
    close(g, W.get_value(), "stop_gradient")


attempt("masked RNN", t_masked_rnn)

print("FAILED" if FAIL else "OK", len(FAIL))
sys.exit(1 if FAIL else 0)
