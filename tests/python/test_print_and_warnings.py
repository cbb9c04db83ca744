"""What a user should see reaches Python's own streams: Print's lines on sys.stdout in Theano's
format (numpy's str, any ndarray attribute), warnings through the warnings module (HypatiaWarning,
attributed to the user's line, errors under -W error), profile summaries and print_rewrites on
sys.stderr."""
import contextlib
import io
import os
import subprocess
import sys
import warnings

import numpy as np
import pytest

import hypatia
import hypatia.tensor as T
from hypatia.printing import Print


def test_print_writes_to_sys_stdout_as_theano_did():
    x = T.dvector("x")
    f = hypatia.function([x], Print("x")(x))
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        f(np.array([1.0, 2.0]))
    assert buf.getvalue() == "x __str__ = [1. 2.]\n"
    g = hypatia.function([x], Print("v", attrs=("shape", "min", "dtype"))(x * 2))
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        out = g(np.array([1.0, 2.0]))
    assert buf.getvalue() == "v shape = (2,)\nv min = 2.0\nv dtype = float64\n"
    np.testing.assert_allclose(out, [2.0, 4.0])
    with pytest.raises(ValueError, match="not an attribute of numpy.ndarray"):
        Print("x", attrs=("nope",))


def test_print_inside_a_scan_and_from_threads_is_captured():
    x = T.dvector("x")
    ys, _ = hypatia.scan(lambda v: Print("step", attrs=("sum",))(v * 2), sequences=[x])
    f = hypatia.function([x], ys)
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        f(np.array([1.0, 2.0, 3.0]))
    assert buf.getvalue().splitlines() == ["step sum = 2.0", "step sum = 4.0", "step sum = 6.0"]


def test_engine_warnings_are_python_warnings_at_the_users_line():
    x, y = T.dvector("x"), T.dvector("y")
    with pytest.warns(hypatia.HypatiaWarning, match="not part of the computational graph") as rec:
        T.grad(x.sum(), y, disconnected_inputs="warn")
    assert rec[0].filename == os.path.abspath(__file__)
    with pytest.warns(hypatia.HypatiaWarning, match="not used"):
        hypatia.function([x, y], x * 2, on_unused_input="warn")
    # -W error: the warning is raised where it was given, and nothing is half-built.
    with warnings.catch_warnings():
        warnings.simplefilter("error", hypatia.HypatiaWarning)
        with pytest.raises(hypatia.HypatiaWarning):
            T.grad(x.sum(), y, disconnected_inputs="warn")


def test_print_rewrites_and_profile_summaries_go_to_sys_stderr():
    x = T.dvector("x")
    buf = io.StringIO()
    with hypatia.change_flags(print_rewrites=True), contextlib.redirect_stderr(buf):
        hypatia.function([x], T.exp(x) * 1 + 0)
    assert "rewriting: rewrite" in buf.getvalue()
    code = ("import numpy as np, hypatia, hypatia.tensor as T\n"
            "x = T.dvector('x'); f = hypatia.function([x], T.exp(x)); f(np.ones(3))\n")
    env = dict(os.environ, HYPATIA_FLAGS="profile=True")
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    # Printed once (at Python's exit, through sys.stderr), not again by the C++ destructor.
    assert r.stderr.count("Function profiling") == 1, r.stderr
