"""softmax and log_softmax along rows against numpy's stable form, measured in the same run.

numpy: e = exp(x - max); e / e.sum() (and x - max - log(e.sum())) along axis 1, the usual
stable formula (less accurate than Hypatia's kernels, which keep every result within 4 ulp:
tests/python/test_softmax_stability.py). Hypatia: function([x], softmax(x)) called as f(x) (a fresh
result array, like numpy's). Shapes: (64, 1024) stays in cache (the kernels' arithmetic), (4096,
1024) streams through memory. Times are the minimum over repeats (the median beside it); the ratio
is Hypatia's minimum over numpy's (below 1: faster).

Usage: bench_softmax.py [--threads N] [--shapes 64x1024,4096x1024]
"""
import argparse

import numpy as np

from timing import timings


def numpy_softmax(x):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def numpy_log_softmax(x):
    d = x - x.max(axis=1, keepdims=True)
    return d - np.log(np.exp(d).sum(axis=1, keepdims=True))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=0, help="Hypatia's thread count (0: the default)")
    ap.add_argument("--shapes", default="64x1024,4096x1024")
    args = ap.parse_args()
    import hypatia
    import hypatia.tensor as T
    if args.threads:
        hypatia.config.num_threads = args.threads

    print(f"{'case':<34} {'numpy min / med':>20} {'hypatia min / med':>20} {'ratio':>6}")
    for dtype in ["float32", "float64"]:
        x = T.matrix("x", dtype=dtype)
        for name, expr, ref in [("softmax", T.nnet.softmax, numpy_softmax),
                                ("log_softmax", T.nnet.log_softmax, numpy_log_softmax)]:
            f = hypatia.function([x], expr(x))
            for shape in args.shapes.split(","):
                rows, cols = (int(v) for v in shape.split("x"))
                a = np.random.default_rng(0).uniform(-4, 4, (rows, cols)).astype(dtype)
                np.testing.assert_allclose(f(a), ref(a), rtol=1e-4 if dtype == "float32" else 1e-10, atol=1e-6)
                tn = timings(lambda: ref(a))
                th = timings(lambda: f(a))
                print(f"{name + ' ' + dtype + ' ' + shape:<34} {tn[0] * 1e3:8.3f} / {tn[1] * 1e3:7.3f} ms"
                      f" {th[0] * 1e3:8.3f} / {th[1] * 1e3:7.3f} ms {th[0] / tn[0]:6.3f}")


if __name__ == "__main__":
    main()
