"""Random small graphs that mix broadcastable inputs (rows, columns, (1, 1) matrices, vectors,
scalars) with dot, elementwise ops, the forms the rewrites look for (z + c * dot, x * 1, log(1 + x),
(a * b) / a, ...), reductions, dimshuffles, allocs and softmax, compiled in FAST_RUN,
FAST_COMPILE and NONE: every mode must accept the graph when NONE does, give the same dtypes and
shapes, and values that agree within rounding (a rewrite may make a non-finite value finite, and
may resolve a NaN); float64 graphs also match numpy.

This is the property that the dot + z -> Gemm rewrite broke (it dropped a broadcast, so FAST_RUN
raised where NONE ran)."""
import os

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import hypatia
import hypatia.tensor as T

N, M, K = 3, 4, 2  # the lengths of non-broadcastable axes

# (name, shape); a length-1 axis is broadcastable.
INPUT_SHAPES = [(N, M), (M, N), (N, K), (K, M), (1, M), (1, N), (N, 1), (M, 1), (1, 1), (M,), (N,), (K,), (1,), ()]


def np_softmax(a, axis=-1):
    e = np.exp(a - a.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


class Val:
    """A symbolic value with its numpy reference (float64) and its static broadcastable pattern."""

    def __init__(self, sym, ref):
        self.sym = sym
        self.ref = np.asarray(ref, dtype=np.float64)
        assert self.sym.ndim == self.ref.ndim, (self.sym, self.ref.shape)

    @property
    def shape(self):
        return self.ref.shape

    @property
    def bc(self):
        return tuple(self.sym.broadcastable)


def broadcast_ok(a, b):
    """Whether Theano broadcasting accepts a op b: lower-ndim operands are padded on the left with
    broadcastable axes; non-broadcastable axes must have equal lengths."""
    nd = max(a.sym.ndim, b.sym.ndim)
    sa = (1,) * (nd - a.sym.ndim) + a.shape
    sb = (1,) * (nd - b.sym.ndim) + b.shape
    ba = (True,) * (nd - a.sym.ndim) + a.bc
    bb = (True,) * (nd - b.sym.ndim) + b.bc
    return all(x == y or bx or by for x, y, bx, by in zip(sa, sb, ba, bb))


UNARY = {
    "exp": (T.exp, np.exp),
    "tanh": (T.tanh, np.tanh),
    "neg": (lambda x: -x, lambda x: -x),
    "sqr": (T.sqr, np.square),
    "sigmoid": (T.nnet.sigmoid, lambda x: 1 / (1 + np.exp(-x))),
    "abs": (abs, np.abs),
    # Forms the canonicalize / stabilize / specialize rules rewrite.
    "log1p_form": (lambda x: T.log(1 + abs(x)), lambda x: np.log1p(np.abs(x))),
    "expm1_form": (lambda x: T.exp(x) - 1, np.expm1),
    "mul_one": (lambda x: x * 1, lambda x: x),
    "add_zero": (lambda x: 0 + x, lambda x: x),
    "mul_zero": (lambda x: x * 0 + x, lambda x: x),
    "neg_neg": (lambda x: -(-x), lambda x: x),
    "sub_self": (lambda x: (x - x) + x, lambda x: x),
    "div_self": (lambda x: x / x * 2 - 1, lambda x: x / x * 2 - 1),  # x / x -> 1 (Theano's rule)
    "pow2": (lambda x: x ** 2, np.square),
    "mul_self": (lambda x: x * x, np.square),
    "one_minus_sigmoid": (lambda x: 1 - T.nnet.sigmoid(x), lambda x: 1 / (1 + np.exp(x))),
    "log_sigmoid": (lambda x: T.log(T.nnet.sigmoid(x)), lambda x: -np.logaddexp(0, -x)),
    "div_const": (lambda x: x / 4.0, lambda x: x / 4.0),
    "scale": (lambda x: 2.5 * x - 0.5, lambda x: 2.5 * x - 0.5),
    "max_self": (lambda x: T.maximum(x, x), lambda x: x),
    "sqrt_sqr": (lambda x: T.sqrt(T.sqr(x)), np.abs),
    "log_exp": (lambda x: T.log(T.exp(x)), lambda x: x),
    "exp_log": (lambda x: T.exp(T.log(abs(x) + 0.5)), lambda x: np.abs(x) + 0.5),
    "log1p_exp": (lambda x: T.log1p(T.exp(x)), lambda x: np.logaddexp(0, x)),
    "log_1m_exp": (lambda x: T.log(1 - T.exp(-abs(x) - 0.1)), lambda x: np.log(-np.expm1(-np.abs(x) - 0.1))),
    "pow_half": (lambda x: (abs(x) + 1) ** 0.5, lambda x: np.sqrt(np.abs(x) + 1)),
    "pow_minus_one": (lambda x: (abs(x) + 1) ** -1, lambda x: 1 / (np.abs(x) + 1)),
    "recip": (lambda x: 1 / (abs(x) + 1), lambda x: 1 / (np.abs(x) + 1)),
    "one_minus_erf": (lambda x: 1 - T.erf(x), lambda x: 1 - np.vectorize(__import__("math").erf)(x)),
    "clip": (lambda x: T.clip(x, -1.0, 0.5), lambda x: np.clip(x, -1.0, 0.5)),
    "switch_const": (lambda x: T.switch(1, x, -x), lambda x: x),
    "cast_roundtrip": (lambda x: T.cast(T.cast(x, "float64"), x.dtype), lambda x: x),
    "neg_mul_neg": (lambda x: (-x) * (-x), np.square),
    "sub_neg": (lambda x: x - (-x), lambda x: 2 * x),
    "add_neg": (lambda x: x + (-x) + x, lambda x: x),
}

BINARY = {
    "add": (lambda a, b: a + b, np.add),
    "sub": (lambda a, b: a - b, np.subtract),
    "mul": (lambda a, b: a * b, np.multiply),
    "div": (lambda a, b: a / (abs(b) + 1), lambda a, b: a / (np.abs(b) + 1)),
    "maximum": (T.maximum, np.maximum),
    # (a * b) / a -> b and (a * b) / (a * c) -> b / c: the canceled factor must keep its broadcast.
    "mul_div_cancel": (lambda a, b: (a * b) / a, lambda a, b: (a * b) / a),
    "mul_div_cancel2": (lambda a, b: (a * b) / (a * 2.0), lambda a, b: (a * b) / (a * 2.0)),
    "scaled_add": (lambda a, b: a + 0.5 * b, lambda a, b: a + 0.5 * b),
    "scaled_sub": (lambda a, b: a - 2.0 * b, lambda a, b: a - 2.0 * b),
    "neg_div_neg": (lambda a, b: (-a) / (-(abs(b) + 1)), lambda a, b: a / (np.abs(b) + 1)),
    "mul_recip": (lambda a, b: a * (1 / (abs(b) + 1)), lambda a, b: a / (np.abs(b) + 1)),
    "switch_same": (lambda a, b: T.switch(T.gt(b, 0), a, a), lambda a, b: a + 0 * b),
    "minimum": (T.minimum, np.minimum),
}


def try_binary(name, a, b):
    if not broadcast_ok(a, b):
        return None
    if name == "mul_div_cancel" or name == "mul_div_cancel2":
        # a must not be 0 (x / x -> 1 is taken as exact, like Theano); keep it away from 0.
        a = Val(abs(a.sym) + 1, np.abs(a.ref) + 1)
    f, g = BINARY[name]
    return Val(f(a.sym, b.sym), g(a.ref, b.ref))


def try_dot(a, b):
    if a.sym.ndim not in (1, 2) or b.sym.ndim not in (1, 2):
        return None
    k = a.shape[-1]
    if b.shape[0] != k:
        return None
    return Val(T.dot(a.sym, b.sym), np.dot(a.ref, b.ref))


def try_reduce(kind, a, axis, keepdims):
    if a.sym.ndim == 0:
        return None
    axis = None if axis is None else axis % a.sym.ndim
    f = {"sum": T.sum, "max": T.max, "mean": T.mean}[kind]
    g = {"sum": np.sum, "max": np.max, "mean": np.mean}[kind]
    return Val(f(a.sym, axis=axis, keepdims=keepdims), g(a.ref, axis=axis, keepdims=keepdims))


def try_dimshuffle(kind, a):
    nd = a.sym.ndim
    if kind == "transpose" and nd == 2:
        return Val(a.sym.T, a.ref.T)
    if kind == "row" and nd == 1:
        return Val(a.sym.dimshuffle("x", 0), a.ref[None, :])
    if kind == "col" and nd == 1:
        return Val(a.sym.dimshuffle(0, "x"), a.ref[:, None])
    if kind == "drop" and nd >= 1 and any(a.bc):
        keep = [d for d in range(nd) if not a.bc[d]]
        return Val(a.sym.dimshuffle(*keep), a.ref.reshape([a.shape[d] for d in keep]))
    if kind == "scalar_to_11" and nd == 0:
        return Val(a.sym.dimshuffle("x", "x"), a.ref.reshape(1, 1))
    return None


def try_other(kind, a):
    nd = a.sym.ndim
    if kind in ("softmax", "log_softmax", "softmax0") and not a.sym.dtype.startswith("float"):
        return None
    if kind == "softmax" and nd == 2:
        return Val(T.nnet.softmax(a.sym), np_softmax(a.ref))
    if kind == "log_softmax" and nd == 2:
        return Val(T.log(T.nnet.softmax(a.sym)), np.log(np_softmax(a.ref)))
    if kind == "logsumexp" and nd == 2:
        return Val(T.log(T.sum(T.exp(a.sym), axis=1)), np.log(np.sum(np.exp(a.ref), axis=1)))
    if kind == "alloc" and all(a.bc):
        # A scalar filled out to (N, M), then read by an elementwise op (local_elemwise_alloc / alloc_lift).
        s = a.sym if nd == 0 else a.sym.sum()
        r = a.ref.sum()
        return Val(T.alloc(s, N, M) * 2.0, np.full((N, M), r) * 2.0)
    if kind == "ones_like":
        return Val(T.ones_like(a.sym) * a.sym + T.zeros_like(a.sym), a.ref)
    if kind == "subtensor" and nd >= 1:
        if a.shape[0] >= 2:
            return Val(a.sym[1:][::-1][:1], a.ref[1:][::-1][:1])
        return Val(a.sym[::-1], a.ref[::-1])
    if kind == "index" and nd >= 1:
        return Val(a.sym[0], a.ref[0])
    if kind == "reshape" and nd >= 1:
        return Val(T.reshape(T.flatten(a.sym), a.shape), a.ref)
    if kind == "set_sub" and nd >= 1:
        # (* 2, not * 2.0: a float product does not fit back into an integer a, as in Theano)
        return Val(T.set_subtensor(a.sym[:1], a.sym[:1] * 2), np.concatenate([a.ref[:1] * 2, a.ref[1:]]))
    if kind == "inc_sub" and nd >= 1:
        return Val(T.inc_subtensor(a.sym[-1:], 1.0), np.concatenate([a.ref[:-1], a.ref[-1:] + 1]))
    if kind == "join" and nd >= 1:
        return Val(T.concatenate([a.sym, a.sym * 2.0], axis=0), np.concatenate([a.ref, a.ref * 2], axis=0))
    if kind == "softmax0" and nd == 2:
        return Val(T.nnet.softmax(a.sym, axis=0), np_softmax(a.ref, axis=0))
    if kind == "prod_min" and nd >= 1:
        return Val(T.prod(a.sym, axis=0) + T.min(a.sym, axis=0, keepdims=False), np.prod(a.ref, axis=0) + np.min(a.ref, axis=0))
    if kind == "sum_sum" and nd == 2:
        return Val(T.sum(T.sum(a.sym, axis=1, keepdims=True), axis=0), a.ref.sum(axis=1, keepdims=True).sum(axis=0))
    if kind == "sum_dimshuffle" and nd == 1:
        return Val(T.sum(a.sym.dimshuffle("x", 0, "x"), axis=(0, 2)), a.ref)
    if kind == "fill_sum":
        # sum(c * x) -> c * sum(x); sum(neg(x)) -> neg(sum(x)); sum(x * x) -> sum(sqr(x)).
        if nd == 0:
            return None
        return Val(T.sum(3.0 * a.sym) + T.sum(-a.sym) + T.sum(a.sym * a.sym), 2 * a.ref.sum() + (a.ref ** 2).sum())
    return None


KINDS = ["unary"] * 3 + ["binary"] * 4 + ["dot"] * 2 + ["dot_plus"] * 2 + ["reduce", "switch"] + ["other"] * 2 + ["dimshuffle"] * 2


@st.composite
def graphs(draw):
    with np.errstate(all="ignore"):
        return draw_graph(draw)


def draw_graph(draw):
    """(inputs, input values, outputs, numpy references, dtype): a random graph of up to 8 steps."""
    dtype = draw(st.sampled_from(["float64", "float32", "mixed"]))
    special = draw(st.integers(0, 3)) == 0
    rng = np.random.RandomState(draw(st.integers(0, 2 ** 31 - 1)))
    n_in = draw(st.integers(2, 4))
    vals, ins, args = [], [], []
    for i in range(n_in):
        shape = draw(st.sampled_from(INPUT_SHAPES))
        bc = tuple(s == 1 for s in shape)
        dt = draw(st.sampled_from(["float64", "float32", "int32"])) if dtype == "mixed" else dtype
        v = T.TensorType(dt, bc)("in%d" % i)
        a = rng.standard_normal(shape) * 1.5
        if dt == "int32":
            a = np.round(a * 2)
        elif special:
            # No huge finite value: a dot that cancels huge terms differs between BLAS (float32
            # sums) and the reference kernel (double sums) by more than DebugMode's tolerance.
            a.flat[rng.randint(0, max(a.size, 1))] = rng.choice([0.0, -0.0, np.inf, -np.inf, np.nan, -1e-30])
        a = a.astype(dt)
        ins.append(v)
        args.append(a)
        vals.append(Val(v, a))
    def pick(candidates):
        # The newest values more often, so that steps build on each other (z + c * dot(...)).
        if not candidates:
            return None
        if draw(st.booleans()):
            return candidates[-1 - draw(st.integers(0, min(2, len(candidates) - 1)))]
        return candidates[draw(st.integers(0, len(candidates) - 1))]

    for _ in range(draw(st.integers(2, 10))):
        kind = draw(st.sampled_from(KINDS))
        a = pick(vals)
        if kind == "unary":
            f, g = UNARY[draw(st.sampled_from(sorted(UNARY)))]
            new = Val(f(a.sym), g(a.ref))
        elif kind == "binary":
            b = pick([v for v in vals if broadcast_ok(a, v)])
            new = try_binary(draw(st.sampled_from(sorted(BINARY))), *((a, b) if draw(st.booleans()) else (b, a)))
        elif kind == "dot":
            b = pick([v for v in vals if v.sym.ndim in (1, 2) and a.sym.ndim in (1, 2) and v.shape[0] == a.shape[-1]])
            new = try_dot(a, b) if b is not None else None
        elif kind == "switch":
            # The condition reads an input: a comparison of a computed value would turn the
            # rounding differences that rewrites may make (1 - erf(x) -> erfc(x)) into jumps.
            b = pick([v for v in vals if broadcast_ok(a, v)])
            c = pick([v for v in vals[:n_in] if broadcast_ok(a, v) and broadcast_ok(b, v)])
            new = None
            if c is not None and broadcast_ok(Val(a.sym + b.sym, a.ref + b.ref), c):
                new = Val(T.switch(T.gt(c.sym, 0), a.sym, b.sym), np.where(c.ref > 0, a.ref, b.ref))
        elif kind == "dot_plus":
            # z + dot(a, b), z - c * dot(a, b), dot(a, b) + z: the Gemm / Gemv / Ger forms, with
            # whatever broadcasting z and the product have.
            b = pick([v for v in vals if v.sym.ndim in (1, 2) and a.sym.ndim in (1, 2) and v.shape[0] == a.shape[-1]])
            d = try_dot(a, b) if b is not None else None
            if d is not None and draw(st.booleans()):
                d = Val(d.sym * 0.5, d.ref * 0.5)
            z = pick([v for v in vals if broadcast_ok(v, d)]) if d is not None else None
            form = draw(st.sampled_from(["z+d", "z-d", "d+z"]))
            new = None
            if z is not None:
                new = {"z+d": lambda: Val(z.sym + d.sym, z.ref + d.ref),
                       "z-d": lambda: Val(z.sym - d.sym, z.ref - d.ref),
                       "d+z": lambda: Val(d.sym + z.sym, d.ref + z.ref)}[form]()
        elif kind == "reduce":
            new = try_reduce(draw(st.sampled_from(["sum", "max", "mean"])), a,
                             draw(st.sampled_from([None, 0, 1, -1])), draw(st.booleans()))
        elif kind == "dimshuffle":
            new = try_dimshuffle(draw(st.sampled_from(["transpose", "row", "col", "drop", "scalar_to_11"])), a)
        else:
            new = try_other(draw(st.sampled_from(["softmax", "log_softmax", "logsumexp", "alloc", "ones_like",
                                                  "fill_sum", "subtensor", "index", "reshape", "set_sub", "inc_sub",
                                                  "join", "softmax0", "prod_min", "sum_sum", "sum_dimshuffle"])), a)
        if new is not None:
            vals.append(new)
    computed = vals[n_in:] or vals[:1]
    picks = draw(st.lists(st.integers(0, len(computed) - 1), min_size=1, max_size=3, unique=True))
    outs = [computed[-1]] + [computed[p] for p in picks if p != len(computed) - 1]
    # Compared with numpy only where every value is a float64 and finite (numpy's float32 and
    # integer rules differ in places from Theano's).
    exact = dtype == "float64" and not special
    return ins, args, outs, ("float32" if dtype != "float64" else "float64"), exact, vals[n_in:]


@np.errstate(all="ignore")
def close(got, want, dtype, magnitude=0.0):
    """got agrees with want within rounding; where want is NaN anything goes (a rewrite may
    resolve an indeterminate form), where want is infinite a finite value is allowed (a
    stability rewrite). `magnitude`, the largest value the graph computes on the way, bounds what
    an exact cancellation can change ((a * b) / a - b is 0 after the rewrite, a rounding error of
    a * b before)."""
    got = np.asarray(got, dtype=np.float64)
    want = np.asarray(want, dtype=np.float64)
    rtol, atol = (1e-3, 1e-3) if dtype == "float32" else (1e-7, 1e-9)
    atol += 8 * np.finfo(dtype).eps * magnitude
    ok = np.isnan(want) | (np.isinf(want) & np.isfinite(got)) | (got == want)
    finite = np.isfinite(want) & np.isfinite(got)
    scale = np.maximum(np.abs(want), np.abs(got))
    ok |= finite & (np.abs(got - want) <= atol + rtol * scale)
    return bool(ok.all())


def compile_and_run(ins, outs, args, mode):
    f = hypatia.function(ins, [o.sym for o in outs], mode=mode, on_unused_input="ignore")
    return [np.asarray(r) for r in f(*[a.copy() for a in args])]


# 400 examples by default (a few seconds here; the Gemm broadcast defect showed up within ~100), more
# with HYPOTHESIS_PROFILE=thorough, or any number with HYPATIA_FUZZ_EXAMPLES=N (the long runs).
@settings(max_examples=int(os.environ.get("HYPATIA_FUZZ_EXAMPLES", max(400, settings.default.max_examples))))
@given(graphs())
def test_every_mode_agrees_on_random_broadcasting_graphs(g):
    ins, args, outs, dtype, exact, steps = g

    def graph():
        return hypatia.printing.debugprint([o.sym for o in outs], file="str")

    # NONE computes the graph as written, every step of it: where a step is not finite (an
    # overflow, a log of 0), a stability rewrite may legitimately change what follows (log(softmax)
    # -> log_softmax turns a -inf into a finite value), so FAST_RUN's values are then compared
    # with stabilize left out, and FAST_RUN itself only for running, shapes and dtypes.
    everything = compile_and_run(ins, outs + steps, args, "NONE")
    base = everything[:len(outs)]
    floats = [v for v in everything if v.dtype.kind == "f"]
    tame = all(np.isfinite(v).all() for v in floats)
    with np.errstate(invalid="ignore"):
        magnitude = max([float(np.abs(v[np.isfinite(v)]).max(initial=0)) for v in floats] + [0.0])
    fast = hypatia.Mode(optimizer="fast_run")
    modes = ["FAST_COMPILE", "FAST_RUN"] + ([] if tame else [fast.excluding("stabilize")])
    for mode in modes:
        try:
            got = compile_and_run(ins, outs, args, mode)
        except Exception as e:
            raise AssertionError("%s raised where NONE ran: %s\n%s" % (mode, e, graph())) from e
        for o, r, b in zip(outs, got, base):
            assert r.dtype == b.dtype == np.dtype(o.sym.dtype), (mode, r.dtype, b.dtype, o.sym.dtype, graph())
            assert r.shape == b.shape, (mode, r.shape, b.shape, graph())
            if mode != "FAST_RUN" or tame:
                assert close(r, b, dtype, magnitude), (str(mode), r, b, graph())
    for o, b in zip(outs, base):
        assert b.shape == o.shape, (b.shape, o.shape, graph())
        if exact and tame:  # numpy's reference is the exact math: log(exp(x)) is x even where exp overflows
            assert close(b, o.ref, dtype, magnitude), (b, o.ref, graph())


# Regression cases the property found or that the issue named (each raised or differed before).
def _modes_agree(ins, outs_sym, args):
    outs = [Val(o, np.zeros((1,) * o.ndim)) for o in outs_sym]
    base = compile_and_run(ins, outs, args, "NONE")
    for mode in ["FAST_COMPILE", "FAST_RUN"]:
        for r, b in zip(compile_and_run(ins, outs, args, mode), base):
            assert r.shape == b.shape
            np.testing.assert_allclose(r, b, rtol=1e-12)
    return base


def test_dot_broadcast_against_z_is_not_a_gemm():
    z, r, x = T.dvector("z"), T.drow("r"), T.dvector("x")
    a = [np.arange(3.0), np.ones((1, 2)), np.array([1.0, 2.0])]
    np.testing.assert_allclose(_modes_agree([z, r, x], [z + T.dot(r, x)], a)[0], np.arange(3.0) + 3)
    m, A, c = T.dmatrix("m"), T.dmatrix("A"), T.dcol("c")
    a = [np.ones((3, 4)), np.ones((3, 2)), np.ones((2, 1))]
    np.testing.assert_allclose(_modes_agree([m, A, c], [m + T.dot(A, c)], a)[0], np.full((3, 4), 3.0))
    v, Mx = T.dvector("v"), T.dmatrix("M")
    p, q = T.TensorType("float64", (True, True))("p"), T.TensorType("float64", (True, True))("q")
    a = [np.ones(2), np.ones((2, 3)), np.full((1, 1), 2.0), np.full((1, 1), 3.0)]
    np.testing.assert_allclose(_modes_agree([v, Mx, p, q], [T.dot(v.dimshuffle("x", 0), Mx) - T.dot(p, q)], a)[0],
                               np.full((1, 3), -4.0))


def test_integer_divided_by_a_constant():
    """x / c -> x * (1 / c) built 1 / c in c's dtype: int_x / 4.0 (whose 4 is an int32 constant)
    gave 0 in FAST_RUN. Found by the property test above."""
    x = T.ivector("x")
    f = T.fvector("f")
    a = np.array([7, -9, 49], dtype="int32")
    np.testing.assert_array_equal(_modes_agree([x], [x / 4.0, x / 3], [a])[0], a / 4.0)
    np.testing.assert_array_equal(_modes_agree([f], [f / np.int8(4)], [np.array([1, 2, -6], dtype="float32")])[0],
                                  [0.25, 0.5, -1.5])


@pytest.mark.parametrize("mode", ["FAST_RUN", "FAST_COMPILE"])
def test_fused_node_error_names_the_user_lines(mode):
    """A run-time error inside a fused (or otherwise rewritten) node names the lines where the user
    wrote the expressions it came from, not the line of the function() call."""
    import inspect
    x, y = T.dvector("x"), T.dvector("y")
    here = inspect.currentframe().f_lineno
    a = T.exp(x)  # here + 1
    b = a * y  # here + 2
    c = T.tanh(b) + 1.0  # here + 3
    saved = hypatia.config.debug_checks
    hypatia.config.debug_checks = False  # DebugMode would run the unoptimized graph first
    try:
        f = hypatia.function([x, y], c, mode=mode)
    finally:
        hypatia.config.debug_checks = saved
    with pytest.raises(ValueError) as e:
        f(np.ones(3), np.ones(4))
    where = [line for line in str(e.value).splitlines() if line.startswith("Node created at:")]
    assert len(where) == 1, str(e.value)
    lines = [int(part.rsplit(":", 1)[1]) for part in where[0][len("Node created at:"):].split(",")]
    assert all(part.strip().startswith(__file__) for part in where[0][len("Node created at:"):].split(","))
    if mode == "FAST_RUN":
        assert "Composite" in str(e.value)
        assert lines == [here + 1, here + 2, here + 3]
    else:
        assert lines == [here + 2]  # the mul, as written


def test_rewritten_node_created_at():
    """created_at of the nodes of a compiled graph: the user's lines, also after a rewrite."""
    import inspect
    m = T.dmatrix("m")
    here = inspect.currentframe().f_lineno
    y = T.log(T.nnet.softmax(m))  # here + 1
    f = hypatia.function([m], y, mode="FAST_RUN")
    nodes = f.maker.fgraph.toposort()
    assert any("LogSoftmax" in str(n.op) for n in nodes)
    for n in nodes:
        assert n.created_at == "%s:%d" % (__file__, here + 1), (n.op, n.created_at)
