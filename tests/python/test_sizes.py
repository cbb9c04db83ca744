"""Sizes at the int64 extremes: shapes whose size overflows raise ValueError naming the op, shape and
dtype (they crashed or returned wrong values); an allocation the machine cannot give raises Python's
MemoryError naming the node and the bytes; slices with any start/stop/step agree with numpy."""
import sys

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import hypatia
import hypatia.tensor as T
from util import layouts, with_layout

MODES = ["FAST_RUN", "FAST_COMPILE", "NONE"]
I64_MIN, I64_MAX = -2**63, 2**63 - 1


def _overcommit_heuristic():
    """Whether a request far past RAM + swap fails in malloc (Linux overcommit modes 0 and 2)."""
    try:
        with open("/proc/sys/vm/overcommit_memory") as f:
            return f.read().strip() != "1"
    except OSError:
        return False


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("build, expected", [
    (lambda: T.alloc(0., 2**61 + 1), "Alloc: an array of shape (2305843009213693953,) and dtype float64 is too big"),
    (lambda: T.ones((2**62,), "float32"), "shape (4611686018427387904,) and dtype float32 is too big"),
    (lambda: T.eye(2**32), "Eye{dtype='float64'}: an array of shape (4294967296, 4294967296)"),
    (lambda: T.alloc(1., 2**32, 2**32).sum(), "(4294967296, 4294967296) and dtype float64 is too big"),
    (lambda: T.zeros((0, 2**32, 2**32), "int8"), "(0, 4294967296, 4294967296)"),
    (lambda: T.tile(T.constant(np.zeros(2)), (2**62,)), "Tile"),
    (lambda: T.arange(-2**63, 2**63 - 1), "more elements than int64 holds"),
])
def test_huge_shapes_raise_value_error(build, expected, mode):
    # These crashed the process (segfault in NDArray::assign) or, for the sum, returned 0.0.
    f = hypatia.function([], build(), mode=mode)
    with pytest.raises(ValueError) as e:
        f()
    assert expected in str(e.value)


@pytest.mark.parametrize("mode", MODES)
def test_reshape_of_an_empty_array_to_an_overflowing_shape(mode):
    x = T.dvector("x")
    f = hypatia.function([x], x.reshape((2**32, 2**32)), mode=mode)
    with pytest.raises(ValueError, match=r"Reshape\{2\}: cannot reshape"):
        f(np.zeros(0))
    n = T.lscalar("n")
    g = hypatia.function([x, n], x.reshape((n, n)), mode=mode)
    with pytest.raises(ValueError, match="too big"):
        g(np.zeros(0), 2**32)
    assert g(np.zeros(0), 0).shape == (0, 0)


@pytest.mark.parametrize("mode", MODES)
def test_allocation_the_machine_cannot_give_raises_memory_error(mode):
    # 2**50 float64 (8 PiB) is past the address space: malloc fails whatever the overcommit policy.
    f = hypatia.function([], T.alloc(0., 2**50), mode=mode)
    with pytest.raises(MemoryError) as e:
        f()
    msg = str(e.value)
    assert msg.startswith("Alloc: ") and "9007199254740992 bytes" in msg and "Apply node that caused the error" in msg


@pytest.mark.skipif(not sys.platform.startswith("linux") or not _overcommit_heuristic(),
                    reason="needs Linux with heuristic or strict overcommit (8 TiB must not be granted)")
def test_alloc_of_8_tib_raises_memory_error():
    # A valid size (2**40 float64) the machine cannot hold: MemoryError, not ValueError.
    f = hypatia.function([], T.alloc(0., 2**40))
    with pytest.raises(MemoryError, match="8796093022208 bytes"):
        f()


def test_sizes_past_int64_in_python_are_refused():
    with pytest.raises(ValueError, match="does not fit in int64"):
        T.alloc(0., 2**64)
    with pytest.raises(IndexError):
        T.dvector()[2**70]


@pytest.mark.parametrize("mode", MODES)
def test_huge_slice_steps(mode):
    # x[::2**63 - 1] raised "negative dimension"; numpy returns x[:1].
    x = T.dvector("x")
    a = np.arange(5.)
    keys = [slice(None, None, 2**63 - 1), slice(None, None, -2**63), slice(None, None, 2**70),
            slice(-2**70, 2**70, 3), slice(2**70, -2**70, -2), slice(I64_MIN, I64_MAX, I64_MAX)]
    f = hypatia.function([x], [x[k] for k in keys], mode=mode)
    for out, k in zip(f(a), keys):
        np.testing.assert_array_equal(out, a[k])


_EXTREMES = [None, I64_MIN, I64_MIN + 1, -2**62, -9, -5, -1, 0, 1, 4, 8, 2**62, I64_MAX - 1, I64_MAX]
_STEPS = [I64_MIN, I64_MIN + 1, -2**62, -3, -1, 1, 2, 3, 2**62, I64_MAX]
# Python ints past int64 too: they select what the int64 extreme on their side selects.
bounds = st.one_of(st.none(), st.sampled_from(_EXTREMES), st.integers(-10, 10), st.integers(-2**70, 2**70))
steps = st.one_of(st.sampled_from(_STEPS), st.integers(-4, 4).filter(bool), st.integers(-2**70, 2**70).filter(bool))


def _clamp(v):
    return min(max(v, I64_MIN), I64_MAX)
slices = st.builds(slice, bounds, bounds, steps)


@given(n=st.integers(0, 7), s=slices, layout=layouts)
def test_extreme_slices_match_numpy(n, s, layout):
    a = with_layout(np.arange(n * 2.).reshape(n, 2), layout)
    x = T.dmatrix("x")
    y = x[s]
    f = hypatia.function([x], [y, y.shape, T.inc_subtensor(y, 100.), T.set_subtensor(x[s, 1], -1.)])
    r, shape, inc, st_ = f(a)
    np.testing.assert_array_equal(r, a[s])
    np.testing.assert_array_equal(shape, a[s].shape)
    expected = a.copy()
    expected[s] += 100.
    np.testing.assert_array_equal(inc, expected)
    expected = a.copy()
    expected[s, 1] = -1.
    np.testing.assert_array_equal(st_, expected)


@given(n=st.integers(0, 7), s=slices)
def test_symbolic_extreme_slices_match_numpy(n, s):
    # Every bound a run-time value: the symbolic length (infer_shape) and the kernels.
    a = np.arange(float(n))
    x = T.dvector("x")
    lo, hi, step = T.lscalar("lo"), T.lscalar("hi"), T.lscalar("step")
    y = x[lo:hi:step]
    f = hypatia.function([x, lo, hi, step], [y, y.shape[0]])
    start = s.start if s.start is not None else (I64_MIN if s.step > 0 else I64_MAX)
    stop = s.stop if s.stop is not None else (I64_MAX if s.step > 0 else I64_MIN)
    r, length = f(a, _clamp(start), _clamp(stop), _clamp(s.step))
    np.testing.assert_array_equal(r, a[s])
    assert length == len(a[s])


@pytest.mark.parametrize("s1, s2", [
    (slice(None, None, 2**62), slice(None, None, 4)),  # the merged step 2**64 wraps; this gave all of x
    (slice(1, None, 2**62), slice(None, 5, 3)),
    (slice(None, None, -2**62), slice(None, None, -4)),
    (slice(None, None, I64_MAX), slice(None, None, I64_MAX)),
    (slice(None, None, I64_MIN), slice(1, None, I64_MIN)),
    (slice(3, None, I64_MAX), slice(1, None)),
])
@pytest.mark.parametrize("mode", MODES)
def test_merged_slices_with_steps_whose_product_overflows(s1, s2, mode):
    a = np.arange(6.)
    x = T.dvector("x")
    np.testing.assert_array_equal(hypatia.function([x], x[s1][s2], mode=mode)(a), a[s1][s2])


@given(n=st.integers(0, 9), s1=slices, s2=slices)
def test_merged_extreme_slices_match_numpy(n, s1, s2):
    # x[s1][s2] is merged into one slice by the optimizer: its composed bounds must not overflow.
    a = np.arange(float(n))
    x = T.dvector("x")
    for mode in ("FAST_RUN", "NONE"):
        np.testing.assert_array_equal(hypatia.function([x], x[s1][s2], mode=mode)(a), a[s1][s2])
