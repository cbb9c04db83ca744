"""Memory that belongs to someone else: read-only arrays, mmaps and bytes are never written;
mutable inputs that alias other arguments or share elements are copied before an in-place write."""
import mmap

import numpy as np
import pytest

import hypatia
import hypatia.tensor as T
from hypatia import In


def in_place_nodes(f):
    return [n for n in f.maker.fgraph.toposort() if "inplace" in str(n.op) or "[(0" in str(n.op)]


def read_only(a):
    a = np.array(a)
    a.setflags(write=False)
    return a


def make_update_in_place(w):
    a = hypatia.shared(np.eye(w.get_value().shape[0], dtype=w.dtype), name="a")
    f = hypatia.function([], [], updates=[(w, w + T.dot(a, a))])
    assert in_place_nodes(f), hypatia.printing.debugprint(f, file="str")
    return f


def test_shared_borrowing_a_read_only_array_is_not_written_by_an_in_place_update():
    mem = read_only(np.arange(9.0).reshape(3, 3))
    w = hypatia.shared(mem, name="w", borrow=True)
    f = make_update_in_place(w)
    f()
    np.testing.assert_array_equal(mem, np.arange(9.0).reshape(3, 3))
    np.testing.assert_array_equal(w.get_value(), np.arange(9.0).reshape(3, 3) + np.eye(3))


def test_set_value_borrowing_a_read_only_array_is_not_written():
    w = hypatia.shared(np.zeros((3, 3)), name="w")
    f = make_update_in_place(w)
    mem = read_only(np.ones((3, 3)))
    w.set_value(mem, borrow=True)
    f()
    f()
    np.testing.assert_array_equal(mem, np.ones((3, 3)))
    np.testing.assert_array_equal(w.get_value(), np.ones((3, 3)) + 2 * np.eye(3))


def test_an_immutable_bytes_buffer_is_never_written():
    data = bytes(np.arange(4.0).tobytes())
    mem = np.frombuffer(data, dtype=np.float64)
    assert not mem.flags.writeable
    w = hypatia.shared(mem, name="w", borrow=True)
    x = T.dvector("x")
    f = hypatia.function([In(x, mutable=True)], T.exp(x) * 2, updates=[(w, w * 3.0)])
    r = f(np.frombuffer(data, dtype=np.float64))
    np.testing.assert_allclose(r, np.exp(np.arange(4.0)) * 2)
    assert data == np.arange(4.0).tobytes()
    np.testing.assert_array_equal(w.get_value(), np.arange(4.0) * 3)


def test_a_read_only_mmap_is_read_not_written(tmp_path):
    path = tmp_path / "w.bin"
    np.arange(16.0).tofile(path)
    with open(path, "rb") as fh:
        mm = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
        mem = np.frombuffer(mm, dtype=np.float64).reshape(4, 4)
        w = hypatia.shared(mem, name="w", borrow=True)
        f = make_update_in_place(w)
        f()
        x = T.dmatrix("x")
        g = hypatia.function([In(x, mutable=True)], x * 2 + 1)
        np.testing.assert_array_equal(g(mem), np.arange(16.0).reshape(4, 4) * 2 + 1)
        np.testing.assert_array_equal(w.get_value(), np.arange(16.0).reshape(4, 4) + np.eye(4))
        del mem, w, f, g
        mm.close()
    np.testing.assert_array_equal(np.fromfile(path), np.arange(16.0))


def test_a_mutable_input_given_a_read_only_array_leaves_it_alone():
    x = T.dvector("x")
    f = hypatia.function([In(x, mutable=True)], T.exp(x) * 2)
    assert in_place_nodes(f)
    a = read_only(np.linspace(-1, 1, 7))
    np.testing.assert_allclose(f(a), np.exp(np.linspace(-1, 1, 7)) * 2)
    np.testing.assert_array_equal(a, np.linspace(-1, 1, 7))


def test_a_mutable_input_passed_twice_gives_the_other_output_right():
    x, y = T.dvectors("x", "y")
    f = hypatia.function([In(x, mutable=True), y], [T.exp(x) * 2, y + 1])
    assert in_place_nodes(f)
    a = np.linspace(-1, 1, 7)
    a0 = a.copy()
    r0, r1 = f(a, a)
    np.testing.assert_allclose(r0, np.exp(a0) * 2)
    np.testing.assert_allclose(r1, a0 + 1)
    # Overlapping views of one array alias too.
    b = np.linspace(0, 1, 10)
    b0 = b.copy()
    r0, r1 = f(b[:7], b[3:])
    np.testing.assert_allclose(r1, b0[3:] + 1)


def test_a_mutable_input_with_a_zero_stride_gives_right_values():
    x = T.dvector("x")
    f = hypatia.function([In(x, mutable=True)], T.exp(x) * 2 + x)
    base = np.array([0.5])
    view = np.lib.stride_tricks.as_strided(base, shape=(6,), strides=(0,))
    np.testing.assert_allclose(f(view), np.full(6, np.exp(0.5) * 2 + 0.5))
    assert base[0] == 0.5


def test_a_mutable_input_aliasing_a_shared_variable_leaves_it_unchanged():
    w = hypatia.shared(np.linspace(0, 1, 5), name="w")
    x = T.dvector("x")
    f = hypatia.function([In(x, mutable=True)], T.exp(x) * 2 + w)
    r = f(w.get_value(borrow=True))
    np.testing.assert_allclose(r, np.exp(np.linspace(0, 1, 5)) * 2 + np.linspace(0, 1, 5))
    np.testing.assert_array_equal(w.get_value(), np.linspace(0, 1, 5))


def test_a_borrowed_output_of_a_read_only_input_is_read_only():
    x = T.dvector("x")
    f = hypatia.function([x], hypatia.Out(x, borrow=True))
    out = f(read_only(np.ones(3)))
    with pytest.raises(ValueError):
        out[0] = 2.0


def test_set_value_with_a_lossy_dtype_suggests_only_what_set_value_takes():
    w = hypatia.shared(np.zeros(3, dtype="float32"), name="w")
    with pytest.raises(TypeError) as e:
        w.set_value(np.zeros(3, dtype="float64"))
    assert "allow_input_downcast" not in str(e.value)
    assert "astype('float32')" in str(e.value)
    x = T.fvector("x")
    f = hypatia.function([x], x * 2)
    with pytest.raises(TypeError) as e:
        f(np.zeros(3))
    assert "allow_input_downcast=true" in str(e.value).lower()  # function() does take it
