"""Convolutions beside JAX (jit, CPU) and PyTensor, each as a ratio to Hypatia's time in the same
run (best of --reps interleaved repetitions):

  a. LeNet-5 on 28x28 float32, batch 128 (conv 1->6 5x5 'half', tanh, max pool 2, conv 6->16 5x5,
     tanh, max pool 2, dense 400-120-84-10, softmax cross-entropy): forward (the loss) and
     forward + backward (the loss and the gradients of every parameter);
  b. a ResNet 3x3 layer (batch 32, 64 -> 64 channels, 56x56, padding 1): forward, gradient with
     respect to the inputs, gradient with respect to the weights;
  c. max pooling 2x2 on the same activations and its gradient;
  d. PyTensor's signal.convolve2d where it applies (one 5x5 filter over 128 single-channel 28x28
     images, 'valid'), beside Hypatia's conv2d of the same.

    .venv-bench/bin/python bench/python/bench_conv.py [--reps N] [--no-jax] [--no-pytensor]
"""
import argparse
import os
import sys
import time

import numpy as np


def race(entries, reps, min_time):
    """entries: name -> callable; returns name -> best seconds per call (rounds interleaved)."""
    best = {k: float("inf") for k in entries}
    for f in entries.values():
        f()
    for _ in range(reps):
        for k, f in entries.items():
            n, t0 = 0, time.perf_counter()
            while True:
                f()
                n += 1
                dt = time.perf_counter() - t0
                if dt >= min_time:
                    break
            best[k] = min(best[k], dt / n)
    return best


def lenet_params(rng):
    def w(*s):
        return (rng.standard_normal(s) * np.sqrt(1.0 / np.prod(s[1:]))).astype("float32")

    return [w(6, 1, 5, 5), np.zeros(6, "float32"), w(16, 6, 5, 5), np.zeros(16, "float32"),
            w(400, 120), np.zeros(120, "float32"), w(120, 84), np.zeros(84, "float32"), w(84, 10),
            np.zeros(10, "float32")]


def hypatia_cases(args, data):
    import hypatia
    import hypatia.tensor as T
    from hypatia.tensor.signal import pool

    x, y = T.ftensor4("x"), T.lvector("y")
    ps = [T.ftensor4("c1"), T.fvector("b1"), T.ftensor4("c2"), T.fvector("b2"), T.fmatrix("w3"), T.fvector("b3"),
          T.fmatrix("w4"), T.fvector("b4"), T.fmatrix("w5"), T.fvector("b5")]
    h = T.tanh(T.nnet.conv2d(x, ps[0], border_mode="half") + ps[1].dimshuffle("x", 0, "x", "x"))
    h = pool.pool_2d(h, (2, 2), ignore_border=True)
    h = T.tanh(T.nnet.conv2d(h, ps[2]) + ps[3].dimshuffle("x", 0, "x", "x"))
    h = pool.pool_2d(h, (2, 2), ignore_border=True).flatten(2)
    h = T.tanh(T.dot(h, ps[4]) + ps[5])
    h = T.tanh(T.dot(h, ps[6]) + ps[7])
    loss = T.mean(T.nnet.categorical_crossentropy(T.nnet.softmax(T.dot(h, ps[8]) + ps[9]), y))
    fwd = hypatia.function([x, y] + ps, loss)
    bwd = hypatia.function([x, y] + ps, [loss] + T.grad(loss, ps))
    a, t = T.ftensor4("a"), T.ftensor4("t")
    w = T.ftensor4("w")
    conv_f = hypatia.function([a, w], T.nnet.conv2d(a, w, border_mode=1))
    gi = hypatia.function([w, t], T.nnet.conv2d_grad_wrt_inputs(t, w, (32, 64, 56, 56), border_mode=1))
    gw = hypatia.function([a, t], T.nnet.conv2d_grad_wrt_weights(a, t, (64, 64, 3, 3), border_mode=1))
    pooled = pool.pool_2d(a, (2, 2), ignore_border=True)
    mp = hypatia.function([a], pooled)
    g2 = T.ftensor4("g2")
    mpg = hypatia.function([a, g2], T.grad(T.sum(pooled * g2), a))
    single = hypatia.function([a, w], T.nnet.conv2d(a, w))
    d = data
    return {
        "lenet forward": lambda: fwd(d["digits"], d["labels"], *d["lenet"]),
        "lenet forward+backward": lambda: bwd(d["digits"], d["labels"], *d["lenet"]),
        "resnet 3x3 forward": lambda: conv_f(d["act"], d["kern"]),
        "resnet 3x3 grad inputs": lambda: gi(d["kern"], d["act"]),
        "resnet 3x3 grad weights": lambda: gw(d["act"], d["act"]),
        "max pool 2x2": lambda: mp(d["act"]),
        "max pool 2x2 grad": lambda: mpg(d["act"], d["pooled_g"]),
        "128 x 28x28 * 5x5 (1 channel)": lambda: single(d["digits"], d["filter5"]),
    }


def jax_cases(data):
    import jax
    import jax.numpy as jnp
    from jax import lax

    dn = ("NCHW", "OIHW", "NCHW")

    def conv(x, w, pad):
        # Theano's conv2d flips the filters: a convolution, as lax.conv with flipped kernels.
        return lax.conv_general_dilated(x, w[:, :, ::-1, ::-1], (1, 1), pad, dimension_numbers=dn)

    def maxpool(x):
        return lax.reduce_window(x, -jnp.inf, lax.max, (1, 1, 2, 2), (1, 1, 2, 2), "VALID")

    def lenet_loss(params, x, y):
        c1, b1, c2, b2, w3, b3, w4, b4, w5, b5 = params
        h = maxpool(jnp.tanh(conv(x, c1, ((2, 2), (2, 2))) + b1[None, :, None, None]))
        h = maxpool(jnp.tanh(conv(h, c2, "VALID") + b2[None, :, None, None])).reshape(x.shape[0], -1)
        h = jnp.tanh(h @ w3 + b3)
        h = jnp.tanh(h @ w4 + b4)
        logits = h @ w5 + b5
        return -jnp.mean(jax.nn.log_softmax(logits)[jnp.arange(x.shape[0]), y])

    fwd = jax.jit(lenet_loss)
    bwd = jax.jit(jax.value_and_grad(lenet_loss))
    conv_f = jax.jit(lambda x, w: conv(x, w, ((1, 1), (1, 1))))
    gi = jax.jit(lambda w, t: jax.vjp(lambda x: conv(x, w, ((1, 1), (1, 1))), jnp.zeros((32, 64, 56, 56),
                                                                                          jnp.float32))[1](t)[0])
    gw = jax.jit(lambda x, t: jax.vjp(lambda w: conv(x, w, ((1, 1), (1, 1))), jnp.zeros((64, 64, 3, 3),
                                                                                          jnp.float32))[1](t)[0])
    mp = jax.jit(maxpool)
    mpg = jax.jit(lambda x, g: jax.vjp(maxpool, x)[1](g)[0])
    single = jax.jit(lambda x, w: conv(x, w, "VALID"))
    d = {k: (jnp.asarray(v) if not isinstance(v, list) else [jnp.asarray(p) for p in v]) for k, v in data.items()}

    def run(f, *a):
        return lambda: jax.block_until_ready(f(*a))

    return {
        "lenet forward": run(fwd, d["lenet"], d["digits"], d["labels"]),
        "lenet forward+backward": run(bwd, d["lenet"], d["digits"], d["labels"]),
        "resnet 3x3 forward": run(conv_f, d["act"], d["kern"]),
        "resnet 3x3 grad inputs": run(gi, d["kern"], d["act"]),
        "resnet 3x3 grad weights": run(gw, d["act"], d["act"]),
        "max pool 2x2": run(mp, d["act"]),
        "max pool 2x2 grad": run(mpg, d["act"], d["pooled_g"]),
        "128 x 28x28 * 5x5 (1 channel)": run(single, d["digits"], d["filter5"]),
    }


def pytensor_cases(data):
    import pytensor
    import pytensor.tensor as pt
    from pytensor.tensor.signal import convolve2d

    imgs = pt.tensor3("imgs", dtype="float32")
    k = pt.matrix("k", dtype="float32")
    f = pytensor.function([imgs, k], convolve2d(imgs, k[None], mode="valid"))
    im = data["digits"][:, 0]
    kk = data["filter5"][0, 0]
    return {"128 x 28x28 * 5x5 (1 channel)": lambda: f(im, kk)}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--min-time", type=float, default=0.2)
    p.add_argument("--no-jax", action="store_true")
    p.add_argument("--no-pytensor", action="store_true")
    args = p.parse_args(argv)
    rng = np.random.default_rng(0)
    data = {
        "digits": rng.uniform(0, 1, (128, 1, 28, 28)).astype("float32"),
        "labels": rng.integers(0, 10, 128).astype("int64"),
        "lenet": lenet_params(rng),
        "act": rng.uniform(-1, 1, (32, 64, 56, 56)).astype("float32"),
        "kern": (rng.standard_normal((64, 64, 3, 3)) * 0.05).astype("float32"),
        "pooled_g": rng.uniform(-1, 1, (32, 64, 28, 28)).astype("float32"),
        "filter5": rng.uniform(-1, 1, (1, 1, 5, 5)).astype("float32"),
    }
    frameworks = {"hypatia": hypatia_cases(args, data)}
    if not args.no_jax:
        try:
            frameworks["jax"] = jax_cases(data)
        except ImportError as e:
            print(f"(JAX not available: {e})")
    if not args.no_pytensor:
        try:
            frameworks["pytensor"] = pytensor_cases(data)
        except ImportError as e:
            print(f"(PyTensor not available: {e})")
    print(f"{os.cpu_count()} CPUs; best of {args.reps} interleaved repetitions of >= {args.min_time} s")
    print(f"{'case':34s} {'hypatia':>11s}  " + "  ".join(f"{k:>18s}" for k in frameworks if k != "hypatia"))
    for case in frameworks["hypatia"]:
        entries = {k: fw[case] for k, fw in frameworks.items() if case in fw}
        best = race(entries, args.reps, args.min_time)
        h = best["hypatia"]
        cols = []
        for k in frameworks:
            if k == "hypatia":
                continue
            cols.append(f"{best[k] * 1e3:9.3f} ms {best[k] / h:5.2f}x" if k in best else f"{'-':>18s}")
        print(f"{case:34s} {h * 1e3:8.3f} ms  " + "  ".join(cols))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
