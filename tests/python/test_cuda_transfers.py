"""The transfers' Python names (Theano's gpu_from_host, host_from_gpu, tensor.transfer) and the
CUDA backend from Python. Without a GPU, compiling for it is a clear error; with one, the values
match the CPU's and a gpu_from_host output stays on the device."""
import os
import subprocess
import sys

import numpy as np
import pytest

import hypatia
import hypatia.tensor as T
from hypatia import sandbox


def _fresh_interpreter(code, flags=None):
    """`code` run by a new interpreter (a process's GPU is fixed at its first use), with
    HYPATIA_FLAGS=flags (None: no flags)."""
    env = dict(os.environ)
    env.pop("HYPATIA_FLAGS", None)
    if flags:
        env["HYPATIA_FLAGS"] = flags
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)


def test_transfer_nodes_have_theanos_names():
    x = T.fvector("x")
    y = sandbox.cuda.basic_ops.gpu_from_host(T.exp(x))
    assert str(y.owner.op) == "GpuFromHost<cuda:0>"
    back = sandbox.cuda.basic_ops.host_from_gpu(y)
    assert str(back.owner.op) == "HostFromGpu"
    assert str(T.transfer(x, "cuda0").owner.op) == "GpuFromHost<cuda:0>"
    with pytest.raises(NotImplementedError, match="this process runs on cuda:0.*one GPU per process"):
        T.transfer(x, "cuda1")  # one GPU per process: another is refused by name, not run on this one
    assert str(T.transfer(y, "cpu").owner.op) == "HostFromGpu"
    with pytest.raises(ValueError, match="expected 'cpu', 'cuda', 'cudaN' or 'cuda:N'"):
        T.transfer(x, "tpu")
    # The gradient of a transfer is the transfer back.
    g = hypatia.grad(T.sum(back), x)
    assert g.type.dtype == "float32"


def test_device_cuda1_runs_the_program_on_the_second_gpu():
    # Theano's way to pick a GPU: device=cuda1 (or gpu1) in the flags. Everything the program puts on
    # a GPU is then on cuda:1; naming another GPU later is refused by name. In a fresh interpreter
    # (a process's GPU is fixed at its first use), on the emulated GPU (no second GPU needed).
    code = (
        "import numpy as np, hypatia\n"
        "import hypatia.tensor as T\n"
        "from hypatia import function, shared, sandbox, Out\n"
        "import hypatia.gpuarray\n"
        "hypatia._core._install_emulated_gpu(as_default=True)\n"
        "print(hypatia.config.device)\n"
        "w = shared(np.arange(6, dtype='float32'), target='cuda')\n"
        "x = T.fvector('x')\n"
        "f = function([x], Out(sandbox.cuda.basic_ops.gpu_from_host(T.exp(x) * w), borrow=True),"
        " updates=[(w, w + 1)])\n"
        "r = f(np.ones(6, dtype='float32'))\n"
        "print(type(r).__name__, r.device, r.__dlpack_device__())\n"
        "print(np.asarray(r).tolist())\n"
        "print(w.get_value(return_internal_type=True).device, w.get_value().tolist())\n"
        "print(T.transfer(x, 'cuda').owner.op, T.transfer(x, 'gpu1').owner.op)\n"
        "print(hypatia.gpuarray.GpuArray(np.zeros(2, dtype='float32')).device)\n"
        "try:\n"
        "    shared(np.zeros(2), target='cuda0')\n"
        "except NotImplementedError as e:\n"
        "    print('refused:', e)\n"
    )
    r = _fresh_interpreter(code, "device=cuda1")
    assert r.returncode == 0, r.stderr[-3000:]
    lines = r.stdout.strip().splitlines()
    assert lines[0] == "cuda1"
    assert lines[1] == "GpuArray cuda:1 (2, 1)"  # DLPack: (kDLCUDA, device 1)
    np.testing.assert_allclose(eval(lines[2]), np.e * np.arange(6), rtol=1e-6)
    assert lines[3] == "cuda:1 [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]"
    assert lines[4] == "GpuFromHost<cuda:1> GpuFromHost<cuda:1>"
    assert lines[5] == "cuda:1"
    assert lines[6].startswith("refused: device cuda:0: this process runs on cuda:1") and "one GPU per process" in lines[6]


def test_theanos_use_picks_the_gpu_or_says_why():
    # theano.sandbox.cuda.use('gpu1') / theano.gpuarray.use('cuda1'), in fresh interpreters (a
    # process's GPU is fixed at its first use). On the emulated GPU: functions compiled after it
    # run on cuda:1, and another GPU is refused after; without a GPU (CI): a warning and the CPU,
    # or with force=True the error.
    emulated = (
        "import numpy as np, warnings, hypatia\n"
        "import hypatia.tensor as T\n"
        "from hypatia import function, shared, sandbox\n"
        "hypatia._core._install_emulated_gpu(as_default=True)\n"
        "sandbox.cuda.use('gpu1', force=True, default_to_move_computation_to_gpu=True)\n"
        "print(hypatia.config.device)\n"
        "x = T.fvector('x')\n"
        "f = function([x], T.exp(x))\n"
        "print([str(n.op) for n in f.maker.fgraph.toposort() if 'Gpu' in str(n.op)][0])\n"
        "print(np.allclose(f(np.zeros(3, dtype='float32')), 1))\n"
        "try:\n"
        "    hypatia.gpuarray.use('cuda0')\n"
        "except NotImplementedError as e:\n"
        "    print('refused:', e)\n"
        "hypatia.gpuarray.use('cpu')\n"
        "print(hypatia.config.device)\n"
    )
    r = _fresh_interpreter(emulated)
    assert r.returncode == 0, r.stderr[-3000:]
    lines = r.stdout.strip().splitlines()
    assert lines[0] == "gpu1"
    assert lines[1] == "GpuFromHost<cuda:1>"
    assert lines[2] == "True"
    assert lines[3].startswith("refused: device cuda:0: this process runs on cuda:1")
    assert lines[4] == "cpu"
    with pytest.raises(TypeError, match="unexpected keyword arguments"):
        hypatia.gpuarray.use("cuda", preallocat=0.5)
    no_gpu = (
        "import warnings, hypatia\n"
        "from hypatia import sandbox\n"
        "with warnings.catch_warnings(record=True) as w:\n"
        "    warnings.simplefilter('always')\n"
        "    sandbox.cuda.use('gpu0')\n"
        "print(hypatia.config.device, '|', w[0].message if w else 'no warning')\n"
        "try:\n"
        "    sandbox.cuda.use('gpu0', force=True)\n"
        "    print('used')\n"
        "except NotImplementedError as e:\n"
        "    print('error:', e)\n"
    )
    r = _fresh_interpreter(no_gpu)
    assert r.returncode == 0, r.stderr[-3000:]
    lines = r.stdout.strip().splitlines()
    if lines[-1] == "used":  # a GPU: nothing to warn of
        assert lines[0].startswith("gpu0 | no warning")
    else:
        assert lines[0].startswith("cpu | use('gpu0'): ") and "cannot run here" in lines[0], lines
        assert lines[1].startswith("error: ") and "cannot run here" in lines[1], lines


def test_seed_001_runs_with_device_cuda_or_says_why():
    # Seed 001's GPU-result variant under device=cuda, in a fresh interpreter.
    code = (
        "import numpy as np, hypatia\n"
        "import hypatia.tensor as T\n"
        "from hypatia import function, shared, sandbox, Out\n"
        "x = shared(np.arange(6, dtype='float32'))\n"
        "f = function([], Out(sandbox.cuda.basic_ops.gpu_from_host(T.exp(x)), borrow=True))\n"
        "print(np.asarray(f()).tolist())\n"
        "print(x.get_value().tolist())\n"
        "print('Used the cpu' if any(isinstance(n.op, T.Elemwise) for n in f.maker.fgraph.toposort())"
        " else 'Used the gpu')\n"
        "print(type(f()).__name__, f.maker.fgraph.toposort())\n"
    )
    r = _fresh_interpreter(code, "device=cuda")
    if r.returncode == 0:  # a GPU: the result stays there (a GpuArray), exp ran there
        lines = r.stdout.strip().splitlines()
        np.testing.assert_allclose(eval(lines[0]), np.exp(np.arange(6, dtype="float32")), rtol=1e-6)
        assert eval(lines[1]) == list(range(6))
        assert lines[2] == "Used the gpu"
        assert lines[3].startswith("GpuArray [GpuElemwise{exp,no_inplace}(") and "HostFromGpu" not in lines[3]
    else:
        assert "CUDA backend cannot run here" in r.stderr and "Segmentation" not in r.stderr, r.stderr[-2000:]


def test_one_function_on_the_cuda_backend_through_its_mode():
    x = T.fvector("x")
    mode = hypatia.Mode(linker="cuda")
    try:
        f = hypatia.function([x], T.exp(x), mode=mode)
    except NotImplementedError as e:  # no GPU here
        assert "the CUDA backend cannot run here" in str(e)
        return
    v = np.linspace(-1, 1, 7).astype("float32")
    np.testing.assert_allclose(f(v), np.exp(v), rtol=1e-6)
    assert any("GpuFromHost" in str(n.op) for n in f.maker.fgraph.toposort())


def test_transfer_ops_pickle_and_have_their_classes():
    import pickle

    x = T.fvector("x")
    y = sandbox.cuda.basic_ops.gpu_from_host(x)
    op = y.owner.op
    assert isinstance(op, sandbox.cuda.basic_ops.GpuFromHost) and op.device == "cuda:0"
    back = pickle.loads(pickle.dumps(op))
    assert back == op and str(back) == "GpuFromHost<cuda:0>"
    h = sandbox.cuda.basic_ops.host_from_gpu(y).owner.op
    assert isinstance(h, sandbox.cuda.basic_ops.HostFromGpu) and pickle.loads(pickle.dumps(h)) == h
    # A graph holding transfers pickles whole.
    g = pickle.loads(pickle.dumps(sandbox.cuda.basic_ops.host_from_gpu(T.exp(y))))
    assert str(g.owner.op) == "HostFromGpu" and str(g.owner.inputs[0].owner.inputs[0].owner.op) == "GpuFromHost<cuda:0>"


def test_an_index_out_of_range_found_on_the_device_fails_the_call_and_moves_no_parameter():
    # On the emulated GPU the label gather defers its IndexError to the call's device check, as
    # the CUDA backend's kernels do: the call fails before the update, with the CPU's words and the
    # user's line, and the next call runs.
    from util import emulated_gpu

    with emulated_gpu() as mode:
        x = T.dmatrix("x")
        y = T.lvector("y")
        w = hypatia.shared(np.arange(6.0).reshape(2, 3) / 10, name="W")
        logp = T.nnet.logsoftmax(T.dot(x, w))
        cost = -T.mean(logp[T.arange(y.shape[0]), y])
        step = hypatia.function([x, y], cost, updates=[(w, w - 0.1 * hypatia.grad(cost, w))], mode=mode)
        xv = np.array([[1.0, 2.0], [-1.0, 0.5]])
        before = w.get_value()
        with pytest.raises(IndexError, match="index 3 is out of bounds for axis 1 with size 3") as e:
            step(xv, np.array([1, 3]))
        assert "test_cuda_transfers.py" in str(e.value)
        np.testing.assert_array_equal(w.get_value(), before)
        step(xv, np.array([2, -3]))
        assert not np.array_equal(w.get_value(), before)


def test_an_rnn_scan_and_its_gradient_loop_on_the_device_and_move_nothing_per_step():
    # Theano's GPU scan: the body runs on the device step after step, the states and traces stay
    # there; a call moves its arguments and results, whatever the number of steps. The Scan node
    # is a Scan all the same (as Theano's was), not a Gpu view.
    from util import emulated_gpu

    with emulated_gpu() as mode:
        rng = np.random.default_rng(7)
        W = hypatia.shared(rng.standard_normal((4, 4)) * 0.3, name="W")
        X, h0 = T.dmatrix("X"), T.dvector("h0")
        hs, _ = hypatia.scan(lambda x, h: T.tanh(T.dot(W, h) + x), sequences=X, outputs_info=h0)
        cost = T.sum(hs[-1] ** 2)
        gW, gh0 = hypatia.grad(cost, [W, h0])
        f = hypatia.function([X, h0], [cost, gW, gh0], mode=mode)
        ref = hypatia.function([X, h0], [cost, gW, gh0], mode="FAST_RUN")
        assert any(isinstance(n.op, hypatia._core.Scan) for n in f.maker.fgraph.toposort())
        assert any(isinstance(n.op, hypatia._core.ScanGrad) for n in f.maker.fgraph.toposort())
        moved = []
        for steps in (2, 20):
            xv, hv = rng.standard_normal((steps, 4)), rng.standard_normal(4)
            before = hypatia._core._emulated_gpu_copies()
            got = f(xv, hv)
            after = hypatia._core._emulated_gpu_copies()
            moved.append((after[0] - before[0], after[1] - before[1]))
            for a, b in zip(got, ref(xv, hv)):
                np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
        assert moved[0] == moved[1], moved


def test_the_users_transfer_of_a_device_value_that_a_node_overwrites_stays_a_copy():
    # (2 * gpu_from_host(e)) * e with e on the device: the in-place pass, which runs before
    # placement, let the product overwrite the transfer's result; removing the transfer would make
    # it overwrite e, which it also reads (the call failed to compile). The transfer stays there,
    # a copy on the device. The same through a Python op whose gradient reads its device input.
    from hypatia.sandbox.cuda.basic_ops import as_cuda_ndarray_variable, gpu_contiguous, gpu_from_host
    from util import emulated_gpu

    class HostSquare(hypatia.Op):
        __props__ = ()

        def make_node(self, a):
            a = gpu_contiguous(as_cuda_ndarray_variable(a))
            return hypatia.Apply(self, [a], [a.type()])

        def perform(self, node, inputs, out):
            out[0][0] = np.asarray(inputs[0]) ** 2

        def grad(self, inputs, g):
            return [2 * inputs[0] * g[0]]

    with emulated_gpu() as mode:
        a = T.fmatrix("a")
        e = T.exp(a)
        av = np.array([[0.0, 1.0], [-1.0, 0.5]], dtype="float32")
        f = hypatia.function([a], (2 * gpu_from_host(e)) * e, mode=mode)
        np.testing.assert_allclose(np.asarray(f(av)), 2 * np.exp(av) ** 2, rtol=1e-6)
        g = hypatia.function([a], T.grad(HostSquare()(e).sum(), a), mode=mode)
        np.testing.assert_allclose(np.asarray(g(av)), 2 * np.exp(av) ** 2, rtol=1e-6)
        # The other side: a node overwrites the transfer's input, which the transfer's readers read.
        ev, zeroed = np.exp(av), np.exp(av)
        zeroed[0] = 0
        h = hypatia.function([a], [gpu_from_host(e), T.set_subtensor(e[0], 0), (gpu_from_host(e).T + 1) * e,
                                   T.dot(gpu_from_host(e), T.set_subtensor(e[0], 0))], mode=mode)
        for got, want in zip(h(av), [ev, zeroed, (ev.T + 1) * ev, ev @ zeroed]):
            np.testing.assert_allclose(np.asarray(got), want, rtol=1e-6)
