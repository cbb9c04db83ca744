"""Anchor timings for issue 13's benchmarks, measured with PyTorch and JAX on the device machine.

Groundwork for the CUDA backend (not yet built): these are the numbers Hypatia's GPU path will be
compared with, run the same way the issue asks (float32 throughout; TF32 off unless a line says
so). Each result is the median of several timed repetitions after warm-up; a loop of calls is
timed wall-clock and ended by a synchronisation, so launch and dispatch costs count, as they do
for a user's training loop.

Run on the device machine: python3 bench/cuda/anchors.py
"""
import statistics
import sys
import time

import numpy as np


def wall(fn, reps=5):
    """Median wall-clock seconds of fn() over reps runs (after one warm-up run)."""
    fn()
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts)


def line(name, ms, extra=""):
    print(f"{name:<58} {ms:10.3f} ms  {extra}", flush=True)


def torch_part():
    import torch
    import torch.nn.functional as F

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cudnn.benchmark = True
    dev = torch.device("cuda")
    sync = torch.cuda.synchronize
    print(f"torch {torch.__version__}, cuDNN {torch.backends.cudnn.version()}, {torch.cuda.get_device_name()}")
    rng = np.random.default_rng(0)

    # seed 000: y = m x + b, 1000x1000, 500 iterations
    m, x, b = (rng.standard_normal((1000, 1000)).astype("float32") for _ in range(3))
    tm, tx, tb = (torch.from_numpy(a).to(dev) for a in (m, x, b))
    ty = torch.empty_like(tb)

    def shared_all():
        for _ in range(500):
            torch.addmm(tb, tm, tx, out=ty)
        sync()

    def host_in_out():
        for _ in range(500):
            y = torch.addmm(torch.from_numpy(b).to(dev), torch.from_numpy(m).to(dev), torch.from_numpy(x).to(dev))
            y.cpu()

    def x_in_y_out():
        for _ in range(500):
            torch.addmm(tb, tm, torch.from_numpy(x).to(dev)).cpu()

    def y_out():
        for _ in range(500):
            torch.addmm(tb, tm, tx).cpu()

    line("seed 000 torch: m,x,b in, y out (4 transfers) x500", wall(host_in_out, 3) * 1e3)
    line("seed 000 torch: x in, y out (2 transfers) x500", wall(x_in_y_out, 3) * 1e3)
    line("seed 000 torch: y out (1 transfer) x500", wall(y_out, 3) * 1e3)
    line("seed 000 torch: all on device, addmm(out=y) x500", wall(shared_all) * 1e3)

    # seed 001: exp of 230,400 float32, 1000 calls
    a = torch.rand(230400, device=dev)
    o = torch.empty_like(a)
    host = torch.empty(230400).numpy()

    def exp_dev():
        for _ in range(1000):
            torch.exp(a, out=o)
        sync()

    def exp_host():
        for _ in range(1000):
            torch.exp(a, out=o)
            host[:] = o.cpu().numpy()

    def copy_only():
        for _ in range(1000):
            host[:] = o.cpu().numpy()

    line("seed 001 torch: exp 230400 x1000, device result", wall(exp_dev) * 1e3)
    te, tc = wall(exp_host), wall(copy_only)
    line("seed 001 torch: exp x1000, host result", te * 1e3, f"bare copies {tc * 1e3:.2f} ms ({te / tc:.2f}x)")

    # per-call overhead of a one-op function (small input)
    s = torch.rand(16, device=dev)

    def one_op():
        for _ in range(10000):
            torch.exp(s)
        sync()

    def one_op_sync():
        for _ in range(2000):
            torch.exp(s)
            sync()

    line("per call torch: exp of 16 floats, 10000 queued ", wall(one_op) * 1e3 / 10000, "(per call)")
    line("per call torch: exp of 16 floats + synchronize ", wall(one_op_sync) * 1e3 / 2000, "(per call)")

    # fused six-op chain over 64M float32: out = -log(exp(a*b)*c + 1) (eager: 6 kernels)
    n = 64 << 20
    a6, b6, c6 = (torch.rand(n, device=dev) * 2 - 1 for _ in range(3))

    def chain():
        for _ in range(10):
            torch.neg(torch.log(torch.exp(a6 * b6) * c6 + 1))
        sync()

    def copy():
        for _ in range(10):
            o6.copy_(a6)
        sync()

    o6 = torch.empty_like(a6)
    tch, tcp = wall(chain) / 10, wall(copy) / 10
    line("six-op chain 64M float32, torch eager (per call)", tch * 1e3,
         f"{4 * n * 4 / tch / 1e9:.0f} GB/s effective; copy_ {tcp * 1e3:.3f} ms = {2 * n * 4 / tcp / 1e9:.0f} GB/s")

    # MLP training step 784-500-500-10, batch 256, tanh, softmax cross-entropy, SGD
    def mlp_params():
        sizes = [(784, 500), (500, 500), (500, 10)]
        ps = []
        for i, o_ in sizes:
            ps.append(torch.tensor((rng.standard_normal((i, o_)) * np.sqrt(1 / i)).astype("float32"), device=dev,
                                   requires_grad=True))
            ps.append(torch.zeros(o_, device=dev, requires_grad=True))
        return ps

    ps = mlp_params()
    xb = torch.rand(256, 784, device=dev)
    yb = torch.randint(0, 10, (256,), device=dev)

    def step():
        h = torch.tanh(xb @ ps[0] + ps[1])
        h = torch.tanh(h @ ps[2] + ps[3])
        loss = F.cross_entropy(h @ ps[4] + ps[5], yb)
        gs = torch.autograd.grad(loss, ps)
        with torch.no_grad():
            torch._foreach_add_(ps, gs, alpha=-0.01)
        return loss

    def steps():
        for _ in range(200):
            step()
        sync()

    line("MLP step 784-500-500-10 b256 torch eager (per step)", wall(steps) / 200 * 1e3)

    # CUDA graph of the same step (what a compiled function could replay)
    static_loss = None
    sgraph = torch.cuda.Stream()
    sgraph.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(sgraph):
        for _ in range(3):
            step()
    torch.cuda.current_stream().wait_stream(sgraph)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        static_loss = step()

    def graph_steps():
        for _ in range(200):
            g.replay()
        sync()

    line("MLP step torch CUDA graph replay (per step)", wall(graph_steps) / 200 * 1e3)
    del static_loss

    # LeNet forward+backward (batch 128) and the ResNet 3x3 layer (32x64x56x56, 64 filters)
    digits = torch.rand(128, 1, 28, 28, device=dev)
    labels = torch.randint(0, 10, (128,), device=dev)

    def w(*s):
        return torch.tensor((rng.standard_normal(s) * np.sqrt(1.0 / np.prod(s[1:]))).astype("float32"), device=dev,
                            requires_grad=True)

    lp = [w(6, 1, 5, 5), torch.zeros(6, device=dev, requires_grad=True), w(16, 6, 5, 5),
          torch.zeros(16, device=dev, requires_grad=True), w(120, 400), torch.zeros(120, device=dev, requires_grad=True),
          w(84, 120), torch.zeros(84, device=dev, requires_grad=True), w(10, 84),
          torch.zeros(10, device=dev, requires_grad=True)]

    def lenet_loss():
        h = F.max_pool2d(torch.tanh(F.conv2d(digits, lp[0], lp[1], padding=2)), 2)
        h = F.max_pool2d(torch.tanh(F.conv2d(h, lp[2], lp[3])), 2).flatten(1)
        h = torch.tanh(F.linear(h, lp[4], lp[5]))
        h = torch.tanh(F.linear(h, lp[6], lp[7]))
        return F.cross_entropy(F.linear(h, lp[8], lp[9]), labels)

    def lenet_fb():
        for _ in range(100):
            torch.autograd.grad(lenet_loss(), lp)
        sync()

    def lenet_f():
        with torch.no_grad():
            for _ in range(100):
                lenet_loss()
        sync()

    line("LeNet b128 forward torch (per call)", wall(lenet_f) / 100 * 1e3)
    line("LeNet b128 forward+backward torch (per call)", wall(lenet_fb) / 100 * 1e3)
    act = torch.rand(32, 64, 56, 56, device=dev, requires_grad=True)
    kern = w(64, 64, 3, 3)

    def res_f():
        with torch.no_grad():
            for _ in range(50):
                F.conv2d(act, kern, padding=1)
        sync()

    def res_fb():
        for _ in range(50):
            out = F.conv2d(act, kern, padding=1)
            torch.autograd.grad(out, [act, kern], out)
        sync()

    tf, tfb = wall(res_f) / 50, wall(res_fb) / 50
    flops = 2 * 32 * 64 * 56 * 56 * 64 * 9
    line("ResNet 3x3 layer forward torch (per call)", tf * 1e3, f"{flops / tf / 1e12:.1f} TFLOP/s")
    line("ResNet 3x3 layer forward+backward torch (per call)", tfb * 1e3, f"{3 * flops / tfb / 1e12:.1f} TFLOP/s")
    # torch lets cuDNN use TF32 for float32 convolutions by default; Hypatia computes them in float32
    # (as the CPU does): the same layers with TF32 off, for the like-for-like comparison.
    torch.backends.cudnn.allow_tf32 = False
    line("LeNet b128 forward+backward torch, no TF32 (per call)", wall(lenet_fb) / 100 * 1e3)
    tf, tfb = wall(res_f) / 50, wall(res_fb) / 50
    line("ResNet 3x3 layer forward torch, no TF32 (per call)", tf * 1e3, f"{flops / tf / 1e12:.1f} TFLOP/s")
    line("ResNet 3x3 layer forward+backward torch, no TF32 (per call)", tfb * 1e3,
         f"{3 * flops / tfb / 1e12:.1f} TFLOP/s")
    torch.backends.cudnn.allow_tf32 = True


def jax_part():
    import jax
    import jax.numpy as jnp
    from jax import lax

    jax.config.update("jax_default_matmul_precision", "highest")  # float32, not TF32
    print(f"jax {jax.__version__}, devices {jax.devices()}")
    rng = np.random.default_rng(0)
    block = jax.block_until_ready

    m, x, b = (jnp.asarray(rng.standard_normal((1000, 1000)).astype("float32")) for _ in range(3))
    mxb = jax.jit(lambda m, x, b: m @ x + b)

    def seed000():
        for _ in range(500):
            y = mxb(m, x, b)
        block(y)

    line("seed 000 jax.jit: all on device x500", wall(seed000) * 1e3)

    a = jnp.asarray(rng.random(230400, dtype=np.float32))
    fexp = jax.jit(jnp.exp)

    def exp_dev():
        for _ in range(1000):
            y = fexp(a)
        block(y)

    def exp_host():
        for _ in range(1000):
            np.asarray(fexp(a))

    line("seed 001 jax.jit: exp 230400 x1000, device result", wall(exp_dev) * 1e3)
    line("seed 001 jax.jit: exp x1000, host result", wall(exp_host) * 1e3)

    s = jnp.asarray(rng.random(16, dtype=np.float32))

    def one_op():
        for _ in range(10000):
            y = fexp(s)
        block(y)

    def one_op_sync():
        for _ in range(2000):
            block(fexp(s))

    line("per call jax.jit: exp of 16 floats, 10000 queued ", wall(one_op) * 1e3 / 10000, "(per call)")
    line("per call jax.jit: exp of 16 floats + block ", wall(one_op_sync) * 1e3 / 2000, "(per call)")

    n = 64 << 20
    a6, b6, c6 = (jnp.asarray(rng.random(n, dtype=np.float32) * 2 - 1) for _ in range(3))
    chain = jax.jit(lambda a, b, c: -jnp.log(jnp.exp(a * b) * c + 1))

    def chains():
        for _ in range(10):
            y = chain(a6, b6, c6)
        block(y)

    tch = wall(chains) / 10
    line("six-op chain 64M float32, jax.jit fused (per call)", tch * 1e3, f"{4 * n * 4 / tch / 1e9:.0f} GB/s effective")

    def mlp_init():
        ps = []
        for i, o in [(784, 500), (500, 500), (500, 10)]:
            ps += [jnp.asarray(rng.standard_normal((i, o)).astype("float32") * np.sqrt(1 / i)), jnp.zeros(o)]
        return ps

    def loss(ps, xb, yb):
        h = jnp.tanh(xb @ ps[0] + ps[1])
        h = jnp.tanh(h @ ps[2] + ps[3])
        return -jnp.mean(jax.nn.log_softmax(h @ ps[4] + ps[5])[jnp.arange(xb.shape[0]), yb])

    def sgd_step(ps, xb, yb):
        l, gs = jax.value_and_grad(loss)(ps, xb, yb)
        return [p - 0.01 * g for p, g in zip(ps, gs)], l

    step, step_donate = jax.jit(sgd_step), jax.jit(sgd_step, donate_argnums=0)
    xb = jnp.asarray(rng.random((256, 784), dtype=np.float32))
    yb = jnp.asarray(rng.integers(0, 10, 256))
    for name, fn in (("jax.jit", step), ("jax.jit donated params", step_donate)):
        ps = mlp_init()

        def steps():
            nonlocal ps
            for _ in range(200):
                ps, l = fn(ps, xb, yb)
            block(l)

        line(f"MLP step 784-500-500-10 b256 {name} (per step)", wall(steps) / 200 * 1e3)

    dn = ("NCHW", "OIHW", "NCHW")
    act = jnp.asarray(rng.random((32, 64, 56, 56), dtype=np.float32))
    kern = jnp.asarray(rng.standard_normal((64, 64, 3, 3)).astype("float32") * 0.05)
    conv = jax.jit(lambda x, w: lax.conv_general_dilated(x, w, (1, 1), ((1, 1), (1, 1)), dimension_numbers=dn))
    convfb = jax.jit(lambda x, w: jax.vjp(lambda x, w: lax.conv_general_dilated(
        x, w, (1, 1), ((1, 1), (1, 1)), dimension_numbers=dn), x, w)[1](act)[0:2])

    def res_f():
        for _ in range(50):
            y = conv(act, kern)
        block(y)

    def res_fb():
        for _ in range(50):
            y = convfb(act, kern)
        block(y)

    line("ResNet 3x3 layer forward jax.jit (per call)", wall(res_f) / 50 * 1e3)
    line("ResNet 3x3 layer forward+backward jax.jit (per call)", wall(res_fb) / 50 * 1e3)


if __name__ == "__main__":
    which = sys.argv[1:] or ["torch", "jax"]
    if "torch" in which:
        torch_part()
    if "jax" in which:
        jax_part()
