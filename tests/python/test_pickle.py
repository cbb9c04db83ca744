"""pickle round trips: shared variables, graphs, ops and compiled functions."""
import pickle

import numpy as np

import hypatia
import hypatia.tensor as T


def roundtrip(obj):
    return pickle.loads(pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL))


def test_shared_variable_keeps_value_type_and_name():
    s = hypatia.shared(np.arange(6.0).reshape(2, 3), name="s", broadcastable=(False, False))
    s.default_update = s * 2
    s2 = roundtrip(s)
    assert s2.name == "s" and s2.type == s.type
    np.testing.assert_array_equal(s2.get_value(), s.get_value())
    s2.set_value(np.zeros((2, 3)))
    assert s.get_value()[1, 2] == 5.0  # a separate variable after unpickling
    hypatia.function([], [])()  # nothing to update
    hypatia.function([], s2)()
    np.testing.assert_array_equal(s2.get_value(), np.zeros((2, 3)))  # default_update s2 * 2 of zeros


def test_ops_and_types():
    x = T.dmatrix("x")
    i = T.lscalar("i")
    for v in [T.exp(x), x.sum(axis=1), x.dimshuffle(1, "x", 0), x[1:, ::-1], x[i], x[[0, 1]],
              T.set_subtensor(x[0], 1.0), T.nnet.softmax(x), T.dot(x, x), T.argmax(x, 0), T.cumsum(x, 1),
              T.concatenate([x, x]), x.reshape((-1,)), T.cast(x, "int32"), T.arange(i), T.tile(x, (2, 2))]:
        op = v.owner.op
        op2 = roundtrip(op)
        assert op2 == op and hash(op2) == hash(op) and type(op2) is type(op), op
    assert roundtrip(T.fmatrix.make_variable().type) == T.fmatrix
    f = hypatia.function([x], T.tanh(x * 2 + 1))
    ops = [n.op for n in f.maker.fgraph.toposort()]
    assert ops and all(roundtrip(op) == op for op in ops)  # fused Composite ops too


def test_graph_roundtrip_evaluates_the_same():
    x = T.dvector("x")
    c = T.constant(np.array([1.0, 2.0, 3.0]))
    y = T.tanh(x * c).sum() + x[1:].max()
    y.name = "y"
    g = T.grad(y, x)
    x2, y2, g2 = roundtrip((x, y, g))
    assert y2.name == "y" and x2.name == "x"
    a = np.array([0.5, -1.0, 2.0])
    f = hypatia.function([x], [y, g])
    f2 = hypatia.function([x2], [y2, g2])
    for r, r2 in zip(f(a), f2(a)):
        np.testing.assert_allclose(r2, r)


def test_function_roundtrip_keeps_shared_links():
    w = hypatia.shared(np.ones(3), name="w")
    x = T.dvector("x")
    cost = T.sum((x * w) ** 2)
    step = hypatia.function([x], cost, updates=[(w, w - 0.1 * T.grad(cost, w))], name="step")
    step(np.arange(3.0))
    step2, w2 = roundtrip((step, w))
    np.testing.assert_array_equal(w2.get_value(), w.get_value())
    r1, r2 = step(np.arange(3.0)), step2(np.arange(3.0))
    np.testing.assert_allclose(r1, r2)
    np.testing.assert_allclose(w2.get_value(), w.get_value())  # step2 updates w2, step updates w
    assert step2.name == "step"
    f = hypatia.function([hypatia.In(x, value=np.zeros(3))], hypatia.Out(x * 2, borrow=True))
    f2 = roundtrip(f)
    np.testing.assert_array_equal(f2(), np.zeros(3))


def test_function_with_in_update_state_survives_pickling():
    x, s = T.dscalars("x", "s")
    g = hypatia.function([x, hypatia.In(s, value=1.0, update=s * x)], s)
    g(3.0)
    g2 = pickle.loads(pickle.dumps(g))
    assert g2["s"] == 3.0
    assert g2(2.0) == 3.0 and g2["s"] == 6.0
    assert g[s] == 3.0  # the original's state is its own
