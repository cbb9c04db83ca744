"""Timing helper shared by the Python benchmark scripts of this folder."""
import statistics
import timeit


def timings(fn, budget=0.4, repeats=7):
    """(min, median) seconds per call of fn over `repeats` loops of about budget / repeats seconds
    each (the minimum is the least disturbed by other load)."""
    timer = timeit.Timer(fn)
    number, t = timer.autorange()
    number = max(1, int(number * (budget / repeats) / max(t, 1e-9)))
    runs = [r / number for r in timer.repeat(repeat=repeats, number=number)]
    return min(runs), statistics.median(runs)


def _spin():
    while True:
        pass


def run_with_optional_hog(main):
    """main(), with a second process spinning on one core meanwhile when HOG is set in the
    environment (a user's busy machine)."""
    import multiprocessing
    import os
    hog = None
    if os.environ.get("HOG"):
        hog = multiprocessing.Process(target=_spin, daemon=True)
        hog.start()
    try:
        main()
    finally:
        if hog is not None:
            hog.terminate()
