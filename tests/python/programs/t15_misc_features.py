"""Miscellaneous features used in real Theano code: config.floatX switching, f.maker.fgraph,
compilation modes, batch normalization, transposed convolution (DCGAN style), conv2d integer padding,
MRG multinomial sampling, pickling a function with scan + random streams, NanGuardMode."""
import sys
import pickle
import numpy as np
import hypatia as theano
import hypatia.tensor as T
from hypatia.tensor.nnet import conv2d, bn
from hypatia.tensor.nnet.abstract_conv import conv2d_grad_wrt_inputs
from hypatia.sandbox.rng_mrg import MRG_RandomStreams

FAIL = []


def check(cond, msg):
    if not cond:
        FAIL.append(msg)
        print("FAIL:", msg)


def attempt(name, fn):
    try:
        fn()
    except Exception as e:
        check(False, "%s raised %s: %s" % (name, type(e).__name__, str(e).splitlines()[0][:250] if str(e) else ''))


rng = np.random.RandomState(9)


def t_floatx():
    old = theano.config.floatX
    theano.config.floatX = 'float32'
    try:
        x = T.matrix('x')
        check(x.dtype == 'float32', "T.matrix() after config.floatX='float32' has dtype %r" % x.dtype)
        s = theano.shared(np.zeros(2, dtype=theano.config.floatX))
        f = theano.function([x], (x * 0.5).sum() + s.sum())
        r = f(np.ones((2, 2), dtype='float32'))
        check(np.asarray(r).dtype == np.float32, "float32 pipeline result dtype %r" % np.asarray(r).dtype)
    finally:
        theano.config.floatX = old
    check(T.matrix().dtype == old, "floatX restored")
    with theano.change_flags(floatX='float32'):
        check(T.vector().dtype == 'float32', "change_flags(floatX='float32')")


attempt("config.floatX", t_floatx)


def t_fgraph():
    x = T.dvector('x')
    f = theano.function([x], T.exp(x).sum())
    topo = f.maker.fgraph.toposort()
    check(len(topo) >= 1 and all(hasattr(n, 'op') for n in topo), "f.maker.fgraph.toposort()")
    check(len(f.maker.fgraph.inputs) == 1 and len(f.maker.fgraph.outputs) == 1, "fgraph inputs/outputs")
    for mode in ['FAST_COMPILE', 'FAST_RUN', theano.compile.mode.Mode(optimizer=None), theano.Mode(linker='py')]:
        g = theano.function([x], T.exp(x).sum(), mode=mode)
        check(np.isclose(g(np.zeros(3)), 3.0), "mode %r" % (mode,))
    fp = theano.function([x], T.exp(x).sum(), profile=True, name='profiled')
    fp(np.zeros(3))
    check(fp.name == 'profiled', "function name")


attempt("fgraph/modes", t_fgraph)


def t_batchnorm():
    x = T.dmatrix('x')
    gamma = theano.shared(rng.rand(4) + 0.5)
    beta = theano.shared(rng.rand(4))
    mean = x.mean(0, keepdims=True)
    std = T.sqrt(x.var(0, keepdims=True) + 1e-5)
    y = bn.batch_normalization(x, gamma.dimshuffle('x', 0), beta.dimshuffle('x', 0), mean, std, mode='low_mem')
    xv = rng.randn(6, 4)
    exp = (xv - xv.mean(0)) / np.sqrt(xv.var(0) + 1e-5) * gamma.get_value() + beta.get_value()
    check(np.allclose(theano.function([x], y)(xv), exp), "bn.batch_normalization")
    out, m, invstd = bn.batch_normalization_train(x, gamma.dimshuffle('x', 0), beta.dimshuffle('x', 0), axes=(0,))[:3]
    check(np.allclose(theano.function([x], out)(xv), (xv - xv.mean(0)) / np.sqrt(xv.var(0) + 1e-4) * gamma.get_value()
                      + beta.get_value(), atol=1e-6), "bn.batch_normalization_train (epsilon=1e-4)")
    g = theano.function([x], T.grad((y ** 2).sum(), x))(xv)
    check(np.all(np.isfinite(g)) and abs(g.sum()) < 1e-6 * 1e3, "batchnorm grad is finite and sums to ~0 per column")


attempt("batch norm", t_batchnorm)


def t_transposed_conv():
    # DCGAN-style deconvolution: gradient of conv2d wrt its inputs
    z = T.tensor4('z')
    W = theano.shared(rng.randn(3, 2, 3, 3))  # conv maps 2 -> 3 channels
    out = conv2d_grad_wrt_inputs(z, W, input_shape=(1, 2, 6, 6), filter_shape=(3, 2, 3, 3),
                                 border_mode='valid', subsample=(1, 1))
    zv = rng.randn(1, 3, 4, 4)
    # reference: adjoint of valid convolution via the gradient of <conv(x), z> wrt x
    x = T.tensor4('x')
    ref = T.grad((conv2d(x, W) * z).sum(), x)
    fo = theano.function([z], out)
    fr = theano.function([x, z], ref)
    check(np.allclose(fo(zv), fr(np.zeros((1, 2, 6, 6)), zv)), "conv2d_grad_wrt_inputs equals adjoint of conv2d")
    # integer padding
    xi = T.tensor4('xi')
    f = theano.function([xi], conv2d(xi, W.dimshuffle(1, 0, 2, 3)[:, :3], border_mode=(1, 2)))
    r = f(rng.randn(1, 3, 5, 5))
    check(r.shape == (1, 2, 5, 7), "conv2d border_mode=(1,2) output shape %r" % (r.shape,))


attempt("transposed conv", t_transposed_conv)


def t_multinomial():
    srng = MRG_RandomStreams(123)
    p = T.dmatrix('p')
    s = srng.multinomial(pvals=p, dtype='float64')
    f = theano.function([p], s)
    pv = np.tile([[0.1, 0.6, 0.3]], (3000, 1))
    sv = f(pv)
    check(sv.shape == pv.shape and np.all(sv.sum(1) == 1), "multinomial one-hot rows")
    check(np.allclose(sv.mean(0), [0.1, 0.6, 0.3], atol=0.03), "multinomial frequencies %r" % sv.mean(0))
    idx = srng.multinomial(pvals=p).argmax(axis=1)
    check(theano.function([p], idx)(pv[:5]).shape == (5,), "argmax of multinomial sample")


attempt("MRG multinomial", t_multinomial)


def t_pickle_scan_rng():
    from hypatia.tensor.shared_randomstreams import RandomStreams
    srng = RandomStreams(42)
    n = T.iscalar('n')
    W = theano.shared(rng.randn(3, 3) * 0.5, name='W')
    h0 = T.dvector('h0')

    def step(h, W):
        return T.tanh(T.dot(h, W) + srng.normal((3,), std=0.01))

    hs, upd = theano.scan(step, outputs_info=h0, non_sequences=W, n_steps=n)
    f = theano.function([h0, n], hs[-1], updates=upd)
    a = f(np.ones(3), 4)
    blob = pickle.dumps(f, -1)
    f2 = pickle.loads(blob)
    b1 = f(np.ones(3), 4)
    b2 = f2(np.ones(3), 4)
    check(np.allclose(b1, b2), "unpickled scan+rng function continues the same random stream: %r vs %r" % (b1, b2))
    check(not np.allclose(a, b1), "rng advanced")


attempt("pickle scan+rng", t_pickle_scan_rng)


def t_nanguard():
    from hypatia.compile.nanguardmode import NanGuardMode
    x = T.dvector('x')
    f = theano.function([x], T.log(x), mode=NanGuardMode(nan_is_error=True, inf_is_error=True, big_is_error=False))
    check(np.allclose(f(np.ones(2)), 0), "NanGuardMode normal values")
    try:
        f(np.array([-1.0, 1.0]))
        check(False, "NanGuardMode should raise on NaN")
    except AssertionError:
        pass
    except Exception as e:
        check('nan' in str(e).lower(), "NanGuardMode error should mention NaN: %s: %s" % (type(e).__name__, e))


attempt("NanGuardMode", t_nanguard)


def t_eval_and_test_values():
    x = T.dvector('x')
    y = (x ** 2).sum()
    check(np.isclose(y.eval({x: np.array([1., 2.])}), 5.), "Variable.eval")
    c = T.constant(np.arange(3.))
    check(np.allclose((c * 2).eval(), [0, 2, 4]), "eval of a constant graph")
    s = theano.shared(np.ones(2))
    check(np.allclose((s + 1).eval(), 2), "eval with shared variable")
    check(np.allclose(T.get_scalar_constant_value(T.constant(3.0) * 2), 6.0), "get_scalar_constant_value")
    check(y.name is None and x.name == 'x', "variable names")
    y.name = 'y'
    check('y' in str(y) or 'y' == y.name, "setting a name")


attempt("eval", t_eval_and_test_values)

if FAIL:
    print("%d FAILURES" % len(FAIL))
    sys.exit(1)
print("OK t15_misc_features")
