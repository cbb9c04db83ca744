"""hypatia.compile.ops (theano.compile.ops): as_op, which makes an op of a Python function on
numpy arrays (Theano's decorator), and the op it makes, FromFunctionOp."""
from hypatia import _core
from hypatia.op import Op


class FromFunctionOp(Op):
    """An op whose perform calls fn(*input_arrays): one value, or a list or tuple of one per output
    type. Inputs must have the types of itypes exactly. No gradient: define an Op for that."""

    def __init__(self, fn, itypes, otypes, infer_shape=None):
        self._fn = fn
        self.itypes = list(itypes)
        self.otypes = list(otypes)
        self._infer_shape = infer_shape

    def __eq__(self, other):
        return type(self) is type(other) and self._fn == other._fn and self.itypes == other.itypes \
            and self.otypes == other.otypes

    def __hash__(self):
        return hash((type(self), self._fn))

    def __str__(self):
        return f"FromFunctionOp{{{getattr(self._fn, '__name__', self._fn)}}}"

    __repr__ = __str__

    def __reduce__(self):
        # As Theano's: the op is found again where the decorated function's name now names it.
        module, name = getattr(self._fn, "__module__", None), getattr(self._fn, "__qualname__", "")
        if not module or "<locals>" in name:
            import pickle

            raise pickle.PicklingError(f"{self}: an as_op op pickles by its module and name; define the decorated "
                                       "function at a module's top level")
        return _load_back, (module, name)

    def perform(self, node, inputs, output_storage):
        outs = self._fn(*inputs)
        if not isinstance(outs, (list, tuple)):
            outs = (outs,)
        if len(outs) != len(output_storage):
            raise ValueError(f"{self}: the function returned {len(outs)} values for {len(output_storage)} outputs")
        for cell, value in zip(output_storage, outs):
            cell[0] = value


class _FromFunctionOpWithShape(FromFunctionOp):
    def infer_shape(self, node, input_shapes):
        return self._infer_shape(node, input_shapes)


def _load_back(module, name):
    import importlib

    obj = importlib.import_module(module)
    for part in name.split("."):
        obj = getattr(obj, part)
    return obj


def as_op(itypes, otypes, infer_shape=None):
    """Decorator: the function (numpy arrays in, arrays out) becomes an op taking inputs of the
    types itypes and giving outputs of the types otypes (Theano's as_op)::

        @as_op(itypes=[T.dmatrix, T.dvector], otypes=[T.dvector])
        def solve(a, b):
            return numpy.linalg.solve(a, b)

    infer_shape(node, input_shapes) -> output shapes may be given (without it, shapes come from
    running the op). The op has no gradient."""
    itypes = list(itypes) if isinstance(itypes, (list, tuple)) else [itypes]
    otypes = list(otypes) if isinstance(otypes, (list, tuple)) else [otypes]
    for what, ts in (("itypes", itypes), ("otypes", otypes)):
        bad = [t for t in ts if not isinstance(t, _core.TensorType)]
        if bad:
            raise TypeError(f"as_op: {what} must be tensor types (T.dvector, T.TensorType(...)), got {bad[0]!r}")
    if infer_shape is not None and not callable(infer_shape):
        raise TypeError("as_op: infer_shape must be a callable (node, input_shapes) -> output shapes")

    def make_op(fn):
        cls = FromFunctionOp if infer_shape is None else _FromFunctionOpWithShape
        return cls(fn, itypes, otypes, infer_shape)

    return make_op


__all__ = ["as_op", "FromFunctionOp"]
