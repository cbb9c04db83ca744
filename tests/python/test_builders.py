"""OpFromGraph (hypatia.compile.builders, Theano's theano.compile.builders.OpFromGraph).

Without overrides an op is expanded where it is applied (its graph copied onto the arguments); with
overrides, a connection_pattern or an unused input it is one OpFromGraph node running its compiled
graph. Most tests run both: `kind` "expanded" is a plain op, "node" the same op with
grad_overrides=['default', ...] (an override that changes nothing but keeps the node)."""
import pickle

import numpy as np
import pytest

import hypatia
import hypatia.tensor as T
from hypatia import OpFromGraph
from hypatia.gradient import verify_grad

KINDS = ["expanded", "node"]


def make_op(inputs, outputs, kind, **kw):
    """The op of `kind` (see the module docstring)."""
    if kind == "node":
        n_shared = len([v for v in hypatia.gof.graph.inputs(outputs) if v.kind == "shared"])
        kw.setdefault("grad_overrides", ["default"] * (len(inputs) + n_shared))
    op = OpFromGraph(inputs, outputs, **kw)
    assert op.expands == (kind == "expanded")
    return op


def ofg_nodes(f):
    return [n for n in f.maker.fgraph.toposort() if isinstance(n.op, OpFromGraph)]


def op_names(f):
    return [str(n.op) for n in f.maker.fgraph.toposort()]


rng = np.random.RandomState(1234)


def test_exported_under_theanos_names():
    assert hypatia.OpFromGraph is OpFromGraph
    assert hypatia.compile.OpFromGraph is OpFromGraph
    assert hypatia.compile.builders.OpFromGraph is OpFromGraph
    x = T.dscalar("x")
    assert isinstance(OpFromGraph([x], [x * 2]), hypatia.Op)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("inline", [False, True])
def test_theanos_first_example(kind, inline):
    x, y, z = T.dscalars("xyz")
    op = make_op([x, y, z], [x + y * z], kind, inline=inline)
    e2 = op(x, y, z) + op(z, y, x)
    fn = hypatia.function([x, y, z], [e2])
    np.testing.assert_allclose(fn(1.0, 2.0, 3.0)[0], (1 + 2 * 3) + (3 + 2 * 1))
    assert len(ofg_nodes(fn)) == (2 if kind == "node" else 0)


@pytest.mark.parametrize("kind", KINDS)
def test_values_and_gradients_against_numpy(kind):
    x, w = T.dmatrices("x", "w")
    b = T.dvector("b")
    op = make_op([x, w, b], [T.tanh(T.dot(x, w) + b)], kind)
    xv, wv, bv = rng.randn(3, 4), rng.randn(4, 2), rng.randn(2)
    out = op(x, w, b)
    assert out.type == T.dmatrix
    cost = T.sum(out ** 2)
    f = hypatia.function([x, w, b], [out] + T.grad(cost, [x, w, b]))
    val, gx, gw, gb = f(xv, wv, bv)
    h = np.tanh(xv @ wv + bv)
    np.testing.assert_allclose(val, h)
    d = 2 * h * (1 - h ** 2)
    np.testing.assert_allclose(gx, d @ wv.T)
    np.testing.assert_allclose(gw, xv.T @ d)
    np.testing.assert_allclose(gb, d.sum(0))
    verify_grad(lambda a, c, e: op(a, c, e), [xv, wv, bv], rng=rng)


def test_expanded_op_is_optimized_with_its_surroundings():
    x, w = T.dmatrices("x", "w")
    b = T.dvector("b")
    layer = OpFromGraph([x, w, b], [T.dot(x, w) + b])
    a = T.dmatrix("a")
    f = hypatia.function([a, w, b], T.tanh(layer(a, w, b)) * 2)
    names = op_names(f)
    assert not ofg_nodes(f)
    # the product is one BLAS node and the bias, tanh and scaling one fused loop
    assert sum("dot" in n.lower() or "gemm" in n.lower() or "gemv" in n.lower() for n in names) == 1, names
    assert sum("Composite" in n for n in names) == 1 and any("tanh" in n for n in names), names
    av, wv, bv = rng.randn(3, 4), rng.randn(4, 5), rng.randn(5)
    np.testing.assert_allclose(f(av, wv, bv), np.tanh(av @ wv + bv) * 2)


@pytest.mark.parametrize("kind", KINDS)
def test_several_outputs(kind):
    x, y = T.dvectors("xy")
    op = make_op([x, y], [x + y, x * y, T.sum(x)], kind)
    outs = op(x, y)
    assert isinstance(outs, list) and len(outs) == 3
    assert [o.ndim for o in outs] == [1, 1, 0]
    assert isinstance(op(x, y, return_list=True), list)
    a, b = T.dvectors("ab")
    s, p, t = op(b, a)
    f = hypatia.function([a, b], [s, p, t, T.grad(T.sum(p) + t, a)])
    av, bv = rng.randn(5), rng.randn(5)
    r = f(av, bv)
    np.testing.assert_allclose(r[0], bv + av)
    np.testing.assert_allclose(r[1], bv * av)
    np.testing.assert_allclose(r[2], bv.sum())
    np.testing.assert_allclose(r[3], bv)  # t = sum(b): no gradient for a
    # a one-output op with return_list gives a list of one
    one = make_op([x], [x * 2], kind)
    assert isinstance(one(a, return_list=True), list) and one(a).ndim == 1


@pytest.mark.parametrize("outer", KINDS)
@pytest.mark.parametrize("inner", KINDS)
def test_nested(outer, inner):
    x, y = T.dvectors("xy")
    square = make_op([x], [x ** 2], inner)
    z = T.dvector("z")
    # the outer op's graph holds the inner op (as its expansion or as a node)
    outer_op = make_op([y, z], [square(y) * z + square(z)], outer)
    a, b = T.dvectors("ab")
    out = outer_op(a, b)
    f = hypatia.function([a, b], [out, T.grad(T.sum(out), a), T.grad(T.sum(out), b)])
    av, bv = rng.randn(4), rng.randn(4)
    r = f(av, bv)
    np.testing.assert_allclose(r[0], av ** 2 * bv + bv ** 2)
    np.testing.assert_allclose(r[1], 2 * av * bv)
    np.testing.assert_allclose(r[2], av ** 2 + 2 * bv)
    verify_grad(lambda p, q: outer_op(p, q), [av, bv], rng=rng)
    # an op inside an op inside an op
    third = make_op([x, y], [outer_op(x, y) - square(x)], outer)
    f = hypatia.function([a, b], third(a, b))
    np.testing.assert_allclose(f(av, bv), av ** 2 * bv + bv ** 2 - av ** 2)


@pytest.mark.parametrize("kind", KINDS)
def test_shared_variables_inside_with_updates(kind):
    x = T.dvector("x")
    w = hypatia.shared(np.array([1.0, 2.0, 3.0]), name="w")
    count = hypatia.shared(np.float64(0.0), name="count")
    op = make_op([x], [x * w + count], kind)
    assert op.shared_inputs == [w, count] or op.shared_inputs == [count, w]
    a = T.dvector("a")
    out = op(a)
    cost = T.sum(out ** 2)
    gw = T.grad(cost, w)
    # the function updates the variables the op reads: each call sees the values before it
    f = hypatia.function([a], [out, gw], updates=[(w, w - 0.1 * gw), (count, count + 1)])
    av = np.array([0.5, -1.0, 2.0])
    wv, cv = w.get_value(), 0.0
    for _ in range(3):
        o, g = f(av)
        np.testing.assert_allclose(o, av * wv + cv)
        np.testing.assert_allclose(g, 2 * (av * wv + cv) * av)
        wv, cv = wv - 0.1 * g, cv + 1
        np.testing.assert_allclose(w.get_value(), wv)
        assert count.get_value() == cv
    # set_value is seen too
    w.set_value(np.zeros(3))
    np.testing.assert_allclose(f(av)[0], np.full(3, cv))


def test_shared_variable_given_in_place_of_the_implicit_input():
    x = T.dvector("x")
    w = hypatia.shared(np.array([1.0, 2.0]), name="w")
    op = OpFromGraph([x], [x * w], grad_overrides=["default", "default"])
    v = T.dvector("v")
    node = op.make_node(x, v)  # as a copy of a node does: the implicit input replaced
    assert node.inputs[1] is v
    f = hypatia.function([x, v], node.outputs[0])
    np.testing.assert_allclose(f([1.0, 1.0], [3.0, 4.0]), [3.0, 4.0])
    f = hypatia.function([x, v], hypatia.clone(op(x), replace={w: v}))
    np.testing.assert_allclose(f([1.0, 1.0], [5.0, 6.0]), [5.0, 6.0])


def rescale_dy(inps, grads):
    x, y, z = inps
    (g,) = grads
    return z * 2


@pytest.mark.parametrize("inline", [False, True])
def test_grad_overrides_theanos_example(inline):
    x, y, z = T.dscalars("xyz")
    e = x + y * z
    op = OpFromGraph([x, y, z], [e], inline=inline, grad_overrides=["default", rescale_dy, "default"])
    e2 = op(x, y, z)
    dx, dy, dz = T.grad(e2, [x, y, z])
    fn = hypatia.function([x, y, z], [dx, dy, dz])
    # the gradient wrt y is now doubled
    np.testing.assert_allclose(fn(2.0, 3.0, 4.0), [1.0, 8.0, 3.0])
    # the forward value is the graph's
    np.testing.assert_allclose(hypatia.function([x, y, z], e2)(2.0, 3.0, 4.0), 14.0)


def double_gradient(inputs, output_grads):
    return [2 * output_grads[0] * T.cos(inputs[0])]


def test_grad_overrides_whole_callable_a_custom_gradient_of_2x():
    x = T.dvector("x")
    op = OpFromGraph([x], [T.sin(x)], grad_overrides=double_gradient)
    a = T.dvector("a")
    out = op(a)
    g = T.grad(T.sum(out), a)
    f = hypatia.function([a], [out, g])
    av = rng.randn(5)
    o, gv = f(av)
    np.testing.assert_allclose(o, np.sin(av))
    np.testing.assert_allclose(gv, 2 * np.cos(av))
    # the gradient is an ordinary graph: second derivatives go through it
    h = T.grad(T.sum(g), a)
    np.testing.assert_allclose(hypatia.function([a], h)(av), -2 * np.sin(av))


def test_grad_overrides_by_an_opfromgraph():
    x, g = T.dvectors("xg")
    straight_through = OpFromGraph([x, g], [g])  # identity gradient for a rounding forward pass
    op = OpFromGraph([x], [T.round(x)], grad_overrides=straight_through)
    a = T.dvector("a")
    out = op(a)
    f = hypatia.function([a], [out, T.grad(T.sum(out * a), a)])
    av = np.array([0.2, 1.7, -2.6])
    o, gv = f(av)
    np.testing.assert_allclose(o, np.round(av))
    np.testing.assert_allclose(gv, av + np.round(av))
    bad = OpFromGraph([x], [T.round(x)], grad_overrides=OpFromGraph([x], [x * 2]))
    with pytest.raises(ValueError, match="2 inputs"):
        T.grad(T.sum(bad(a)), a)


def lop_times_output(inputs, outputs, output_grads):
    # d exp(x) = exp(x) dx, written with the op's output (which the gradient reuses)
    return [output_grads[0] * outputs[0] * 2]


def test_lop_overrides_reads_the_nodes_outputs():
    x = T.dvector("x")
    op = OpFromGraph([x], [T.exp(x)], lop_overrides=lop_times_output, name="myexp")
    a = T.dvector("a")
    out = op(a)
    g = T.grad(T.sum(out), a)
    f = hypatia.function([a], [out, g])
    av = rng.randn(4)
    o, gv = f(av)
    np.testing.assert_allclose(o, np.exp(av))
    np.testing.assert_allclose(gv, 2 * np.exp(av))
    # the gradient reads the op's output: one node computes it for both
    assert len(ofg_nodes(f)) == 1
    # only the gradient: the node still computes the output it reads
    fg = hypatia.function([a], g)
    assert len(ofg_nodes(fg)) == 1
    np.testing.assert_allclose(fg(av), 2 * np.exp(av))


def test_lop_and_grad_overrides_are_exclusive_and_checked():
    x, y = T.dvectors("xy")
    with pytest.raises(ValueError, match="mutually exclusive"):
        OpFromGraph([x], [x * 2], grad_overrides=double_gradient, lop_overrides=lop_times_output)
    with pytest.raises(ValueError, match="one entry per inputs"):
        OpFromGraph([x, y], [x * y], grad_overrides=["default"])
    with pytest.raises(TypeError, match=r"grad_overrides\[1\]"):
        OpFromGraph([x, y], [x * y], grad_overrides=["default", 3])
    with pytest.raises(TypeError, match="grad_overrides"):
        OpFromGraph([x, y], [x * y], grad_overrides=None)
    with pytest.raises(NotImplementedError, match="grad_overrides"):
        OpFromGraph([x, y], [x * y], grad_overrides=x)
    # a function returning the wrong number of gradients: said when the gradient is taken
    op = OpFromGraph([x, y], [x * y], grad_overrides=lambda i, g: [g[0]])
    with pytest.raises(ValueError, match="must return 2 gradients"):
        T.grad(T.sum(op(x, y)), x)
    op = OpFromGraph([x, y], [x * y], grad_overrides=lambda i, g: g[0])
    with pytest.raises(TypeError, match="must return a list"):
        T.grad(T.sum(op(x, y)), x)
    op = OpFromGraph([x, y], [x * y], grad_overrides=lambda i, g: [T.sum(g[0]), g[0]])
    with pytest.raises(TypeError, match="0 dimensions, expected 1"):
        T.grad(T.sum(op(x, y)), x)


def test_disconnected_gradient_override():
    x, y = T.dvectors("xy")
    op = OpFromGraph([x, y], [x * y], grad_overrides=[None, "default"])
    a, b = T.dvectors("ab")
    cost = T.sum(op(a, b))
    with pytest.raises(hypatia.DisconnectedInputError):
        T.grad(cost, a)
    ga, gb = T.grad(cost, [a, b], disconnected_inputs="ignore")
    f = hypatia.function([a, b], [ga, gb])
    av, bv = rng.randn(3), rng.randn(3)
    r = f(av, bv)
    np.testing.assert_allclose(r[0], 0)
    np.testing.assert_allclose(r[1], av)
    assert op.connection_pattern(op.make_node(a, b)) == [[False], [True]]


def test_default_gradient_of_an_unconnected_and_an_integer_input():
    x, y = T.dvectors("xy")
    n = T.lscalar("n")
    op = OpFromGraph([x, y, n], [x * n, T.cast(y.shape[0], "float64")], grad_overrides=["default"] * 3)
    a, b = T.dvectors("ab")
    m = T.lscalar("m")
    p, q = op(a, b, m)
    # y reaches the second output only through its shape: no gradient, as in Theano
    with pytest.raises(hypatia.DisconnectedInputError):
        T.grad(T.sum(q), b)
    with pytest.raises(hypatia.DisconnectedInputError):
        T.grad(T.sum(p), m)
    assert op.connection_pattern(p.owner) == [[True, False], [False, False], [False, False]]
    f = hypatia.function([a, b, m], [p, q, T.grad(T.sum(p), a)])
    r = f([1.0, 2.0], [3.0, 4.0, 5.0], 3)
    np.testing.assert_allclose(r[0], [3.0, 6.0])
    np.testing.assert_allclose(r[1], 3.0)
    np.testing.assert_allclose(r[2], [3.0, 3.0])


def test_user_connection_pattern():
    x, y = T.dvectors("xy")
    op = OpFromGraph([x, y], [x * y], connection_pattern=[[True], [False]])
    assert not op.expands
    a, b = T.dvectors("ab")
    out = op(a, b)
    assert op.connection_pattern(out.owner) == [[True], [False]]
    with pytest.raises(hypatia.DisconnectedInputError):
        T.grad(T.sum(out), b)
    f = hypatia.function([a, b], T.grad(T.sum(out), a))
    np.testing.assert_allclose(f([1.0, 2.0], [3.0, 4.0]), [3.0, 4.0])
    with pytest.raises(ValueError, match="connection_pattern must have 2 rows"):
        OpFromGraph([x, y], [x * y], connection_pattern=[[True]])


@pytest.mark.parametrize("kind", KINDS)
def test_rop_default(kind):
    x, w = T.dmatrices("xw")
    op = make_op([x, w], [T.dot(x, w), T.exp(x)], kind)
    a, v = T.dmatrices("av")
    d, e = op(a, w)
    rd, re = hypatia.Rop([d, e], a, v)
    f = hypatia.function([a, w, v], [rd, re])
    av, wv, vv = rng.randn(2, 3), rng.randn(3, 3), rng.randn(2, 3)
    r = f(av, wv, vv)
    np.testing.assert_allclose(r[0], vv @ wv)
    np.testing.assert_allclose(r[1], np.exp(av) * vv)


def rop_times_three(inputs, eval_points):
    return [eval_points[0] * 3]


def test_rop_overrides():
    x = T.dvector("x")
    op = OpFromGraph([x], [T.exp(x)], rop_overrides=rop_times_three)
    a, v = T.dvectors("av")
    out = op(a)
    f = hypatia.function([a, v], [out, hypatia.Rop(out, a, v)])
    av, vv = rng.randn(3), rng.randn(3)
    o, r = f(av, vv)
    np.testing.assert_allclose(o, np.exp(av))
    np.testing.assert_allclose(r, 3 * vv)
    # per output, with an OpFromGraph taking inputs + eval_points
    e = T.dvector("e")
    op2 = OpFromGraph([x], [T.exp(x), x * 2], rop_overrides=["default", OpFromGraph([x, e], [e * 5])])
    o1, o2 = op2(a)
    f = hypatia.function([a, v], hypatia.Rop([o1, o2], a, v))
    r1, r2 = f(av, vv)
    np.testing.assert_allclose(r1, np.exp(av) * vv)
    np.testing.assert_allclose(r2, 5 * vv)
    # the gradient is still the graph's
    np.testing.assert_allclose(hypatia.function([a], T.grad(T.sum(out), a))(av), np.exp(av))
    bad = OpFromGraph([x], [x * 2], rop_overrides=lambda i, e: [e[0], e[0]])
    with pytest.raises(ValueError, match="must return 1 values"):
        hypatia.Rop(bad(a), a, v)


@pytest.mark.parametrize("kind", KINDS)
def test_op_used_twice(kind):
    x = T.dvector("x")
    op = make_op([x], [T.exp(x) * 2], kind)
    a, b = T.dvectors("ab")
    out = op(a) + op(b) + op(a)
    f = hypatia.function([a, b], [out, T.grad(T.sum(out), a)])
    av, bv = rng.randn(3), rng.randn(3)
    o, g = f(av, bv)
    np.testing.assert_allclose(o, 4 * np.exp(av) + 2 * np.exp(bv))
    np.testing.assert_allclose(g, 4 * np.exp(av))
    if kind == "node":
        assert len(ofg_nodes(f)) == 2  # op(a) twice is merged
    else:
        assert sum("exp" in n for n in op_names(f)) >= 1 and not ofg_nodes(f)


def test_unused_input_is_read_by_the_node():
    x, y = T.dvectors("xy")
    op = OpFromGraph([x, y], [x * 2])
    assert not op.expands
    a, b = T.dvectors("ab")
    f = hypatia.function([a, b], op(a, b))  # b is the op's input: not an unused input
    np.testing.assert_allclose(f([1.0, 2.0], [0.0]), [2.0, 4.0])
    with pytest.raises(hypatia.DisconnectedInputError):
        T.grad(T.sum(op(a, b)), b)


def test_computed_variable_as_input_cuts_the_graph():
    x = T.dvector("x")
    h = T.exp(x)
    op = OpFromGraph([h], [h * 2])  # h stands for any argument; x is not read
    a = T.dvector("a")
    f = hypatia.function([a], op(a))
    np.testing.assert_allclose(f([1.0, 2.0]), [2.0, 4.0])


def test_gradient_with_respect_to_an_intermediate_argument():
    x = T.dvector("x")
    op = OpFromGraph([x], [x ** 3])
    a = T.dvector("a")
    h = T.tanh(a)
    out = op(h)
    g = T.grad(T.sum(out), h)  # h is in the graph as it was built, not a copy
    np.testing.assert_allclose(hypatia.function([a], g)([0.5]), 3 * np.tanh(0.5) ** 2)


def test_arguments_are_converted_and_checked():
    x = T.dvector("x")
    op = OpFromGraph([x], [x * 2], name="dbl")
    np.testing.assert_allclose(hypatia.function([], op([1.0, 2.0]))(), [2.0, 4.0])
    np.testing.assert_allclose(hypatia.function([], op(np.arange(3)))(), [0.0, 2.0, 4.0])
    # broadcastable where the inner input is not: given the inner input's pattern
    row = T.TensorType("float64", (True,))("row")
    assert op(row).type == T.dvector
    with pytest.raises(TypeError, match=r"OpFromGraph 'dbl'.*float32.*float64"):
        op(T.fvector("f"))
    with pytest.raises(TypeError, match=r"OpFromGraph 'dbl'.*2 dimensions, not 1"):
        op(T.dmatrix("m"))
    with pytest.raises(TypeError, match="OpFromGraph 'dbl'"):
        op("text")
    n = T.lvector("n")
    op_int = OpFromGraph([n], [n * 2])
    np.testing.assert_allclose(hypatia.function([], op_int([1.0, 3.0]))(), [2, 6])  # exact: accepted
    with pytest.raises(TypeError, match="without loss"):
        op_int([1.5])
    y = T.TensorType("float64", (True,))("y")
    opb = OpFromGraph([y], [y * 2])
    with pytest.raises(TypeError, match=r"OpFromGraph:.*dimension\(s\) \[0\] must be broadcastable"):
        opb(T.dvector("v"))


def test_wrong_number_of_arguments():
    x, y = T.dvectors("xy")
    for op in (OpFromGraph([x, y], [x + y]), OpFromGraph([x, y], [x + y], name="add2", grad_overrides=[
            "default", "default"])):
        for args in ((x,), (x, y, x)):
            with pytest.raises(TypeError, match="expected 2 argument") as e:
                op(*args)
            assert isinstance(e.value, ValueError)  # Theano raised ValueError
            assert ("'add2'" in str(e.value)) == (op.name == "add2")
            assert f"got {len(args)}" in str(e.value)


def test_construction_errors():
    x, y = T.dvectors("xy")
    with pytest.raises(TypeError, match="outputs must be a list"):
        OpFromGraph([x], x * 2)
    with pytest.raises(TypeError, match="inputs must be a list"):
        OpFromGraph(x, [x * 2])
    with pytest.raises(TypeError, match="Variable instances"):
        OpFromGraph([x], [x * 2, 3])
    with pytest.raises(TypeError, match="constants are not allowed"):
        OpFromGraph([T.constant(np.ones(2))], [x * 2])
    with pytest.raises(hypatia.MissingInputError, match=r"OpFromGraph 'f'.*\by\b"):
        OpFromGraph([x], [x * y], name="f")
    with pytest.raises(ValueError, match="given twice"):
        OpFromGraph([x, x], [x * 2])
    with pytest.raises(TypeError, match="updates and givens"):
        OpFromGraph([x], [x * 2], updates=[])
    with pytest.raises(TypeError, match="unexpected keyword"):
        OpFromGraph([x], [x * 2], bogus=1)
    with pytest.raises(TypeError, match="name must be"):
        OpFromGraph([x], [x * 2], name=3)


def test_kwargs_compile_the_node():
    x = T.dvector("x")
    op = OpFromGraph([x], [T.exp(x)], grad_overrides=["default"], mode="FAST_COMPILE", name="e")
    f = hypatia.function([x], op(x))
    np.testing.assert_allclose(f([0.0, 1.0]), np.exp([0.0, 1.0]))
    assert isinstance(op.fn, hypatia.Function)
    np.testing.assert_allclose(op.fn([2.0])[0], np.exp([2.0]))


def test_debugprint_shows_the_node():
    x = T.dvector("x")
    op = OpFromGraph([x], [x * 2], grad_overrides=["default"], name="twice")
    assert str(op) == "twice{inline=False}"
    assert str(OpFromGraph([x], [x * 2], inline=True)) == "OpFromGraph{inline=True}"
    a = T.dvector("a")
    out = op(a)
    assert "twice{inline=False}" in hypatia.printing.debugprint(out, file="str")
    f = hypatia.function([a], out)
    assert "twice{inline=False}" in hypatia.printing.debugprint(f, file="str")
    # an expanded op leaves its graph
    plain = OpFromGraph([x], [x * 2])
    text = hypatia.printing.debugprint(plain(a), file="str")
    assert "OpFromGraph" not in text and "mul" in text


def module_level_override(inputs, output_grads):
    # inputs: x, then the stand-in of the shared variable w (Theano's convention); None: no gradient
    return [output_grads[0] * 3, None]


def test_pickle():
    x = T.dvector("x")
    w = hypatia.shared(np.array([1.0, 2.0]), name="w")
    op = OpFromGraph([x], [x * w], grad_overrides=module_level_override, name="pk")
    a = T.dvector("a")
    out = op(a)
    f = hypatia.function([a], [out, T.grad(T.sum(out), a)], updates=[(w, w + 1)])
    av = np.array([1.0, -1.0])
    f2 = pickle.loads(pickle.dumps(f))
    for fn in (f2, f):  # the copy has its own shared variable, with the pickled value
        o, g = fn(av)
        np.testing.assert_allclose(o, av * [1.0, 2.0])
        np.testing.assert_allclose(g, [3.0, 3.0])
    assert len(ofg_nodes(f2)) == 1 and str(ofg_nodes(f2)[0].op) == "pk{inline=False}"
    # a graph, and the op alone (applied again after loading)
    out2 = pickle.loads(pickle.dumps(out))
    assert str(out2.owner.op) == "pk{inline=False}"
    op2 = pickle.loads(pickle.dumps(op))
    g2 = T.grad(T.sum(op2(a)), a)
    np.testing.assert_allclose(hypatia.function([a], g2)(av), [3.0, 3.0])
    # an expanded op's function is an ordinary graph
    plain = OpFromGraph([x], [x * 2])
    f3 = pickle.loads(pickle.dumps(hypatia.function([a], plain(a))))
    np.testing.assert_allclose(f3(av), 2 * av)
    # an override that is a lambda cannot be pickled (as in Theano)
    lam = OpFromGraph([x], [x * 2], grad_overrides=lambda i, g: [g[0]])
    with pytest.raises(Exception):
        pickle.dumps(lam(a))


def test_identity_and_constant_outputs():
    x = T.dvector("x")
    for kw in ({}, {"grad_overrides": ["default"]}):
        op = OpFromGraph([x], [x, T.constant(np.float64(7.0)) + 0 * T.sum(x)], **kw)
        a = T.dvector("a")
        o1, o2 = op(a)
        f = hypatia.function([a], [o1, o2, T.grad(T.sum(o1) + o2, a)])
        r = f([1.0, 2.0])
        np.testing.assert_allclose(r[0], [1.0, 2.0])
        np.testing.assert_allclose(r[1], 7.0)
        np.testing.assert_allclose(r[2], [1.0, 1.0])


@pytest.mark.parametrize("kind", KINDS)
def test_random_draws_inside_advance_each_call(kind):
    from hypatia.tensor.shared_randomstreams import RandomStreams

    srng = RandomStreams(3)
    x = T.dvector("x")
    op = make_op([x], [x + srng.normal((3,))], kind)
    assert len(op.shared_inputs) == 1  # the stream's state, whose default_update the function applies
    a = T.dvector("a")
    f = hypatia.function([a], op(a))
    first, second = f(np.zeros(3)), f(np.zeros(3))
    assert first.shape == (3,) and not np.allclose(first, second)
