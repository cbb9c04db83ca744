"""Per-call overhead of a compiled one-op function beside numpy (issue 3's target: f(x) for
x + 1 on a 1-element float32 vector costs at most 1.2x numpy's np.add(x, 1) on the same input).

    .venv/bin/python examples/python/call_overhead.py
"""
import timeit

import numpy as np

import hypatia
import hypatia.tensor as T


def best_ns(stmt, env, number=200000, repeat=7):
    return min(timeit.repeat(stmt, globals=env, number=number, repeat=repeat)) / number * 1e9


def main():
    x = T.fvector("x")
    f = hypatia.function([x], x + 1)
    g = hypatia.function([x], hypatia.Out(x + 1, borrow=True))
    a = np.ones(1, dtype=np.float32)
    env = {"f": f, "g": g, "a": a, "np": np}
    rows = [("np.add(a, 1)", "numpy"), ("f(a)", "hypatia f(a)"), ("g(a)", "hypatia, Out(borrow=True)")]
    times = {label: best_ns(stmt, env) for stmt, label in rows}
    base = times["numpy"]
    for _, label in rows:
        print(f"{label:<28} {times[label]:7.0f} ns  ({times[label] / base:.2f}x np.add)")


if __name__ == "__main__":
    main()
