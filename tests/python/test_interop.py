"""numpy <-> Hypatia without copies: inputs used in place (any strides), outputs that own the C++
buffer, borrowed views of internal storage, and reference counts that do not leak."""
import gc
import sys

import numpy as np
import pytest

import hypatia
import hypatia.tensor as T
from hypatia import Out, function, shared


def _views():
    base = np.arange(24.0).reshape(4, 6)
    return {
        "contiguous": base,
        "fortran": np.asfortranarray(base),
        "negative": base[::-1, ::-1],
        "strided": base[::2, 1::2],
        "transposed": base.T,
    }


@pytest.mark.host_graphs
@pytest.mark.parametrize("name", list(_views()))
def test_inputs_are_used_in_place(name):
    a = _views()[name]
    x = T.dmatrix("x")
    f = function([x], Out(x[:, :], borrow=True))
    out = f(a)
    np.testing.assert_array_equal(out, a)
    assert np.shares_memory(out, a)  # the function saw the caller's buffer, strides and all
    assert out.strides == a.strides


def test_hypatia_view_of_a_value():
    a = np.arange(10.0)[::-3]
    v = hypatia._core.as_ndarray(a)
    assert np.shares_memory(v, a) and v.strides == a.strides
    assert hypatia._core.as_ndarray([1, 2]).dtype == np.int64


def test_outputs_own_the_cpp_buffer():
    x = T.dvector("x")
    f = function([x], T.exp(x))
    out = f(np.zeros(1000))
    assert not out.flags.owndata and out.flags.writeable
    assert type(out.base).__name__ == "BufferOwner"
    del f
    gc.collect()
    np.testing.assert_array_equal(out, np.ones(1000))  # the buffer outlives the function
    out[:] = 2  # and belongs to the caller
    assert out.sum() == 2000


def test_inputs_other_than_native_arrays_are_converted():
    x = T.fvector("x")
    f = function([x], x + 1)
    big_endian = np.arange(3, dtype=">f4")
    np.testing.assert_array_equal(f(big_endian), [1, 2, 3])
    raw = np.zeros(13, dtype=np.uint8)
    unaligned = np.frombuffer(raw.tobytes()[1:13], dtype=np.float32)
    np.testing.assert_array_equal(f(unaligned), unaligned + 1)
    np.testing.assert_array_equal(f([1, 2]), [2, 3])
    np.testing.assert_array_equal(f((1.5,)), [2.5])
    ro = np.arange(2, dtype=np.float32)
    ro.flags.writeable = False
    np.testing.assert_array_equal(f(ro), [1, 2])
    s = T.fscalar("s")
    assert function([s], s * 2)(np.float32(2)) == 4.0
    assert function([s], s * 2)(np.array(2, dtype=np.float32)) == 4.0


@pytest.mark.host_graphs
def test_no_reference_leaks_per_call():
    x = T.dvector("x")
    f = function([x], x * 2)
    a = np.ones(5)
    before = sys.getrefcount(a)
    for _ in range(100):
        f(a)
    assert sys.getrefcount(a) == before
    g = function([x], Out(x[1:], borrow=True))
    v = g(a)
    assert sys.getrefcount(a) == before + 1  # the view's base chain holds a
    del v
    assert sys.getrefcount(a) == before


@pytest.mark.host_graphs
def test_shared_borrow_zero_copy_and_updates_replace():
    a = np.zeros(3)
    s = shared(a, borrow=True)
    assert np.shares_memory(s.get_value(borrow=True), a)
    function([], updates=[(s, s + 1)])()
    np.testing.assert_array_equal(s.get_value(), np.ones(3))
    got = s.get_value(borrow=True)
    got[0] = 5  # a borrowed value is the shared storage itself
    assert s.get_value()[0] == 5


def test_constant_data_is_a_read_only_view():
    c = T.constant(np.arange(3.0))
    d = c.data
    np.testing.assert_array_equal(d, [0, 1, 2])
    assert not d.flags.writeable
    assert isinstance(c, T.TensorConstant)


def test_unsupported_dtypes():
    with pytest.raises(TypeError, match="supports"):
        shared(np.zeros(2, dtype=np.complex128))
    with pytest.raises(TypeError):
        T.constant(np.zeros(2, dtype=np.longdouble))  # float16 is supported (test_float16.py)
    x = T.dvector("x")
    with pytest.raises(TypeError):
        function([x], x)(np.array(["a", "b"]))


class _DLPackOnly:
    """An array from 'another library': it speaks DLPack only."""

    def __init__(self, a):
        self._a = a

    def __dlpack__(self, **kwargs):
        return self._a.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self._a.__dlpack_device__()


@pytest.mark.host_graphs
def test_dlpack_inputs_are_used_without_a_copy():
    a = np.arange(12.0).reshape(3, 4)[:, ::2]
    x = T.dmatrix("x")
    f = function([x], Out(x[:, :], borrow=True))
    out = f(_DLPackOnly(a))
    np.testing.assert_array_equal(out, a)
    assert np.shares_memory(out, a)
    s = shared(_DLPackOnly(np.ones(3, np.float32)))
    assert s.dtype == "float32"
