"""Variables and types: Theano's constructors, TensorType, operators, methods and graph objects."""
import numpy as np
import pytest

import hypatia
import hypatia.tensor as T


def test_type_constructors():
    assert T.fmatrix("m").type == T.TensorType("float32", (False, False))
    assert str(T.fmatrix.dtype) == "float32" and T.fmatrix.ndim == 2
    assert T.dvector().dtype == "float64"
    assert T.iscalar().dtype == "int32" and T.lscalar().dtype == "int64"
    assert T.bvector().dtype == "int8" and T.wvector().dtype == "int16"
    assert T.row().broadcastable == (True, False)
    assert T.col().broadcastable == (False, True)
    assert T.tensor3().ndim == 3 and T.tensor4().ndim == 4
    assert T.matrix(dtype="int32").dtype == "int32"
    assert T.tensor("float32", (False, True, False)).broadcastable == (False, True, False)
    a, b = T.fvectors("a", "b")
    assert a.name == "a" and b.name == "b" and a.dtype == "float32"
    x = T.TensorType("float64", (False,))("x")
    assert x.name == "x" and x.type.ndim == 1
    assert str(T.fmatrix.make_variable("q").type) == "TensorType(float32, matrix)"
    assert repr(T.TensorType("int64", (False,) * 3)) == "TensorType(int64, 3D)"
    assert T.TensorType("float32", (False,)) == T.fvector
    assert T.TensorType("float32", (False,)) != T.dvector
    assert hash(T.TensorType("float32", (False,))) == hash(T.fvector)
    with hypatia.change_flags(floatX="float32"):
        assert T.scalar().dtype == "float32" and T.vector().dtype == "float32"
    with hypatia.change_flags(floatX="float64"):
        assert T.matrix().dtype == "float64"


def test_variable_attributes_and_classes():
    x = T.dmatrix("x")
    y = x + 1
    assert isinstance(x, T.TensorVariable) and isinstance(y, hypatia.Variable)
    assert x.owner is None and isinstance(y.owner, hypatia.Apply)
    assert y.owner.inputs[0] is x and y.owner.outputs[0] is y
    assert isinstance(y.owner.op, T.Elemwise) and y.owner.op.scalar_op == "add"
    assert str(y) == "Elemwise{add,no_inplace}.0"
    assert str(y.owner) == "Elemwise{add,no_inplace}(x, DimShuffle{x,x}.0)"
    y.name = "y"
    assert str(y) == "y"
    y.name = None
    assert y.name is None
    c = T.constant(2.5)
    assert isinstance(c, T.TensorConstant) and c.data == 2.5 and c.value == 2.5
    assert not isinstance(x, T.TensorConstant)
    x.tag.note = "hello"
    assert x.tag.note == "hello"
    assert x.ndim == 2 and x.dtype == "float64" and x.type.broadcastable == (False, False)
    assert "test_variable.py" in y.created_at


def test_operators_methods():
    x = T.dmatrix("x")
    v = T.dvector("v")
    a = np.arange(1.0, 7.0).reshape(2, 3)
    av = np.array([1.0, -2.0, 3.0])
    outs = [x + v, x - 1, 2 * x, x / 2, 7 // x, x % 2, x ** 2, 2 ** v, -x, +x, abs(v), x @ v, v @ x.T,
            x > 2, x >= 2, x < 2, x <= 2, (x > 2) & (x < 5), (x > 2) | (x < 2), (x > 2) ^ (x > 3), ~(x > 2),
            x.T, x.transpose(1, 0), x.dimshuffle(1, "x", 0), x.reshape((3, 2)), x.flatten(), x.sum(),
            x.sum(axis=1), x.mean(axis=0), x.max(), x.min(axis=1), x.prod(), x.var(), x.std(axis=0),
            x.argmax(axis=1), x.argmin(), x.astype("int32"), x.clip(2, 4), x.dot(v), v.norm(2), x.cumsum(axis=1),
            x.squeeze(), x.repeat(2, axis=0), x.any(), x.all(), x.round(), x.copy(), x.zeros_like(),
            x.ones_like(), x.swapaxes(0, 1)]
    f = hypatia.function([x, v], outs)
    r = f(a, av)
    want = [a + av, a - 1, 2 * a, a / 2, 7 // a, a % 2, a ** 2, 2 ** av, -a, a, np.abs(av), a @ av, av @ a.T,
            a > 2, a >= 2, a < 2, a <= 2, (a > 2) & (a < 5), (a > 2) | (a < 2), (a > 2) ^ (a > 3), ~(a > 2),
            a.T, a.T, a.T[:, None, :], a.reshape(3, 2), a.flatten(), a.sum(), a.sum(axis=1), a.mean(axis=0),
            a.max(), a.min(axis=1), a.prod(), a.var(), a.std(axis=0), a.argmax(axis=1), a.argmin(),
            a.astype("int32"), a.clip(2, 4), a.dot(av), np.linalg.norm(av), a.cumsum(axis=1), a, a.repeat(2, axis=0),
            a.any(), a.all(), a.round(), a, np.zeros_like(a), np.ones_like(a), a.T]
    assert len(r) == len(want)
    for i, (got, exp) in enumerate(zip(r, want)):
        np.testing.assert_allclose(got, exp, rtol=1e-12, err_msg=f"output {i}")
        assert got.dtype == np.asarray(exp).dtype or i in (12,), (i, got.dtype, np.asarray(exp).dtype)


def test_a_comparison_has_no_truth_value_and_a_variable_no_len():
    x = T.dvector("x")
    for cmp in (x > 0, x >= 0, 0 < x, x <= 1):
        with pytest.raises(TypeError, match="comparison has no truth value"):
            bool(cmp)
    with pytest.raises(TypeError):
        if 0 < x < 1:  # (0 < x) and (x < 1): raises instead of meaning x < 1
            pass
    # Any other variable is true, as in Theano: `if W:`, `W or default`, `[p for p in ps if p]`.
    assert bool(x) and bool(x + 1) and bool(T.eq(x, 0)) and bool(T.constant(0.0))
    w = None
    assert (w or x) is x and (x or w) is x
    assert [p for p in (x, None, x * 2) if p][0] is x
    with pytest.raises(TypeError):
        len(x)
    with pytest.raises(TypeError):
        list(x)
    assert (x == x) is True  # == is identity, as in Theano (use T.eq)


def test_as_tensor_variable_and_constant():
    assert T.as_tensor_variable(1).dtype == "int64"
    assert T.as_tensor_variable(True).dtype == "bool"
    with hypatia.change_flags(floatX="float32"):
        assert T.as_tensor_variable(1.5).dtype == "float32"
        assert T.as_tensor_variable([1.0, 2.0]).dtype == "float32"
    assert T.as_tensor_variable(np.float32(1)).dtype == "float32"
    assert T.as_tensor_variable(np.zeros((2, 3), np.int16)).type == T.TensorType("int16", (False, False))
    x = T.dscalar("x")
    s = T.as_tensor_variable([x, x * 2, 3.0])
    assert s.ndim == 1
    np.testing.assert_array_equal(s.eval({x: 1.0}), [1.0, 2.0, 3.0])
    assert T.as_tensor_variable(x.owner if x.owner else x) is x
    c = T.constant([[1, 2]], name="c", dtype="float64")
    assert c.name == "c" and c.dtype == "float64" and c.broadcastable == (True, False)
    assert T.as_tensor_variable(np.ones(3), ndim=2).broadcastable == (True, False)


def test_op_objects():
    x = T.dvector("x")
    a = T.exp(x).owner.op
    b = T.exp(x * 2).owner.op
    assert a == b and hash(a) == hash(b)
    assert a != T.log(x).owner.op
    assert a.name == "Elemwise{exp,no_inplace}"
    node = a.make_node([x])
    assert isinstance(node, hypatia.Apply) and node.outputs[0].ndim == 1
    assert T.sum(x).owner.op.axis == [0]
    assert x.dimshuffle("x", 0).owner.op.new_order == ("x", 0)


def test_fgraph():
    x = T.dvector("x")
    y = T.exp(x) + x
    fg = hypatia.FunctionGraph([x], [y])
    nodes = fg.toposort()
    assert len(nodes) == len(fg) and isinstance(nodes[0], hypatia.Apply)
    clients = fg.clients(fg.inputs[0])
    assert len(clients) == 2
    assert hypatia.printing.debugprint(fg, file="str").startswith("Elemwise{add")
