"""compute_test_value: nodes compute test values as they are built, so errors surface there."""
import numpy as np
import pytest

import hypatia
import hypatia.tensor as T


def test_test_values_propagate_and_errors_surface_at_build_time():
    with hypatia.change_flags(compute_test_value="raise"):
        x = T.dmatrix("x")
        x.tag.test_value = np.ones((2, 3))
        w = hypatia.shared(np.ones((3, 4)))
        y = T.tanh(T.dot(x, w)) + 1
        assert y.tag.test_value.shape == (2, 4)
        np.testing.assert_allclose(y.tag.test_value, np.tanh(3.0) + 1)
        bad = hypatia.shared(np.ones((5, 4)))
        with pytest.raises(ValueError):
            T.dot(x, bad)  # the shape error comes from the line that builds the node
        z = T.dvector("z")
        with pytest.raises(ValueError, match="test value"):
            z * 2  # no test value on z
    with hypatia.change_flags(compute_test_value="ignore"):
        z = T.dvector("z")
        assert not hasattr((z * 2).tag, "test_value")
    with hypatia.change_flags(compute_test_value="off"):
        x = T.dvector("x")
        x.tag.test_value = [1.0, 2.0]
        assert not hasattr((x * 2).tag, "test_value")


def test_tag_holds_annotations():
    x = T.dvector("x")
    x.tag.note = 1
    assert x.tag.note == 1
    with pytest.raises(AttributeError):
        x.tag.missing
    with pytest.raises(TypeError):
        x.tag.test_value = np.ones((2, 2))  # wrong ndim
