"""hypatia.tensor.nlinalg / slinalg against numpy (values, float32 and float64), gradients by
verify_grad, the rewrites that avoid explicit inverses, errors, pickling."""
import pickle

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import hypatia
import hypatia.tensor as T
from hypatia.tensor import nlinalg, slinalg

RNG = np.random.default_rng(1234)


def well(n, dtype="float64", shift=None):
    a = RNG.uniform(-1, 1, (n, n)) + (n if shift is None else shift) * np.eye(n)
    return a.astype(dtype)


def spd(n, dtype="float64"):
    m = RNG.uniform(-1, 1, (n, n))
    return (m @ m.T + n * np.eye(n)).astype(dtype)


def sym(n, dtype="float64"):
    m = RNG.uniform(-1, 1, (n, n))
    return ((m + m.T) / 2).astype(dtype)


def run(fn, *args):
    xs = [T.tensor(dtype=str(a.dtype), broadcastable=(False,) * a.ndim) for a in args]
    out = fn(*xs)
    outs = list(out) if isinstance(out, (tuple, list)) else out
    return hypatia.function(xs, outs)(*args)


def tol(dtype):
    return dict(rtol=2e-4, atol=2e-4) if dtype == "float32" else dict(rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_values_match_numpy(dtype):
    a, s, p = well(5, dtype), sym(5, dtype), spd(5, dtype)
    r = RNG.uniform(-1, 1, (6, 4)).astype(dtype)
    b = RNG.uniform(-1, 1, (5, 3)).astype(dtype)
    t = tol(dtype)
    np.testing.assert_allclose(run(nlinalg.matrix_inverse, a), np.linalg.inv(a), **t)
    np.testing.assert_allclose(run(nlinalg.det, a), np.linalg.det(a), **t)
    np.testing.assert_allclose(run(nlinalg.pinv, r), np.linalg.pinv(r), **t)
    w, v = run(nlinalg.eigh, s)
    wn, vn = np.linalg.eigh(s)
    np.testing.assert_allclose(w, wn, **t)
    np.testing.assert_allclose(np.abs(v), np.abs(vn), **t)
    np.testing.assert_allclose(run(lambda x: nlinalg.eigh(x, "U")[0], s), np.linalg.eigvalsh(s, "U"), **t)
    np.testing.assert_allclose(run(nlinalg.eigvalsh, s), np.linalg.eigvalsh(s), **t)
    we, ve = run(nlinalg.eig, s)  # real eigenvalues: a symmetric matrix
    order = np.argsort(we)
    np.testing.assert_allclose(we[order], wn, **t)
    np.testing.assert_allclose(s @ ve, ve * we, **t)
    for full in (True, False):
        u, sv, vt = run(lambda x: nlinalg.svd(x, full), r)
        un, svn, vtn = np.linalg.svd(r, full)
        assert u.shape == un.shape and vt.shape == vtn.shape
        np.testing.assert_allclose(sv, svn, **t)
        k = len(sv)
        np.testing.assert_allclose((u[:, :k] * sv) @ vt[:k], r, **t)
    np.testing.assert_allclose(run(lambda x: nlinalg.svd(x, compute_uv=False), r), np.linalg.svd(r, compute_uv=False),
                               **t)
    for mode in ("reduced", "complete"):
        q, rr = run(lambda x: nlinalg.qr(x, mode), r)
        qn, rn = np.linalg.qr(r, mode)
        assert q.shape == qn.shape and rr.shape == rn.shape
        np.testing.assert_allclose(np.abs(q), np.abs(qn), **t)
        np.testing.assert_allclose(q @ rr, r, **t)
    np.testing.assert_allclose(np.abs(run(lambda x: nlinalg.qr(x, "r"), r)), np.abs(np.linalg.qr(r, "r")), **t)
    h, tau = run(lambda x: nlinalg.qr(x, "raw"), r)
    hn, taun = np.linalg.qr(r, "raw")
    np.testing.assert_allclose(h, hn, **t)
    np.testing.assert_allclose(tau, taun, **t)
    y = RNG.uniform(-1, 1, (6, 2)).astype(dtype)
    x, res, rank, sl = run(lambda p_, q_: nlinalg.lstsq(p_, q_), r, y)
    xn, resn, rankn, sln = np.linalg.lstsq(r, y, rcond=None)
    np.testing.assert_allclose(x, xn, **t)
    np.testing.assert_allclose(res, resn, **t)
    assert rank == rankn
    np.testing.assert_allclose(sl, sln, **t)
    np.testing.assert_allclose(run(T.trace, a), np.trace(a), **t)
    np.testing.assert_allclose(run(lambda x: nlinalg.matrix_power(x, 3), a), np.linalg.matrix_power(a, 3), **t)
    np.testing.assert_allclose(run(lambda x: nlinalg.matrix_power(x, -2), a), np.linalg.matrix_power(a, -2), **t)
    for ord_ in (None, "fro", "nuc", np.inf, -np.inf, 1, -1, 2, -2):
        np.testing.assert_allclose(run(lambda x: nlinalg.norm(x, ord_), r), np.linalg.norm(r, ord_), **t)
    vec = r[:, 0]
    for ord_ in (None, np.inf, -np.inf, 0, 1, 2, 3, 0.5):
        np.testing.assert_allclose(run(lambda x: nlinalg.norm(x, ord_), vec), np.linalg.norm(vec, ord_), **t)
    # slinalg
    low = run(slinalg.cholesky, p)
    np.testing.assert_allclose(low, np.linalg.cholesky(p), **t)
    np.testing.assert_allclose(run(lambda x: slinalg.cholesky(x, lower=False), p), np.linalg.cholesky(p).T, **t)
    for assume in ("gen", "sym", "pos"):
        for lower in (False, True):
            np.testing.assert_allclose(run(lambda x, z: slinalg.solve(x, z, assume_a=assume, lower=lower), p, b),
                                       np.linalg.solve(p, b), **t)
    np.testing.assert_allclose(run(slinalg.solve, a, b[:, 0]), np.linalg.solve(a, b[:, 0]), **t)
    for lower in (False, True):
        tri = np.tril(a) if lower else np.triu(a)
        for trans in (0, 1):
            op_a = tri.T if trans else tri
            np.testing.assert_allclose(
                run(lambda x, z: slinalg.solve_triangular(x, z, trans=trans, lower=lower), a, b),
                np.linalg.solve(op_a, b), **t)
        unit = tri.copy()
        np.fill_diagonal(unit, 1)
        np.testing.assert_allclose(
            run(lambda x, z: slinalg.solve_triangular(x, z, lower=lower, unit_diagonal=True), a, b),
            np.linalg.solve(unit, b), **t)
    # the generalized symmetric problem: w are the eigenvalues of L^-1 A L^-T with B = L L^T
    lp = np.linalg.cholesky(p.astype("float64"))
    li = np.linalg.inv(lp)
    want = np.linalg.eigvalsh(li @ s.astype("float64") @ li.T)
    np.testing.assert_allclose(run(slinalg.eigvalsh, s, p), want, **t)
    np.testing.assert_allclose(run(slinalg.kron, a[:2, :3], b[:2]), np.kron(a[:2, :3], b[:2]), **t)
    np.testing.assert_allclose(run(slinalg.kron, a[0], b[0]), np.kron(a[0], b[0]), **t)
    np.testing.assert_allclose(run(slinalg.kron, a[:2], b[0]), np.kron(a[:2], b[0]), **t)


def expm_reference(a):
    """exp(A) by eigen-decomposition of a diagonalizable matrix (float64)."""
    w, v = np.linalg.eig(a.astype("float64"))
    return np.real(v @ np.diag(np.exp(w)) @ np.linalg.inv(v))


@pytest.mark.parametrize("scale", [1e-3, 0.3, 1.0, 5.0, 40.0])
def test_expm_matches_the_eigen_decomposition(scale):
    a = RNG.uniform(-1, 1, (6, 6)) * scale / 3
    np.testing.assert_allclose(run(slinalg.expm, a), expm_reference(a), rtol=1e-8, atol=1e-10 * np.exp(scale))
    np.testing.assert_allclose(run(slinalg.expm, a.astype("float32")), expm_reference(a), rtol=2e-4,
                               atol=2e-5 * np.exp(scale))


def test_helpers_match_numpy():
    m = RNG.uniform(-1, 1, (4, 5))
    t3 = RNG.uniform(-1, 1, (3, 4, 5))
    for k in (-2, 0, 1, 7):
        np.testing.assert_allclose(run(lambda x: T.diagonal(x, k), m), np.diagonal(m, k))
        np.testing.assert_allclose(run(lambda x: T.tril(x, k), m), np.tril(m, k))
        np.testing.assert_allclose(run(lambda x: T.triu(x, k), m), np.triu(m, k))
        np.testing.assert_allclose(run(lambda x: T.diag(x, k), m[0]), np.diag(m[0], k))
    np.testing.assert_allclose(run(lambda x: T.diagonal(x, 1, 0, 2), t3), np.diagonal(t3, 1, 0, 2))
    np.testing.assert_allclose(run(lambda x: T.diagonal(x, 0, 2, 1), t3), np.diagonal(t3, 0, 2, 1))
    np.testing.assert_allclose(run(lambda x: T.tril(x, 1), t3), np.tril(t3, 1))
    np.testing.assert_allclose(hypatia.function([], T.tri(3, 4, 1, "float64"))(), np.tri(3, 4, 1))
    a = RNG.uniform(-1, 1, (6, 6)) + 6 * np.eye(6)
    a4 = a.reshape(2, 3, 3, 2)
    np.testing.assert_allclose(run(nlinalg.tensorinv, a4), np.linalg.tensorinv(a4, 2), rtol=1e-9)
    b = RNG.uniform(-1, 1, (2, 3))
    np.testing.assert_allclose(run(nlinalg.tensorsolve, a4, b), np.linalg.tensorsolve(a4, b), rtol=1e-9)
    np.testing.assert_allclose(run(lambda x, y: nlinalg.matrix_dot(x, y, x), a, a), a @ a @ a, rtol=1e-12)


def test_integer_and_float16_inputs_follow_numpy_dtypes():
    x = T.imatrix("x")
    assert nlinalg.matrix_inverse(x).dtype == "float64"
    assert nlinalg.det(T.matrix("h", dtype="float16")).dtype == "float32"
    f = hypatia.function([x], nlinalg.det(x))
    np.testing.assert_allclose(f(np.array([[2, 1], [1, 3]], "int32")), 5.0)


def vg(fn, *pts, **kw):
    T.verify_grad(fn, [np.asarray(p, "float64") for p in pts], rng=np.random.default_rng(0), **kw)


def test_gradients_verify():
    a, s, p = well(4), sym(4) + np.diag([1.0, 2.0, 3.0, 4.0]) * 3, spd(4)
    b = RNG.uniform(-1, 1, (4, 2))
    vg(nlinalg.matrix_inverse, a)
    vg(nlinalg.det, a)
    vg(lambda x: nlinalg.eigh(x)[0], s)
    vg(lambda x: nlinalg.eigh(x, "U")[1] ** 2, s)
    vg(lambda x: T.sum(nlinalg.eigh(x)[0] * 2) + T.sum(nlinalg.eigh(x)[1] ** 2), s)
    vg(slinalg.cholesky, p)
    vg(lambda x: slinalg.cholesky(x, lower=False), p)
    vg(slinalg.solve, a, b)
    vg(slinalg.solve, a, b[:, 0])
    vg(lambda x, y: slinalg.solve(x, y, assume_a="sym"), p, b)
    vg(lambda x, y: slinalg.solve(x, y, assume_a="pos", lower=True), p, b)
    vg(lambda x, y: slinalg.solve_triangular(x, y, lower=True), a, b)
    vg(lambda x, y: slinalg.solve_triangular(x, y, trans=1, unit_diagonal=True), a, b)
    vg(slinalg.eigvalsh, s, p)
    vg(slinalg.expm, RNG.uniform(-1, 1, (3, 3)))
    vg(slinalg.expm, RNG.uniform(-3, 3, (3, 3)))
    vg(slinalg.kron, a[:2], b)
    vg(T.trace, a)
    vg(lambda x: T.diagonal(x, 1), a)
    vg(lambda x: nlinalg.norm(x, "fro"), a)
    vg(lambda x: nlinalg.matrix_power(x, -2), a)
    vg(nlinalg.tensorinv, (RNG.uniform(-1, 1, (6, 6)) + 6 * np.eye(6)).reshape(2, 3, 3, 2))


def test_second_derivative_of_a_solve():
    a, b = well(3), RNG.uniform(-1, 1, 3)
    vg(lambda x: T.grad(T.sum(slinalg.solve(x, b) ** 2), x), a)
    vg(lambda x: T.grad(nlinalg.det(x), x), a)


def test_ops_without_gradients_say_so():
    x = T.dmatrix("x")
    for out in (nlinalg.svd(x, compute_uv=False), nlinalg.qr(x, "r"), nlinalg.pinv(x), nlinalg.eig(x)[0]):
        with pytest.raises(hypatia.NullTypeGradError, match="is not implemented"):
            T.grad(T.sum(out), x)


def test_rewrites_solve_instead_of_inverting():
    a, b = T.dmatrix("a"), T.dmatrix("b")
    av, bv = well(4), RNG.uniform(-1, 1, (4, 3))
    f = hypatia.function([a, b], T.dot(nlinalg.matrix_inverse(a), b))
    names = [n.op.name for n in f.maker.fgraph.toposort()]
    assert not any("MatrixInverse" in n for n in names), names
    assert any("Solve" in n for n in names), names
    np.testing.assert_allclose(f(av, bv), np.linalg.solve(av, bv), rtol=1e-10)
    p = spd(4)
    g = hypatia.function([a, b], [nlinalg.det(a), slinalg.solve(slinalg.cholesky(a), b)])
    names = [n.op.name for n in g.maker.fgraph.toposort()]
    assert any("SolveTriangular" in n for n in names), names
    d, x = g(p, bv)
    np.testing.assert_allclose(d, np.linalg.det(p), rtol=1e-10)
    np.testing.assert_allclose(x, np.linalg.solve(np.linalg.cholesky(p), bv), rtol=1e-10)
    # A non-symmetric matrix whose lower triangle is positive definite: det stays det(a), not the
    # factor's product (PyTensor's local_det_chol would change it).
    ns = np.tril(p) + np.triu(RNG.uniform(-1, 1, (4, 4)), 1)
    d, _ = g(ns, bv)
    np.testing.assert_allclose(d, np.linalg.det(ns), rtol=1e-10)


def test_errors_name_the_op_and_the_shapes():
    a, v = T.dmatrix("a"), T.dvector("v")
    inv = hypatia.function([a], nlinalg.matrix_inverse(a))
    with pytest.raises(ValueError, match="MatrixInverse: the matrix is singular"):
        inv(np.ones((3, 3)))
    with pytest.raises(ValueError, match=r"square matrix, got shape \(2, 3\)"):
        inv(np.ones((2, 3)))
    with pytest.raises(ValueError, match="not positive definite"):
        hypatia.function([a], slinalg.cholesky(a))(-np.eye(2))
    # Theano's on_error='nan': NaN instead of the error (both spellings), the gradient NaN too.
    for c in (slinalg.cholesky(a, on_error="nan"), slinalg.Cholesky(on_error="nan")(a)):
        f = hypatia.function([a], [c, T.grad(c.sum(), a)])
        assert all(np.isnan(r).all() for r in f(-np.eye(2)))
        np.testing.assert_allclose(f(np.array([[4.0, 2.0], [2.0, 5.0]]))[0], [[2.0, 0.0], [1.0, 2.0]])
    with pytest.raises(ValueError, match="on_error"):
        slinalg.Cholesky(on_error="warn")
    with pytest.raises(ValueError, match="b has 3 rows"):
        hypatia.function([a, v], slinalg.solve(a, v))(np.eye(2), np.ones(3))
    with pytest.raises(TypeError, match="matrix"):
        nlinalg.matrix_inverse(T.tensor3())
    with pytest.raises(ValueError, match="UPLO"):
        nlinalg.eigh(a, "X")
    with pytest.raises(ValueError, match="assume_a"):
        slinalg.solve(a, v, assume_a="banded")


def test_ops_pickle_and_compare_by_attributes():
    x = T.dmatrix("x")
    for out in (slinalg.solve_triangular(x, x, lower=True, trans=1), nlinalg.svd(x, False)[0], nlinalg.qr(x, "r"),
                slinalg.cholesky(x, lower=False)):
        op = out.owner.op
        op2 = pickle.loads(pickle.dumps(op))
        assert op2 == op and hash(op2) == hash(op) and op2.name == op.name


def test_svd_based_ops_refuse_nan_and_lstsq_takes_rcond_as_gelsd():
    bad = np.array([[1.0, np.nan], [0.0, 1.0]])
    for op in (lambda x: nlinalg.svd(x), lambda x: nlinalg.svd(x, compute_uv=False), nlinalg.pinv):
        with pytest.raises(ValueError, match="the matrix has a NaN or an infinity"):
            run(op, bad)
    with pytest.raises(ValueError, match="the matrix has a NaN or an infinity"):
        run(lambda p_, q_: nlinalg.lstsq(p_, q_), np.array([[np.inf, 0.0], [0.0, 1.0]]), np.ones(2))
    # rcond 0 (or >= 1): LAPACK's unit roundoff, as numpy's gelsd call takes it.
    a = np.diag([1.0, 1e-20])
    b = np.ones(2)
    for rc in (0.0, 1.5):
        x, res, rank, sv = run(lambda p_, q_: nlinalg.lstsq(p_, q_, rc), a, b)
        xn, resn, rankn, svn = np.linalg.lstsq(a, b, rcond=rc)
        np.testing.assert_allclose(x, xn)
        assert rank == rankn == 1


def test_expm_of_a_matrix_with_a_nan_or_an_infinity_is_nan():
    for v in (np.nan, np.inf):
        a = np.eye(3)
        a[1, 2] = v
        assert np.isnan(run(slinalg.expm, a)).all()


def test_empty_matrices():
    e = np.zeros((0, 0))
    assert run(nlinalg.matrix_inverse, e).shape == (0, 0)
    np.testing.assert_allclose(run(nlinalg.det, e), 1.0)
    assert run(slinalg.expm, e).shape == (0, 0)
    u, s, vt = run(nlinalg.svd, np.zeros((0, 3)))
    assert u.shape == (0, 0) and s.shape == (0,) and vt.shape == (3, 3)


@settings(max_examples=25, deadline=None)
@given(n=st.integers(1, 12), k=st.integers(1, 4), seed=st.integers(0, 2**31 - 1))
def test_solve_and_inverse_on_random_well_conditioned_systems(n, k, seed):
    rng = np.random.default_rng(seed)
    a = rng.uniform(-1, 1, (n, n)) + n * np.eye(n)
    b = rng.uniform(-1, 1, (n, k))
    x = run(slinalg.solve, a, b)
    np.testing.assert_allclose(a @ x, b, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(run(nlinalg.matrix_inverse, a) @ a, np.eye(n), atol=1e-9)


def test_norm_over_axes_with_keepdims_and_tensorsolve_axes_match_numpy():
    x = RNG.uniform(-1, 1, (3, 4, 5))
    cases = [(None, None), (None, 1), (3, 0), (np.inf, 2), (-np.inf, 1), (0, 0), (0.5, -1), (1, (0, 1)),
             (-1, (2, 0)), (np.inf, (1, 2)), (-np.inf, (2, 1)), ("fro", (0, 2))]
    for ord_, axis in cases:
        for keepdims in (False, True):
            got = run(lambda v: nlinalg.norm(v, ord_, axis, keepdims), x)
            want = np.linalg.norm(x, ord_, axis, keepdims)
            assert got.shape == want.shape, (ord_, axis, keepdims)
            np.testing.assert_allclose(got, want, rtol=1e-12, err_msg=str((ord_, axis, keepdims)))
    m = x[0]
    for ord_ in (None, "fro", "nuc", 2, -2, 1, -1, np.inf, -np.inf):
        for axis, keepdims in ((None, True), ((1, 0), False), ((0, 1), True)):
            np.testing.assert_allclose(run(lambda v: nlinalg.norm(v, ord_, axis, keepdims), m),
                                       np.linalg.norm(m, ord_, axis, keepdims), rtol=1e-12)
    with pytest.raises(NotImplementedError, match="batched SVD"):
        nlinalg.norm(T.dtensor3(), "nuc", axis=(0, 1))
    with pytest.raises(ValueError, match="invalid axis"):
        nlinalg.norm(T.dtensor3(), None, axis=(0, 0))
    a = (RNG.uniform(-1, 1, (6, 6)) + 6 * np.eye(6)).reshape(2, 3, 3, 2).transpose(0, 2, 1, 3).copy()
    b = RNG.uniform(-1, 1, (2, 3))
    np.testing.assert_allclose(run(lambda p, q: nlinalg.tensorsolve(p, q, axes=(1,)), a, b),
                               np.linalg.tensorsolve(a, b, axes=(1,)), rtol=1e-10)


@pytest.mark.host_graphs
def test_lapack_gives_the_same_bits_before_and_after_the_first_blas_call():
    # OpenBLAS was made single-threaded lazily by the first BLAS kernel: a LAPACK call before that
    # ran on OpenBLAS's own threads, with other blocking, and its last bits differed from the same
    # call's later results (the graph fuzzer found it). A fresh process, so that nothing ran before.
    import subprocess
    import sys

    script = """
import numpy as np, hypatia, hypatia.tensor as T
from hypatia.tensor import slinalg
rng = np.random.default_rng(0)
a = rng.standard_normal((6, 6)); a = a + a.T
b = rng.standard_normal((6, 6)); b = b @ b.T + 6 * np.eye(6)
A, B, W = T.dmatrix(), T.dmatrix(), T.dvector()
e = slinalg.eigvalsh(A, B)
f = hypatia.function([A, B, W], T.grad((e * W).sum(), A))
first = f(a, b, np.ones(6))
hypatia.function([A], T.dot(A, A))(a)
print(all(np.array_equal(f(a, b, np.ones(6)), first) for _ in range(3)))
"""
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "True"
