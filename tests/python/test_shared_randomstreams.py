"""RandomStreams (Theano's shared_randomstreams) against numpy's RandomState, which Theano drew with:
each variable's state is RandomState(RandomState(seed).randint(2**30)), so its draws must be
numpy's, bit for bit, for every distribution, size rule and parameter broadcast; then the API:
default updates, seed(), srng[v] as RandomState objects, errors, a failed call keeping the state."""
import warnings

import numpy as np
import pytest

import hypatia as theano
import hypatia.tensor as T
from hypatia.tensor import raw_random
from hypatia.tensor.shared_randomstreams import RandomStreams


def numpy_states(seed, count):
    """The RandomStates Theano's RandomStreams(seed) gives its first `count` variables."""
    gen = np.random.RandomState(seed)
    return [np.random.RandomState(int(gen.randint(2**30))) for _ in range(count)]


def test_every_distribution_matches_numpy():
    srng = RandomStreams(seed=2024)
    cases = [
        (srng.uniform((5, 3), low=-2.0, high=3.0, dtype="float64"), lambda r: r.uniform(-2.0, 3.0, (5, 3))),
        (srng.normal((7,), avg=1.0, std=2.0, dtype="float64"), lambda r: r.normal(1.0, 2.0, (7,))),
        (srng.normal((2, 3), dtype="float64"), lambda r: r.normal(0.0, 1.0, (2, 3))),
        (srng.binomial((40,), n=5, p=0.3), lambda r: r.binomial(5, 0.3, (40,))),
        (srng.binomial((40,), n=100, p=0.7), lambda r: r.binomial(100, 0.7, (40,))),
        (srng.random_integers((30,), low=-3, high=9), lambda r: np.array([r.randint(-3, 10) for _ in range(30)])),
        (srng.choice((6,), a=10, replace=True), lambda r: r.choice(10, (6,), True)),
        (srng.choice((4,), a=10, replace=False), lambda r: r.choice(10, (4,), False)),
        (srng.choice((5,), a=4, replace=True, p=[0.1, 0.2, 0.3, 0.4]),
         lambda r: r.choice(4, (5,), True, [0.1, 0.2, 0.3, 0.4])),
        (srng.poisson((25,), lam=3.5), lambda r: r.poisson(3.5, (25,))),
        (srng.poisson((25,), lam=40.0), lambda r: r.poisson(40.0, (25,))),
        (srng.permutation((3,), n=6), lambda r: np.stack([r.permutation(6) for _ in range(3)])),
        (srng.multinomial((4,), n=10, pvals=[0.2, 0.3, 0.5]),
         lambda r: np.stack([r.multinomial(10, [0.2, 0.3, 0.5]) for _ in range(4)])),
        (srng.gamma((9,), shape=0.7, scale=2.0, dtype="float64"), lambda r: r.gamma(0.7, 2.0, (9,))),
        (srng.gamma((9,), shape=4.5, dtype="float64"), lambda r: r.gamma(4.5, 1.0, (9,))),
        (srng.beta((9,), a=0.4, b=0.6, dtype="float64"), lambda r: r.beta(0.4, 0.6, (9,))),
        (srng.beta((9,), a=2.0, b=5.0, dtype="float64"), lambda r: r.beta(2.0, 5.0, (9,))),
    ]
    f = theano.function([], [v for v, _ in cases])
    states = numpy_states(2024, len(cases))
    for call in range(2):  # the states advance between calls as numpy's do
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            for (v, ref), got, rs in zip(cases, f(), states):
                want = np.asarray(ref(rs))
                np.testing.assert_array_equal(got, want.astype(got.dtype), err_msg=f"{v.owner.op} call {call}")


def test_broadcast_parameters_and_size_none():
    srng = RandomStreams(seed=7)
    low = T.dvector("low")
    u = srng.uniform(low=low, high=10.0)  # size None: low's shape
    n = srng.normal((2, 3), avg=np.array([0.0, 10.0, 20.0]), std=1.0, dtype="float64")
    p = srng.permutation(n=5)  # one permutation
    f = theano.function([low], [u, n, p])
    lv = np.array([0.0, 5.0, 9.0])
    rs = numpy_states(7, 3)
    got = f(lv)
    np.testing.assert_array_equal(got[0], rs[0].uniform(lv, 10.0).astype(got[0].dtype))
    np.testing.assert_array_equal(got[1], rs[1].normal([0.0, 10.0, 20.0], 1.0, (2, 3)))
    np.testing.assert_array_equal(got[2], rs[2].permutation(5))
    assert u.ndim == 1 and p.ndim == 1 and n.ndim == 2


def test_float32_draws_are_numpys_rounded():
    srng = RandomStreams(seed=1)
    u = srng.uniform((1000,), dtype="float32")
    got = theano.function([], u)()
    want = numpy_states(1, 1)[0].uniform(0.0, 1.0, (1000,)).astype("float32")
    np.testing.assert_array_equal(got, want)


def test_updates_seed_and_state_access():
    srng = RandomStreams(seed=99)
    u = srng.normal((4,), dtype="float64")
    f = theano.function([], u)
    a, b = f(), f()
    assert not np.array_equal(a, b)
    srng.seed(99)
    np.testing.assert_array_equal(f(), a)
    srng.seed()  # the construction seed
    np.testing.assert_array_equal(f(), a)
    # srng[u] is the state as a numpy RandomState; setting it restarts the stream there.
    rs = srng[u]
    assert isinstance(rs, np.random.RandomState)
    np.testing.assert_array_equal(f(), rs.normal(0.0, 1.0, (4,)))
    srng[u] = np.random.RandomState(5)
    np.testing.assert_array_equal(f(), np.random.RandomState(5).normal(0.0, 1.0, (4,)))
    g = theano.function([], u, no_default_updates=True)
    np.testing.assert_array_equal(g(), g())
    assert u.rng.default_update is u.update[1] and u.rng.tag.is_rng
    assert srng.updates() == srng.state_updates and len(srng.updates()) == 1


def test_raw_random_on_an_explicit_state():
    state = theano.shared(raw_random.randomstate_to_state(np.random.RandomState(3)))
    new_state, draws = raw_random.uniform(state, (5,), 0.0, 1.0, dtype="float64")
    f = theano.function([], draws, updates=[(state, new_state)])
    rs = np.random.RandomState(3)
    np.testing.assert_array_equal(f(), rs.uniform(size=5))
    np.testing.assert_array_equal(f(), rs.uniform(size=5))
    np.testing.assert_array_equal(raw_random.state_to_randomstate(state.get_value()).get_state()[1],
                                  rs.get_state()[1])


def test_errors_and_failed_call_keeps_state():
    srng = RandomStreams(seed=3)
    with pytest.raises(ValueError, match="seed must be"):
        RandomStreams(seed=-1)
    sd = T.dscalar("sd")
    n = srng.normal((3,), std=sd, dtype="float64")
    f = theano.function([sd], n)
    before = n.rng.get_value()
    with pytest.raises(ValueError, match="scale < 0"):
        f(-1.0)
    np.testing.assert_array_equal(n.rng.get_value(), before)
    b = srng.binomial((3,), n=5, p=T.dscalar("p"))
    with pytest.raises(ValueError, match="p < 0, p > 1 or p is NaN"):
        theano.function([b.owner.inputs[-1]], b)(1.5)
    with pytest.raises(ValueError, match="shape mismatch"):
        theano.function([], srng.uniform((2, 3), low=np.zeros(4)))()
    with pytest.raises(TypeError, match="lam is required"):
        srng.poisson((3,))
    with pytest.raises(ValueError, match="without replacement|larger sample"):
        theano.function([], srng.choice((5,), a=3, replace=False))()


def test_shuffle_row_elements():
    srng = RandomStreams(seed=11)
    x = T.dmatrix("x")
    s = srng.shuffle_row_elements(x)
    xv = np.arange(12.0).reshape(3, 4)
    out = theano.function([x], s)(xv)
    for row, orig in zip(out, xv):
        assert sorted(row) == sorted(orig)
    assert not np.array_equal(out, xv)


@pytest.mark.host_graphs
def test_graph_shows_random_function_and_pickles():
    import pickle

    srng = RandomStreams(seed=4)
    u = srng.uniform((3,), dtype="float64")
    f = theano.function([], u)
    ops = [n.op for n in f.maker.fgraph.toposort()]
    rf = [op for op in ops if isinstance(op, raw_random.RandomFunction)]
    assert len(rf) == 1 and str(rf[0]) == "RandomFunction{uniform}"
    assert pickle.loads(pickle.dumps(rf[0])) == rf[0]
    g = pickle.loads(pickle.dumps(f))
    np.testing.assert_array_equal(g(), f())
