"""Hypatia on the GPU from Python (issue 13): seed 001 with a device and a host result, the
per-call cost of a one-op function, and the MLP training step of bench_cuda, each beside PyTorch
measured in the same run (when torch is importable). Timing as anchors.py: loops of calls,
wall-clock to a final synchronisation, median of 5 after a warm-up.

Run on the GPU machine (device_check.sh does, with the package from pack_python_for_device.sh):
    HYPATIA_FLAGS=device=cuda python3 bench/cuda/python_gpu.py
A dry run without a GPU (the emulated GPU of the tests; the times mean nothing):
    HYPATIA_BENCH_EMULATE=1 python3 bench/cuda/python_gpu.py
"""
import os

import numpy as np
from anchors import wall  # the same timing as the PyTorch and JAX anchors (this folder)

import hypatia
import hypatia.tensor as T
from hypatia import Out, function, shared
from hypatia.gpuarray import GpuArray
from hypatia.sandbox.cuda.basic_ops import gpu_from_host


MODE = None
if os.environ.get("HYPATIA_BENCH_EMULATE"):
    hypatia._core._install_emulated_gpu()
    MODE = hypatia.Mode(linker="emulated_gpu")


def sync(r):
    r.__cuda_array_interface__  # waits for the queued work (the export's contract)


def line(name, ms, extra=""):
    print(f"{name:<62} {ms:10.4f} ms  {extra}", flush=True)


def torch_or_none():
    try:
        import torch

        torch.backends.cuda.matmul.allow_tf32 = False
        return torch if torch.cuda.is_available() else None
    except ImportError:
        return None


def main():
    print("device", hypatia.config.device, "| cuda_graphs", hypatia.config.cuda_graphs)
    torch = torch_or_none()
    # Seed 001: exp over a shared 230,400-element float32 vector, 1000 calls.
    x = shared(np.random.RandomState(0).rand(230400).astype("float32"), "x")
    dev = function([], Out(gpu_from_host(T.exp(x)), borrow=True), mode=MODE)
    host = function([], T.exp(x), mode=MODE)
    r = dev()
    assert isinstance(r, GpuArray), type(r)
    assert not any(isinstance(n.op, T.Elemwise) for n in dev.maker.fgraph.toposort()), "exp ran on the cpu"

    def dev_loop():
        for _ in range(1000):
            r = dev()
        sync(r)

    def host_loop():
        for _ in range(1000):
            host()

    t_dev, t_host = wall(dev_loop), wall(host_loop)
    line("seed 001 from Python: exp 230400 x1000, device result", t_dev * 1e3, "(goal <= 5 ms)")
    line("seed 001 from Python: exp 230400 x1000, host result", t_host * 1e3)
    if torch:
        a = torch.from_dlpack(r)  # the GpuArray in place
        np.testing.assert_allclose(a.cpu().numpy(), np.asarray(r))
        o = torch.empty_like(a)

        def torch_dev():
            for _ in range(1000):
                torch.exp(a, out=o)
            torch.cuda.synchronize()

        line("seed 001 torch: exp 230400 x1000, device result", wall(torch_dev) * 1e3,
             f"(Hypatia {t_dev / wall(torch_dev):.2f}x)")

    # Per call: exp of 16 floats, device result, queued / each followed by a synchronisation.
    s = shared(np.linspace(0, 1, 16).astype("float32"), "s")
    one = function([], Out(gpu_from_host(T.exp(s)), borrow=True), mode=MODE)

    def queued():
        for _ in range(10000):
            r = one()
        sync(r)

    def each_synced():
        for _ in range(2000):
            sync(one())

    tq, ts = wall(queued) / 10000, wall(each_synced) / 2000
    line("per call from Python: exp of 16 floats, 10000 queued", tq * 1e3)
    line("per call from Python: exp of 16 floats + synchronize", ts * 1e3)
    if torch:
        st = torch.rand(16, device="cuda")

        def t_queued():
            for _ in range(10000):
                torch.exp(st)
            torch.cuda.synchronize()

        def t_synced():
            for _ in range(2000):
                torch.exp(st)
                torch.cuda.synchronize()

        line("per call torch: exp of 16 floats, 10000 queued", wall(t_queued) / 10,
             f"(Hypatia {tq / (wall(t_queued) / 10000):.2f}x)")
        line("per call torch: exp of 16 floats + synchronize", wall(t_synced) / 2)

    # The MLP step (784-500-500-10, batch 256 in a shared variable, labels passed, SGD 0.01).
    rng = np.random.RandomState(1)
    xb = shared(rng.rand(256, 784).astype("float32"), "xb")
    yv = T.lvector("y")
    labels = (np.arange(256) * 7 % 10).astype("int64")
    h, params = xb, []
    sizes = [784, 500, 500, 10]
    for i in range(3):
        w = shared((rng.randn(sizes[i], sizes[i + 1]) * 0.05).astype("float32"), f"W{i}")
        b = shared(np.zeros(sizes[i + 1], "float32"), f"b{i}")
        params += [w, b]
        a = T.dot(h, w) + b
        h = T.tanh(a) if i < 2 else T.nnet.softmax(a)
    cost = T.mean(T.nnet.categorical_crossentropy(h, yv))
    grads = hypatia.grad(cost, params)
    step = function([yv], Out(gpu_from_host(cost), borrow=True),
                    updates=[(p, p - np.float32(0.01) * g) for p, g in zip(params, grads)], mode=MODE)

    def steps():
        for _ in range(200):
            c = step(labels)
        sync(c)

    tm = wall(steps) / 200
    line("MLP 784-500-500-10 step b256 from Python (per step)", tm * 1e3,
         "(C++: bench_cuda's line; torch eager / jax.jit: anchors.py)")


if __name__ == "__main__":
    main()
