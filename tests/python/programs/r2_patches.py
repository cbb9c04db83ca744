"""Patches with theano.tensor.nnet.neighbours, as the sparse-coding and local-contrast-normalization
tutorials used them: images2neibs in every mode against a numpy reference (valid, ignore_borders,
half, full, wrap_centered; steps smaller and larger than the patch), per-patch normalization put
back with neibs2images, a patch dictionary learned by gradient descent on a reconstruction +
L1 cost (checked against numpy gradients and verify_grad), a symbolic patch shape, patches inside a
scan, and the refusal of an image the patches do not tile."""
import sys

import numpy as np

import hypatia as theano
import hypatia.tensor as T
from hypatia.tensor.nnet.neighbours import images2neibs, neibs2images

FAIL = []


def check(c, m):
    if not c:
        FAIL.append(m)
        print("FAIL:", m)


def close(a, b, m, rtol=1e-7, atol=1e-9):
    a, b = np.asarray(a), np.asarray(b)
    check(a.shape == b.shape and np.allclose(a, b, rtol=rtol, atol=atol),
          "%s: %s vs %s maxdiff %s" % (m, a.shape, b.shape, np.abs(a - b).max() if a.shape == b.shape else '-'))


def attempt(name, fn):
    try:
        fn()
    except Exception as e:
        check(False, "%s raised %s: %s" % (name, type(e).__name__, str(e).splitlines()[0][:300] if str(e) else ''))


rng = np.random.RandomState(21)


def ref_neibs(x, ws, st, mode):
    """Theano 1.0's Images2Neibs, written with loops."""
    b, c, h, w = x.shape
    if mode == 'half':
        x = np.pad(x, ((0, 0), (0, 0), (ws[0] // 2,) * 2, (ws[1] // 2,) * 2))
    elif mode == 'full':
        x = np.pad(x, ((0, 0), (0, 0), (ws[0] - 1,) * 2, (ws[1] - 1,) * 2))
    out = []
    if mode == 'wrap_centered':
        gr, gc = -(-h // st[0]), -(-w // st[1])
        for bi in range(b):
            for ci in range(c):
                for a in range(gr):
                    for q in range(gc):
                        out.append([x[bi, ci, (i + a * st[0] - ws[0] // 2) % h, (j + q * st[1] - ws[1] // 2) % w]
                                    for i in range(ws[0]) for j in range(ws[1])])
        return np.array(out)
    H, W = x.shape[2:]
    nr, nc = (H - ws[0]) // st[0] + 1, (W - ws[1]) // st[1] + 1
    for bi in range(b):
        for ci in range(c):
            for i in range(nr):
                for j in range(nc):
                    out.append(x[bi, ci, i * st[0]:i * st[0] + ws[0], j * st[1]:j * st[1] + ws[1]].ravel())
    return np.array(out)


def t_modes():
    x = T.tensor4('x')
    xv = rng.rand(2, 3, 8, 8)
    for ws, st, mode in [((2, 2), None, 'valid'), ((3, 3), (1, 1), 'valid'), ((4, 4), (2, 2), 'valid'),
                         ((3, 3), (2, 2), 'ignore_borders'), ((4, 2), (2, 3), 'ignore_borders'),
                         ((3, 3), (1, 1), 'half'), ((4, 5), (2, 1), 'half'), ((2, 2), (1, 1), 'full'),
                         ((3, 3), (1, 1), 'wrap_centered'), ((3, 5), (2, 2), 'wrap_centered')]:
        r = theano.function([x], images2neibs(x, ws, st, mode=mode))(xv)
        close(r, ref_neibs(xv, ws, st or ws, mode), "images2neibs %s %s step %s" % (mode, ws, st))
    # a symbolic patch shape
    ns = T.lvector('ns')
    close(theano.function([x, ns], images2neibs(x, ns))(xv, np.array([2, 2])), ref_neibs(xv, (2, 2), (2, 2), 'valid'),
          "symbolic neib_shape")
    # an image the patches do not tile is refused when the function runs
    try:
        theano.function([x], images2neibs(x, (3, 3)))(xv)
        check(False, "8x8 image cut in 3x3 'valid' patches accepted")
    except (AssertionError, ValueError) as e:
        check('images2neibs' in str(e), "error names images2neibs: %s" % str(e)[:100])


attempt("modes", t_modes)


def t_local_normalization():
    x = T.tensor4('x')
    ne = images2neibs(x, (4, 4))
    mu = ne.mean(axis=1, keepdims=True)
    sd = T.sqrt(((ne - mu) ** 2).mean(axis=1, keepdims=True) + 1e-3)
    out = neibs2images((ne - mu) / sd, (4, 4), x.shape)
    f = theano.function([x], out)
    xv = rng.rand(2, 3, 8, 12)
    r = xv.reshape(2, 3, 2, 4, 3, 4)
    m = r.mean(axis=(3, 5), keepdims=True)
    s = np.sqrt(((r - m) ** 2).mean(axis=(3, 5), keepdims=True) + 1e-3)
    close(f(xv), ((r - m) / s).reshape(xv.shape), "per-patch normalization put back")
    # neibs2images inverts images2neibs for non-overlapping patches
    close(theano.function([x], neibs2images(images2neibs(x, (2, 3)), (2, 3), x.shape))(xv), xv, "round trip")
    # ignore_borders: the uncovered border comes back zero
    y = T.tensor4('y')
    yv = rng.rand(1, 2, 7, 7)
    back = theano.function([y], neibs2images(images2neibs(y, (3, 3), mode='ignore_borders'), (3, 3), y.shape,
                                             mode='ignore_borders'))(yv)
    ref = np.zeros_like(yv)
    ref[:, :, :6, :6] = yv[:, :, :6, :6]
    close(back, ref, "ignore_borders round trip")
    # gradient of the normalization (finite differences)
    theano.gradient.verify_grad(
        lambda im: neibs2images((images2neibs(im, (2, 2)) - images2neibs(im, (2, 2)).mean(axis=1, keepdims=True)) ** 2,
                                (2, 2), im.shape), [rng.rand(1, 2, 4, 4)], rng=rng)


attempt("local normalization", t_local_normalization)


def t_dictionary_learning():
    x = T.tensor4('x')
    patches = images2neibs(x, (3, 3), (1, 1))          # overlapping patches
    D = theano.shared(rng.randn(9, 4) * 0.3, name='D')
    codes = T.dot(patches, D)
    recon = T.dot(codes, D.T)
    lam = 0.05
    cost = ((recon - patches) ** 2).sum(axis=1).mean() + lam * abs(codes).sum(axis=1).mean()
    gD, gx = T.grad(cost, [D, x])
    train = theano.function([x], [cost, gD, gx], updates=[(D, D - 0.05 * gD)])
    xv = rng.rand(2, 1, 6, 6)
    P = ref_neibs(xv, (3, 3), (1, 1), 'valid')
    n = P.shape[0]
    Dn = D.get_value().copy()
    costs = []
    for it in range(10):
        c, g, gxv = train(xv)
        C = P @ Dn
        R = C @ Dn.T - P
        close(c, (R ** 2).sum(1).mean() + lam * np.abs(C).sum(1).mean(), "sparse-coding cost at step %d" % it)
        dR = 2 * R / n
        dC = dR @ Dn + lam * np.sign(C) / n
        gref = R.T @ (2 * C / n) + P.T @ dC
        close(g, gref, "dictionary gradient at step %d" % it)
        if it == 0:
            # the image gradient: each pixel gathers from every patch it lies in
            dP = dC @ Dn.T - dR
            gim = np.zeros_like(xv)
            k = 0
            for bi in range(2):
                for i in range(4):
                    for j in range(4):
                        gim[bi, 0, i:i + 3, j:j + 3] += dP[k].reshape(3, 3)
                        k += 1
            close(gxv, gim, "image gradient through overlapping patches")
        Dn = Dn - 0.05 * g
        costs.append(float(c))
    close(D.get_value(), Dn, "dictionary after training")
    check(costs[-1] < costs[0], "cost falls: %r" % costs[::3])
    theano.gradient.verify_grad(lambda im: (images2neibs(im, (3, 3), (2, 2), mode='half') ** 2).sum(),
                                [rng.rand(1, 1, 5, 5)], rng=rng)


attempt("dictionary learning", t_dictionary_learning)


def t_patches_in_scan():
    ims = T.tensor3('ims')
    pp, _ = theano.scan(lambda im: images2neibs(im.dimshuffle('x', 'x', 0, 1), (2, 2)).sum(axis=1), sequences=ims)
    iv = np.arange(32.).reshape(2, 4, 4)
    ref = np.array([ref_neibs(im[None, None], (2, 2), (2, 2), 'valid').sum(1) for im in iv])
    close(theano.function([ims], pp)(iv), ref, "patch sums in a scan")
    close(theano.function([ims], T.grad((pp ** 2).sum(), ims))(np.ones((2, 4, 4))), np.full((2, 4, 4), 8.),
          "gradient of patches in a scan")


attempt("patches in scan", t_patches_in_scan)

print("FAILED" if FAIL else "OK", len(FAIL))
sys.exit(1 if FAIL else 0)
