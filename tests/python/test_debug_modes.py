"""NanGuardMode and MonitorMode (Theano's compile.nanguardmode / compile.monitormode)."""
import numpy as np
import pytest

import hypatia
import hypatia.tensor as T
from hypatia.compile.monitormode import MonitorMode
from hypatia.compile.nanguardmode import NanGuardMode


def test_nanguard_names_the_node_the_users_line_and_the_inputs():
    x = T.dvector("x")
    y = T.log(x)  # the line the error must name
    line = __import__("inspect").currentframe().f_lineno - 1
    f = hypatia.function([x], T.exp(y) * 2, mode=NanGuardMode(True, True, True))
    np.testing.assert_allclose(f(np.array([1.0, 2.0])), [2.0, 4.0])
    with pytest.raises(hypatia.NanGuardError) as e:
        f(np.array([1.0, -1.0]))
    msg = str(e.value)
    assert "NaN" in msg and "min -1, max 1" in msg, msg
    assert f"test_debug_modes.py:{line}" in msg, msg
    assert isinstance(e.value, AssertionError) and isinstance(e.value, ValueError)
    # inf and big values, each check optional
    g = hypatia.function([x], x * 1e12, mode=NanGuardMode(big_is_error=False))
    g(np.array([1.0]))
    with pytest.raises(hypatia.NanGuardError, match="an infinity"):
        g(np.array([1e300]))
    with pytest.raises(hypatia.NanGuardError, match="a big value"):
        hypatia.function([x], x * 1e12, mode=NanGuardMode())(np.array([1.0]))
    # A NaN given as input is named as such.
    with pytest.raises(hypatia.NanGuardError, match="input x of the function holds NaN"):
        f(np.array([np.nan, 1.0]))


def test_nanguard_failed_call_changes_no_shared_variable_and_float32_and_scan():
    s = hypatia.shared(np.ones(3, dtype="float32"), "s")
    x = T.fvector("x")
    f = hypatia.function([x], [], updates=[(s, s + T.sqrt(x))], mode=NanGuardMode(True, True, True))
    with pytest.raises(hypatia.NanGuardError):
        f(np.array([1, -1, 1], dtype="float32"))
    np.testing.assert_array_equal(s.get_value(), [1, 1, 1])
    ys, _ = hypatia.scan(lambda v: T.log(v), sequences=[x])
    h = hypatia.function([x], ys, mode=NanGuardMode(True, True, True))
    with pytest.raises(hypatia.NanGuardError):
        h(np.array([1, -1], dtype="float32"))


def test_monitor_mode_sees_every_node_with_its_values():
    x = T.dvector("x")
    seen = []

    def post(i, node, fn):
        assert not any(v[0].flags.writeable for v in fn.inputs + fn.outputs)
        seen.append((i, str(node.op), [v[0].copy() for v in fn.inputs], [v[0].copy() for v in fn.outputs]))

    def detect_nan(i, node, fn):  # the function Theano's documentation shows
        for output in fn.outputs:
            if np.isnan(output[0]).any():
                raise AssertionError(f"NaN detected after {node.op}")

    f = hypatia.function([x], T.exp(x) * 2, mode=MonitorMode(post_func=post))
    out = f(np.array([0.0, 1.0]))
    assert [s[0] for s in seen] == list(range(len(f.maker.fgraph.toposort())))
    np.testing.assert_allclose(seen[-1][3][0], out)
    g = hypatia.function([x], T.log(x), mode=MonitorMode(post_func=detect_nan))
    with pytest.raises(AssertionError, match="NaN detected"):
        g(np.array([-1.0]))
    with pytest.raises(TypeError, match="callable"):
        MonitorMode(post_func=3)


def test_provenance_names_the_rewrite_and_the_users_line():
    import inspect

    x = T.dvector("x")
    y = T.exp(x) * 2 + 1
    line = inspect.currentframe().f_lineno - 1
    f = hypatia.function([x], y)
    nodes = f.maker.fgraph.toposort()
    assert any(n.made_by for n in nodes), [str(n.op) for n in nodes]
    text = hypatia.printing.debugprint(f, provenance=True, file="str")
    assert "[by " in text and f"test_debug_modes.py:{line}" in text, text
    # The graph as written (mode NONE): every node is the user's own.
    g = hypatia.function([x], y, mode="NONE")
    assert all(n.made_by == "" for n in g.maker.fgraph.toposort())
    assert "[as written; built at" in hypatia.printing.debugprint(g, provenance=True, file="str")
    assert "[by" not in hypatia.printing.debugprint(f, file="str")  # off by default in the text
