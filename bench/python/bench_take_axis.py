"""One index array on one axis (x[:, :, :, idx], take(axis=k)) and its gradient (inc_subtensor of
that region, repeated indices adding), against numpy in the same process: the gather against
x[..., idx], the scatter-add against a numpy loop that adds each index's slab in order (the
fastest numpy form for it; np.add.at is printed too). float32, x (32, 3, 64, 64), idx 1024 entries
(the 64 columns 16 times) on the last axis, and 128 rows (each 4 times) on the first axis.
Set HOG=1 to run a second process spinning on one core meanwhile."""
import numpy as np

import hypatia
import hypatia.tensor as T
from timing import run_with_optional_hog, timings


def np_scatter(base, y, idx, axis):
    out = base.copy()
    yv = np.moveaxis(y, axis, 0)
    ov = np.moveaxis(out, axis, 0)
    for k, i in enumerate(idx):
        ov[i] += yv[k]
    return out


def main():
    rng = np.random.RandomState(0)
    a = rng.rand(32, 3, 64, 64).astype(np.float32)
    x, y = T.ftensor4("x"), T.ftensor4("y")
    cases = [("last axis", 3, np.tile(np.arange(64), 16)), ("first axis", 0, np.tile(np.arange(32), 4))]
    print(f"{'case':34s} {'hypatia':>10s} {'numpy':>10s} {'ratio':>7s}")
    for name, axis, idx in cases:
        key = (slice(None),) * axis + (idx,)
        gather = hypatia.function([x], x[key])
        yv = rng.rand(*a[key].shape).astype(np.float32)
        scatter = hypatia.function([x, y], T.inc_subtensor(x[key], y))
        np.testing.assert_allclose(scatter(a, yv), np_scatter(a, yv, idx, axis), rtol=1e-5)
        for what, h, n in [("gather " + name, lambda: gather(a), lambda: a[key]),
                           ("scatter-add " + name, lambda: scatter(a, yv), lambda: np_scatter(a, yv, idx, axis))]:
            th, tn = timings(h)[0], timings(n)[0]
            print(f"{what:34s} {th * 1e3:9.3f}ms {tn * 1e3:9.3f}ms {th / tn:7.2f}")
        ta = timings(lambda: np.add.at(a.copy(), key, yv), budget=0.2, repeats=3)[0]
        print(f"{'  (numpy add.at, ' + name + ')':34s} {'':10s} {ta * 1e3:9.3f}ms")


if __name__ == "__main__":
    run_with_optional_hog(main)
