"""The LeNet-shaped step (conv, flatten, dense; both weights updated) whose dense update runs on a
per-call copy, against the same step compiled without in-place rewrites (the only way it ran
before 2026-12-07), in the same process. float32, batch 64, 8 filters 5x5 on 28x28, dense 4608x10."""
import time, numpy as np, hypatia as theano, hypatia.tensor as T
from hypatia.tensor.nnet import conv2d
rng = np.random.default_rng(0)
def step(mode):
    x = T.ftensor4("x")
    W0 = theano.shared((rng.normal(size=(8, 1, 5, 5)) * 0.1).astype("float32"))
    W1 = theano.shared((rng.normal(size=(8 * 24 * 24, 10)) * 0.01).astype("float32"))
    cost = T.exp(T.dot(T.tanh(conv2d(x, W0)).flatten(2), W1)).mean()
    g0, g1 = T.grad(cost, [W0, W1])
    f = theano.function([x], cost, updates=[(W0, W0 - np.float32(0.01) * g0), (W1, W1 - np.float32(0.01) * g1)], mode=mode)
    return f
xv = rng.normal(size=(64, 1, 28, 28)).astype("float32")
fs = {"per-call copy": step(None), "no in-place rewrites": step(theano.Mode(optimizer="fast_run").excluding("inplace"))}
names = [str(n.op) for n in fs["per-call copy"].maker.fgraph.toposort()]
assert any("Gemm{inplace}" in n for n in names), names
res = {k: [] for k in fs}
for rep in range(7):
    for k, f in fs.items():
        f(xv)
        t0 = time.perf_counter()
        for _ in range(20):
            f(xv)
        res[k].append((time.perf_counter() - t0) / 20 * 1e3)
base = np.median(res["no in-place rewrites"])
for k, v in res.items():
    print(f"{k:24s} median {np.median(v):.3f} ms  ratio {np.median(v) / base:.3f}")
names = [str(n.op) for n in fs["per-call copy"].maker.fgraph.toposort()]
g = next(i for i, n in enumerate(names) if "Gemm{inplace}" in n)
print("steps after the in-place Gemm:", names[g + 1:])
