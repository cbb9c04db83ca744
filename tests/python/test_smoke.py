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
