"""Compiled functions called from several threads, re-entered from a Python Op, running without
the GIL, and interrupted by Ctrl-C."""
import os
import signal
import subprocess
import sys
import textwrap
import threading

import numpy as np

import hypatia
import hypatia.tensor as T
from util import Double, run_threads


class CallsBack(hypatia.Op):
    """perform calls a compiled function (set later): the same one that contains this op."""

    __props__ = ()
    fn = None
    state = threading.local()  # the recursion depth, per calling thread

    def make_node(self, x):
        x = T.as_tensor_variable(x)
        return hypatia.Apply(self, [x], [x.type()])

    def perform(self, node, inputs, output_storage):
        (x,) = inputs
        depth = getattr(CallsBack.state, "depth", 0)
        if depth < 2:
            CallsBack.state.depth = depth + 1
            try:
                inner = CallsBack.fn(x + 1)
            finally:
                CallsBack.state.depth = depth
        else:
            inner = np.zeros_like(x)
        output_storage[0][0] = x + inner


def test_a_function_with_a_python_op_called_from_four_threads():
    x = T.dvector("x")
    y = T.tanh(T.exp(Double()(T.exp(x) * 0.5)) - 1.0) * 2.0 + x.sum()
    f = hypatia.function([x], y)
    inputs = [np.random.RandomState(i).rand(5000) for i in range(4)]
    expected = [np.tanh(np.exp(np.exp(v) * 0.5 * 2) - 1.0) * 2.0 + v.sum() for v in inputs]

    def body(i):
        for _ in range(30):
            np.testing.assert_allclose(f(inputs[i]), expected[i], rtol=1e-12)

    run_threads(4, body)


def test_a_python_op_may_call_the_function_that_contains_it():
    x = T.dvector("x")
    f = hypatia.function([x], T.log1p(abs(CallsBack()(x * 1.0))) * 1.0)
    CallsBack.fn = f
    v = np.array([0.1, 0.2, 0.3])

    def expected(x, depth=0):
        inner = expected(x + 1, depth + 1) if depth < 2 else np.zeros_like(x)
        return np.log1p(np.abs(x + inner))

    try:
        np.testing.assert_allclose(f(v), expected(v), rtol=1e-12)
        run_threads(3, lambda i: [np.testing.assert_allclose(f(v + i), expected(v + i), rtol=1e-12)
                                  for _ in range(20)])
    finally:
        CallsBack.fn = None


def test_calls_of_a_training_step_from_several_threads_are_applied_one_after_another():
    c = hypatia.shared(np.zeros(4), name="c")
    x = T.dvector("x")
    step = hypatia.function([x], c.sum(), updates=[(c, c + x)])
    run_threads(5, lambda i: [step(np.ones(4)) for _ in range(40)])
    np.testing.assert_array_equal(c.get_value(), np.full(4, 200.0))


def long_function():
    """A function whose call takes a long while (dependent passes over 2M doubles), compiled
    without the suite's DebugMode checks (which would run every node twice more)."""
    x = T.dvector("x")
    y = x
    for _ in range(60):
        y = T.sqrt(abs(y) + 1.0)
    with hypatia.config.change_flags(debug_checks=False):
        f = hypatia.function([x], y, mode="FAST_COMPILE")
    return f, np.random.rand(2_000_000)


def test_other_python_threads_run_during_a_long_call():
    f, v = long_function()
    f(v)
    count = [0]
    stop = threading.Event()

    def spin():
        while not stop.is_set():
            count[0] += 1

    t = threading.Thread(target=spin)
    t.start()
    try:
        for _ in range(3):  # the counter must advance while the call runs (the GIL is released)
            before = count[0]
            f(v)
            after = count[0]
            if after - before > 1000:
                break
        assert after - before > 1000, f"the other thread advanced only {after - before} times during the call"
    finally:
        stop.set()
        t.join()


CTRL_C_SCRIPT = textwrap.dedent(
    """
    import os, signal, sys, threading, time
    # Python's Ctrl-C handler, as an interactive user has it: a process started with SIGINT ignored
    # (a background job of a shell without job control, as CI may start pytest) inherits that, and
    # Python then installs no handler: Ctrl-C would do nothing, with or without hypatia.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    import numpy as np
    import hypatia, hypatia.tensor as T

    x = T.dvector("x")
    y = x
    for _ in range(int(sys.argv[1])):
        y = T.sqrt(abs(y) + 1.0)
    w = hypatia.shared(np.zeros(3), name="w")
    f = hypatia.function([x], y, mode="FAST_COMPILE", updates=[(w, w + 1.0)])
    v = np.random.rand(4_000_000)
    t0 = time.perf_counter()
    f(v[:1000])  # warm
    threading.Timer(0.3, lambda: os.kill(os.getpid(), signal.SIGINT)).start()
    t0 = time.perf_counter()
    try:
        f(v)
        print("FINISHED", time.perf_counter() - t0)
    except KeyboardInterrupt:
        print("INTERRUPTED", time.perf_counter() - t0, w.get_value()[0])
    """
)


def test_ctrl_c_interrupts_a_long_call_promptly_and_changes_no_shared_variable(tmp_path):
    script = tmp_path / "ctrl_c.py"
    script.write_text(CTRL_C_SCRIPT)
    # 3000 dependent passes over 4M doubles: tens of seconds uninterrupted.
    out = subprocess.run([sys.executable, str(script), "3000"], capture_output=True, text=True, timeout=300,
                         env={**os.environ, "HYPATIA_FLAGS": ""})
    assert out.returncode == 0, out.stderr
    words = out.stdout.split()
    assert words[0] == "INTERRUPTED", out.stdout
    assert float(words[1]) < 3.0, f"KeyboardInterrupt came {words[1]} s after the call began"
    assert float(words[2]) == 1.0, "the warm-up call's update only: the interrupted call changed w"


def test_a_sigint_handler_that_does_not_raise_lets_the_call_complete():
    f, v = long_function()
    seen = []
    old = signal.signal(signal.SIGINT, lambda *a: seen.append(1))
    try:
        threading.Timer(0.05, lambda: os.kill(os.getpid(), signal.SIGINT)).start()
        y = f(v)
        y2 = f(v)
    finally:
        signal.signal(signal.SIGINT, old)
    np.testing.assert_array_equal(y, y2)
    assert seen == [1]
