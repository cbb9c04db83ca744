"""Hypatia beside numpy, PyTensor (its C backend) and JAX (jit, CPU), each as a ratio to Hypatia's
time measured in the same run (best of N repetitions).

    make bench-compare            (scripts/setup_bench_env.sh creates .venv-bench, then runs this)
    .venv-bench/bin/python bench/python/compare_frameworks.py [--threads N] [--reps N] [--cold-reps N]

Cases (the same graphs as bench/bench_optimizer.cpp and bench/bench_exp.cpp):
  a. compile time of a 784-500-500-10 MLP training function (tanh hidden layers, softmax +
     categorical cross-entropy on int labels, L2 weight decay 1e-4, gradients, SGD updates of shared
     W/b with learning rate 0.01); the graph and its gradients are built before the clock starts;
  b. compile time of the 200-node elementwise graph of bench_optimizer.cpp (40 x
     h = tanh(dot(h, w) * 0.5 + h) - exp(h * 0.1));
  c. one training step of that MLP, batch 256, float32, shared variables updated in place;
  d. the six-op chain tanh(exp(x * 0.5 + 0.25) - 1.5) * 2 over 16M float32, and exp over 230,400
     float32 (seed 001).

How each framework is run:
  - Hypatia: hypatia.function, default mode (FAST_RUN); there is no C compilation step and no cache.
  - PyTensor: mode FAST_RUN with linker=cvm (its C backend; PyTensor 3's FAST_RUN would otherwise
    pick Numba), floatX=float32, BLAS = the system OpenBLAS (-lopenblas, the same library as
    Hypatia), openmp=True when more than one thread. Compile times are measured in a subprocess
    (import and graph building excluded): "cold" with a fresh temporary compiledir (every C module
    compiled by the C++ compiler), "warm" in a new process on the compiledir the first cold compile
    filled (modules loaded from the cache). The run-time cases reuse case a's compiledir.
  - JAX: jax.jit on CPU, float32, no persistent compilation cache; compile time is
    jax.jit(f).lower(*args).compile() of a fresh function object (the trace includes jax.grad);
    run times after warm-up, with block_until_ready; the training step donates its parameters
    (donate_argnums=0).
  - numpy: the same expressions; for the training step a hand-written forward and backward pass
    with in-place updates. numpy's wheel brings its own OpenBLAS build.

Run times are the best of --reps repetitions of about --min-time seconds each; the repetitions of
the frameworks are interleaved (one of each per round), so that a change in the machine's load
reaches all of them alike.

Threads: --threads N (default: all cores) sets OMP_NUM_THREADS, OPENBLAS_NUM_THREADS,
MKL_NUM_THREADS and hypatia.config.num_threads before anything is imported. XLA's CPU client sizes
its intra-op pool to the machine's cores and has no flag for another count; with --threads 1 it is
made single-threaded (--xla_cpu_multi_thread_eigen=false). OMP_WAIT_POLICY is left as the caller
set it (printed): on a machine shared with other work, libgomp's default spin-waiting makes the
multi-threaded OpenMP rows (Hypatia, PyTensor with openmp, the system OpenBLAS) several times slower,
so compare those on a quiet machine, or also run with --threads 1.
"""
import argparse
import atexit
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import timeit

MLP_SIZES = (784, 500, 500, 10)
BATCH = 256
LR = 0.01
L2 = 1e-4
CHAIN_LEN = 16 * 1024 * 1024
EXP_LEN = 10 * 30 * 768
GRAPH200_SHAPE = (64, 64)  # JAX needs concrete shapes to compile; the others compile shape-free


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--threads", type=int, default=os.cpu_count(), help="threads for every library (default: all cores)")
    p.add_argument("--reps", type=int, default=5, help="repetitions; each row is the best (default 5)")
    p.add_argument("--cold-reps", type=int, default=2,
                   help="PyTensor cold compiles, each in a fresh compiledir (default 2; each takes seconds to minutes)")
    p.add_argument("--min-time", type=float, default=0.2, help="seconds per run-time repetition (default 0.2)")
    p.add_argument("--cases", default="abcd", help="which cases to run, e.g. 'cd' (default abcd)")
    p.add_argument("--no-pytensor", action="store_true")
    p.add_argument("--no-jax", action="store_true")
    p.add_argument("--keep-compiledir", action="store_true", help="keep PyTensor's temporary compiledirs")
    # Internal: one PyTensor compile in a subprocess (its own compiledir, set in PYTENSOR_FLAGS).
    p.add_argument("--pytensor-compile-worker", choices=["mlp", "graph200"], help=argparse.SUPPRESS)
    return p.parse_args(argv)


def thread_env(threads):
    """The thread settings every library reads at import; the same for all, set before any import."""
    env = {
        "OMP_NUM_THREADS": str(threads),
        "OPENBLAS_NUM_THREADS": str(threads),
        "MKL_NUM_THREADS": str(threads),
        "JAX_PLATFORMS": "cpu",
    }
    if threads == 1:
        env["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " --xla_cpu_multi_thread_eigen=false").strip()
    return env


def pytensor_flags(compiledir, threads):
    return ",".join([
        f"compiledir={compiledir}",
        "mode=FAST_RUN",
        "linker=cvm",
        "floatX=float32",
        "blas__ldflags=-lopenblas",
        f"openmp={threads > 1}",
        "openmp_elemwise_minsize=200000",  # Hypatia's default too
    ])


# ---------------------------------------------------------------------------------------------
# Timing


def race(entries, reps, min_time):
    """Best per-call seconds of each (label, fn) entry. The repetitions are interleaved (one of each
    entry per round, the order rotating), so that a change in the machine's load between rounds
    reaches every framework alike rather than whichever happened to run then."""
    timers, numbers = [], []
    for _, fn in entries:
        timer = timeit.Timer(fn)
        n, t = timer.autorange()  # also the warm-up
        timers.append(timer)
        numbers.append(max(1, int(n * min_time / max(t, 1e-9))))
    best = [float("inf")] * len(entries)
    for r in range(reps):
        for k in range(len(entries)):
            i = (k + r) % len(entries)
            best[i] = min(best[i], timers[i].timeit(numbers[i]) / numbers[i])
    return dict(zip((label for label, _ in entries), best))


def best_single(make_and_time, reps):
    """Best of `reps` calls of make_and_time(), which returns the seconds of one timed operation."""
    return min(make_and_time() for _ in range(reps))


def fmt_time(s):
    if s is None:
        return "-"
    if s < 1e-3:
        return f"{s * 1e6:.1f} us"
    if s < 1:
        return f"{s * 1e3:.2f} ms"
    return f"{s:.2f} s"


# ---------------------------------------------------------------------------------------------
# Graphs. Hypatia and PyTensor share Theano's API; `lib` is the package, `T` its tensor module.


def init_params(seed=1):
    import numpy as np

    rng = np.random.default_rng(seed)
    params = []
    for l in range(3):
        w = rng.uniform(-0.05, 0.05, (MLP_SIZES[l], MLP_SIZES[l + 1])).astype(np.float32)
        params += [w, np.zeros(MLP_SIZES[l + 1], np.float32)]
    return params


def batch_data(seed=3):
    import numpy as np

    rng = np.random.default_rng(seed)
    x = rng.uniform(0, 1, (BATCH, MLP_SIZES[0])).astype(np.float32)
    y = (np.arange(BATCH) % 10).astype(np.int64)
    return x, y


def theano_mlp(lib, T, softmax, xent, values):
    """Inputs, cost and SGD updates of the MLP in Theano's API over shared variables holding `values`."""
    import numpy as np

    x = T.matrix("x", dtype="float32")
    y = T.vector("y", dtype="int64")
    params = [lib.shared(v.copy(), name=f"{'Wb'[i % 2]}{i // 2}") for i, v in enumerate(values)]
    h = x
    l2 = None
    for l in range(3):
        w, b = params[2 * l], params[2 * l + 1]
        a = T.dot(h, w) + b
        h = T.tanh(a) if l < 2 else softmax(a)
        sq = T.sum(T.sqr(w))
        l2 = sq if l2 is None else l2 + sq
    cost = T.mean(xent(h, y)) + l2 * np.float32(L2)
    grads = T.grad(cost, params)
    updates = [(p, p - g * np.float32(LR)) for p, g in zip(params, grads)]
    return [x, y], cost, updates, params


def theano_graph200(T):
    import numpy as np

    x = T.matrix("x", dtype="float32")
    w = T.matrix("w", dtype="float32")
    h = x
    for _ in range(40):  # 5 nodes + constants each, as in bench_optimizer.cpp
        h = T.tanh(T.dot(h, w) * np.float32(0.5) + h) - T.exp(h * np.float32(0.1))
    return [x, w], h


def chain6(x, tanh, exp):
    import numpy as np

    return tanh(exp(x * np.float32(0.5) + np.float32(0.25)) - np.float32(1.5)) * np.float32(2)


def hypatia_api():
    import hypatia
    import hypatia.tensor as T

    return hypatia, T, T.nnet.softmax, T.nnet.categorical_crossentropy


def pytensor_api():
    import pytensor
    import pytensor.tensor as pt
    from pytensor.tensor.special import softmax

    def categorical_crossentropy(p, y):
        # Theano's categorical_crossentropy for integer labels (PyTensor removed tensor.nnet).
        return -pt.log(p[pt.arange(y.shape[0]), y])

    return pytensor, pt, lambda a: softmax(a, axis=-1), categorical_crossentropy


def jax_mlp_step():
    """A fresh (not yet traced) jitted SGD step over a list of parameters."""
    import jax
    import jax.numpy as jnp

    def loss(params, x, y):
        h = x
        l2 = 0.0
        for l in range(3):
            w, b = params[2 * l], params[2 * l + 1]
            a = h @ w + b
            h = jnp.tanh(a) if l < 2 else jax.nn.log_softmax(a)
            l2 = l2 + jnp.sum(w * w)
        return -jnp.mean(h[jnp.arange(x.shape[0]), y]) + L2 * l2

    def step(params, x, y):
        cost, g = jax.value_and_grad(loss)(params, x, y)
        return [p - LR * gp for p, gp in zip(params, g)], cost

    return jax.jit(step, donate_argnums=0)


def jax_graph200():
    import jax
    import jax.numpy as jnp

    def f(x, w):
        h = x
        for _ in range(40):
            h = jnp.tanh(jnp.dot(h, w) * 0.5 + h) - jnp.exp(h * 0.1)
        return h

    return jax.jit(f)


def numpy_mlp_step(params):
    """One SGD step of the MLP by hand in numpy (forward, backward, in-place updates); returns the cost."""
    import numpy as np

    lr, l2 = np.float32(LR), np.float32(L2)

    def step(x, y):
        n = x.shape[0]
        hs = [x]
        h = x
        for l in range(2):
            h = np.tanh(h @ params[2 * l] + params[2 * l + 1])
            hs.append(h)
        a = h @ params[4] + params[5]
        a -= a.max(axis=1, keepdims=True)
        p = np.exp(a)
        p /= p.sum(axis=1, keepdims=True)
        rows = np.arange(n)
        cost = -np.log(p[rows, y]).mean() + l2 * sum(np.vdot(params[2 * l], params[2 * l]) for l in range(3))
        d = p
        d[rows, y] -= 1
        d *= np.float32(1.0 / n)
        for l in (2, 1, 0):
            w, b = params[2 * l], params[2 * l + 1]
            gw = hs[l].T @ d
            gw += (2 * l2) * w
            gb = d.sum(axis=0)
            if l > 0:
                d = d @ w.T
                d *= 1 - hs[l] * hs[l]
            w -= lr * gw
            b -= lr * gb
        return cost

    return step


# ---------------------------------------------------------------------------------------------
# PyTensor compile times, in subprocesses with their own compiledir


def pytensor_compile_worker(which):
    """Builds the graph, then times pytensor.function alone; prints one JSON line."""
    t0 = time.perf_counter()
    import pytensor

    t_import = time.perf_counter() - t0
    lib, T, softmax, xent = pytensor_api()
    if which == "mlp":
        inputs, cost, updates, _ = theano_mlp(lib, T, softmax, xent, init_params())
        t0 = time.perf_counter()
        f = pytensor.function(inputs, cost, updates=updates)
    else:
        inputs, out = theano_graph200(T)
        t0 = time.perf_counter()
        f = pytensor.function(inputs, out)
    s = time.perf_counter() - t0
    print(json.dumps({"seconds": s, "import_seconds": t_import, "linker": type(f.maker.linker).__name__,
                      "nodes": len(f.maker.fgraph.apply_nodes)}))


def pytensor_compile_subprocess(which, compiledir, threads):
    env = dict(os.environ)
    env.update(thread_env(threads))
    env["PYTENSOR_FLAGS"] = pytensor_flags(compiledir, threads)
    r = subprocess.run([sys.executable, os.path.abspath(__file__), "--threads", str(threads),
                        "--pytensor-compile-worker", which], env=env, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"PyTensor compile worker failed:\n{r.stdout}\n{r.stderr}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def pytensor_compile_times(which, args, tmp):
    """Best cold and best warm seconds, and the compiledir that the first cold compile filled.

    Each cold compile runs in a fresh compiledir; the warm ones reuse the first cold one's."""
    cold, dirs = [], []
    for i in range(max(1, args.cold_reps)):
        d = os.path.join(tmp, f"{which}-cold{i}")
        r = pytensor_compile_subprocess(which, d, args.threads)
        print(f"    (pytensor cold compile {i + 1}: {fmt_time(r['seconds'])}; import pytensor "
              f"{fmt_time(r['import_seconds'])}; {r['nodes']} nodes, {r['linker']})", flush=True)
        cold.append(r["seconds"])
        dirs.append(d)
    warm = [pytensor_compile_subprocess(which, dirs[0], args.threads)["seconds"] for _ in range(args.reps)]
    if not args.keep_compiledir:
        for d in dirs[1:]:
            shutil.rmtree(d, ignore_errors=True)
    return min(cold), min(warm), dirs[0]


_PYTENSOR_DIR = []  # the compiledir of this process's PyTensor, fixed at its import


def import_pytensor(args, tmp, compiledir=None):
    """Imports PyTensor in this process with our flags; the compiledir is one that case a filled
    (its modules are the training step's) when case a ran, else a fresh one."""
    if "pytensor" not in sys.modules:
        d = compiledir or os.path.join(tmp, "main")
        os.environ["PYTENSOR_FLAGS"] = pytensor_flags(d, args.threads)
        _PYTENSOR_DIR.append(d)
        import pytensor

        c = pytensor.config
        print(f"  pytensor {pytensor.__version__}: mode={c.mode} linker={c.linker} floatX={c.floatX} "
              f"blas__ldflags={c.blas__ldflags!r} openmp={c.openmp} (minsize {c.openmp_elemwise_minsize}) "
              f"cxx={c.cxx} gcc__cxxflags={c.gcc__cxxflags!r}; compiledir {d}", flush=True)
    import pytensor

    return pytensor


# ---------------------------------------------------------------------------------------------
# Cases


class Table:
    def __init__(self):
        self.rows = []  # (case, framework, how, seconds, hypatia seconds)

    def add(self, case, framework, how, seconds, ref):
        self.rows.append((case, framework, how, seconds, ref))
        ratio = f"{seconds / ref:10.2f}x" if seconds is not None and ref else f"{'-':>11s}"
        print(f"  {framework:<9s} {how:<58s} {fmt_time(seconds):>10s} {ratio}", flush=True)

    def markdown(self):
        lines = ["| case | framework | how | time | / Hypatia |", "|---|---|---|---|---|"]
        for case, fw, how, s, ref in self.rows:
            ratio = f"{s / ref:.2f}" if s is not None and ref else "-"
            lines.append(f"| {case} | {fw} | {how} | {fmt_time(s)} | {ratio} |")
        return "\n".join(lines)


def case_compile_mlp(args, tab, tmp, dirs):
    import numpy as np

    print("\n== a. compile time, 784-500-500-10 MLP training function (graph and T.grad built before the clock) ==")
    lib, T, softmax, xent = hypatia_api()
    values = init_params()

    def hyp_once():
        inputs, cost, updates, _ = theano_mlp(lib, T, softmax, xent, values)
        t0 = time.perf_counter()
        lib.function(inputs, cost, updates=updates)
        return time.perf_counter() - t0

    ref = best_single(hyp_once, args.reps)
    case = "a. compile MLP train"
    tab.add(case, "hypatia", "hypatia.function (FAST_RUN)", ref, ref)
    if not args.no_pytensor:
        cold, warm, dirs["mlp"] = pytensor_compile_times("mlp", args, tmp)
        tab.add(case, "pytensor", f"pytensor.function, C backend, cold cache (best of {max(1, args.cold_reps)})", cold, ref)
        tab.add(case, "pytensor", "pytensor.function, C backend, warm cache", warm, ref)
    if not args.no_jax:
        import jax

        x, y = batch_data()
        xj, yj = jax.numpy.asarray(x), jax.numpy.asarray(y.astype(np.int32))
        pj = [jax.numpy.asarray(v) for v in values]
        lower, comp = [], []
        for _ in range(args.reps):
            t0 = time.perf_counter()
            lowered = jax_mlp_step().lower(pj, xj, yj)
            t1 = time.perf_counter()
            lowered.compile()
            t2 = time.perf_counter()
            lower.append(t1 - t0)
            comp.append(t2 - t1)
        tab.add(case, "jax", "jax.jit(step).lower(...).compile() (trace incl. grad)",
                min(a + b for a, b in zip(lower, comp)), ref)
        tab.add(case, "jax", "  of which .compile() (XLA) alone", min(comp), ref)


def case_compile_graph200(args, tab, tmp, dirs):
    import numpy as np

    print("\n== b. compile time, 200-node elementwise graph (40 x tanh(dot(h, w) * 0.5 + h) - exp(h * 0.1)) ==")
    lib, T, _, _ = hypatia_api()

    def hyp_once():
        inputs, out = theano_graph200(T)
        t0 = time.perf_counter()
        lib.function(inputs, out)
        return time.perf_counter() - t0

    ref = best_single(hyp_once, args.reps)
    case = "b. compile 200 nodes"
    tab.add(case, "hypatia", "hypatia.function (FAST_RUN)", ref, ref)
    if not args.no_pytensor:
        cold, warm, _ = pytensor_compile_times("graph200", args, tmp)
        tab.add(case, "pytensor", f"pytensor.function, C backend, cold cache (best of {max(1, args.cold_reps)})", cold, ref)
        tab.add(case, "pytensor", "pytensor.function, C backend, warm cache", warm, ref)
    if not args.no_jax:
        import jax

        a = jax.numpy.asarray(np.zeros(GRAPH200_SHAPE, np.float32))

        def jax_once():
            t0 = time.perf_counter()
            jax_graph200().lower(a, a).compile()
            return time.perf_counter() - t0

        tab.add(case, "jax", f"jax.jit(f).lower(...).compile(), {GRAPH200_SHAPE[0]}x{GRAPH200_SHAPE[1]} inputs",
                best_single(jax_once, args.reps), ref)


def case_mlp_step(args, tab, tmp, dirs):
    import numpy as np

    print(f"\n== c. one MLP training step, batch {BATCH}, float32, parameters updated in place ==")
    values = init_params(seed=2)
    x, y = batch_data()
    costs = {}
    lib, T, softmax, xent = hypatia_api()
    inputs, cost, updates, _ = theano_mlp(lib, T, softmax, xent, values)
    f_hyp = lib.function(inputs, cost, updates=updates)
    costs["hypatia"] = float(f_hyp(x, y))
    np_params = [v.copy() for v in values]
    np_step = numpy_mlp_step(np_params)
    costs["numpy"] = float(np_step(x, y))
    if not args.no_pytensor:
        import_pytensor(args, tmp, dirs.get("mlp"))
        ptlib, ptT, ptsoftmax, ptxent = pytensor_api()
        inputs, cost, updates, _ = theano_mlp(ptlib, ptT, ptsoftmax, ptxent, values)
        f_pt = ptlib.function(inputs, cost, updates=updates)
        costs["pytensor"] = float(f_pt(x, y))
    if not args.no_jax:
        import jax

        step = jax_mlp_step()
        state = {"p": [jax.numpy.asarray(v) for v in values]}
        xj, yj = jax.device_put(x), jax.device_put(y.astype(np.int32))

        def jax_call():
            state["p"], c = step(state["p"], xj, yj)
            c.block_until_ready()
            return c

        costs["jax"] = float(jax_call())
    print("  first-step costs from the same initial parameters (should agree to ~1e-6): "
          + ", ".join(f"{k} {v:.7f}" for k, v in costs.items()))
    entries = [("hypatia", lambda: f_hyp(x, y)), ("numpy", lambda: np_step(x, y))]
    if not args.no_pytensor:
        entries.append(("pytensor", lambda: f_pt(x, y)))
    if not args.no_jax:
        entries.append(("jax", jax_call))
    t = race(entries, args.reps, args.min_time)
    case, ref = "c. MLP train step", t["hypatia"]
    how = {"hypatia": "function([x, y], cost, updates=...)",
           "numpy": "hand-written forward + backward, in-place updates",
           "pytensor": "function(..., updates=...), C backend",
           "jax": "jit(step, donate_argnums=0), block_until_ready"}
    for fw, _ in entries:
        tab.add(case, fw, how[fw], t[fw], ref)


def case_elementwise(args, tab, tmp, dirs):
    import numpy as np

    rng = np.random.default_rng(1)
    xs = rng.uniform(-1, 1, CHAIN_LEN).astype(np.float32)
    xe = rng.uniform(0, 1, EXP_LEN).astype(np.float32)
    lib, T, _, _ = hypatia_api()
    if not args.no_pytensor:
        pytensor = import_pytensor(args, tmp, dirs.get("mlp"))
        import pytensor.tensor as pt
    if not args.no_jax:
        import jax
        import jax.numpy as jnp

    for label, case, data, expr, npexpr in [
        ("d. six-op chain tanh(exp(x * 0.5 + 0.25) - 1.5) * 2, 16M float32 (shared x)", "d. chain6 16M",
         xs, lambda x, M: chain6(x, M.tanh, M.exp), lambda x: chain6(x, np.tanh, np.exp)),
        ("d. exp, 230,400 float32 (seed 001, shared x)", "d. exp 230,400", xe, lambda x, M: M.exp(x), np.exp),
    ]:
        print(f"\n== {label} ==")
        want = npexpr(data)
        f_hyp = lib.function([], expr(lib.shared(data, name="x", borrow=True), T))
        np.testing.assert_allclose(f_hyp(), want, rtol=2e-6, atol=2e-6)
        entries = [("hypatia", f_hyp), ("numpy", lambda: npexpr(data))]
        if not args.no_pytensor:
            f_pt = pytensor.function([], expr(pytensor.shared(data, name="x", borrow=True), pt))
            np.testing.assert_allclose(f_pt(), want, rtol=2e-6, atol=2e-6)
            entries.append(("pytensor", f_pt))
        if not args.no_jax:
            f_jax = jax.jit(lambda x: expr(x, jnp))
            xj = jax.device_put(data)
            np.testing.assert_allclose(np.asarray(f_jax(xj)), want, rtol=2e-6, atol=2e-6)
            entries.append(("jax", lambda: f_jax(xj).block_until_ready()))
        t = race(entries, args.reps, args.min_time)
        ref = t["hypatia"]
        how = {"hypatia": "function([], f(x))", "numpy": "the same expression",
               "pytensor": "function([], f(x)), C backend", "jax": "jit(f)(x).block_until_ready()"}
        for fw, _ in entries:
            tab.add(case, fw, how[fw], t[fw], ref)


# ---------------------------------------------------------------------------------------------


def describe(args):
    import platform

    import numpy as np

    import hypatia

    print(f"python {platform.python_version()}, {os.cpu_count()} cores ({platform.processor() or platform.machine()}), "
          f"load average {' '.join(f'{v:.2f}' for v in os.getloadavg())}")
    print(f"threads: {args.threads} (OMP_NUM_THREADS={os.environ['OMP_NUM_THREADS']}, "
          f"OPENBLAS_NUM_THREADS={os.environ['OPENBLAS_NUM_THREADS']}, MKL_NUM_THREADS={os.environ['MKL_NUM_THREADS']}, "
          f"hypatia.config.num_threads={hypatia.config.num_threads}, "
          f"OMP_WAIT_POLICY={os.environ.get('OMP_WAIT_POLICY', '<unset>')}); XLA: "
          + ("single-threaded (--xla_cpu_multi_thread_eigen=false)" if args.threads == 1
             else f"its own intra-op pool, {os.cpu_count()} threads (not settable)"))
    blas = np.__config__.CONFIG.get("Build Dependencies", {}).get("blas", {})
    print(f"hypatia {hypatia.__version__} ({os.path.dirname(hypatia.__file__)}), "
          f"openmp_elemwise_minsize={hypatia.config.openmp_elemwise_minsize}")
    print(f"numpy {np.__version__} (BLAS: {blas.get('name', '?')} {blas.get('version', '')})")
    if not args.no_pytensor:
        from importlib.metadata import version

        # Imported later (import_pytensor), once its compiledir is known.
        print(f"pytensor {version('pytensor')}: PYTENSOR_FLAGS={pytensor_flags('<per run>', args.threads)}")
    if not args.no_jax:
        import jax
        import jaxlib

        jax.config.update("jax_enable_compilation_cache", False)
        print(f"jax {jax.__version__}, jaxlib {jaxlib.__version__}, devices {jax.devices()}, "
              f"x64={jax.config.jax_enable_x64}, persistent compilation cache off, "
              f"XLA_FLAGS={os.environ.get('XLA_FLAGS', '')!r}")
    print(f"best of {args.reps} repetitions ({args.min_time:.1f} s each for run times); "
          f"PyTensor cold compiles: best of {max(1, args.cold_reps)}; ratio = time / Hypatia's time in this run")


def main():
    args = parse_args()
    os.environ.update(thread_env(args.threads))
    if args.pytensor_compile_worker:
        pytensor_compile_worker(args.pytensor_compile_worker)
        return
    tmp = tempfile.mkdtemp(prefix="hypatia-bench-compare-")
    dirs = {}  # PyTensor compiledirs that case a or b filled
    # Registered before PyTensor is imported, so that it runs after PyTensor's own exit handlers
    # (which still read the compiledir).
    if args.keep_compiledir:
        atexit.register(print, f"PyTensor compiledirs kept under {tmp}")
    else:
        atexit.register(shutil.rmtree, tmp, True)
    import hypatia

    hypatia.config.num_threads = args.threads
    describe(args)
    tab = Table()
    print(f"\n  {'framework':<9s} {'how':<58s} {'time':>10s} {'/ hypatia':>11s}")
    if "a" in args.cases:
        case_compile_mlp(args, tab, tmp, dirs)
    if "b" in args.cases:
        case_compile_graph200(args, tab, tmp, dirs)
    if "c" in args.cases:
        case_mlp_step(args, tab, tmp, dirs)
    if "d" in args.cases:
        case_elementwise(args, tab, tmp, dirs)
    print("\n" + tab.markdown())


if __name__ == "__main__":
    main()
