"""The scalar ops table (src/hypatia/ops/scalar_ops.def): every row with a builder is bound in
_core and has its hypatia.tensor wrapper (and aliases) with its docstring, and the wrapper builds an
Elemwise node of that scalar op that compiles and runs."""
import numpy as np
import pytest

import hypatia
import hypatia.tensor as T
from hypatia import _core

ROWS = _core.scalar_op_wrappers()
WRAPPED = [r for r in ROWS if r[3]]


def test_every_row_is_a_scalar_op():
    names = set(_core.scalar_op_names())
    assert ROWS and all(r[0] in names for r in ROWS)
    assert all(hasattr(_core, r[1]) for r in ROWS)


@pytest.mark.parametrize("name, core_name, arity, py_names, doc", WRAPPED, ids=[r[0] for r in WRAPPED])
def test_wrapper_builds_its_scalar_op(name, core_name, arity, py_names, doc):
    first, *aliases = py_names.split()
    f = getattr(T, first)
    assert f.__name__ == first and f.__doc__ == doc
    for a in aliases:
        assert getattr(T, a) is f
    dtype = "int32" if name in ("and_", "or_", "xor", "invert") else "float64"
    xs = [T.vector(f"x{i}", dtype=dtype) for i in range(arity)]
    y = f(*xs)
    assert isinstance(y.owner.op, T.Elemwise) and y.owner.op.scalar_op == name
    fn = hypatia.function(xs, y)
    vals = [np.array([0.25, 0.5], dtype=dtype) if dtype == "float64" else np.array([1, 2], dtype=dtype)
            for _ in xs]
    assert fn(*vals).shape == (2,)
