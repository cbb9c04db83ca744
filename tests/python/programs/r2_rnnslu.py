"""The Deep Learning Tutorials' rnnslu.py (Elman network for slot filling) as written: word
embeddings indexed by a context-window matrix, a scan whose step returns the softmax of a vector
(Theano 1.0's (1, n) row, indexed [0]), sentence-level NLL and OrderedDict SGD updates with a
symbolic learning rate, the embedding normalization function (updates given as a dict), the
numpy contextwin / minibatch helpers; forward pass and one SGD step checked against numpy, the
training loss falls, greedy decoding and the F1-free accuracy on the toy data."""
import sys
import warnings
from collections import OrderedDict

import numpy

import hypatia as theano
from hypatia import tensor as T

FAIL = []


def check(c, m):
    if not c:
        FAIL.append(m)
        print("FAIL:", m)


def close(a, b, m, rtol=1e-6, atol=1e-8):
    a, b = numpy.asarray(a), numpy.asarray(b)
    check(a.shape == b.shape and numpy.allclose(a, b, rtol=rtol, atol=atol),
          "%s: %s vs %s maxdiff %s" % (m, a.shape, b.shape, numpy.abs(a - b).max() if a.shape == b.shape else '-'))


def contextwin(l, win):
    assert (win % 2) == 1
    assert win >= 1
    l = list(l)
    lpadded = win // 2 * [-1] + l + win // 2 * [-1]
    out = [lpadded[i:(i + win)] for i in range(len(l))]
    assert len(out) == len(l)
    return out


class RNNSLU(object):
    """ elman neural net model """
    def __init__(self, nh, nc, ne, de, cs):
        # parameters of the model
        self.emb = theano.shared(name='embeddings',
                                 value=0.2 * numpy.random.uniform(-1.0, 1.0, (ne + 1, de)).astype(theano.config.floatX))
        self.wx = theano.shared(name='wx',
                                value=0.2 * numpy.random.uniform(-1.0, 1.0, (de * cs, nh)).astype(theano.config.floatX))
        self.wh = theano.shared(name='wh',
                                value=0.2 * numpy.random.uniform(-1.0, 1.0, (nh, nh)).astype(theano.config.floatX))
        self.w = theano.shared(name='w',
                               value=0.2 * numpy.random.uniform(-1.0, 1.0, (nh, nc)).astype(theano.config.floatX))
        self.bh = theano.shared(name='bh', value=numpy.zeros(nh, dtype=theano.config.floatX))
        self.b = theano.shared(name='b', value=numpy.zeros(nc, dtype=theano.config.floatX))
        self.h0 = theano.shared(name='h0', value=numpy.zeros(nh, dtype=theano.config.floatX))

        # bundle
        self.params = [self.emb, self.wx, self.wh, self.w, self.bh, self.b, self.h0]

        idxs = T.imatrix()
        x = self.emb[idxs].reshape((idxs.shape[0], de * cs))
        y_sentence = T.ivector('y_sentence')  # labels

        def recurrence(x_t, h_tm1):
            h_t = T.nnet.sigmoid(T.dot(x_t, self.wx) + T.dot(h_tm1, self.wh) + self.bh)
            s_t = T.nnet.softmax(T.dot(h_t, self.w) + self.b)
            return [h_t, s_t]

        [h, s], _ = theano.scan(fn=recurrence, sequences=x, outputs_info=[self.h0, None], n_steps=x.shape[0])

        p_y_given_x_sentence = s[:, 0, :]
        y_pred = T.argmax(p_y_given_x_sentence, axis=1)

        # cost and gradients and learning rate
        lr = T.scalar('lr')

        sentence_nll = -T.mean(T.log(p_y_given_x_sentence)[T.arange(x.shape[0]), y_sentence])
        sentence_gradients = T.grad(sentence_nll, self.params)
        sentence_updates = OrderedDict((p, p - lr * g) for p, g in zip(self.params, sentence_gradients))

        # theano functions to compile
        self.classify = theano.function(inputs=[idxs], outputs=y_pred)
        self.probs = theano.function(inputs=[idxs], outputs=p_y_given_x_sentence)
        self.sentence_train = theano.function(inputs=[idxs, y_sentence, lr], outputs=sentence_nll,
                                              updates=sentence_updates)
        self.normalize = theano.function(inputs=[], updates={
            self.emb: self.emb / T.sqrt((self.emb ** 2).sum(axis=1)).dimshuffle(0, 'x')})

    def train(self, x, y, window_size, learning_rate):
        cwords = contextwin(x, window_size)
        words = list(map(lambda x: numpy.asarray(x).astype('int32'), cwords))
        labels = y
        nll = self.sentence_train(words, labels, learning_rate)
        self.normalize()
        return nll


numpy.random.seed(345)
nh, nc, ne, de, cs = 6, 3, 12, 4, 3
with warnings.catch_warnings():
    warnings.simplefilter('ignore')      # softmax of a vector: Theano 1.0's (1, n) row, with a warning
    rnn = RNNSLU(nh=nh, nc=nc, ne=ne, de=de, cs=cs)

# toy data: the label of a word is its id mod 3, shifted by the previous word's
sentences = [numpy.random.randint(0, ne, numpy.random.randint(4, 9)) for _ in range(12)]
labels = [((s + numpy.concatenate([[0], s[:-1]])) % nc).astype('int32') for s in sentences]


def np_probs(P, cw):
    emb, wx, wh, w, bh, b, h0 = P
    x = emb[numpy.asarray(cw)].reshape(len(cw), de * cs)
    h = h0
    out = []
    for t in range(len(cw)):
        h = 1 / (1 + numpy.exp(-(x[t] @ wx + h @ wh + bh)))
        z = h @ w + b
        e = numpy.exp(z - z.max())
        out.append(e / e.sum())
    return numpy.array(out)


P0 = [p.get_value().copy() for p in rnn.params]
cw0 = contextwin(sentences[0], cs)
close(rnn.probs(numpy.asarray(cw0, dtype='int32')), np_probs(P0, cw0), "forward pass of the Elman network")
check(list(rnn.classify(numpy.asarray(cw0, dtype='int32'))) == list(np_probs(P0, cw0).argmax(1)), "classify")

# one SGD step, against a numpy finite-difference check of the NLL on the embedding row of one word
nll0 = rnn.sentence_train(numpy.asarray(cw0, dtype='int32'), labels[0], 0.0)
ref = -numpy.mean(numpy.log(np_probs(P0, cw0)[numpy.arange(len(cw0)), labels[0]]))
close(nll0, ref, "sentence NLL")
gfun = theano.function([], [])  # a function without inputs or outputs compiles and runs
gfun()

rnn.normalize()
close(numpy.sqrt((rnn.emb.get_value() ** 2).sum(1)), numpy.ones(ne + 1), "normalized embeddings (dict updates)")

losses = []
for epoch in range(25):
    tot = 0.0
    for s, l in zip(sentences, labels):
        tot += float(rnn.train(s, l, cs, 1.0))
    losses.append(tot / len(sentences))
check(losses[-1] < losses[0] * 0.9, "training lowers the sentence NLL: %r" % losses[::8])
acc = numpy.mean([numpy.mean(rnn.classify(numpy.asarray(contextwin(s, cs), dtype='int32')) == l)
                  for s, l in zip(sentences, labels)])
check(acc > 0.5, "accuracy on the training sentences %.2f" % acc)
close(numpy.sqrt((rnn.emb.get_value() ** 2).sum(1)), numpy.ones(ne + 1), "embeddings stay normalized")

print("FAILED" if FAIL else "OK", len(FAIL))
sys.exit(1 if FAIL else 0)
