"""Theano's TensorVariable methods and Python operators, attached to hypatia._core.Variable.

Operators take Python scalars (a dtype that fits the other operand, numpy's rule) and numpy
arrays (constants of their own dtype) on either side. ``==`` is identity, as in Theano: use
T.eq for the elementwise comparison.
"""
import atexit

from hypatia import _core
from hypatia.compile.function import function
from hypatia.tensor import basic as B
from hypatia.tensor import linalg_basic as _linalg
from hypatia.tensor.basic import TensorConstant  # noqa: F401  (Theano's tensor.var.TensorConstant)
from hypatia.tensor.sort import argsort as _argsort
from hypatia.tensor.sort import sort as _sort

Variable = _core.Variable


def _binop(fn, reflected=False):
    if reflected:
        def op(self, other):
            b, a = B._operands(self, other)
            return fn(a, b)
    else:
        def op(self, other):
            a, b = B._operands(self, other)
            return fn(a, b)
    return op


_OPERATORS = {
    "add": _core.add,
    "sub": _core.sub,
    "mul": _core.mul,
    "truediv": _core.true_div,
    "floordiv": _core.int_div,
    "mod": _core.mod,
    "pow": _core.pow,
    "matmul": _core.dot,
    "and": _core.and_,
    "or": _core.or_,
    "xor": _core.xor,
}
for _name, _fn in _OPERATORS.items():
    setattr(Variable, f"__{_name}__", _binop(_fn))
    setattr(Variable, f"__r{_name}__", _binop(_fn, reflected=True))


def _comparison(fn):
    compare = _binop(fn)

    def op(self, other):
        r = compare(self, other)
        r.__dict__["_hyp_is_comparison"] = True  # (no truth value: see _bool)
        return r
    return op


for _name, _fn in {"lt": _core.lt, "le": _core.le, "gt": _core.gt, "ge": _core.ge}.items():
    setattr(Variable, f"__{_name}__", _comparison(_fn))
del _name, _fn

Variable.__neg__ = lambda self: _core.neg(self)
Variable.__pos__ = lambda self: self
Variable.__abs__ = lambda self: _core.abs(self)
Variable.__invert__ = lambda self: _core.invert(self)
# numpy defers to these operators instead of treating a Variable as an object array.
Variable.__array_ufunc__ = None
Variable.__array_priority__ = 1000


def _bool(self):
    # Theano's rule: a variable is true (so `if W:`, `W or default` and `[p for p in params if p]`
    # work), except the result of <, <=, > or >=, so that `a < b < c` (Python's (a < b) and
    # (b < c)) raises instead of silently meaning b < c.
    if self.__dict__.get("_hyp_is_comparison"):
        raise TypeError("Variables do not support boolean operations: the result of a comparison has no truth "
                        "value while the graph is built (a < b < c is (a < b) and (b < c)); use "
                        "T.and_(a < b, b < c), or T.switch")
    return True


def _len(self):
    raise TypeError("object of type 'TensorVariable' has no len(); use x.shape[0] for its symbolic length")


def _iter(self):
    try:
        n = B.get_vector_length(self)
    except (TypeError, ValueError):
        raise TypeError("TensorType does not support iteration: the length of this variable is not known "
                        "while the graph is built") from None
    for i in range(n):
        yield self[i]


# A shared variable given Python attributes (default_update, tag annotations) keeps its Python
# object, and so those attributes, for the life of the process: the engine holds the variable
# itself, and a graph that still reads it after the user's last reference went (Lasagne's
# BatchNorm makes a clone with a default_update inside get_output_for) would otherwise get a fresh
# object without them, and the update would silently not run. The cost: such variables are
# never freed (model state usually lives that long anyway).
_kept_shared = {}
_object_setattr = object.__setattr__


def _setattr(self, name, value):
    _object_setattr(self, name, value)
    if self.kind == "shared" and name not in ("name",):
        _kept_shared[id(self)] = self


@atexit.register
def _release_kept_shared():
    # Before the interpreter tears the modules down: the engine's objects then go in order.
    _kept_shared.clear()


Variable.__setattr__ = _setattr
Variable.__bool__ = _bool
Variable.__len__ = _len
Variable.__iter__ = _iter
Variable.__getitem__ = lambda self, key: B.subtensor(self, key)


class _Tag:
    """Theano's var.tag: free-form annotations, and test_value (the C++ variable's test value,
    used when config.compute_test_value is on). A view created on each access: the attributes live
    in the variable's __dict__, so no reference cycle through the variable is made."""

    def __init__(self, var):
        object.__setattr__(self, "_var", var)
        object.__setattr__(self, "_attrs", var.__dict__.setdefault("_hyp_tag", {}))

    def __getattr__(self, name):
        if name == "test_value":
            return self._var.test_value
        try:
            return self._attrs[name]
        except KeyError:
            raise AttributeError(name) from None

    def __setattr__(self, name, value):
        if name == "test_value":
            self._var.test_value = value
        else:
            self._attrs[name] = value

    def __delattr__(self, name):
        del self._attrs[name]

    def __repr__(self):
        return f"Tag({self._attrs})"


def _tag(self):
    return _Tag(self)


def _transpose(self, *axes):
    if len(axes) == 1 and isinstance(axes[0], (list, tuple)):
        axes = axes[0]
    return B.transpose(self, axes if axes else None)


def _eval(self, inputs_to_values=None):
    """Computes the value of this variable given values of the free inputs it depends on."""
    inputs_to_values = inputs_to_values or {}
    keys = list(inputs_to_values)
    f = function(keys, self, on_unused_input="ignore")
    return f(*[inputs_to_values[k] for k in keys])


def _get_value(self, borrow=False, return_internal_type=False):
    """The value of a shared variable (a copy unless borrow=True)."""
    return _core.get_value(self, borrow, return_internal_type)


def _set_value(self, value, borrow=False):
    """Replaces the value of a shared variable (copied unless borrow=True)."""
    _core.set_value(self, value, borrow)


def _clone(self):
    """Theano's Variable.clone(): a new variable like this one with no owner (an input of its type
    and name; a constant of its value; for a shared variable another one holding the same value)."""
    from hypatia.gof.graph import _copy_variable
    return _copy_variable(self)


def _extra_ops():
    from hypatia.tensor import extra_ops
    return extra_ops


def _copy(self, name=None):
    r = B.tensor_copy(self)
    if name is not None:
        r.name = name
    return r


_METHODS = {
    "T": property(lambda self: _core.transpose(self, [])),
    "transpose": _transpose,
    "dimshuffle": lambda self, *pattern: B.dimshuffle(self, *pattern),
    "reshape": lambda self, shape, ndim=None: B.reshape(self, shape, ndim),
    "flatten": lambda self, ndim=1: B.flatten(self, ndim),
    "ravel": lambda self: B.flatten(self, 1),
    "sum": lambda self, axis=None, dtype=None, keepdims=False, acc_dtype=None: B.sum(self, axis, dtype, keepdims),
    "prod": lambda self, axis=None, dtype=None, keepdims=False, acc_dtype=None: B.prod(self, axis, dtype, keepdims),
    "mean": lambda self, axis=None, dtype=None, keepdims=False, acc_dtype=None: B.mean(self, axis, dtype,
                                                                                      keepdims=keepdims),
    "var": lambda self, axis=None, ddof=0, keepdims=False, corrected=False: B.var(self, axis, ddof, keepdims),
    "std": lambda self, axis=None, ddof=0, keepdims=False, corrected=False: B.std(self, axis, ddof, keepdims),
    "max": lambda self, axis=None, keepdims=False: B.max(self, axis, keepdims),
    "min": lambda self, axis=None, keepdims=False: B.min(self, axis, keepdims),
    "argmax": lambda self, axis=None, keepdims=False: B.argmax(self, axis, keepdims),
    "argmin": lambda self, axis=None, keepdims=False: B.argmin(self, axis, keepdims),
    "all": lambda self, axis=None, keepdims=False: B.all(self, axis, keepdims),
    "any": lambda self, axis=None, keepdims=False: B.any(self, axis, keepdims),
    "cumsum": lambda self, axis=None: B.cumsum(self, axis),
    "cumprod": lambda self, axis=None: B.cumprod(self, axis),
    "norm": lambda self, L=2, axis=None: B.norm(self, L, axis),
    "astype": lambda self, dtype: B.cast(self, dtype),
    "clip": lambda self, a_min, a_max: B.clip(self, a_min, a_max),
    "dot": lambda self, other: B.dot(self, other),
    "round": lambda self, mode=None: B.round(self, mode),
    "squeeze": lambda self: B.squeeze(self),
    "swapaxes": lambda self, a, b: B.swapaxes(self, a, b),
    "repeat": lambda self, repeats, axis=None: B.repeat(self, repeats, axis),
    "take": lambda self, indices, axis=None, mode="raise": B.take(self, indices, axis, mode),
    "sort": lambda self, axis=-1, kind="quicksort", order=None: _sort(self, axis, kind, order),
    "argsort": lambda self, axis=-1, kind="quicksort", order=None: _argsort(self, axis, kind, order),
    "fill": lambda self, value: B.fill(self, value),
    "zeros_like": lambda self, dtype=None: B.zeros_like(self, dtype),
    "ones_like": lambda self, dtype=None: B.ones_like(self, dtype),
    "conj": lambda self: self,
    "real": property(lambda self: self),
    "copy": _copy,
    "eval": _eval,
    "shape": property(lambda self: _core.shape(self)),
    "size": property(lambda self: B.prod(_core.shape(self))),
    "tag": property(_tag),
    "get_value": _get_value,
    "set_value": _set_value,
    "clone": _clone,
    "get_test_value": lambda self: self.test_value,
    "searchsorted": lambda self, v, side="left", sorter=None: _extra_ops().searchsorted(self, v, side, sorter),
    "value": property(lambda self: self.data),
}

def _elementwise_method(name):
    def method(self):
        return getattr(B, name)(self)
    method.__name__ = name
    method.__doc__ = f"T.{name}(self)."
    return method


# Theano's elementwise methods ((x - m).exp().sum(), M.diagonal(), x.ptp()).
for _name in ("arccos", "arccosh", "arcsin", "arcsinh", "arctan", "arctanh", "ceil", "cos", "cosh", "deg2rad",
              "exp", "exp2", "expm1", "floor", "log", "log10", "log1p", "log2", "rad2deg", "sin", "sinh", "sqrt",
              "tan", "tanh", "trunc"):
    _METHODS[_name] = _elementwise_method(_name)
_METHODS.update({
    "conjugate": lambda self: self,
    "diagonal": lambda self, offset=0, axis1=0, axis2=1: _linalg.diagonal(self, offset, axis1, axis2),
    "trace": lambda self: _linalg.trace(self),
    "ptp": lambda self, axis=None, keepdims=False: B.max(self, axis, keepdims) - B.min(self, axis, keepdims),
    "transfer": lambda self, target: B.transfer(self, target),
    "nonzero": lambda self, return_matrix=False: B.nonzero(self, return_matrix),
    "nonzero_values": lambda self: B.nonzero_values(self),
    "get_scalar_constant_value": lambda self: B.get_scalar_constant_value(self),
})
for _name, _m in _METHODS.items():
    setattr(Variable, _name, _m)
del _name, _m

# Theano's name for the variable class.
TensorVariable = Variable
