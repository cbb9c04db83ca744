"""Device arrays from Python (hypatia.gpuarray.GpuArray, Theano's CudaNdarray): a result kept on
the GPU, shared values on the device, device arguments, and the exports other libraries read
(DLPack, __cuda_array_interface__). On a machine with a GPU these run on it; without one, host
memory stands in for the device's (only the transfer nodes run there: the functions are the
CPU's), and the copies between the two are counted."""
import ctypes
import gc
import os
import pickle

import numpy as np
import pytest

import hypatia
import hypatia.tensor as T
from hypatia import Out, _core, function, shared
from hypatia.gpuarray import GpuArray
from hypatia.sandbox.cuda.basic_ops import gpu_from_host, host_from_gpu
from util import emulated_gpu

NONE = hypatia.Mode(linker="cpu", optimizer=None)
CPU = hypatia.Mode(linker="cpu")  # whatever config.device is (the suite also runs with device=cuda)


def real_gpu():
    """Whether a GPU is usable here. Without one, making a device array fails with one of the two
    errors Hypatia gives for that (no usable CUDA device; no CUDA backend built in); any other
    error is the test's to see."""
    try:
        GpuArray(np.zeros(1, "float32"))
        return True
    except NotImplementedError as e:
        if "cannot run here" not in str(e):
            raise
    except ValueError as e:
        if "no backend for this device" not in str(e):
            raise
    return False


@pytest.fixture
def stand_in():
    """True when host memory stands in for the GPU's (copies counted), False on a real GPU."""
    if not os.environ.get("HYPATIA_TEST_EMULATED_GPU") and real_gpu():
        yield False
        return
    with emulated_gpu():  # (already installed when the whole run uses it: conftest.py)
        yield True


def copies():
    return _core._emulated_gpu_copies()


def test_a_result_kept_on_the_gpu_is_a_gpuarray(stand_in):
    # Seed 001's last variant: Out(gpu_from_host(exp(x)), borrow=True).
    x = shared(np.linspace(-1, 1, 7).astype("float32"), "x")
    f = function([], Out(gpu_from_host(T.exp(x)), borrow=True), mode=CPU)
    c0 = copies()
    r = f()
    assert isinstance(r, GpuArray) and isinstance(r, hypatia.sandbox.cuda.CudaNdarray)
    assert r.shape == (7,) and r.dtype == np.float32 and r.ndim == 1 and r.size == 7 and len(r) == 7
    assert r.itemsize == 4 and r.nbytes == 28 and r.strides == (4,) and r.device == "cuda:0"
    # Printing reads no values (no transfer); numpy.asarray copies to the host.
    assert repr(r) == "GpuArray(shape=(7,), dtype=float32, device='cuda:0')"
    if stand_in:
        assert copies()[1] == c0[1]
    np.testing.assert_allclose(np.asarray(r), np.exp(x.get_value()), rtol=1e-6)
    if stand_in:
        assert copies()[1] == c0[1] + 1  # numpy.asarray
    assert np.asarray(r, dtype="float64").dtype == np.float64
    with pytest.raises(ValueError, match="copy=False\\) cannot view them"):
        np.asarray(r, copy=False)
    # A copy on the device is another buffer with the same values.
    c = r.copy()
    assert isinstance(c, GpuArray) and c.__cuda_array_interface__["data"][0] != r.__cuda_array_interface__["data"][0]
    np.testing.assert_array_equal(np.asarray(c), np.asarray(r))


def test_gpuarray_from_host_values_every_dtype(stand_in):
    for dt, ts in [("float32", "<f4"), ("float64", "<f8"), ("float16", "<f2"), ("int64", "<i8"), ("int8", "|i1"),
                   ("uint16", "<u2"), ("bool", "|b1")]:
        v = (np.arange(6).reshape(2, 3) % 3).astype(dt)
        g = GpuArray(v)
        assert g.dtype == np.dtype(dt) and g.shape == (2, 3) and len(g) == 2
        np.testing.assert_array_equal(np.asarray(g), v)
        cai = g.__cuda_array_interface__
        assert cai["typestr"] == ts and cai["shape"] == (2, 3) and cai["version"] == 3
        assert cai["strides"] is None and cai["stream"] is None and cai["data"][1] is False
    # A non-contiguous host value is made contiguous on its way.
    v = np.arange(12, dtype="float32").reshape(3, 4).T
    np.testing.assert_array_equal(np.asarray(GpuArray(v)), v)
    assert GpuArray(np.float32(2.5)).shape == ()
    with pytest.raises(TypeError, match="len\\(\\) of a 0-d GpuArray"):
        len(GpuArray(np.float32(2.5)))
    with pytest.raises(ValueError, match="is the host; expected a GPU"):
        GpuArray(v, device="cpu")
    with pytest.raises(ValueError, match="expected 'cpu', 'cuda', 'cudaN' or 'cuda:N'"):
        GpuArray(v, device="tpu")


def test_dlpack_export_is_the_buffer_in_place(stand_in):
    g = GpuArray(np.arange(6, dtype="float32").reshape(2, 3))
    assert g.__dlpack_device__() == (2, 0)  # kDLCUDA, device 0
    cap = g.__dlpack__()
    get_name = ctypes.pythonapi.PyCapsule_GetName
    get_name.restype, get_name.argtypes = ctypes.c_char_p, [ctypes.py_object]
    assert get_name(cap) == b"dltensor"
    get_ptr = ctypes.pythonapi.PyCapsule_GetPointer
    get_ptr.restype, get_ptr.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]

    class DLTensor(ctypes.Structure):
        _fields_ = [("data", ctypes.c_void_p), ("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32),
                    ("ndim", ctypes.c_int32), ("code", ctypes.c_uint8), ("bits", ctypes.c_uint8),
                    ("lanes", ctypes.c_uint16), ("shape", ctypes.POINTER(ctypes.c_int64)),
                    ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]

    t = DLTensor.from_address(get_ptr(cap, b"dltensor"))
    assert (t.device_type, t.device_id, t.ndim, t.code, t.bits, t.lanes) == (2, 0, 2, 2, 32, 1)
    assert [t.shape[i] for i in range(2)] == [2, 3]
    assert t.data + t.byte_offset == g.__cuda_array_interface__["data"][0]
    # The versioned protocol (DLPack 1.x) when the consumer asks for it.
    assert get_name(g.__dlpack__(max_version=(1, 0))) == b"dltensor_versioned"
    if stand_in:
        # The export keeps the buffer alive after the GpuArray is gone (host memory here: readable).
        del g
        gc.collect()
        vals = (ctypes.c_float * 6).from_address(t.data + t.byte_offset)
        assert list(vals) == [0, 1, 2, 3, 4, 5]
    # numpy cannot import a GPU buffer: it says so rather than reading device memory.
    with pytest.raises((RuntimeError, BufferError, TypeError, ValueError)):
        np.from_dlpack(GpuArray(np.zeros(2, "float32")))


def test_an_input_only_transfers_read_takes_a_gpuarray_without_a_host_copy(stand_in):
    x = T.fvector("x")
    on_gpu = gpu_from_host(x)
    f = function([x], [host_from_gpu(on_gpu), Out(on_gpu, borrow=True)], mode=NONE)
    v = np.array([1, 2, 3], "float32")
    g = GpuArray(v)
    c0 = copies()
    back, kept = f(g)
    np.testing.assert_array_equal(back, v)
    assert isinstance(kept, GpuArray)
    assert kept.__cuda_array_interface__["data"][0] != g.__cuda_array_interface__["data"][0]
    if stand_in:
        assert copies()[0] == c0[0]  # nothing from the host: the argument was copied on the device
        assert copies()[2] == c0[2] + 1
    # Chained: one function's device result is the next one's argument.
    np.testing.assert_array_equal(f(kept)[0], v)
    # A host argument still works.
    np.testing.assert_array_equal(f(v)[0], v)
    with pytest.raises(TypeError, match="GpuArray of dtype float64 on cuda:0; it is not converted on the device"):
        f(GpuArray(v.astype("float64")))
    # An input the host reads too takes host values only, and says so.
    h = function([x], [host_from_gpu(on_gpu), x * 2], mode=NONE)
    with pytest.raises(TypeError, match="the function reads this input on the host: transfer it first"):
        h(g)
    np.testing.assert_array_equal(h(np.asarray(g))[1], 2 * v)


def test_shared_values_on_the_device(stand_in):
    v = np.arange(4, dtype="float32")
    s = shared(GpuArray(v), "s")
    c0 = copies()
    inside = s.get_value(return_internal_type=True)
    assert isinstance(inside, GpuArray) and inside.device == "cuda:0"
    if stand_in:
        assert copies()[1] == c0[1]  # no transfer
    host = s.get_value()
    assert isinstance(host, np.ndarray)
    np.testing.assert_array_equal(host, v)
    # set_value keeps the variable on its device: a host value is copied in, a GpuArray stays.
    s.set_value(np.full(4, 7, "float32"))
    assert isinstance(s.get_value(return_internal_type=True), GpuArray)
    np.testing.assert_array_equal(s.get_value(), np.full(4, 7))
    s.set_value(GpuArray(v + 1), borrow=True)
    np.testing.assert_array_equal(s.get_value(), v + 1)
    with pytest.raises(TypeError, match="GpuArray of dtype float64"):
        s.set_value(GpuArray(v.astype("float64")))
    # A function reading it: the transfer to the host happens inside the call.
    np.testing.assert_array_equal(function([], s * 2, mode=CPU)(), 2 * (v + 1))


def test_nodes_on_a_gpu_show_theanos_gpu_ops():
    from hypatia.gpuarray import GpuApply, GpuCAReduce, GpuElemwise, GpuOp, gpu_op_class

    x = T.fvector("x")
    f = function([x], T.exp(x), mode=CPU)
    nodes = f.maker.fgraph.toposort()
    # On the CPU every node is the host's.
    assert f.node_devices() == ["cpu"] * len(nodes)
    assert not any(isinstance(n, GpuApply) for n in nodes)
    # A node that runs on a GPU (what toposort gives under device=cuda): Theano's names, and not
    # an instance of the host class (seed 001's isinstance(node.op, T.Elemwise) check).
    v = GpuApply(nodes[0], "cuda:0")
    assert str(v) == "GpuElemwise{exp,no_inplace}(x)" and repr(v.op) == "GpuElemwise{exp,no_inplace}"
    assert isinstance(v.op, GpuElemwise) and isinstance(v.op, GpuOp) and not isinstance(v.op, T.Elemwise)
    assert v.op.device == "cuda:0" and v.op.host_op == nodes[0].op and v.host_node == nodes[0]
    assert v.op.scalar_op == nodes[0].op.scalar_op and v.inputs == nodes[0].inputs and v.nout == 1
    assert v == GpuApply(nodes[0], "cuda:0") and len({v, GpuApply(nodes[0], "cuda:0")}) == 1
    # Fused elementwise work is a GpuElemwise too; a reduction a GpuCAReduce; others 'Gpu' + name.
    fused = function([x], T.exp(x) * 2 + 1, mode=CPU).maker.fgraph.toposort()[0]
    fv = GpuApply(fused, "cuda:0")
    assert isinstance(fv.op, GpuElemwise) and str(fv.op).startswith("GpuElemwise{Composite{")
    red = [n for n in function([x], T.sum(x), mode=CPU).maker.fgraph.toposort() if isinstance(n.op, T.CAReduce)][0]
    assert isinstance(GpuApply(red, "cuda:0").op, GpuCAReduce)
    m = T.fmatrix("m")
    dot = function([m], T.dot(m, m), mode=CPU).maker.fgraph.toposort()[-1]
    dv = GpuApply(dot, "cuda:0")
    assert type(dv.op).__name__ == "Gpu" + type(dot.op).__name__ and str(dv.op) == "Gpu" + str(dot.op)
    assert gpu_op_class(type(dot.op)) is type(dv.op) and gpu_op_class(type(dv.op)) is type(dv.op)


EMULATED = hypatia.Mode(linker="emulated_gpu")


def emulated_only(stand_in):
    if not stand_in:
        pytest.skip("a real GPU is here: these run on it in test_cuda_transfers.py")


def test_shared_target_keeps_a_variable_on_its_device(stand_in):
    emulated_only(stand_in)
    v = np.arange(4, dtype="float32")
    # target='cpu': stays on the host; the device reads it through a transfer per call and its
    # update comes back (Theano gpuarray's TensorSharedVariable beside GPU code).
    w = shared(v, "w", target="cpu")
    assert _core.shared_target(w) == "cpu"
    f = function([], [], updates=[(w, T.exp(w) * 2)], mode=EMULATED)
    names = [str(n.op) for n in f.maker.fgraph.toposort()]
    assert names.count("GpuFromHost<cuda:0>") == 1 and names.count("HostFromGpu") == 1, names
    assert isinstance(w.get_value(return_internal_type=True), np.ndarray)
    c0 = copies()
    f()
    assert copies()[:2] == (c0[0] + 1, c0[1] + 1)
    np.testing.assert_allclose(w.get_value(), np.exp(v) * 2, rtol=1e-6)
    w.set_value(GpuArray(v))  # copied to the host, where w lives
    assert isinstance(w.get_value(return_internal_type=True), np.ndarray)
    # target='cuda' (or Theano's 'gpu', 'gpu0'): on the device from the start, and kept there.
    for t in ("cuda", "cuda0", "gpu", "gpu0", "cuda:0"):
        s = shared(v, "s", target=t)
        assert isinstance(s.get_value(return_internal_type=True), GpuArray), t
        assert _core.shared_target(s) == "cuda:0"
    np.testing.assert_array_equal(function([], s * 2, mode=CPU)(), 2 * v)  # read on the host per call
    assert isinstance(s.get_value(return_internal_type=True), GpuArray)
    # A function on the host backend updating it (in place, and not): the value goes back to the GPU.
    for updates in ([(s, s + 1)], [(s, T.exp(s))]):
        before = s.get_value()
        function([], [], updates=updates, mode=CPU)()
        assert isinstance(s.get_value(return_internal_type=True), GpuArray) and _core.shared_target(s) == "cuda:0"
        assert not np.array_equal(s.get_value(), before)
    s.set_value(v)
    # Without a target nothing is fixed (the default moves to the device when compiled).
    assert _core.shared_target(shared(v)) is None
    # Pickled and back: the target too.
    r = pickle.loads(pickle.dumps(s))
    assert _core.shared_target(r) == "cuda:0" and isinstance(r.get_value(return_internal_type=True), GpuArray)
    np.testing.assert_array_equal(r.get_value(), v)
    assert _core.shared_target(pickle.loads(pickle.dumps(w))) == "cpu"
    # Bad targets and keywords, by name.
    with pytest.raises(ValueError, match=r"shared\(target='dev0'\): device: 'dev0' is not a device"):
        shared(v, target="dev0")
    with pytest.raises(TypeError, match=r"shared\(target=...\) takes a device name"):
        shared(v, target=0)
    with pytest.raises(NotImplementedError, match="this process runs on cuda:0.*one GPU per process"):
        shared(v, target="cuda1")
    with pytest.raises(TypeError, match="unexpected keyword argument.*targte"):
        shared(v, targte="cpu")


def test_mrg_draws_keep_their_state_where_target_says(stand_in):
    # Theano's MRG_RandomStreams.uniform(..., target=...): the state's shared variable's target.
    emulated_only(stand_in)
    from hypatia.sandbox.rng_mrg import MRG_RandomStreams

    plain = MRG_RandomStreams(7).uniform((6,))
    on_cpu = MRG_RandomStreams(7).uniform((6,), target="cpu")
    on_gpu = MRG_RandomStreams(7).normal((6,), target="cuda")
    assert _core.shared_target(on_cpu.rstate) == "cpu" and _core.shared_target(plain.rstate) is None
    assert _core.shared_target(on_gpu.rstate) == "cuda:0"
    assert isinstance(on_gpu.rstate.get_value(return_internal_type=True), GpuArray)
    f, g = function([], plain, mode=EMULATED), function([], on_cpu, mode=EMULATED)
    for _ in range(2):  # the same draws, call after call
        np.testing.assert_array_equal(f(), g())
    assert isinstance(on_cpu.rstate.get_value(return_internal_type=True), np.ndarray)
    assert isinstance(plain.rstate.get_value(return_internal_type=True), GpuArray)  # (moved when compiled)
    with pytest.raises(ValueError, match=r"MRG_RandomStreams: target='dev0': device: 'dev0' is not a device"):
        MRG_RandomStreams(7).uniform((2,), target="dev0")
    with pytest.raises(TypeError, match=r"uniform\(\) got unexpected keyword arguments \['trget'\]"):
        MRG_RandomStreams(7).uniform((2,), trget="cpu")


def test_a_pickled_gpu_shared_variable_loads_on_the_host_where_no_gpu_is():
    if os.environ.get("HYPATIA_TEST_EMULATED_GPU") or real_gpu():
        pytest.skip("a GPU (or the emulated one) is here")
    from hypatia import _pickle

    v = np.arange(3, dtype="float32")
    with pytest.warns(UserWarning, match="it was created on cuda:0, which is not available here"):
        s = _pickle._rebuild_shared(v, "s", (False,), "cuda:0")
    assert _core.shared_target(s) is None and isinstance(s.get_value(return_internal_type=True), np.ndarray)
    np.testing.assert_array_equal(s.get_value(), v)


def test_seed_001_on_the_emulated_gpu(stand_in):
    emulated_only(stand_in)
    x = shared(np.linspace(0, 1, 6).astype("float32"), "x")
    # The plain variant: exp on the device, the result copied back (Theano's HostFromGpu).
    f = function([], T.exp(x), mode=EMULATED)
    topo = f.maker.fgraph.toposort()
    assert [str(n.op) for n in topo] == ["GpuElemwise{exp,no_inplace}", "HostFromGpu"]
    assert f.node_devices() == ["cuda:0", "cpu"]
    assert not any(isinstance(n.op, T.Elemwise) for n in topo)  # the seed prints "Used the gpu"
    assert str(topo[0]) == "GpuElemwise{exp,no_inplace}(x)"
    assert isinstance(x.get_value(return_internal_type=True), GpuArray)  # moved to the device once
    c0 = copies()
    r = f()
    assert isinstance(r, np.ndarray) and copies()[:2] == (c0[0], c0[1] + 1)
    np.testing.assert_allclose(r, np.exp(x.get_value()), rtol=1e-6)
    # Out(gpu_from_host(...), borrow=True): the result stays on the device; nothing crosses.
    g = function([], Out(gpu_from_host(T.exp(x)), borrow=True), mode=EMULATED)
    assert [str(n.op) for n in g.maker.fgraph.toposort()] == ["GpuElemwise{exp,no_inplace}"]
    c0 = copies()
    for _ in range(5):
        r = g()
    assert isinstance(r, GpuArray) and copies() == c0
    np.testing.assert_allclose(np.asarray(r), np.exp(x.get_value()), rtol=1e-6)


def test_seed_000_transfers_per_call_on_the_emulated_gpu(stand_in):
    # y = m x + b in seed 000's four variants: 3 + 1, 1 + 1, 0 + 1 and 0 + 0 copies per call.
    emulated_only(stand_in)
    rng = np.random.RandomState(0)
    mv, xv, bv = (rng.rand(*s).astype("float32") for s in [(5, 5), (5,), (5,)])
    want = mv @ xv + bv
    m, x, b = T.fmatrix("m"), T.fvector("x"), T.fvector("b")
    sm, sx, sb = shared(mv, "sm"), shared(xv, "sx"), shared(bv, "sb")
    sy = shared(np.zeros(5, "float32"), "sy")
    cases = [
        (function([m, x, b], T.dot(m, x) + b, mode=EMULATED), (mv, xv, bv), (3, 1)),
        (function([x], T.dot(sm, x) + sb, mode=EMULATED), (xv,), (1, 1)),
        (function([], T.dot(sm, sx) + sb, mode=EMULATED), (), (0, 1)),
        (function([], [], updates=[(sy, T.dot(sm, sx) + sb)], mode=EMULATED), (), (0, 0)),
    ]
    for f, args, (to_dev, to_host) in cases:
        f(*args)  # constants and shared values moved at compile time or on the first call
        c0 = copies()
        out = f(*args)
        c1 = copies()
        assert (c1[0] - c0[0], c1[1] - c0[1]) == (to_dev, to_host), f.maker.fgraph.toposort()
        if args or to_host:
            np.testing.assert_allclose(out, want, rtol=1e-5)
    np.testing.assert_allclose(sy.get_value(), want, rtol=1e-5)
    # Every node but the transfers ran on the device.
    for f, _, _ in cases:
        for n, d in zip(f.maker.fgraph.toposort(), f.node_devices()):
            assert (d == "cpu") == (str(n.op).startswith(("GpuFromHost", "HostFromGpu"))), (n, d)


def test_a_strided_result_kept_on_the_device_comes_back_whole(stand_in):
    emulated_only(stand_in)
    v = np.arange(12, dtype="float32").reshape(3, 4)
    m = shared(v, "m")
    r = function([], Out(gpu_from_host(m.T), borrow=True), mode=EMULATED)()
    assert isinstance(r, GpuArray) and r.shape == (4, 3) and not r.flags_c_contiguous
    assert r.__cuda_array_interface__["strides"] == (4, 16)
    np.testing.assert_array_equal(np.asarray(r), v.T)
    c = r.copy()
    assert c.flags_c_contiguous and c.device == "cuda:0"
    np.testing.assert_array_equal(np.asarray(c), v.T)
    # A reversed view spans its bytes backwards.
    back = function([], Out(gpu_from_host(m[::-1, ::-2]), borrow=True), mode=EMULATED)()
    np.testing.assert_array_equal(np.asarray(back), v[::-1, ::-2])


def test_a_gpuarray_pickles_through_its_values(stand_in):

    v = np.arange(6, dtype="float32").reshape(2, 3)
    back = pickle.loads(pickle.dumps(GpuArray(v)))
    assert isinstance(back, GpuArray) and back.device == "cuda:0" and back.dtype == np.float32
    np.testing.assert_array_equal(np.asarray(back), v)


def test_gpu_op_views_pickle_as_the_view_of_their_host_op():

    from hypatia.gpuarray import GpuApply, GpuElemwise

    x = T.fvector("x")
    node = function([x], T.exp(x), mode=CPU).maker.fgraph.toposort()[0]
    view = GpuApply(node, "cuda:0").op
    back = pickle.loads(pickle.dumps(view))
    assert isinstance(back, GpuElemwise) and back == view and str(back) == "GpuElemwise{exp,no_inplace}"


class _CudaExporter:
    """Another library's CUDA array as Hypatia sees it: only the DLPack protocol (torch, CuPy)."""

    def __init__(self, g):
        self.g = g

    def __dlpack__(self, **kw):
        return self.g.__dlpack__(**kw)

    def __dlpack_device__(self):
        return self.g.__dlpack_device__()


def test_another_librarys_cuda_array_is_used_in_place(stand_in):
    v = np.arange(6, dtype="float32")
    g = GpuArray(v)
    x = T.fvector("x")
    on_gpu = gpu_from_host(x)
    f = function([x], [host_from_gpu(on_gpu), Out(on_gpu, borrow=True)], mode=NONE)
    c0 = copies()
    back, kept = f(_CudaExporter(g))
    np.testing.assert_array_equal(back, v)
    if stand_in:
        assert copies()[0] == c0[0]  # imported in place: nothing came from the host
    # A shared variable made from it lives on the device; a host reader refuses it by name.
    s = shared(_CudaExporter(g), "s")
    assert isinstance(s.get_value(return_internal_type=True), GpuArray)
    np.testing.assert_array_equal(s.get_value(), v)
    h = function([x], x * 2, mode=NONE)
    with pytest.raises(TypeError, match="reads this input on the host"):
        h(_CudaExporter(g))


def test_theanos_gpu_device_names_are_the_first_gpu_and_another_gpu_is_refused(stand_in):
    # Theano's old backend: device=gpu, gpu0. A GPU other than the process's is refused by name
    # (a process drives one: the device flag's), never put on it under another label.
    v = np.arange(4, dtype="float32")
    assert GpuArray(v, device="gpu").device == GpuArray(v, device="cuda0").device
    assert GpuArray(v, device="gpu0").device == GpuArray(v).device
    with pytest.raises(NotImplementedError, match="HYPATIA_FLAGS=device=cuda2, or CUDA_VISIBLE_DEVICES"):
        GpuArray(v, device="cuda2")
    x = T.fvector("x")
    with pytest.raises(NotImplementedError, match="device cuda:1: this process runs on cuda:0"):
        function([x], Out(T.transfer(x, "gpu1"), borrow=True), mode=NONE)(v)
