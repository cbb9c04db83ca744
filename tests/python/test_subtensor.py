"""numpy-style indexing of variables: basic indices (slices with negative steps, ints, None,
Ellipsis), integer arrays, boolean masks, symbolic bounds, set_subtensor / inc_subtensor."""
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import array_shapes, basic_indices, integer_array_indices

import hypatia
import hypatia.tensor as T
from util import input_for, layouts, random_array, seeds, with_layout


@given(data=st.data(), shape=array_shapes(min_dims=1, max_dims=4, min_side=1, max_side=5), layout=layouts,
       seed=seeds)
def test_basic_indexing_matches_numpy(data, shape, layout, seed):
    idx = data.draw(basic_indices(shape, allow_newaxis=True, allow_ellipsis=True), label="index")
    a = with_layout(random_array(np.random.RandomState(seed), shape, "float64"), layout)
    x = input_for(shape, "float64", "x")
    out = hypatia.function([x], x[idx])(a)
    np.testing.assert_array_equal(out, a[idx])


@given(data=st.data(), shape=array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=5), seed=seeds)
def test_integer_array_indexing_matches_numpy(data, shape, seed):
    idx = data.draw(integer_array_indices(shape, result_shape=array_shapes(min_dims=0, max_dims=2, max_side=3)),
                    label="index")
    a = random_array(np.random.RandomState(seed), shape, "int32")
    x = input_for(shape, "int32", "x")
    out = hypatia.function([x], x[idx])(a)
    np.testing.assert_array_equal(out, a[idx])


@given(shape=array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=5), seed=seeds)
def test_boolean_mask_matches_numpy(shape, seed):
    rng = np.random.RandomState(seed)
    a = random_array(rng, shape, "float32")
    mask = rng.rand(*shape) > 0.5
    x = input_for(shape, "float32", "x")
    m = T.TensorType("bool", [False] * len(shape))("m")
    f = hypatia.function([x, m], [x[m], x[x > 0]])
    got_mask, got_pos = f(a, mask)
    np.testing.assert_array_equal(got_mask, a[mask])
    np.testing.assert_array_equal(got_pos, a[a > 0])


def test_mixed_and_symbolic_indices():
    x = T.dtensor3("x")
    i = T.lscalar("i")
    idx = T.lvector("idx")
    a = np.arange(60.0).reshape(3, 4, 5)
    f = hypatia.function([x, i, idx], [x[i], x[-1, i:, ::-2], x[:, idx], x[1:3, idx, None], x[..., i], x[[0, 2]],
                                       x[i:i + 2, 1]])
    r = f(a, 1, np.array([3, 0, 3]))
    np.testing.assert_array_equal(r[0], a[1])
    np.testing.assert_array_equal(r[1], a[-1, 1:, ::-2])
    np.testing.assert_array_equal(r[2], a[:, [3, 0, 3]])
    np.testing.assert_array_equal(r[3], a[1:3, [3, 0, 3], None])
    np.testing.assert_array_equal(r[4], a[..., 1])
    np.testing.assert_array_equal(r[5], a[[0, 2]])
    np.testing.assert_array_equal(r[6], a[1:3, 1])


def test_index_errors():
    x = T.dmatrix("x")
    with pytest.raises(IndexError):
        x[0, 0, 0]
    with pytest.raises(IndexError):
        x[1.5]
    f = hypatia.function([x], x[5])
    with pytest.raises(IndexError):
        f(np.zeros((2, 2)))


@given(data=st.data(), shape=array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=5), seed=seeds)
def test_set_and_inc_subtensor_basic(data, shape, seed):
    idx = data.draw(basic_indices(shape, allow_newaxis=False, allow_ellipsis=True), label="index")
    rng = np.random.RandomState(seed)
    a = random_array(rng, shape, "float64")
    region = a[idx]
    y = random_array(rng, np.shape(region), "float64")
    x = input_for(shape, "float64", "x")
    vy = input_for(np.shape(region), "float64", "y")
    f = hypatia.function([x, vy], [T.set_subtensor(x[idx], vy), T.inc_subtensor(x[idx], vy),
                                   T.set_subtensor(x[idx], 0.5)])
    s, inc, s2 = f(a, y)
    want = a.copy()
    want[idx] = y
    np.testing.assert_array_equal(s, want)
    want = a.copy()
    want[idx] += y
    np.testing.assert_allclose(inc, want)
    want = a.copy()
    want[idx] = 0.5
    np.testing.assert_array_equal(s2, want)


def test_inc_subtensor_repeated_indices_accumulate():
    x = T.dvector("x")
    idx = T.lvector("idx")
    y = T.dvector("y")
    f = hypatia.function([x, idx, y], [T.inc_subtensor(x[idx], y), T.set_subtensor(x[idx], y)])
    a = np.zeros(4)
    i = np.array([0, 2, 0, 3])
    v = np.array([1.0, 2.0, 3.0, 4.0])
    inc, st_ = f(a, i, v)
    want = a.copy()
    np.add.at(want, i, v)
    np.testing.assert_array_equal(inc, want)
    assert st_[2] == 2.0 and st_[3] == 4.0


def test_take():
    x = T.dmatrix("x")
    a = np.arange(12.0).reshape(3, 4)
    f = hypatia.function([x], [T.take(x, [2, 0], axis=1), T.take(x, [5, 1]), x.take([1], axis=0)])
    r = f(a)
    np.testing.assert_array_equal(r[0], np.take(a, [2, 0], axis=1))
    np.testing.assert_array_equal(r[1], np.take(a, [5, 1]))
    np.testing.assert_array_equal(r[2], a[[1]])


@pytest.mark.parametrize("mode", ["wrap", "clip"])
def test_take_wrap_and_clip_modes_match_numpy(mode):
    x = T.dmatrix("x")
    i = T.lvector("i")
    a = np.arange(12.0).reshape(3, 4)
    idx = np.array([-9, -5, -1, 0, 3, 4, 7, 13], dtype=np.int64)
    f = hypatia.function([x, i], [T.take(x, i, axis=1, mode=mode), T.take(x, i, mode=mode),
                                  x.take(i, axis=-2, mode=mode)])
    r = f(a, idx)
    np.testing.assert_array_equal(r[0], np.take(a, idx, axis=1, mode=mode))
    np.testing.assert_array_equal(r[1], np.take(a, idx, mode=mode))
    np.testing.assert_array_equal(r[2], np.take(a, idx, axis=-2, mode=mode))
    # Constant indices (a Python list) take the same path.
    g = hypatia.function([x], T.take(x, [-1, 5], axis=0, mode=mode))
    np.testing.assert_array_equal(g(a), np.take(a, [-1, 5], axis=0, mode=mode))


def test_take_clip_gradient_accumulates_on_the_clamped_elements():
    x = T.dvector("x")
    cost = T.take(x, np.array([-3, 0, 5, 9]), mode="clip").sum()
    gx = hypatia.function([x], hypatia.grad(cost, x))(np.arange(4.0))
    np.testing.assert_array_equal(gx, [2.0, 0.0, 0.0, 2.0])


def test_take_modes_errors():
    x = T.dmatrix("x")
    with pytest.raises(ValueError, match="mode must be 'raise', 'wrap' or 'clip'"):
        T.take(x, [0], mode="nearest")
    with pytest.raises(ValueError, match="axis 2 is out of range"):
        T.take(x, [0], axis=2, mode="wrap")
    f = hypatia.function([x], T.take(x, [1], axis=1, mode="wrap"))
    with pytest.raises(IndexError):
        f(np.zeros((2, 0)))  # numpy: cannot do a non-empty take from an empty axis


def test_basic_index_output_is_a_view_op():
    x = T.dmatrix("x")
    node = x[1:, ::-1].owner
    assert isinstance(node.op, T.Subtensor)
    assert node.op.view_map == {0: [0]}
    assert isinstance(x[[0, 1]].owner.op, T.AdvancedSubtensor)


@given(shape=array_shapes(min_dims=1, max_dims=4, min_side=1, max_side=5), layout=layouts, seed=seeds,
       data=st.data(), dtype=st.sampled_from(["float32", "int16", "bool", "float16"]))
def test_one_index_array_on_any_axis_gathers_and_scatters_as_numpy(shape, layout, seed, data, dtype):
    # The CPU's take-along-an-axis paths (x[:, :, idx], inc/set of it): any axis, any layout of x,
    # repeated and negative indices, y broadcast or not; the CPU kernels run against numpy here and
    # against the reference kernels under debug checks.
    axis = data.draw(st.integers(0, len(shape) - 1), label="axis")
    n = shape[axis]
    idx = np.array(data.draw(st.lists(st.integers(-n, n - 1), max_size=6), label="idx"), dtype=np.int64)
    rng = np.random.RandomState(seed)
    a = with_layout(random_array(rng, shape, dtype), layout)
    key = (slice(None),) * axis + (idx,)
    x = input_for(shape, dtype, "x")
    region = a[key].shape
    y = T.TensorType(dtype, [False] * len(region))("y")
    yv = random_array(rng, region, dtype)
    f = hypatia.function([x, y], [x[key], T.inc_subtensor(x[key], y), T.set_subtensor(x[key], y),
                                  T.inc_subtensor(x[key], T.constant(np.ones((), dtype)))])
    got = f(a, yv)
    np.testing.assert_array_equal(got[0], a[key])
    add_at = np.logical_or.at if dtype == "bool" else np.add.at
    inc = a.copy()
    add_at(inc, key, yv)
    # float16 adds in float32 and rounds once (the storage rule), numpy's add.at at each add.
    close = dict(rtol=2e-3, atol=2e-3) if dtype == "float16" else dict(rtol=0, atol=0)
    np.testing.assert_allclose(got[1], inc, **close)
    st_ = a.copy()
    st_[key] = yv
    if len(set(((i % n) for i in idx.tolist()))) == len(idx):  # numpy's order of repeated sets is unspecified
        np.testing.assert_array_equal(got[2], st_)
    one = a.copy()
    add_at(one, key, np.ones((), dtype))
    np.testing.assert_allclose(got[3], one, **close)


def test_take_along_the_last_axis_of_a_big_array_threads_as_numpy():
    # Large enough for the thread pool: the gather and its gradient (repeated indices add).
    rng = np.random.RandomState(0)
    a = rng.rand(8, 3, 40, 64).astype(np.float32)
    idx = np.concatenate([np.arange(64), np.arange(0, 64, 2)])
    x = T.ftensor4("x")
    g = T.grad(T.sum(x[:, :, :, idx] * np.float32(2.0)), x)
    out, grad = hypatia.function([x], [x[:, :, :, idx], g])(a)
    np.testing.assert_array_equal(out, a[..., idx])
    want = np.zeros_like(a)
    np.add.at(want, (Ellipsis, idx), 2.0)
    np.testing.assert_array_equal(grad, want)
