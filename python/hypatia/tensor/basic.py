"""Theano's tensor functions (hypatia.tensor, imported as T), each forwarding to one C++ builder.

What happens here is Python-only glue: Python scalars, lists and numpy arrays become constants,
Theano's argument spellings (axis=int or list, 'x' in dimshuffle patterns, shapes mixing ints and
variables) become the C++ arguments.
"""
import builtins
import numbers

import numpy as np

from hypatia import _core
from hypatia.configparser import config

Variable = _core.Variable
TensorVariable = _core.Variable
TensorType = _core.TensorType
Apply = _core.Apply


class _VariableKindMeta(type):
    def __instancecheck__(cls, obj):
        return isinstance(obj, Variable) and obj.kind in cls._kinds


class TensorConstant(metaclass=_VariableKindMeta):
    """isinstance(v, TensorConstant): v is a constant (v.data holds its value)."""

    _kinds = ("constant",)


class TensorSharedVariable(metaclass=_VariableKindMeta):
    """isinstance(v, TensorSharedVariable): v is a shared variable (get_value / set_value)."""

    _kinds = ("shared",)


Constant = TensorConstant
SharedVariable = TensorSharedVariable


# ------------------------------------------------------------------------------------------------
# Conversions


def _dtype_name(dtype):
    if dtype is None:
        return None
    if isinstance(dtype, str):
        return config.floatX if dtype == "floatX" else np.dtype(dtype).name
    return np.dtype(dtype).name


def _is_python_scalar(x):
    return isinstance(x, (bool, int, float)) and not isinstance(x, np.generic)


def _numpy_value(x, dtype=None):
    """numpy array for a constant: Python floats become floatX, ints int64, bools bool."""
    if dtype is not None:
        return np.array(x, dtype=_dtype_name(dtype))
    if isinstance(x, np.ndarray):
        return np.array(x)
    if isinstance(x, bool):
        return np.array(x, dtype=bool)
    if isinstance(x, int):
        return np.array(x, dtype=np.int64)
    if isinstance(x, float):
        return np.array(x, dtype=config.floatX)
    arr = np.asarray(x)
    if arr.dtype == np.float64 and not isinstance(x, np.generic) and _all_python_floats(x):
        arr = arr.astype(config.floatX)
    return arr


def _all_python_floats(x):
    if isinstance(x, (list, tuple)):
        return builtins.all(_all_python_floats(e) for e in x)
    return isinstance(x, float)


def constant(x, name=None, ndim=None, dtype=None):
    """A constant holding x (Python floats become floatX, Python ints int64)."""
    arr = _numpy_value(x, dtype)
    if ndim is not None and arr.ndim != ndim:
        if arr.ndim < ndim:
            arr = arr.reshape((1,) * (ndim - arr.ndim) + arr.shape)
        else:
            raise ValueError(f"constant: value has {arr.ndim} dimensions, expected {ndim}")
    if arr.dtype.kind not in "biuf" or arr.dtype.itemsize == 2 and arr.dtype.kind == "f":
        raise TypeError(f"constant: unsupported dtype {arr.dtype} (bool, int, uint, float32, float64 only)")
    return _core.constant(arr, name or "")


def _flatten_list(x):
    for e in x:
        if isinstance(e, (list, tuple)):
            yield from _flatten_list(e)
        else:
            yield e


def as_tensor_variable(x, name=None, ndim=None, dtype=None):
    """x as a symbolic variable: Variables as they are, lists holding Variables stacked, anything
    else a constant."""
    if isinstance(x, Variable):
        v = x
    elif isinstance(x, Apply):
        if x.nout != 1:
            raise TypeError(f"as_tensor_variable: {x} has {x.nout} outputs; pick one")
        v = x.outputs[0]
    elif isinstance(x, (list, tuple)) and builtins.any(isinstance(e, Variable) for e in _flatten_list(x)):
        v = stack([as_tensor_variable(e) for e in x])
    else:
        v = constant(x, name=name, dtype=dtype)
    if dtype is not None and v.dtype != _dtype_name(dtype):
        v = cast(v, dtype)
    if ndim is not None and v.ndim != ndim:
        if v.ndim > ndim and builtins.all(v.broadcastable[: v.ndim - ndim]):
            v = _core.dimshuffle(v, list(range(v.ndim - ndim, v.ndim)))
        elif v.ndim < ndim:
            v = shape_padleft(v, ndim - v.ndim)
        else:
            raise ValueError(f"as_tensor_variable: {v} has {v.ndim} dimensions, expected {ndim}")
    return v


as_tensor = as_tensor_variable


def _operands(*xs):
    """Variables for op arguments: Python scalars take a dtype that fits the first Variable among
    them (numpy's rule for Python scalars); other values become constants."""
    like = next((x for x in xs if isinstance(x, Variable)), None)
    out = []
    for x in xs:
        if isinstance(x, Variable):
            out.append(x)
        elif like is not None and _is_python_scalar(x):
            if isinstance(x, bool) and like.dtype == "bool":
                out.append(constant(x))
            else:
                out.append(_core.scalar_like(float(x), like))
        else:
            out.append(as_tensor_variable(x))
    return out


def _axes(axis):
    if axis is None:
        return None
    if isinstance(axis, Variable):
        if axis.kind != "constant":
            raise TypeError("axis must be known when the graph is built (an int, a list of ints or a constant)")
        axis = axis.data.tolist()
    if isinstance(axis, (numbers.Integral, np.integer)):
        return [int(axis)]
    return [int(a) for a in axis]


def _one_axis(axis, who):
    axes = _axes(axis)
    if axes is None:
        return None
    if len(axes) != 1:
        raise ValueError(f"{who}: expected a single axis, got {axis}")
    return axes[0]


def _int_scalar(x):
    """A 0-d integer variable for a shape entry or bound."""
    if isinstance(x, Variable):
        if x.ndim != 0:
            raise TypeError(f"expected a 0-d integer variable, got {x.type}")
        return x
    return _core.int_constant(int(x))


def get_vector_length(v):
    """Length of a symbolic vector when it is known while the graph is built."""
    v = as_tensor_variable(v)
    if v.ndim != 1:
        raise TypeError(f"get_vector_length: expected a vector, got {v.type}")
    if v.broadcastable[0]:
        return 1
    if v.kind == "constant":
        return len(v.data)
    if v.owner is not None:
        op = v.owner.op
        if isinstance(op, _core.Shape):
            return v.owner.inputs[0].ndim
        if isinstance(op, _core.MakeVector):
            return len(v.owner.inputs)
        if isinstance(op, _core.Subtensor) and len(op.idx_list) == 1:
            entry = op.idx_list[0]
            if isinstance(entry, slice) and "input" not in (entry.start, entry.stop, entry.step):
                return len(range(get_vector_length(v.owner.inputs[0]))[entry])
    raise ValueError(f"length of {v} cannot be determined while the graph is built")


def _shape_list(shape):
    """A shape as a list of 0-d int Variables (from ints, Variables, or a symbolic vector)."""
    if isinstance(shape, Variable):
        if shape.ndim == 0:
            return [shape]
        return [shape[i] for i in range(get_vector_length(shape))]
    if isinstance(shape, (numbers.Integral, np.integer)):
        return [_int_scalar(shape)]
    return [_int_scalar(s) for s in shape]


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
        if len(names) == 1 and isinstance(names[0], int):
            names = [None] * names[0]
        dt = _dtype_name(kwargs.get("dtype")) or dtype or config.floatX
        return [TensorType(dt, list(_KINDS[kind]))(n) for n in names]

    return make


for _kind, _bc in _KINDS.items():
    globals()[_PLURAL[_kind]] = _plural(_kind, None)
    for _p, _dt in _PREFIXES.items():
        globals()[_p + _kind] = TensorType(_dt, list(_bc))
        globals()[_p + _PLURAL[_kind]] = _plural(_kind, _dt)
del _kind, _bc, _p, _dt


def tensor(dtype, broadcastable, name=None):
    """A variable of any rank: TensorType(dtype, broadcastable)(name)."""
    return TensorType(_dtype_name(dtype), list(broadcastable))(name)


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


sub = _binary(_core.sub, "sub", "a - b elementwise.")
true_div = _binary(_core.true_div, "true_div", "a / b elementwise (true division).")
int_div = _binary(_core.int_div, "int_div", "a // b elementwise (floor division).")
floor_div = int_div
mod = _binary(_core.mod, "mod", "a % b elementwise (sign of b, like numpy).")
pow = _binary(_core.pow, "pow", "a ** b elementwise.")
maximum = _binary(_core.maximum, "maximum", "Elementwise maximum (NaN propagates).")
minimum = _binary(_core.minimum, "minimum", "Elementwise minimum (NaN propagates).")
arctan2 = _binary(_core.arctan2, "arctan2", "Elementwise arctan(a / b) in the right quadrant.")
eq = _binary(_core.eq, "eq", "a == b elementwise (bool).")
neq = _binary(_core.neq, "neq", "a != b elementwise (bool).")
lt = _binary(_core.lt, "lt", "a < b elementwise (bool).")
le = _binary(_core.le, "le", "a <= b elementwise (bool).")
gt = _binary(_core.gt, "gt", "a > b elementwise (bool).")
ge = _binary(_core.ge, "ge", "a >= b elementwise (bool).")
and_ = _binary(_core.and_, "and_", "a & b elementwise (bitwise; logical for bool).")
or_ = _binary(_core.or_, "or_", "a | b elementwise (bitwise; logical for bool).")
xor = _binary(_core.xor, "xor", "a ^ b elementwise (bitwise; logical for bool).")
bitwise_and, bitwise_or, bitwise_xor = and_, or_, xor

neg = _unary(_core.neg, "neg", "-x elementwise.")
abs_ = _unary(_core.abs, "abs_", "|x| elementwise.")
abs = abs_  # noqa: A001
sgn = _unary(_core.sign, "sgn", "Sign of x (-1, 0 or 1).")
sign = sgn
inv = _unary(_core.reciprocal, "inv", "1 / x elementwise.")
reciprocal = inv
sqr = _unary(_core.sqr, "sqr", "x * x elementwise.")
square = sqr
sqrt = _unary(_core.sqrt, "sqrt", "Square root elementwise.")
exp = _unary(_core.exp, "exp", "e ** x elementwise.")
exp2 = _unary(_core.exp2, "exp2", "2 ** x elementwise.")
expm1 = _unary(_core.expm1, "expm1", "exp(x) - 1, accurate near 0.")
log = _unary(_core.log, "log", "Natural logarithm elementwise.")
log2 = _unary(_core.log2, "log2", "Base-2 logarithm elementwise.")
log10 = _unary(_core.log10, "log10", "Base-10 logarithm elementwise.")
log1p = _unary(_core.log1p, "log1p", "log(1 + x), accurate near 0.")
sin = _unary(_core.sin, "sin", "Sine elementwise.")
cos = _unary(_core.cos, "cos", "Cosine elementwise.")
tan = _unary(_core.tan, "tan", "Tangent elementwise.")
arcsin = _unary(_core.arcsin, "arcsin", "Inverse sine elementwise.")
arccos = _unary(_core.arccos, "arccos", "Inverse cosine elementwise.")
arctan = _unary(_core.arctan, "arctan", "Inverse tangent elementwise.")
sinh = _unary(_core.sinh, "sinh", "Hyperbolic sine elementwise.")
cosh = _unary(_core.cosh, "cosh", "Hyperbolic cosine elementwise.")
tanh = _unary(_core.tanh, "tanh", "Hyperbolic tangent elementwise.")
arcsinh = _unary(_core.arcsinh, "arcsinh", "Inverse hyperbolic sine elementwise.")
arccosh = _unary(_core.arccosh, "arccosh", "Inverse hyperbolic cosine elementwise.")
arctanh = _unary(_core.arctanh, "arctanh", "Inverse hyperbolic tangent elementwise.")
erf = _unary(_core.erf, "erf", "Error function elementwise.")
erfc = _unary(_core.erfc, "erfc", "1 - erf(x) elementwise.")
erfinv = _unary(_core.erfinv, "erfinv", "Inverse error function elementwise.")
gamma = _unary(_core.gamma, "gamma", "Gamma function elementwise.")
gammaln = _unary(_core.gammaln, "gammaln", "log |gamma(x)| elementwise.")
psi = _unary(_core.psi, "psi", "Digamma function elementwise.")
tri_gamma = _unary(_core.trigamma, "tri_gamma", "Trigamma function elementwise.")
trigamma = tri_gamma
floor = _unary(_core.floor, "floor", "Largest integer <= x elementwise.")
ceil = _unary(_core.ceil, "ceil", "Smallest integer >= x elementwise.")
trunc = _unary(_core.trunc, "trunc", "x rounded toward zero elementwise.")
round_half_to_even = _unary(_core.round, "round_half_to_even", "x rounded half to even (numpy.round).")
invert = _unary(_core.invert, "invert", "Bitwise not (logical not for bool).")
bitwise_not = invert
isnan = _unary(_core.isnan, "isnan", "Whether x is NaN (bool).")
isinf = _unary(_core.isinf, "isinf", "Whether x is infinite (bool).")


def round_half_away_from_zero(a):
    """x rounded half away from zero: sign(x) * floor(|x| + 0.5)."""
    a = as_tensor_variable(a)
    return _core.mul(_core.sign(a), _core.floor(add(_core.abs(a), 0.5)))


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


def cast(x, dtype):
    """x converted to dtype elementwise (x itself when it already has it)."""
    x = as_tensor_variable(x)
    dt = _dtype_name(dtype)
    return x if x.dtype == dt else _core.cast(x, dt)


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


def sigmoid(x):
    """1 / (1 + exp(-x)) elementwise."""
    return _core.sigmoid(as_tensor_variable(x))


def softplus(x):
    """log(1 + exp(x)) elementwise, computed stably."""
    return _core.softplus(as_tensor_variable(x))


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


def tile(x, reps, ndim=None):
    """numpy.tile with constant repetitions."""
    return _core.tile(as_tensor_variable(x), [int(r) for r in reps])


def repeat(x, repeats, axis=None):
    """numpy.repeat: repeats an int, an int vector, or a symbolic integer."""
    if isinstance(repeats, Variable):
        r = repeats
    elif np.ndim(repeats) == 0:
        r = _core.int_constant(int(repeats))
    else:
        r = constant(np.asarray(repeats, dtype=np.int64))
    return _core.repeat(as_tensor_variable(x), r, axis)


def patternbroadcast(x, broadcastable):
    """x with the broadcastable pattern given (checked at run time)."""
    return _core.patternbroadcast(as_tensor_variable(x), [bool(b) for b in broadcastable])


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


def _index_key(key):
    """A Python index as the tuple _core.subtensor takes (arrays and lists become constants)."""
    if not isinstance(key, tuple):
        key = (key,)
    out = []
    for k in key:
        if k is None or k is Ellipsis or isinstance(k, Variable):
            out.append(k)
        elif isinstance(k, slice):
            out.append(slice(*[b if b is None or isinstance(b, Variable) else int(b) for b in (k.start, k.stop, k.step)]))
        elif isinstance(k, (bool, np.bool_)):
            raise IndexError("hypatia: indexing with a Python bool is not supported; use a boolean array")
        elif isinstance(k, (numbers.Integral, np.integer)):
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
    """numpy.take: elements of a gathered by integer indices along axis (a flattened when None)."""
    if mode != "raise":
        raise NotImplementedError("take: only mode='raise' is supported")
    if not isinstance(indices, Variable):
        indices = constant(np.asarray(indices, dtype=np.int64))
    return _core.take(as_tensor_variable(a), indices, axis)


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
        return isinstance(obj, (_core.Elemwise, _core.Composite))

    def __subclasscheck__(cls, sub):
        return issubclass(sub, (_core.Elemwise, _core.Composite))


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
