"""An Elman RNN trained with scan: it learns to output, at every step, its input from 3 steps back.

The recurrence h_t = tanh(x_t W_x + h_{t-1} W_h + b) runs in one Scan node; the cost's gradient
is backpropagation through time (a ScanGrad node); plain SGD updates the shared weights. The same
network written in numpy (forward loop and hand-written BPTT) runs beside it from the same
initial weights, so the two loss columns agree; the timings are per training step.

Usage: rnn_scan.py [epochs]
"""
import sys
import time

import numpy as np

import hypatia as theano
import hypatia.tensor as T

DELAY, STEPS, BATCH, N_IN, N_H = 3, 20, 32, 4, 32


def batches(n, seed=0):
    rng = np.random.RandomState(seed)
    for _ in range(n):
        x = rng.randn(STEPS, BATCH, N_IN).astype("float32")
        y = np.zeros_like(x)
        y[DELAY:] = x[:-DELAY]
        yield x, y


def main():
    epochs = int(sys.argv[1]) if len(sys.argv) > 1 else 4
    rng = np.random.RandomState(1)
    init = {
        "Wx": (rng.randn(N_IN, N_H) * 0.5).astype("float32"),
        "Wh": (rng.randn(N_H, N_H) * 0.1).astype("float32"),
        "b": np.zeros(N_H, "float32"),
        "Wo": (rng.randn(N_H, N_IN) * 0.3).astype("float32"),
    }
    lr = np.float32(0.05)

    # ---- Hypatia, through Theano's API
    P = {k: theano.shared(v.copy(), name=k) for k, v in init.items()}
    x, y = T.tensor3("x", dtype="float32"), T.tensor3("y", dtype="float32")
    h0 = T.zeros((x.shape[1], N_H), dtype="float32")
    hs, _ = theano.scan(lambda x_t, h: T.tanh(T.dot(x_t, P["Wx"]) + T.dot(h, P["Wh"]) + P["b"]),
                        sequences=x, outputs_info=h0)
    pred = T.dot(hs, P["Wo"])
    cost = T.mean(T.sqr(pred - y))
    params = list(P.values())
    grads = T.grad(cost, params)
    train = theano.function([x, y], cost, updates=[(p, p - lr * g) for p, g in zip(params, grads)])

    # ---- numpy: the same model and updates
    N = {k: v.astype("float64") for k, v in init.items()}

    def numpy_step(xb, yb):
        hs = [np.zeros((BATCH, N_H))]
        for t in range(STEPS):
            hs.append(np.tanh(xb[t] @ N["Wx"] + hs[-1] @ N["Wh"] + N["b"]))
        H = np.stack(hs[1:])
        pred = H @ N["Wo"]
        c = np.mean((pred - yb) ** 2)
        dpred = 2 * (pred - yb) / pred.size
        g = {k: np.zeros_like(v) for k, v in N.items()}
        g["Wo"] = np.einsum("tbh,tbo->ho", H, dpred)
        dH = dpred @ N["Wo"].T
        dh = np.zeros((BATCH, N_H))
        for t in range(STEPS - 1, -1, -1):
            dz = (dH[t] + dh) * (1 - hs[t + 1] ** 2)
            g["Wx"] += xb[t].T @ dz
            g["Wh"] += hs[t].T @ dz
            g["b"] += dz.sum(0)
            dh = dz @ N["Wh"].T
        for k in N:
            N[k] -= float(lr) * g[k]
        return c

    print(f"Elman RNN {N_IN}-{N_H}-{N_IN}, {STEPS} steps, batch {BATCH}: output the input from {DELAY} steps back")
    print(f"{'epoch':>5}{'hypatia loss':>14}{'numpy loss':>12}{'hypatia ms/step':>17}{'numpy ms/step':>15}")
    first = last = None
    for epoch in range(epochs):
        lh, ln, th, tn, k = [], [], 0.0, 0.0, 0
        for xb, yb in batches(50, seed=epoch):
            t0 = time.perf_counter()
            lh.append(float(train(xb, yb)))
            t1 = time.perf_counter()
            ln.append(numpy_step(xb.astype("float64"), yb.astype("float64")))
            t2 = time.perf_counter()
            th, tn, k = th + t1 - t0, tn + t2 - t1, k + 1
        last = np.mean(lh)
        first = last if first is None else first
        print(f"{epoch:>5}{last:>14.4f}{np.mean(ln):>12.4f}{th / k * 1e3:>17.3f}{tn / k * 1e3:>15.3f}")
    if epochs > 1 and not last < 0.7 * first:
        raise SystemExit("the loss did not fall")


if __name__ == "__main__":
    main()
