"""Ops defined in Python (hypatia.Op subclasses) in graphs, gradients and compiled functions."""
import pickle

import numpy as np
import pytest

import hypatia
import hypatia.tensor as T
from util import Double


class ScaleShift(hypatia.Op):
    """Two outputs and attributes: (a * x + b, x - b)."""

    __props__ = ("a", "b")

    def __init__(self, a, b):
        self.a, self.b = a, b

    def make_node(self, x):
        x = T.as_tensor_variable(x)
        return hypatia.Apply(self, [x], [x.type(), x.type()])

    def perform(self, node, inputs, output_storage):
        (x,) = inputs
        output_storage[0][0] = (self.a * x + self.b).astype(x.dtype)
        output_storage[1][0] = (x - self.b).astype(x.dtype)

    def grad(self, inputs, output_grads):
        g0, g1 = output_grads
        return [g0 * self.a + g1]


class NoGrad(hypatia.Op):
    __props__ = ()

    def make_node(self, x):
        return hypatia.Apply(self, [x], [x.type()])

    def perform(self, node, inputs, output_storage):
        output_storage[0][0] = inputs[0]  # an alias of the input: copied by the kernel


def test_python_op_in_a_function():
    x = T.dmatrix("x")
    y = Double()(x) + 1
    assert isinstance(y.owner.inputs[0].owner.op, Double)
    assert isinstance(y.owner.inputs[0].owner.op, hypatia.Op)
    assert isinstance(T.exp(x).owner.op, hypatia.Op)  # C++ ops are hypatia.Op instances too
    f = hypatia.function([x], y)
    a = np.arange(6.0).reshape(2, 3)
    np.testing.assert_array_equal(f(a), a * 2 + 1)
    np.testing.assert_array_equal(hypatia.function([x], y, mode="REFERENCE")(a), a * 2 + 1)
    assert "Double" in hypatia.printing.debugprint(f, file="str")


def test_python_op_gradient_and_shape():
    x = T.dvector("x")
    cost = T.sum(Double()(x) ** 2)
    g = T.grad(cost, x)
    a = np.array([1.0, -2.0])
    np.testing.assert_allclose(hypatia.function([x], g)(a), 8 * a)
    hypatia.gradient.verify_grad(lambda v: Double()(v), [a], rng=np.random.RandomState(0))
    assert hypatia.function([x], Double()(x).shape)(a).tolist() == [2]


def test_multiple_outputs_props_and_equality():
    x = T.dvector("x")
    o1, o2 = ScaleShift(2.0, 1.0)(x)
    f = hypatia.function([x], [o1, o2, T.grad(T.sum(o1 + o2), x)])
    a = np.array([1.0, 2.0])
    r = f(a)
    np.testing.assert_array_equal(r[0], 2 * a + 1)
    np.testing.assert_array_equal(r[1], a - 1)
    np.testing.assert_array_equal(r[2], [3.0, 3.0])
    assert ScaleShift(2.0, 1.0) == ScaleShift(2.0, 1.0) and ScaleShift(2.0, 1.0) != ScaleShift(1.0, 1.0)
    assert str(ScaleShift(2.0, 1.0)) == "ScaleShift{a=2.0, b=1.0}"


def test_undefined_gradient_and_aliasing_output():
    x = T.dvector("x")
    with pytest.raises(hypatia.NullTypeGradError):
        T.grad(T.sum(NoGrad()(x)), x)
    f = hypatia.function([x], NoGrad()(x))
    a = np.ones(3)
    out = f(a)
    assert not np.shares_memory(out, a)


def test_perform_errors_reach_the_caller():
    class Broken(Double):
        def perform(self, node, inputs, output_storage):
            raise RuntimeError("broken perform")

    class WrongType(Double):
        def perform(self, node, inputs, output_storage):
            output_storage[0][0] = np.zeros((2, 2))

    x = T.dvector("x")
    with pytest.raises(RuntimeError, match="broken perform"):
        hypatia.function([x], Broken()(x))(np.ones(2))
    with pytest.raises(TypeError, match="WrongType"):
        hypatia.function([x], WrongType()(x))(np.ones(2))


def test_python_op_pickles():
    x = T.dvector("x")
    y = Double()(x) * 3
    x2, y2 = pickle.loads(pickle.dumps((x, y)))
    np.testing.assert_array_equal(hypatia.function([x2], y2)(np.ones(2)), [6.0, 6.0])
