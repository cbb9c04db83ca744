"""conv2d and its gradients (Theano 1.0's abstract_conv API) against a numpy reference."""
import pickle

import numpy as np
import pytest

import hypatia
import hypatia.tensor as T
from hypatia.tensor.nnet import abstract_conv, conv


def np_conv2d(img, kern, border="valid", subsample=(1, 1), flip=True, dilation=(1, 1), groups=1):
    """out[n, o, y, x] = sum over c, i, j of padded[n, c, y*sh + i*dh, x*sw + j*dw] * k[o, c, i, j]
    (k flipped in both spatial axes when flip)."""
    n, c, h, w = img.shape
    o, cg, kh, kw = kern.shape
    dh, dw = dilation
    sh, sw = subsample
    if border == "valid":
        ph = pw = 0
    elif border == "full":
        ph, pw = dh * (kh - 1), dw * (kw - 1)
    elif border == "half":
        ph, pw = dh * (kh // 2), dw * (kw // 2)
    else:
        ph, pw = border
    # ((top, bottom), (left, right)) or one pad per axis for both sides
    (pt, pb), (pl, pr) = [(v, v) if np.isscalar(v) else tuple(v) for v in (ph, pw)]
    k = kern[:, :, ::-1, ::-1] if flip else kern
    x = np.zeros((n, c, h + pt + pb, w + pl + pr), np.float64)
    x[:, :, pt:pt + h, pl:pl + w] = img
    ho = (h + pt + pb - dh * (kh - 1) - 1) // sh + 1
    wo = (w + pl + pr - dw * (kw - 1) - 1) // sw + 1
    out = np.zeros((n, o, ho, wo))
    og = o // groups
    for g in range(groups):
        for i in range(kh):
            for j in range(kw):
                patch = x[:, g * cg:(g + 1) * cg, i * dh:i * dh + sh * (ho - 1) + 1:sh,
                          j * dw:j * dw + sw * (wo - 1) + 1:sw]
                out[:, g * og:(g + 1) * og] += np.einsum("nchw,oc->nohw", patch, k[g * og:(g + 1) * og, :, i, j])
    return out


GRID = [(b, s, d, g, f) for b in ["valid", "full", "half", (1, 2), 1, ((0, 2), (3, 1)), ((2, 0), 1)]
        for s in [(1, 1), (2, 3)]
        for d in [(1, 1), (2, 1)] for g in [1, 2] for f in [True, False]]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_conv2d_matches_numpy_on_every_parameter(dtype):
    rng = np.random.RandomState(0)
    x, w = T.tensor4("x", dtype=dtype), T.tensor4("w", dtype=dtype)
    tol = 1e-4 if dtype == "float32" else 1e-10
    for border, sub, dil, groups, flip in GRID:
        img = rng.uniform(-1, 1, (2, 4, 7, 8)).astype(dtype)
        kern = rng.uniform(-1, 1, (4, 4 // groups, 3, 2)).astype(dtype)
        f = hypatia.function([x, w], T.nnet.conv2d(x, w, border_mode=border, subsample=sub, filter_flip=flip,
                                                   filter_dilation=dil, num_groups=groups))
        want = np_conv2d(img, kern, border if not isinstance(border, int) else (border, border), sub, flip, dil,
                         groups)
        got = f(img, kern)
        assert got.dtype == dtype
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol, err_msg=str((border, sub, dil, groups, flip)))
        # Non-contiguous operands.
        np.testing.assert_allclose(f(np.asfortranarray(img), kern[:, :, ::-1, :][:, :, ::-1, :]), want, rtol=tol,
                                   atol=tol)


def test_gradients_match_the_gradient_functions_and_finite_differences():
    rng = np.random.RandomState(1)
    x, w = T.dtensor4("x"), T.dtensor4("w")
    for border, sub, groups in [("valid", (1, 1), 1), ("half", (2, 1), 2), ((1, 0), (1, 2), 1)]:
        kw = dict(border_mode=border, subsample=sub, num_groups=groups)
        img = rng.uniform(-1, 1, (2, 4, 6, 5))
        kern = rng.uniform(-1, 1, (2, 4 // groups, 3, 2))
        y = T.nnet.conv2d(x, w, **kw)
        cost = T.sum(y ** 2)
        gx, gw = T.grad(cost, [x, w])
        top = 2 * y
        gx2 = T.nnet.conv2d_grad_wrt_inputs(top, w, input_shape=(2, 4, 6, 5), **kw)
        gw2 = T.nnet.conv2d_grad_wrt_weights(x, top, filter_shape=(2, 4 // groups, 3, 2), **kw)
        f = hypatia.function([x, w], [gx, gw, gx2, gw2])
        a, b, c, d = f(img, kern)
        np.testing.assert_allclose(a, c, rtol=1e-12)
        np.testing.assert_allclose(b, d, rtol=1e-12)
        hypatia.gradient.verify_grad(lambda xx, ww: T.nnet.conv2d(xx, ww, **kw), [img, kern], rng=rng)


def test_second_derivatives():
    rng = np.random.RandomState(2)
    img = rng.uniform(-1, 1, (1, 2, 5, 5))
    kern = rng.uniform(-1, 1, (3, 2, 2, 2))

    def f(xx, ww):
        y = T.nnet.conv2d(xx, ww, border_mode="full")
        gx, gw = T.grad(T.sum(T.tanh(y)), [xx, ww])
        return T.sum(gx ** 2) + T.sum(gw ** 2)

    hypatia.gradient.verify_grad(f, [img, kern], rng=rng)


def test_old_conv_module_separable_and_causal():
    rng = np.random.RandomState(3)
    x, w = T.dtensor4("x"), T.dtensor4("w")
    img = rng.uniform(-1, 1, (2, 3, 6, 6))
    kern = rng.uniform(-1, 1, (4, 3, 3, 3))
    f = hypatia.function([x, w], conv.conv2d(x, w, image_shape=(2, 3, 6, 6), filter_shape=(4, 3, 3, 3),
                                             border_mode="full"))
    np.testing.assert_allclose(f(img, kern), np_conv2d(img, kern, "full"), rtol=1e-10)
    with pytest.raises(ValueError, match="'valid' or 'full'"):
        conv.conv2d(x, w, border_mode="half")
    # separable: 3 channels, depth multiplier 2, then 5 pointwise filters
    dwk = rng.uniform(-1, 1, (6, 1, 3, 3))
    pwk = rng.uniform(-1, 1, (5, 6, 1, 1))
    d, p = T.dtensor4("d"), T.dtensor4("p")
    fs = hypatia.function([x, d, p], abstract_conv.separable_conv2d(x, d, p, num_channels=3))
    want = np_conv2d(np_conv2d(img, dwk, groups=3), pwk)
    np.testing.assert_allclose(fs(img, dwk, pwk), want, rtol=1e-10)
    # causal: output t reads inputs <= t
    s, k = T.dtensor3("s"), T.dtensor3("k")
    seq = rng.uniform(-1, 1, (2, 3, 10))
    k1 = rng.uniform(-1, 1, (4, 3, 3))
    for stride, dil in [(1, 1), (2, 2)]:
        fc = hypatia.function([s, k], abstract_conv.causal_conv1d(s, k, filter_shape=(4, 3, 3), subsample=stride,
                                                                  filter_dilation=dil))
        pad = dil * 2
        padded = np.concatenate([np.zeros((2, 3, pad)), seq], axis=2)[:, :, None, :]
        want = np_conv2d(padded, k1[:, :, None, :], subsample=(1, stride), dilation=(1, dil))[:, :, 0, :]
        got = fc(seq, k1)
        assert got.shape == (2, 4, (10 - 1) // stride + 1)
        np.testing.assert_allclose(got, want, rtol=1e-10)


def test_errors_name_both_shapes_and_unbuilt_options_say_so():
    x, w = T.ftensor4("x"), T.ftensor4("w")
    f = hypatia.function([x, w], T.nnet.conv2d(x, w))
    with pytest.raises(ValueError, match=r"\(1, 3, 5, 5\).*\(2, 4, 3, 3\)"):
        f(np.zeros((1, 3, 5, 5), "float32"), np.zeros((2, 4, 3, 3), "float32"))
    with pytest.raises(ValueError, match="do not fit"):
        f(np.zeros((1, 3, 2, 5), "float32"), np.zeros((2, 3, 3, 3), "float32"))
    with pytest.raises(ValueError, match="border_mode"):
        T.nnet.conv2d(x, w, border_mode="same")
    with pytest.raises(ValueError, match="subsample must be positive"):
        T.nnet.conv2d(x, w, subsample=(0, 1))
    with pytest.raises(TypeError, match="6-d filters"):
        T.nnet.conv2d(x, w, unshared=True)
    with pytest.raises(ValueError, match="6 entries"):
        T.nnet.conv2d(x, T.TensorType("float32", (False,) * 6)(), filter_shape=(2, 3, 3, 3), unshared=True)
    with pytest.raises(ValueError, match="non-negative"):
        T.nnet.conv2d(x, w, border_mode=((1, -2), (0, 0)))
    with pytest.raises(TypeError, match="float dtype"):
        T.nnet.conv2d(T.itensor4("i"), T.itensor4("j"))


def test_ops_pickle_and_carry_theanos_attributes():
    x, w = T.dtensor4("x"), T.dtensor4("w")
    y = T.nnet.conv2d(x, w, border_mode=(1, 2), subsample=(2, 1), filter_dilation=(1, 2), num_groups=1,
                      filter_flip=False)
    op = y.owner.op
    assert isinstance(op, abstract_conv.AbstractConv2d)
    assert op.border_mode == (1, 2) and op.subsample == (2, 1) and op.filter_dilation == (1, 2)
    assert op.filter_flip is False and op.num_groups == 1
    f = hypatia.function([x, w], [y, T.grad(T.sum(y), w)])
    g = pickle.loads(pickle.dumps(f))
    rng = np.random.RandomState(4)
    img, kern = rng.uniform(-1, 1, (1, 2, 6, 6)), rng.uniform(-1, 1, (3, 2, 2, 2))
    for a, b in zip(f(img, kern), g(img, kern)):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_allclose(f(img, kern)[0], np_conv2d(img, kern, (1, 2), (2, 1), False, (1, 2)), rtol=1e-10)


def test_get_conv_output_shape():
    assert abstract_conv.get_conv_output_shape((2, 3, 20, 11), (7, 3, 4, 3), (2, 1), (3, 2), (2, 1)) == (2, 7, 6, 6)
    assert abstract_conv.get_conv_output_shape((2, 3, 5, 5), (7, 3, 3, 3), "full", (1, 1)) == (2, 7, 7, 7)
    assert abstract_conv.get_conv_output_shape((2, 3, 5, 5), (7, 3, 3, 3), "half", (1, 1)) == (2, 7, 5, 5)


def np_conv3d(img, kern, pad=(0, 0, 0), subsample=(1, 1, 1), flip=True, dilation=(1, 1, 1), groups=1):
    """out[n, o, z, y, x] = sum of padded[n, c, z*sd + t*dd, y*sh + i*dh, x*sw + j*dw] * k[o, c, t, i, j]."""
    n, c, d, h, w = img.shape
    o, cg, kd, kh, kw = kern.shape
    k = kern[:, :, ::-1, ::-1, ::-1] if flip else kern
    pd, ph, pw = pad
    x = np.zeros((n, c, d + 2 * pd, h + 2 * ph, w + 2 * pw))
    x[:, :, pd:pd + d, ph:ph + h, pw:pw + w] = img
    sd, sh, sw = subsample
    dd, dh, dw = dilation
    do = (d + 2 * pd - dd * (kd - 1) - 1) // sd + 1
    ho = (h + 2 * ph - dh * (kh - 1) - 1) // sh + 1
    wo = (w + 2 * pw - dw * (kw - 1) - 1) // sw + 1
    out = np.zeros((n, o, do, ho, wo))
    og = o // groups
    for g in range(groups):
        for t in range(kd):
            for i in range(kh):
                for j in range(kw):
                    patch = x[:, g * cg:(g + 1) * cg, t * dd:t * dd + sd * (do - 1) + 1:sd,
                              i * dh:i * dh + sh * (ho - 1) + 1:sh, j * dw:j * dw + sw * (wo - 1) + 1:sw]
                    out[:, g * og:(g + 1) * og] += np.einsum("ncdhw,oc->nodhw", patch,
                                                             k[g * og:(g + 1) * og, :, t, i, j])
    return out


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_conv3d_matches_numpy(dtype):
    rng = np.random.RandomState(5)
    x, w = T.tensor5("x", dtype=dtype), T.tensor5("w", dtype=dtype)
    tol = 1e-4 if dtype == "float32" else 1e-10
    for border, sub, dil, groups, flip in [("valid", 1, 1, 1, True), ("full", (2, 1, 1), 1, 2, False),
                                           ("half", 1, (2, 1, 1), 1, True), ((1, 0, 2), (1, 2, 1), 1, 2, True),
                                           (1, 2, (1, 1, 2), 1, False)]:
        img = rng.uniform(-1, 1, (2, 4, 6, 5, 7)).astype(dtype)
        kern = rng.uniform(-1, 1, (4, 4 // groups, 3, 2, 2)).astype(dtype)
        f = hypatia.function([x, w], T.nnet.conv3d(x, w, border_mode=border, subsample=sub, filter_flip=flip,
                                                   filter_dilation=dil, num_groups=groups))
        dil3 = (dil,) * 3 if isinstance(dil, int) else dil
        kd, kh, kw = kern.shape[2:]
        if border == "valid":
            pad = (0, 0, 0)
        elif border == "full":
            pad = tuple(dl * (k - 1) for dl, k in zip(dil3, (kd, kh, kw)))
        elif border == "half":
            pad = tuple(dl * (k // 2) for dl, k in zip(dil3, (kd, kh, kw)))
        else:
            pad = (border,) * 3 if isinstance(border, int) else border
        want = np_conv3d(img, kern, pad, (sub,) * 3 if isinstance(sub, int) else sub, flip, dil3, groups)
        got = f(img, kern)
        assert got.dtype == dtype and got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol, err_msg=str(border))
        np.testing.assert_allclose(f(np.asfortranarray(img), kern), want, rtol=tol, atol=tol)


def test_conv3d_gradients_and_gradient_functions():
    rng = np.random.RandomState(6)
    img = rng.uniform(-1, 1, (2, 2, 4, 4, 3))
    kern = rng.uniform(-1, 1, (3, 2, 2, 3, 2))
    T.verify_grad(lambda a, b: T.nnet.conv3d(a, b, border_mode=(1, 0, 1), subsample=(2, 1, 1)), [img, kern], rng=rng)
    x, w, g = T.dtensor5("x"), T.dtensor5("w"), T.dtensor5("g")
    kern = rng.uniform(-1, 1, (3, 2, 3, 3, 1))  # odd sizes: 'half' keeps the image's size
    y = T.nnet.conv3d(x, w, border_mode="half")
    top = rng.uniform(-1, 1, (2, 3, 4, 4, 3))
    auto = hypatia.function([x, w, g], T.grad(T.sum(y * g), [x, w]))(img, kern, top)
    gi = hypatia.function([w, g], T.nnet.conv3d_grad_wrt_inputs(g, w, img.shape, border_mode="half"))(kern, top)
    gw = hypatia.function([x, g], T.nnet.conv3d_grad_wrt_weights(x, g, kern.shape, border_mode="half"))(img, top)
    np.testing.assert_allclose(gi, auto[0], rtol=1e-10)
    np.testing.assert_allclose(gw, auto[1], rtol=1e-10)
    op = y.owner.op
    assert isinstance(op, abstract_conv.AbstractConv3d)
    assert op.border_mode == "half" and op.subsample == (1, 1, 1)
    assert pickle.loads(pickle.dumps(op)) == op
    with pytest.raises(ValueError, match="three ints"):
        T.nnet.conv3d(x, w, subsample=(1, 1))


def np_conv2d_unshared(img, kern, border="valid", subsample=(1, 1), flip=True, dilation=(1, 1), groups=1):
    """Theano's unshared convolution: out[n, o, y, x] = sum over c, i, j of
    padded[n, c, y*sh + i*dh, x*sw + j*dw] * k[o, y, x, c, i, j] (k flipped in i, j when flip)."""
    n, c, h, w = img.shape
    o, ho_k, wo_k, cg, kh, kw = kern.shape
    dh, dw = dilation
    sh, sw = subsample
    if border == "valid":
        (pt, pb), (pl, pr) = (0, 0), (0, 0)
    elif border == "full":
        (pt, pb), (pl, pr) = (dh * (kh - 1),) * 2, (dw * (kw - 1),) * 2
    elif border == "half":
        (pt, pb), (pl, pr) = (dh * (kh // 2),) * 2, (dw * (kw // 2),) * 2
    else:
        (pt, pb), (pl, pr) = [(v, v) if np.isscalar(v) else tuple(v) for v in border]
    k = kern[..., ::-1, ::-1] if flip else kern
    x = np.zeros((n, c, h + pt + pb, w + pl + pr))
    x[:, :, pt:pt + h, pl:pl + w] = img
    ho = (h + pt + pb - dh * (kh - 1) - 1) // sh + 1
    wo = (w + pl + pr - dw * (kw - 1) - 1) // sw + 1
    assert (ho, wo) == (ho_k, wo_k)
    out = np.zeros((n, o, ho, wo))
    og = o // groups
    for oc in range(o):
        g = oc // og
        for yy in range(ho):
            for xx in range(wo):
                patch = x[:, g * cg:(g + 1) * cg, yy * sh:yy * sh + dh * (kh - 1) + 1:dh,
                          xx * sw:xx * sw + dw * (kw - 1) + 1:dw]
                out[:, oc, yy, xx] = np.einsum("ncij,cij->n", patch, k[oc, yy, xx])
    return out


def _out_size(n, k, border, s, d):
    if border == "valid":
        p = 0
    elif border == "full":
        p = 2 * d * (k - 1)
    elif border == "half":
        p = 2 * d * (k // 2)
    else:
        p = sum(border) if not np.isscalar(border) else 2 * border
    return (n + p - d * (k - 1) - 1) // s + 1


UNSHARED_GRID = [("valid", (1, 1), (1, 1), 1, True), ("full", (1, 1), (1, 1), 1, False),
                 ("half", (2, 1), (1, 1), 2, True), (((1, 0), (2, 1)), (1, 2), (2, 1), 1, True),
                 ((1, 2), (2, 2), (1, 2), 2, False), ("valid", (1, 1), (2, 2), 2, False)]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_unshared_conv2d_matches_numpy_and_its_gradients(dtype):
    rng = np.random.RandomState(3)
    x, w = T.tensor4("x", dtype=dtype), T.TensorType(dtype, (False,) * 6)("w")
    tol = 2e-4 if dtype == "float32" else 1e-10
    for border, sub, dil, groups, flip in UNSHARED_GRID:
        img = rng.uniform(-1, 1, (2, 4, 7, 6)).astype(dtype)
        bh, bw = (border, border) if isinstance(border, str) else border
        ho, wo = _out_size(7, 3, bh, sub[0], dil[0]), _out_size(6, 2, bw, sub[1], dil[1])
        kern = rng.uniform(-1, 1, (6, ho, wo, 4 // groups, 3, 2)).astype(dtype)
        kw = dict(border_mode=border, subsample=sub, filter_flip=flip, filter_dilation=dil, num_groups=groups)
        y = T.nnet.conv2d(x, w, unshared=True, **kw)
        top = T.tensor4("top", dtype=dtype)
        cost = (y * top).sum()
        gi = abstract_conv.conv2d_grad_wrt_inputs(top, w, img.shape, kern.shape, unshared=True, **kw)
        gw = abstract_conv.conv2d_grad_wrt_weights(x, top, kern.shape, unshared=True, **kw)
        f = hypatia.function([x, w, top], [y, T.grad(cost, x), T.grad(cost, w), gi, gw])
        want = np_conv2d_unshared(img, kern, border, sub, flip, dil, groups)
        tv = rng.uniform(-1, 1, want.shape).astype(dtype)
        out, gx, gk, gi_v, gw_v = f(img, kern, tv)
        msg = f"{border} {sub} {dil} {groups} {flip}"
        np.testing.assert_allclose(out, want, rtol=tol, atol=tol, err_msg=msg)
        # The adjoint identities: <conv(x, k), t> is bilinear, so its gradients are exact adjoints.
        np.testing.assert_allclose(np.vdot(gx, img), np.vdot(want, tv), rtol=10 * tol, err_msg=msg)
        np.testing.assert_allclose(np.vdot(gk, kern), np.vdot(want, tv), rtol=10 * tol, err_msg=msg)
        np.testing.assert_allclose(gi_v, gx, rtol=tol, atol=tol, err_msg=msg)
        np.testing.assert_allclose(gw_v, gk, rtol=tol, atol=tol, err_msg=msg)
        assert gi_v.shape == img.shape and gw_v.shape == kern.shape


def test_unshared_conv2d_verify_grad_second_order_and_causal():
    rng = np.random.RandomState(4)
    img = rng.uniform(-1, 1, (2, 2, 5, 5))
    kern = rng.uniform(-1, 1, (3, 3, 3, 2, 3, 3))
    hypatia.gradient.verify_grad(lambda a, b: T.nnet.conv2d(a, b, unshared=True), [img, kern], rng=rng)
    hypatia.gradient.verify_grad(
        lambda a, b: T.grad((T.nnet.conv2d(a, b, unshared=True, border_mode="half") ** 2).sum(), a),
        [img, rng.uniform(-1, 1, (3, 5, 5, 2, 3, 3))], rng=rng)
    # Non-contiguous operands (transposed views) give the same values.
    x, w = T.dtensor4("x"), T.TensorType("float64", (False,) * 6)("w")
    f = hypatia.function([x, w], T.nnet.conv2d(x, w, unshared=True))
    xt = np.ascontiguousarray(img.transpose(0, 1, 3, 2)).transpose(0, 1, 3, 2)
    np.testing.assert_allclose(f(xt, np.asfortranarray(kern)), np_conv2d_unshared(img, kern))
    # causal_conv1d with a filter per output step: (out channels, length, in channels, width).
    x3, w4 = T.dtensor3("x3"), T.dtensor4("w4")
    seq = rng.uniform(-1, 1, (2, 3, 6))
    k4 = rng.uniform(-1, 1, (4, 6, 3, 2))
    g = hypatia.function([x3, w4], abstract_conv.causal_conv1d(x3, w4, k4.shape, unshared=True))
    padded = np.concatenate([np.zeros((2, 3, 1)), seq], axis=2)
    want = np.einsum("ncti,otci->not", np.stack([padded[:, :, t:t + 2] for t in range(6)], axis=2),
                     k4[..., ::-1])
    np.testing.assert_allclose(g(seq, k4), want, rtol=1e-12)
    # A filter whose output size does not match is an error, not a wrong result.
    with pytest.raises(Exception, match="shape|size|batch"):
        f(img, rng.uniform(-1, 1, (3, 2, 3, 2, 3, 3)))


def test_seed_004s_gpucorrmm_ops_are_correlations_with_their_gradient_ops():
    # Theano's GpuCorrMM (no kernel flip) and GpuCorrMM_gradWeights / _gradInputs, with the
    # gradients' spatial sizes inferred where the other shapes fix them.
    from hypatia.sandbox.cuda.blas import GpuCorrMM, GpuCorrMM_gradInputs, GpuCorrMM_gradWeights

    rng = np.random.RandomState(4)
    x, w, t = T.dtensor4("x"), T.dtensor4("w"), T.dtensor4("t")
    img = rng.uniform(-1, 1, (2, 3, 7, 6))
    kern = rng.uniform(-1, 1, (4, 3, 3, 2))
    for border, sub, infer in [("valid", (1, 1), True), ("full", (1, 1), True), ((1, 2), (1, 1), True),
                               (1, (1, 1), True), ("half", (1, 1), False), ("valid", (2, 1), False)]:
        op = GpuCorrMM(border_mode=border, subsample=sub)
        y = op(x, w)
        want = np_conv2d(img, kern, border if not isinstance(border, int) else (border, border), sub, flip=False)
        f = hypatia.function([x, w], y)
        np.testing.assert_allclose(f(img, kern), want, rtol=1e-12, err_msg=str(op))
        top = rng.uniform(-1, 1, want.shape)
        gx, gw = T.grad(T.sum(y * t), [x, w])
        shapes = (None, None) if infer else ((7, 6), (3, 2))
        gw2 = GpuCorrMM_gradWeights(border_mode=border, subsample=sub)(x, t, shape=shapes[1])
        gx2 = GpuCorrMM_gradInputs(border_mode=border, subsample=sub)(w, t, shape=shapes[0])
        a, b, c, d = hypatia.function([x, w, t], [gx, gw, gx2, gw2])(img, kern, top)
        np.testing.assert_allclose(c, a, rtol=1e-12, err_msg=str(op))
        np.testing.assert_allclose(d, b, rtol=1e-12, err_msg=str(op))
        # The weight gradient by its definition: sum over batch and positions of top * patch.
        if sub == (1, 1) and border == "valid":
            dw = np.einsum("nohw,nchw->oc", top, img[:, :, 0:5, 0:5])[:, :, None, None]
            np.testing.assert_allclose(d[:, :, :1, :1], dw, rtol=1e-12)
    hypatia.gradient.verify_grad(lambda xx, ww: GpuCorrMM(border_mode="half")(xx, ww), [img, kern], rng=rng)
    # The old sandbox's pad, the op's text, equality, and what cannot be inferred.
    assert GpuCorrMM(pad=(1, 2)) == GpuCorrMM(border_mode=(1, 2)) != GpuCorrMM()
    assert str(GpuCorrMM("valid", (1, 1))) == "GpuCorrMM{valid, (1, 1), (1, 1), 1}"
    with pytest.raises(ValueError, match=r"GpuCorrMM_gradWeights: shape \(the kernel's rows and cols\) must be given"):
        GpuCorrMM_gradWeights(border_mode="half")(x, t)
    with pytest.raises(ValueError, match="give the padding as border_mode or as pad, not both"):
        GpuCorrMM(border_mode="full", pad=1)
    with pytest.raises(ValueError, match="border_mode must be 'valid', 'full', 'half'"):
        GpuCorrMM(border_mode="same")


def _theano_bilinear_reference(x, r):
    """Theano 1.0's construction of bilinear_upsampling in numpy: each image's edge rows and
    columns repeated once, then a transposed convolution with the 1-d bilinear kernel (stride r,
    padding 2r - (r - 1) // 2 - 1) along rows, then along columns."""
    k = np.concatenate([np.arange(1, r + 1), np.arange(r - 1, 0, -1)]) / r
    pad = 2 * r - (r - 1) // 2 - 1

    def up(a, axis):
        a = np.moveaxis(a, axis, -1)
        p = np.concatenate([a[..., :1], a, a[..., -1:]], axis=-1)
        n, length = a.shape[-1], a.shape[-1] * r
        out = np.zeros(a.shape[:-1] + (length,))
        for i in range(n + 2):
            for m in range(2 * r - 1):
                j = i * r + m - pad
                if 0 <= j < length:
                    out[..., j] += p[..., i] * k[m]
        return np.moveaxis(out, -1, axis)

    return up(up(x, 2), 3)


@pytest.mark.parametrize("ratio", [1, 2, 3, 4, 5])
def test_bilinear_upsampling_is_theanos_construction(ratio):
    from hypatia.tensor.nnet.abstract_conv import bilinear_upsampling
    rng = np.random.RandomState(ratio)
    x = T.dtensor4("x")
    f = hypatia.function([x], bilinear_upsampling(x, ratio, batch_size=2, num_input_channels=3))
    for shape in [(2, 3, 4, 5), (1, 1, 1, 3), (1, 2, 3, 1)]:
        a = rng.rand(*shape)
        np.testing.assert_allclose(f(a), _theano_bilinear_reference(a, ratio), rtol=1e-12, atol=1e-12)
    # Its gradient is the transposed map (verify_grad against finite differences).
    hypatia.gradient.verify_grad(lambda v: bilinear_upsampling(v, ratio), [rng.rand(1, 2, 3, 4)],
                                 rng=np.random.RandomState(0))


def test_bilinear_upsampling_float32_and_errors():
    from hypatia.tensor.nnet.abstract_conv import bilinear_kernel_1D, bilinear_kernel_2D, bilinear_upsampling
    x = T.ftensor4("x")
    a = np.random.RandomState(1).rand(2, 1, 3, 3).astype(np.float32)
    out = hypatia.function([x], T.nnet.bilinear_upsampling(x, 2))(a)
    assert out.dtype == np.float32 and out.shape == (2, 1, 6, 6)
    np.testing.assert_allclose(out, _theano_bilinear_reference(a.astype(np.float64), 2), rtol=1e-6)
    np.testing.assert_allclose(bilinear_kernel_1D(3).eval(), np.array([1, 2, 3, 2, 1]) / 3.0)
    np.testing.assert_allclose(bilinear_kernel_2D(2, normalize=False).eval(), np.outer([1, 2, 1], [1, 2, 1]))
    with pytest.raises(NotImplementedError, match="frac_ratio"):
        bilinear_upsampling(x, frac_ratio=(3, 2))
    with pytest.raises(ValueError, match="positive int"):
        bilinear_upsampling(x, 1.5)
    with pytest.raises(TypeError, match="4-d"):
        bilinear_upsampling(T.fmatrix(), 2)
