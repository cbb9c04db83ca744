"""CPU kernels a performance audit found slow against numpy, in the same process: elementwise ops
on a Fortran-ordered or transposed matrix (2048 x 2048 float32), any / all of bool, round / floor,
casts from bool, integer division by a constant, powers, sort along rows, boolean masks (1024 x
1024) and batched products of small matrices. HOG=1 runs a second process spinning on one core
meanwhile."""
import numpy as np

import hypatia
import hypatia.tensor as T
from timing import run_with_optional_hog, timings


def main():
    rng = np.random.RandomState(0)
    a = rng.rand(2048, 2048).astype("f4")
    af = np.asfortranarray(a)
    b = rng.rand(2048, 2048).astype("f4")
    bf = np.asfortranarray(b)
    mask = a > 0.5
    none = np.zeros_like(mask)
    i8 = rng.randint(-100, 100, size=(2048, 2048)).astype("i1")
    i32 = rng.randint(-1000, 1000, size=(2048, 2048)).astype("i4")
    small = rng.rand(256, 256).astype("f4")
    m1 = rng.rand(1024, 1024).astype("f4")
    mk = m1 > 0.5
    bm8 = rng.rand(1024, 8, 8).astype("f4")
    cm8 = rng.rand(1024, 8, 8).astype("f4")
    x, y = T.fmatrix(), T.fmatrix()
    p, q = T.ftensor3(), T.ftensor3()
    g = T.fvector()
    gv = rng.rand(int(mk.sum())).astype("f4")

    def inc_ref():
        r = m1.copy()
        r[mk] += gv
        return r

    bm = T.matrix(dtype="bool")
    c8, c32 = T.matrix(dtype="int8"), T.matrix(dtype="int32")
    cases = [
        ("exp, Fortran order", [x], T.exp(x), [af], lambda: np.exp(af)),
        ("x * y + 1, Fortran order", [x, y], x * y + 1, [af, bf], lambda: af * bf + 1),
        ("exp(x.T) (a transposed view)", [x], T.exp(x.T), [a], lambda: np.exp(a.T)),
        ("x.T + y.T", [x, y], x.T + y.T, [a, b], lambda: a.T + b.T),
        ("any of bool", [bm], T.any(bm), [mask], lambda: np.any(mask)),
        ("all of bool", [bm], T.all(bm), [mask], lambda: np.all(mask)),
        ("any of an all-false bool", [bm], T.any(bm), [none], lambda: np.any(none)),
        ("any of bool, axis 1", [bm], T.any(bm, axis=1), [mask], lambda: np.any(mask, axis=1)),
        ("all of bool, axis 0", [bm], T.all(bm, axis=0), [mask], lambda: np.all(mask, axis=0)),
        ("any(x > 0.5) (fused)", [x], T.any(x > 0.5), [a], lambda: np.any(a > 0.5)),
        ("round (half even)", [x], T.round(x * 10), [a], lambda: np.round(a * 10)),
        ("floor", [x], T.floor(x * 10), [a], lambda: np.floor(a * 10)),
        ("bool -> float32", [bm], T.cast(bm, "float32"), [mask], lambda: mask.astype("f4")),
        ("int8 // 3", [c8], c8 // 3, [i8], lambda: i8 // np.int8(3)),
        ("int32 // 7", [c32], c32 // 7, [i32], lambda: i32 // np.int32(7)),
        ("x ** 1.7", [x], x ** 1.7, [a], lambda: a ** np.float32(1.7)),
        ("x ** 3", [x], x ** 3, [a], lambda: a ** 3),
        ("x[mask] (1024 x 1024)", [x, bm], x[bm], [m1, mk], lambda: m1[mk]),
        ("x[mask] = 0 (set_subtensor)", [x, bm], T.set_subtensor(x[bm], 0), [m1, mk], lambda: np.where(mk, 0, m1)),
        ("x[mask] += g (the gradient's)", [x, bm, g], T.inc_subtensor(x[bm], g), [m1, mk, gv], inc_ref),
        ("batched_dot 1024 x (8x8)", [p, q], T.batched_dot(p, q), [bm8, cm8], lambda: np.matmul(bm8, cm8)),
        ("sort rows 256 x 256", [x], T.sort(x, axis=1), [small], lambda: np.sort(small, axis=1)),
    ]
    print(f"{'case':32s} {'hypatia':>10s} {'numpy':>10s} {'ratio':>7s}")
    for name, ins, e, args, ref in cases:
        f = hypatia.function(ins, e)
        np.testing.assert_allclose(f(*args), ref(), rtol=2e-6)
        th, tn = timings(lambda: f(*args))[0], timings(ref)[0]
        print(f"{name:32s} {th * 1e3:9.3f}ms {tn * 1e3:9.3f}ms {th / tn:7.2f}")


if __name__ == "__main__":
    run_with_optional_hog(main)
