"""Helpers of the Python tests: random data per dtype and domain, memory layouts, typed inputs, a
Python Op, and threads that report their errors."""
import contextlib
import os
import threading

import numpy as np
from hypothesis import strategies as st

import hypatia
import hypatia.tensor as T

FLOATS = ["float32", "float64"]
SIGNED = ["int8", "int16", "int32", "int64"]
UNSIGNED = ["uint8", "uint16", "uint32", "uint64"]
INTS = SIGNED + UNSIGNED
NUMERIC = INTS + FLOATS
ALL = ["bool"] + NUMERIC
LAYOUTS = ["c", "f", "neg", "step"]


def random_array(rng, shape, dtype, domain="any"):
    """Values of `dtype` in `domain`: any, pos (> 0), nonzero, unit (-1, 1), ge1 (>= 1), small
    (|x| <= 3), nonneg."""
    dt = np.dtype(dtype)
    shape = tuple(shape)
    if dt.kind == "b":
        return np.asarray(rng.rand(*shape) > 0.5)
    if dt.kind in "iu":
        lo, hi = {"any": (-20, 21), "pos": (1, 10), "nonzero": (1, 10), "small": (-3, 4), "nonneg": (0, 10),
                  "unit": (0, 1), "ge1": (1, 5)}[domain]
        if dt.kind == "u":
            lo = max(lo, 0)
        a = rng.randint(lo, hi, size=shape)
        if domain == "nonzero" and dt.kind == "i":
            a = a * np.where(rng.rand(*shape) > 0.5, 1, -1)
        return np.asarray(a).astype(dt)
    r = {"any": lambda: rng.randn(*shape) * 2,
         "pos": lambda: rng.rand(*shape) * 3 + 0.1,
         "nonzero": lambda: (rng.rand(*shape) * 2 + 0.2) * np.where(rng.rand(*shape) > 0.5, 1, -1),
         "unit": lambda: rng.uniform(-0.95, 0.95, size=shape),
         "ge1": lambda: 1 + rng.rand(*shape) * 3,
         "small": lambda: rng.uniform(-3, 3, size=shape),
         "nonneg": lambda: rng.rand(*shape) * 3}[domain]()
    return np.asarray(r, dtype=dt)


def with_layout(a, kind):
    """An array equal to `a` whose memory layout is C, Fortran, reversed (negative strides) or
    strided (every other element of a bigger buffer)."""
    a = np.asarray(a)
    if a.ndim == 0:
        return np.array(a)
    if kind == "c":
        return np.ascontiguousarray(a)
    if kind == "f":
        return np.asfortranarray(a)
    if kind == "neg":
        base = np.ascontiguousarray(np.flip(a))
        return np.flip(base)
    if kind == "step":
        base = np.zeros(a.shape[:-1] + (2 * a.shape[-1],), dtype=a.dtype)
        base[..., ::2] = a
        return base[..., ::2]
    raise ValueError(kind)


def input_for(shape, dtype, name=None):
    """A symbolic input whose broadcastable pattern matches the length-1 dims of `shape`."""
    return T.TensorType(dtype, [s == 1 for s in shape])(name)


def tolerance(dtype):
    return {"float32": dict(rtol=2e-5, atol=2e-6), "float64": dict(rtol=1e-10, atol=1e-12)}.get(
        np.dtype(dtype).name, dict(rtol=0, atol=0))


def assert_close(actual, expected, dtype=None):
    actual = np.asarray(actual)
    expected = np.asarray(expected)
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    dt = dtype or actual.dtype
    if np.dtype(dt).kind in "biu" and np.dtype(actual.dtype).kind in "biu":
        np.testing.assert_array_equal(actual, expected)
    else:
        np.testing.assert_allclose(actual.astype(np.float64), expected.astype(np.float64), equal_nan=True,
                                   **tolerance("float32" if np.dtype(actual.dtype) == np.float32 else dt))


seeds = st.integers(0, 2**31 - 1)
layouts = st.sampled_from(LAYOUTS)


class Double(hypatia.Op):
    """A Python Op: 2 * x, with its gradient and shape."""

    __props__ = ()

    def make_node(self, x):
        x = T.as_tensor_variable(x)
        return hypatia.Apply(self, [x], [x.type()])

    def perform(self, node, inputs, output_storage):
        output_storage[0][0] = inputs[0] * 2

    def grad(self, inputs, output_grads):
        return [output_grads[0] * 2]

    def infer_shape(self, node, input_shapes):
        return input_shapes


def run_threads(n, body):
    """Runs body(i) for i < n on n threads at once; re-raises the first error one of them raised."""
    errors = []

    def wrapped(i):
        try:
            body(i)
        except BaseException as e:  # noqa: BLE001 - reported to the main thread
            errors.append(e)

    ts = [threading.Thread(target=wrapped, args=(i,)) for i in range(n)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    if errors:
        raise errors[0]


@contextlib.contextmanager
def emulated_gpu():
    """The emulated GPU (testing/emulated_gpu.h) for the block, and the mode that compiles for it:
    host memory behind the CUDA device kind, the CPU's kernels as the device backend's, so that
    placement and its transfers run where no GPU is (left installed when the whole run uses it)."""
    whole_run = bool(os.environ.get("HYPATIA_TEST_EMULATED_GPU"))
    if not whole_run:
        hypatia._core._install_emulated_gpu()
    try:
        yield hypatia.Mode(linker="emulated_gpu")
    finally:
        if not whole_run:
            hypatia._core._remove_emulated_gpu()
