"""A compiled function's inputs as Theano 1.0's Function has them: f[v] / f[v] = x for an input's
default (the next call's value, then the default again: Theano's refeed) and for an
In(update=...) input's state, In(strict=True), a value passed for an In(update=...,
implicit=False) input, and the containers of f.copy(). The expected values are Theano's (its
test_function_module.py: test_state_access, test_naming_rule4, test_copy,
test_shared_state_not_implicit), or numpy's."""
import copy
import pickle

import numpy as np
import pytest

import hypatia as theano
import hypatia.tensor as T
from hypatia import In, function
from hypatia.compile.function_module import Function


def _state_access():
    a = T.scalar()  # anonymous
    x, s = T.scalars("xs")
    f = function([x, In(a, value=1.0, name="a"), In(s, value=0.0, update=s + a * x)], s + a * x, name="f")
    return f, a, x, s


# ------------------------------------------------------------------------------------------------
# f[v]: reading


def test_reading_gives_the_default_the_state_or_none():
    f, a, x, s = _state_access()
    # By variable, by name, by index (the inputs as function() was given them), and f.value.
    assert f[a] == 1.0 and f["a"] == 1.0 and f[1] == 1.0 and f.value[a] == 1.0
    assert f[s] == 0.0 and f["s"] == 0.0 and f[2] == 0.0
    # An input without a default reads None (Theano's empty container).
    assert f[x] is None and f["x"] is None and f[0] is None
    assert isinstance(f[a], np.ndarray) and f[a].dtype == np.float64
    # A default given as a numpy array of the input's dtype is that array (Theano's container holds it).
    v = T.dvector("v")
    d = np.array([1.0, 2.0])
    g = function([In(v, value=d)], v * 2)
    assert np.shares_memory(g[v], d)


def test_state_access_as_in_theano():
    # Theano's test_state_access, step by step.
    f, a, x, s = _state_access()
    assert f(3.0) == 3.0
    assert f(3.0, a=2.0) == 9.0  # 3 + 2 * 3
    assert f[a] == 1.0  # a keyword argument is one call's value
    assert f[s] == 9.0
    f[a] = 5.0
    assert f[a] == 5.0
    assert f(3.0) == 24.0  # 9 + 3 * 5
    assert f[s] == 24.0


# ------------------------------------------------------------------------------------------------
# f[v] = x for an ordinary input: the next call's default


def test_a_set_default_serves_the_next_call_then_the_default_is_back():
    x = T.dscalar("x")
    y = T.dscalar("y")
    f = function([x, In(y, value=1.0)], x * y)
    f["y"] = 5.0
    assert f["y"] == 5.0 and f[y] == 5.0
    assert f(2.0) == 10.0
    # Theano puts the default back after each call (its refeed).
    assert f["y"] == 1.0 and f(2.0) == 2.0
    # Setting it again, then passing the argument: the argument wins and the default is back after.
    f[y] = 7.0
    assert f(2.0, 3.0) == 6.0
    assert f[y] == 1.0 and f(2.0) == 2.0
    # A failed call keeps the value set (Theano restores defaults only after a call that ran).
    f[y] = 4.0
    with pytest.raises(TypeError):
        f("not a number")
    assert f[y] == 4.0 and f(2.0) == 8.0 and f(2.0) == 2.0
    # The last of several sets counts; f.value[v] = x is the same.
    f[y] = 3.0
    f.value[y] = 6.0
    assert f(1.0) == 6.0


def test_a_set_default_keeps_the_cpp_call_path_for_other_calls():
    # Only the call after f[v] = x goes through Python; the function is the C++ Function again after.
    x = T.dvector("x")
    y = T.dscalar("y")
    f = function([x, In(y, value=2.0)], x * y)
    assert type(f) is Function
    f[y] = 3.0
    assert type(f) is not Function and isinstance(f, Function)
    np.testing.assert_array_equal(f(np.ones(2)), [3.0, 3.0])
    assert type(f) is Function
    np.testing.assert_array_equal(f(np.ones(2)), [2.0, 2.0])


def test_setting_an_input_without_default_keeps_it_required():
    # Theano keeps the value in the container, but a call still needs the argument.
    x = T.dscalar("x")
    f = function([x], x + 1, name="inc")
    f[x] = 4.0
    assert f[x] == 4.0
    with pytest.raises(TypeError, match="missing"):
        f()
    assert f(1.0) == 2.0
    assert f[x] is None


def test_a_set_value_is_checked_as_an_argument_and_a_bad_one_changes_nothing():
    v = T.fvector("v")
    x = T.fscalar("x")
    f = function([x, In(v, value=np.zeros(2, dtype="float32"))], v + x, name="shift")
    # Wrong ndim.
    with pytest.raises(TypeError) as e:
        f[v] = np.zeros((2, 2), dtype="float32")
    msg = str(e.value)
    assert "function 'shift'" in msg and "input 1 ('v')" in msg
    assert "expected 1 dimensions" in msg and "(2, 2)" in msg and "old one stays" in msg
    np.testing.assert_array_equal(f[v], [0.0, 0.0])
    # A lossy cast (float64 data for a float32 input) is refused as for an argument.
    with pytest.raises(TypeError, match="dtype float32.*got float64") as e:
        f["v"] = np.array([0.5, 1.5])
    assert "function 'shift'" in str(e.value) and "'v'" in str(e.value)
    with pytest.raises(TypeError, match="None"):
        f[v] = None
    with pytest.raises(TypeError, match="'v'"):
        f[v] = "abc"
    np.testing.assert_array_equal(f[v], [0.0, 0.0])
    np.testing.assert_array_equal(f(1.0), [1.0, 1.0])
    # Exact conversions are taken, as for arguments: a list of ints, a float32 array.
    f[v] = [1, 2]
    assert f[v].dtype == np.float32
    np.testing.assert_array_equal(f(1.0), [2.0, 3.0])
    # allow_downcast (In's, or the function's allow_input_downcast) allows the lossy cast.
    g = function([x, In(v, value=np.zeros(2, dtype="float32"), allow_downcast=True)], v + x)
    g[v] = np.array([0.5, 1.5])
    assert g[v].dtype == np.float32
    np.testing.assert_array_equal(g(0.0), [0.5, 1.5])
    h = function([x, In(v, value=np.zeros(2, dtype="float32"))], v + x, allow_input_downcast=True)
    h[v] = np.array([0.25, 1.25])
    np.testing.assert_array_equal(h(0.0), [0.25, 1.25])
    # The state of an In(update=...) input is checked the same way.
    s = T.fvector("s")
    k = function([x, In(s, value=np.zeros(2, dtype="float32"), update=s + x)], s, name="acc")
    with pytest.raises(TypeError, match="function 'acc'.*'s'.*dtype float32.*got float64"):
        k[s] = np.array([0.5, 1.5])
    np.testing.assert_array_equal(k[s], [0.0, 0.0])


def test_unknown_and_ambiguous_keys():
    f, a, x, s = _state_access()
    with pytest.raises(KeyError, match="not an input of function 'f'.*its inputs: x, a, s") as e:
        f["q"]
    # Theano raised a TypeError: the error is both.
    assert isinstance(e.value, TypeError)
    with pytest.raises(KeyError, match="its inputs: x, a, s"):
        f["q"] = 1.0
    with pytest.raises(KeyError):
        f[T.dscalar("x")]  # another variable of the same name
    with pytest.raises(KeyError):
        f[3]
    assert "a" in f and a in f and 2 in f and "q" not in f and 3 not in f
    # Two inputs of one name: the name is ambiguous, the variables and indices are not.
    p, q = T.dscalars("p", "q")
    g = function([In(p, value=1.0, name="w"), In(q, value=2.0, name="w")], p - q)
    with pytest.raises(TypeError, match="Ambiguous name"):
        g["w"]
    with pytest.raises(TypeError, match="Ambiguous name"):
        g["w"] = 3.0
    assert "w" in g
    g[q] = 5.0
    assert g[p] == 1.0 and g[1] == 5.0 and g() == -4.0


def test_in_name_and_keyword_arguments():
    # Theano's test_naming_rule4 and its documentation's In(w, name='w_by_name').
    x, y, w = T.dscalars("x", "y", "w")
    f = function([x, In(y, value=1.0), In(w, value=2.0, name="w_by_name")], (x + y) * w)
    assert f(33) == 68.0 and f(33, 2) == 70.0 and f(33, 0, 1) == 33.0
    assert f(33, w_by_name=1) == 34.0 and f(33, w_by_name=1, y=0) == 33.0
    # In's name is the input's name, for f[...] as for keywords; its variable's name is not.
    assert f["w_by_name"] == 2.0 and f[w] == 2.0
    with pytest.raises(KeyError, match="w_by_name"):
        f["w"]
    f["w_by_name"] = 10.0
    assert f(1.0, y=1.0) == 20.0  # the set value with a keyword argument for another input
    f[w] = 10.0
    assert f(1.0, w_by_name=3.0) == 6.0  # the keyword argument wins
    assert f(1.0) == 4.0  # and the default is back
    # Positional and keyword arguments after a set default.
    f[y] = 5.0
    assert f(x=1.0) == 12.0 and f(x=1.0) == 4.0


# ------------------------------------------------------------------------------------------------
# In(strict=True)


def test_strict_inputs_take_only_arrays_of_their_type():
    v = T.fvector("v")
    n = T.lscalar("n")
    f = function([In(v, strict=True), In(n, strict=True)], v * n, name="scale")
    np.testing.assert_array_equal(f(np.ones(2, dtype="float32"), np.array(3)), [3.0, 3.0])
    np.testing.assert_array_equal(f(v=np.ones(2, dtype="float32"), n=np.array(2)), [2.0, 2.0])
    mm = np.zeros(2, dtype="float32")
    v_is = "input 0 \\('v'\\) is strict"
    n_is = "input 1 \\('n'\\) is strict"
    bad = [
        (np.ones(2), np.array(3), v_is, "got a numpy.ndarray of dtype float64 with 1 dimensions"),  # a lossy cast
        (np.ones(2, dtype="float16"), np.array(3), v_is, "got a numpy.ndarray of dtype float16"),  # a safe one
        ([1.0, 2.0], np.array(3), v_is, "got a list"),
        (mm, 3, n_is, "got an int \\(3\\)"),
        (mm, np.int64(3), n_is, "got a numpy scalar"),
        (mm, np.array(3, dtype="int32"), n_is, "got a numpy.ndarray of dtype int32"),
        (np.ones((1, 2), dtype="float32"), np.array(3), v_is, "got a numpy.ndarray of dtype float32 with 2 dim"),
    ]
    for vv, nv, who, got in bad:
        with pytest.raises(TypeError, match=f"function 'scale': {who}.*the argument must be a numpy.ndarray of dtype "
                                            f".* \\(TensorType.*{got}"):
            f(vv, nv)
    # Keyword arguments are checked as positional ones.
    with pytest.raises(TypeError, match="'n'.*strict"):
        f(mm, n=3)
    # Without strict the same values convert (the float16 and int32 arrays, the list, 3).
    g = function([v, n], v * n)
    np.testing.assert_array_equal(g(np.ones(2, dtype="float16"), np.array(3, dtype="int32")), [3.0, 3.0])
    np.testing.assert_array_equal(g([1.0, 2.0], 3), [3.0, 6.0])
    assert type(g) is Function  # non-strict functions keep the C++ call path


def test_strict_defaults_and_set_values():
    v = T.fvector("v")
    # The default of a strict input must be of its type too (Theano filters it into the container).
    with pytest.raises(TypeError, match="strict.*its default value.*got a list"):
        function([In(v, value=[1.0, 2.0], strict=True)], v * 2)
    f = function([In(v, value=np.zeros(2, dtype="float32"), strict=True)], v * 2)
    np.testing.assert_array_equal(f(), [0.0, 0.0])
    with pytest.raises(TypeError, match="strict.*value set.*got a numpy.ndarray of dtype float64"):
        f[v] = np.ones(2)
    with pytest.raises(TypeError, match="strict.*got a list"):
        f[v] = [1.0, 2.0]
    np.testing.assert_array_equal(f[v], [0.0, 0.0])
    f[v] = np.ones(2, dtype="float32")
    np.testing.assert_array_equal(f(), [2.0, 2.0])
    np.testing.assert_array_equal(f(), [0.0, 0.0])
    # A strict state: its initial value and the values set.
    s = T.dscalar("s")
    with pytest.raises(TypeError, match="strict.*initial value"):
        function([In(s, value=0.0, update=s + 1, strict=True)], s)
    k = function([In(s, value=np.array(0.0), update=s + 1, strict=True)], s)
    with pytest.raises(TypeError, match="strict"):
        k[s] = 5.0
    k[s] = np.array(5.0)
    assert k() == 5.0 and k[s] == 6.0


def test_strict_inputs_take_a_gpuarray_of_their_dtype():
    # A GpuArray (a device output) is of the input's type where its dtype and ndim are.
    from util import emulated_gpu

    with emulated_gpu() as mode:
        v = T.fvector("v")
        g = function([v], theano._core.device_from_host(v * 1), mode=mode)(np.ones(2, dtype="float32"))
        assert isinstance(g, theano._core.GpuArray)
        f = function([In(v, strict=True)], v * 2, mode=mode)
        np.testing.assert_array_equal(f(g), [2.0, 2.0])
        w = T.dvector("w")
        h = function([In(w, strict=True)], w * 2, mode=mode)
        with pytest.raises(TypeError, match="strict.*got a GpuArray of dtype float32"):
            h(g)


# ------------------------------------------------------------------------------------------------
# In(update=..., implicit=False): callers may pass the state


def test_passing_a_value_for_a_state_input_as_in_theano():
    # Theano's test_shared_state_not_implicit (from its documentation).
    x, s = T.dscalars("x", "s")
    inc = function([x, In(s, update=(s + x), value=10.0)], [])
    dec = function([x, In(s, update=(s - x), value=inc.container[s], implicit=False)], [])
    assert dec[s] == inc[s]
    inc[s] = 2
    assert dec[s] == 2
    dec(1)
    assert inc[s] == 1
    # The value passed replaces the state, and the update is computed from it: 0 - 1.
    dec(1, 0)
    assert inc[s] == -1 and dec[s] == -1
    dec(x=1, s=5)
    assert inc[s] == 4
    # inc's s is implicit (implicit=None means True here): it takes no value.
    with pytest.raises(TypeError, match="1 inputs"):
        inc(1, 0)
    with pytest.raises(TypeError, match="keyword argument 's'"):
        inc(1, s=0)


def test_a_passed_state_is_in_the_positional_order_and_checked():
    x, s = T.dscalars("x", "s")
    # The state input sits between two ordinary ones: positions follow the list given to function().
    y = T.dscalar("y")
    f = function([x, In(s, value=1.0, update=s * x, implicit=False), y], s + y, name="acc")
    assert f(2.0, 3.0, 0.5) == 3.5 and f[s] == 6.0
    assert f(2.0, y=0.0) == 6.0 and f[s] == 12.0
    assert f(x=1.0, y=1.0, s=4.0) == 5.0 and f[s] == 4.0
    with pytest.raises(TypeError, match="multiple values"):
        f(1.0, 2.0, 3.0, s=1.0)
    with pytest.raises(TypeError, match="missing"):
        f(1.0, 2.0)
    # A bad value changes nothing; nor does a call that fails after the value was taken.
    with pytest.raises(TypeError, match="function 'acc': input 1 \\('s'\\).*expected 0 dimensions"):
        f(1.0, np.zeros(2), 1.0)
    assert f[s] == 4.0
    v = T.dvector("v")
    i = T.lscalar("i")
    g = function([i, In(v, value=np.zeros(3), update=T.set_subtensor(v[i], 1.0), implicit=False)], [])
    with pytest.raises(IndexError):
        g(5, np.full(3, 7.0))
    np.testing.assert_array_equal(g[v], [0.0, 0.0, 0.0])
    g(1, np.full(3, 7.0))
    np.testing.assert_array_equal(g[v], [7.0, 1.0, 7.0])
    g(0)
    np.testing.assert_array_equal(g[v], [1.0, 1.0, 7.0])


# ------------------------------------------------------------------------------------------------
# f.copy(): containers of its own


def test_copy_has_containers_of_its_own():
    # Theano's test_copy.
    f, a, x, s = _state_access()
    g = copy.copy(f)
    assert f(2, 1) == g(2)
    assert f(2, 1) == g(2)
    f(1, 2)  # out of sync
    assert f(1, 2) != g(1, 2)
    # The copy starts from the current state, then goes on alone.
    f[s] = 100.0
    h = f.copy()
    assert h[s] == 100.0
    h(1.0)
    assert h[s] == 101.0 and f[s] == 100.0
    f(1.0)
    assert f[s] == 101.0 and h[s] == 101.0
    h[s] = 0.0
    assert f[s] == 101.0
    # A default set for the next call is set in the copy too; setting the copy's leaves f's.
    f[a] = 3.0
    k = f.copy(share_memory=True)
    assert k[a] == 3.0
    k[a] = 4.0
    assert f[a] == 3.0
    f[s] = k[s] = 0.0
    assert k(1.0) == 4.0 and f(1.0) == 3.0
    assert k[a] == 1.0 and f[a] == 1.0


def test_copy_keeps_shared_containers_shared_and_strict_strict():
    x, s = T.dscalars("x", "s")
    inc = function([x, In(s, update=(s + x), value=0.0)], [])
    dec = function([x, In(s, update=(s - x), value=inc.container[s], implicit=False)], [])
    dec2 = dec.copy()
    inc(5.0)
    assert dec2[s] == 5.0
    dec2(1.0)
    assert inc[s] == 4.0
    dec2(1.0, 10.0)  # the copy's state input is still explicit
    assert inc[s] == 9.0
    v = T.fvector("v")
    f = function([In(v, strict=True)], v * 2)
    with pytest.raises(TypeError, match="strict"):
        f.copy()(np.ones(2))


def test_dict_outputs_and_pickle_keep_the_inputs():
    x, y, s = T.dscalars("x", "y", "s")
    f = function([x, In(y, value=2.0), In(s, value=1.0, update=s + 1, implicit=False)], {"out": x * y + s})
    assert f["y"] == 2.0 and "y" in f
    f["y"] = 3.0
    assert f(1.0) == {"out": 4.0} and f(1.0) == {"out": 4.0}  # 1*3 + 1, then 1*2 + 2
    assert f(1.0, 2.0, 10.0) == {"out": 12.0} and f[s] == 11.0
    g = copy.copy(f)
    g(1.0)
    assert g[s] == 12.0 and f[s] == 11.0
    v = T.fvector("v")
    h = pickle.loads(pickle.dumps(function([In(v, strict=True), In(s, value=5.0, update=s * 2, implicit=False)],
                                           v * s)))
    with pytest.raises(TypeError, match="strict"):
        h(np.ones(2))
    np.testing.assert_array_equal(h(np.ones(2, dtype="float32"), 3.0), [3.0, 3.0])
    assert h["s"] == 6.0  # (the unpickled function has variables of its own)
