"""Theano's tensor functions (hypatia.tensor, imported as T), each forwarding to one C++ builder.

What happens here is Python-only glue: Python scalars, lists and numpy arrays become constants,
Theano's argument spellings (axis=int or list, 'x' in dimshuffle patterns, shapes mixing ints and
variables) become the C++ arguments.
"""
import builtins as _builtins
import numbers

import numpy as np

from hypatia import _core
from hypatia._convert import (  # noqa: F401  (re-exported: Theano's names and the helpers of tensor's modules)
    _all_python_floats, _axes, _broadcastable, _dtype_name, _flatten_list, _int_scalar, _is_python_scalar,
    _numpy_value, _one_axis, _operands, _shape_list, as_tensor, as_tensor_variable, cast, constant, get_vector_length,
)
from hypatia.compile.sharedvalue import SharedVariable  # noqa: F401
from hypatia.configparser import config
from hypatia.gof.graph import Constant
from hypatia.tensor.sharedvar import TensorSharedVariable  # noqa: F401
from hypatia.tensor.type import TensorType

Variable = _core.Variable
TensorVariable = _core.Variable
Apply = _core.Apply


class TensorConstant(Constant):
    """isinstance(v, TensorConstant): v is a constant (v.data holds its value)."""

    _kinds = ("constant",)


# ------------------------------------------------------------------------------------------------
# Type constructors


def _constructor(broadcastable, doc):
    def make(name=None, dtype=None):
        dt = config.floatX if dtype is None else _dtype_name(dtype)
        return TensorType(dt, list(broadcastable))(name)

    make.__doc__ = doc
    return make


scalar = _constructor((), "A 0-d variable (dtype floatX unless given).")
vector = _constructor((False,), "A 1-d variable.")
row = _constructor((True, False), "A 1xN matrix variable (first dimension broadcastable).")
col = _constructor((False, True), "An Nx1 matrix variable (second dimension broadcastable).")
matrix = _constructor((False, False), "A 2-d variable.")
tensor3 = _constructor((False,) * 3, "A 3-d variable.")
tensor4 = _constructor((False,) * 4, "A 4-d variable.")
tensor5 = _constructor((False,) * 5, "A 5-d variable.")
tensor6 = _constructor((False,) * 6, "A 6-d variable.")
tensor7 = _constructor((False,) * 7, "A 7-d variable.")

_KINDS = {
    "scalar": (),
    "vector": (False,),
    "row": (True, False),
    "col": (False, True),
    "matrix": (False, False),
    "tensor3": (False,) * 3,
    "tensor4": (False,) * 4,
    "tensor5": (False,) * 5,
    "tensor6": (False,) * 6,
    "tensor7": (False,) * 7,
}
_PREFIXES = {"b": "int8", "w": "int16", "i": "int32", "l": "int64", "f": "float32", "d": "float64"}
_PLURAL = {"scalar": "scalars", "vector": "vectors", "row": "rows", "col": "cols", "matrix": "matrices",
           "tensor3": "tensor3s", "tensor4": "tensor4s", "tensor5": "tensor5s", "tensor6": "tensor6s",
           "tensor7": "tensor7s"}


def _plural(kind, dtype):
    def make(*names, **kwargs):
        """Several variables at once (Theano's plural constructors): make(3) gives 3 unnamed
        ones, make('a', 'b') two named a and b, and so does one comma-separated string
        make('a, b'). One string without commas is a name per character, as in Theano:
        make('xy') gives x and y, and make('x') one variable (not a list)."""
        dt = _dtype_name(kwargs.pop("dtype", None)) or dtype or config.floatX
        if kwargs:
            raise TypeError(f"unexpected keyword arguments {sorted(kwargs)}")

        def new(name=None):
            return TensorType(dt, list(_KINDS[kind]))(name)

        if names and isinstance(names[0], (numbers.Integral, np.integer)) and not isinstance(names[0], bool):
            return [new() for _ in range(int(names[0]))]
        if len(names) == 1 and isinstance(names[0], str):
            text = names[0]
            if "," in text:
                return [new(n.strip()) for n in text.split(",")]
            if len(text) == 1:
                return new(text)
            return [new(c) for c in text]
        return [new(n) for n in names]

    return make


for _kind, _bc in _KINDS.items():
    globals()[_PLURAL[_kind]] = _plural(_kind, None)
    for _p, _dt in _PREFIXES.items():
        globals()[_p + _kind] = TensorType(_dt, list(_bc))
        globals()[_p + _PLURAL[_kind]] = _plural(_kind, _dt)
del _kind, _bc, _p, _dt


def tensor(dtype, broadcastable, name=None, sparse_grad=False):
    """A variable of any rank: TensorType(dtype, broadcastable)(name); broadcastable takes any truthy
    or falsy entries, one per dimension."""
    return TensorType(dtype, broadcastable)(name)


# ------------------------------------------------------------------------------------------------
# Elementwise


def _fold(fn, args, who):
    if len(args) == 0:
        raise TypeError(f"{who} needs at least one argument")
    args = _operands(*args)
    r = args[0]
    for a in args[1:]:
        r = fn(r, a)
    return r


def add(*args):
    """Elementwise sum of any number of tensors (broadcasting)."""
    return _fold(_core.add, args, "add")


def mul(*args):
    """Elementwise product of any number of tensors (broadcasting)."""
    return _fold(_core.mul, args, "mul")


def largest(*args):
    return _fold(_core.maximum, args, "largest")


def smallest(*args):
    return _fold(_core.minimum, args, "smallest")


def _binary(core_fn, name, doc):
    def f(a, b):
        a, b = _operands(a, b)
        return core_fn(a, b)

    f.__name__ = name
    f.__doc__ = doc
    return f


def _unary(core_fn, name, doc):
    def f(a):
        return core_fn(as_tensor_variable(a))

    f.__name__ = name
    f.__doc__ = doc
    return f


def _scalar_op_wrappers():
    """The wrapper of every scalar op builder (sub, exp, sigmoid, ...), made from the rows of
    src/hypatia/ops/scalar_ops.def: each row names its _core builder, its names here (the first,
    then aliases: abs_ and abs, sgn and sign, ...) and its docstring. add and mul are written
    above (any number of arguments)."""
    for _name, core_name, arity, names, doc in _core.scalar_op_wrappers():
        if not names:
            continue
        names = names.split()
        make = _unary if arity == 1 else _binary
        f = make(getattr(_core, core_name), names[0], doc)
        for n in names:
            globals()[n] = f


_scalar_op_wrappers()


def round_half_away_from_zero(a):
    """x rounded half away from zero (C's round): trunc(x), one step further from zero when the
    part cut off is at least a half. (sign(x) * floor(|x| + 0.5), the textbook form, is wrong
    where |x| + 0.5 rounds: 0.49999997 and odd floats from 2**23 on.) Integers are returned as
    they are."""
    a = as_tensor_variable(a)
    if a.dtype.startswith(("int", "uint", "bool")):
        return a
    t = trunc(a)
    # trunc(x) where nothing is added keeps its sign (round(-0.4) is -0.0).
    return switch(ge(abs_(sub(a, t)), 0.5), add(t, sign(a)), t)


def round(a, mode=None):  # noqa: A001
    """x rounded; mode 'half_to_even' (numpy's rule, the default) or 'half_away_from_zero'."""
    if mode in (None, "half_to_even"):
        return round_half_to_even(a)
    if mode == "half_away_from_zero":
        return round_half_away_from_zero(a)
    raise ValueError(f"round: unknown mode {mode!r}")


def iround(a, mode=None):
    """round(a) cast to int64."""
    return cast(round(a, mode), "int64")


def clip(x, min, max):  # noqa: A002
    """x limited to [min, max] elementwise."""
    x, lo, hi = _operands(x, min, max)
    return _core.clip(x, lo, hi)


def switch(cond, ift, iff):
    """ift where cond is true, else iff (elementwise, broadcasting)."""
    cond = as_tensor_variable(cond)
    a, b = _operands(ift, iff)
    return _core.switch(cond, a, b)


where = switch


def isclose(a, b, rtol=1.0e-5, atol=1.0e-8, equal_nan=False):
    """|a - b| <= atol + rtol * |b| elementwise (numpy.isclose)."""
    a, b = _operands(a, b)
    r = le(_core.abs(sub(a, b)), add(atol, mul(rtol, _core.abs(b))))
    r = or_(r, eq(a, b))
    if equal_nan:
        r = or_(r, and_(_core.isnan(a), _core.isnan(b)))
    return r


def allclose(a, b, rtol=1.0e-5, atol=1.0e-8, equal_nan=False):
    return all(isclose(a, b, rtol, atol, equal_nan))


def deg2rad(x):
    return mul(x, np.pi / 180.0)


def rad2deg(x):
    return mul(x, 180.0 / np.pi)


def tensor_copy(x):
    """An elementwise copy of x."""
    return _core.elemwise("identity", [as_tensor_variable(x)])


# ------------------------------------------------------------------------------------------------
# Reductions


def sum(input, axis=None, dtype=None, keepdims=False, acc_dtype=None):  # noqa: A001
    """Sum over axis (all axes when None); dtype is the output dtype."""
    return _core.sum(as_tensor_variable(input), _axes(axis), keepdims, _dtype_name(dtype))


def prod(input, axis=None, dtype=None, keepdims=False, acc_dtype=None, no_zeros_in_input=False):
    """Product over axis (all axes when None)."""
    return _core.prod(as_tensor_variable(input), _axes(axis), keepdims, _dtype_name(dtype))


def mean(input, axis=None, dtype=None, op=False, keepdims=False, acc_dtype=None):
    """Mean over axis (float64 for integer inputs, else the input's dtype unless dtype is given)."""
    r = _core.mean(as_tensor_variable(input), _axes(axis), keepdims)
    return cast(r, dtype) if dtype is not None else r


def var(input, axis=None, ddof=0, keepdims=False, corrected=False):
    """Variance over axis with ddof delta degrees of freedom."""
    return _core.var(as_tensor_variable(input), _axes(axis), keepdims, int(ddof))


def std(input, axis=None, ddof=0, keepdims=False, corrected=False):
    """Standard deviation over axis."""
    return _core.std(as_tensor_variable(input), _axes(axis), keepdims, int(ddof))


def max(x, axis=None, keepdims=False):  # noqa: A001
    """Maximum over axis (NaN propagates)."""
    return _core.max(as_tensor_variable(x), _axes(axis), keepdims)


def min(x, axis=None, keepdims=False):  # noqa: A001
    """Minimum over axis (NaN propagates)."""
    return _core.min(as_tensor_variable(x), _axes(axis), keepdims)


def argmax(x, axis=None, keepdims=False):
    """Index of the maximum along one axis (of the flattened input when None), int64."""
    return _core.argmax(as_tensor_variable(x), _one_axis(axis, "argmax"), keepdims)


def argmin(x, axis=None, keepdims=False):
    """Index of the minimum along one axis (of the flattened input when None), int64."""
    return _core.argmin(as_tensor_variable(x), _one_axis(axis, "argmin"), keepdims)


def max_and_argmax(a, axis=None, keepdims=False):
    """[max(a, axis), argmax(a, axis)]."""
    return [max(a, axis, keepdims), argmax(a, axis, keepdims)]


def all(x, axis=None, keepdims=False):  # noqa: A001
    """Whether every element over axis is non-zero (bool)."""
    return _core.all(as_tensor_variable(x), _axes(axis), keepdims)


def any(x, axis=None, keepdims=False):  # noqa: A001
    """Whether some element over axis is non-zero (bool)."""
    return _core.any(as_tensor_variable(x), _axes(axis), keepdims)


def cumsum(x, axis=None):
    """Cumulative sum along axis (of the flattened input when None)."""
    return _core.cumsum(as_tensor_variable(x), _one_axis(axis, "cumsum"))


def cumprod(x, axis=None):
    """Cumulative product along axis (of the flattened input when None)."""
    return _core.cumprod(as_tensor_variable(x), _one_axis(axis, "cumprod"))


def norm(x, L=2, axis=None):
    """The L-norm over axis: L=1 sum of |x|, L=2 sqrt of the sum of squares, else (sum |x|^L)^(1/L)."""
    x = as_tensor_variable(x)
    if L == 1:
        return sum(_core.abs(x), axis)
    if L == 2:
        return _core.sqrt(sum(_core.sqr(x), axis))
    return pow(sum(pow(_core.abs(x), L), axis), 1.0 / L)


# ------------------------------------------------------------------------------------------------
# Linear algebra


def dot(a, b):
    """numpy.dot (0-d operands multiply elementwise; higher ndim contracts like numpy)."""
    a, b = _operands(a, b)
    return _core.dot(a, b)


def tensordot(a, b, axes=2):
    """numpy.tensordot: axes an int, or a pair of axis lists."""
    a, b = as_tensor_variable(a), as_tensor_variable(b)
    if isinstance(axes, (numbers.Integral, np.integer)):
        return _core.tensordot(a, b, int(axes))
    aa, ba = axes
    aa = [int(aa)] if np.ndim(aa) == 0 else [int(i) for i in aa]
    ba = [int(ba)] if np.ndim(ba) == 0 else [int(i) for i in ba]
    return _core.tensordot_axes(a, b, aa, ba)


def batched_dot(a, b):
    """dot(a[i], b[i]) for each i of the leading axis."""
    return _core.batched_dot(as_tensor_variable(a), as_tensor_variable(b))


def _axes_pair(axes, x, y, who):
    """Theano's axes of a (batched) tensordot as two lists: an int i is x's last i axes and y's
    first i after the batch axis; a pair's members are ints or lists (numbered with the batch
    axis as 0)."""
    if isinstance(axes, (numbers.Integral, np.integer)):
        i = int(axes)
        if i < 0 or i > x.ndim - 1 or i > y.ndim - 1:
            raise ValueError(f"{who}: axes={i} needs {i} axes besides the batch axis in both operands, got "
                             f"{x.ndim} and {y.ndim} dimensions")
        return list(range(x.ndim - i, x.ndim)), list(range(1, i + 1))
    if len(axes) != 2:
        raise ValueError(f"{who}: axes must be an int or a pair (axes of x, axes of y), got {axes!r}")
    xa, ya = ([int(a)] if np.ndim(a) == 0 else [int(k) for k in a] for a in axes)
    xa = [a + x.ndim if a < 0 else a for a in xa]
    ya = [a + y.ndim if a < 0 else a for a in ya]
    if len(xa) != len(ya):
        raise ValueError(f"{who}: {len(xa)} axes of x against {len(ya)} axes of y")
    for axs, v, n in ((xa, x, "x"), (ya, y, "y")):
        if _builtins.any(a < 1 or a >= v.ndim for a in axs) or len(set(axs)) != len(axs):
            raise ValueError(f"{who}: the axes of {n} must be distinct and in 1..{v.ndim - 1} (axis 0 is the batch), "
                             f"got {axs}")
    return xa, ya


def batched_tensordot(x, y, axes=2):
    """tensordot(x[i], y[i], axes) for each i of the leading (batch) axis (Theano's
    batched_tensordot): axes an int (x's last axes against y's first after the batch axis) or a
    pair of axis lists numbered with the batch axis as 0. The result's axes are the batch, x's
    remaining axes, then y's."""
    import functools
    import operator
    x, y = as_tensor_variable(x), as_tensor_variable(y)
    if x.ndim < 2 or y.ndim < 2:
        raise ValueError(f"batched_tensordot: x and y need a batch axis and at least one more, got {x.ndim} and "
                         f"{y.ndim} dimensions")
    xa, ya = _axes_pair(axes, x, y, "batched_tensordot")
    xf = [a for a in range(1, x.ndim) if a not in xa]
    yf = [a for a in range(1, y.ndim) if a not in ya]
    prod = functools.partial(functools.reduce, operator.mul)
    n = x.shape[0]
    k = prod([x.shape[a] for a in xa], 1)
    xs = [x.shape[a] for a in xf]
    ys = [y.shape[a] for a in yf]
    xm = transpose(x, [0] + xf + xa).reshape([n, prod(xs, 1), k], ndim=3)
    ym = transpose(y, [0] + ya + yf).reshape([n, k, prod(ys, 1)], ndim=3)
    return batched_dot(xm, ym).reshape([n] + xs + ys, ndim=1 + len(xs) + len(ys))


def nonzero(a, return_matrix=False):
    """The indices of a's nonzero elements (NaN counts), in C order: a tuple of one int64 vector
    per axis (numpy.nonzero), or with return_matrix=True one (a.ndim, count) matrix."""
    a = as_tensor_variable(a)
    idx = flatnonzero(a)
    out = []
    stride = 1
    for d in reversed(range(a.ndim)):
        out.append(idx // stride % a.shape[d] if d > 0 else idx // stride)
        stride = stride * a.shape[d]
    out = tuple(reversed(out))
    return stack(list(out), axis=0) if return_matrix else out


def flatnonzero(a):
    """The indices of a's nonzero elements in a.flatten() (numpy.flatnonzero; int64)."""
    from hypatia.tensor.sort import argsort
    a = as_tensor_variable(a)
    if a.ndim == 0:
        raise ValueError("flatnonzero: a must have at least one axis (numpy's nonzero of a 0-d array is deprecated)")
    flat = a if a.ndim == 1 else a.flatten()
    zero = _core.cast(_core.eq(flat, _core.scalar_like(0, flat)), "int8")
    # The stable order of the zero flags lists the nonzero elements first, in their order.
    count = _core.sum(_core.cast(_core.neq(flat, _core.scalar_like(0, flat)), "int64"))
    return argsort(zero, kind="stable")[:count]


def nonzero_values(a):
    """a's nonzero elements (NaN counts), in C order: a.flatten()[flatnonzero(a)]."""
    a = as_tensor_variable(a)
    return a.flatten()[flatnonzero(a)]


class NotScalarConstantError(Exception):
    """get_scalar_constant_value: the variable is not a constant of one value (Theano's)."""


def get_scalar_constant_value(v, elemwise=True, only_process_constants=False, max_recur=10):
    """The value of v when it is a constant whose elements are all equal (seen through
    DimShuffle, Rebroadcast and an Alloc of such a constant, and with elemwise=True through
    elementwise ops of such constants, computed), as a 0-d numpy array; numbers and numpy arrays
    are taken as they are. Raises NotScalarConstantError otherwise."""
    for _ in range(_builtins.max(max_recur, 0) + 1):
        if elemwise and not only_process_constants and isinstance(v, Variable) and v.owner is not None \
                and isinstance(v.owner.op, (_core.Elemwise, _core.Composite)):
            node = v.owner
            values = [get_scalar_constant_value(i, elemwise, only_process_constants, max_recur - 1)
                      for i in node.inputs]
            outs = node.op(*[constant(np.asarray(c, dtype=i.dtype)) for c, i in zip(values, node.inputs)])
            out = outs[node.outputs.index(v)] if isinstance(outs, (list, tuple)) else outs
            return np.asarray(out.eval())
        if not isinstance(v, Variable):
            arr = np.asarray(v)
            if arr.size == 0 or not np.all(arr == arr.reshape(-1)[0]):
                raise NotScalarConstantError(f"{v!r} is not a scalar constant")
            return np.asarray(arr.reshape(-1)[0])
        if v.owner is None:
            if v.kind != "constant":
                raise NotScalarConstantError(f"{v} is not a constant ({v.kind})")
            v = v.data
            continue
        if only_process_constants or not isinstance(v.owner.op, (_core.DimShuffle, _core.Rebroadcast, _core.Alloc)):
            raise NotScalarConstantError(f"{v} is computed by {v.owner.op}, not a constant")
        v = v.owner.inputs[0]
    raise NotScalarConstantError(f"{v}: too many steps to a constant (max_recur)")


def extract_constant(x, elemwise=True, only_process_constants=False):
    """x as a 0-d constant of its value when get_scalar_constant_value finds one, else x."""
    try:
        value = get_scalar_constant_value(x, elemwise, only_process_constants)
    except NotScalarConstantError:
        return x
    return constant(value, dtype=x.dtype if isinstance(x, Variable) else None)


def outer(x, y):
    """Outer product of two vectors."""
    return _core.outer(as_tensor_variable(x), as_tensor_variable(y))


def gemm(z, alpha, x, y, beta):
    """beta * z + alpha * dot(x, y) (the Gemm op)."""
    z, x, y = as_tensor_variable(z), as_tensor_variable(x), as_tensor_variable(y)
    alpha = alpha if isinstance(alpha, Variable) else constant(alpha, dtype=z.dtype)
    beta = beta if isinstance(beta, Variable) else constant(beta, dtype=z.dtype)
    return _core.gemm(z, alpha, x, y, beta)


# Op classes, for isinstance checks on graph nodes (node.op).
from hypatia.op import Op  # noqa: E402  (C++ ops are instances too)


class _ElemwiseMeta(type):
    def __instancecheck__(cls, obj):
        return isinstance(obj, (_core.Elemwise, _core.Composite, _core.MultiComposite))

    def __subclasscheck__(cls, sub):
        return issubclass(sub, (_core.Elemwise, _core.Composite, _core.MultiComposite))


class Elemwise(metaclass=_ElemwiseMeta):
    """isinstance(node.op, T.Elemwise): an elementwise op, fused (Elemwise{Composite{...}}) or not."""


Composite = _core.Composite
CAReduce = _core.CAReduce
Sum = Prod = CAReduce
ArgReduce = _core.ArgReduce
DimShuffle = _core.DimShuffle
Shape = _core.Shape
Shape_i = _core.Shape_i
MakeVector = _core.MakeVector
Alloc = _core.Alloc
Reshape = _core.Reshape
Join = _core.Join
Split = _core.Split
ARange = _core.ARange
Eye = _core.Eye
Tile = _core.Tile
Rebroadcast = _core.Rebroadcast
Subtensor = _core.Subtensor
AdvancedSubtensor = _core.AdvancedSubtensor
IncSubtensor = _core.IncSubtensor
Dot = _core.Dot
CumOp = _core.CumOp


# Shapes and indexing live in shape_ops (which imports nothing from this module).
from hypatia.tensor.shape_ops import *  # noqa: E402,F401,F403
from hypatia.tensor.shape_ops import _index_key, _pattern  # noqa: E402,F401


def transfer(var, target):
    """Theano's tensor.transfer: `var` copied to `target`, 'cpu' (the host) or a GPU ('gpu',
    'cuda', 'cudaN', 'cuda:N'). As a function output, a transfer to the GPU keeps the result there
    (HYPATIA_FLAGS=device=cuda runs the graph on the CUDA backend)."""
    from hypatia import _core

    var = as_tensor_variable(var)
    if target == "cpu":
        return _core.host_from_device(var)
    if target in ("gpu", "dev0"):
        target = "cuda"
    return _core.device_from_host(var, target)


def _index_grid(length, size, axis, ndim):
    """arange(length) % size shaped to lie along `axis` of an ndim-d index (the positions of an
    axis of `length` in an array whose axis has `size`: 1 when it is broadcast, else `length`)."""
    g = arange(length, dtype="int64") % size
    return g.dimshuffle(*["x" if d != axis else 0 for d in range(ndim)])


def _pad_leading(v, ndim):
    """v with broadcastable axes added in front up to ndim axes."""
    return v if v.ndim == ndim else v.dimshuffle(*(["x"] * (ndim - v.ndim) + list(range(v.ndim))))


def choose(a, choices, out=None, mode="raise"):
    """numpy.choose (Theano's): out[i] = choices[a[i]][i] with a and the choices broadcast
    together; `choices` a list or tuple of tensors or one tensor whose first axis enumerates
    them. mode 'raise' (an entry outside [0, n) raises AssertionError when the function runs),
    'wrap' (a % n) or 'clip'. The gradient reaches the choices."""
    if out is not None:
        raise TypeError("choose: out is not supported (a symbolic result has no output array)")
    if mode not in ("raise", "wrap", "clip"):
        raise ValueError(f"choose: mode must be 'raise', 'wrap' or 'clip', got {mode!r}")
    a = as_tensor_variable(a)
    if not a.dtype.startswith(("int", "uint")):
        raise TypeError(f"choose: a must be an integer tensor, got {a.type}")
    if isinstance(choices, (list, tuple)):
        cs = [as_tensor_variable(c) for c in choices]
        if not cs:
            raise ValueError("choose: choices must not be empty")
        nd = _builtins.max(c.ndim for c in cs)
        cs = [_pad_leading(c, nd) for c in cs]
        # Each choice broadcast to their common shape: plus the zeros of every choice's shape
        # (zeros_like, not c * 0, which is NaN for an infinite c).
        dtype = np.result_type(*[np.dtype(c.dtype) for c in cs]).name
        zero = zeros_like(cs[0], dtype=dtype)
        for c in cs[1:]:
            zero = zero + zeros_like(c, dtype=dtype)
        C = stack([cast(c, dtype) + zero for c in cs])
    else:
        C = as_tensor_variable(choices)
        if C.ndim == 0:
            raise TypeError(f"choose: choices must have at least one axis, got a 0-d {C.type}")
    n = C.shape[0]
    nd = _builtins.max(a.ndim, C.ndim - 1)
    a = _pad_leading(a, nd)
    if C.ndim - 1 < nd:
        C = C.dimshuffle(*([0] + ["x"] * (nd - (C.ndim - 1)) + list(range(1, C.ndim))))
    ai = cast(a, "int64")
    if mode == "wrap":
        ai = ai % n
    elif mode == "clip":
        ai = clip(ai, 0, n - 1)
    else:
        ai = _core.Assert("choose: an entry of a is outside [0, len(choices))")(
            ai, all(ge(ai, 0)), all(lt(ai, n)))
    grids = [_index_grid(maximum(a.shape[k], C.shape[k + 1]), C.shape[k + 1], k, nd) for k in range(nd)]
    return C[tuple([ai] + grids)]


def permute_row_elements(x, y, inverse=0):
    """Theano's permute_row_elements: each row (last axis) of x permuted by y, out[..., i] =
    x[..., y[..., i]] (inverse: out[..., y[..., i]] = x[..., i]), x and y broadcast over their
    leading axes (one permutation for every row, one row for every permutation, or a row each).
    An index outside the row raises IndexError; with inverse, a y that is not a permutation
    raises AssertionError (its inverse would be ambiguous). The gradient reaches x."""
    from hypatia.tensor.sort import argsort, sort

    x = as_tensor_variable(x)
    y = as_tensor_variable(y)
    if not y.dtype.startswith(("int", "uint")):
        raise TypeError(f"permute_row_elements: y must be an integer tensor, got {y.type}")
    if x.ndim == 0 or y.ndim == 0:
        raise TypeError(f"permute_row_elements: x and y need at least one axis, got {x.type} and {y.type}")
    perm = cast(y, "int64")
    if inverse:
        n = x.shape[-1]
        ok = all(eq(sort(perm, axis=-1), arange(n, dtype="int64")))
        perm = _core.Assert("permute_row_elements: y is not a permutation of each row's positions")(
            argsort(perm, axis=-1), ok)
    nd = _builtins.max(x.ndim, y.ndim)
    xp, pp = _pad_leading(x, nd), _pad_leading(perm, nd)
    grids = [_index_grid(maximum(xp.shape[k], pp.shape[k]), xp.shape[k], k, nd) for k in range(nd - 1)]
    return xp[tuple(grids + [pp])]
