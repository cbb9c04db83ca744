"""The package imports and runs a compiled function end to end."""
import numpy as np

import hypatia
import hypatia.tensor as T


def test_import_and_call():
    x = T.fvector("x")
    f = hypatia.function([x], x + 1)
    out = f(np.arange(3, dtype=np.float32))
    np.testing.assert_array_equal(out, [1, 2, 3])
    assert out.dtype == np.float32


def test_type_stubs_are_installed():
    import os

    import hypatia._core

    stub = os.path.join(os.path.dirname(hypatia._core.__file__), "_core.pyi")
    text = open(stub).read()
    assert "class Variable" in text and "def compile_function" in text
    assert os.path.exists(os.path.join(os.path.dirname(hypatia.__file__), "py.typed"))


def test_print_op_prints_and_passes_through(capfd):
    import numpy as np
    import hypatia
    import hypatia.tensor as T
    from hypatia.printing import Print

    x = T.dvector("x")
    y = Print("twice", attrs=("__str__", "shape"))(x * 2)
    f = hypatia.function([x], [y, T.grad(y.sum(), x)])
    out, g = f(np.array([1.0, 2.0]))
    captured = capfd.readouterr().out
    assert "twice __str__ = " in captured
    assert "twice shape = (2,)" in captured
    np.testing.assert_allclose(out, [2.0, 4.0])
    np.testing.assert_allclose(g, [2.0, 2.0])
