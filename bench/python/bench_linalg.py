"""Linear algebra beside numpy.linalg (the same OpenBLAS LAPACK underneath on Debian), as a ratio
numpy time / Hypatia time in the same run (best of --reps interleaved repetitions; > 1: Hypatia
faster): inv, solve, cholesky, eigh, svd (values), det, and inv(A) @ b written naively (which
Hypatia's rewrite turns into a solve) against numpy's naive and numpy's solve.

    .venv/bin/python bench/python/bench_linalg.py [--reps N] [--sizes 100,500]
"""
import argparse
import time

import numpy as np

import hypatia
import hypatia.tensor as T
from hypatia.tensor import nlinalg, slinalg


def best(fn, reps):
    fn()
    t = float("inf")
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        t = min(t, time.perf_counter() - t0)
    return t


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--sizes", default="100,500")
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    print(f"{'case':<48} {'hypatia':>10} {'numpy':>10} {'numpy/hyp':>9}")
    for dtype in ("float64", "float32"):
        for n in (int(s) for s in args.sizes.split(",")):
            a = (rng.uniform(-1, 1, (n, n)) + n * np.eye(n)).astype(dtype)
            p = (a @ a.T).astype(dtype)
            b = rng.uniform(-1, 1, (n, 8)).astype(dtype)
            A, B = T.matrix("A", dtype=dtype), T.matrix("B", dtype=dtype)
            cases = [
                ("inv", hypatia.function([A], nlinalg.matrix_inverse(A)), (a,), lambda: np.linalg.inv(a)),
                ("solve (n x 8)", hypatia.function([A, B], slinalg.solve(A, B)), (a, b),
                 lambda: np.linalg.solve(a, b)),
                ("cholesky", hypatia.function([A], slinalg.cholesky(A)), (p,), lambda: np.linalg.cholesky(p)),
                ("eigh", hypatia.function([A], list(nlinalg.eigh(A))), (p,), lambda: np.linalg.eigh(p)),
                ("svd values", hypatia.function([A], nlinalg.svd(A, compute_uv=False)), (a,),
                 lambda: np.linalg.svd(a, compute_uv=False)),
                ("det", hypatia.function([A], nlinalg.det(A)), (a,), lambda: np.linalg.det(a)),
                ("inv(A) @ b (rewritten to solve)", hypatia.function([A, B], T.dot(nlinalg.matrix_inverse(A), B)),
                 (a, b), lambda: np.linalg.inv(a) @ b),
            ]
            for name, f, fargs, ref in cases:
                th, tn = float("inf"), float("inf")
                for _ in range(args.reps):  # interleaved
                    th = min(th, best(lambda: f(*fargs), 1))
                    tn = min(tn, best(ref, 1))
                print(f"{name + f' {dtype} n={n}':<48} {th * 1e3:9.3f}ms {tn * 1e3:9.3f}ms {tn / th:9.2f}", flush=True)


if __name__ == "__main__":
    main()
