"""numpy timings of the seed programs, printed beside Hypatia's by scripts/demo.sh."""
import sys
import time

import numpy as np


def seed000(n=1000, iters=500):
    rng = np.random.RandomState(123)
    m = rng.randn(n, n).astype("float32")
    x = rng.randn(n, n).astype("float32")
    b = rng.randn(n, n).astype("float32")
    t0 = time.perf_counter()
    for _ in range(iters):
        np.add(np.dot(m, x), b)
    print(f"numpy seed000:                {time.perf_counter() - t0:.3f} s  ({iters} iterations of {n}x{n})")


def seed001(iters=1000):
    vlen = 10 * 30 * 768
    x = np.random.RandomState(22).rand(vlen).astype("float32")
    t0 = time.perf_counter()
    for _ in range(iters):
        np.exp(x)
    s = time.perf_counter() - t0
    print(f"numpy seed001 exp: looping {iters} times took {s:.4f} s ({1e6 * s / iters:.1f} us per call)")


if __name__ == "__main__":
    which = sys.argv[1] if len(sys.argv) > 1 else "all"
    if which in ("all", "seed000"):
        seed000(*[int(a) for a in sys.argv[2:4]])
    if which in ("all", "seed001"):
        seed001()
