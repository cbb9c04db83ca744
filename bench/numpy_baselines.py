"""numpy timings of the benchmarked expressions, and Hypatia's time over numpy's.

Usage: numpy_baselines.py [benchmark.json ...]  (Google Benchmark JSON files from the C++ programs)
"""
import json
import sys
import timeit

import numpy as np

UNIT_NS = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}


def best_ns(fn, min_time=1.0):
    """Best per-call time in ns over three repeats of a loop lasting about min_time / 3 seconds each."""
    timer = timeit.Timer(fn)
    n, t = timer.autorange()
    number = max(1, int(n * (min_time / 3) / max(t, 1e-9)))
    return min(timer.repeat(repeat=3, number=number)) / number * 1e9


def numpy_timings():
    rng = np.random.default_rng(0)
    n = 1000
    m, x, b = (rng.uniform(-1, 1, (n, n)).astype(np.float32) for _ in range(3))
    v = rng.uniform(0, 1, 10 * 30 * 768).astype(np.float32)
    big = 16 * 1024 * 1024
    a, bb, c, d = (rng.uniform(-1, 1, big).astype(np.float32) for _ in range(4))
    one = np.full(1, 2.0, dtype=np.float32)
    t_exp = best_ns(lambda: np.exp(v))
    t_add = best_ns(lambda: one + 1)
    return {
        "seed000 dot(m, x) + b (1000x1000 float32)": ("BM_seed000_m_b_shared/real_time",
                                                      best_ns(lambda: np.dot(m, x) + b, 2.0)),
        "seed001 exp (230,400 float32)": ("BM_exp_hypatia/real_time", t_exp),
        "seed001 exp, Function::call (no allocation)": ("BM_exp_hypatia_call/real_time", t_exp),
        "x + 1 (1 float32), operator()": ("BM_call_overhead_operator/real_time", t_add),
        "x + 1 (1 float32), Function::call": ("BM_call_overhead_call/real_time", t_add),
        "six-op chain tanh(exp(x*0.5+0.25)-1.5)*2 (16M)": ("BM_chain6_fused/real_time",
                                                           best_ns(lambda: np.tanh(np.exp(a * np.float32(0.5) + np.float32(0.25)) - np.float32(1.5)) * np.float32(2), 2.0)),
        "tanh(a*b + c) - exp(d) (16M float32)": ("BM_fused_tanh_exp/real_time",
                                                 best_ns(lambda: np.tanh(a * bb + c) - np.exp(d), 2.0)),
    }


def main(paths):
    hyp = {}
    for p in paths:
        with open(p) as f:
            for r in json.load(f).get("benchmarks", []):
                if r.get("run_type", "iteration") == "iteration":
                    ns = r["real_time"] * UNIT_NS[r["time_unit"]]
                    name = r.get("run_name", r["name"])
                    hyp[name] = min(ns, hyp.get(name, ns))
    print(f"numpy {np.__version__}")
    print(f"{'expression':44s} {'numpy':>12s} {'hypatia':>12s} {'hypatia/numpy':>14s}")
    for label, (bench, ns) in numpy_timings().items():
        h = hyp.get(bench)
        hs = f"{h / 1e3:10.1f}us" if h is not None else f"{'-':>12s}"
        ratio = f"{h / ns:14.3f}" if h is not None else f"{'-':>14s}"
        print(f"{label:44s} {ns / 1e3:10.1f}us {hs} {ratio}")


if __name__ == "__main__":
    main(sys.argv[1:])
