"""hypatia.tensor.nnet.neighbours (Theano's images2neibs / neibs2images) against a numpy reference
written from Theano 1.0's rules: every mode, odd sizes, steps below / equal to / above the
neighbourhood, batches and channels, constant and symbolic image sizes, symbolic neib_shape, the
gradients (overlapping neighbourhoods add), neibs2images' round trip, the errors, and the graph on
the (emulated) GPU."""
import os
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import hypatia
import hypatia.tensor as T
from hypatia.tensor.nnet import neighbours
from hypatia.tensor.nnet.neighbours import Images2Neibs, images2neibs, neibs2images


# ------------------------------------------------------------------------------------------------
# The numpy reference


def ref_index(shape4, neib_shape, neib_step, mode):
    """For each output entry (row, col) of images2neibs, the flat index into the image it reads, or
    -1 for a padding zero. Written from Theano's description: row = ((n * C + ch) * gr + a) * gd + b,
    col = i * d + j, pixel (a * sx + i - off_r, b * sy + j - off_c), wrapped in wrap_centered."""
    B, C, H, W = shape4
    (c, d), (sx, sy) = neib_shape, neib_step
    if mode == "wrap_centered":
        assert c % 2 == 1 and d % 2 == 1 and H >= c and W >= d
        gr, gd = -(-H // sx), -(-W // sy)
        off = (c // 2, d // 2)
    else:
        pad = {"valid": (0, 0), "ignore_borders": (0, 0), "half": (c // 2, d // 2), "full": (c - 1, d - 1)}[mode]
        Hp, Wp = H + 2 * pad[0], W + 2 * pad[1]
        if mode != "ignore_borders":
            assert H >= c and W >= d and (Hp - c) % sx == 0 and (Wp - d) % sy == 0, "not a valid case"
        gr, gd = max((Hp - c) // sx + 1, 0), max((Wp - d) // sy + 1, 0)
        off = pad
    idx = np.full((B * C * gr * gd, c * d), -1, dtype=np.int64)
    row = 0
    for n in range(B):
        for ch in range(C):
            for a in range(gr):
                for b in range(gd):
                    for i in range(c):
                        for j in range(d):
                            r, q = a * sx + i - off[0], b * sy + j - off[1]
                            if mode == "wrap_centered":
                                r, q = r % H, q % W
                            if 0 <= r < H and 0 <= q < W:
                                idx[row, i * d + j] = ((n * C + ch) * H + r) * W + q
                    row += 1
    return idx


def ref_images2neibs(x, neib_shape, neib_step=None, mode="valid"):
    idx = ref_index(x.shape, neib_shape, neib_step or neib_shape, mode)
    flat = x.reshape(-1)
    return np.where(idx >= 0, flat[np.maximum(idx, 0)], 0).astype(x.dtype)


def ref_images2neibs_grad(shape4, g, neib_shape, neib_step=None, mode="valid"):
    """The adjoint: each output entry's gradient added to the pixel it read."""
    idx = ref_index(shape4, neib_shape, neib_step or neib_shape, mode)
    gx = np.zeros(int(np.prod(shape4)), dtype=np.float64)
    keep = idx >= 0
    np.add.at(gx, idx[keep], g[keep])
    return gx.reshape(shape4)


def test_reference_matches_theanos_documented_examples():
    # The reference itself, on outputs Theano's tests spell out: disjoint 2x2 neighbourhoods of a 4x4
    # image, and wrap_centered 3x3 (centred on pixel (0, 0), wrapping to the last row and column).
    x = np.arange(16.0).reshape(1, 1, 4, 4)
    np.testing.assert_array_equal(ref_images2neibs(x, (2, 2)),
                                  [[0, 1, 4, 5], [2, 3, 6, 7], [8, 9, 12, 13], [10, 11, 14, 15]])
    x = np.arange(25.0).reshape(1, 1, 5, 5)
    r = ref_images2neibs(x, (3, 3), (1, 1), "wrap_centered")
    assert r.shape == (25, 9)
    np.testing.assert_array_equal(r[0], [24, 20, 21, 4, 0, 1, 9, 5, 6])
    np.testing.assert_array_equal(r[6], [0, 1, 2, 5, 6, 7, 10, 11, 12])


# ------------------------------------------------------------------------------------------------
# Cases: (image shape, neib_shape, neib_step) valid for each mode. Steps below, equal to and above the
# neighbourhood; odd sizes; neighbourhoods of at most 16 pixels (one slice per pixel) and more (two
# stages); step == shape (the reshape path).

CASES = {
    "valid": [((2, 3, 6, 8), (2, 2), None), ((1, 2, 7, 9), (3, 3), (2, 3)), ((2, 1, 5, 7), (1, 3), (2, 2)),
              ((1, 2, 9, 10), (3, 2), (6, 4)), ((2, 2, 10, 9), (5, 5), (1, 2)), ((1, 1, 12, 11), (6, 5), (3, 3)),
              ((3, 2, 6, 6), (6, 6), None), ((1, 1, 4, 5), (4, 5), (1, 1))],
    "ignore_borders": [((2, 3, 7, 9), (2, 2), None), ((1, 2, 7, 9), (3, 2), (2, 3)), ((2, 1, 11, 8), (5, 4), (2, 3)),
                       ((1, 2, 9, 10), (2, 3), (4, 5)), ((1, 1, 3, 9), (4, 2), (1, 1)), ((2, 2, 5, 5), (5, 5), None)],
    "half": [((2, 3, 6, 8), (3, 3), (1, 1)), ((1, 2, 7, 9), (3, 3), (2, 2)), ((2, 1, 6, 7), (2, 5), (2, 3)),
             ((1, 2, 8, 8), (4, 4), None), ((1, 1, 11, 11), (5, 6), (2, 1))],
    "full": [((2, 3, 5, 6), (2, 3), (1, 1)), ((1, 2, 7, 7), (3, 3), (2, 4)), ((2, 1, 6, 5), (4, 3), (2, 3)),
             ((1, 2, 6, 10), (5, 5), (1, 1)), ((1, 1, 5, 5), (3, 3), None)],
    "wrap_centered": [((2, 3, 5, 5), (3, 3), (1, 1)), ((1, 2, 7, 6), (3, 1), (2, 4)), ((2, 1, 5, 8), (5, 3), (3, 3)),
                      ((1, 2, 9, 8), (5, 7), (1, 2)), ((1, 1, 6, 9), (3, 3), None), ((1, 1, 4, 6), (1, 5), (5, 7))],
}
ALL_CASES = [(mode,) + case for mode, cases in CASES.items() for case in cases]


def _ids(c):
    return f"{c[0]}-{'x'.join(map(str, c[1]))}-{c[2]}-{c[3]}"


@pytest.mark.parametrize("mode,shape4,neib_shape,neib_step", ALL_CASES, ids=[_ids(c) for c in ALL_CASES])
def test_images2neibs_matches_reference(mode, shape4, neib_shape, neib_step):
    rng = np.random.RandomState(1)
    xv = rng.randn(*shape4)
    x = T.dtensor4("x")  # sizes known only at run time
    f = hypatia.function([x], images2neibs(x, neib_shape, neib_step, mode=mode))
    expected = ref_images2neibs(xv, neib_shape, neib_step, mode)
    np.testing.assert_array_equal(f(xv), expected)
    # A constant image: its sizes are known while building (the other code path of the sizes).
    r = images2neibs(T.constant(xv), neib_shape, neib_step, mode=mode).eval()
    np.testing.assert_array_equal(r, expected)


@pytest.mark.parametrize("mode,shape4,neib_shape,neib_step", ALL_CASES, ids=[_ids(c) for c in ALL_CASES])
def test_symbolic_neib_shape_and_step(mode, shape4, neib_shape, neib_step):
    # Theano takes neib_shape / neib_step as vectors: variables gather with index arrays instead.
    rng = np.random.RandomState(2)
    xv = rng.randn(*shape4)
    x, shp, stp = T.dtensor4("x"), T.lvector("shape"), T.lvector("step")
    out = images2neibs(x, shp, stp, mode=mode)
    f = hypatia.function([x, shp, stp], out)
    step = neib_step or neib_shape
    np.testing.assert_array_equal(f(xv, neib_shape, step), ref_images2neibs(xv, neib_shape, step, mode))
    g = T.dmatrix("g")
    fg = hypatia.function([x, shp, stp, g], hypatia.grad(T.sum(out * g), x))
    gv = rng.randn(*ref_images2neibs(xv, neib_shape, step, mode).shape)
    np.testing.assert_allclose(fg(xv, neib_shape, step, gv),
                               ref_images2neibs_grad(shape4, gv, neib_shape, step, mode), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("dtype", ["float32", "int32", "uint8"])
def test_dtypes_are_kept(dtype):
    xv = (np.arange(2 * 3 * 6 * 7) % 251).reshape(2, 3, 6, 7).astype(dtype)
    x = T.tensor4("x", dtype=dtype)
    for shape, step, mode in [((2, 2), (2, 2), "ignore_borders"), ((3, 3), (1, 2), "half"),
                              ((3, 5), (2, 2), "wrap_centered"), ((5, 5), (1, 1), "full")]:
        out = images2neibs(x, shape, step, mode=mode)
        assert out.dtype == dtype and out.ndim == 2
        r = hypatia.function([x], out)(xv)
        assert r.dtype == np.dtype(dtype)
        np.testing.assert_array_equal(r, ref_images2neibs(xv, shape, step, mode))


def test_api_names_and_images2neibs_class():
    assert T.nnet.images2neibs is images2neibs and T.nnet.neibs2images is neibs2images
    assert T.nnet.Images2Neibs is Images2Neibs and T.nnet.neighbours is neighbours
    op = Images2Neibs("half")
    assert str(op) == "Images2Neibs{half}" and op == Images2Neibs("half") and op != Images2Neibs("full")
    x = T.dtensor4("x")
    xv = np.random.RandomState(3).randn(1, 2, 5, 6)
    f = hypatia.function([x], op(x, (3, 3), (1, 1)))
    np.testing.assert_array_equal(f(xv), ref_images2neibs(xv, (3, 3), (1, 1), "half"))
    # Theano's other spellings of the sizes: lists, numpy arrays, constant vectors.
    f = hypatia.function([x], images2neibs(x, [1, 2], np.array([2, 2]), "ignore_borders"))
    np.testing.assert_array_equal(f(xv), ref_images2neibs(xv, (1, 2), (2, 2), "ignore_borders"))
    f = hypatia.function([x], images2neibs(x, T.as_tensor_variable((1, 3))))
    np.testing.assert_array_equal(f(xv), ref_images2neibs(xv, (1, 3)))


def test_ignore_borders_with_an_image_smaller_than_the_neighbourhood_is_empty():
    x = T.dtensor4("x")
    f = hypatia.function([x], images2neibs(x, (4, 3), (2, 2), "ignore_borders"))
    assert f(np.zeros((2, 3, 3, 5))).shape == (0, 12)
    assert f(np.zeros((2, 3, 4, 2))).shape == (0, 12)
    f = hypatia.function([x], images2neibs(x, (5, 5), (3, 1), "ignore_borders"))  # the two-stage path
    assert f(np.zeros((1, 2, 4, 9))).shape == (0, 25)


def _axis_size(mode, k, s, extra):
    """An axis length that mode accepts for neighbourhood k and step s (extra: how much longer)."""
    if mode == "valid":
        return k + extra * s
    if mode == "half":
        t = -(-(k - k % 2) // s)
        return k % 2 + (t + extra) * s
    if mode == "full":
        t = -(-(2 * k - 2) // s)
        return (t + extra) * s - k + 2
    if mode == "wrap_centered":
        return k + extra
    return extra + 1  # ignore_borders: any length, shorter than the neighbourhood too


@given(data=st.data(), mode=st.sampled_from(sorted(CASES)), symbolic=st.booleans())
def test_random_cases_against_reference(data, mode, symbolic):
    # Random neighbourhoods (up to 6 x 6: both slice layouts), steps and sizes, the forward values and
    # the gradient (the adjoint), with sizes known while building or only at run time.
    odd = st.sampled_from([1, 3, 5])
    c, d = (data.draw(odd), data.draw(odd)) if mode == "wrap_centered" else \
        (data.draw(st.integers(1, 6)), data.draw(st.integers(1, 6)))
    sx, sy = data.draw(st.integers(1, 5)), data.draw(st.integers(1, 5))
    extra = st.integers(0, 3)
    shape4 = (data.draw(st.integers(1, 2)), data.draw(st.integers(1, 3)),
              _axis_size(mode, c, sx, data.draw(extra)), _axis_size(mode, d, sy, data.draw(extra)))
    xv = np.random.RandomState(data.draw(st.integers(0, 1000))).randn(*shape4)
    expected = ref_images2neibs(xv, (c, d), (sx, sy), mode)
    x = T.constant(xv) if not symbolic else T.dtensor4("x")
    out = images2neibs(x, (c, d), (sx, sy), mode=mode)
    g = T.dmatrix("g")
    gv = np.random.RandomState(1).randn(*expected.shape)
    ins = [g] + ([x] if symbolic else [])
    f = hypatia.function(ins, [out, hypatia.grad(T.sum(out * g), x)])
    r, gx = f(gv, *([xv] if symbolic else []))
    np.testing.assert_array_equal(r, expected)
    np.testing.assert_allclose(gx, ref_images2neibs_grad(shape4, gv, (c, d), (sx, sy), mode), rtol=1e-12, atol=1e-12)


# ------------------------------------------------------------------------------------------------
# Gradients

GRAD_CASES = [
    ("valid", (2, 2, 5, 7), (3, 3), (1, 2)),  # overlapping
    ("valid", (1, 2, 6, 6), (2, 2), None),  # disjoint (the reshape path)
    ("valid", (1, 1, 9, 9), (5, 5), (2, 1)),  # two stages
    ("ignore_borders", (2, 1, 7, 8), (3, 2), (2, 3)),
    ("ignore_borders", (1, 2, 9, 7), (2, 2), None),
    ("half", (1, 2, 6, 5), (3, 3), (1, 2)),
    ("full", (2, 1, 4, 5), (2, 3), (2, 1)),
    ("wrap_centered", (1, 2, 5, 6), (3, 3), (1, 2)),  # wrapped pixels are read twice
    ("wrap_centered", (1, 1, 7, 7), (5, 5), (2, 3)),
    ("valid", (1, 2, 9, 10), (3, 2), (6, 4)),  # step above the neighbourhood: skipped pixels get 0
]


@pytest.mark.parametrize("mode,shape4,neib_shape,neib_step", GRAD_CASES, ids=[_ids(c) for c in GRAD_CASES])
def test_gradient_is_the_adjoint(mode, shape4, neib_shape, neib_step):
    rng = np.random.RandomState(4)
    xv = rng.randn(*shape4)
    x, g = T.dtensor4("x"), T.dmatrix("g")
    out = images2neibs(x, neib_shape, neib_step, mode=mode)
    f = hypatia.function([x, g], hypatia.grad(T.sum(out * g), x))
    gv = rng.randn(*ref_images2neibs(xv, neib_shape, neib_step, mode).shape)
    np.testing.assert_allclose(f(xv, gv), ref_images2neibs_grad(shape4, gv, neib_shape, neib_step, mode),
                               rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("mode,shape4,neib_shape,neib_step", GRAD_CASES[::2], ids=[_ids(c) for c in GRAD_CASES[::2]])
def test_verify_grad(mode, shape4, neib_shape, neib_step):
    # Finite differences through a nonlinear cost, so that a pixel read twice counts twice.
    xv = np.random.RandomState(5).randn(*shape4)
    w = np.random.RandomState(6).randn(neib_shape[0] * neib_shape[1])

    def cost(x):
        return T.sum(T.sqr(images2neibs(x, neib_shape, neib_step, mode=mode)) * w)

    hypatia.gradient.verify_grad(cost, [xv], rng=np.random.RandomState(7))


def test_second_derivative_through_images2neibs():
    # The gradient graph is made of differentiable ops too: the Hessian-vector product of a cost
    # with overlapping neighbourhoods against its finite difference.
    rng = np.random.RandomState(8)
    xv, vv = rng.randn(1, 2, 5, 5), rng.randn(1, 2, 5, 5)
    x, v = T.dtensor4("x"), T.dtensor4("v")
    cost = T.sum(T.sqr(images2neibs(x, (3, 3), (1, 1), "valid")) ** 2)
    gx = hypatia.grad(cost, x)
    hv = hypatia.grad(T.sum(gx * v), x)
    fg, fh = hypatia.function([x], gx), hypatia.function([x, v], hv)
    eps = 1e-6
    np.testing.assert_allclose(fh(xv, vv), (fg(xv + eps * vv) - fg(xv - eps * vv)) / (2 * eps), rtol=1e-5, atol=1e-6)


# ------------------------------------------------------------------------------------------------
# neibs2images


@pytest.mark.parametrize("shape4,neib_shape", [((2, 3, 6, 8), (2, 2)), ((1, 2, 9, 10), (3, 5)), ((2, 1, 4, 4), (4, 4)),
                                               ((1, 1, 5, 3), (1, 1))])
def test_neibs2images_round_trip_valid(shape4, neib_shape):
    xv = np.random.RandomState(9).randn(*shape4)
    x = T.dtensor4("x")
    neibs = images2neibs(x, neib_shape)
    f = hypatia.function([x], [neibs, neibs2images(neibs, neib_shape, x.shape)])
    nv, back = f(xv)
    np.testing.assert_array_equal(back, xv)
    # From the rows alone, with the shape as Python ints.
    n = T.dmatrix("n")
    np.testing.assert_array_equal(hypatia.function([n], neibs2images(n, neib_shape, shape4))(nv), xv)


@pytest.mark.parametrize("shape4,neib_shape", [((2, 3, 7, 9), (2, 2)), ((1, 2, 9, 10), (4, 3)), ((1, 1, 6, 6), (3, 3))])
def test_neibs2images_ignore_borders_pads_with_zeros(shape4, neib_shape):
    xv = np.random.RandomState(10).randn(*shape4)
    x = T.dtensor4("x")
    neibs = images2neibs(x, neib_shape, mode="ignore_borders")
    back = hypatia.function([x], neibs2images(neibs, neib_shape, x.shape, mode="ignore_borders"))(xv)
    expected = np.zeros_like(xv)
    h, w = (shape4[2] // neib_shape[0]) * neib_shape[0], (shape4[3] // neib_shape[1]) * neib_shape[1]
    expected[:, :, :h, :w] = xv[:, :, :h, :w]
    np.testing.assert_array_equal(back, expected)
    # Symbolic neib_shape and the shape given as a list mixing ints and variables.
    n, shp = T.dmatrix("n"), T.lvector("shp")
    out = neibs2images(n, shp, [x.shape[0], shape4[1], x.shape[2], shape4[3]], mode="ignore_borders")
    nv = ref_images2neibs(xv, neib_shape, mode="ignore_borders")
    np.testing.assert_array_equal(hypatia.function([n, shp, x], out)(nv, neib_shape, xv), expected)


def test_neibs2images_gradient_and_theanos_gradient_identity():
    # neibs2images is images2neibs' adjoint for disjoint neighbourhoods (Theano's grad of
    # Images2Neibs was neibs2images of the output gradient).
    rng = np.random.RandomState(11)
    shape4, ns = (2, 2, 6, 9), (2, 3)
    xv = rng.randn(*shape4)
    x, g = T.dtensor4("x"), T.dmatrix("g")
    gx = hypatia.grad(T.sum(images2neibs(x, ns) * g), x)
    gv = rng.randn(2 * 2 * 3 * 3, 6)
    f = hypatia.function([x, g], [gx, neibs2images(g, ns, x.shape)])
    a, b = f(xv, gv)
    np.testing.assert_array_equal(a, b)
    hypatia.gradient.verify_grad(lambda n: T.sqr(neibs2images(n, ns, shape4)), [gv], rng=np.random.RandomState(12))
    hypatia.gradient.verify_grad(lambda n: neibs2images(n, (4, 4), (1, 2, 9, 10), mode="ignore_borders") ** 2,
                                 [rng.randn(1 * 2 * 2 * 2, 16)], rng=np.random.RandomState(13))


def test_neibs2images_errors():
    n = T.dmatrix("n")
    with pytest.raises(NotImplementedError, match="neibs2images: mode must be 'valid' or 'ignore_borders'"):
        neibs2images(n, (2, 2), (1, 1, 4, 4), mode="half")
    with pytest.raises(ValueError, match=r"neibs2images: mode 'valid' needs .*multiples of neib_shape.*"
                                         r"\(1, 1, 5, 4\), neib_shape \(2, 2\)"):
        neibs2images(n, (2, 2), (1, 1, 5, 4))
    with pytest.raises(ValueError, match="original_shape must have 4 entries"):
        neibs2images(n, (2, 2), (4, 4))
    with pytest.raises(TypeError, match="neibs must be a matrix"):
        neibs2images(T.dtensor3(), (2, 2), (1, 1, 4, 4))
    # Sizes known only at run time: the rows do not make images of that shape.
    x = T.dtensor4("x")
    f = hypatia.function([n, x], neibs2images(n, (2, 2), x.shape))
    with pytest.raises((ValueError, AssertionError)):
        f(np.zeros((4, 4)), np.zeros((1, 1, 5, 4)))


# ------------------------------------------------------------------------------------------------
# Errors


def test_bad_arguments():
    x = T.dtensor4("x")
    with pytest.raises(NotImplementedError, match="images2neibs: mode must be one of 'valid', 'half', 'full', "
                                                  "'wrap_centered', 'ignore_borders', got 'same'"):
        images2neibs(x, (2, 2), mode="same")
    with pytest.raises(NotImplementedError, match="Images2Neibs: mode must be one of"):
        Images2Neibs("same")
    with pytest.raises(TypeError, match="images2neibs: ten4 must be a 4-d tensor"):
        images2neibs(T.dmatrix(), (2, 2))
    with pytest.raises(ValueError, match=r"images2neibs: neib_shape must be positive, got \(0, 2\)"):
        images2neibs(x, (0, 2))
    with pytest.raises(ValueError, match=r"images2neibs: neib_step must be positive, got \(2, -1\)"):
        images2neibs(x, (2, 2), (2, -1))
    with pytest.raises(ValueError, match=r"neib_shape must be 2 integers"):
        images2neibs(x, (2, 2, 2))
    with pytest.raises(TypeError, match=r"neib_shape must be 2 integers or an integer vector"):
        images2neibs(x, T.dvector())
    with pytest.raises(ValueError, match=r"images2neibs: mode 'wrap_centered' needs a neib_shape of odd sizes, "
                                         r"got \(3, 2\)"):
        images2neibs(x, (3, 2), (1, 1), mode="wrap_centered")


@pytest.mark.parametrize("mode,shape4,neib_shape,neib_step,bad", [
    ("valid", (2, 3, 7, 8), (2, 2), None, "ten4.shape[2]=7 against k=2, s=2"),
    ("valid", (1, 1, 8, 10), (3, 3), (1, 2), "ten4.shape[3]=10 against k=3, s=2"),
    ("valid", (1, 1, 2, 8), (3, 2), (1, 2), "ten4.shape[2]=2 against k=3, s=1"),
    ("half", (1, 1, 6, 6), (3, 3), (2, 2), "ten4.shape[2]=6 against k=3, s=2"),
    ("full", (1, 1, 7, 6), (3, 3), (2, 2), "ten4.shape[3]=6 against k=3, s=2"),
    ("wrap_centered", (1, 1, 2, 5), (3, 3), (1, 1), "ten4.shape[2]=2 against k=3, s=1"),
])
def test_sizes_that_break_the_mode_raise_while_building(mode, shape4, neib_shape, neib_step, bad):
    xv = np.zeros(shape4)
    step = neib_step or neib_shape
    with pytest.raises(ValueError) as e:
        images2neibs(T.constant(xv), neib_shape, neib_step, mode=mode)
    msg = str(e.value)
    assert msg.startswith(f"images2neibs: mode {mode!r} needs")
    assert f"neib_shape={neib_shape}, neib_step={step}" in msg
    assert f"image shape {shape4}" in msg and bad in msg
    # Broadcastable axes are known to have size 1.
    if mode == "valid":
        with pytest.raises(ValueError, match=r"image shape \(\?, \?, 1, \?\)"):
            images2neibs(T.TensorType("float64", (False, False, True, False))("x"), (2, 2))


@pytest.mark.parametrize("mode,neib_shape,shape4", [("valid", (2, 2), (1, 2, 5, 4)), ("half", (3, 3), (1, 1, 7, 8)),
                                                    ("full", (2, 3), (1, 1, 4, 4))])
def test_disjoint_neighbourhoods_check_the_sizes_at_run_time(mode, neib_shape, shape4):
    # step == shape splits each axis into (grid, neighbourhood): sizes that the neighbourhoods do not
    # cover fail when the function runs.
    x = T.dtensor4("x")
    f = hypatia.function([x], images2neibs(x, neib_shape, mode=mode))
    with pytest.raises((ValueError, AssertionError)):
        f(np.zeros(shape4))


@pytest.mark.parametrize("mode,shape4,neib_shape,neib_step", [
    ("valid", (2, 3, 7, 8), (2, 2), None), ("valid", (1, 1, 8, 10), (3, 3), (1, 2)),
    ("half", (1, 1, 6, 6), (3, 3), (2, 2)), ("full", (1, 1, 7, 6), (3, 3), (2, 2)),
    ("wrap_centered", (1, 1, 2, 5), (3, 3), (1, 1)), ("valid", (1, 1, 2, 8), (3, 2), (1, 2))])
@pytest.mark.parametrize("symbolic_shape", [False, True])
def test_sizes_that_break_the_mode_raise_at_run_time(mode, shape4, neib_shape, neib_step, symbolic_shape):
    x = T.dtensor4("x")
    step = neib_step or neib_shape
    if symbolic_shape:
        out = images2neibs(x, T.as_tensor_variable(np.array(neib_shape)) + T.lscalar("zero"), step, mode=mode)
    else:
        out = images2neibs(x, neib_shape, neib_step, mode=mode)
    ins = [x] + ([i for i in hypatia.gof.graph.inputs([out]) if i.name == "zero"] if symbolic_shape else [])
    f = hypatia.function(ins, out)
    args = [np.zeros(shape4)] + ([0] if symbolic_shape else [])
    with pytest.raises(AssertionError, match=f"images2neibs: mode {mode!r}"):
        f(*args)
    # The same function on sizes that fit the mode runs.
    ok = {"valid": (1, 1) + tuple(k + 2 * s for k, s in zip(neib_shape, step)),
          "half": (1, 1, 7, 7), "full": (1, 1, 7, 7), "wrap_centered": (1, 1, 5, 5)}[mode]
    args[0] = np.random.RandomState(0).randn(*ok)
    np.testing.assert_array_equal(f(*args), ref_images2neibs(args[0], neib_shape, step, mode))


def test_symbolic_neib_shape_values_are_checked_at_run_time():
    x, shp, stp = T.dtensor4("x"), T.lvector("shp"), T.lvector("stp")
    xv = np.zeros((1, 1, 6, 6))
    f = hypatia.function([x, shp, stp], images2neibs(x, shp, stp, mode="ignore_borders"))
    assert f(xv, [2, 3], [2, 3]).shape == (6, 6)
    for bad in ([2, 0], [-1, 2]):
        with pytest.raises(AssertionError, match="images2neibs: mode 'ignore_borders' with neib_shape / neib_step "
                                                 "given as variables needs them positive"):
            f(xv, bad, [1, 1])
        with pytest.raises(AssertionError, match="needs them positive"):
            f(xv, [1, 1], bad)
    f = hypatia.function([x, shp, stp], images2neibs(x, shp, stp, mode="wrap_centered"))
    np.testing.assert_array_equal(f(xv + 1, [3, 1], [2, 2]), np.ones((9, 3)))
    with pytest.raises(AssertionError, match="the neighbourhood's sizes odd"):
        f(xv, [3, 2], [1, 1])


# ------------------------------------------------------------------------------------------------
# The GPU: the neighbourhoods stay on the device


GPU_PROGRAM = r"""
import numpy as np, hypatia
import hypatia.tensor as T
from hypatia.tensor.nnet import images2neibs
hypatia._core._install_emulated_gpu(as_default=True)
x, g, shp = T.ftensor4('x'), T.fmatrix('g'), T.lvector('shp')
cases = [((3, 3), (1, 2), 'valid'), ((2, 2), None, 'ignore_borders'), ((5, 5), (2, 1), 'half'),
         ((3, 3), (2, 2), 'wrap_centered'), ((2, 3), (1, 1), 'full'), (shp, (1, 1), 'valid')]
xv = np.random.RandomState(0).randn(2, 3, 7, 9).astype('float32')
for neib_shape, step, mode in cases:
    out = images2neibs(x, neib_shape, step, mode=mode)
    gx = hypatia.grad(T.sum(out * g), x)
    ins = [x, g] + ([shp] if neib_shape is shp else [])
    f = hypatia.function(ins, [out, gx])
    nodes = f.maker.fgraph.toposort()
    for n in nodes:
        name = type(n.op).__name__
        if name not in ('GpuFromHost', 'HostFromGpu'):
            # Every node computing float data runs on the device.
            assert not n.outputs[0].dtype.startswith('float') or type(n).__name__ == 'GpuApply', (mode, str(n))
        else:
            v = n.inputs[0]
            # Shape arithmetic (integers) may move; float data only from the inputs or to the outputs.
            if v.dtype.startswith('float'):
                assert (name == 'GpuFromHost' and v in ins) or (name == 'HostFromGpu' and n.outputs[0] in
                        f.maker.fgraph.outputs), (mode, str(n), [str(i) for i in n.inputs])
    print(mode, len(nodes), 'ok')
"""


def test_emulated_gpu_graph_has_no_data_transfers_inside():
    env = dict(os.environ, HYPATIA_FLAGS="device=cuda")
    r = subprocess.run([sys.executable, "-c", GPU_PROGRAM], env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-3000:]
    assert r.stdout.count(" ok") == 6, r.stdout
