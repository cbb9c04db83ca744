"""A denoising autoencoder (Theano's dA tutorial), with random corruption drawn inside the graph.

Each training step corrupts its minibatch with a binomial mask from RandomStreams (the state lives
in a shared variable and advances with every call, through its default update), encodes with
tied weights, decodes, and takes a gradient step on the cross-entropy of the reconstruction. The
data are 16x16 images of random bars (no download). The same step written in numpy runs beside
it, on the same masks (numpy's RandomState, seeded as Theano seeds the stream), so both give the
same costs; the timings are per step.

Usage: denoising_autoencoder.py [epochs]
"""
import sys
import time

import numpy as np

import hypatia as theano
import hypatia.tensor as T
from hypatia.tensor.shared_randomstreams import RandomStreams


def bars(n, side=16, seed=0):
    """n images of side x side pixels, each a few random horizontal and vertical bars."""
    rng = np.random.RandomState(seed)
    x = np.zeros((n, side, side), dtype=theano.config.floatX)
    for img in x:
        img[rng.choice(side, 3, replace=False), :] = 1
        img[:, rng.choice(side, 2, replace=False)] = 1
    return x.reshape(n, side * side)


def main():
    epochs = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    floatX = theano.config.floatX
    n_visible, n_hidden, batch, lr, corruption = 256, 100, 20, 0.1, 0.3
    data = bars(2000)
    rng = np.random.RandomState(123)
    bound = 4 * np.sqrt(6.0 / (n_hidden + n_visible))
    W0 = rng.uniform(-bound, bound, (n_visible, n_hidden)).astype(floatX)
    seed = 2 ** 20 + 7

    # ---- Hypatia (Theano's dA, with import hypatia as theano)
    theano_rng = RandomStreams(seed)
    W = theano.shared(W0.copy(), name="W")
    b = theano.shared(np.zeros(n_hidden, dtype=floatX), name="b")
    b_prime = theano.shared(np.zeros(n_visible, dtype=floatX), name="b_prime")
    x = T.matrix("x")
    tilde_x = theano_rng.binomial(size=x.shape, n=1, p=1 - corruption, dtype=floatX) * x
    y = T.nnet.sigmoid(T.dot(tilde_x, W) + b)
    z = T.nnet.sigmoid(T.dot(y, W.T) + b_prime)
    cost = T.mean(-T.sum(x * T.log(z) + (1 - x) * T.log(1 - z), axis=1))
    params = [W, b, b_prime]
    grads = T.grad(cost, params)
    train = theano.function([x], cost, updates=[(p, p - lr * g) for p, g in zip(params, grads)])

    # ---- numpy: the same model, the same masks (the stream's RandomState: Theano's seeding)
    mask_rng = np.random.RandomState(np.random.RandomState(seed).randint(2 ** 30))
    Wn, bn, bpn = W0.astype(np.float64), np.zeros(n_hidden), np.zeros(n_visible)

    def sigmoid(a):
        return 1 / (1 + np.exp(-a))

    def numpy_step(xb):
        nonlocal Wn, bn, bpn
        mask = mask_rng.binomial(1, 1 - corruption, xb.shape)
        tx = mask * xb
        yb = sigmoid(tx @ Wn + bn)
        zb = sigmoid(yb @ Wn.T + bpn)
        c = np.mean(-np.sum(xb * np.log(zb) + (1 - xb) * np.log(1 - zb), axis=1))
        dz = (zb - xb) / len(xb)
        dy = (dz @ Wn) * yb * (1 - yb)
        gW = tx.T @ dy + dz.T @ yb
        Wn, bn, bpn = Wn - lr * gW, bn - lr * dy.sum(0), bpn - lr * dz.sum(0)
        return c

    print(f"denoising autoencoder {n_visible}-{n_hidden}, batch {batch}, corruption {corruption}, {floatX}")
    print(f"{'epoch':>5}{'hypatia cost':>14}{'numpy cost':>12}{'hypatia us/step':>17}{'numpy us/step':>15}")
    steps = len(data) // batch
    first = None
    for epoch in range(epochs):
        ch, cn, th, tn = [], [], 0.0, 0.0
        for i in range(steps):
            xb = data[i * batch:(i + 1) * batch]
            t0 = time.perf_counter()
            ch.append(float(train(xb)))
            t1 = time.perf_counter()
            cn.append(numpy_step(xb.astype(np.float64)))
            t2 = time.perf_counter()
            th, tn = th + t1 - t0, tn + t2 - t1
        print(f"{epoch:>5}{np.mean(ch):>14.4f}{np.mean(cn):>12.4f}{th / steps * 1e6:>17.1f}{tn / steps * 1e6:>15.1f}")
        first = np.mean(ch) if first is None else first
    if epochs > 1 and not np.mean(ch) < 0.5 * first:
        raise SystemExit("the reconstruction cost did not fall to half its first epoch's")


if __name__ == "__main__":
    main()
