"""scan against the same loops elsewhere, in one run: numpy (a Python loop; BPTT written by hand),
and PyTensor's scan and JAX's lax.scan when they are installed (make bench-compare's environment).

Cases (float32 unless said):
- trivial: x_t = x_{t-1} + 1 on a float64 scalar, 10^6 steps (10^5 for PyTensor and numpy): time
  per step;
- rnn: seed 002's recurrence as an RNN, h_t = tanh(h_{t-1} W + x_t U), hidden 256, batch 32,
  100 steps: forward, and forward + BPTT (gradients of sum(h_T) w.r.t. W and U);
- lstm: input 128, hidden 256, batch 32, 100 steps: forward + backward (gradients of the four
  gates' weights).
Each time is the minimum over repeats; ratio = the other / Hypatia (above 1: Hypatia faster).

Usage: bench_scan.py [--quick]
"""
import argparse
import os
import sys
import tempfile
import timeit

import numpy as np


def best(fn, budget=1.0, repeats=5):
    timer = timeit.Timer(fn)
    fn()
    number = max(1, int(budget / repeats / max(timer.timeit(1), 1e-7)))
    return min(timer.repeat(repeats, number)) / number


def try_import(name):
    try:
        return __import__(name)
    except Exception:  # noqa: BLE001  (absent or broken: the column stays empty)
        return None


H, B, STEPS, IN_LSTM = 256, 32, 100, 128


def rnn_data(seed=0):
    r = np.random.RandomState(seed)
    X = r.randn(STEPS, B, H).astype("float32")
    h0 = np.zeros((B, H), "float32")
    W = (r.randn(H, H) * 0.05).astype("float32")
    U = (r.randn(H, H) * 0.05).astype("float32")
    return X, h0, W, U


def lstm_data(seed=1):
    r = np.random.RandomState(seed)
    X = r.randn(STEPS, B, IN_LSTM).astype("float32")
    h0 = np.zeros((B, H), "float32")
    c0 = np.zeros((B, H), "float32")
    Wx = (r.randn(IN_LSTM, 4 * H) * 0.05).astype("float32")
    Wh = (r.randn(H, 4 * H) * 0.05).astype("float32")
    return X, h0, c0, Wx, Wh


# ---- Theano's API (Hypatia, PyTensor)
def theano_cases(theano, T):
    x0 = T.dscalar("x0")
    steps = T.lscalar("steps")
    out, _ = theano.scan(lambda x: x + 1, outputs_info=x0, n_steps=steps)
    trivial = theano.function([x0, steps], out[-1])

    X, h0, W, U = rnn_data()
    sW, sU = theano.shared(W), theano.shared(U)
    Xs, hs0 = T.tensor3("X", dtype="float32"), T.matrix("h0", dtype="float32")
    hs, _ = theano.scan(lambda x, h: T.tanh(T.dot(h, sW) + T.dot(x, sU)), sequences=Xs, outputs_info=hs0)
    cost = hs[-1].sum()
    rnn_f = theano.function([Xs, hs0], cost)
    rnn_b = theano.function([Xs, hs0], [cost] + T.grad(cost, [sW, sU]))

    LX, lh0, lc0, Wx, Wh = lstm_data()
    sWx, sWh = theano.shared(Wx), theano.shared(Wh)
    LXs = T.tensor3("LX", dtype="float32")
    lh, lc = T.matrix("lh0", dtype="float32"), T.matrix("lc0", dtype="float32")

    sigmoid = T.nnet.sigmoid if hasattr(T, "nnet") else T.sigmoid  # PyTensor moved it

    def step(x, h, c):
        z = T.dot(x, sWx) + T.dot(h, sWh)
        i, f = sigmoid(z[:, :H]), sigmoid(z[:, H:2 * H])
        o, g = sigmoid(z[:, 2 * H:3 * H]), T.tanh(z[:, 3 * H:])
        c_new = f * c + i * g
        return o * T.tanh(c_new), c_new

    (hh, cc), _ = theano.scan(step, sequences=LXs, outputs_info=[lh, lc])
    lcost = hh[-1].sum()
    lstm_b = theano.function([LXs, lh, lc], [lcost] + T.grad(lcost, [sWx, sWh]))
    return {
        "trivial": lambda n: (lambda: trivial(0.0, n)),
        "rnn fwd": lambda: rnn_f(X, h0),
        "rnn fwd+bptt": lambda: rnn_b(X, h0),
        "lstm fwd+bwd": lambda: lstm_b(LX, lh0, lc0),
        "check": (float(rnn_f(X, h0)), [np.asarray(g) for g in rnn_b(X, h0)[1:]]),
    }


# ---- numpy
def numpy_cases():
    X, h0, W, U = rnn_data()

    def trivial(n):
        def run():
            x = 0.0
            for _ in range(n):
                x = x + 1
            return x
        return run

    def fwd():
        h = h0
        for t in range(STEPS):
            h = np.tanh(h @ W + X[t] @ U)
        return h.sum()

    def bptt():
        hs = [h0]
        for t in range(STEPS):
            hs.append(np.tanh(hs[-1] @ W + X[t] @ U))
        dW, dU = np.zeros_like(W), np.zeros_like(U)
        dh = np.ones_like(h0)
        for t in range(STEPS - 1, -1, -1):
            dz = dh * (1 - hs[t + 1] ** 2)
            dW += hs[t].T @ dz
            dU += X[t].T @ dz
            dh = dz @ W.T
        return hs[-1].sum(), dW, dU

    return {"trivial": trivial, "rnn fwd": fwd, "rnn fwd+bptt": bptt, "check": (float(fwd()), bptt()[1:])}


# ---- JAX
def jax_cases(jax):
    import jax.numpy as jnp

    @jax.jit
    def trivial(x0):
        return jax.lax.scan(lambda x, _: (x + 1.0, None), x0, None, length=1_000_000)[0]

    X, h0, W, U = (jnp.asarray(a) for a in rnn_data())

    def rnn(W, U, X, h0):
        h, _ = jax.lax.scan(lambda h, x: (jnp.tanh(h @ W + x @ U), None), h0, X)
        return h.sum()

    rnn_f = jax.jit(rnn)
    rnn_b = jax.jit(jax.value_and_grad(rnn, argnums=(0, 1)))
    LX, lh0, lc0, Wx, Wh = (jnp.asarray(a) for a in lstm_data())

    def lstm(Wx, Wh, X, h0, c0):
        def step(carry, x):
            h, c = carry
            z = x @ Wx + h @ Wh
            i, f = jax.nn.sigmoid(z[:, :H]), jax.nn.sigmoid(z[:, H:2 * H])
            o, g = jax.nn.sigmoid(z[:, 2 * H:3 * H]), jnp.tanh(z[:, 3 * H:])
            c = f * c + i * g
            return (o * jnp.tanh(c), c), None

        (h, _), _ = jax.lax.scan(step, (h0, c0), X)
        return h.sum()

    lstm_b = jax.jit(jax.value_and_grad(lstm, argnums=(0, 1)))
    x0 = jnp.float32(0.0)
    return {
        "trivial": lambda n: (lambda: trivial(x0).block_until_ready()),
        "rnn fwd": lambda: rnn_f(W, U, X, h0).block_until_ready(),
        "rnn fwd+bptt": lambda: jax.block_until_ready(rnn_b(W, U, X, h0)),
        "lstm fwd+bwd": lambda: jax.block_until_ready(lstm_b(Wx, Wh, LX, lh0, lc0)),
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="fewer repeats")
    args = ap.parse_args()
    budget = 0.3 if args.quick else 1.0
    import hypatia
    import hypatia.tensor as HT

    results = {}
    hyp = theano_cases(hypatia, HT)
    npc = numpy_cases()
    # Same numbers: the forward costs and the gradients agree with numpy's.
    c_h, g_h = hyp["check"]
    c_n, g_n = npc["check"]
    err = max(abs(c_h - c_n) / abs(c_n), *[float(np.abs(a - b).max() / np.abs(b).max()) for a, b in zip(g_h, g_n)])
    print(f"Hypatia vs numpy: forward cost and BPTT gradients agree to {err:.1e} (relative)")
    n_h, n_small = 1_000_000, 100_000
    results["hypatia"] = {"trivial": best(hyp["trivial"](n_h), budget) / n_h}
    results["numpy"] = {"trivial": best(npc["trivial"](n_small), budget) / n_small}
    for case in ("rnn fwd", "rnn fwd+bptt", "lstm fwd+bwd"):
        results["hypatia"][case] = best(hyp[case], budget)
        if case in npc:
            results["numpy"][case] = best(npc[case], budget)
    pytensor = None if os.environ.get("BENCH_NO_PYTENSOR") else try_import("pytensor")
    if pytensor is not None:
        os.environ.setdefault("PYTENSOR_FLAGS", f"compiledir={tempfile.mkdtemp()}")
        import pytensor.tensor as PT

        ptc = theano_cases(pytensor, PT)
        results["pytensor"] = {"trivial": best(ptc["trivial"](n_small), budget) / n_small}
        for case in ("rnn fwd", "rnn fwd+bptt", "lstm fwd+bwd"):
            results["pytensor"][case] = best(ptc[case], budget)
    jax = try_import("jax")
    if jax is not None:
        jc = jax_cases(jax)
        results["jax"] = {"trivial": best(jc["trivial"](n_h), budget) / n_h}
        for case in ("rnn fwd", "rnn fwd+bptt", "lstm fwd+bwd"):
            results["jax"][case] = best(jc[case], budget)
    fws = list(results)
    print(f"{'case':<16}" + "".join(f"{fw:>12}" for fw in fws) + "   ratios (other / hypatia)")
    for case in ("trivial", "rnn fwd", "rnn fwd+bptt", "lstm fwd+bwd"):
        unit, scale = ("ns/step", 1e9) if case == "trivial" else ("ms", 1e3)
        row = f"{case:<16}"
        ratios = []
        for fw in fws:
            v = results[fw].get(case)
            row += f"{v * scale:>10.1f}{unit[:2]:>2}" if v is not None else f"{'-':>12}"
            if v is not None and fw != "hypatia":
                ratios.append(f"{fw} {v / results['hypatia'][case]:.2f}")
        print(row + "   " + ", ".join(ratios))
    h = results["hypatia"]
    print(f"Hypatia BPTT / forward: {h['rnn fwd+bptt'] / h['rnn fwd']:.2f}")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
