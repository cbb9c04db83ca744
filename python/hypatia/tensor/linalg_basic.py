"""The matrix helpers Theano kept in tensor.basic: diag, diagonal, tri, tril, triu, trace."""
from hypatia import _convert, _core


def _t(x):
    return _convert.as_tensor_variable(x)


def diag(v, k=0):
    """numpy.diag: a vector's diagonal matrix (on diagonal k), or a matrix's diagonal k."""
    return _core.diag(_t(v), int(k))


def diagonal(a, offset=0, axis1=0, axis2=1):
    """numpy.diagonal: the diagonal `offset` of axes axis1, axis2, as the last axis."""
    return _core.extract_diag(_t(a), int(offset), int(axis1), int(axis2))


def tril(m, k=0):
    """The lower triangle (on and below diagonal k) of the last two axes; zeros above."""
    return _core.tril(_t(m), int(k))


def triu(m, k=0):
    """The upper triangle (on and above diagonal k) of the last two axes; zeros below."""
    return _core.triu(_t(m), int(k))


def tri(N, M=None, k=0, dtype=None):
    """numpy.tri: an N x M array with ones on and below diagonal k (dtype: floatX by default)."""
    from hypatia.configparser import config
    from hypatia.tensor import shape_ops

    dtype = dtype or config.floatX
    return tril(shape_ops.ones((N, N if M is None else M), dtype=dtype), k)


def trace(a):
    """The sum of the main diagonal of a matrix."""
    return _core.trace(_t(a))
