"""Seed 000: y = m.x + b on 1000x1000 float32 matrices in a tight loop, in the four variants of the
blog post (numpy; every input passed; m and b shared; everything shared with an update of y),
each timed beside numpy.

    .venv/bin/python examples/python/seed000_linear.py [n] [iterations]
"""
import sys
import time

import numpy as np

import hypatia as theano
import hypatia.tensor as T


def timed(label, step, iters, baseline=None):
    step()  # warm up (first-call allocations)
    t0 = time.perf_counter()
    for _ in range(iters):
        step()
    s = time.perf_counter() - t0
    ratio = f"  ({s / baseline:.2f}x numpy)" if baseline else ""
    print(f"{label:<34} {s:7.3f} s  {1e3 * s / iters:7.2f} ms/iteration{ratio}")
    return s


def main(n=1000, iters=30):
    rng = np.random.RandomState(123)
    m = rng.randn(n, n).astype("float32")
    x = rng.randn(n, n).astype("float32")
    b = rng.randn(n, n).astype("float32")
    print(f"y = m.x + b, {n}x{n} float32, {iters} iterations")

    base = timed("numpy np.add(np.dot(m, x), b)", lambda: np.add(np.dot(m, x), b), iters)

    # 1. Every input passed on each call.
    tm, tx, tb = T.matrix("m", dtype="float32"), T.matrix("x", dtype="float32"), T.matrix("b", dtype="float32")
    line = theano.function(inputs=[tx, tm, tb], outputs=[T.add(T.dot(tm, tx), tb)])
    y_all, = line(x, m, b)
    timed("hypatia, all inputs passed", lambda: line(x, m, b), iters, base)

    # 2. m and b shared: only x is passed.
    sm, sb = theano.shared(m, name="m"), theano.shared(b, name="b")
    line_shared = theano.function(inputs=[tx], outputs=[T.add(T.dot(sm, tx), sb)])
    timed("hypatia, m and b shared", lambda: line_shared(x), iters, base)

    # 3. Everything shared; y is updated in place of an output.
    sx = theano.shared(x, name="x")
    sy = theano.shared(np.zeros((n, n), dtype="float32"), name="y")
    train = theano.function(inputs=[], updates={sy: T.dot(sm, sx) + sb})
    timed("hypatia, all shared, update of y", train, iters, base)

    np.testing.assert_allclose(sy.get_value(), y_all, rtol=1e-4, atol=1e-3)
    np.testing.assert_allclose(y_all, m @ x + b, rtol=1e-4, atol=1e-3)
    print("results agree with numpy; the compiled graph of the last variant:")
    theano.printing.debugprint(train)


if __name__ == "__main__":
    main(*[int(a) for a in sys.argv[1:3]])
