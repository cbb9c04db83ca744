"""LeNet-5 trained on generated digits: seven-segment figures 0-9 drawn at random positions and
thicknesses on 28x28 images with noise. conv 5x5 (6 maps, 'half') -> tanh -> max pool 2 ->
conv 5x5 (16 maps) -> tanh -> max pool 2 -> 120 -> 84 -> 10, softmax cross-entropy, SGD with
momentum on shared variables (one compiled training function: forward, backward, updates).

Usage: lenet.py [steps]
"""
import sys
import time

import numpy as np

import hypatia as theano
import hypatia.tensor as T
from hypatia.tensor.signal import pool

# Segments (a, b, c, d, e, f, g) of each digit on a seven-segment display.
SEGMENTS = ["abcdef", "bc", "abged", "abgcd", "fgbc", "afgcd", "afgedc", "abc", "abcdefg", "abcdfg"]


def draw(digit, rng):
    img = np.zeros((28, 28), np.float32)
    top, left = rng.integers(2, 7), rng.integers(4, 11)
    h, w, t = rng.integers(8, 10), rng.integers(8, 12), rng.integers(2, 4)
    coords = {  # (row0, row1, col0, col1) of each segment
        "a": (top, top + t, left, left + w), "g": (top + h, top + h + t, left, left + w),
        "d": (top + 2 * h, top + 2 * h + t, left, left + w),
        "f": (top, top + h + t, left, left + t), "b": (top, top + h + t, left + w - t, left + w),
        "e": (top + h, top + 2 * h + t, left, left + t), "c": (top + h, top + 2 * h + t, left + w - t, left + w)}
    for s in SEGMENTS[digit]:
        r0, r1, c0, c1 = coords[s]
        img[r0:min(r1, 28), c0:min(c1, 28)] = 1.0
    return img + rng.normal(0, 0.3, img.shape).astype(np.float32)


def dataset(n, seed):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 10, n)
    x = np.stack([draw(d, rng) for d in y])[:, None]
    return x.astype(np.float32), y.astype(np.int64)


def main():
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 300
    rng = np.random.default_rng(1)

    def param(*shape, fan_in):
        return theano.shared((rng.standard_normal(shape) * np.sqrt(1.0 / fan_in)).astype(np.float32))

    c1, b1 = param(6, 1, 5, 5, fan_in=25), theano.shared(np.zeros(6, np.float32))
    c2, b2 = param(16, 6, 5, 5, fan_in=150), theano.shared(np.zeros(16, np.float32))
    w3, b3 = param(400, 120, fan_in=400), theano.shared(np.zeros(120, np.float32))
    w4, b4 = param(120, 84, fan_in=120), theano.shared(np.zeros(84, np.float32))
    w5, b5 = param(84, 10, fan_in=84), theano.shared(np.zeros(10, np.float32))
    params = [c1, b1, c2, b2, w3, b3, w4, b4, w5, b5]

    x, y = T.ftensor4("x"), T.lvector("y")
    h = T.tanh(T.nnet.conv2d(x, c1, border_mode="half") + b1.dimshuffle("x", 0, "x", "x"))
    h = pool.pool_2d(h, (2, 2), ignore_border=True)
    h = T.tanh(T.nnet.conv2d(h, c2) + b2.dimshuffle("x", 0, "x", "x"))
    h = pool.pool_2d(h, (2, 2), ignore_border=True).flatten(2)
    h = T.tanh(T.dot(h, w3) + b3)
    h = T.tanh(T.dot(h, w4) + b4)
    p = T.nnet.softmax(T.dot(h, w5) + b5)
    loss = T.mean(T.nnet.categorical_crossentropy(p, y))
    errors = T.mean(T.neq(T.argmax(p, axis=1), y))
    lr, mu = np.float32(0.05), np.float32(0.9)
    updates = []
    for prm, g in zip(params, T.grad(loss, params)):
        v = theano.shared(np.zeros_like(prm.get_value()))
        updates += [(v, mu * v - lr * g), (prm, prm + mu * v - lr * g)]
    t0 = time.perf_counter()
    train = theano.function([x, y], loss, updates=updates)
    test = theano.function([x, y], [loss, errors])
    compile_s = time.perf_counter() - t0

    xs, ys = dataset(64 * 50, seed=2)
    xt, yt = dataset(1000, seed=3)
    print(f"compiled in {compile_s:.2f} s; {steps} steps of batch 64 (28x28 float32)")
    print(f"{'step':>6s} {'train loss':>11s} {'test loss':>10s} {'test error':>11s} {'ms/step':>8s}")
    t_train, n_timed = 0.0, 0
    for step in range(1, steps + 1):
        i = (step - 1) % 50
        t0 = time.perf_counter()
        tl = train(xs[i * 64:(i + 1) * 64], ys[i * 64:(i + 1) * 64])
        t_train += time.perf_counter() - t0
        n_timed += 1
        if step % 50 == 0 or step == 1:
            vl, ve = test(xt, yt)
            print(f"{step:6d} {float(tl):11.4f} {float(vl):10.4f} {100 * float(ve):10.1f}% "
                  f"{1e3 * t_train / n_timed:8.2f}")
            t_train, n_timed = 0.0, 0


if __name__ == "__main__":
    main()
