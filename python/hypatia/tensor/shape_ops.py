"""Theano's shape and indexing functions of hypatia.tensor (re-exported by hypatia.tensor.basic):
dimshuffle, reshape, join/stack/split, alloc/zeros/ones/fill/*_like, arange, eye, tile, repeat,
broadcast patterns, subtensor, set_subtensor/inc_subtensor and take. Python-only glue, like basic,
on the conversions of hypatia._convert (basic imports this module, not the other way round).
"""
import builtins
import numbers

import numpy as np

from hypatia import _core
from hypatia.configparser import config
from hypatia._convert import (Variable, _broadcastable, _dtype_name, _int_scalar, _operands, _shape_list,
                              as_tensor_variable, cast, constant, get_vector_length)

# ------------------------------------------------------------------------------------------------
# Shapes


def shape(x):
    """The symbolic shape of x (an int64 vector)."""
    return _core.shape(as_tensor_variable(x))


def _pattern(pattern):
    if len(pattern) == 1 and isinstance(pattern[0], (list, tuple)):
        pattern = pattern[0]
    return [-1 if p == "x" else int(p) for p in pattern]


def dimshuffle(x, *pattern):
    """Theano's dimshuffle: input axes in a new order, 'x' for new broadcastable axes."""
    return _core.dimshuffle(as_tensor_variable(x), _pattern(pattern))


def transpose(x, axes=None):
    """x with its axes permuted (reversed when axes is None)."""
    return _core.transpose(as_tensor_variable(x), [] if axes is None else [int(a) for a in axes])


def reshape(x, newshape, ndim=None):
    """x with a new shape (a tuple of ints and 0-d int variables, one may be -1, or an int vector)."""
    x = as_tensor_variable(x)
    if isinstance(newshape, (numbers.Integral, np.integer)):
        newshape = (int(newshape),)
    if isinstance(newshape, (list, tuple)) and not builtins.any(isinstance(s, Variable) for s in newshape):
        return _core.reshape(x, [int(s) for s in newshape])
    if isinstance(newshape, Variable) and newshape.ndim == 1:
        n = ndim if ndim is not None else get_vector_length(newshape)
        return _core.reshape_symbolic(x, newshape, n)
    parts = _shape_list(newshape)
    return _core.reshape_symbolic(x, _core.make_vector([cast(p, "int64") for p in parts]), len(parts))


def flatten(x, ndim=None, outdim=None):
    """Keeps the first ndim-1 axes and flattens the rest (ndim 1: a vector)."""
    n = ndim if ndim is not None else (outdim if outdim is not None else 1)
    return _core.flatten(as_tensor_variable(x), int(n))


def concatenate(tensor_list, axis=0):
    """Joins tensors along an existing axis."""
    return _core.concatenate([as_tensor_variable(t) for t in tensor_list], int(axis))


def join(axis, *tensors_list):
    """Theano's join(axis, *tensors): concatenation along axis."""
    if len(tensors_list) == 1 and isinstance(tensors_list[0], (list, tuple)):
        tensors_list = tensors_list[0]
    return concatenate(tensors_list, axis)


def stack(*tensors, **kwargs):
    """Stacks tensors of one shape along a new axis: stack([a, b], axis=0) (or stack(a, b))."""
    axis = kwargs.pop("axis", 0)
    if "tensors" in kwargs:
        tensors = (kwargs.pop("tensors"),)
    if kwargs:
        raise TypeError(f"stack: unexpected arguments {sorted(kwargs)}")
    if len(tensors) == 2 and isinstance(tensors[0], (list, tuple)) and isinstance(tensors[1], numbers.Integral):
        tensors, axis = tensors  # stack([a, b], axis)
    elif len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tensors[0]
    if len(tensors) == 0:
        raise ValueError("stack: nothing to stack")
    vs = _operands(*tensors)
    return _core.stack(vs, int(axis))


def stacklists(arg):
    """Nested lists of scalars (or tensors of one shape) stacked into one tensor, a list level per
    axis: stacklists([[a, b], [c, d]]) is a 2 x 2 matrix of the scalars a..d (Theano's)."""
    if isinstance(arg, (tuple, list)):
        return stack([stacklists(a) for a in arg])
    return arg


class _NdGrid:
    """T.mgrid / T.ogrid: numpy's index grids with symbolic bounds, T.mgrid[0:n, 0:m]."""

    def __init__(self, sparse):
        self._sparse = sparse

    def __getitem__(self, key):
        key = key if isinstance(key, tuple) else (key,)
        if not all(isinstance(s, slice) and s.stop is not None for s in key):
            raise TypeError(f"{'ogrid' if self._sparse else 'mgrid'}: expected slices with a stop, "
                            f"T.mgrid[0:n, 0:m], got {key!r}")
        if builtins.any(isinstance(s.step, complex) for s in key):
            raise NotImplementedError("mgrid / ogrid: a complex step (a number of points) is not supported")
        n = len(key)
        ranges = []
        for j, s in enumerate(key):
            r = arange(0 if s.start is None else s.start, s.stop, 1 if s.step is None else s.step)
            ranges.append(r.reshape([1] * j + [r.shape[0]] + [1] * (n - 1 - j), ndim=n))
        if self._sparse:
            return ranges
        grids = []
        for i in range(n):
            g = ranges[i]
            for j in range(n):
                if j != i:
                    g = g * _core.ones_like(ranges[j], None)
            grids.append(g)
        return grids


mgrid = _NdGrid(sparse=False)
ogrid = _NdGrid(sparse=True)


def horizontal_stack(*args):
    return concatenate(args, axis=1)


def vertical_stack(*args):
    return concatenate(args, axis=0)


def split(x, splits_size, n_splits, axis=0):
    """Splits x along axis into n_splits pieces of the given lengths."""
    if not isinstance(splits_size, Variable):
        splits_size = constant(np.asarray(splits_size, dtype=np.int64))
    return _core.split(as_tensor_variable(x), splits_size, int(n_splits), int(axis))


def alloc(value, *shape):
    """An array of the given shape filled with value (broadcast)."""
    if len(shape) == 1 and isinstance(shape[0], (list, tuple)):
        shape = shape[0]
    return _core.alloc(as_tensor_variable(value), [_int_scalar(s) for s in shape])


def zeros(shape, dtype=None):
    """Zeros of a shape (ints and 0-d int variables, or an int vector); dtype floatX by default."""
    return _core.zeros(_shape_list(shape), _dtype_name(dtype) or config.floatX)


def ones(shape, dtype=None):
    """Ones of a shape; dtype floatX by default."""
    return _core.ones(_shape_list(shape), _dtype_name(dtype) or config.floatX)


def zeros_like(model, dtype=None):
    """Zeros with model's shape (and dtype unless given)."""
    return _core.zeros_like(as_tensor_variable(model), _dtype_name(dtype))


def ones_like(model, dtype=None):
    """Ones with model's shape (and dtype unless given)."""
    return _core.ones_like(as_tensor_variable(model), _dtype_name(dtype))


def fill(model, value):
    """value broadcast to model's shape."""
    model, value = _operands(model, value)
    return _core.fill(model, value)


second = fill


def arange(start, stop=None, step=1, dtype=None):
    """numpy.arange with symbolic or constant bounds."""
    if stop is None:
        start, stop = 0, start
    vals = []
    for v in (start, stop, step):
        vals.append(v if isinstance(v, Variable) else constant(v))
    if dtype is None:
        dtype = np.result_type(*[np.dtype(v.dtype) for v in vals]).name
    return _core.arange(vals[0], vals[1], vals[2], _dtype_name(dtype))


def eye(n, m=None, k=0, dtype=None):
    """An n x m matrix with ones on diagonal k (dtype floatX by default)."""
    m = n if m is None else m
    return _core.eye(_int_scalar(n), _int_scalar(m), _int_scalar(k), _dtype_name(dtype) or config.floatX)


def identity_like(x):
    """The identity matrix with x's shape and dtype."""
    x = as_tensor_variable(x)
    return _core.eye(x.shape[0], x.shape[1], _core.int_constant(0), x.dtype)


def _integer_rep(r):
    return isinstance(r, (numbers.Integral, np.integer)) and not isinstance(r, bool)


def tile(x, reps, ndim=None):
    """numpy.tile, as Theano's: reps an int, a list of ints and 0-d integer variables, a 0-d
    integer variable or (with ndim given) an integer vector. The result has ndim axes (default
    max(len(reps), x.ndim)); reps is padded with leading 1s. Constant repetitions run as one Tile
    op; symbolic ones as an Alloc of the repetitions' axes, a transposition and a reshape."""
    x = as_tensor_variable(x)
    if ndim is not None and ndim < x.ndim:
        raise ValueError(f"tile: ndim ({ndim}) must be at least x.ndim ({x.ndim})")
    if _integer_rep(reps) or isinstance(reps, np.ndarray):
        arr = np.asarray(reps)
        if arr.dtype.kind not in "iu" or arr.ndim > 1:
            raise ValueError(f"tile: the repetitions must be an integer or a vector of integers, got {arr!r}")
        reps = [int(r) for r in arr.reshape(-1)]
    elif isinstance(reps, Variable):
        if reps.dtype not in ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"):
            raise ValueError(f"tile: the repetitions must be integers, got {reps.dtype}")
        if reps.ndim == 0:
            reps = [reps]
        elif reps.ndim == 1:
            if ndim is None:
                raise ValueError("tile: with the repetitions in a vector variable, ndim must be given")
            try:
                n = get_vector_length(reps)
            except (TypeError, ValueError):
                n = None
            if n is None:
                # A vector of unknown length: 1s before it up to ndim entries; a longer vector fails
                # the reshape to (ndim,) when the function runs (ValueError naming the sizes).
                r = cast(reps, "int64")
                pad = _core.maximum(_int_scalar(ndim) - r.shape[0], _int_scalar(0))
                r = reshape(concatenate([alloc(np.int64(1), pad), r]), [ndim])
                reps = [r[i] for i in range(ndim)]
            else:
                reps = [reps[i] for i in range(n)]
        else:
            raise ValueError(f"tile: the repetitions must be a scalar or a vector, got {reps.ndim} dimensions")
    else:
        reps = list(reps)
        for r in reps:
            if not (_integer_rep(r) or (isinstance(r, Variable) and r.ndim == 0 and r.dtype.startswith(("int", "uint")))):
                raise ValueError(f"tile: the repetitions must be integers or 0-d integer variables, got {r!r}")
        reps = [int(r) if _integer_rep(r) else r for r in reps]
    if ndim is not None and len(reps) > ndim:
        raise ValueError(f"tile: {len(reps)} repetitions for ndim {ndim}")
    ndim = builtins.max(len(reps), x.ndim) if ndim is None else ndim
    reps = [1] * (ndim - len(reps)) + list(reps)
    if builtins.all(_integer_rep(r) for r in reps):
        return _core.tile(x, [int(r) for r in reps])
    # reps[0], shape[0], reps[1], shape[1], ...: x broadcast over the repetitions' axes, then each
    # repetition axis put before its axis and merged with it.
    shape = [1] * (ndim - x.ndim) + [x.shape[i] for i in range(x.ndim)]
    y = alloc(x, *(reps + shape))
    y = y.dimshuffle(*[k for i in range(ndim) for k in (i, ndim + i)])
    return reshape(y, [s * r for s, r in zip(shape, reps)], ndim=ndim)


def repeat(x, repeats, axis=None):
    """numpy.repeat: each element repeated `repeats` times along axis (x flattened when None).

    repeats: an int or 0-d integer variable (every element the same number of times), or an
    integer vector with one count per element along the axis; a vector of length 1 counts for
    every element, as numpy broadcasts it.
    """
    if isinstance(repeats, Variable):
        r = repeats
        if r.ndim == 1 and r.broadcastable[0]:
            r = _core.subtensor(r, (0,))
    elif np.ndim(repeats) == 0:
        r = _int_scalar(repeats)
    else:
        arr = np.asarray(repeats)
        if arr.dtype.kind not in "iu" and arr.size:
            raise TypeError(f"repeat: repeats must be integers, got {arr.dtype}")
        arr = arr.astype(np.int64)
        r = _int_scalar(arr.reshape(-1)[0]) if arr.ndim == 1 and arr.size == 1 else constant(arr)
    if r.ndim > 1:
        raise ValueError(f"repeat: repeats must be a scalar or a vector, got {r.ndim} dimensions")
    return _core.repeat(as_tensor_variable(x), r, axis)


SpecifyShape = _core.SpecifyShape


def specify_shape(x, shape):
    """x, whose shape is checked to be `shape` when the function runs (Theano's specify_shape):
    an AssertionError names the shape expected and the one that came. Later ops and x.shape see
    the given lengths (a function that reads only the shape may then get them without the check,
    as in Theano). shape: a list or tuple with one entry per axis (ints, 0-d integer variables, or
    None for an axis not checked, as PyTensor allows) or an integer vector of known length."""
    x = as_tensor_variable(x)
    if isinstance(shape, Variable):
        if shape.ndim != 1 or shape.dtype[:3] not in ("int", "uin"):
            raise TypeError(f"specify_shape: shape must be an integer vector, got {shape.type}")
        try:
            n = get_vector_length(shape)
        except ValueError:
            raise ValueError(f"specify_shape: the length of the shape vector {shape} must be known when the graph is "
                             f"built (x has {x.ndim} dims)") from None
        entries = [shape[i] for i in range(n)]
    elif isinstance(shape, (numbers.Integral, np.integer)):
        entries = [shape]
    else:
        entries = list(shape)
    if len(entries) != x.ndim:
        raise ValueError(f"specify_shape: x has {x.ndim} dims ({x.type}) but a shape of {len(entries)} entries was "
                         f"given: {shape!r}")
    lengths = []
    for e in entries:
        if e is None:
            lengths.append(None)
        elif isinstance(e, Variable):
            if e.ndim != 0 or e.dtype[:3] not in ("int", "uin"):
                raise TypeError(f"specify_shape: each length must be a 0-d integer, got {e.type}")
            lengths.append(e)
        else:
            if isinstance(e, (bool, np.bool_)) or not isinstance(e, (numbers.Integral, np.integer)):
                raise TypeError(f"specify_shape: each length must be an int, a 0-d integer variable or None, got {e!r}")
            if e < 0:
                raise ValueError(f"specify_shape: a length cannot be negative, got {shape!r}")
            lengths.append(_int_scalar(e))
    if builtins.all(v is None for v in lengths):
        return x
    return _core.specify_shape(x, lengths)


def patternbroadcast(x, broadcastable):
    """x with the broadcastable pattern given (checked at run time)."""
    return _core.patternbroadcast(as_tensor_variable(x), _broadcastable(broadcastable))


def addbroadcast(x, *axes):
    """x with axes made broadcastable (checked at run time to have length 1)."""
    return _core.addbroadcast(as_tensor_variable(x), [int(a) for a in axes])


def unbroadcast(x, *axes):
    """x with axes made not broadcastable."""
    return _core.unbroadcast(as_tensor_variable(x), [int(a) for a in axes])


def squeeze(x):
    """x without its broadcastable axes."""
    return _core.squeeze(as_tensor_variable(x))


def expand_dims(x, axis):
    return _core.expand_dims(as_tensor_variable(x), int(axis))


def shape_padleft(t, n_ones=1):
    """t with n_ones broadcastable axes in front."""
    t = as_tensor_variable(t)
    return _core.dimshuffle(t, [-1] * n_ones + list(range(t.ndim)))


def shape_padright(t, n_ones=1):
    """t with n_ones broadcastable axes at the end."""
    t = as_tensor_variable(t)
    return _core.dimshuffle(t, list(range(t.ndim)) + [-1] * n_ones)


def shape_padaxis(t, axis):
    """t with a broadcastable axis inserted at axis."""
    t = as_tensor_variable(t)
    ndim = t.ndim + 1
    if not -ndim <= axis < ndim:
        raise IndexError(f"shape_padaxis: axis {axis} is out of bounds for {ndim} dimensions")
    if axis < 0:
        axis += ndim
    pattern = list(range(t.ndim))
    pattern.insert(axis, -1)
    return _core.dimshuffle(t, pattern)


def swapaxes(y, axis1, axis2):
    return _core.swapaxes(as_tensor_variable(y), int(axis1), int(axis2))


def roll(x, shift, axis=None):
    """numpy.roll: elements shifted along axis, wrapping around."""
    return _core.roll(as_tensor_variable(x), _int_scalar(shift), axis)


def flip(x, axis):
    return _core.flip(as_tensor_variable(x), int(axis))


# ------------------------------------------------------------------------------------------------
# Indexing


_INT64_MIN, _INT64_MAX = -2**63, 2**63 - 1


def _slice_bound(b):
    """A constant slice bound or step as an int64: Python ints past int64 clamp to it, which selects
    the same elements of any array (as numpy clamps them to Py_ssize_t)."""
    return builtins.min(builtins.max(int(b), _INT64_MIN), _INT64_MAX)


def _index_key(key):
    """A Python index as the tuple _core.subtensor takes (arrays and lists become constants)."""
    if isinstance(key, list) and builtins.any(k is None or k is Ellipsis or isinstance(k, slice) for k in key):
        # A list holding slices (or None, Ellipsis) is a tuple of indices, as in Theano and old numpy:
        # x[[slice(0, 2), slice(1, 3)]] is x[0:2, 1:3].
        key = tuple(key)
    if not isinstance(key, tuple):
        key = (key,)
    out = []
    for k in key:
        if k is None or k is Ellipsis or isinstance(k, Variable):
            out.append(k)
        elif isinstance(k, slice):
            out.append(
                slice(*[b if b is None or isinstance(b, Variable) else _slice_bound(b) for b in (k.start, k.stop, k.step)]))
        elif isinstance(k, (bool, np.bool_)):
            raise IndexError("hypatia: indexing with a Python bool is not supported; use a boolean array")
        elif isinstance(k, (numbers.Integral, np.integer)):
            if not _INT64_MIN <= int(k) <= _INT64_MAX:
                raise IndexError(f"hypatia: index {int(k)} is out of bounds (past int64)")
            out.append(int(k))
        elif isinstance(k, (list, np.ndarray)):
            arr = np.asarray(k)
            if arr.dtype.kind == "b":
                out.append(constant(arr))
            elif arr.dtype.kind in "iu" or arr.size == 0:
                out.append(constant(arr.astype(np.int64)))
            else:
                raise IndexError(f"hypatia: arrays used as indices must be integer or boolean, got {arr.dtype}")
        else:
            raise IndexError(f"hypatia: cannot index with {k!r}")
    return tuple(out)


def subtensor(x, key):
    """x[key] with numpy semantics (basic indexing gives a view)."""
    x = as_tensor_variable(x)
    r = _core.subtensor(x, _index_key(key))
    if r is x and x.ndim > 0:
        # x[:] and x[...] select everything; keep a view node (Subtensor{0:}) so that
        # set_subtensor(x[:], y) knows what was indexed, as in Theano.
        r = _core.subtensor(x, (slice(0, None),))
    return r


def set_subtensor(x, y, inplace=False, tolerate_inplace_aliasing=False):
    """x with the region x[...] replaced by y: x must be the result of indexing (set_subtensor(a[1:3], y))."""
    x = as_tensor_variable(x)
    (y,) = _operands_like(x, y)
    return _core.set_subtensor(x, y)


def inc_subtensor(x, y, inplace=False, set_instead_of_inc=False, tolerate_inplace_aliasing=False):
    """x with y added to the region x[...] (repeated advanced indices accumulate)."""
    if set_instead_of_inc:
        return set_subtensor(x, y)
    x = as_tensor_variable(x)
    (y,) = _operands_like(x, y)
    return _core.inc_subtensor(x, y)


def _operands_like(like, *xs):
    return _operands(like, *xs)[1:]


def take(a, indices, axis=None, mode="raise"):
    """numpy.take: elements of a gathered by integer indices along axis (a flattened when None).

    mode: 'raise' (an index outside [-n, n) raises IndexError), 'wrap' (indices taken modulo n) or
    'clip' (indices clamped to [0, n - 1], so negative ones give the first element, as numpy does).
    """
    if mode not in ("raise", "wrap", "clip"):
        raise ValueError(f"take: mode must be 'raise', 'wrap' or 'clip', got {mode!r}")
    a = as_tensor_variable(a)
    if not isinstance(indices, Variable):
        indices = constant(np.asarray(indices, dtype=np.int64))
    if mode != "raise" and np.dtype(indices.dtype).kind in "iu":
        if axis is not None and not -a.ndim <= axis < a.ndim:
            raise ValueError(f"take: axis {axis} is out of range for a {a.ndim}-d tensor")
        n = a.size if axis is None else a.shape[axis]
        # On an empty axis the gather then raises IndexError, as numpy does.
        indices = indices % n if mode == "wrap" else _core.clip(*_operands(indices, 0, n - 1))
    return _core.take(a, indices, axis)
