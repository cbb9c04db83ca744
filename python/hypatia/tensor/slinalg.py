"""hypatia.tensor.slinalg: Theano's slinalg (scipy.linalg on symbolic matrices).

cholesky, solve (general, symmetric, positive definite, triangular), solve_triangular, eigvalsh
(also the generalized problem a v = w b v), expm and kron, with gradients for all of them (as
graphs: a gradient of a gradient works). LAPACK through OpenBLAS, in the input's precision.

In a compiled function a general solve whose matrix is a Cholesky factor is computed as a
triangular solve, and det(X) next to cholesky(X) is read from the factor's diagonal.
"""
from hypatia import _convert, _core

Linalg = _core.Linalg


def _t(x):
    return _convert.as_tensor_variable(x)


def cholesky(a, lower=True, on_error="raise"):
    """The Cholesky factor of a symmetric positive definite matrix: L (lower) with a = L L^T, or U
    with a = U^T U. Only that triangle of a is read; a matrix that is not positive definite raises
    ValueError when run (on_error='raise'), or gives a factor of NaN (on_error='nan', Theano's
    option; the gradient is NaN there too)."""
    if on_error not in ("raise", "nan"):
        raise ValueError("cholesky: on_error must be 'raise' or 'nan', got %r" % (on_error,))
    return _core.cholesky(_t(a), bool(lower), on_error)


_STRUCTURES = {"gen": "general", "general": "general", "sym": "symmetric", "symmetric": "symmetric",
               "her": "symmetric", "pos": "positive_definite", "positive_definite": "positive_definite",
               "lower_triangular": "lower_triangular", "upper_triangular": "upper_triangular"}


def solve(a, b, assume_a="gen", lower=False, check_finite=True, transposed=False):
    """scipy.linalg.solve: x with a x = b, b a vector or a matrix. assume_a 'gen' (LU), 'sym' (reads
    the lower or upper triangle), 'pos' (Cholesky of that triangle)."""
    s = _STRUCTURES.get(assume_a)
    if s is None:
        raise ValueError(f"solve: assume_a must be one of 'gen', 'sym', 'pos', got {assume_a!r}")
    if transposed:
        a = _t(a).T
    if s == "lower_triangular":
        return _core.solve_triangular(_t(a), _t(b), True, False, False)
    if s == "upper_triangular":
        return _core.solve_triangular(_t(a), _t(b), False, False, False)
    return _core.solve(_t(a), _t(b), s, bool(lower))


def solve_triangular(a, b, trans=0, lower=False, unit_diagonal=False, overwrite_b=False, check_finite=True):
    """scipy.linalg.solve_triangular: x with op(a) x = b, a lower or upper triangular (the other
    triangle is not read); trans 0/'N' or 1/'T' (op(a) = a^T); unit_diagonal takes a's diagonal as ones."""
    if trans in (0, "N"):
        t = False
    elif trans in (1, "T", 2, "C"):
        t = True
    else:
        raise ValueError(f"solve_triangular: trans must be 0, 1, 2, 'N', 'T' or 'C', got {trans!r}")
    return _core.solve_triangular(_t(a), _t(b), bool(lower), t, bool(unit_diagonal))


def solve_lower_triangular(a, b):
    return solve_triangular(a, b, lower=True)


def solve_upper_triangular(a, b):
    return solve_triangular(a, b, lower=False)


def solve_symmetric(a, b):
    return solve(a, b, assume_a="sym")


def eigvalsh(a, b=None, lower=True):
    """scipy.linalg.eigvalsh: eigenvalues (ascending) of the symmetric a, or of a v = w b v with b
    symmetric positive definite."""
    return _core.eigvalsh(_t(a), None if b is None else _t(b), bool(lower))


def expm(A):
    """The matrix exponential (scipy.linalg.expm's scaling and squaring with Pade approximants)."""
    return _core.expm(_t(A))


def kron(a, b):
    """The Kronecker product (numpy.kron) of vectors or matrices."""
    return _core.kron(_t(a), _t(b))


class Cholesky:
    def __init__(self, lower=True, on_error="raise"):
        if on_error not in ("raise", "nan"):
            raise ValueError("Cholesky: on_error must be 'raise' or 'nan', got %r" % (on_error,))
        self.lower = lower
        self.on_error = on_error

    def __call__(self, x):
        return cholesky(x, self.lower, self.on_error)


class Solve:
    """Theano's Solve(A_structure, lower): A_structure 'general', 'symmetric', 'lower_triangular',
    'upper_triangular'."""

    def __init__(self, A_structure="general", lower=False, overwrite_A=False, overwrite_b=False):
        if A_structure not in ("general", "symmetric", "lower_triangular", "upper_triangular"):
            raise ValueError(f"Solve: invalid A_structure {A_structure!r}")
        self.A_structure, self.lower = A_structure, lower

    def __call__(self, a, b):
        return solve(a, b, assume_a=self.A_structure, lower=self.lower)


class Expm:
    def __call__(self, x):
        return expm(x)


class Eigvalsh:
    def __init__(self, lower=True):
        self.lower = lower

    def __call__(self, a, b=None):
        return eigvalsh(a, b, self.lower)


__all__ = ["cholesky", "solve", "solve_triangular", "solve_lower_triangular", "solve_upper_triangular",
           "solve_symmetric", "eigvalsh", "expm", "kron", "Cholesky", "Solve", "Expm", "Eigvalsh", "Linalg"]
