"""hypatia.tensor.nlinalg: Theano's nlinalg (numpy.linalg on symbolic matrices).

Decompositions and inverses run LAPACK (OpenBLAS) in the input's precision; integer inputs give
float64 results and float16 ones float32, as numpy does. Gradients: matrix_inverse, det, eigh
(eigenvalues and eigenvectors) and everything composed from other ops (trace, diag, norm, kron,
matrix_power, tensorinv, tensorsolve); eig, svd, qr, lstsq and pinv have none (Theano had none:
asking raises NotDifferentiableError naming the op). Inputs are matrices (2-d), as in Theano.

In a compiled function, dot(matrix_inverse(A), b) is computed as solve(A, b) and
matrix_inverse(matrix_inverse(A)) as A (hypatia.tensor.slinalg for the solvers).
"""
from hypatia import _convert, _core

Linalg = _core.Linalg


def _t(x):
    return _convert.as_tensor_variable(x)


def matrix_inverse(a):
    """The inverse of a square matrix (numpy.linalg.inv); a singular one raises ValueError when run."""
    return _core.matrix_inverse(_t(a))


inv = matrix_inverse


def pinv(a, rcond=1e-15, hermitian=False):
    """The Moore-Penrose pseudo-inverse (numpy.linalg.pinv): singular values at or below rcond times
    the largest are dropped."""
    return _core.pinv(_t(a), float(rcond))


def det(a):
    """The determinant of a square matrix (LU with partial pivoting, as numpy)."""
    return _core.det(_t(a))


def eig(a):
    """(w, v) of a real square matrix whose eigenvalues are real (numpy.linalg.eig); a complex
    eigenvalue raises ValueError when run (Hypatia has no complex dtype; eigh for symmetric ones)."""
    return tuple(_core.eig(_t(a)))


def eigh(a, UPLO="L"):
    """(w, v) of a symmetric matrix, reading its lower ('L') or upper ('U') triangle: eigenvalues
    ascending and orthonormal eigenvectors as columns (numpy.linalg.eigh)."""
    return tuple(_core.eigh(_t(a), _uplo(UPLO, "eigh")))


def eigvalsh(a, UPLO="L"):
    """The eigenvalues of a symmetric matrix (numpy.linalg.eigvalsh)."""
    return _core.eigvalsh(_t(a), None, _uplo(UPLO, "eigvalsh"))


def svd(a, full_matrices=True, compute_uv=True):
    """numpy.linalg.svd: (U, s, Vt), or s alone when compute_uv is False."""
    out = _core.svd(_t(a), bool(full_matrices), bool(compute_uv))
    return tuple(out) if compute_uv else out[0]


def qr(a, mode="reduced"):
    """numpy.linalg.qr: (Q, R) for 'reduced' and 'complete', R for 'r', (h, tau) for 'raw'."""
    out = _core.qr(_t(a), mode)
    return out[0] if mode == "r" else tuple(out)


def lstsq(a, b, rcond=None):
    """numpy.linalg.lstsq: (x, residuals, rank, s). rcond None (or negative) is numpy's default,
    max(M, N) times the machine precision."""
    rc = -1.0 if rcond is None else rcond
    return tuple(_core.lstsq(_t(a), _t(b), _t(float(rc)) if isinstance(rc, (int, float)) else _t(rc)))


def trace(a):
    """The sum of the main diagonal of a matrix."""
    return _core.trace(_t(a))


def extract_diag(a, offset=0, axis1=0, axis2=1):
    """numpy.diagonal: the diagonal `offset` of the axes axis1, axis2, as the last axis."""
    return _core.extract_diag(_t(a), int(offset), int(axis1), int(axis2))


def alloc_diag(v, offset=0):
    """The square matrix with v on diagonal `offset` and zeros elsewhere."""
    return _core.alloc_diag(_t(v), int(offset))


def diag(v, k=0):
    """numpy.diag: a vector's diagonal matrix, or a matrix's diagonal k."""
    return _core.diag(_t(v), int(k))


def matrix_power(M, n):
    """M multiplied by itself n times (by repeated squaring); n < 0 uses the inverse."""
    return _core.matrix_power(_t(M), int(n))


def matrix_dot(*args):
    """The product of the matrices in order: matrix_dot(a, b, c) = a @ b @ c."""
    rval = _t(args[0])
    for a in args[1:]:
        rval = _core.dot(rval, _t(a))
    return rval


def _ord_text(ord):
    if ord is None:
        return ""
    if isinstance(ord, str):
        return ord
    if ord == float("inf"):
        return "inf"
    if ord == float("-inf"):
        return "-inf"
    return repr(float(ord)) if float(ord) != int(ord) else str(int(ord))


def norm(x, ord=None, axis=None, keepdims=False):
    """numpy.linalg.norm: a vector norm (ord None, inf, -inf, 0 or any number) over one axis, a
    matrix norm (None, 'fro', 'nuc', inf, -inf, 1, -1, 2, -2) over two; axis None means the whole
    vector or matrix (None with ord None: the 2-norm of the flattened array, any ndim); keepdims
    keeps the reduced axes with length 1. The singular-value orders (2, -2, 'nuc') need a matrix:
    over two axes of a larger array they raise NotImplementedError (there is no batched SVD)."""
    from hypatia.tensor import basic as T

    x = _t(x)
    if x.dtype not in ("float32", "float64"):
        x = T.cast(x, "float32" if x.dtype == "float16" else "float64")
    nd = x.ndim
    if axis is None:
        if ord is None:
            r = _core.norm(x if nd in (1, 2) else x.flatten(), "")
            return r.dimshuffle(*["x"] * nd) if keepdims else r
        if nd not in (1, 2):
            raise ValueError(f"norm: improper number of dimensions to norm ({nd}) for ord {ord!r} without axis")
        axis = tuple(range(nd))
    axes = (axis,) if isinstance(axis, int) else tuple(int(a) for a in axis)
    if len(axes) not in (1, 2) or any(not -nd <= a < nd for a in axes) or len({a % nd for a in axes}) != len(axes):
        raise ValueError(f"norm: invalid axis {axis!r} for an array of {nd} dimensions")
    axes = tuple(a % nd for a in axes)
    if len(axes) == 2 and nd == 2 and not keepdims:
        # The whole matrix (either axis order gives the transpose's norm, computed as such).
        return _core.norm(x if axes == (0, 1) else x.T, _ord_text(ord))
    if len(axes) == 1:
        r = _vector_norm(T, x, ord, axes[0])
    else:
        r = _matrix_norm(T, x, ord, axes)
    if keepdims:
        pattern, kept = [], 0
        for d in range(nd):
            if d in axes:
                pattern.append("x")
            else:
                pattern.append(kept)
                kept += 1
        r = r.dimshuffle(*pattern)
    return r


def _vector_norm(T, x, ord, ax):
    a = abs(x)
    if ord is None or ord == 2:
        return T.sqrt(T.sum(x * x, axis=ax))
    if ord == float("inf"):
        return T.max(a, axis=ax)
    if ord == float("-inf"):
        return T.min(a, axis=ax)
    if isinstance(ord, str):
        raise ValueError(f"norm: invalid order {ord!r} for a vector")
    if ord == 0:
        return T.sum(T.cast(T.neq(x, 0), x.dtype), axis=ax)
    if ord == 1:
        return T.sum(a, axis=ax)
    return T.sum(a ** float(ord), axis=ax) ** (1.0 / float(ord))


def _matrix_norm(T, x, ord, axes):
    row, col = axes
    a = abs(x)
    if ord is None or ord == "fro":
        return T.sqrt(T.sum(x * x, axis=axes))
    if ord in (2, -2, "nuc"):
        if x.ndim != 2:
            raise NotImplementedError(f"norm: ord {ord!r} over two axes of a {x.ndim}-d array needs a batched SVD, "
                                      f"which Hypatia does not have")
        return _core.norm(x if axes == (0, 1) else x.T, _ord_text(ord))
    # 1 / -1: the largest / smallest column sum; inf / -inf: row sums. Reducing `row` first moves
    # `col` down by one when it lies after it.
    if ord in (1, -1):
        sums = T.sum(a, axis=row)
        other = col - 1 if col > row else col
    elif ord in (float("inf"), float("-inf")):
        sums = T.sum(a, axis=col)
        other = row - 1 if row > col else row
    else:
        raise ValueError(f"norm: invalid order {ord!r} for a matrix")
    return T.max(sums, axis=other) if ord in (1, float("inf")) else T.min(sums, axis=other)


def tensorinv(a, ind=2):
    """numpy.linalg.tensorinv."""
    return _core.tensorinv(_t(a), int(ind))


def tensorsolve(a, b, axes=None):
    """numpy.linalg.tensorsolve: x with tensordot(a, x, x.ndim) = b; `axes` of a are moved to the
    end first, as numpy does."""
    a = _t(a)
    if axes is not None:
        order = list(range(a.ndim))
        for k in axes:
            order.remove(k % a.ndim)
            order.append(k % a.ndim)
        a = a.transpose(order)
    return _core.tensorsolve(a, _t(b))


def _uplo(UPLO, who):
    if UPLO not in ("L", "U"):
        raise ValueError(f"{who}: UPLO must be 'L' or 'U', got {UPLO!r}")
    return UPLO == "L"


# Theano's op classes, as callables that build the node.
class MatrixInverse:
    def __call__(self, x):
        return matrix_inverse(x)


class MatrixPinv:
    def __init__(self, hermitian=False, rcond=1e-15):
        self.rcond = rcond

    def __call__(self, x):
        return pinv(x, self.rcond)


class Det:
    def __call__(self, x):
        return det(x)


class Eig:
    def __call__(self, x):
        return eig(x)


class Eigh:
    def __init__(self, UPLO="L"):
        self.UPLO = UPLO

    def __call__(self, x):
        return eigh(x, self.UPLO)


class SVD:
    def __init__(self, full_matrices=True, compute_uv=True):
        self.full_matrices, self.compute_uv = full_matrices, compute_uv

    def __call__(self, x):
        return svd(x, self.full_matrices, self.compute_uv)


class QRFull:
    def __init__(self, mode="reduced"):
        self.mode = mode

    def __call__(self, x):
        return qr(x, self.mode)


class ExtractDiag:
    def __init__(self, offset=0, axis1=0, axis2=1, view=False):
        self.offset, self.axis1, self.axis2 = offset, axis1, axis2

    def __call__(self, x):
        return extract_diag(x, self.offset, self.axis1, self.axis2)


class AllocDiag:
    def __init__(self, offset=0):
        self.offset = offset

    def __call__(self, x):
        return alloc_diag(x, self.offset)


class TensorInv:
    def __init__(self, ind=2):
        self.ind = ind

    def __call__(self, x):
        return tensorinv(x, self.ind)


__all__ = ["matrix_inverse", "inv", "pinv", "det", "eig", "eigh", "eigvalsh", "svd", "qr", "lstsq", "trace",
           "extract_diag", "alloc_diag", "diag", "matrix_power", "matrix_dot", "norm", "tensorinv", "tensorsolve",
           "MatrixInverse", "MatrixPinv", "Det", "Eig", "Eigh", "SVD", "QRFull", "ExtractDiag", "AllocDiag",
           "TensorInv", "Linalg"]
