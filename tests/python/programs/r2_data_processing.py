"""Data processing with theano.tensor.extra_ops, as preprocessing code wrote it: a vocabulary built
from token ids (unique with index/inverse/counts, remapping to dense ids), class weights from label
counts (bincount, used in a weighted cross-entropy trained by SGD), a histogram (searchsorted +
bincount), weighted bincount, compress of a boolean filter, unravel_index / ravel_multi_index for
the argmax of a score map, a Bartlett-windowed signal, cumsum/cumprod/diff (discounted returns,
gradients checked), repeat, to_one_hot and fill_diagonal (a similarity matrix without self-pairs),
some of them inside a scan; each checked against numpy."""
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


def close(a, b, m, rtol=1e-7, atol=1e-9):
    a, b = np.asarray(a), np.asarray(b)
    check(a.shape == b.shape and np.allclose(a, b, rtol=rtol, atol=atol),
          "%s: %s vs %s maxdiff %s" % (m, a.shape, b.shape, np.abs(a - b).max() if a.shape == b.shape else '-'))


def same(a, b, m):
    a, b = np.asarray(a), np.asarray(b)
    check(a.shape == b.shape and np.array_equal(a, b), "%s: %r vs %r" % (m, a, b))


def attempt(name, fn):
    try:
        fn()
    except Exception as e:
        check(False, "%s raised %s: %s" % (name, type(e).__name__, str(e).splitlines()[0][:300] if str(e) else ''))


rng = np.random.RandomState(11)


def t_vocabulary():
    tokens = T.ivector('tokens')
    vocab, first, inverse, counts = extra_ops.unique(tokens, return_index=True, return_inverse=True,
                                                     return_counts=True)
    # keep words seen at least twice; map the others to 0 (<unk>), the kept ones to 1..K
    keep = T.ge(counts, 2)
    new_id = T.switch(keep, T.cumsum(keep), 0)
    dense = new_id[inverse]
    f = theano.function([tokens], [vocab, first, inverse, counts, dense])
    tv = rng.randint(100, 140, 200).astype('int32')
    v, i, inv, c, d = f(tv)
    rv, ri, rinv, rc = np.unique(tv, return_index=True, return_inverse=True, return_counts=True)
    same(v, rv, "vocabulary")
    same(i, ri, "first occurrences")
    same(inv, rinv.ravel(), "inverse")
    same(c, rc, "counts")
    k = rc >= 2
    same(d, np.where(k, np.cumsum(k), 0)[rinv.ravel()], "dense ids with <unk>")
    same(v[inv], tv, "vocab[inverse] rebuilds the tokens")
    # a batch of sentences (a matrix) flattens, as numpy
    sent = T.imatrix('sent')
    same(theano.function([sent], extra_ops.unique(sent))(tv.reshape(10, 20)), rv, "unique of a matrix")


attempt("vocabulary", t_vocabulary)


def t_class_weights():
    y = T.ivector('y')
    X = T.matrix('X')
    n_classes = 4
    counts = T.bincount(y, minlength=n_classes)
    weights = T.cast(y.shape[0], 'float64') / (n_classes * T.maximum(counts, 1))
    W = theano.shared(np.zeros((5, n_classes)), name='W')
    p = T.nnet.softmax(T.dot(X, W))
    loss = (weights[y] * T.nnet.categorical_crossentropy(p, y)).mean()
    train = theano.function([X, y], [loss, counts], updates=[(W, W - 0.5 * T.grad(loss, W))])
    yv = np.concatenate([np.zeros(30), np.ones(6), np.full(3, 2), np.full(1, 3)]).astype('int32')
    xv = rng.randn(40, 5) + np.eye(n_classes, 5)[yv] * 2
    rc = np.bincount(yv, minlength=n_classes)
    rw = 40.0 / (n_classes * np.maximum(rc, 1))
    Wn = np.zeros((5, n_classes))
    for it in range(8):
        l, c = train(xv, yv)
        same(c, rc, "label counts")
        z = xv @ Wn
        pr = np.exp(z - z.max(1, keepdims=True))
        pr /= pr.sum(1, keepdims=True)
        sw = rw[yv]
        close(l, (sw * -np.log(pr[np.arange(40), yv])).mean(), "class-weighted loss, step %d" % it)
        d = pr.copy()
        d[np.arange(40), yv] -= 1
        Wn = Wn - 0.5 * xv.T @ (d * sw[:, None] / 40)
    close(W.get_value(), Wn, "weights after class-weighted training")
    check(train(xv, yv)[1].dtype.kind == 'i', "bincount counts are integers")
    # weighted bincount: the total weight per class
    w = T.vector('w')
    wv = rng.rand(40)
    close(theano.function([y, w], extra_ops.bincount(y, weights=w, minlength=6))(yv, wv),
          np.bincount(yv, weights=wv, minlength=6), "weighted bincount")


attempt("class weights", t_class_weights)


def t_histogram_and_filters():
    x = T.vector('x')
    edges = T.vector('edges')
    idx = extra_ops.searchsorted(edges, x, side='right') - 1
    nb = edges.shape[0] - 1
    hist = T.bincount(T.clip(idx, 0, nb - 1), minlength=nb)
    fh = theano.function([x, edges], hist)
    xv = rng.rand(300)
    ev = np.linspace(0, 1, 9)
    same(fh(xv, ev), np.histogram(xv, ev)[0], "histogram")
    same(theano.function([x, edges], extra_ops.searchsorted(edges, x))(xv[:10], ev), np.searchsorted(ev, xv[:10]),
         "searchsorted left")
    # sorter
    srt = T.lvector('srt')
    unsorted = rng.rand(12)
    same(theano.function([x, edges, srt], extra_ops.searchsorted(x, edges, sorter=srt))(unsorted, ev, np.argsort(unsorted)),
         np.searchsorted(unsorted, ev, sorter=np.argsort(unsorted)), "searchsorted with sorter")
    # compress: keep the samples above a threshold, and columns by a mask
    M = T.matrix('M')
    f = theano.function([x], extra_ops.compress(x > 0.5, x))
    same(f(xv), xv[xv > 0.5], "compress a vector")
    cm = T.bvector('cm')
    mv = rng.rand(4, 6)
    cv = np.array([1, 0, 1, 1, 0, 0], dtype='int8')
    same(theano.function([cm, M], extra_ops.compress(cm, M, axis=1))(cv, mv), np.compress(cv, mv, axis=1),
         "compress columns")


attempt("histogram and filters", t_histogram_and_filters)


def t_index_arithmetic():
    score = T.tensor3('score')
    flat = T.argmax(score.flatten())
    c, r, q = extra_ops.unravel_index(flat, (3, 4, 5))
    back = extra_ops.ravel_multi_index((c, r, q), (3, 4, 5))
    f = theano.function([score], [c, r, q, back])
    sv = rng.rand(3, 4, 5)
    rc, rr, rq, rb = f(sv)
    same((rc, rr, rq), np.unravel_index(np.argmax(sv), (3, 4, 5)), "unravel_index of an argmax")
    same(rb, np.argmax(sv), "ravel_multi_index inverts it")
    ids = T.lvector('ids')
    iv = np.array([0, 7, 59, 33, 21])
    for order in ('C', 'F'):
        out = theano.function([ids], list(extra_ops.unravel_index(ids, (3, 4, 5), order=order)))(iv)
        for a, b in zip(out, np.unravel_index(iv, (3, 4, 5), order=order)):
            same(a, b, "unravel_index order %s" % order)
    mi = (T.lvector('i0'), T.lvector('i1'))
    fr = theano.function(list(mi), extra_ops.ravel_multi_index(mi, (3, 4), mode='clip'))
    same(fr(np.array([-1, 5, 1]), np.array([2, 9, 3])), np.ravel_multi_index(([-1, 5, 1], [2, 9, 3]), (3, 4), mode='clip'),
         "ravel_multi_index clip")
    fw = theano.function(list(mi), extra_ops.ravel_multi_index(mi, (3, 4), mode='wrap'))
    same(fw(np.array([-1, 5, 1]), np.array([2, 9, 3])), np.ravel_multi_index(([-1, 5, 1], [2, 9, 3]), (3, 4), mode='wrap'),
         "ravel_multi_index wrap")
    try:
        theano.function(list(mi), extra_ops.ravel_multi_index(mi, (3, 4)))(np.array([3]), np.array([0]))
        check(False, "out-of-bounds index accepted")
    except AssertionError:
        pass


attempt("index arithmetic", t_index_arithmetic)


def t_sequences():
    # discounted returns: G_t = r_t + gamma G_{t+1}, by cumsum over the reversed, scaled rewards
    r = T.vector('r')
    gamma = 0.9
    n = r.shape[0]
    powers = gamma ** T.cast(T.arange(n), 'float64')
    G = extra_ops.cumsum((r * powers)[::-1])[::-1] / powers
    rv = rng.rand(7)
    ref = np.zeros(7)
    acc = 0.0
    for t in range(6, -1, -1):
        acc = rv[t] + gamma * acc
        ref[t] = acc
    close(theano.function([r], G)(rv), ref, "discounted returns")
    M = T.matrix('M')
    mv = rng.rand(3, 5) + 0.5
    f = theano.function([M], [extra_ops.cumsum(M, axis=0), extra_ops.cumprod(M, axis=1), extra_ops.cumsum(M),
                              extra_ops.diff(M, n=2, axis=1), extra_ops.repeat(M, 2, axis=0), M.cumsum(axis=1)])
    for a, b, what in zip(f(mv), [np.cumsum(mv, 0), np.cumprod(mv, 1), np.cumsum(mv), np.diff(mv, 2, axis=1),
                                  np.repeat(mv, 2, axis=0), np.cumsum(mv, 1)],
                          ["cumsum axis 0", "cumprod axis 1", "cumsum flat", "diff n=2", "repeat", "method cumsum"]):
        close(a, b, what)
    theano.gradient.verify_grad(lambda m: (extra_ops.cumsum(m, axis=1) ** 2).sum() + extra_ops.cumprod(m, axis=0).sum()
                                + (extra_ops.diff(m) ** 2).sum() + (extra_ops.repeat(m, 3, axis=1) ** 2).sum(),
                                [mv], rng=rng)
    # repeat by a vector of counts, and its gradient
    v = T.vector('v')
    cnt = T.lvector('cnt')
    close(theano.function([v, cnt], extra_ops.repeat(v, cnt))(np.array([1., 2., 3.]), np.array([0, 2, 1])),
          [2., 2., 3.], "repeat by counts")
    close(theano.function([v, cnt], T.grad((extra_ops.repeat(v, cnt) * T.arange(3)).sum(), v))(
        np.array([1., 2., 3.]), np.array([0, 2, 1])), [0., 1., 2.], "gradient of repeat by counts")
    # Bartlett window applied to a signal, M symbolic
    m = T.iscalar('m')
    sig = T.vector('sig')
    sv = rng.randn(16)
    close(theano.function([sig, m], sig[:m] * extra_ops.bartlett(m))(sv, 16), sv * np.bartlett(16), "Bartlett window")
    close(extra_ops.bartlett(5).eval(), np.bartlett(5), "constant Bartlett")


attempt("sequences", t_sequences)


def t_one_hot_and_diagonal():
    y = T.ivector('y')
    k = T.iscalar('k')
    yv = rng.randint(0, 5, 9).astype('int32')
    oh = theano.function([y, k], extra_ops.to_one_hot(y, k))(yv, 5)
    same(oh, np.eye(5)[yv], "to_one_hot")
    check(oh.dtype == np.dtype(theano.config.floatX), "to_one_hot dtype is floatX")
    # co-occurrence of labels without self-pairs: a similarity matrix with a zeroed diagonal
    X = T.matrix('X')
    Xn = X / T.sqrt((X ** 2).sum(axis=1, keepdims=True))
    S = extra_ops.fill_diagonal(T.dot(Xn, Xn.T), 0.)
    xv = rng.randn(6, 4)
    xn = xv / np.sqrt((xv ** 2).sum(1, keepdims=True))
    ref = xn @ xn.T
    np.fill_diagonal(ref, 0.)
    close(theano.function([X], S)(xv), ref, "similarity with zeroed diagonal")
    g = theano.function([X], T.grad((extra_ops.fill_diagonal(X, 5.) * X).sum(), X))(np.full((3, 4), 2.))
    close(g, np.where(np.eye(3, 4) > 0, 5., 4.), "gradient of fill_diagonal")
    close(theano.function([X], extra_ops.fill_diagonal_offset(X, 7., -1))(np.zeros((3, 4))),
          np.eye(3, 4, -1) * 7, "fill_diagonal_offset")
    # per-row histograms of labels inside a scan
    L = T.imatrix('L')
    hh, _ = theano.scan(lambda row: T.bincount(row, minlength=5), sequences=L)
    lv = rng.randint(0, 5, (4, 7)).astype('int32')
    same(theano.function([L], hh)(lv), np.array([np.bincount(r, minlength=5) for r in lv]), "bincount in a scan")
    nu, _ = theano.scan(lambda row: extra_ops.unique(row).shape[0], sequences=L)
    same(theano.function([L], nu)(lv), [len(np.unique(r)) for r in lv], "unique in a scan")


attempt("one-hot and diagonal", t_one_hot_and_diagonal)

print("FAILED" if FAIL else "OK", len(FAIL))
sys.exit(1 if FAIL else 0)
