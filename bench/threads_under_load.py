#!/usr/bin/env python3
"""Issue 9's threading benchmark: each case with num_threads=1 and the default thread count, on a
quiet machine and beside 1 and 2 spinning processes, for one or more builds (variants).

    python3 bench/threads_under_load.py                       # this tree's build/
    python3 bench/threads_under_load.py --variant new=build --variant main=/tmp/main/build \\
        --variant main-passive=/tmp/main/build:OMP_WAIT_POLICY=passive --rounds 3

A variant is LABEL=BUILD_DIR[:KEY=VALUE[:KEY=VALUE...]] (environment for its runs). Each run is one
process of BUILD_DIR/bench/bench_threads (bench/bench_threads.cpp), which prints the min and median
per-call time of --reps calls. The single-threaded runs also set OMP_NUM_THREADS=1 and
OPENBLAS_NUM_THREADS=1, so that a build whose BLAS threads on its own is single-threaded too.
Runs are interleaved (round, case, variant, thread count) so that other load on the machine hits
them alike. The table gives, per load, the median over rounds of each run's median (and the best
min): `ratio` is default / single-threaded under the same load (the issue's goal: <= 1 under load),
`vs first` the default time against the first variant's default time under the same load.
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import time

CASES = ["add1", "chain6", "sum", "sum_axis0", "softmax", "mlp", "seed000"]
LINE = re.compile(r"min_us=([0-9.]+) median_us=([0-9.]+)")


def parse_variant(text):
    label, _, rest = text.partition("=")
    parts = rest.split(":")
    env = dict(p.split("=", 1) for p in parts[1:])
    return label, parts[0], env


def run_once(build, env_extra, case, threads, reps):
    env = dict(os.environ)
    env.update(env_extra)
    if threads == 1:
        env.update(OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    prog = os.path.join(build, "bench", "bench_threads")
    out = subprocess.run([prog, case, "--threads", str(threads), "--reps", str(reps)], env=env,
                         capture_output=True, text=True, check=True).stdout
    m = LINE.search(out)
    return float(m.group(1)), float(m.group(2))


def start_spinners(n):
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]


def stop_spinners(procs):
    for p in procs:
        p.kill()
        p.wait()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--variant", action="append", help="LABEL=BUILD_DIR[:KEY=VALUE...] (default: new=build)")
    ap.add_argument("--cases", default=",".join(CASES))
    ap.add_argument("--loads", default="0,1,2", help="spinning processes per phase")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--nice", type=int, default=0,
                    help="niceness change for the runs and the spinners alike (negative: other work on the "
                         "machine disturbs less; needs root)")
    args = ap.parse_args()
    if args.nice:
        os.nice(args.nice)
    variants = [parse_variant(v) for v in (args.variant or ["new=build"])]
    cases = args.cases.split(",")
    loads = [int(x) for x in args.loads.split(",")]
    # results[(load, variant, case, threads)] = list of (min, median)
    results = {}
    t0 = time.time()
    for load in loads:
        spinners = start_spinners(load)
        try:
            time.sleep(0.5)
            for _ in range(args.rounds):
                for case in cases:
                    for label, build, env in variants:
                        for threads in (1, 0):
                            r = run_once(build, env, case, threads, args.reps)
                            results.setdefault((load, label, case, threads), []).append(r)
        finally:
            stop_spinners(spinners)
    print(f"# {time.strftime('%Y-%m-%d %H:%M')}, {time.time() - t0:.0f} s, rounds={args.rounds} reps={args.reps}, "
          f"nice {args.nice:+d}, loadavg at end {os.getloadavg()[0]:.1f}")
    first = variants[0][0]
    print("| load | case | variant | 1 thread (median / min) | default (median / min) | ratio (median / min) | vs "
          f"{first} |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for load in loads:
        for case in cases:
            for label, _, _ in variants:
                one = results[(load, label, case, 1)]
                dft = results[(load, label, case, 0)]
                one_med = statistics.median(m for _, m in one)
                dft_med = statistics.median(m for _, m in dft)
                one_min = min(m for m, _ in one)
                dft_min = min(m for m, _ in dft)
                ref = statistics.median(m for _, m in results[(load, first, case, 0)])
                print(f"| {load} | {case} | {label} | {one_med / 1e3:.2f} / {one_min / 1e3:.2f} ms | "
                      f"{dft_med / 1e3:.2f} / {dft_min / 1e3:.2f} ms | {dft_med / one_med:.2f} / "
                      f"{dft_min / one_min:.2f} | {dft_med / ref:.2f} |")


if __name__ == "__main__":
    main()
