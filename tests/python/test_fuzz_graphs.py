"""Random graphs against numpy in every mode: elementwise math, broadcasting, reductions, products,
views and shape operations over inputs of hostile layouts (strided, reversed, transposed,
read-only, empty) and values (0, -0, inf, NaN), compiled with FAST_RUN, FAST_COMPILE and NONE
(each with DebugMode's checks, as the whole suite runs), placed on the emulated GPU (every node on
the stand-in device, transfers where values cross), and called from two threads at once.

This is the fuzzer that found several of issue 9's defects, kept as a property test. The default
hypothesis profile bounds it to well under a minute; HYPOTHESIS_PROFILE=thorough runs the longer
search recorded in RELIABILITY.md.

float16 graphs (a storage dtype: every op computes in float32 and rounds its result to float16,
like numpy's float16 ufuncs) are checked against numpy computing each step in float32 and
rounding it the same way. Two float32 results that differ in their last bit (a transcendental's
kernels, a sum's order) can round to neighbouring float16 values, and later steps carry that
difference on, so each float16 value carries a bound on its absolute error (its inputs' bounds
through the op's slope, plus one float16 rounding of its own) and is compared within it; steps
whose slope has no bound (floor, sqrt near 0) are left out of float16 graphs.
"""

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

import hypatia
import hypatia.tensor as T
from util import emulated_gpu, run_threads

MODES = ["FAST_RUN", "FAST_COMPILE", "NONE"]


def np_sigmoid(v):
    with np.errstate(over="ignore"):
        return (1 / (1 + np.exp(-v))).astype(v.dtype)


def np_softplus(v):
    return np.logaddexp(np.zeros((), v.dtype), v).astype(v.dtype)


# name: (hypatia op, numpy op). Domains are made safe inside the op (abs, +1) where the function
# would otherwise be undefined on most inputs.
UNARY = {
    "exp": (T.exp, np.exp),
    "tanh": (T.tanh, np.tanh),
    "sin": (T.sin, np.sin),
    "cos": (T.cos, np.cos),
    "neg": (T.neg, np.negative),
    "abs": (T.abs_, np.abs),
    "sqr": (T.sqr, np.square),
    "sqrt_abs": (lambda v: T.sqrt(abs(v)), lambda v: np.sqrt(np.abs(v))),
    "log1p_abs": (lambda v: T.log1p(abs(v)), lambda v: np.log1p(np.abs(v))),
    "sigmoid": (T.nnet.sigmoid, np_sigmoid),
    "softplus": (T.nnet.softplus, np_softplus),
    "floor": (T.floor, np.floor),
    "scale": (lambda v: v * 0.5 + 0.25, lambda v: v * v.dtype.type(0.5) + v.dtype.type(0.25)),
}
BINARY = {
    "add": (lambda a, b: a + b, np.add),
    "sub": (lambda a, b: a - b, np.subtract),
    "mul": (lambda a, b: a * b, np.multiply),
    "maximum": (T.maximum, np.maximum),
    "minimum": (T.minimum, np.minimum),
}


F16_EPS = 2.0 ** -10  # float16's ulp at 1: one rounding moves a value by at most half of it
F16_TINY = 2.0 ** -24  # float16's smallest subnormal: the rounding step below 2^-14
F16_UNBOUNDED = {"floor", "sqrt_abs"}  # no bound on the slope: not in float16 graphs
F16_SLOPE = {"neg": 1, "abs": 1, "tanh": 1, "sin": 1, "cos": 1, "sigmoid": 1, "softplus": 1, "log1p_abs": 1,
             "scale": 0.5}


def up(v):
    """numpy's operand for a step: float16 computes in float32."""
    return v.astype("float32") if v.dtype == np.float16 else v


def mag(v):
    """|v| in float64, for the error bounds (inf stays inf, NaN becomes inf)."""
    return np.nan_to_num(np.abs(np.asarray(v, dtype="float64")), nan=np.inf)


class Value:
    """A symbolic value, its numpy twin, and the expression that built it (equal expressions are
    one value after the optimizer's merge). err (float16 only): per element, a bound on how far a
    correct implementation may be from ref: the inputs' bounds through the step, passed in, plus
    one float16 rounding of the step's own result when `rounded`."""

    def __init__(self, sym, ref, expr, err=None, rounded=True):
        self.sym, self.ref, self.expr = sym, ref, expr
        e = np.zeros(np.shape(ref)) if err is None else np.broadcast_to(err, np.shape(ref)).astype("float64")
        if ref.dtype == np.float16 and rounded and err is not None:
            e = e + F16_EPS * mag(ref) + F16_TINY
        self.err = np.nan_to_num(e, nan=np.inf)

    @property
    def shape(self):
        return self.ref.shape


def same_dtype(a, b):
    return a.ref.dtype == b.ref.dtype


def broadcastable_pair(a, b):
    """Whether Theano broadcasting applies to (a, b) as numpy's does: a length-1 dim must be
    declared broadcastable; the operand with fewer dims gets broadcastable dims on the left."""
    nd = max(a.ref.ndim, b.ref.ndim)

    def padded(v):
        extra = nd - v.ref.ndim
        return (1,) * extra + v.shape, (True,) * extra + tuple(v.sym.broadcastable)

    (sa, ba_), (sb, bb_) = padded(a), padded(b)
    for da, db, ba, bb in zip(sa, sb, ba_, bb_):
        if da != db and not ((da == 1 and ba) or (db == 1 and bb)):
            return False
    return True


@st.composite
def graphs(draw):
    """Leaves (shapes, dtypes, layouts, special values) and a list of steps over them."""
    dtype = draw(st.sampled_from(["float32", "float64", "float16"]))
    m = draw(st.sampled_from([0, 1, 3, 17]))
    n = draw(st.sampled_from([1, 2, 5, 33]))
    kinds = draw(st.lists(st.sampled_from(["matrix", "row", "col", "vector", "matrix_t"]), min_size=1, max_size=3))
    layouts = draw(st.lists(st.sampled_from(["c", "strided", "reversed", "readonly", "fortran"]),
                            min_size=len(kinds), max_size=len(kinds)))
    specials = draw(st.booleans())
    steps = []
    for _ in range(draw(st.integers(1, 8))):
        steps.append(draw(st.tuples(
            st.sampled_from(["unary", "unary", "binary", "binary", "reduce", "dot", "transpose", "slice", "softmax",
                             "concat", "reshape"]),
            st.integers(0, 10**6), st.integers(0, 10**6), st.integers(0, 10**6))))
    seed = draw(st.integers(0, 2**31 - 1))
    return dtype, m, n, kinds, layouts, specials, steps, seed


def leaf_value(kind, m, n, dtype, layout, specials, rng):
    shape = {"matrix": (m, n), "row": (1, n), "col": (m, 1), "vector": (n,), "matrix_t": (n, m)}[kind]
    a = rng.uniform(-3, 3, size=shape).astype(dtype)
    if specials and a.size:
        flat = a.reshape(-1)
        picks = rng.integers(0, flat.size, size=max(1, flat.size // 8))
        with np.errstate(over="ignore"):  # float16: 1e30 is inf
            specials_of_dtype = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e30, -1e-30], dtype=dtype)
        flat[picks] = rng.choice(specials_of_dtype, size=picks.size)
    if layout == "strided":
        big = np.zeros(tuple(2 * s for s in shape), dtype=dtype)
        big[tuple(slice(None, None, 2) for _ in shape)] = a
        a = big[tuple(slice(None, None, 2) for _ in shape)]
    elif layout == "reversed":
        a = np.ascontiguousarray(a[::-1])[::-1]
    elif layout == "fortran":
        a = np.asfortranarray(a)
    elif layout == "readonly":
        a = a.copy()
        a.setflags(write=False)
    return a


def apply_step(vals, step, dtype):
    """Adds the result of one step to vals when its operands fit; returns whether it did."""
    kind, i, j, k = step
    a, b = vals[i % len(vals)], vals[j % len(vals)]
    if kind == "unary":
        name = sorted(UNARY)[k % len(UNARY)]
        if name in ("sin", "cos") and a.sym.owner is not None:
            finite = np.abs(a.ref[np.isfinite(a.ref)])
            if finite.size and finite.max() > 100:
                # sin/cos of a large computed value amplify its last-ulp rounding (cos(exp(exp(x)))
                # at 7e5 turns a 1-ulp difference in the inner exp into any value): ill-conditioned,
                # not comparable. Leaves of any size are still tested.
                return False
        if a.ref.dtype == np.float16 and name in F16_UNBOUNDED:
            return False
        op, ref = UNARY[name]
        expr = f"{name}({a.expr})"
        if name == "neg" and a.expr.startswith("neg("):
            expr = a.expr[4:-1]  # neg(neg(x)) is x after canonicalize
        with np.errstate(all="ignore"):
            r = ref(up(a.ref)).astype(a.ref.dtype)
            slope = (mag(r) * (1 + 2 * a.err) if name == "exp" else 2 * mag(a.ref) + a.err if name == "sqr"
                     else F16_SLOPE.get(name, 1))
            vals.append(Value(op(a.sym), r, expr, slope * a.err))
    elif kind == "binary":
        if not (same_dtype(a, b) and broadcastable_pair(a, b)):
            return False
        name = sorted(BINARY)[k % len(BINARY)]
        if name in ("add", "sub") and np.any(~np.isfinite(a.ref) & ~np.isfinite(b.ref)):
            # Theano's cancellations (x - x -> 0, and x + -x, x - x.T of a vector, x - flatten(x) ...
            # once canonicalize has made both sides one value) turn inf - inf into 0 by design
            # (docs/ARCHITECTURE.md). They differ from IEEE only where both operands are non-finite
            # (x - x is exactly 0 for a finite x), so only those graphs are left out.
            return False
        op, ref = BINARY[name]
        with np.errstate(all="ignore"):
            # max(x, x) and min(x, x) are x after canonicalize: the same key, so that a later
            # subtraction from x is seen as x - x.
            expr = a.expr if name in ("maximum", "minimum") and a.expr == b.expr else f"{name}({a.expr}, {b.expr})"
            ea, eb = a.err, b.err
            err = (mag(b.ref) * ea + mag(a.ref) * eb + ea * eb if name == "mul"
                   else np.maximum(ea, eb) if name in ("maximum", "minimum") else ea + eb)
            vals.append(Value(op(a.sym, b.sym), ref(up(a.ref), up(b.ref)).astype(a.ref.dtype), expr, err))
    elif kind == "reduce":
        if a.ref.ndim == 0:
            return False
        axis = k % (a.ref.ndim + 1)
        axis = None if axis == a.ref.ndim else axis
        how = ["sum", "max", "mean"][(k // 7) % 3]
        if how != "sum" and (a.ref.size == 0 or (axis is not None and a.shape[axis] == 0)):
            return False  # max/mean of nothing: numpy raises or warns
        keep = bool((k // 21) % 2)
        sym = getattr(T, how)(a.sym, axis=axis, keepdims=keep)
        with np.errstate(all="ignore"):
            ref = getattr(np, how)(up(a.ref), axis=axis, keepdims=keep).astype(dtype)
            err = getattr(np, how)(a.err, axis=axis, keepdims=keep)
        vals.append(Value(sym, np.asarray(ref), f"{how}({a.expr}, {axis}, {keep})", err))
    elif kind == "dot":
        if a.ref.ndim != 2 or b.ref.ndim not in (1, 2) or a.shape[1] != b.shape[0] or not same_dtype(a, b):
            return False
        if not (np.all(np.isfinite(a.ref)) and np.all(np.isfinite(b.ref))):
            return False  # BLAS libraries differ on 0 * inf (numpy's skips zero multipliers: 0, not NaN)
        with np.errstate(all="ignore"):
            err = mag(a.ref) @ b.err + a.err @ mag(b.ref) + a.err @ b.err
            vals.append(Value(T.dot(a.sym, b.sym), np.dot(up(a.ref), up(b.ref)).astype(a.ref.dtype),
                              f"dot({a.expr}, {b.expr})", err))
    elif kind == "transpose":
        # The transpose of a vector is the vector, and T(T(x)) is x, after canonicalize.
        expr = a.expr if a.ref.ndim < 2 else a.expr[2:-1] if a.expr.startswith("T(") else f"T({a.expr})"
        vals.append(Value(a.sym.T, a.ref.T, expr, a.err.T, rounded=False))
    elif kind == "slice":
        if a.ref.ndim == 0:
            return False
        start, step_ = [(None, None), (1, None), (None, -1), (None, 2), (-2, None)][k % 5]
        key = tuple([slice(start, None, step_)] + [slice(None)] * (a.ref.ndim - 1))
        vals.append(Value(a.sym[key], a.ref[key], f"{a.expr}[{key}]", a.err[key], rounded=False))
    elif kind == "softmax":
        if a.ref.ndim != 2 or a.shape[1] == 0 or not np.all(np.isfinite(a.ref)):
            return False
        x = up(a.ref)
        e = np.exp(x - x.max(axis=1, keepdims=True))
        sm = (e / e.sum(axis=1, keepdims=True)).astype(a.ref.dtype)
        # Inputs moved by at most d (the row's largest bound) move each result by at most a factor
        # e^(2d): relative 2d for small d, and never past 1.
        d = a.err.max(axis=1, keepdims=True) if a.err.size else np.zeros((a.shape[0], 1))
        err = np.minimum(mag(sm) * np.expm1(np.minimum(2 * d, 50)), 1.0)
        vals.append(Value(T.nnet.softmax(a.sym), sm, f"softmax({a.expr})", err))
    elif kind == "concat":
        if a.ref.ndim == 0 or a.ref.ndim != b.ref.ndim or not same_dtype(a, b) or a.shape[1:] != b.shape[1:]:
            return False
        vals.append(Value(T.concatenate([a.sym, b.sym], axis=0), np.concatenate([a.ref, b.ref], axis=0),
                          f"concat({a.expr}, {b.expr})", np.concatenate([a.err, b.err], axis=0), rounded=False))
    elif kind == "reshape":
        vals.append(Value(a.sym.flatten(), a.ref.reshape(-1), f"flatten({a.expr})", a.err.reshape(-1), rounded=False))
    return True


def close(got, want, dtype, err=None):
    """got against the reference value want (err: the float16 bound carried by the Value)."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, (got.shape, want.shape)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    if dtype == "float16":
        g, w = got.astype("float64"), want.astype("float64")
        with np.errstate(invalid="ignore"):
            ok = (g == w) | (np.isnan(g) & np.isnan(w)) | (np.abs(g - w) <= err + F16_TINY)
        assert ok.all(), ("float16", g[~ok][:5], w[~ok][:5], np.broadcast_to(err, g.shape)[~ok][:5])
        return
    rtol, atol = (2e-4, 1e-5) if dtype == "float32" else (1e-10, 1e-12)
    np.testing.assert_allclose(got.astype("float64"), want.astype("float64"), rtol=rtol, atol=atol, equal_nan=True)


@given(graphs())
def test_random_graphs_match_numpy_in_every_mode(graph):
    dtype, m, n, kinds, layouts, specials, steps, seed = graph
    rng = np.random.default_rng(seed)
    inputs, args, vals = [], [], []
    for idx, (kind, layout) in enumerate(zip(kinds, layouts)):
        bcast = {"matrix": (False, False), "row": (True, False), "col": (False, True), "vector": (False,),
                 "matrix_t": (False, False)}[kind]
        value = leaf_value(kind, m, n, dtype, layout, specials, rng)
        bcast = tuple(b or s == 1 for b, s in zip(bcast, value.shape))
        x = T.TensorType(dtype, bcast)(f"x{idx}")
        inputs.append(x)
        args.append(value)
        vals.append(Value(x, value.copy(), x.name))
    for step in steps:
        apply_step(vals, step, dtype)
    outs = [vals[-1]] if len(vals) == len(inputs) else vals[len(inputs):][-2:]
    snapshot = [a.copy() for a in args]
    for mode in MODES:
        f = hypatia.function(inputs, [o.sym for o in outs], mode=mode, on_unused_input="ignore")
        results = f(*args)
        for got, o in zip(results, outs):
            close(got, o.ref, o.ref.dtype.name, o.err)
        for a, s in zip(args, snapshot):  # arguments are never written
            np.testing.assert_array_equal(a, s)
    # Placed on a device (the emulated GPU): the transfers placement inserts give the same values.
    with emulated_gpu() as device_mode:
        g = hypatia.function(inputs, [o.sym for o in outs], mode=device_mode, on_unused_input="ignore")
        for got, o in zip(g(*args), outs):
            close(got, o.ref, o.ref.dtype.name, o.err)
        for a, s in zip(args, snapshot):
            np.testing.assert_array_equal(a, s)
    # The same compiled function from two threads at once gives each the same answer.
    def call(_):
        for got, o in zip(f(*args), outs):
            close(got, o.ref, o.ref.dtype.name, o.err)

    run_threads(2, call)
