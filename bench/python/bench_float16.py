"""float16 (a storage dtype, computed in float32) against numpy's float16, measured in the same run.

For each size: the casts float16 -> float32 and float32 -> float16 (numpy: astype), the graphs
x * 2 + 1, tanh(x * y) + x and sum(x * y) on float16 vectors (numpy: the same expressions on
float16 arrays, which numpy also computes in float32 and rounds per op), with float32 x * 2 + 1 in
Hypatia beside them. FAST_RUN fuses the float16 graphs through their casts (one loop that loads
float16, rounds each op's result and stores float16). Each time is
the minimum over repeats (the least disturbed by other load); ratio = Hypatia / numpy (below 1:
faster).

Usage: bench_float16.py [--sizes 1000,100000,1000000]
"""
import argparse
import timeit

import numpy as np

import hypatia
import hypatia.tensor as T


def best(fn, n_elems, budget=0.3, repeats=7):
    timer = timeit.Timer(fn)
    fn()
    number = max(1, int(budget / repeats / max(timer.timeit(1), 1e-7)))
    return min(timer.repeat(repeats, number)) / number


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="1000,100000,1000000")
    args = ap.parse_args()
    x16 = T.vector("x", dtype="float16")
    x32 = T.vector("y", dtype="float32")
    up = hypatia.function([x16], T.cast(x16, "float32"))
    down = hypatia.function([x32], T.cast(x32, "float16"))
    ew16 = hypatia.function([x16], x16 * 2 + 1)
    ew32 = hypatia.function([x32], x32 * 2 + 1)
    y16 = T.vector("y16", dtype="float16")
    tanh16 = hypatia.function([x16, y16], T.tanh(x16 * y16) + x16)
    dot16 = hypatia.function([x16, y16], (x16 * y16).sum())
    two, one = np.float16(2), np.float16(1)
    print(f"{'case':<22}{'n':>9}{'hypatia us':>12}{'numpy us':>10}{'ratio':>7}")
    for n in [int(s) for s in args.sizes.split(",")]:
        a16 = np.random.default_rng(0).standard_normal(n).astype(np.float16)
        a32 = a16.astype(np.float32)
        b16 = np.random.default_rng(1).uniform(-1, 1, n).astype(np.float16)
        rows = [("f16 -> f32", up, (a16,), lambda: a16.astype(np.float32)),
                ("f32 -> f16", down, (a32,), lambda: a32.astype(np.float16)),
                ("x * 2 + 1 (float16)", ew16, (a16,), lambda: a16 * two + one),
                ("tanh(x*y)+x (float16)", tanh16, (a16, b16), lambda: np.tanh(a16 * b16) + a16),
                ("sum(x*y) (float16)", dot16, (a16, b16), lambda: (a16 * b16).sum())]
        for name, f, fargs, ref in rows:
            h, r = best(lambda: f(*fargs), n), best(ref, n)
            print(f"{name:<22}{n:>9}{h * 1e6:>12.1f}{r * 1e6:>10.1f}{h / r:>7.2f}")
        h32 = best(lambda: ew32(a32), n)
        print(f"{'x * 2 + 1 (float32)':<22}{n:>9}{h32 * 1e6:>12.1f}{'':>10}{'':>7}")


if __name__ == "__main__":
    main()
