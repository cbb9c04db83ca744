"""hypatia.tensor.nnet.neighbours: Theano 1.0's images2neibs and neibs2images.

``images2neibs(ten4, neib_shape, neib_step, mode)`` lists the neighbourhoods (patches) of the
images of a 4-d tensor (batch, channels, rows, cols) as the rows of a matrix: one row per image
and neighbourhood, images in C order and, within an image, the neighbourhoods in row-major order
of their positions; each row is the neib_shape pixels in row-major order. ``neibs2images`` puts
non-overlapping neighbourhoods back into images.

There is no Images2Neibs op: the neighbourhoods are a graph of the engine's shape ops, so the
gradient (overlapping neighbourhoods add their contributions) and the GPU backend come from those
ops. With a constant neib_shape and neib_step (Python ints, the usual case):

* step == shape: a reshape to (batch, channels, grid rows, rows, grid cols, cols) (after a crop
  in 'ignore_borders' and 'wrap_centered'), a transposition and a reshape (one copy);
* otherwise one strided slice per pixel of the neighbourhood (at most 16 pixels) or, for bigger
  neighbourhoods, one per column offset and then one per row offset, stacked along a new first
  axis: the result is then a column-major view of the stacked slices, with no transposition copy.

A symbolic neib_shape or neib_step gathers with index arrays built from arange (one advanced
indexing; its gradient is a scatter-add). 'half' and 'full' pad with zeros first, 'wrap_centered'
extends the image with its own opposite borders.
"""
import builtins as _builtins
import numbers

import numpy as np

from hypatia import _core
from hypatia.tensor import basic as _T
from hypatia.tensor.basic import as_tensor_variable

__all__ = ["images2neibs", "neibs2images", "Images2Neibs"]

MODES = ("valid", "half", "full", "wrap_centered", "ignore_borders")

# Neighbourhoods of at most this many pixels take one slice per pixel; bigger ones two stages
# (a slice per column offset, then per row offset), which keeps the graph to rows + cols slices.
_MAX_PIXEL_SLICES = 16


def _check_mode(mode, who):
    if mode not in MODES:
        raise NotImplementedError(f"{who}: mode must be one of {', '.join(repr(m) for m in MODES)}, got {mode!r}")


def _constant_vector(v):
    """The value of a constant vector (a TensorConstant, or a MakeVector / stack of constants) as a
    numpy array, else None."""
    if not isinstance(v, _core.Variable):
        if isinstance(v, (list, tuple)) and any(isinstance(e, _core.Variable) for e in v):
            return None
        return np.asarray(v)
    if v.owner is None:
        return np.asarray(v.data) if v.kind == "constant" else None
    try:
        return np.asarray([_T.get_scalar_constant_value(v[i]) for i in range(_T.get_vector_length(v))])
    except (_T.NotScalarConstantError, TypeError, ValueError):
        return None


def _pair(value, who, name):
    """(r, c) as two Python ints when `value` is constant, else an int64 vector variable of length 2."""
    arr = _constant_vector(value)
    if arr is not None:
        if arr.shape != (2,) or arr.dtype.kind not in "iuf" or not np.all(arr == np.round(arr)):
            raise ValueError(f"{who}: {name} must be 2 integers (rows, cols), got {value!r}")
        r, c = (int(a) for a in arr)
        if r <= 0 or c <= 0:
            raise ValueError(f"{who}: {name} must be positive, got ({r}, {c})")
        return r, c
    v = as_tensor_variable(value)
    if v.ndim != 1 or not v.dtype.startswith(("int", "uint")):
        raise TypeError(f"{who}: {name} must be 2 integers or an integer vector of 2 entries, got {v.type}")
    return _T.cast(v, "int64")


def _static_dims(x):
    """The sizes of x's axes known while building (a constant's shape, 1 on broadcastable axes),
    None where unknown."""
    if x.owner is None and x.kind == "constant":
        return list(np.shape(x.data))
    return [1 if b else None for b in x.broadcastable]


def _dims(x):
    """x's sizes: an int where known while building, else the symbolic x.shape[i]."""
    return [s if s is not None else x.shape[i] for i, s in enumerate(_static_dims(x))]


def _max0(a):
    return _builtins.max(a, 0) if isinstance(a, numbers.Integral) else _T.maximum(a, 0)


def _guard(x, conds, message):
    """x, checked at run time against `conds` (0-d booleans) by an Assert node."""
    if not conds:
        return x
    return _core.Assert(message)(x, *conds)


def _fmt_shape(dims):
    return "(" + ", ".join("?" if not isinstance(s, numbers.Integral) else str(s) for s in dims) + ")"


# The per-axis condition of each mode for an axis of n pixels, neighbourhood k, step s (Theano's).
_RULES = {
    "valid": ("(n - k) % s == 0", lambda n, k, s: (n - k) % s),
    "half": ("(n - k % 2) % s == 0", lambda n, k, s: (n - k % 2) % s),
    "full": ("(n + k - 2) % s == 0", lambda n, k, s: (n + k - 2) % s),
}


def _check_sizes(x, dims, shape, step, mode, who):
    """Raises ValueError now where the sizes are known and break the mode's rule; returns x guarded
    by the run-time form of the rule for the sizes that are not known."""
    if mode == "ignore_borders":
        return x
    conds, broken = [], []
    for axis, n, k, s in ((2, dims[2], shape[0], step[0]), (3, dims[3], shape[1], step[1])):
        rule = _RULES.get(mode)
        if isinstance(n, numbers.Integral):
            if n < k or (rule is not None and rule[1](n, k, s) != 0):
                broken.append((axis, n, k, s))
            continue
        conds.append(_T.ge(n, k))
        if rule is not None:
            conds.append(_T.eq(rule[1](n, k, s), 0))
    need = "n >= k" if mode == "wrap_centered" else f"n >= k and {_RULES[mode][0]}"
    base = (f"{who}: mode {mode!r} needs, on each image axis of n pixels with neighbourhood size k and step s, "
            f"{need}; neib_shape={tuple(shape)}, neib_step={tuple(step)}")
    if broken:
        what = "; ".join(f"ten4.shape[{a}]={n} against k={k}, s={s}" for a, n, k, s in broken)
        hint = " (mode='ignore_borders' drops the pixels that do not fill a neighbourhood)" \
            if mode == "valid" else ""
        raise ValueError(f"{base}; image shape {_fmt_shape(dims)}: {what}{hint}")
    return _guard(x, conds, f"{base}; the image (the value checked, with its shape) breaks it")


# ------------------------------------------------------------------------------------------------
# Constant neighbourhood shape and step


def _pad(x, dims, pr, pc):
    """x with pr zero rows above and below and pc zero columns left and right."""
    if pr == 0 and pc == 0:
        return x, dims
    b, ch, h, w = dims
    out = _T.zeros((b, ch, h + 2 * pr, w + 2 * pc), dtype=x.dtype)
    out = _T.set_subtensor(out[:, :, pr:pr + h, pc:pc + w], x)
    return out, [b, ch, h + 2 * pr, w + 2 * pc]


def _wrap(x, dims, pr, pc):
    """x extended by its last pr rows above and first pr rows below (the same for pc columns): the
    image seen as a torus, as wrap_centered reads it."""
    b, ch, h, w = dims
    if pr:
        x = _T.concatenate([x[:, :, h - pr:], x, x[:, :, :pr]], axis=2)
    if pc:
        x = _T.concatenate([x[:, :, :, w - pc:], x, x[:, :, :, :pc]], axis=3)
    return x, [b, ch, h + 2 * pr, w + 2 * pc]


def _neighbourhoods(img, dims, shape, step, grid, crop):
    """The neighbourhoods of a padded or extended image whose grid of positions starts at (0, 0).
    crop: the grid may leave pixels out at the end (else it covers the image exactly)."""
    b, ch = dims[0], dims[1]
    (c, d), (sx, sy), (gr, gd) = shape, step, grid
    rows = b * ch * gr * gd
    if (sx, sy) == (c, d):
        # Non-overlapping: crop to the grid, split each axis into (grid, neighbourhood), swap. (Without
        # a crop, sizes that break the mode fail the reshape at run time.)
        if crop and not all(isinstance(n, numbers.Integral) and n == g * k
                            for n, g, k in ((dims[2], gr, c), (dims[3], gd, d))):
            img = img[:, :, :gr * c, :gd * d]
        y = img.reshape((b, ch, gr, c, gd, d), ndim=6).dimshuffle(0, 1, 2, 4, 3, 5)
        return y.reshape((rows, c * d), ndim=2)

    def span(i, s, g):  # entries i, i + s, ..., i + (g - 1) * s: one slice (a non-negative stop, empty for g = 0)
        return slice(i, i + _max0((g - 1) * s + 1), s)

    if c * d <= _MAX_PIXEL_SLICES:
        pieces = [img[:, :, span(i, sx, gr), span(j, sy, gd)] for i in range(c) for j in range(d)]
        z = _T.stack(pieces, axis=0)  # (c*d, b, ch, gr, gd)
        return z.dimshuffle(1, 2, 3, 4, 0).reshape((rows, c * d), ndim=2)
    y = _T.stack([img[:, :, :, span(j, sy, gd)] for j in range(d)], axis=0)  # (d, b, ch, h, gd)
    z = _T.stack([y[:, :, :, span(i, sx, gr)] for i in range(c)], axis=0)  # (c, d, b, ch, gr, gd)
    # The pieces' axes (c, d) come last and merge: a column-major view, no copy.
    return z.dimshuffle(2, 3, 4, 5, 0, 1).reshape((rows, c * d), ndim=2)


def _grid(n, k, s, mode):
    if mode == "wrap_centered":
        return (n + s - 1) // s
    if mode == "half":
        n = n + 2 * (k // 2)
    elif mode == "full":
        n = n + 2 * (k - 1)
    return _max0((n - k) // s + 1)


def _images2neibs_constant(x, shape, step, mode, who):
    (c, d), (sx, sy) = shape, step
    if mode == "wrap_centered" and (c % 2 != 1 or d % 2 != 1):
        raise ValueError(f"{who}: mode 'wrap_centered' needs a neib_shape of odd sizes, got {shape}")
    dims = _dims(x)
    x = _check_sizes(x, dims, shape, step, mode, who)
    grid = (_grid(dims[2], c, sx, mode), _grid(dims[3], d, sy, mode))
    if mode == "half":
        x, dims = _pad(x, dims, c // 2, d // 2)
    elif mode == "full":
        x, dims = _pad(x, dims, c - 1, d - 1)
    elif mode == "wrap_centered":
        x, dims = _wrap(x, dims, c // 2, d // 2)
    return _neighbourhoods(x, dims, shape, step, grid, crop=mode in ("ignore_borders", "wrap_centered"))


# ------------------------------------------------------------------------------------------------
# Symbolic neighbourhood shape or step: one gather with index arrays


def _images2neibs_symbolic(x, shape, step, mode, who):
    def entry(v, i):
        return v[i] if isinstance(v, _core.Variable) else _T.constant(np.int64(v[i]))

    c, d = entry(shape, 0), entry(shape, 1)
    sx, sy = entry(step, 0), entry(step, 1)
    b, ch, h, w = (x.shape[i] for i in range(4))
    conds = [_T.gt(c, 0), _T.gt(d, 0), _T.gt(sx, 0), _T.gt(sy, 0)]
    if mode != "ignore_borders":
        conds += [_T.ge(h, c), _T.ge(w, d)]
    if mode == "wrap_centered":
        conds += [_T.eq(c % 2, 1), _T.eq(d % 2, 1)]
    elif mode in _RULES:
        conds += [_T.eq(_RULES[mode][1](h, c, sx), 0), _T.eq(_RULES[mode][1](w, d, sy), 0)]
    if mode == "ignore_borders":
        rule = ""
    elif mode == "wrap_centered":
        rule = ", the neighbourhood's sizes odd and, on each image axis of n pixels with neighbourhood size k, n >= k"
    else:
        rule = f"; on each image axis of n pixels with neighbourhood size k and step s, n >= k and {_RULES[mode][0]}"
    x = _guard(x, conds, f"{who}: mode {mode!r} with neib_shape / neib_step given as variables needs them positive"
                         f"{rule}; their values or the image (the value checked, with its shape) break it")
    gr, gd = _grid(h, c, sx, mode), _grid(w, d, sy, mode)
    img = x
    if mode in ("half", "full"):
        pr, pc = (c // 2, d // 2) if mode == "half" else (c - 1, d - 1)
        img = _T.zeros((b, ch, h + 2 * pr, w + 2 * pc), dtype=x.dtype)
        img = _T.set_subtensor(img[:, :, pr:pr + h, pc:pc + w], x)
    r = (_T.arange(gr, dtype="int64") * sx).dimshuffle(0, "x", "x", "x") + \
        _T.arange(c, dtype="int64").dimshuffle("x", "x", 0, "x")
    q = (_T.arange(gd, dtype="int64") * sy).dimshuffle("x", 0, "x", "x") + \
        _T.arange(d, dtype="int64").dimshuffle("x", "x", "x", 0)
    if mode == "wrap_centered":
        r, q = (r - c // 2) % h, (q - d // 2) % w
    return img[:, :, r, q].reshape((b * ch * gr * gd, c * d), ndim=2)


# ------------------------------------------------------------------------------------------------
# The API


def images2neibs(ten4, neib_shape, neib_step=None, mode="valid"):
    """The neighbourhoods of the images of ``ten4`` (batch, channels, rows, cols) as the rows of a
    matrix of neib_shape[0] * neib_shape[1] columns (Theano 1.0's images2neibs)::

        for n in batch: for ch in channels: for a in grid rows: for b in grid cols:
            row = ten4[n, ch, a*step[0] : a*step[0] + shape[0], b*step[1] : b*step[1] + shape[1]].flatten()

    neib_shape: (rows, cols) of a neighbourhood; neib_step: how far apart they start (default
    neib_shape: disjoint neighbourhoods; smaller steps overlap, bigger ones skip pixels). Both are
    2 positive ints (a tuple, list, array or constant vector) or an integer vector variable.

    mode: 'valid': the neighbourhoods must cover each axis exactly, n >= k and (n - k) % s == 0 for
    an axis of n pixels, neighbourhood k, step s (a ValueError while building where the sizes are
    known, else an AssertionError when the function runs);
    'ignore_borders': the pixels past the last whole neighbourhood are dropped; 'half' / 'full':
    'valid' on the image padded with k // 2 / k - 1 zeros on each side; 'wrap_centered': odd
    neighbourhoods centred on the pixels 0, s, 2s, ... (ceil(n / s) per axis), the image wrapping
    around at its borders (each axis at least k pixels). 'half', 'full' and 'wrap_centered' check
    their sizes as 'valid' does.

    The gradient is defined in every mode (overlapping neighbourhoods add; Theano's covered 'valid',
    and 'ignore_borders' with disjoint neighbourhoods)."""
    who = "images2neibs"
    _check_mode(mode, who)
    x = as_tensor_variable(ten4)
    if x.ndim != 4:
        raise TypeError(f"{who}: ten4 must be a 4-d tensor (batch, channels, rows, cols), got {x.type}")
    shape = _pair(neib_shape, who, "neib_shape")
    step = shape if neib_step is None else _pair(neib_step, who, "neib_step")
    if isinstance(shape, tuple) and isinstance(step, tuple):
        return _images2neibs_constant(x, shape, step, mode, who)
    return _images2neibs_symbolic(x, shape, step, mode, who)


def neibs2images(neibs, neib_shape, original_shape, mode="valid"):
    """The inverse of images2neibs(ten4, neib_shape, mode=mode) for disjoint neighbourhoods (the
    default step): the images of shape ``original_shape`` (4 entries: ints, 0-d int variables or
    an int vector such as ``x.shape``) rebuilt from the rows of ``neibs``. mode 'valid' (the
    neighbourhoods cover the images) or 'ignore_borders' (the pixels past the last whole
    neighbourhood are zeros), as in Theano 1.0. neib_shape may be symbolic."""
    who = "neibs2images"
    if mode not in ("valid", "ignore_borders"):
        raise NotImplementedError(f"{who}: mode must be 'valid' or 'ignore_borders' (as in Theano 1.0), got {mode!r}")
    neibs = as_tensor_variable(neibs)
    if neibs.ndim != 2:
        raise TypeError(f"{who}: neibs must be a matrix (one neighbourhood a row), got {neibs.type}")
    shape = _pair(neib_shape, who, "neib_shape")
    c, d = shape if isinstance(shape, tuple) else (shape[0], shape[1])
    if isinstance(original_shape, (list, tuple)):
        dims = list(original_shape)
    elif isinstance(original_shape, _core.Variable) and _constant_vector(original_shape) is None:
        if original_shape.ndim != 1 or not original_shape.dtype.startswith(("int", "uint")):
            raise TypeError(f"{who}: original_shape must be 4 sizes or an integer vector of 4, got "
                            f"{original_shape.type}")
        try:
            n = _T.get_vector_length(original_shape)
        except (TypeError, ValueError):
            n = 4  # a length known only at run time: indexing it checks
        dims = [original_shape[i] for i in range(4)] if n == 4 else [None] * n
    else:
        dims = list(_constant_vector(original_shape).reshape(-1))
    if len(dims) != 4:
        raise ValueError(f"{who}: original_shape must have 4 entries (batch, channels, rows, cols), got "
                         f"{original_shape!r}")
    dims = [int(s) if isinstance(s, (numbers.Integral, np.integer)) else s for s in dims]
    b, ch, h, w = dims
    gr, gd = h // c, w // d
    known = all(isinstance(v, numbers.Integral) for v in (h, w, c, d))
    if mode == "valid" and known and (h % c or w % d):
        raise ValueError(f"{who}: mode 'valid' needs image rows and cols that are multiples of neib_shape; "
                         f"original_shape {_fmt_shape(dims)}, neib_shape {(c, d)} (mode='ignore_borders' pads "
                         "the rest with zeros)")
    if mode == "valid" and not known:
        neibs = _guard(neibs, [_T.eq(h % c, 0), _T.eq(w % d, 0)],
                       f"{who}: mode 'valid' needs image rows and cols (original_shape[2:]) that are multiples of "
                       "neib_shape")
    img = neibs.reshape((b, ch, gr, gd, c, d), ndim=6).dimshuffle(0, 1, 2, 4, 3, 5)
    if mode == "valid":
        # (A size that is not a multiple fails this reshape too, where no Assert checked it.)
        return img.reshape((b, ch, h, w), ndim=4)
    img = img.reshape((b, ch, gr * c, gd * d), ndim=4)
    if not (known and h % c == 0 and w % d == 0):
        out = _T.zeros((b, ch, h, w), dtype=neibs.dtype)
        img = _T.set_subtensor(out[:, :, :gr * c, :gd * d], img)
    return img


class Images2Neibs:
    """Theano's op class as a callable: ``Images2Neibs(mode)(ten4, neib_shape, neib_step)`` is
    ``images2neibs(ten4, neib_shape, neib_step, mode)``. The result is a graph of shape ops, not one
    Images2Neibs node."""

    __props__ = ("mode",)
    BORDER_MODES = MODES

    def __init__(self, mode="valid"):
        _check_mode(mode, "Images2Neibs")
        self.mode = mode

    def __call__(self, ten4, neib_shape, neib_step=None):
        return images2neibs(ten4, neib_shape, neib_step, self.mode)

    def __eq__(self, other):
        return type(self) is type(other) and self.mode == other.mode

    def __hash__(self):
        return hash((type(self), self.mode))

    def __str__(self):
        return f"Images2Neibs{{{self.mode}}}"

    __repr__ = __str__
