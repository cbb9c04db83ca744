"""Python ops on the GPU: seed 001's custom op, whose make_node wraps its input in
gpu_contiguous(as_cuda_ndarray_variable(inp)) and whose make_thunk launches its own kernel on the
device buffers (CudaNdarray.zeros, .gpudata). On the emulated GPU (host memory standing in for the
device's) the "kernel" writes through the device address with ctypes, as a GPU kernel would
through its pointer; with a GPU and CuPy, the seed's CUDA source runs as a cupy.RawKernel."""
import ctypes
import os

import numpy as np
import pytest

import hypatia
import hypatia.tensor as T
from hypatia import Out, function, sandbox, shared
from hypatia.gpuarray import GpuArray
from util import emulated_gpu

cuda = sandbox.cuda


def _floats_at(address, n):
    """The n float32 at a (stand-in) device address, in place."""
    return np.ctypeslib.as_array((ctypes.c_float * n).from_address(address)) if n else np.zeros(0, "float32")


class DoubleOp(hypatia.Op):
    """Seed 001's PyCUDADoubleOp, its kernel written through the address on the stand-in device."""

    thunks_made = 0

    def __eq__(self, other):
        return type(self) == type(other)

    def __hash__(self):
        return hash(type(self))

    def __str__(self):
        return self.__class__.__name__

    def make_node(self, inp):
        inp = cuda.basic_ops.gpu_contiguous(cuda.basic_ops.as_cuda_ndarray_variable(inp))
        assert inp.dtype == "float32"
        return hypatia.Apply(self, [inp], [inp.type()])

    def make_thunk(self, node, storage_map, _, _2):
        DoubleOp.thunks_made += 1
        inputs = [storage_map[v] for v in node.inputs]
        outputs = [storage_map[v] for v in node.outputs]

        def thunk():
            z = outputs[0]
            if z[0] is None or z[0].shape != inputs[0][0].shape:
                z[0] = cuda.CudaNdarray.zeros(inputs[0][0].shape)
            self.launch(inputs[0][0], z[0], inputs[0][0].size)

        return thunk

    @staticmethod
    def launch(inp, out, n):
        """The seed's kernel: out[i] = inp[i] * 2."""
        _floats_at(out.gpudata, n)[:] = _floats_at(inp.gpudata, n) * 2


def test_seed_001s_custom_op_runs_on_the_device_with_its_own_kernel():
    with emulated_gpu() as mode:
        x = T.fmatrix("x")
        f = function([x], DoubleOp()(x), mode=mode)
        topo = f.maker.fgraph.toposort()
        assert [str(n.op) for n in topo] == ["GpuFromHost<cuda:0>", "GpuDoubleOp", "HostFromGpu"]
        assert f.node_devices() == ["cpu", "cuda:0", "cpu"]
        xv = np.ones((4, 5), dtype="float32")
        made = DoubleOp.thunks_made
        assert np.allclose(f(xv), xv * 2)
        r = f(np.arange(20, dtype="float32").reshape(4, 5))
        assert isinstance(r, np.ndarray)
        np.testing.assert_array_equal(r, 2 * np.arange(20).reshape(4, 5))
        assert DoubleOp.thunks_made == made + 1  # one thunk per function (and thread)
        # A transposed input reaches the kernel C-contiguous (its pointer reads it in order).
        m = shared(np.arange(6, dtype="float32").reshape(2, 3), "m")
        g = function([], DoubleOp()(m.T), mode=mode)
        np.testing.assert_array_equal(g(), 2 * np.arange(6).reshape(2, 3).T)
        # Kept on the device: a GpuArray, and a fresh one each call (the output cell starts empty,
        # so the previous result, now the caller's, is never written).
        h = function([], Out(cuda.basic_ops.gpu_from_host(DoubleOp()(m)), borrow=True), mode=mode)
        a = h()
        b = h()
        assert isinstance(a, GpuArray) and isinstance(b, GpuArray) and a.gpudata != b.gpudata
        np.testing.assert_array_equal(np.asarray(a), 2 * m.get_value())
        # Two in a row: the inner result stays on the device (nothing comes back between them).
        k = function([x], DoubleOp()(DoubleOp()(x)), mode=mode)
        assert [str(n.op) for n in k.maker.fgraph.toposort()].count("HostFromGpu") == 1
        np.testing.assert_array_equal(k(xv), 4 * xv)
        # And its gradient-free use inside a bigger graph on the device.
        s = function([x], T.sum(DoubleOp()(x) + 1), mode=mode)
        assert s(xv) == pytest.approx(60.0)


def test_a_device_op_gets_gpuarrays_and_may_give_host_or_device_values():
    seen = []

    class AddOne(hypatia.Op):
        __props__ = ("host_result",)

        def __init__(self, host_result):
            self.host_result = host_result

        def make_node(self, x):
            x = cuda.basic_ops.as_cuda_ndarray_variable(x)
            return hypatia.Apply(self, [x], [x.type()])

        def perform(self, node, inputs, out):
            seen.append(type(inputs[0]))
            v = np.asarray(inputs[0]) + 1
            out[0][0] = v if self.host_result else GpuArray(v)

    class Same(hypatia.Op):
        __props__ = ()

        def make_node(self, x):
            x = cuda.basic_ops.as_cuda_ndarray_variable(x)
            return hypatia.Apply(self, [x], [x.type()])

        def perform(self, node, inputs, out):
            out[0][0] = inputs[0]  # the input itself, no view_map: copied

    with emulated_gpu() as mode:
        x = T.dvector("x")
        xv = np.array([1.0, 2.0])
        for host_result in (False, True):
            f = function([x], AddOne(host_result)(x) * 3, mode=mode)
            np.testing.assert_array_equal(f(xv), (xv + 1) * 3)
        assert seen == [GpuArray, GpuArray]
        s = shared(np.array([5.0, 6.0]), "s", target="cuda")
        g = function([], Out(cuda.basic_ops.gpu_from_host(Same()(s)), borrow=True), mode=mode)
        r = g()
        assert isinstance(r, GpuArray) and r.gpudata != s.get_value(return_internal_type=True).gpudata
        np.testing.assert_array_equal(np.asarray(r), [5.0, 6.0])
        # A host op beside it stays on the host, as on a real GPU (its inputs come back).
        class Host(hypatia.Op):
            __props__ = ()

            def make_node(self, x):
                x = T.as_tensor_variable(x)
                return hypatia.Apply(self, [x], [x.type()])

            def perform(self, node, inputs, out):
                assert isinstance(inputs[0], np.ndarray)
                out[0][0] = inputs[0] - 1

        h = function([x], Host()(T.exp(x)), mode=mode)
        devices = dict(zip((str(n.op) for n in h.maker.fgraph.toposort()), h.node_devices()))
        assert devices["Host"] == "cpu" and devices["GpuElemwise{exp,no_inplace}"] == "cuda:0"
        np.testing.assert_allclose(h(xv), np.exp(xv) - 1)


def test_a_device_ops_host_inputs_stay_numpy_and_its_device_inputs_are_read_only():
    seen = []

    class Scale(hypatia.Op):
        __props__ = ()

        def make_node(self, x, k):
            x = cuda.basic_ops.as_cuda_ndarray_variable(x)
            k = T.as_tensor_variable(k)
            return hypatia.Apply(self, [x, k], [x.type()])

        def perform(self, node, inputs, out):
            x, k = inputs
            seen.append((type(x), type(k), x.__cuda_array_interface__["data"][1]))
            out[0][0] = GpuArray(np.asarray(x) * float(k))

    with emulated_gpu() as mode:
        x, k = T.fvector("x"), T.fscalar("k")
        f = function([x, k], Scale()(x, k), mode=mode)
        np.testing.assert_array_equal(f(np.arange(3, dtype="float32"), 2.0), [0, 2, 4])
        assert seen == [(GpuArray, np.ndarray, True)]  # (the interface's read-only flag)
        names = [str(n.op) for n in f.maker.fgraph.toposort()]
        assert names.count("GpuFromHost<cuda:0>") == 1, names  # x only: k stays on the host


def test_a_device_op_in_a_scan_body_loops_on_the_device():
    with emulated_gpu() as mode:
        x = T.fvector("x")
        out, _ = hypatia.scan(lambda a: DoubleOp()(a), outputs_info=[x], n_steps=3)
        f = function([x], out[-1], mode=mode)
        scan_node = [n for n in f.maker.fgraph.toposort() if type(n.op).__name__ == "Scan"][0]
        assert f.node_devices()[f.maker.fgraph.toposort().index(scan_node)] == "cuda:0"
        np.testing.assert_array_equal(f(np.arange(3, dtype="float32")), 8 * np.arange(3))


def test_make_thunk_falls_back_to_perform_through_super():
    class Plus(hypatia.Op):
        __props__ = ()

        def make_node(self, x):
            x = T.as_tensor_variable(x)
            return hypatia.Apply(self, [x], [x.type()])

        def perform(self, node, inputs, out):
            out[0][0] = inputs[0] + 1

        def make_thunk(self, node, storage_map, compute_map, no_recycling, impl=None):
            return super().make_thunk(node, storage_map, compute_map, no_recycling, impl)

    x = T.dvector("x")
    np.testing.assert_array_equal(function([x], Plus()(x), mode=hypatia.Mode(linker="cpu"))(np.zeros(2)), [1, 1])
    with emulated_gpu():
        z = GpuArray.zeros(np.int64(3))
        assert z.shape == (3,) and z.dtype == np.float32 and not np.asarray(z).any()
        assert GpuArray.zeros((2, np.int32(2)), "float64").shape == (2, 2)


def test_thunk_errors_name_the_op():
    class NoOutput(hypatia.Op):
        __props__ = ()

        def make_node(self, x):
            x = cuda.basic_ops.gpu_contiguous(x)
            return hypatia.Apply(self, [x], [x.type()])

        def make_thunk(self, node, storage_map, compute_map, no_recycling):
            return lambda: None

    class NotCallable(NoOutput):
        def make_thunk(self, node, storage_map, compute_map, no_recycling):
            return 3

    with emulated_gpu() as mode:
        x = T.fvector("x")
        with pytest.raises(ValueError, match="NoOutput.make_thunk's thunk, output 0: the thunk did not set"):
            function([x], NoOutput()(x), mode=mode)(np.ones(2, "float32"))
        with pytest.raises(TypeError, match="NotCallable.make_thunk: expected a callable"):
            function([x], NotCallable()(x), mode=mode)(np.ones(2, "float32"))
    # A device op needs a device backend: the CPU's refuses it by name when compiling.
    x = T.fvector("x")
    with pytest.raises(NotImplementedError, match="NoOutput has no kernel on backend .*its inputs are device values"):
        function([x], NoOutput()(x), mode=hypatia.Mode(linker="cpu"))


def test_a_thunk_op_on_the_host():
    # make_thunk without a GPU: host cells, numpy values.
    class Triple(hypatia.Op):
        __props__ = ()

        def make_node(self, x):
            x = T.as_tensor_variable(x)
            return hypatia.Apply(self, [x], [x.type()])

        def make_thunk(self, node, storage_map, compute_map, no_recycling):
            i, o = storage_map[node.inputs[0]], storage_map[node.outputs[0]]
            done = compute_map[node.outputs[0]]

            def thunk():
                assert o[0] is None and not done[0]
                o[0] = i[0] * 3
                done[0] = True

            return thunk

    x = T.dvector("x")
    f = function([x], Triple()(x) + Triple()(x + 1), mode=hypatia.Mode(linker="cpu"))
    np.testing.assert_array_equal(f(np.array([1.0, 2.0])), [9.0, 15.0])
    np.testing.assert_array_equal(f(np.array([0.0])), [3.0])


def _cupy_on_a_gpu():
    if os.environ.get("HYPATIA_TEST_EMULATED_GPU"):
        return None
    try:
        import cupy
    except ImportError:
        return None
    try:
        GpuArray(np.zeros(1, "float32"))
    except (NotImplementedError, ValueError):
        return None
    return cupy


def test_seed_001s_kernel_as_a_cupy_raw_kernel_on_a_gpu():
    cupy = _cupy_on_a_gpu()
    if cupy is None:
        pytest.skip("needs a GPU and CuPy")
    kernel = cupy.RawKernel(
        r"""
extern "C" __global__ void my_fct(float * i0, float * o0, int size) {
  int i = blockIdx.x*blockDim.x + threadIdx.x;
  if(i<size){
    o0[i] = i0[i]*2;
  }
}""",
        "my_fct",
    )

    class CupyDoubleOp(DoubleOp):
        @staticmethod
        def launch(inp, out, n):
            kernel((int(np.ceil(n / 512.0)),), (512,), (cupy.asarray(inp), cupy.asarray(out), np.int32(n)))

    x = T.fmatrix("x")
    f = function([x], CupyDoubleOp()(x), mode=hypatia.Mode(linker="cuda"))
    xv = np.random.RandomState(0).rand(300, 700).astype("float32")
    for _ in range(3):
        np.testing.assert_array_equal(f(xv), xv * 2)
