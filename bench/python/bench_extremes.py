"""max / min / argmax of contiguous rows and of a Fortran-ordered matrix, and clip, against numpy
in the same process (float32, 2048 x 2048; clip on 256 x 256). HOG=1 runs a second process
spinning on one core meanwhile."""
import numpy as np

import hypatia
import hypatia.tensor as T
from timing import run_with_optional_hog, timings


def main():
    x = T.fmatrix()
    a = np.random.RandomState(0).rand(2048, 2048).astype("f4")
    af = np.asfortranarray(a)
    small = a[:256, :256].copy()
    cases = [("argmax axis 1, C order", T.argmax(x, 1), a, lambda: np.argmax(a, 1)),
             ("argmax axis 0, Fortran order", T.argmax(x, 0), af, lambda: np.argmax(af, 0)),
             ("max of all", T.max(x), a, lambda: np.max(a)),
             ("max axis 1", T.max(x, 1), a, lambda: np.max(a, 1)),
             ("min of all", T.min(x), a, lambda: np.min(a)),
             ("clip 256 x 256", T.clip(x, 0.2, 0.8), small, lambda: np.clip(small, 0.2, 0.8))]
    print(f"{'case':30s} {'hypatia':>10s} {'numpy':>10s} {'ratio':>7s}")
    for name, e, arg, ref in cases:
        f = hypatia.function([x], e)
        np.testing.assert_array_equal(f(arg), ref())
        th, tn = timings(lambda: f(arg))[0], timings(ref)[0]
        print(f"{name:30s} {th * 1e3:9.3f}ms {tn * 1e3:9.3f}ms {th / tn:7.2f}")


if __name__ == "__main__":
    run_with_optional_hog(main)
