"""The cross-entropy of a softmax with integer labels, fused (CrossentropySoftmax1HotWithBias and its
Dx), against the same loss written as Theano's Deep Learning Tutorials write it,
-mean(log(softmax(z))[arange(n), y]), which Hypatia compiles to log_softmax and a gather (and their
gradients: a scatter-add into zeros and the log_softmax gradient): both in the same run.

Cases: the loss and its gradient w.r.t. the logits alone (256 x 10 and 256 x 1000 float32 logits),
and the MLP training step (784-500-500-10, batch 256, tanh, SGD with updates, float32). Times are
the minimum over repeats (the median beside it); the ratio is the fused form's minimum over the
unfused form's (below 1: faster). numpy computes the loss and its gradient directly in the same
run, as a yardstick.

Usage: bench_xent.py [--threads N]
"""
import argparse

import numpy as np

from timing import timings


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=0, help="Hypatia's thread count (0: the default)")
    args = ap.parse_args()
    import hypatia
    import hypatia.tensor as T
    if args.threads:
        hypatia.config.num_threads = args.threads
    rng = np.random.default_rng(0)

    def fused(z, y):
        return T.mean(T.nnet.categorical_crossentropy(T.nnet.softmax(z), y))

    def unfused(z, y):
        return -T.mean(T.log(T.nnet.softmax(z))[T.arange(y.shape[0]), y])

    def numpy_loss_and_grad(z, y):
        e = np.exp(z - z.max(axis=1, keepdims=True))
        sm = e / e.sum(axis=1, keepdims=True)
        n = len(y)
        loss = -np.log(sm[np.arange(n), y]).mean()
        g = sm.copy()
        g[np.arange(n), y] -= 1
        return loss, g / n

    print(f"{'case':<40} {'unfused min / med':>22} {'fused min / med':>22} {'ratio':>6} {'numpy min':>10}")
    for classes in (10, 1000):
        z, y = T.fmatrix("z"), T.lvector("y")
        zv = rng.normal(size=(256, classes)).astype("float32") * 3
        yv = rng.integers(0, classes, 256)
        fs = {}
        for name, build in (("unfused", unfused), ("fused", fused)):
            cost = build(z, y)
            fs[name] = hypatia.function([z, y], [cost, T.grad(cost, z)])
        a, b = fs["unfused"](zv, yv), fs["fused"](zv, yv)
        np.testing.assert_allclose(a[0], b[0], rtol=1e-5)
        np.testing.assert_allclose(a[1], b[1], rtol=1e-4, atol=1e-7)
        tu = timings(lambda: fs["unfused"](zv, yv))
        tf = timings(lambda: fs["fused"](zv, yv))
        tn = timings(lambda: numpy_loss_and_grad(zv, yv))
        print(f"{'loss + grad, 256 x %d float32' % classes:<40} {tu[0] * 1e6:9.1f} / {tu[1] * 1e6:8.1f} us"
              f" {tf[0] * 1e6:9.1f} / {tf[1] * 1e6:8.1f} us {tf[0] / tu[0]:6.3f} {tn[0] * 1e6:8.1f} us")

    # The MLP training step, parameters and batch in shared variables (nothing passed per call).
    sizes = [784, 500, 500, 10]
    xs = hypatia.shared(rng.normal(size=(256, 784)).astype("float32"), name="x")
    ys = hypatia.shared(rng.integers(0, 10, 256), name="y")
    steps = {}
    for name, build in (("unfused", unfused), ("fused", fused)):
        r = np.random.default_rng(1)
        params, h = [], xs
        for i, (m, k) in enumerate(zip(sizes[:-1], sizes[1:])):
            w = hypatia.shared((r.normal(size=(m, k)) / np.sqrt(m)).astype("float32"), name=f"w{i}")
            b = hypatia.shared(np.zeros(k, "float32"), name=f"b{i}")
            params += [w, b]
            h = T.dot(h, w) + b
            if i < len(sizes) - 2:
                h = T.tanh(h)
        cost = build(h, ys)
        grads = T.grad(cost, params)
        steps[name] = hypatia.function([], cost, updates=[(p, p - np.float32(0.01) * g) for p, g in zip(params, grads)])
    tu = timings(steps["unfused"], budget=1.0)
    tf = timings(steps["fused"], budget=1.0)
    print(f"{'MLP 784-500-500-10 step, batch 256':<40} {tu[0] * 1e3:9.3f} / {tu[1] * 1e3:8.3f} ms"
          f" {tf[0] * 1e3:9.3f} / {tf[1] * 1e3:8.3f} ms {tf[0] / tu[0]:6.3f}")


if __name__ == "__main__":
    main()
