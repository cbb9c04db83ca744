"""The softmax family on extreme logits (huge, tiny, equal, -inf, +inf, NaN) in float32 and
float64, through hypatia.function in FAST_RUN, FAST_COMPILE and NONE, against a numpy longdouble
reference computed the careful way (the max subtracted first, the max's own term kept out of the
sum, log1p of the rest): softmax, log_softmax, log(softmax) (rewritten to log_softmax in FAST_RUN),
softmax with bias, logsumexp, the cross-entropies of a softmax, and their gradients.

Before: log_softmax of float32 [1e5, 1e5] was -0.6953 (exact -0.6931: the kernel rounded
m + log(sum) to float32 before subtracting it) and of float64 [1e16, 1e16] it was 0."""
import numpy as np
import pytest

import hypatia
import hypatia.tensor as T

MODES = ["FAST_RUN", "FAST_COMPILE", "NONE"]
FLOATS = ["float32", "float64"]
LD = np.longdouble

ROWS = [
    [1e5, 1e5],
    [1e16, 1e16],
    [1e16, 1e16 - 4, 1e16 + 2],
    [0.0, -40.0],
    [0.0, -80.0, -700.0, -745.5],
    [1e-30, 0.0, -1e-30],
    [1e-300, -1e-300, 5e-324],
    [3.0, 3.0, 3.0, 3.0],
    [-np.inf, 2.0, -np.inf, 1.0],
    [-3e38, 3e38],
    [-104.0, 0.0, -88.0, -87.5, 1.0],
    [0.1, 0.2, 0.3, 13.0, 12.9, 12.99, 7.0, -55.5],
    # Rows without a defined result: NaN throughout.
    [-np.inf, -np.inf],
    [np.inf, 1.0, 2.0],
    [1.0, np.nan, 2.0],
]


def exact(row, log):
    """softmax or log_softmax of one row in long double: a row with a NaN, a +inf or no finite
    logit is NaN throughout; -inf logits give 0 and -inf."""
    x = np.asarray(row, dtype=LD)
    if np.isnan(x).any() or not np.isfinite(x.max()):
        return np.full(x.shape, np.nan, dtype=LD)
    k = int(np.argmax(x))
    d = x - x[k]
    e = np.exp(d)
    rest = np.sum(np.delete(e, k))  # e[k] is 1: summed apart, rest is not rounded into it
    return d - np.log1p(rest) if log else e / (1 + rest)


def ulps(got, want, dtype):
    """Distance in units in the last place of dtype at want (0 for equal values and for NaN/NaN)."""
    got = np.asarray(got, dtype=LD)
    want = np.asarray(want, dtype=LD)
    with np.errstate(over="ignore"):
        w = want.astype(dtype)  # the correctly rounded value (inf where want overflows dtype)
    same = (got == w.astype(LD)) | (np.isnan(got) & np.isnan(want))
    spacing = np.spacing(np.abs(w)).astype(LD)
    with np.errstate(invalid="ignore"):
        d = np.abs(got - want) / spacing
    d = np.where(same, 0, d)
    return np.where(np.isnan(d), np.inf, d)


def matrix_of(row, dtype):
    """Two copies of the row as a matrix, in dtype (the reference reads the dtype's values)."""
    a = np.asarray([row, row], dtype=np.float64)
    with np.errstate(over="ignore"):
        return a.astype(dtype)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("mode", MODES)
def test_softmax_and_log_softmax_within_a_few_ulp(dtype, mode):
    x = T.matrix("x", dtype=dtype)
    outs = [T.nnet.softmax(x), T.nnet.log_softmax(x), T.nnet.softmax(x, axis=0), T.nnet.log_softmax(x, axis=0)]
    if mode == "FAST_RUN":
        outs.append(T.log(T.nnet.softmax(x)))  # the stabilize rewrite makes it log_softmax
    f = hypatia.function([x], outs, mode=mode)
    for row in ROWS:
        a = matrix_of(row, dtype)
        held = a[0].astype(LD)
        r = f(a)
        for name, got, want in [("softmax", r[0][0], exact(held, False)), ("log_softmax", r[1][0], exact(held, True))] + (
                [("log(softmax)", r[4][1], exact(held, True))] if mode == "FAST_RUN" else []):
            assert got.dtype == np.dtype(dtype)
            u = ulps(got, want, dtype)
            assert u.max() <= 4, (name, dtype, mode, row, got, want.astype(np.float64), u)
        # Along axis 0 of the transpose: the column path of the kernels.
        ft = hypatia.function([x], [T.nnet.softmax(x, axis=0), T.nnet.log_softmax(x, axis=0)], mode=mode)
        col = ft(np.ascontiguousarray(a.T))
        assert ulps(col[0][:, 0], exact(held, False), dtype).max() <= 4, (dtype, mode, row, col[0][:, 0])
        assert ulps(col[1][:, 0], exact(held, True), dtype).max() <= 4, (dtype, mode, row, col[1][:, 0])


def exact_rows(a, log):
    """exact() of every row of a, vectorized (long double)."""
    x = a.astype(LD)
    k = np.argmax(x, axis=1)
    d = x - x[np.arange(len(x)), k][:, None]
    e = np.exp(d)
    e[np.arange(len(x)), k] = 0
    rest = e.sum(axis=1)[:, None]
    return d - np.log1p(rest) if log else np.exp(d) / (1 + rest)


@pytest.mark.parametrize("dtype", FLOATS)
def test_long_rows_within_a_few_ulp(dtype):
    """Rows long enough for the kernels' SIMD loops (the short ROWS above run mostly in the padded
    last vector), with logits spread so that x - max is rounded (its error must reach the exp) and
    results run from 1 down to the edge of the normal range and below it: softmax and log_softmax
    along rows and along columns, within 4 ulp of the long double reference."""
    rng = np.random.default_rng(7)
    lo = -110.0 if dtype == "float32" else -760.0  # past the smallest normal exp result
    rows = [rng.uniform(-8, 8, 1031),  # a typical row, not a multiple of any vector length
            rng.uniform(lo, 0, 1031),  # every magnitude of exp down to underflow
            rng.uniform(lo / 2, 0, 1031) + 1e4,  # large logits: x - max rounded in every lane
            np.concatenate([[0.0], rng.uniform(-1e-3, 0, 63)]),  # near ties
            rng.normal(0, 30, 1031)]
    x = T.matrix("x", dtype=dtype)
    f = hypatia.function([x], [T.nnet.softmax(x), T.nnet.log_softmax(x)])
    ft = hypatia.function([x], [T.nnet.softmax(x, axis=0), T.nnet.log_softmax(x, axis=0)])
    for i, row in enumerate(rows):
        m = np.asarray([row], dtype=dtype)
        want_s, want_l = exact_rows(m, False), exact_rows(m, True)
        for got_s, got_l, where in [(*f(m), "rows"), (*(r.T for r in ft(np.ascontiguousarray(m.T))), "columns")]:
            us, ul = ulps(got_s, want_s, dtype), ulps(got_l, want_l, dtype)
            assert us.max() <= 4, ("softmax", where, dtype, i, us.max(), int(us.argmax()))
            assert ul.max() <= 4, ("log_softmax", where, dtype, i, ul.max(), int(ul.argmax()))


def test_the_issue_values_exactly():
    f32 = T.fvector("f32")
    got = hypatia.function([f32], T.nnet.log_softmax(f32, axis=-1))(np.array([1e5, 1e5], dtype="float32"))
    assert got[0] == np.float32(-np.log(2.0))
    f64 = T.dvector("f64")
    got = hypatia.function([f64], T.nnet.log_softmax(f64, axis=-1))(np.array([1e16, 1e16]))
    assert got[0] == -np.log(2.0)


def exact_logsumexp(row):
    x = np.asarray(row, dtype=LD)
    if np.isnan(x).any():
        return LD(np.nan)
    m = x.max()
    if np.isinf(m):
        return m
    k = int(np.argmax(x))
    return m + np.log1p(np.sum(np.delete(np.exp(x - m), k)))


@pytest.mark.parametrize("dtype", FLOATS)
def test_logsumexp_rewrite(dtype):
    """log(sum(exp(x), axis)) in FAST_RUN: the stabilize rewrite gives a few ulp of the exact
    value on every row (NONE and FAST_COMPILE compute it as written: they overflow)."""
    x = T.matrix("x", dtype=dtype)
    f = hypatia.function([x], T.log(T.sum(T.exp(x), axis=1)), mode="FAST_RUN")
    rows = [r for r in ROWS if len(r) == 2 and r != [0.0, -40.0]] + [[np.inf, np.inf], [-np.inf, 0.0]]
    for row in rows:
        a = matrix_of(row, dtype)
        got = f(a)[0]
        want = exact_logsumexp(a[0].astype(LD))
        assert ulps(got, want, dtype) <= 4, (dtype, row, got, want)
    # A result much smaller than 1 is accurate to about eps in absolute terms (not to its own
    # ulp: the rewrite keeps the fused max + log(sum(exp(x - max))) form, see rewrite/stabilize.cpp).
    got = f(np.array([[0.0, -40.0]], dtype=dtype))[0]
    assert abs(got - np.exp(-40.0)) <= np.finfo(dtype).eps, got


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("mode", MODES)
def test_crossentropy_of_softmax_is_stable(dtype, mode):
    """categorical_crossentropy(softmax(x), labels or one-hot rows) and softmax_with_bias stay
    finite and exact where the softmax underflows, in every mode (the builders make the stable
    form), and their gradients are softmax - onehot."""
    x = T.matrix("x", dtype=dtype)
    b = T.vector("b", dtype=dtype)
    y = T.lvector("y")
    t = T.matrix("t", dtype=dtype)
    ce_labels = T.nnet.categorical_crossentropy(T.nnet.softmax(x), y)
    ce_onehot = T.nnet.categorical_crossentropy(T.nnet.softmax(x), t)
    swb = T.nnet.softmax_with_bias(x, b)
    g = T.grad(ce_labels.sum(), x)
    g1 = T.grad(ce_onehot.sum(), x)
    f = hypatia.function([x, b, y, t], [ce_labels, ce_onehot, swb, g, g1], mode=mode)
    a = np.array([[1e4, -1e4, 0.0], [1e5, 1e5, 1e5 - 1.0]], dtype=dtype)
    labels = np.array([1, 2])
    onehot = np.eye(3, dtype=dtype)[labels]
    bias = np.array([0.0, 0.0, 1.0], dtype=dtype)
    r = f(a, bias, labels, onehot)
    held = a.astype(LD)
    want = np.array([-exact(held[i], True)[labels[i]] for i in range(2)])
    for got in (r[0], r[1]):
        assert np.isfinite(got).all(), got
        assert ulps(got, want, dtype).max() <= 4, (got, want)
    withbias = (a + bias).astype(LD)
    assert ulps(r[2], np.array([exact(withbias[i], False) for i in range(2)]), dtype).max() <= 4
    sm = np.array([exact(held[i], False) for i in range(2)])
    want_g = sm - np.eye(3)[labels]
    for got in (r[3], r[4]):
        assert np.isfinite(got).all(), got
        np.testing.assert_allclose(got.astype(np.float64), want_g.astype(np.float64),
                                   atol=4 * np.finfo(dtype).eps)


@pytest.mark.parametrize("mode", MODES)
def test_negative_label_is_an_error_in_every_form(mode):
    """The stable form indexes log_softmax by the labels: a negative label used to count from the
    end there, while CrossentropyCategorical1Hot (and Theano) reject it."""
    x = T.dmatrix("x")
    y = T.lvector("y")
    f = hypatia.function([x, y], T.nnet.categorical_crossentropy(T.nnet.softmax(x), y), mode=mode)
    with pytest.raises(IndexError, match="label -1 at row 0"):
        f(np.zeros((2, 3)), np.array([-1, 0]))
    with pytest.raises(IndexError):
        f(np.zeros((2, 3)), np.array([0, 3]))
    np.testing.assert_allclose(f(np.zeros((2, 3)), np.array([2, 0])), [np.log(3.0)] * 2, rtol=1e-15)


@pytest.mark.parametrize("fn", ["softmax", "log_softmax", "softmax0", "logsumexp", "ce"])
def test_gradients_at_large_logits(fn):
    """verify_grad where the values are finite: logits 1e3 apart and near 1e5."""
    rng = np.random.RandomState(7)
    labels = np.array([0, 2, 1])
    build = {
        "softmax": lambda v: T.nnet.softmax(v),
        "log_softmax": lambda v: T.nnet.log_softmax(v),
        "softmax0": lambda v: T.nnet.softmax(v, axis=0),
        "logsumexp": lambda v: T.log(T.sum(T.exp(v), axis=1)),
        "ce": lambda v: T.nnet.categorical_crossentropy(T.nnet.softmax(v), T.constant(labels)),
    }[fn]
    # The gradient of a hand-written log(sum(exp(x))) is built before the rewrite, as
    # exp(x) * (1 / sum(exp(x))): it overflows at large logits, so only base 0 is checked there.
    for base in [0.0] if fn == "logsumexp" else [0.0, 1e5]:
        # Logits a few units apart (where the derivatives are not all 0 or 1) on top of a large base.
        pt = base + rng.uniform(-3, 3, size=(3, 4))
        hypatia.gradient.verify_grad(build, [pt], rng=rng, mode="FAST_RUN")
