"""What provenance costs: building and compiling graphs with the user-line hook on (the default:
every node records the file:line that built it, and rewrites pass those lines on to the nodes they
make) and off (hypatia._core.remove_trace_hook()). The rewrite name each compiled node records
(made_by) is one string per new node and is on in both. Prints the median of interleaved rounds
and the ratio on / off for each program.

    .venv/bin/python bench/python/bench_provenance.py [rounds]
"""
import statistics
import sys
import time

import numpy as np

import hypatia
import hypatia.tensor as T
from hypatia import _core


def mlp_step():
    rng = np.random.default_rng(0)
    x, y = T.fmatrix("x"), T.ivector("y")
    params = []
    h = x
    sizes = [784, 256, 256, 128, 10]
    for i, (a, b) in enumerate(zip(sizes[:-1], sizes[1:])):
        W = hypatia.shared(rng.standard_normal((a, b)).astype("float32") * 0.01, f"W{i}")
        c = hypatia.shared(np.zeros(b, "float32"), f"b{i}")
        params += [W, c]
        h = T.dot(h, W) + c
        h = T.nnet.relu(h) if i < len(sizes) - 2 else T.nnet.softmax(h)
    loss = T.nnet.categorical_crossentropy(h, y).mean() + 1e-4 * sum((p ** 2).sum() for p in params[::2])
    grads = T.grad(loss, params)
    return [x, y], loss, [(p, p - 0.01 * g) for p, g in zip(params, grads)]


def rnn_step():
    rng = np.random.default_rng(1)
    xs = T.tensor3("xs")
    Wx = hypatia.shared(rng.standard_normal((16, 32)) * 0.1, "Wx")
    Wh = hypatia.shared(rng.standard_normal((32, 32)) * 0.1, "Wh")
    h0 = T.zeros((xs.shape[1], 32))
    hs, _ = hypatia.scan(lambda x, h: T.tanh(T.dot(x, Wx) + T.dot(h, Wh)), sequences=xs, outputs_info=h0)
    loss = (hs[-1] ** 2).sum()
    grads = T.grad(loss, [Wx, Wh])
    return [xs], loss, [(Wx, Wx - 0.01 * grads[0]), (Wh, Wh - 0.01 * grads[1])]


def elementwise_chain():
    x = T.dmatrix("x")
    y = x
    for i in range(60):
        y = T.tanh(y * (1.0 + i / 100)) + T.exp(-abs(y)) * 0.5 - T.log1p(y ** 2)
    return [x], y.sum(), []


PROGRAMS = {"MLP training step (4 layers)": mlp_step, "RNN scan + gradient": rnn_step,
            "elementwise chain (300 ops)": elementwise_chain}


def once(make, hook):
    if hook:
        _core.install_trace_hook(hypatia.__path__[0] + "/")
    else:
        _core.remove_trace_hook()
    t0 = time.perf_counter()
    ins, out, updates = make()
    t1 = time.perf_counter()
    hypatia.function(ins, out, updates=updates)
    t2 = time.perf_counter()
    return t1 - t0, t2 - t1


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 15
    print(f"{'program':32s} {'build on':>10s} {'off':>10s} {'ratio':>6s}   {'compile on':>10s} {'off':>10s} {'ratio':>6s}")
    for name, make in PROGRAMS.items():
        once(make, True)
        once(make, False)  # warm both
        res = {True: ([], []), False: ([], [])}
        for _ in range(rounds):
            for hook in (True, False):
                b, c = once(make, hook)
                res[hook][0].append(b)
                res[hook][1].append(c)
        bo, co = statistics.median(res[True][0]), statistics.median(res[True][1])
        bf, cf = statistics.median(res[False][0]), statistics.median(res[False][1])
        print(f"{name:32s} {bo * 1e3:8.2f}ms {bf * 1e3:8.2f}ms {bo / bf:6.3f}   {co * 1e3:8.2f}ms {cf * 1e3:8.2f}ms "
              f"{co / cf:6.3f}")
    _core.install_trace_hook(hypatia.__path__[0] + "/")


if __name__ == "__main__":
    main()
