"""function(), In, Out, shared variables, updates, givens, and Theano's error cases."""
import io
from collections import OrderedDict

import numpy as np
import pytest

import hypatia
import hypatia.tensor as T
from hypatia import In, Out, function, shared


def test_single_output_vs_list():
    x = T.dvector("x")
    f1 = function([x], x * 2)
    f2 = function([x], [x * 2])
    f3 = function([x], [x * 2, x + 1])
    f4 = function([x], Out(x * 2))
    a = np.array([1.0, 2.0])
    assert isinstance(f1(a), np.ndarray)
    assert isinstance(f2(a), list) and len(f2(a)) == 1
    assert isinstance(f3(a), list) and len(f3(a)) == 2
    assert isinstance(f4(a), np.ndarray)
    assert function([x], [], on_unused_input="ignore")(a) == []


def test_inputs_must_be_a_list():
    x = T.dvector("x")
    with pytest.raises(TypeError, match="list"):
        function(x, x * 2)


def test_defaults_names_and_keywords():
    x, y = T.dscalars("x", "y")
    f = function([x, In(y, value=1.0)], x + y)
    assert f(2.0) == 3.0
    assert f(2.0, 5.0) == 7.0
    assert f(2.0, y=10.0) == 12.0
    assert f(y=1.5, x=1.0) == 2.5
    g = function([In(x, name="alpha", value=3.0), y], x * y)
    assert g(y=2.0) == 6.0
    assert g(y=1.0, alpha=4.0) == 4.0
    with pytest.raises(TypeError, match="multiple values"):
        g(1.0, alpha=4.0)
    with pytest.raises(TypeError, match="missing"):
        f()
    with pytest.raises(TypeError, match="unexpected keyword"):
        f(1.0, z=2.0)
    with pytest.raises(TypeError, match="multiple values"):
        f(1.0, x=2.0)
    with pytest.raises(TypeError, match="positional arguments"):
        f(1.0, 2.0, 3.0)


def test_every_python_call_path_reaches_the_function():
    # The type's vectorcall entry serves plain calls; f(*args, **kwargs), functools.partial, map and
    # the type's __call__ slot wrapper go through tp_call (a tuple and a dict) to the same entry.
    import functools
    x, y = T.dvector("x"), T.dscalar("y")
    f = function([x, In(y, value=10.0)], x * 2 + y)
    assert type(f).__flags__ & (1 << 11), "Function should set Py_TPFLAGS_HAVE_VECTORCALL"
    a, b = np.array([1.0, 2.0]), 3.0
    want = np.array([5.0, 7.0])
    np.testing.assert_array_equal(f(a, b), want)
    np.testing.assert_array_equal(f(*(a, b)), want)
    np.testing.assert_array_equal(f(**{"y": b, "x": a}), want)
    np.testing.assert_array_equal(f(a, **{"y": b}), want)
    np.testing.assert_array_equal(functools.partial(f, y=b)(a), want)
    np.testing.assert_array_equal(type(f).__call__(f, a, y=b), want)
    np.testing.assert_array_equal(list(map(f, [a, a]))[1], [12.0, 14.0])
    # Failed calls (the checks of names and counts come before the kernels) leave nothing behind in
    # the argument slots: the next call sees only its own arguments.
    for bad in (lambda: f(a, b, b), lambda: f(a, z=b), lambda: f(a, x=a), lambda: f(y=b)):
        with pytest.raises(TypeError):
            bad()
        np.testing.assert_array_equal(f(a), [12.0, 14.0])
    with pytest.raises(TypeError, match="keyword"):
        f(a, **{"x y": b})


def test_shared_get_set_value_and_borrow():
    a = np.arange(4.0)
    s = shared(a, name="s")
    assert isinstance(s, T.TensorSharedVariable)
    assert not isinstance(s, T.TensorConstant)
    v = s.get_value()
    assert not np.shares_memory(v, a)  # shared() copies without borrow
    np.testing.assert_array_equal(v, a)
    sb = shared(a, borrow=True)
    assert np.shares_memory(sb.get_value(borrow=True), a)  # borrow=True: no copy either way
    assert not np.shares_memory(sb.get_value(), a)
    s.set_value(np.ones(4))
    np.testing.assert_array_equal(s.get_value(), np.ones(4))
    b = np.full(4, 7.0)
    s.set_value(b, borrow=True)
    assert np.shares_memory(s.get_value(borrow=True), b)
    with pytest.raises(TypeError):
        s.set_value(np.ones((2, 2)))
    s.set_value([1, 2, 3, 4])  # lists convert exactly
    np.testing.assert_array_equal(s.get_value(), [1, 2, 3, 4])
    f32 = shared(np.zeros(2, np.float32))
    with pytest.raises(TypeError, match="float32"):
        f32.set_value(np.ones(2))  # a float64 array would lose precision
    f32.set_value([0.5, 1.5])  # exactly representable values are accepted
    scalar = shared(0.5)
    assert scalar.ndim == 0 and scalar.dtype == "float64"
    assert shared(3).dtype == "int64"
    assert shared(np.zeros((1, 3)), broadcastable=(True, False)).broadcastable == (True, False)


def test_updates_forms_and_atomicity():
    count = shared(np.int64(0), name="count")
    acc = shared(np.zeros(2), name="acc")
    x = T.dvector("x")
    f = function([x], acc, updates=OrderedDict([(count, count + 1), (acc, acc + x)]))
    out = f(np.array([1.0, 2.0]))
    np.testing.assert_array_equal(out, [0.0, 0.0])  # outputs see the values before the updates
    f(np.array([1.0, 2.0]))
    assert count.get_value() == 2
    np.testing.assert_array_equal(acc.get_value(), [2.0, 4.0])
    g = function([], [], updates=[(count, count * 10)])
    g()
    assert count.get_value() == 20
    h = function([], updates={count: count - 1})
    h()
    assert count.get_value() == 19
    # Any iterable of pairs, as Keras' backend passes d.items(); a set is refused (no order).
    function([], updates={count: count + 1}.items())()
    function([], updates=((count, count + 1) for _ in range(1)))()
    assert count.get_value() == 21
    with pytest.raises(TypeError, match="ordered"):
        function([], updates={(count, count + 1)})
    count.set_value(19)
    # Swaps read the old values of both.
    a, b = shared(np.array([1.0])), shared(np.array([2.0]))
    function([], updates=[(a, b), (b, a)])()
    assert a.get_value()[0] == 2.0 and b.get_value()[0] == 1.0
    # A failing call changes no shared variable.
    idx = T.lscalar("i")
    k = function([idx], [], updates=[(acc, T.set_subtensor(acc[idx], 5.0)), (count, count + 1)])
    with pytest.raises(IndexError):
        k(7)
    assert count.get_value() == 19
    np.testing.assert_array_equal(acc.get_value(), [2.0, 4.0])
    with pytest.raises(TypeError, match="shared"):
        function([x], updates=[(x, x + 1)])
    with pytest.raises(TypeError):
        function([], updates=[(acc, T.cast(acc, "float32"))])


def test_in_with_update_keeps_state_between_calls():
    # Theano's documentation example: two functions sharing one accumulator.
    x, s = T.dscalars("x", "s")
    inc = function([x, In(s, value=0, update=s + x)], [])
    dec = function([x, In(s, value=inc.container[s], update=s - x)], [])
    inc(5)
    assert inc[s] == 5.0 and dec[s] == 5.0
    dec(2)
    assert inc[s] == 3.0
    inc["s"] = 10
    assert dec[s] == 10.0
    # Outputs see the state before the update, as with shared variables.
    g = function([x, In(s, value=1.0, update=s * x)], s)
    assert [g(3.0), g(3.0), g[s]] == [1.0, 3.0, 9.0]
    v = T.dvector("v")
    h = function([x, In(v, value=np.zeros(3), update=v + x)], v.sum())
    assert h(1.0) == 0.0 and h(2.0) == 3.0
    np.testing.assert_array_equal(h[v], [3.0, 3.0, 3.0])
    # A failed call leaves the state as it was.
    i = T.lscalar("i")
    k = function([i, In(v, value=np.zeros(3), update=T.set_subtensor(v[i], 1.0))], [])
    with pytest.raises(IndexError):
        k(5)
    np.testing.assert_array_equal(k[v], [0.0, 0.0, 0.0])
    # The input is implicit: callers do not pass it.
    with pytest.raises(TypeError, match="1 inputs"):
        g(1.0, 2.0)
    assert g[x] is None  # an ordinary input without a default (Theano's f[x])
    with pytest.raises(KeyError, match="not an input with an update"):
        g.container[x]
    with pytest.raises(ValueError, match="initial state as value="):
        In(s, update=s + 1)
    with pytest.raises(TypeError, match="container"):
        function([x, In(v, value=inc.container[s], update=v + x)], [])


def test_givens():
    x, y = T.dscalars("x", "y")
    s = shared(np.float64(3.0))
    z = x * y + s
    f = function([x], z, givens={y: x + 1})
    assert f(2.0) == 2.0 * 3.0 + 3.0
    g = function([x, y], z, givens=[(s, x)])
    assert g(2.0, 5.0) == 12.0
    data = shared(np.arange(10.0))
    i = T.lscalar("i")
    batch = T.dvector("batch")
    h = function([i], batch.sum(), givens={batch: data[i * 2:(i + 1) * 2]})
    assert h(1) == 2.0 + 3.0


def test_out_borrow_returns_internal_storage():
    x = T.dvector("x")
    f = function([x], Out(T.exp(x), borrow=True))
    a = np.zeros(3)
    r1 = f(a)
    np.testing.assert_array_equal(r1, np.ones(3))
    g = function([x], T.exp(x))
    r2, r3 = g(a), g(a)
    assert not np.shares_memory(r2, r3)  # without borrow every call returns a fresh array


def test_theano_error_cases():
    x = T.fvector("x")
    f = function([x], x * 2)
    with pytest.raises(TypeError, match="allow_input_downcast"):
        f(np.ones(3, dtype=np.float64))
    assert function([x], x * 2, allow_input_downcast=True)(np.ones(3)).dtype == np.float32
    np.testing.assert_array_equal(f(np.ones(3, dtype=np.int16)), [2, 2, 2])  # a safe upcast is fine
    np.testing.assert_array_equal(f([1.0, 2.0]), [2.0, 4.0])  # a list converts exactly
    with pytest.raises(TypeError, match="dimensions"):
        f(np.ones((2, 2), dtype=np.float32))
    r = T.frow("r")
    with pytest.raises(TypeError, match="broadcastable"):
        function([r], r + 1)(np.ones((2, 3), np.float32))
    y = T.fvector("y")
    with pytest.raises(hypatia.UnusedInputError):
        function([x, y], x * 2)
    assert issubclass(hypatia.UnusedInputError, ValueError)
    function([x, y], x * 2, on_unused_input="ignore")
    with pytest.raises(hypatia.MissingInputError):
        function([x], x + y)
    assert issubclass(hypatia.MissingInputError, ValueError)
    with pytest.raises(TypeError):
        f(np.ones(3, dtype=np.complex64))
    with pytest.raises(ValueError, match="twice"):
        function([x, x], x)
    i = T.iscalar("i")
    g = function([i], i + 1)
    with pytest.raises(TypeError, match="precision"):
        g(1.5)
    assert g(3) == 4


def test_runtime_errors_name_the_node():
    x, y = T.dvectors("x", "y")
    f = function([x, y], x + y)
    with pytest.raises(ValueError) as e:
        f(np.ones(2), np.ones(3))
    msg = str(e.value)
    assert "Elemwise{add" in msg and "Inputs shapes" in msg
    assert "test_function.py" in msg  # where the node was built


def test_python_scalars_follow_theano_filter_rules():
    x = T.fscalar("x")
    f = function([x], x * 2)
    assert f(1.5) == 3.0  # exactly representable in float32
    with hypatia.change_flags(floatX="float32"):
        assert f(1.1).dtype == np.float32  # a Python float may be downcast to floatX
    with hypatia.change_flags(floatX="float64"):
        with pytest.raises(TypeError, match="precision"):
            f(1.1)
    assert function([x], x * 2, allow_input_downcast=True)(1.1).dtype == np.float32
    y = T.dscalar("y")
    assert function([y], y + 1)(2) == 3.0


@pytest.mark.host_graphs
def test_maker_fgraph_toposort_and_debugprint():
    m = T.fmatrix("m")
    b = shared(np.ones((2, 2), np.float32), name="b")
    y = T.dot(m, m) + b
    f = function([m], y, name="lin")
    nodes = f.maker.fgraph.toposort()
    assert all(isinstance(n, hypatia.Apply) for n in nodes) and nodes
    assert [type(n.op).__name__ for n in nodes][-1] == "Gemm"  # dot + b became one Gemm (FAST_RUN)
    assert "Elemwise{add" in repr(function([m], y, mode="FAST_COMPILE").maker.fgraph.toposort())
    e = function([m], T.exp(m)).maker.fgraph.toposort()
    assert any(isinstance(n.op, T.Elemwise) for n in e)
    fused = function([m], T.exp(m) * 2 + 1).maker.fgraph.toposort()
    assert all(isinstance(n.op, T.Elemwise) for n in fused)  # a fused Composite is an Elemwise too
    assert f.maker.fgraph.inputs == [m] or f.maker.fgraph.inputs[0] is m
    text = hypatia.printing.debugprint(f, file="str")
    assert "Gemm" in text and "[id A]" in text
    buf = io.StringIO()
    hypatia.printing.debugprint(y, file=buf, print_type=True)
    assert "TensorType(float32, matrix)" in buf.getvalue()
    assert hypatia.pp(m * 2 + 1).startswith("((m * TensorConstant")


def test_profile_summary(capsys, tmp_path):
    x = T.dvector("x")
    f = function([x], T.exp(x) + 1, profile=True, name="prof")
    for _ in range(3):
        f(np.ones(10))
    p = f.profile
    assert p.calls == 3
    text = p.summary_text()
    assert "Function profiling" in text and "prof" in text and "Elemwise{" in text
    import sys

    p.summary(file=sys.stdout)
    assert "Apply" in capsys.readouterr().out
    assert function([x], x + 1).profile is None
    # A Chrome trace: one slice per node per call, named by the op; the compile time per phase.
    import json

    path = tmp_path / "trace.json"
    n = p.to_chrome_trace(str(path))
    trace = json.loads(path.read_text())
    slices = [e for e in trace["traceEvents"] if e["ph"] == "X"]
    assert n == len(slices) == 3 * len(f.maker.fgraph.toposort())
    assert {e["name"] for e in slices} == {nd["op_name"] for nd in p.nodes}
    assert sorted({e["args"]["call"] for e in slices}) == [0, 1, 2]
    assert all(e["dur"] >= 0 and e["ts"] >= 0 for e in slices)
    assert p.compile_phases and all(s >= 0 for _, s in p.compile_phases)
    assert "Compile time per rewrite phase" in text
    # The memory profile: the peaks with and without gc, and each node's output bytes.
    assert "Memory profile" in text and "Max peak memory if allow_gc=False" in text
    assert 80 <= p.peak_bytes <= p.peak_bytes_no_gc
    assert max(nd["output_bytes"] for nd in p.nodes) == 80
    assert any(nd["output_shapes"] == "(10,) float64" for nd in p.nodes)
    hypatia.compile._profiled.clear()  # do not print the tables again at exit


def test_theanos_cudnn_algorithm_options_are_sections_of_the_config():
    cfg = hypatia.config
    assert cfg.dnn.conv.algo_fwd == "guess_once"
    with hypatia.change_flags(**{"dnn.conv.algo_bwd_filter": "time_once"}):
        assert cfg.dnn.conv.algo_bwd_filter == "time_once"
        assert hypatia._core.config_get("dnn.conv.algo_bwd_filter") == "time_once"
    assert cfg.dnn.conv.algo_bwd_filter == "guess_once"
    cfg.dnn.conv.algo_fwd = "time_on_shape_change"
    try:
        assert hypatia._core.config_get("dnn.conv.algo_fwd") == "time_on_shape_change"
        with pytest.raises(ValueError, match="guess_once, guess_on_shape_change, time_once"):
            cfg.dnn.conv.algo_fwd = "small"  # Theano's fixed algorithms are refused by name
    finally:
        cfg.dnn.conv.algo_fwd = "guess_once"
    assert "algo_bwd_data" in dir(cfg.dnn.conv) and "dnn" in dir(cfg)
    with pytest.raises(AttributeError):
        cfg.dnn.conv.no_such_option


def test_theanos_dnn_enabled_is_an_option_of_the_dnn_section():
    cfg = hypatia.config
    assert cfg.dnn.enabled == "auto"
    cfg.dnn.enabled = False  # Theano's way to run convolutions without cuDNN (im2col and cuBLAS here)
    try:
        assert hypatia._core.config_get("dnn.enabled") == "False"
        with pytest.raises(ValueError, match="auto, True, False, no_check"):
            cfg.dnn.enabled = "sometimes"
    finally:
        cfg.dnn.enabled = "auto"
    assert {"enabled", "conv"} <= set(dir(cfg.dnn))


def test_config_roundtrip():
    cfg = hypatia.config
    assert cfg.floatX in ("float32", "float64")
    old = cfg.floatX
    with hypatia.change_flags(floatX="float32"):
        assert cfg.floatX == "float32"
        assert T.matrix().dtype == "float32"
        assert T.constant(1.5).dtype == "float32"
    assert cfg.floatX == old
    assert isinstance(cfg.allow_gc, bool)
    with pytest.raises(ValueError):
        cfg.floatX = "int32"  # float16 is accepted (test_float16.py)
    with pytest.raises(AttributeError):
        cfg.no_such_option
    # The CUDA backend's graphs (on by default) and its synchronous mode, read by the engine.
    assert cfg.cuda_graphs is True and cfg.cuda_sync is False
    with hypatia.change_flags(cuda_graphs=False):
        assert cfg.cuda_graphs is False
        assert hypatia._core.config_get("cuda_graphs") == "False"
    assert cfg.cuda_graphs is True
    # One stream per function by default; "one" queues every function's work on one stream.
    assert cfg.cuda_streams == "function"
    with hypatia.change_flags(cuda_streams="one"):
        assert hypatia._core.config_get("cuda_streams") == "one"
    with pytest.raises(ValueError, match="cuda_streams"):
        cfg.cuda_streams = "two"
    assert cfg.cuda_streams == "function"
    with hypatia.change_flags(allow_gc=False):
        x = T.dvector()
        f = function([x], T.exp(x) * 2)
        np.testing.assert_allclose(f(np.zeros(3)), 2 * np.ones(3))
        np.testing.assert_allclose(f(np.zeros(3)), 2 * np.ones(3))


@pytest.mark.host_graphs
def test_mode_argument():
    x = T.dvector("x")
    for mode in (None, "FAST_RUN", "FAST_COMPILE", "NONE", "REFERENCE", hypatia.Mode(linker="reference"),
                 "DebugMode", hypatia.compile.DebugMode()):
        np.testing.assert_allclose(function([x], T.exp(x), mode=mode)(np.zeros(2)), [1.0, 1.0])
    with pytest.raises(ValueError):
        function([x], x, mode="NO_SUCH_MODE")
    y = T.log(1 + x)
    ops = lambda f: [n.op.name for n in f.maker.fgraph.toposort()]  # noqa: E731
    assert any("log1p" in o for o in ops(function([x], y, mode="FAST_RUN")))
    assert not any("log1p" in o for o in ops(function([x], y, mode="NONE")))
    assert not any("log1p" in o for o in ops(function([x], y, mode=hypatia.Mode(optimizer="fast_run").excluding(
        "stabilize"))))


def test_eval_and_default_update():
    x = T.dvector("x")
    assert (x * 2).eval({x: np.array([1.0])})[0] == 2.0
    s = shared(np.float64(0.0))
    assert (s + 1).eval() == 1.0
    s.default_update = s + 1
    f = function([], s)
    f()
    f()
    assert s.get_value() == 2.0
    g = function([], s, no_default_updates=True)
    g()
    assert s.get_value() == 2.0


def test_config_from_flags_and_rc_file(tmp_path):
    import os
    import subprocess
    import sys

    (tmp_path / ".hypatiarc").write_text("[global]\nfloatX = float32\nallow_gc = False\n")
    env = dict(os.environ, HOME=str(tmp_path), HYPATIA_FLAGS="allow_gc=True,exception_verbosity=high")
    code = ("import hypatia; c = hypatia.config; "
            "print(c.floatX, c.allow_gc, c.exception_verbosity, hypatia.tensor.matrix().dtype)")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
    assert out.split() == ["float32", "True", "high", "float32"]  # defaults < ~/.hypatiarc < HYPATIA_FLAGS


def test_backends_are_chosen_by_name():
    import hypatia._core as core
    from hypatia.compile.mode import Mode

    assert {"cpu", "reference"} <= set(core.backend_names())
    x = T.dvector("x")
    v = np.array([0.5, 1.5])
    for linker in ("cvm", "cpu", "reference", "c|py"):
        f = hypatia.function([x], T.exp(x), mode=Mode(linker=linker))
        np.testing.assert_allclose(f(v), np.exp(v))
    with pytest.raises(ValueError, match="backend 'tpu' is not registered; the backends are 'cpu'"):
        hypatia.function([x], T.exp(x), mode=Mode(linker="tpu"))


def test_an_in_place_update_that_other_in_place_steps_must_follow():
    # LeNet's shape (a convolution, flatten, a dense layer, both weights updated): the dense
    # weights' update (Gemm in place on W1) reads the tanh output that the convolution's gradient
    # then overwrites in place, so a step that is not an update follows an in-place update. Found
    # by a Theano user's program: the call failed ("input 2 has 0 dims"). The update is now
    # computed in a per-call copy, so that a failure after it (the index) still changes nothing.
    from hypatia.tensor.nnet import conv2d

    x, perm = T.tensor4("x"), T.lvector("perm")
    W0 = hypatia.shared(np.full((2, 1, 3, 3), 0.1), name="W0")
    W1 = hypatia.shared(np.full((32, 3), 0.1), name="W1")
    cost = T.exp(T.dot(T.tanh(conv2d(x, W0)).flatten(2), W1)).sum()
    g0, g1 = T.grad(cost, [W0, W1])
    f = hypatia.function([x, perm], cost, updates=[(W0, W0 - 0.1 * g0[:, :, :, perm]), (W1, W1 - 0.1 * g1)])
    ref = hypatia.function([x, perm], [W0 - 0.1 * g0[:, :, :, perm], W1 - 0.1 * g1], mode="FAST_COMPILE")
    names = [str(n.op) for n in f.maker.fgraph.toposort()]
    gemm = next(i for i, n in enumerate(names) if "Gemm{inplace}" in n)  # (GpuGemm on the emulated GPU)
    assert any("Conv2dGradWeights" in n for n in names[gemm + 1:]), names  # (the order this test is about)
    xv = np.linspace(-1, 1, 72).reshape(2, 1, 6, 6)
    with pytest.raises(IndexError, match="index 5 is out of bounds"):
        f(xv, [0, 1, 5])
    np.testing.assert_array_equal(W0.get_value(), 0.1)
    np.testing.assert_array_equal(W1.get_value(), 0.1)
    for _ in range(2):
        want0, want1 = ref(xv, [2, 1, 0])
        f(xv, [2, 1, 0])
        np.testing.assert_allclose(W0.get_value(), want0, rtol=1e-12)
        np.testing.assert_allclose(W1.get_value(), want1, rtol=1e-12)
