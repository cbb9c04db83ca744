"""MRG_RandomStreams against Theano 1.0.5's own draws (../shared/fixtures/mrg, read as they are):
uniform, binomial and multinomial bit for bit, normal within 2 ulp of the value's scale; then the
API around it: default updates, seed(), no_default_updates, symbolic sizes, dtypes, choice,
truncated normals, errors, pickling, and moments."""
import os
import pickle
import sys

import numpy as np
import pytest

import hypatia as theano
import hypatia.tensor as T
from hypatia.sandbox.rng_mrg import MRG_RandomStreams, guess_n_streams

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "..", "..", "shared", "fixtures", "mrg")


def _fixtures():
    path = os.path.join(FIXTURES, "mrg_theano105.npz")
    if not os.path.exists(path):
        pytest.skip(f"fixtures not found at {path}")
    sys.path.insert(0, FIXTURES)
    try:
        from cases import CASES
    finally:
        sys.path.remove(FIXTURES)
    return CASES, np.load(path)


def _theano_draws(seed, specs):
    srng = MRG_RandomStreams(seed=seed)
    vs = [getattr(srng, method)(**kw) for _, method, kw in specs]
    f = theano.function([], vs)
    return [f() for _ in range(2)]


def test_fixture_cases_match_theano():
    # The fixtures were made with Theano's default floatX (float64): binomial and multinomial draw
    # their uniforms in it.
    with theano.change_flags(floatX="float64"):
        _check_fixture_cases()


def _check_fixture_cases():
    cases, data = _fixtures()
    checked = 0
    for case, (seed, specs) in cases.items():
        calls = _theano_draws(seed, specs)
        for k, values in enumerate(calls):
            for (name, method, kw), got in zip(specs, values):
                want = data[f"{case}/{name}/call{k}"]
                assert got.dtype == want.dtype and got.shape == want.shape, (case, name, got.dtype, got.shape)
                if method == "normal":
                    avg, std = kw.get("avg", 0.0), kw.get("std", 1.0)
                    # Box-Muller through the platform's log/sin/cos: within 2 ulp of the scale
                    # std * |z| + |avg| of each value.
                    scale = (np.abs(want - avg) + abs(avg)).astype(want.dtype) + np.finfo(want.dtype).tiny
                    assert np.max(np.abs(got - want) / np.spacing(scale)) <= 2.0, (case, name, k)
                else:
                    np.testing.assert_array_equal(got, want, err_msg=f"{case}/{name}/call{k}")
                checked += 1
    assert checked == len(data.files)


def test_default_updates_advance_and_seed_resets():
    srng = MRG_RandomStreams(seed=234)
    u = srng.uniform((3, 4))
    state, new_state = srng.updates()[0]
    assert state.default_update is new_state and state.tag.is_rng
    assert u.rstate is state and u.update == (state, new_state)
    f = theano.function([], u)
    a, b = f(), f()
    assert not np.array_equal(a, b)
    srng.seed(234)
    np.testing.assert_array_equal(f(), a)
    srng.seed()  # the construction seed
    np.testing.assert_array_equal(f(), a)
    srng.seed(99)
    assert not np.array_equal(f(), a)
    g = theano.function([], u, no_default_updates=True)
    np.testing.assert_array_equal(g(), g())
    assert u.dtype == theano.config.floatX and u.shape.eval().tolist() == [3, 4]
    assert state.get_value().shape == (guess_n_streams((3, 4)), 6) and state.get_value().dtype == np.int32


def test_same_seed_same_numbers_and_substreams_differ():
    a = MRG_RandomStreams(7).uniform((100,), dtype="float32")
    b = MRG_RandomStreams(7).uniform((100,), dtype="float32")
    np.testing.assert_array_equal(theano.function([], a)(), theano.function([], b)())
    srng = MRG_RandomStreams(7)
    x, y = srng.uniform((100,), dtype="float32"), srng.uniform((100,), dtype="float32")
    vx, vy = theano.function([], [x, y])()
    assert not np.array_equal(vx, vy)  # each variable takes the next substream


def test_symbolic_sizes_and_dropout_mask():
    srng = MRG_RandomStreams(12)
    x = T.matrix("x")
    mask = srng.binomial(size=x.shape, p=0.8, dtype=theano.config.floatX)
    n = T.iscalar("n")
    u = srng.uniform(size=(n, 3), low=-1, high=1)
    f = theano.function([x, n], [x * mask, u])
    xv = np.ones((50, 40), dtype=theano.config.floatX)
    out, uv = f(xv, 5)
    assert set(np.unique(out)) <= {0.0, 1.0} and 0.7 < out.mean() < 0.9
    assert uv.shape == (5, 3) and np.all(uv > -1) and np.all(uv < 1)
    v = T.lvector("v")
    w = srng.normal(size=v, ndim=2)  # a vector of unknown length, with ndim given
    assert theano.function([v], w)(np.array([4, 2])).shape == (4, 2)


def test_dtypes_and_bounds():
    srng = MRG_RandomStreams(3)
    u32 = srng.uniform((1000,), low=2.0, high=5.0, dtype="float32")
    n64 = srng.normal((1001,), avg=-1.0, std=0.5, dtype="float64")
    b = srng.binomial((1000,), p=0.25, dtype="int8")
    f = theano.function([], [u32, n64, b])
    a, n, bv = f()
    assert a.dtype == np.float32 and np.all(a > 2) and np.all(a < 5)
    assert n.dtype == np.float64 and n.shape == (1001,)
    assert bv.dtype == np.int8 and set(np.unique(bv)) <= {0, 1}
    # dtype from the operands: a float32 variable low keeps float32 under floatX float32 rules.
    lo = T.fscalar("lo")
    assert srng.uniform((2,), low=lo, high=1.0).dtype == np.result_type(theano.config.floatX, "float32").name


def test_moments():
    srng = MRG_RandomStreams(2024)
    u = srng.uniform((200000,), dtype="float64")
    n = srng.normal((200000,), avg=3.0, std=2.0, dtype="float64")
    t = srng.truncated_normal((200000,), avg=0.0, std=1.0, dtype="float64")
    uv, nv, tv = theano.function([], [u, n, t])()
    assert abs(uv.mean() - 0.5) < 0.005 and abs(uv.var() - 1 / 12) < 0.002
    assert abs(nv.mean() - 3.0) < 0.02 and abs(nv.std() - 2.0) < 0.02
    # truncated at 2 std of the untruncated law whose std was scaled so that the result's is 1
    assert np.all(np.abs(tv) <= 2 / 0.87962566103423978 + 1e-9) and abs(tv.std() - 1.0) < 0.02


def test_multinomial_and_choice():
    srng = MRG_RandomStreams(99)
    pvals = np.array([[0.1, 0.2, 0.7], [0.5, 0.25, 0.25]], dtype="float32")
    m = srng.multinomial(pvals=pvals, n=10, dtype="int64")
    c = srng.choice(size=3, replace=False, p=pvals)
    cr = srng.choice(size=5, replace=True, p=pvals)
    mv, cv, crv = theano.function([], [m, c, cr])()
    np.testing.assert_array_equal(mv.sum(axis=1), [10, 10])
    assert cv.shape == (2, 3) and all(sorted(r) == [0, 1, 2] for r in cv.tolist())
    assert crv.shape == (2, 5) and crv.min() >= 0 and crv.max() <= 2
    big = srng.multinomial(pvals=np.tile(pvals, (2000, 1)), n=1)
    freq = theano.function([], big)().reshape(2000, 2, 3).mean(axis=0)
    np.testing.assert_allclose(freq, pvals, atol=0.05)  # 5 standard deviations
    with pytest.raises(ValueError, match="without replacement"):
        theano.function([], srng.choice(size=4, replace=False, p=pvals))()


def test_errors():
    with pytest.raises(ValueError, match="should not be 0"):
        MRG_RandomStreams(0)
    with pytest.raises(ValueError, match="first 3 values"):
        MRG_RandomStreams([0, 0, 0, 1, 2, 3])
    with pytest.raises(TypeError, match="1 integer or 6 integers"):
        MRG_RandomStreams([1, 2, 3])
    srng = MRG_RandomStreams(1)
    with pytest.raises(ValueError, match="value <= 0"):
        srng.uniform((3, 0))
    with pytest.raises(TypeError, match="size must be a tuple"):
        srng.uniform("3")
    with pytest.raises(NotImplementedError, match="n > 1"):
        srng.binomial((3,), n=2)
    with pytest.raises(TypeError, match="pvals"):
        srng.multinomial()
    with pytest.raises(TypeError, match="unexpected keyword"):
        srng.normal((3,), colour="red")
    with pytest.raises(NotImplementedError, match="broadcasting pattern"):
        srng.uniform((3,), low=np.zeros((2, 3)))
    n = T.lscalar("n")
    f = theano.function([n], srng.uniform((n,)))
    with pytest.raises(ValueError, match="negative dimension"):
        f(-2)
    # No gradient through a draw: the bounds' gradient flows through u * (high - low) + low only.
    lo = T.dscalar("lo")
    g = T.grad(srng.uniform((4,), low=lo, high=lo + 1, dtype="float64").sum(), lo)
    assert theano.function([lo], g)(0.5) == pytest.approx(4.0)


def test_failed_call_keeps_the_state():
    srng = MRG_RandomStreams(5)
    n = T.lscalar("n")
    u = srng.uniform((n,), dtype="float32")
    state = srng.updates()[0][0]
    f = theano.function([n], u)
    before = state.get_value()
    with pytest.raises(ValueError):
        f(-1)
    np.testing.assert_array_equal(state.get_value(), before)


@pytest.mark.host_graphs
def test_graph_shows_state_flow_and_pickles():
    srng = MRG_RandomStreams(8)
    u = srng.uniform((4,), dtype="float32")
    f = theano.function([], u)
    names = [str(n.op) for n in f.maker.fgraph.toposort()]
    assert any(s.startswith("mrg_uniform{TensorType(float32, vector)") for s in names), names
    op = [n.op for n in f.maker.fgraph.toposort() if isinstance(n.op, theano.sandbox.rng_mrg.mrg_uniform)][0]
    assert pickle.loads(pickle.dumps(op)) == op
    g = pickle.loads(pickle.dumps(f))
    np.testing.assert_array_equal(g(), f())  # the state travels with the function
