"""Seed 001: exp over a shared vector of 230,400 elements, 1000 calls, with and without
Out(borrow=True), beside numpy (Theano's "Using the GPU" check program); float32 as in the
tutorial, then float64 (a fresh output each call should cost no more than numpy's own np.exp).

    .venv/bin/python examples/python/seed001_exp.py [iterations]
"""
import sys
import time

import numpy

import hypatia as theano
import hypatia.tensor as T
from hypatia import Out, config, function, shared


def main(iters=1000):
    for dtype in ("float32", "float64"):
        print(f"-- {dtype}")
        run(iters, dtype)


def run(iters, dtype):
    vlen = 10 * 30 * 768  # 10 x #cores x #threads per core
    rng = numpy.random.RandomState(22)
    x = shared(numpy.asarray(rng.rand(vlen), dtype), name="x")
    xv = x.get_value()

    t0 = time.perf_counter()
    for _ in range(iters):
        r = numpy.exp(xv)
    base = time.perf_counter() - t0
    print(f"numpy.exp:                   looping {iters} times took {base:.4f} s ({1e6 * base / iters:6.1f} us per call)")

    for borrow in (False, True):
        f = function([], Out(T.exp(x), borrow=borrow))
        if not borrow:
            print(f.maker.fgraph.toposort())
        f()
        t0 = time.perf_counter()
        for _ in range(iters):
            r = f()
        s = time.perf_counter() - t0
        label = "hypatia exp, Out(borrow=True)" if borrow else "hypatia exp:"
        print(f"{label:<28} looping {iters} times took {s:.4f} s ({1e6 * s / iters:6.1f} us per call, "
              f"{s / base:.2f}x numpy)")
        print("  Result is", r)
        numpy.testing.assert_allclose(r, numpy.exp(xv), rtol=1e-6 if dtype == "float32" else 1e-15)
    if numpy.any([isinstance(n.op, T.Elemwise) for n in f.maker.fgraph.toposort()]):
        print(f"Used the cpu (floatX={config.floatX})")


if __name__ == "__main__":
    main(*[int(a) for a in sys.argv[1:2]])
