"""Random draws: MRG_RandomStreams (Theano 1.0's MRG31k3p, bit for bit) against numpy in the same
run: numpy's Generator (PCG64, the fastest numpy has) and its legacy RandomState (MT19937, what
Theano's RandomStreams drew with), and JAX's jax.random when it is installed (make bench-compare's
environment). Each time is the minimum over repeats; ratio = Hypatia / numpy Generator (below 1:
faster). Hypatia's functions write into the same output each call (Out(borrow=True)), as a
training loop that feeds the draws onward would.

Usage: bench_random.py [--n 10000000]
"""
import argparse
import timeit

import numpy as np

import hypatia
from hypatia.sandbox.rng_mrg import MRG_RandomStreams
from hypatia.tensor.shared_randomstreams import RandomStreams


def best(fn, budget=1.0, repeats=7):
    timer = timeit.Timer(fn)
    fn()
    number = max(1, int(budget / repeats / max(timer.timeit(1), 1e-7)))
    return min(timer.repeat(repeats, number)) / number


def jax_draws(n):
    try:
        import jax
        import jax.numpy as jnp
    except ImportError:
        return {}
    key = jax.random.PRNGKey(0)
    u = jax.jit(lambda k: jax.random.uniform(k, (n,), dtype=jnp.float32))
    z = jax.jit(lambda k: jax.random.normal(k, (n,), dtype=jnp.float32))
    return {"uniform": lambda: u(key).block_until_ready(), "normal": lambda: z(key).block_until_ready()}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=10_000_000)
    args = ap.parse_args()
    n = args.n
    srng = MRG_RandomStreams(1234)
    fu = hypatia.function([], hypatia.Out(srng.uniform((n,), dtype="float32"), borrow=True))
    fz = hypatia.function([], hypatia.Out(srng.normal((n,), dtype="float32"), borrow=True))
    rsng = RandomStreams(1234)  # numpy's RandomState algorithms (MT19937), in C++
    ru = hypatia.function([], hypatia.Out(rsng.uniform((n,), dtype="float32"), borrow=True))
    rz = hypatia.function([], hypatia.Out(rsng.normal((n,), dtype="float32"), borrow=True))
    gen = np.random.default_rng(0)
    rs = np.random.RandomState(0)
    out = np.empty(n, dtype=np.float32)
    jx = jax_draws(n)
    cases = [
        ("MRG uniform f32", fu, lambda: gen.random(n, dtype=np.float32, out=out), lambda: rs.random_sample(n),
         jx.get("uniform")),
        ("MRG normal f32", fz, lambda: gen.standard_normal(n, dtype=np.float32, out=out),
         lambda: rs.standard_normal(n), jx.get("normal")),
    ]
    cases += [
        ("RS uniform f32", ru, lambda: gen.random(n, dtype=np.float32, out=out), lambda: rs.random_sample(n), None),
        ("RS normal f32", rz, lambda: gen.standard_normal(n, dtype=np.float32, out=out),
         lambda: rs.standard_normal(n), None),
    ]
    print(f"n = {n:,}; times in ms; MRG: MRG_RandomStreams, RS: RandomStreams (RandomState's numbers)")
    print(f"{'case':<18}{'hypatia':>10}{'np.Generator':>14}{'np.RandomState':>16}{'jax':>8}{'ratio':>8}")
    for name, f, g, r, j in cases:
        h, tg, tr = best(f), best(g), best(r)
        tj = f"{best(j) * 1e3:8.1f}" if j else f"{'-':>8}"
        print(f"{name:<18}{h * 1e3:>10.1f}{tg * 1e3:>14.1f}{tr * 1e3:>16.1f}{tj}{h / tg:>8.2f}")


if __name__ == "__main__":
    main()
