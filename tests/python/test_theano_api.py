"""Theano's module layout and the parts of its API that libraries built on Theano call, checked
against Theano's documented behaviour: broadcastable patterns of any truthy values, gof.graph
(inputs, ancestors, variables, io_toposort, is_same_graph, clone), theano.clone, the variable
classes, plural constructors, repeat, extra_ops, sort/argsort, relu with a symbolic alpha, and
indexing with a list of slices."""
import importlib

import numpy as np
import pytest

import hypatia
import hypatia as theano
import hypatia.tensor as T
from hypatia.gof import graph as G


def fn(inputs, outputs, **kw):
    return theano.function(inputs, outputs, **kw)


# ------------------------------------------------------------------------------------------------
# Module layout


NNET_NAMES = ["Softmax", "CrossentropyCategorical1Hot", "CrossentropyCategorical1HotGrad", "CheckLabels",
              "CrossentropySoftmax1HotWithBias", "CrossentropySoftmax1HotWithBiasDx",
              "crossentropy_softmax_1hot_with_bias", "crossentropy_softmax_argmax_1hot_with_bias",
              "crossentropy_softmax_max_and_argmax_1hot_with_bias", "crossentropy_softmax_1hot",
              "crossentropy_softmax_1hot_with_bias_dx",
              "ultra_fast_sigmoid", "hard_sigmoid", "relu", "elu", "softsign", "softmax", "log_softmax", "logsoftmax",
              "softmax_with_bias", "categorical_crossentropy", "crossentropy_categorical_1hot",
              "binary_crossentropy", "sigmoid_binary_crossentropy", "sigmoid", "softplus"]


def test_nnet_is_a_package_that_keeps_every_name():
    import hypatia.tensor.nnet as nnet
    import hypatia.tensor.nnet.basic
    import hypatia.tensor.nnet.sigm

    assert hasattr(nnet, "__path__")
    assert T.nnet is nnet
    for name in NNET_NAMES:
        assert getattr(nnet, name) is getattr(hypatia.tensor.nnet.basic, name), name
    assert hypatia.tensor.nnet.softmax is hypatia.tensor.nnet.basic.softmax
    assert T.nnet.sigmoid is T.sigmoid is hypatia.tensor.nnet.sigm.sigmoid
    from hypatia.tensor.nnet import relu, softmax  # noqa: F401


def test_compile_is_a_package_in_theanos_shape():
    import hypatia.compile as C

    assert hasattr(C, "__path__")
    # As in Theano, hypatia.compile.function is the function; its module is compile.function.
    assert C.function is theano.function and callable(C.function)
    from hypatia.compile.function import function

    assert function is theano.function
    function_module = importlib.import_module("hypatia.compile.function")
    assert function_module.function is theano.function
    assert C.io.In is C.In is theano.In and C.io.Out is theano.Out
    assert C.sharedvalue.shared is C.shared is theano.shared
    assert C.sharedvalue.SharedVariable is C.SharedVariable is theano.SharedVariable
    assert C.mode.Mode is C.Mode is theano.Mode
    assert C.mode.get_mode("FAST_RUN") is C.FAST_RUN is C.predefined_modes["FAST_RUN"]
    assert C.get_mode("FAST_COMPILE") is C.FAST_COMPILE
    assert isinstance(C.get_default_mode(), C.Mode)
    assert C.debugmode.DebugMode is C.DebugMode
    assert C.function_module.Function is C.Function is theano.Function
    assert C.profiling.ProfileStats is hypatia._core.Profile
    x = T.dscalar("x")
    assert isinstance(C.function([x], x + 1), C.function_module.Function)


def test_register_mode():
    m = theano.Mode(optimizer="fast_compile")
    theano.compile.register_mode("MY_TEST_MODE", m)
    try:
        assert theano.compile.get_mode("MY_TEST_MODE") is m
        x = T.dvector("x")
        assert fn([x], x * 2, mode="MY_TEST_MODE")([1.0]).tolist() == [2.0]
        with pytest.raises(ValueError):
            theano.compile.register_mode("MY_TEST_MODE", m)
    finally:
        del theano.compile.predefined_modes["MY_TEST_MODE"]


def test_gof_and_tensor_modules():
    import hypatia.gof.fg
    import hypatia.tensor.extra_ops
    import hypatia.tensor.sharedvar
    import hypatia.tensor.sort
    import hypatia.tensor.type
    import hypatia.tensor.var

    assert hypatia.gof.graph.Variable is hypatia.gof.Variable is hypatia.Variable
    assert hypatia.gof.graph.Apply is hypatia.Apply
    assert hypatia.gof.fg.FunctionGraph is hypatia.FunctionGraph
    assert hypatia.gof.Constant is hypatia.Constant
    # As in Theano, T.var is the variance; the module is reached by importing from it.
    from hypatia.tensor.var import TensorConstant, TensorVariable

    assert TensorVariable is T.TensorVariable and TensorConstant is T.TensorConstant
    assert T.var is T.basic.var
    assert hypatia.tensor.sharedvar.TensorSharedVariable is T.TensorSharedVariable
    assert hypatia.tensor.type.TensorType is T.TensorType
    assert T.extra_ops is hypatia.tensor.extra_ops
    # T.sort is the function, as in Theano (whose tensor.sort module it shadows the same way).
    sort_module = importlib.import_module("hypatia.tensor.sort")
    assert T.sort is sort_module.sort and T.argsort is sort_module.argsort
    from hypatia.scan_module.scan_utils import clone, equal_computations

    assert clone is theano.clone and equal_computations is G.equal_computations


# ------------------------------------------------------------------------------------------------
# Broadcastable patterns


def test_tensortype_takes_numpy_bools_ints_and_a_name():
    shape = np.array(np.zeros((1, 3, 1)).shape)  # a shape held by numpy: its entries are numpy ints
    pattern = [s == 1 for s in shape]
    assert isinstance(pattern[0], np.bool_)
    t = T.TensorType("float32", pattern)
    assert t.broadcastable == (True, False, True) and t.dtype == "float32"
    assert T.TensorType(np.float64, [1, 0]) == T.TensorType("float64", (True, False))
    assert T.TensorType("floatX", np.array([False, True])).broadcastable == (False, True)
    assert T.TensorType("int32", (False,), name="ivec") == T.ivector
    assert isinstance(T.fmatrix, T.TensorType) and isinstance(t, T.TensorType)
    x = t("x")
    assert x.type == t and x.name == "x"
    f = fn([x], x.sum())
    assert f(np.ones((1, 3, 1), "float32")) == 3
    assert T.tensor("float64", [np.bool_(False), 1]).broadcastable == (False, True)
    with pytest.raises(TypeError):
        T.TensorType("float32", "tt")


def test_shared_takes_numpy_bool_broadcastable():
    value = np.arange(3.0).reshape(1, 3)
    s = theano.shared(value, broadcastable=[d == 1 for d in value.shape])
    assert s.broadcastable == (True, False)
    s2 = theano.shared(value, broadcastable=(1, 0))
    assert s2.broadcastable == (True, False)
    m = T.dmatrix("m")
    np.testing.assert_array_equal(fn([m], m + s)(np.zeros((2, 3))), np.tile(value, (2, 1)))
    p = T.patternbroadcast(T.dmatrix(), np.array([True, False]))
    assert p.broadcastable == (True, False)


# ------------------------------------------------------------------------------------------------
# The variable classes


def test_isinstance_on_variables_as_in_theano():
    x = T.dmatrix("x")
    c = T.constant(np.ones(2))
    s = theano.shared(np.zeros(2))
    y = x * 2
    for v in (x, c, s, y):
        assert isinstance(v, theano.Variable) and isinstance(v, theano.gof.Variable)
        assert isinstance(v, T.TensorVariable)
    assert isinstance(s, theano.compile.SharedVariable) and isinstance(s, T.TensorSharedVariable)
    assert isinstance(s, theano.SharedVariable)
    for v in (x, c, y):
        assert not isinstance(v, theano.compile.SharedVariable)
        assert not isinstance(v, T.sharedvar.TensorSharedVariable)
    assert isinstance(c, theano.gof.Constant) and isinstance(c, T.TensorConstant)
    for v in (x, s, y):
        assert not isinstance(v, theano.gof.Constant)
    assert issubclass(T.TensorSharedVariable, theano.compile.SharedVariable)
    assert issubclass(T.TensorConstant, theano.gof.Constant)
    assert not isinstance(np.zeros(2), theano.Variable)
    assert isinstance(y.owner, theano.gof.Apply)


# ------------------------------------------------------------------------------------------------
# gof.graph


def test_inputs_and_ancestors_in_theanos_order():
    x, y, z, w = T.dscalars("x", "y", "z", "w")
    a = x + y
    b = z * w
    # Depth first from the last output, first input first.
    assert G.inputs([a]) == [x, y]
    assert G.inputs([a, b]) == [z, w, x, y]
    assert G.inputs([b, a]) == [x, y, z, w]
    c = (a * 2) + x
    assert G.inputs([c]) == [x, y, c.owner.inputs[0].owner.inputs[1]]
    assert G.inputs([x]) == [x]
    # ancestors includes the variables themselves, each once.
    anc = G.ancestors([a * a])
    assert anc[0] is not a and anc[1] is a and anc.count(a) == 1
    assert set(map(id, anc)) == {id(v) for v in (anc[0], a, x, y)}
    assert G.ancestors([a, b]) == [b, z, w, a, x, y]
    # blockers: the search does not go past them (and inputs() keeps the root variables only).
    assert G.ancestors([a * b], blockers=[a])[1:] == [a, b, z, w]
    assert G.inputs([a * b], blockers=[a]) == [z, w]
    assert G.graph_inputs is G.inputs


def test_variables_orphans_and_ops():
    x, y = T.dscalars("x", "y")
    one = T.constant(1.0)
    a = x + one
    out = a * y
    vs = G.variables([x, y], [out])
    assert {id(v) for v in vs} == {id(v) for v in (x, y, one, a, out)}
    assert vs[0] is out
    assert G.orphans([x, y], [out]) == [one]
    assert G.ops([x, y], [out]) == {a.owner, out.owner}
    assert G.ops([a, y], [out]) == {out.owner}
    assert G.orphans([x], [x + y]) == [y]


def test_io_toposort():
    x, y, z = T.dvectors("x", "y", "z")
    a = x + y
    b = a * z
    c = T.exp(a) - b
    order = G.io_toposort([x, y, z], [c])
    assert len(order) == 4 and order[-1] is c.owner
    pos = {id(n): i for i, n in enumerate(order)}
    for n in order:
        for i in n.inputs:
            if i.owner is not None:
                assert pos[id(i.owner)] < pos[id(n)]
    # Inputs that are intermediate results cut the graph there.
    assert G.io_toposort([a], [b]) == [b.owner]
    assert G.io_toposort([a, z], [c]) == [b.owner, c.owner.inputs[0].owner, c.owner]
    clients = {}
    order2 = G.io_toposort([x, y, z], [c], clients=clients)
    assert {id(n) for n in order2} == {id(n) for n in order}
    assert [c.owner] == [n for n in clients[b] if isinstance(n, theano.Apply)]


def test_is_same_graph_as_documented():
    x, y, z = T.dvectors("x", "y", "z")
    # Theano's documented table.
    assert G.is_same_graph(x + 1, x + 1)
    assert not G.is_same_graph(x + 1, y + 1)
    assert G.is_same_graph(x + 1, y + 1, givens={x: y})
    assert G.is_same_graph(x + 1, y + 1, givens=[(y, x)])
    assert not G.is_same_graph(x + 1, x + 2)
    assert not G.is_same_graph(x + y, y + x)
    assert G.is_same_graph(T.exp(x * y).sum(), T.exp(x * y).sum())
    assert not G.is_same_graph(T.exp(x * y).sum(), T.exp(x * y).max())
    assert G.is_same_graph(x, x) and not G.is_same_graph(x, y)
    assert G.is_same_graph(x * (y + z), x * (y + y), givens={z: y})
    assert not G.is_same_graph(x * (y + z), x * (y + y), givens={z: x})
    # Constants equal in type and value are the same computation.
    assert G.is_same_graph(x + T.constant(np.ones(3)), x + T.constant(np.ones(3)))


def test_equal_computations_as_in_scan_utils():
    x, y, z, w = T.dmatrices("x", "y", "z", "w")
    assert G.equal_computations([x + y], [x + y])
    assert not G.equal_computations([x + y], [z + w])
    assert G.equal_computations([x + y], [z + w], in_xs=[x, y], in_ys=[z, w])
    assert not G.equal_computations([x + y], [z + w], in_xs=[x], in_ys=[z])
    assert G.equal_computations([T.dot(x, y) + 2, x], [T.dot(x, y) + 2, x])
    assert not G.equal_computations([T.dot(x, y)], [T.dot(y, x)])
    # Constants compare by type and value (NaN equal to NaN); leaves by identity.
    assert G.equal_computations([T.constant(np.array([1.0, np.nan]))], [T.constant(np.array([1.0, np.nan]))])
    assert not G.equal_computations([T.constant(np.array([1.0]))], [T.constant(np.array([2.0]))])
    assert not G.equal_computations([T.constant(np.array([1.0]))], [T.constant(np.array([1.0], "float32"))])
    assert not G.equal_computations([x], [y])
    # An output against a leaf, different output indices.
    assert not G.equal_computations([x + y], [x])
    # A deep chain compares without recursion.
    a, b = x, x
    for _ in range(3000):
        a, b = a + 1, b + 1
    assert G.equal_computations([a], [b])


def test_clone_replaces_and_copies():
    x, y, z = T.dscalars("x", "y", "z")
    out = (x + y) * 2
    c = theano.clone(out, replace={x: z})
    assert c is not out and G.inputs([c])[:2] == [z, y]
    assert fn([y, z], c)(1.0, 2.0) == 6.0
    assert fn([x, y], out)(1.0, 2.0) == 6.0  # the original is unchanged
    # No replacement: a copy reading the same inputs.
    c0 = theano.clone(out)
    assert c0 is not out and c0.owner is not out.owner and G.inputs([c0]) == G.inputs([out])
    assert G.is_same_graph(c0, out)
    # Replacements are made at once: swapping two variables.
    assert fn([x, y], theano.clone(x - y, replace=[(x, y), (y, x)]))(5.0, 2.0) == -3.0
    # Lists keep their form; a value becomes a constant.
    a, b = theano.clone([x + 1, y * x], replace={x: np.float64(3.0)})
    assert [float(r) for r in fn([y], [a, b], on_unused_input="ignore")(2.0)] == [4.0, 6.0]
    # An intermediate result can be replaced.
    s = x + y
    assert fn([z], theano.clone(s * s, replace={s: z}))(3.0) == 9.0
    with pytest.raises(ValueError):
        theano.clone(out, replace=x)
    with pytest.raises(TypeError):
        theano.clone(out, replace={1.0: x})


def test_clone_strict_and_share_inputs():
    x = T.dvector("x")
    out = T.exp(x) * x
    # strict: the replacement must have the type, or be broadcastable where it is not.
    with pytest.raises(TypeError, match="Cannot convert Type"):
        theano.clone(out, replace={x: T.fvector()})
    with pytest.raises(TypeError, match="Cannot convert Type"):
        theano.clone(out, replace={x: T.dmatrix()})
    r = T.TensorType("float64", (True,))("r")
    c = theano.clone(out, replace={x: r})
    assert c.type == out.type
    np.testing.assert_allclose(fn([r], c)(np.ones(1)), [np.e])
    # strict=False: the graph is rebuilt on the replacement's type.
    m = T.fmatrix("m")
    c2 = theano.clone(out, replace={x: m}, strict=False)
    assert c2.type == T.fmatrix
    np.testing.assert_allclose(fn([m], c2)(np.ones((2, 2), "float32")), np.full((2, 2), np.e), rtol=1e-6)
    # share_inputs=False: new input variables (same names and types).
    c3 = theano.clone(out, share_inputs=False)
    (i3,) = [v for v in G.inputs([c3]) if v.kind == "input"]
    assert i3 is not x and i3.name == "x" and i3.type == x.type
    np.testing.assert_allclose(fn([i3], c3)(np.ones(2)), [np.e, np.e])
    # A shared variable becomes a clone holding the same value (Theano's shared container).
    s = theano.shared(np.ones(2), name="s")
    c4 = theano.clone(x + s, share_inputs=False)
    (s4,) = [v for v in G.inputs([c4]) if v.kind == "shared"]
    assert s4 is not s and s4.name == "s"
    s.set_value(np.full(2, 3.0))
    np.testing.assert_array_equal(s4.get_value(), [3.0, 3.0])


def test_gof_clone_and_clone_get_equiv():
    x, y = T.dvectors("x", "y")
    one = T.constant(1.0)
    out = (x + one) * y
    (nx, ny), (nout,) = G.clone([x, y], [out])
    assert nx is not x and ny is not y and nx.name == "x" and nx.type == x.type
    assert G.inputs([nout])[0] is nx and G.orphans([nx, ny], [nout])[0] is not one
    np.testing.assert_allclose(fn([nx, ny], nout)([1.0, 2.0], [3.0, 4.0]), [6.0, 12.0])
    (sx, sy), (sout,) = G.clone([x, y], [out], copy_inputs=False)
    assert sx is x and sy is y and sout is not out and G.orphans([x, y], [sout]) == [one]
    (cx, cy), (oout,) = G.clone([x, y], [out], copy_orphans=False)
    assert cx is not x and G.orphans([cx, cy], [oout]) == [one]
    equiv = G.clone_get_equiv([x, y], [out])
    assert equiv[out].owner is equiv[out.owner] and equiv[x] is not x
    assert G.inputs([equiv[out]])[0] is equiv[x]


# ------------------------------------------------------------------------------------------------
# Plural constructors


PLURALS = {
    "scalars": 0, "vectors": 1, "rows": 2, "cols": 2, "matrices": 2, "tensor3s": 3, "tensor4s": 4,
}
PREFIXES = {"": None, "b": "int8", "w": "int16", "i": "int32", "l": "int64", "f": "float32", "d": "float64"}


@pytest.mark.parametrize("prefix", sorted(PREFIXES))
@pytest.mark.parametrize("plural", sorted(PLURALS))
def test_plural_constructors(prefix, plural):
    make = getattr(T, prefix + plural)
    dtype = PREFIXES[prefix] or theano.config.floatX
    for vs in (make("a", "b"), make("a,b"), make("a, b"), make("ab")):
        assert [v.name for v in vs] == ["a", "b"]
        assert all(v.dtype == dtype and v.ndim == PLURALS[plural] for v in vs)
    assert len(make("a", "b", "c")) == 3
    three = make(3)
    assert len(three) == 3 and all(v.name is None for v in three)
    one = make("x")  # one name of one character: one variable, as in Theano
    assert isinstance(one, theano.Variable) and one.name == "x"
    assert [v.name for v in make("x", "y")] == ["x", "y"]


# ------------------------------------------------------------------------------------------------
# repeat and extra_ops


@pytest.mark.parametrize("repeats,axis", [(2, None), (2, 0), (2, 1), (3, -1), ([1, 2], 0), ([0, 2, 1], 1),
                                          ([2], 0), ([2], None), (np.arange(6) % 3, None), (0, 1)])
def test_repeat_matches_numpy(repeats, axis):
    v = np.arange(6.0).reshape(2, 3)
    x = T.dmatrix("x")
    expected = np.repeat(v, repeats, axis)
    for f in (T.repeat, T.extra_ops.repeat, lambda x, r, a: x.repeat(r, axis=a)):
        np.testing.assert_array_equal(fn([x], f(x, repeats, axis))(v), expected)


def test_repeat_symbolic():
    v = np.arange(6.0).reshape(2, 3)
    x = T.dmatrix("x")
    r = T.iscalar("r")
    rv = T.lvector("rv")
    np.testing.assert_array_equal(fn([x, r], T.repeat(x, r, 1))(v, 2), np.repeat(v, 2, 1))
    np.testing.assert_array_equal(fn([x, rv], T.repeat(x, rv, 0))(v, [0, 3]), np.repeat(v, [0, 3], 0))
    one = T.TensorType("int64", (True,))("one")
    np.testing.assert_array_equal(fn([x, one], T.repeat(x, one, 0))(v, [2]), np.repeat(v, [2], 0))
    g = theano.grad(T.repeat(x, [1, 3], 0).sum(), x)
    np.testing.assert_array_equal(fn([x], g)(v), [[1, 1, 1], [3, 3, 3]])
    with pytest.raises(TypeError):
        T.repeat(x, [1.5, 2], 0)


def test_to_one_hot():
    y = T.lvector("y")
    f = fn([y], T.extra_ops.to_one_hot(y, 4))
    out = f([0, 3, 1, 3])
    assert out.dtype == theano.config.floatX
    np.testing.assert_array_equal(out, np.eye(4)[[0, 3, 1, 3]])
    g = fn([y], T.extra_ops.to_one_hot(y, 3, dtype="int32"))
    assert g([2]).dtype == np.int32 and g([2]).tolist() == [[0, 0, 1]]
    n = T.lscalar("n")
    h = fn([y, n], T.extra_ops.to_one_hot(y, n))
    assert h([1], 2).tolist() == [[0, 1]] and h(np.zeros(0, "int64"), 5).shape == (0, 5)
    with pytest.raises(IndexError):
        f([4])
    with pytest.raises(TypeError):
        T.extra_ops.to_one_hot(T.dvector(), 3)


def test_extra_ops_cumsum_cumprod_diff():
    x = T.dmatrix("x")
    v = np.array([[1.0, 2.0, 4.0], [3.0, -1.0, 0.5]])
    np.testing.assert_allclose(fn([x], T.extra_ops.cumsum(x, axis=1))(v), np.cumsum(v, 1))
    np.testing.assert_allclose(fn([x], T.extra_ops.cumsum(x))(v), np.cumsum(v))
    np.testing.assert_allclose(fn([x], T.extra_ops.cumprod(x, 0))(v), np.cumprod(v, 0))
    for n, axis in ((1, -1), (2, 1), (1, 0)):
        np.testing.assert_allclose(fn([x], T.extra_ops.diff(x, n, axis))(v), np.diff(v, n, axis))


# ------------------------------------------------------------------------------------------------
# sort and argsort


@pytest.mark.parametrize("dtype", ["float64", "float32", "int32", "int8", "uint16", "bool"])
@pytest.mark.parametrize("axis", [-1, 0, 1, None])
def test_sort_and_argsort_match_numpy(dtype, axis):
    rng = np.random.default_rng(1)
    v = rng.integers(0, 4, size=(3, 5)).astype(dtype)  # ties: argsort is stable
    if dtype.startswith("float"):
        v[1, 2] = np.nan
        v[0, 0] = -np.inf
    x = T.TensorType(dtype, (False, False))("x")
    s, a = fn([x], [T.sort(x, axis), T.argsort(x, axis)])(v)
    np.testing.assert_array_equal(s, np.sort(v, axis))
    np.testing.assert_array_equal(a, np.argsort(v, axis, kind="stable"))
    assert s.dtype == v.dtype and a.dtype == np.int64
    expected_ndim = 1 if axis is None else 2
    assert T.sort(x, axis).ndim == expected_ndim


def test_sort_defaults_methods_and_arguments():
    x = T.dmatrix("x")
    v = np.array([[3.0, 1.0, 2.0], [0.0, -1.0, 5.0]])
    f = fn([x], [T.sort(x), x.sort(), x.sort(axis=0), x.argsort(), x.argsort(axis=None)])
    outs = f(v)
    np.testing.assert_array_equal(outs[0], np.sort(v, -1))
    np.testing.assert_array_equal(outs[1], np.sort(v, -1))
    np.testing.assert_array_equal(outs[2], np.sort(v, 0))
    np.testing.assert_array_equal(outs[3], np.argsort(v, -1))
    np.testing.assert_array_equal(outs[4], np.argsort(v, None))
    for kind in ("quicksort", "mergesort", "heapsort", "stable"):
        np.testing.assert_array_equal(fn([x], T.sort(x, 1, kind=kind))(v), np.sort(v, 1))
    with pytest.raises(ValueError):
        T.sort(x, kind="bogus")
    with pytest.raises(ValueError):
        T.argsort(x, order="field")
    with pytest.raises(IndexError):
        T.sort(x, 2)
    np.testing.assert_array_equal(fn([x], T.sort(x, T.constant(0)))(v), np.sort(v, 0))
    from hypatia.tensor.sort import ArgSortOp, SortOp

    assert isinstance(T.sort(x).owner.op, SortOp) and isinstance(T.argsort(x).owner.op, ArgSortOp)
    assert T.sort(x).owner.op.axis == 1
    # Shapes are inferred without running the sort.
    assert fn([x], T.sort(x, None).shape)(v).tolist() == [6]


def test_sort_gradient_goes_back_through_the_permutation():
    x = T.dvector("x")
    w = np.array([0.0, 1.0, 2.0, 3.0])
    g = theano.grad((T.sort(x) * w).sum(), x)
    # x sorts to 1 2 3 4: 3 is third (weight 2), 1 first (0), 4 last (3), 2 second (1).
    np.testing.assert_array_equal(fn([x], g)([3.0, 1.0, 4.0, 2.0]), [2.0, 0.0, 3.0, 1.0])
    rng = np.random.default_rng(0)
    theano.gradient.verify_grad(lambda m: (T.sort(m, 0) * np.arange(12.0).reshape(3, 4)).sum(), [rng.random((3, 4))])
    theano.gradient.verify_grad(lambda m: T.sort(m, None)[1:4].sum() + (T.sort(m) ** 2).sum(), [rng.random((2, 5))])
    # argsort is integer-valued: no gradient flows (zeros when disconnected inputs are ignored).
    ga = theano.grad(T.argsort(x).astype("float64").sum(), x, disconnected_inputs="ignore")
    np.testing.assert_array_equal(fn([x], ga)([3.0, 1.0, 4.0, 2.0]), np.zeros(4))


def test_sort_pickles():
    import pickle

    x = T.dmatrix("x")
    y = pickle.loads(pickle.dumps(T.sort(x, 0) + T.argsort(x, None).sum()))
    (xx,) = [v for v in G.inputs([y]) if v.kind == "input"]
    v = np.array([[2.0, 1.0], [0.0, 3.0]])
    np.testing.assert_array_equal(fn([xx], y)(v), np.sort(v, 0) + np.argsort(v, None).sum())


# ------------------------------------------------------------------------------------------------
# relu with a symbolic alpha


def test_relu_with_symbolic_alpha():
    x = T.dvector("x")
    alpha = T.dscalar("alpha")
    v = np.array([-2.0, -0.5, 0.0, 1.5])
    out = fn([x, alpha], T.nnet.relu(x, alpha))(v, 0.1)
    np.testing.assert_allclose(out, np.where(v > 0, v, 0.1 * v))
    # Theano's formula.
    f1, f2 = 0.5 * (1 + 0.3), 0.5 * (1 - 0.3)
    np.testing.assert_allclose(fn([x, alpha], T.nnet.relu(x, alpha))(v, 0.3), f1 * v + f2 * np.abs(v))
    # An array of slopes broadcasts (one per column), and keeps float32 inputs float32.
    m = T.fmatrix("m")
    slopes = np.array([0.1, 0.2], "float32")
    r = T.nnet.relu(m, slopes)
    assert r.dtype == "float32"
    mv = np.array([[-1.0, -1.0], [2.0, 3.0]], "float32")
    np.testing.assert_allclose(fn([m], r)(mv), np.where(mv > 0, mv, slopes * mv), rtol=1e-6)
    # Numbers still take the fused op; the gradient flows to alpha.
    np.testing.assert_allclose(fn([x], T.nnet.relu(x, 0.1))(v), np.where(v > 0, v, 0.1 * v))
    np.testing.assert_allclose(fn([x], T.nnet.relu(x))(v), np.maximum(v, 0))
    ga = theano.grad(T.nnet.relu(x, alpha).sum(), alpha)
    assert fn([x, alpha], ga)(v, 0.1) == pytest.approx(-2.5)


# ------------------------------------------------------------------------------------------------
# Indexing with a list of slices


def test_index_with_a_list_or_tuple_of_slices():
    x = T.dmatrix("x")
    v = np.arange(20.0).reshape(4, 5)
    np.testing.assert_array_equal(fn([x], x[[slice(0, 2), slice(1, 3)]])(v), v[0:2, 1:3])
    np.testing.assert_array_equal(fn([x], x[(slice(None), 1)])(v), v[:, 1])
    np.testing.assert_array_equal(fn([x], x[[slice(None), 1]])(v), v[:, 1])
    np.testing.assert_array_equal(fn([x], x[[1, slice(None, None, 2)]])(v), v[1, ::2])
    np.testing.assert_array_equal(fn([x], x[[Ellipsis, slice(1, 2)]])(v), v[..., 1:2])
    # A list of integers is still an integer-array index.
    np.testing.assert_array_equal(fn([x], x[[0, 2]])(v), v[[0, 2]])
    y = T.set_subtensor(x[[slice(1, 3), slice(0, 2)]], 0.0)
    expected = v.copy()
    expected[1:3, 0:2] = 0
    np.testing.assert_array_equal(fn([x], y)(v), expected)
