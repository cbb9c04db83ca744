"""float64 transcendental kernels against numpy, measured in the same run.

For each function and size: numpy's time (a fresh result array, as np.exp(x) makes), Hypatia's
compiled function f = function([x], exp(x)) called as f(x) (a fresh result array too), and f with
Out(borrow=True) (no allocation per call); the ratios are Hypatia's time over numpy's (below 1:
faster). Each time is the minimum over repeats (the least disturbed by other load) with the median
beside it.

Usage: bench_transcendental.py [--threads N] [--sizes 100,1000,...] [--funcs exp,log,...]
"""
import argparse
import os
import statistics
import sys

import numpy as np

from timing import timings


def numpy_sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def numpy_softplus(x):
    return np.logaddexp(0.0, x)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=0, help="Hypatia's thread count (0: the default)")
    ap.add_argument("--sizes", default="100,1000,10000,100000,1000000,10000000")
    ap.add_argument("--funcs", default="exp,log,tanh,sin,cos,sigmoid,softplus")
    args = ap.parse_args()
    if args.threads:
        os.environ["OMP_NUM_THREADS"] = str(args.threads)
    import hypatia
    import hypatia.tensor as T
    if args.threads:
        hypatia.config.num_threads = args.threads

    funcs = {
        "exp": (T.exp, np.exp, (-20, 20)),
        "log": (T.log, np.log, (1e-3, 1e3)),
        "tanh": (T.tanh, np.tanh, (-10, 10)),
        "sin": (T.sin, np.sin, (-10, 10)),
        "cos": (T.cos, np.cos, (-10, 10)),
        "sigmoid": (T.nnet.sigmoid, numpy_sigmoid, (-20, 20)),
        "softplus": (T.nnet.softplus, numpy_softplus, (-20, 20)),
    }
    sizes = [int(s) for s in args.sizes.split(",")]
    x = T.dvector("x")
    print(f"numpy {np.__version__}, Hypatia threads: {args.threads or 'default'}; times in us (min / median)")
    print(f"{'func':9} {'n':>9} {'numpy':>17} {'hypatia f(x)':>17} {'ratio':>6} {'borrow':>17} {'ratio':>6}")
    worst = 0.0
    for name in args.funcs.split(","):
        build, ref, (lo, hi) = funcs[name]
        f = hypatia.function([x], build(x))
        fb = hypatia.function([x], hypatia.Out(build(x), borrow=True))
        for n in sizes:
            xv = np.random.default_rng(0).uniform(lo, hi, n)
            # Interleaved so that load from other processes hits all three alike.
            res = {"np": [], "f": [], "fb": []}
            for _ in range(3):
                res["np"].append(timings(lambda: ref(xv)))
                res["f"].append(timings(lambda: f(xv)))
                res["fb"].append(timings(lambda: fb(xv)))
            best = {k: (min(m for m, _ in v), statistics.median(md for _, md in v)) for k, v in res.items()}
            r_f = best["f"][0] / best["np"][0]
            r_b = best["fb"][0] / best["np"][0]
            worst = max(worst, r_f)
            fmt = lambda p: f"{p[0] * 1e6:8.1f} /{p[1] * 1e6:7.1f}"
            print(f"{name:9} {n:>9} {fmt(best['np']):>17} {fmt(best['f']):>17} {r_f:6.2f} {fmt(best['fb']):>17} {r_b:6.2f}")
            sys.stdout.flush()
    print(f"worst f(x) / numpy ratio: {worst:.2f}")


if __name__ == "__main__":
    main()
