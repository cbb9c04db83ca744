"""Theano's extra_ops built from the core ops (bincount, compress, bartlett, unique, searchsorted,
unravel_index, ravel_multi_index), specify_shape and Assert: against numpy on drawn data, their
errors, gradients, and that they compile into graphs the GPU runs without transfers."""
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import hypatia
import hypatia.tensor as T
from hypatia.tensor import extra_ops as E
from hypatia.tensor.opt import Assert, assert_op

ints = st.lists(st.integers(0, 12), min_size=0, max_size=40)
floats = st.lists(st.sampled_from([0.0, 1.0, 1.5, -2.0, 3.25, np.nan, -np.inf, np.inf, 7.0]), min_size=0, max_size=30)


@given(ints, st.sampled_from([None, 0, 5, 20]))
def test_bincount_matches_numpy(xs, minlength):
    x = T.lvector("x")
    f = hypatia.function([x], E.bincount(x, minlength=minlength))
    a = np.array(xs, dtype=np.int64)
    want = np.bincount(a, minlength=minlength or 0)
    got = f(a)
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got, want)


def test_bincount_weights_dtypes_and_errors():
    x, w = T.ivector("x"), T.fvector("w")
    f = hypatia.function([x, w], E.bincount(x, w))
    got = f(np.array([2, 0, 2], np.int32), np.array([0.5, 1, 0.25], np.float32))
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, np.bincount([2, 0, 2], [0.5, 1, 0.25]))
    g = hypatia.function([x], T.bincount(x))  # also T.bincount, as in Theano
    with pytest.raises(AssertionError, match="negative values"):
        g(np.array([1, -1], np.int32))
    u = T.vector("u", dtype="uint8")
    np.testing.assert_array_equal(hypatia.function([u], E.bincount(u))(np.array([255, 0], np.uint8)),
                                  np.bincount(np.array([255, 0])))
    with pytest.raises(TypeError, match="integers"):
        E.bincount(T.dvector())
    with pytest.raises(TypeError, match="vector"):
        E.bincount(T.lmatrix())
    with pytest.raises(ValueError, match="minlength"):
        E.bincount(x, minlength=-1)


def test_bincount_weights_gradient():
    x, w = T.lvector("x"), T.dvector("w")
    cost = T.sum(E.bincount(x, w) ** 2)
    g = hypatia.function([x, w], T.grad(cost, w))
    xs, ws = np.array([0, 2, 2, 1]), np.array([1.0, 2.0, 3.0, 4.0])
    bins = np.bincount(xs, ws)
    np.testing.assert_allclose(g(xs, ws), 2 * bins[xs])


def test_compress_and_bartlett():
    c, a = T.bvector("c"), T.dmatrix("a")
    f = hypatia.function([c, a], [E.compress(c, a, axis=1), E.compress(c, a)])
    cv, av = np.array([1, 0, 1], np.int8), np.arange(12.0).reshape(3, 4)
    r = f(cv, av)
    np.testing.assert_array_equal(r[0], np.compress(cv, av, axis=1))
    np.testing.assert_array_equal(r[1], np.compress(cv, av))
    with pytest.raises(IndexError):
        f(np.ones(5, np.int8), av)  # a condition longer than the axis
    m = T.lscalar("m")
    b = hypatia.function([m], T.bartlett(m))
    for n in (-2, 0, 1, 2, 5, 8):
        np.testing.assert_allclose(b(n), np.bartlett(n))
    np.testing.assert_allclose(hypatia.function([], E.bartlett(6))(), np.bartlett(6))
    with pytest.raises(TypeError):
        E.bartlett(2.5)


@given(floats)
def test_unique_matches_numpy(xs):
    a = T.dvector("a")
    f = hypatia.function([a], E.unique(a, return_index=True, return_inverse=True, return_counts=True))
    v = np.array(xs, dtype=np.float64)
    u, idx, inv, cnt = f(v)
    wu, widx, winv, wcnt = np.unique(v, return_index=True, return_inverse=True, return_counts=True)
    np.testing.assert_array_equal(u, wu)
    np.testing.assert_array_equal(idx, widx)
    np.testing.assert_array_equal(inv, winv.ravel())
    np.testing.assert_array_equal(cnt, wcnt)


def test_unique_of_a_matrix_and_its_options():
    m = T.imatrix("m")
    v = np.array([[3, 1, 3], [2, 1, 9]], np.int32)
    assert np.array_equal(hypatia.function([m], E.unique(m))(v), np.unique(v))
    u, inv = hypatia.function([m], E.unique(m, return_inverse=True))(v)
    np.testing.assert_array_equal(u[inv], v.ravel())
    with pytest.raises(NotImplementedError, match="axis"):
        E.unique(m, axis=0)


@given(st.lists(st.sampled_from([-1.0, 0.0, 0.5, 2.0, 2.0, 3.0, np.inf, np.nan]), max_size=15),
       st.lists(st.sampled_from([-3.0, -1.0, 0.0, 0.5, 1.0, 2.0, 2.5, 3.0, np.inf, np.nan]), max_size=15),
       st.sampled_from(["left", "right"]))
def test_searchsorted_matches_numpy(xs, vs, side):
    x, v = T.dvector("x"), T.dvector("v")
    f = hypatia.function([x, v], E.searchsorted(x, v, side=side))
    xa = np.sort(np.array(xs, dtype=np.float64))
    va = np.array(vs, dtype=np.float64)
    np.testing.assert_array_equal(f(xa, va), np.searchsorted(xa, va, side=side))


def test_searchsorted_shapes_sorter_and_dtypes():
    x, v, s = T.fvector("x"), T.dmatrix("v"), T.lvector("s")
    xa = np.array([5, 1, 3, 2], np.float32)
    order = np.argsort(xa)
    va = np.array([[0.5, 3.0], [2.5, 9.0]])
    f = hypatia.function([x, v, s], E.searchsorted(x, v, sorter=s))
    got = f(xa, va, order)
    assert got.shape == (2, 2) and got.dtype == np.int64
    np.testing.assert_array_equal(got, np.searchsorted(xa, va, sorter=order))
    sc = T.dscalar("sc")
    assert hypatia.function([x, sc], E.searchsorted(x, sc))(np.sort(xa), 2.5) == 2
    with pytest.raises(ValueError, match="side"):
        E.searchsorted(x, v, side="middle")
    with pytest.raises(TypeError, match="vector"):
        E.searchsorted(v, x)


@given(st.lists(st.integers(1, 4), min_size=1, max_size=3), st.sampled_from(["C", "F"]), st.data())
def test_unravel_and_ravel_are_numpy_s(dims, order, data):
    size = int(np.prod(dims))
    flat = np.array(data.draw(st.lists(st.integers(0, size - 1), max_size=10)), dtype=np.int64)
    i = T.lvector("i")
    coords = hypatia.function([i], list(E.unravel_index(i, dims, order=order)))(flat)
    want = np.unravel_index(flat, dims, order=order)
    for c, w in zip(coords, want):
        np.testing.assert_array_equal(c, w)
    cs = [T.lvector(f"c{k}") for k in range(len(dims))]
    back = hypatia.function(cs, E.ravel_multi_index(tuple(cs), dims, order=order))(*want)
    np.testing.assert_array_equal(back, flat)


def test_unravel_and_ravel_errors_and_modes():
    i, j = T.lvector("i"), T.lvector("j")
    n = T.lscalar("n")
    f = hypatia.function([i, n], list(T.unravel_index(i, (n, 4))))
    np.testing.assert_array_equal(f(np.array([7]), 2)[0], [1])
    with pytest.raises(AssertionError, match="out of bounds"):
        f(np.array([8]), 2)
    with pytest.raises(AssertionError, match="out of bounds"):
        f(np.array([-1]), 2)
    r = hypatia.function([i, j], T.ravel_multi_index((i, j), (3, 4)))
    with pytest.raises(AssertionError, match="invalid entry"):
        r(np.array([3]), np.array([0]))
    for mode in ("wrap", "clip", ("clip", "wrap")):
        g = hypatia.function([i, j], E.ravel_multi_index((i, j), (3, 4), mode=mode))
        a, b = np.array([-4, 5, 1]), np.array([7, -1, 2])
        np.testing.assert_array_equal(g(a, b), np.ravel_multi_index((a, b), (3, 4), mode=mode))
    with pytest.raises(ValueError, match="mode"):
        E.ravel_multi_index((i, j), (3, 4), mode="bounce")
    with pytest.raises(ValueError, match="2 coordinate arrays for 3"):
        E.ravel_multi_index((i, j), (3, 4, 5))
    with pytest.raises(ValueError, match="non-negative"):
        E.unravel_index(i, (3, -1))


def test_specify_shape():
    x = T.dmatrix("x")
    y = T.specify_shape(x, (2, None))
    assert isinstance(y.owner.op, T.SpecifyShape)
    f = hypatia.function([x], y * 2)
    np.testing.assert_array_equal(f(np.ones((2, 5))), 2 * np.ones((2, 5)))
    with pytest.raises(AssertionError, match=r"expected shape \(2, \?\), got shape \(3, 5\)"):
        f(np.ones((3, 5)))
    # A symbolic shape; the gradient is checked the same way.
    s = T.lvector("s")
    z = T.specify_shape(x, x.shape)  # a vector of known length
    g = hypatia.function([x], T.grad(T.sum(z ** 2), x))
    np.testing.assert_allclose(g(np.full((2, 3), 3.0)), np.full((2, 3), 6.0))
    assert T.specify_shape(x, (None, None)) is x
    with pytest.raises(ValueError, match="2 dims"):
        T.specify_shape(x, (2,))
    with pytest.raises(ValueError, match="must be known"):
        T.specify_shape(x, s)
    with pytest.raises(TypeError, match="int"):
        T.specify_shape(x, (2.5, 1))
    with pytest.raises(ValueError, match="negative"):
        T.specify_shape(x, (-1, 1))


def test_assert_op():
    x = T.dvector("x")
    y = Assert("x must be short")(x, T.lt(x.shape[0], 3))
    f = hypatia.function([x], 2 * y)
    np.testing.assert_array_equal(f(np.ones(2)), [2.0, 2.0])
    with pytest.raises(AssertionError, match="x must be short"):
        f(np.ones(3))
    g = hypatia.function([x], T.grad(T.sum(assert_op(x, T.all(T.gt(x, 0))) ** 2), x))
    np.testing.assert_allclose(g(np.array([1.0, 2.0])), [2.0, 4.0])
    with pytest.raises(AssertionError, match="Theano Assert failed!"):
        g(np.array([1.0, -2.0]))
    with pytest.raises(TypeError, match="0-d"):
        assert_op(x, x)
    # Constant true conditions are gone from the compiled graph.
    h = hypatia.function([x], assert_op(x, 1, True) + 1)
    assert "Assert" not in hypatia.printing.debugprint(h, file="str")


def test_failed_check_changes_no_shared_variable():
    w = hypatia.shared(np.array([1.0, 2.0]), name="w")
    x = T.dvector("x")
    f = hypatia.function([x], [], updates=[(w, w - T.specify_shape(x, (2,)))])
    f(np.array([1.0, 1.0]))
    with pytest.raises(AssertionError):
        f(np.array([1.0, 1.0, 1.0]))
    np.testing.assert_array_equal(w.get_value(), [0.0, 1.0])


def test_the_new_ops_pickle():
    import pickle
    x = T.dmatrix("x")
    f = hypatia.function([x], [T.specify_shape(x, (2, None)), Assert("m")(x, T.gt(x.shape[0], 1)),
                               E.unique(x), E.bincount(T.cast(x.flatten(), "int64"))])
    g = pickle.loads(pickle.dumps(f))
    v = np.array([[1.0, 3.0], [3.0, 0.0]])
    for a, b in zip(f(v), g(v)):
        np.testing.assert_array_equal(a, b)
    with pytest.raises(AssertionError):
        g(np.ones((1, 2)))


@given(st.lists(st.sampled_from([0.0, 1.0, -1.0, 2.5, 2.5, np.inf, -7.0]), min_size=1, max_size=12), st.data())
def test_topk_and_argtopk_match_numpy(xs, data):
    a = np.array(xs)
    kth = data.draw(st.sampled_from([k for k in range(-len(xs), len(xs) + 1) if k != 0]), label="kth")
    x, k = T.dvector("x"), T.lscalar("k")
    vals, idx = hypatia.function([x, k], T.topk_and_argtopk(x, k))(a, kth)
    want = np.sort(a)[::-1][:kth] if kth > 0 else np.sort(a)[:-kth]
    np.testing.assert_array_equal(vals, want)
    np.testing.assert_array_equal(a[idx], want)
    assert len(set(idx.tolist())) == abs(kth)


def test_topk_axes_gradient_and_errors():
    x = T.dmatrix("x")
    a = np.array([[3.0, 1, 4, 1, 5], [9, 2, 6, 5, 3]])
    f = hypatia.function([x], [T.topk(x, 2, axis=0), T.argtopk(x, -1, axis=1, idx_dtype="int32"),
                               T.topk(x, 3, axis=None)])
    v0, i1, vall = f(a)
    np.testing.assert_array_equal(v0, np.sort(a, axis=0)[::-1][:2])
    assert i1.dtype == np.int32 and i1.tolist() == [[1], [1]]
    np.testing.assert_array_equal(vall, [9.0, 6.0, 5.0])
    g = hypatia.function([x], T.grad(T.sum(T.topk(x, 2, axis=1)), x))(a)
    np.testing.assert_array_equal(g, [[0, 0, 1, 0, 1], [1, 0, 1, 0, 0]])
    k = T.lscalar("k")
    only_values = hypatia.function([x, k], T.topk(x, k, axis=1))
    for bad in (0, 6, -6):
        with pytest.raises(AssertionError, match="kth must be nonzero"):
            only_values(a, bad)
    with pytest.raises(ValueError, match="kth must not be 0"):
        T.topk(x, 0)
    with pytest.raises(IndexError, match="axis 2"):
        T.topk(x, 1, axis=2)
    with pytest.raises(TypeError, match="idx_dtype"):
        T.argtopk(x, 1, idx_dtype="float32")


def test_inverse_permutation_and_assert_alias():
    p = T.imatrix("p")
    perms = np.array([[2, 0, 1, 3], [3, 2, 1, 0]], np.int32)
    inv = hypatia.function([p], T.inverse_permutation(p))(perms)
    assert inv.dtype == np.int32
    np.testing.assert_array_equal(inv, np.argsort(perms, axis=-1))
    for row, r in zip(perms, inv):
        np.testing.assert_array_equal(row[r], np.arange(4))
    with pytest.raises(TypeError, match="integer"):
        T.inverse_permutation(T.dvector())
    from hypatia.tensor.opt import assert_
    assert assert_ is assert_op


def test_choose_is_numpys_in_every_mode_with_broadcast_choices_and_its_gradient():
    rng = np.random.default_rng(0)
    a = T.lmatrix()
    c0, c1, c2 = T.fmatrix(), T.frow(), T.fmatrix()
    av = rng.integers(0, 3, (4, 5))
    cv = [rng.standard_normal((4, 5)).astype("f4"), rng.standard_normal((1, 5)).astype("f4"),
          np.full((4, 5), np.inf, "f4")]  # an infinite choice stays infinite where chosen, nowhere else
    f = hypatia.function([a, c0, c1, c2], T.choose(a, [c0, c1, c2]))
    np.testing.assert_array_equal(f(av, *cv), np.choose(av, cv))
    C = T.ftensor3()
    Cv = rng.standard_normal((3, 4, 5)).astype("f4")
    for mode in ("raise", "wrap", "clip"):
        g = hypatia.function([a, C], T.choose(a, C, mode=mode))
        aw = av if mode == "raise" else av * 3 - 4
        np.testing.assert_array_equal(g(aw, Cv), np.choose(aw, Cv, mode=mode))
    v = T.lvector()  # a broadcast over the choices' rows
    h = hypatia.function([v, C], T.choose(v, C))
    np.testing.assert_array_equal(h(av[0], Cv), np.choose(av[0], Cv))
    with pytest.raises(AssertionError, match="outside"):
        hypatia.function([a, C], T.choose(a, C))(av + 1, Cv)
    gr = hypatia.function([a, C], T.grad(T.sum(T.choose(a, C) ** 2), C))(av, Cv)
    np.testing.assert_allclose(gr, 2 * Cv * (np.arange(3)[:, None, None] == av), rtol=1e-6)
    with pytest.raises(TypeError, match="integer"):
        T.choose(T.fmatrix(), C)
    with pytest.raises(ValueError, match="mode"):
        T.choose(a, C, mode="bad")


def test_permute_row_elements_forward_inverse_broadcast_and_gradient():
    rng = np.random.default_rng(1)
    x, y, ym, v = T.fmatrix(), T.lvector(), T.lmatrix(), T.fvector()
    xv = rng.standard_normal((3, 5)).astype("f4")
    yv = rng.permutation(5)
    ymv = np.stack([rng.permutation(5) for _ in range(3)])
    p = hypatia.function([x, y], T.permute_row_elements(x, y))
    np.testing.assert_array_equal(p(xv, yv), xv[:, yv])  # one permutation for every row
    pi = hypatia.function([x, y], T.permute_row_elements(x, y, inverse=1))
    inv = np.empty_like(xv)
    inv[:, yv] = xv
    np.testing.assert_array_equal(pi(xv, yv), inv)
    pm = hypatia.function([x, ym], T.permute_row_elements(x, ym))  # a permutation per row
    np.testing.assert_array_equal(pm(xv, ymv), np.take_along_axis(xv, ymv, 1))
    pv = hypatia.function([v, ym], T.permute_row_elements(v, ym))  # one row for every permutation
    np.testing.assert_array_equal(pv(xv[0], ymv), xv[0][ymv])
    with pytest.raises(AssertionError, match="not a permutation"):
        pi(xv, np.array([0, 0, 1, 2, 3]))
    with pytest.raises(IndexError):
        p(xv, np.array([0, 1, 2, 3, 5]))
    g = hypatia.function([x, ym], T.grad(T.sum(T.permute_row_elements(x, ym) * np.arange(5, dtype="f4")), x))(xv, ymv)
    want = np.zeros_like(xv)
    np.put_along_axis(want, ymv, np.broadcast_to(np.arange(5, dtype="f4"), (3, 5)), 1)
    np.testing.assert_array_equal(g, want)
