"""hypatia.tensor.extra_ops: Theano's tensor.extra_ops: cumsum, cumprod, diff, repeat, squeeze,
to_one_hot, fill_diagonal, bincount, compress, bartlett, unique, searchsorted, unravel_index and
ravel_multi_index, composed from the core ops (so each runs on every backend, the GPU's included,
and has the gradient its parts give). Where numpy raises on bad values (a negative count, an index
out of bounds), an Assert checks them when the function runs: AssertionError, never a wrapped
index.
"""
import numbers

import numpy as np

from hypatia import _convert, _core
from hypatia.tensor import basic as B

CumOp = _core.CumOp
RepeatOp = _core.RepeatOp

cumsum = B.cumsum
cumprod = B.cumprod
repeat = B.repeat
squeeze = B.squeeze


def diff(x, n=1, axis=-1):
    """numpy.diff: the n-th discrete difference along axis (x[1:] - x[:-1], n times)."""
    x = _convert.as_tensor_variable(x)
    axis = int(axis)
    if not -x.ndim <= axis < x.ndim:
        raise IndexError(f"diff: axis {axis} is out of bounds for a {x.ndim}-d tensor")
    axis %= x.ndim
    head = (slice(None),) * axis
    for _ in range(int(n)):
        x = B.sub(x[head + (slice(1, None),)], x[head + (slice(None, -1),)])
    return x


def to_one_hot(y, nb_class, dtype=None):
    """A (y.shape[0], nb_class) matrix whose row i is the one-hot encoding of y[i] (Theano's):
    y a vector of integers in [0, nb_class), dtype floatX unless given. A label outside that
    range raises IndexError when the function runs."""
    y = _convert.as_tensor_variable(y)
    if y.ndim != 1 or y.dtype[:3] not in ("int", "uin"):
        raise TypeError(f"to_one_hot: y must be an integer vector, got {y.type}")
    n = y.shape[0]
    ret = B.zeros((n, nb_class), dtype=dtype)
    return B.set_subtensor(ret[B.arange(n), y], 1)


def fill_diagonal_offset(a, val, offset):
    """A copy of the matrix a with diagonal `offset` (above the main one when positive, below when
    negative, Theano's and numpy.diagonal's numbering) set to the scalar val (cast to a's dtype).
    Its gradient: a's with that diagonal zeroed; val's, the sum of that diagonal's."""
    a = _convert.as_tensor_variable(a)
    if a.ndim != 2:
        raise TypeError(f"fill_diagonal_offset: a must be a matrix, got {a.ndim} dimensions")
    if not isinstance(val, _core.Variable):
        # A number: a's dtype when it holds the value exactly (Theano's autocast of numbers).
        arr = np.asarray(val)
        if arr.ndim != 0:
            raise TypeError(f"fill_diagonal_offset: val must be a scalar, got shape {arr.shape}")
        if arr.astype(a.dtype) != arr:
            raise TypeError(f"fill_diagonal_offset: val {val!r} is not a value of a's dtype {a.dtype}")
        val = _convert.constant(arr.astype(a.dtype))
    if val.ndim != 0:
        raise TypeError(f"fill_diagonal_offset: val must be a scalar, got {val.ndim} dimensions")
    if val.dtype != a.dtype:
        if not np.can_cast(val.dtype, a.dtype, "safe"):
            raise TypeError(f"fill_diagonal_offset: val ({val.dtype}) must have a's dtype {a.dtype} or one that "
                            "casts to it without loss (Theano's rule); cast it")
        val = B.cast(val, a.dtype)
    offset = _convert._int_scalar(offset)
    zero = _core.int_constant(0)
    first_row = _core.maximum(-offset, zero)
    first_col = _core.maximum(offset, zero)
    n = _core.maximum(_core.minimum(a.shape[0] - first_row, a.shape[1] - first_col), zero)
    i = B.arange(n)
    return B.set_subtensor(a[i + first_row, i + first_col], val)


def fill_diagonal(a, val):
    """A copy of the matrix a with its main diagonal (min(rows, columns) elements) set to the
    scalar val, as numpy.fill_diagonal does in place (Theano's fill_diagonal). Tensors of more
    than two axes are not supported."""
    a = _convert.as_tensor_variable(a)
    if a.ndim != 2:
        raise NotImplementedError(f"fill_diagonal: a must be a matrix here (got {a.ndim} dimensions); "
                                  "the n-d diagonal of a tensor of equal axes is not built")
    return fill_diagonal_offset(a, val, 0)


_INT_KINDS = "iu"


def _int_tensor(x, who, what="x"):
    x = _convert.as_tensor_variable(x)
    if np.dtype(x.dtype).kind not in _INT_KINDS:
        raise TypeError(f"{who}: {what} must hold integers, got {x.type}")
    return x


def _checked(x, cond, msg):
    """x, which the function reads only after the 0-d condition was checked (AssertionError with msg)."""
    return _core.Assert(msg)(x, cond)


def bincount(x, weights=None, minlength=None, assert_nonneg=False):
    """numpy.bincount (Theano's): the number of occurrences of each value 0 .. max(x) of the
    integer vector x (at least minlength bins), or with weights (a vector like x) the sum of the
    weights of each value. Counts are int64 (numpy's; Theano's x.dtype could overflow), weighted
    sums have the weights' dtype (Theano's). A negative value raises AssertionError whatever
    assert_nonneg says (Theano without it counted it from the end, silently)."""
    x = _int_tensor(x, "bincount")
    if x.ndim != 1:
        raise TypeError(f"bincount: x must be a vector, got {x.ndim} dimensions ({x.type})")
    xi = B.cast(x, "int64")
    # The number of bins: max(x) + 1, 0 for an empty x (the -1 stands in for no element).
    n = B.max(B.concatenate([xi, B.constant(np.array([-1], dtype=np.int64))])) + 1
    if x.dtype not in ("uint8", "uint16", "uint32"):
        # (uint64 values past int64's range turn negative in the cast: refused as numpy refuses them.)
        xi = _checked(xi, B.ge(B.min(B.concatenate([xi, B.constant(np.zeros(1, np.int64))])), 0),
                      "bincount: x has negative values (numpy.bincount takes non-negative integers below 2**63)")
    if minlength is not None:
        if isinstance(minlength, (numbers.Integral, np.integer)):
            if minlength < 0:
                raise ValueError(f"bincount: minlength must be non-negative, got {minlength}")
        else:
            minlength = _int_tensor(minlength, "bincount", "minlength")
            n = _checked(n, B.ge(minlength, 0), "bincount: minlength must be non-negative")
        n = _core.maximum(*_convert._operands(n, minlength))
    if weights is None:
        return B.inc_subtensor(B.zeros((n,), dtype="int64")[xi], 1)
    weights = _convert.as_tensor_variable(weights)
    if weights.ndim != 1:
        raise TypeError(f"bincount: weights must be a vector like x, got {weights.type}")
    return B.inc_subtensor(B.zeros((n,), dtype=weights.dtype)[xi], weights)


def compress(condition, x, axis=None):
    """numpy.compress (Theano's): the slices of x along axis (of the flattened x when None) where
    the 1-d condition is true; a condition longer than that axis raises IndexError."""
    condition = _convert.as_tensor_variable(condition)
    if condition.ndim != 1:
        raise ValueError(f"compress: condition must be a 1-d array, got {condition.ndim} dimensions")
    x = _convert.as_tensor_variable(x)
    return x.take(B.flatnonzero(condition), axis=axis)


def bartlett(M):
    """numpy.bartlett (Theano's): the triangular window of M points (float64; empty when M < 1).
    M: an int or a 0-d integer variable."""
    if not isinstance(M, _core.Variable) and not isinstance(M, (numbers.Integral, np.integer)):
        raise TypeError(f"bartlett: M must be an integer, got {M!r}")
    M = _convert._int_scalar(M) if not isinstance(M, _core.Variable) else _int_tensor(M, "bartlett", "M")
    if M.ndim != 0:
        raise TypeError(f"bartlett: M must be a 0-d integer, got {M.type}")
    M = B.cast(M, "int64")
    n = B.cast(B.arange(1 - M, M, 2), "float64")
    denom = B.cast(_core.maximum(M - 1, _core.int_constant(1)), "float64")
    return 1.0 - abs(n) / denom


def unique(ar, return_index=False, return_inverse=False, return_counts=False, axis=None):
    """numpy.unique of the flattened ar (Theano's): its sorted distinct values (NaNs as one, as
    numpy gives them), and when asked, the index of each one's first occurrence (int64), the index
    into them of each element of the flattened ar (the inverse: 1-d, as Theano gave it; numpy 2
    gives ar's shape) and each one's count (int64), in that order (a list when more than the
    values). One stable sort: O(n log n), on any backend. axis other than None is not built."""
    if axis is not None:
        raise NotImplementedError("unique: only axis=None (the flattened array) is built; unique slices along an "
                                  "axis are not")
    ar = _convert.as_tensor_variable(ar)
    from hypatia.tensor.sort import argsort
    flat = ar.flatten() if ar.ndim != 1 else ar
    perm = argsort(flat, kind="stable")
    s = flat[perm]
    n = s.shape[0]
    differs = B.neq(s[1:], s[:-1])
    if np.dtype(ar.dtype).kind == "f":
        differs = B.and_(differs, B.invert(B.and_(B.isnan(s[1:]), B.isnan(s[:-1]))))
    # The first of each run of equal values: position 0 (when there is one) and each change.
    first = B.concatenate([B.ones((_core.minimum(n, _core.int_constant(1)),), dtype="bool"), differs])
    starts = B.flatnonzero(first)
    out = [s[starts]]
    if return_index:
        out.append(perm[starts])
    if return_inverse:
        group = B.cumsum(B.cast(first, "int64")) - 1
        out.append(B.set_subtensor(B.zeros((n,), dtype="int64")[perm], group))
    if return_counts:
        ends = B.concatenate([starts, B.stack([n])])
        out.append(ends[1:] - ends[:-1])
    return out[0] if len(out) == 1 else out


def searchsorted(x, v, side="left", sorter=None):
    """numpy.searchsorted (Theano's): for each element of v, the index where it would go in the
    sorted vector x (before equal elements for side='left', after them for 'right'); int64 of
    v's shape. sorter: the integer vector that sorts x (x[sorter] is read). Computed by one stable
    sort of x and v together, O((n + m) log(n + m)) on any backend (numpy's binary search is
    O(m log n)); x is assumed sorted, as numpy assumes it (NaNs last)."""
    if side not in ("left", "right"):
        raise ValueError(f"searchsorted: side must be 'left' or 'right', got {side!r}")
    x = _convert.as_tensor_variable(x)
    if x.ndim != 1:
        raise TypeError(f"searchsorted: x must be a vector, got {x.ndim} dimensions ({x.type})")
    if sorter is not None:
        sorter = _int_tensor(sorter, "searchsorted", "sorter")
        if sorter.ndim != 1:
            raise TypeError(f"searchsorted: sorter must be a vector, got {sorter.type}")
        x = x[sorter]
    x, v = _convert._operands(x, v)
    from hypatia.tensor.sort import argsort
    vf = v.flatten() if v.ndim != 1 else v
    n, m = x.shape[0], vf.shape[0]
    # Ties: with v first an element of x equal to a v sorts after it (not counted: 'left'); with
    # x first, before it (counted: 'right').
    both = B.concatenate([vf, x] if side == "left" else [x, vf])
    perm = argsort(both, kind="stable")
    from_x = B.ge(perm, m) if side == "left" else B.lt(perm, n)
    xs = B.cast(from_x, "int64")
    before = B.cumsum(xs) - xs  # elements of x sorted before each position
    at = B.set_subtensor(B.zeros((n + m,), dtype="int64")[perm], before)
    r = at[:m] if side == "left" else at[n:]
    return r.reshape(v.shape, ndim=v.ndim) if v.ndim != 1 else r


def _dims_list(dims, who):
    if isinstance(dims, _core.Variable):
        dims = _int_tensor(dims, who, "dims")
        if dims.ndim == 0:
            return [B.cast(dims, "int64")]
        return [B.cast(d, "int64") for d in _convert._shape_list(dims)]
    if isinstance(dims, (numbers.Integral, np.integer)):
        dims = (dims,)
    out = []
    for d in dims:
        if isinstance(d, _core.Variable):
            out.append(B.cast(_int_tensor(d, who, "each of dims"), "int64"))
        else:
            if int(d) < 0:
                raise ValueError(f"{who}: dimensions must be non-negative, got {tuple(dims)}")
            out.append(_core.int_constant(int(d)))
    if not out:
        raise ValueError(f"{who}: dims must not be empty")
    return out


def _strides(dims, order, who):
    if order not in ("C", "F"):
        raise ValueError(f"{who}: order must be 'C' or 'F', got {order!r}")
    strides = [None] * len(dims)
    acc = _core.int_constant(1)
    seq = range(len(dims) - 1, -1, -1) if order == "C" else range(len(dims))
    for k in seq:
        strides[k] = acc
        acc = acc * dims[k]
    return strides, acc


def unravel_index(indices, dims, order="C"):
    """numpy.unravel_index (Theano's): the tuple of coordinate arrays (int64, each of indices'
    shape) of flat indices into an array of shape dims (ints, 0-d integer variables or an integer
    vector of known length). An index outside [0, prod(dims)) raises AssertionError."""
    indices = B.cast(_int_tensor(indices, "unravel_index", "indices"), "int64")
    dims = _dims_list(dims, "unravel_index")
    strides, size = _strides(dims, order, "unravel_index")
    ok = B.and_(B.all(B.ge(indices, 0)), B.all(B.lt(indices, size)))
    indices = _checked(indices, ok, "unravel_index: an index is out of bounds for an array of that size")
    return tuple(indices // st % d for st, d in zip(strides, dims))


def ravel_multi_index(multi_index, dims, mode="raise", order="C"):
    """numpy.ravel_multi_index (Theano's): the flat index (int64) of each coordinate tuple, the
    coordinate arrays broadcast together. mode, for each axis or one for all: 'raise' (a coordinate
    outside [0, dims[k]) raises AssertionError), 'wrap' (taken modulo dims[k]) or 'clip'."""
    if not isinstance(multi_index, (list, tuple)):
        raise TypeError("ravel_multi_index: multi_index must be a tuple of integer arrays, one per dimension")
    dims = _dims_list(dims, "ravel_multi_index")
    if len(multi_index) != len(dims):
        raise ValueError(f"ravel_multi_index: {len(multi_index)} coordinate arrays for {len(dims)} dimensions")
    modes = (mode,) * len(dims) if isinstance(mode, str) else tuple(mode)
    if len(modes) != len(dims) or any(md not in ("raise", "wrap", "clip") for md in modes):
        raise ValueError(f"ravel_multi_index: mode must be 'raise', 'wrap' or 'clip' (or one per dimension), "
                         f"got {mode!r}")
    strides, _ = _strides(dims, order, "ravel_multi_index")
    total = None
    for idx, d, st, md in zip(multi_index, dims, strides, modes):
        idx = B.cast(_int_tensor(idx, "ravel_multi_index", "each coordinate array"), "int64")
        if md == "raise":
            ok = B.and_(B.all(B.ge(idx, 0)), B.all(B.lt(idx, d)))
            idx = _checked(idx, ok, "ravel_multi_index: invalid entry in coordinates array")
        else:
            # A dimension of length 0 has no coordinate to wrap or clip to (numpy raises).
            idx = _checked(idx, B.or_(B.eq(B.prod(idx.shape), 0), B.gt(d, 0)),
                           "ravel_multi_index: a coordinate for a dimension of length 0")
            idx = idx % d if md == "wrap" else B.clip(idx, 0, d - 1)
        term = idx * st
        total = term if total is None else total + term
    return total


__all__ = ["CumOp", "RepeatOp", "cumsum", "cumprod", "diff", "repeat", "squeeze", "to_one_hot", "fill_diagonal",
           "fill_diagonal_offset", "bincount", "compress", "bartlett", "unique", "searchsorted", "unravel_index",
           "ravel_multi_index"]
