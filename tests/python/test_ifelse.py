"""hypatia.ifelse.ifelse (Theano's lazy conditional): only the taken branch runs (a Python Op
counts its calls), several outputs, branch shapes, nesting, updates, gradients, errors, pickling."""
import pickle

import numpy as np
import pytest

import hypatia
import hypatia.tensor as T
from hypatia.ifelse import IfElse, ifelse

MODES = ["FAST_RUN", "FAST_COMPILE", "NONE", pytest.param("DebugMode", marks=pytest.mark.host_graphs)]


class Counted(hypatia.Op):
    """Identity that records each call in `calls` under its tag (a side effect)."""

    __props__ = ("tag",)
    calls = []

    def __init__(self, tag):
        self.tag = tag

    def make_node(self, x):
        x = T.as_tensor_variable(x)
        return hypatia.Apply(self, [x], [x.type()])

    def perform(self, node, inputs, output_storage):
        Counted.calls.append(self.tag)
        output_storage[0][0] = inputs[0].copy()

    def grad(self, inputs, output_grads):
        return [output_grads[0]]


@pytest.fixture(autouse=True)
def _clear():
    Counted.calls.clear()


@pytest.mark.host_graphs  # (counts the CPU backend's debug-check runs)
@pytest.mark.parametrize("mode", MODES)
def test_only_the_taken_branch_runs(mode):
    c = T.iscalar("c")
    x = T.dvector("x")
    f = hypatia.function([c, x], ifelse(c, T.exp(Counted("then")(x)), Counted("else")(x) - 1), mode=mode)
    xv = np.array([0.0, 1.0])
    np.testing.assert_allclose(f(1, xv), np.exp(xv))
    # The tests run with debug_checks (conftest.py), like DebugMode: each node runs beside its
    # reference kernel, then again into garbage outputs and on strided copies of its inputs, so a
    # taken branch counts 4 and one not taken 0.
    per_run = 4 if hypatia.config.debug_checks or mode == "DebugMode" else 1
    assert Counted.calls == ["then"] * per_run
    np.testing.assert_allclose(f(0, xv), xv - 1)
    assert Counted.calls == ["then"] * per_run + ["else"] * per_run


@pytest.mark.parametrize("mode", ["FAST_RUN", "NONE"])
def test_several_outputs_shapes_and_nesting(mode):
    c, d = T.bscalar("c"), T.bscalar("d")
    x = T.dmatrix("x")
    inner = ifelse(d, x.sum(axis=0), x[0])
    a, b = ifelse(c, [inner, x.T], [x[:, 0] * 0, x[:1]])
    f = hypatia.function([c, d, x], [a, b], mode=mode)
    xv = np.arange(6.0).reshape(2, 3)
    r = f(1, 1, xv)
    np.testing.assert_array_equal(r[0], xv.sum(0))
    np.testing.assert_array_equal(r[1], xv.T)
    r = f(1, 0, xv)
    np.testing.assert_array_equal(r[0], xv[0])
    r = f(0, 1, xv)
    np.testing.assert_array_equal(r[0], [0.0, 0.0])
    np.testing.assert_array_equal(r[1], xv[:1])


@pytest.mark.parametrize("mode", ["FAST_RUN", "NONE"])
def test_gradient_and_updates(mode):
    c = T.iscalar("c")
    w = hypatia.shared(np.array([1.0, 2.0]), "w")
    cost = T.sum(ifelse(c, w ** 2, 3 * w))
    g = T.grad(cost, w)
    step = hypatia.function([c], [cost, g], updates=[(w, ifelse(c, w - 0.5 * g, w))], mode=mode)
    cost_v, g_v = step(1)
    assert cost_v == 5.0
    np.testing.assert_allclose(g_v, [2.0, 4.0])
    np.testing.assert_allclose(w.get_value(), [0.0, 0.0])
    cost_v, g_v = step(0)
    np.testing.assert_allclose(g_v, [3.0, 3.0])
    np.testing.assert_allclose(w.get_value(), [0.0, 0.0])  # the else update keeps w


def test_python_values_errors_and_pickle():
    c = T.scalar("c")
    x = T.fvector("x")
    y = ifelse(c > 0, x, 0.0)  # a Python float takes the other branch's dtype
    assert y.dtype == "float32"
    assert isinstance(y.owner.op, IfElse)
    with pytest.raises(TypeError, match="output 0.*float32.*float64"):
        ifelse(c, x, T.dvector("d"))
    with pytest.raises(TypeError, match="scalar"):
        ifelse(x, x, x)
    with pytest.raises(ValueError, match="then branch has 2"):
        ifelse(c, [x, x], [x])
    f = hypatia.function([c, x], y)
    g = pickle.loads(pickle.dumps(f))
    np.testing.assert_array_equal(g(1.0, np.ones(2, np.float32)), np.ones(2, np.float32))
    np.testing.assert_array_equal(g(-1.0, np.ones(2, np.float32)), np.zeros(1, np.float32))


@pytest.mark.parametrize("mode", MODES)
def test_fusion_and_lifting_keep_the_branch_not_taken_from_running(mode):
    # Both branches are elementwise work on x and the condition reads x too: fusing the branches'
    # nodes together (or lifting their common add out with operands broadcastable in one branch
    # only) ran the branch not taken, whose index is out of range.
    x = T.dvector("x")
    out = ifelse(T.gt(x.sum(), 0), T.exp(x) * 2 + x.sum(), x[5] + x * 3)
    f = hypatia.function([x], out, mode=mode)
    xv = np.array([0.5, 1.0])
    np.testing.assert_allclose(f(xv), np.exp(xv) * 2 + 1.5)
    with pytest.raises(IndexError, match="index 5 is out of bounds"):
        f(-xv)
