"""Function inputs as Theano 1.0's tutorial and older code used them: In(value=...) defaults and
names given as keywords, f['name'] = value for the next call (then the default comes back), the
accumulator of the tutorial (shared state, givens that skip it), In(s, value=..., update=...,
implicit=False) internal state (read, set, passed), a state container shared by two functions,
f.copy() / copy.copy / copy(share_memory=True, swap=..., delete_updates=True, name=...),
In(strict=True), allow_input_downcast, Out(borrow=True), outputs as a dict, and a stateful function
pickled and resumed."""
import copy
import pickle
import sys

import numpy as np

import hypatia as theano
import hypatia.tensor as T
from hypatia import In, Out

FAIL = []


def check(c, m):
    if not c:
        FAIL.append(m)
        print("FAIL:", m)


def close(a, b, m, rtol=1e-7, atol=1e-9):
    a, b = np.asarray(a), np.asarray(b)
    check(a.shape == b.shape and np.allclose(a, b, rtol=rtol, atol=atol),
          "%s: %s vs %s maxdiff %s" % (m, a.shape, b.shape, np.abs(a - b).max() if a.shape == b.shape else '-'))


def attempt(name, fn):
    try:
        fn()
    except Exception as e:
        check(False, "%s raised %s: %s" % (name, type(e).__name__, str(e).splitlines()[0][:300] if str(e) else ''))


def raises(exc, fn, *a, **k):
    try:
        fn(*a, **k)
    except exc:
        return True
    return False


def t_defaults():
    # the tutorial's example
    x, y, w = T.dscalars('x', 'y', 'w')
    z = (x + y) * w
    f = theano.function([x, In(y, value=1), In(w, value=2, name='w_by_name')], z)
    close(f(33), 68., "defaults")
    close(f(33, 2), 70., "second given")
    close(f(33, 0, 1), 33., "all given")
    close(f(33, w_by_name=1), 34., "keyword by In name")
    close(f(33, w_by_name=1, y=0), 33., "keywords by variable name and In name")
    close(f(x=33), 68., "first input as a keyword")
    check(raises(TypeError, f, 33, 0, y=1), "a value given twice is a TypeError")
    check(raises(TypeError, f), "a missing required input is a TypeError")
    # f['name'] = value holds for the next call, then the default is back
    f['w_by_name'] = 10.
    close(f(1), 20., "value set by name")
    close(f(1), 4., "default back after the call")
    f[y] = 5.
    close(f(1), 12., "value set by variable")
    close(f[y], 1., "f[y] reads the default after the call")
    check(raises(TypeError, f.__setitem__, 'w_by_name', np.ones(3)), "setting a value of the wrong ndim")
    check(raises(KeyError, f.__getitem__, 'nope'), "unknown input name is a KeyError")
    # the In objects of the maker
    check([i.name for i in f.maker.inputs] == ['x', 'y', 'w_by_name'], "maker input names")
    check([i.value for i in f.maker.inputs][1:] == [1, 2], "maker input defaults")


attempt("defaults", t_defaults)


def t_accumulator():
    state = theano.shared(0)
    inc = T.iscalar('inc')
    accumulator = theano.function([inc], state, updates=[(state, state + inc)])
    close(accumulator(1), 0, "output sees the state before the update")
    close(accumulator(300), 1, "second call")
    close(state.get_value(), 301, "state after two calls")
    state.set_value(-1)
    accumulator(3)
    close(state.get_value(), 2, "set_value then update")
    decrementor = theano.function([inc], state, updates=[(state, state - inc)])
    decrementor(2)
    close(state.get_value(), 0, "two functions share the state")
    fn_of_state = state * 2 + inc
    foo = T.scalar(dtype=state.dtype)
    skip_shared = theano.function([inc, foo], fn_of_state, givens=[(state, foo)])
    close(skip_shared(1, 3), 7, "givens replace the shared variable")
    close(state.get_value(), 0, "givens leave it unchanged")


attempt("accumulator", t_accumulator)


def t_internal_state():
    s = T.dscalar('s')
    a = T.dscalar('a')
    g = theano.function([a, In(s, value=0.0, update=s + a, implicit=False)], s + a)
    close(g(2), 2., "first call with the initial state")
    close(g(3), 5., "state carried")
    close(g[s], 5., "g[s] reads the state")
    close(g(1, 10), 11., "a passed state replaces it")
    close(g[s], 11., "update computed from the passed state")
    g[s] = 100.
    close(g(1), 101., "state set through g[s]")
    close(g(1, s=0.), 1., "state passed by keyword")
    g[s] = 1.
    # a second function sharing the state container
    h = theano.function([a, In(s, value=g.container[s], update=s * a)], s)
    close(h(10), 1., "h reads the shared state")
    close(g[s], 10., "h's update is seen by g")
    close(g(1), 11., "g goes on from it")
    close(h[s], 11., "and h sees g's update")
    # copies: own state, starting from the current one
    g2 = g.copy()
    g2(5)
    close((g[s], g2[s]), (11., 16.), "copy has its own state")
    g3 = copy.copy(g)
    g3(1)
    close((g[s], g3[s]), (11., 12.), "copy.copy has its own state")
    g4 = g.copy(share_memory=True)
    g4(1)
    close(g[s], 11., "share_memory keeps a state with an update separate (mutable), as Theano")
    # pickled with its state
    g5 = pickle.loads(pickle.dumps(g))
    close(g5['s'], 11., "unpickled state (by name: unpickling made new variables)")
    close(g5(1), 12., "unpickled stateful function")
    close(g[s], 11., "original unaffected")


attempt("internal state", t_internal_state)


def t_copy():
    W = theano.shared(np.ones(2), name='W')
    W2 = theano.shared(np.ones(2) * 3, name='W2')
    u = T.dvector('u')
    fu = theano.function([u], (W * u).sum(), updates=[(W, W + 1)], name='train')
    fs = fu.copy(swap={W: W2})
    close(fs(np.ones(2)), 6., "swap: the copy reads the other variable")
    close((W.get_value(), W2.get_value()), ([1., 1.], [4., 4.]), "swap: the copy updates the other variable")
    fd = fu.copy(delete_updates=True)
    close(fd(np.ones(2)), 2., "delete_updates: value")
    close(W.get_value(), [1., 1.], "delete_updates: no update")
    fm = fu.copy(share_memory=True, name='train_copy')
    check(fm.name == 'train_copy', "copy name")
    fm(np.ones(2))
    close(W.get_value(), [2., 2.], "a copy updates the same shared variable")
    close(fu(np.ones(2)), 4., "the original sees it")


attempt("copy", t_copy)


def t_types():
    v = T.fvector('v')
    h = theano.function([In(v, strict=True)], v * 2)
    close(h(np.ones(2, dtype='float32')), [2., 2.], "strict float32 argument")
    check(raises(TypeError, h, np.ones(2)), "strict refuses float64")
    check(raises(TypeError, h, [1., 2.]), "strict refuses a list")
    h2 = theano.function([v], v * 2)
    check(raises(TypeError, h2, np.ones(2)), "float64 into float32 refused without allow_input_downcast")
    close(h2([1., 2.]), [2., 4.], "a list of Python floats converts")
    h3 = theano.function([v], v * 2, allow_input_downcast=True)
    r = h3(np.ones(2))
    check(r.dtype == np.float32, "allow_input_downcast casts")
    h4 = theano.function([In(v, allow_downcast=True)], v * 2)
    close(h4(np.ones(2)), [2., 2.], "In(allow_downcast=True)")
    check(raises(TypeError, lambda: theano.function([In(v, value=np.ones(2), strict=True)], v.sum())()),
          "strict default of the wrong dtype")
    close(theano.function([In(v, value=np.ones(2, dtype='float32'), strict=True)], v.sum())(), 2.,
          "strict default")
    x = T.dvector('x')
    r = theano.function([x], Out(x * 2, borrow=True))(np.ones(2))
    close(r, [2., 2.], "Out(borrow=True)")
    d = theano.function([x], {'double': x * 2, 'total': x.sum()})(np.ones(3))
    check(sorted(d) == ['double', 'total'], "outputs as a dict")
    close(d['total'], 3., "dict output value")
    a, b = theano.function([x], [x * 2, x * 2])(np.ones(2))
    a[0] = 99.
    close(b, [2., 2.], "equal outputs are separate arrays")
    W = theano.shared(np.arange(3.), name='W')
    o = theano.function([], W)()
    o[0] = 123.
    close(W.get_value(), [0., 1., 2.], "a returned shared value is a copy")


attempt("types", t_types)

print("FAILED" if FAIL else "OK", len(FAIL))
sys.exit(1 if FAIL else 0)
