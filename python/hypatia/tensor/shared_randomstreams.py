"""hypatia.tensor.shared_randomstreams: Theano's RandomStreams.

Each random variable gets a shared variable holding its generator state (``v.rng``), seeded as
Theano seeded it: the streams' seed generator ``numpy.random.RandomState(seed)`` gives each new
variable a seed ``randint(2**30)``, and the variable draws from ``RandomState(that seed)``; so a
program gives the numbers it gave under Theano. The state's ``default_update`` is the advanced state,
so ``function`` advances it without being told (``no_default_updates=True`` keeps it). The draws are
numpy's legacy RandomState algorithms in C++ (hypatia::RandomStreams from C++). A state is a uint32
vector (``raw_random.state_to_randomstate`` turns it into a numpy RandomState); ``srng[v]`` and
``srng[v] = numpy.random.RandomState(...)`` read and set it as RandomState objects, as in Theano.
"""
import numbers

import numpy as np

from hypatia import _core
from hypatia.tensor import raw_random


class RandomStreams:
    """Module component with an interface like numpy.random.RandomState, on shared states.

    seed: an int in [0, 2**32) for reproducible streams, None for the operating system's entropy.
    """

    def __init__(self, seed=None):
        self._impl = _core.RandomStreams(self._check_seed(seed))
        self.default_instance_seed = seed
        self.state_updates = []  # (state, new state) per random variable

    def __getstate__(self):
        # (A model that keeps its streams pickles with them: the seed generator goes on where it was.)
        state = dict(self.__dict__)
        impl = state.pop("_impl")
        state["_hyp_impl"] = (impl.default_seed, list(impl.seed_generator), list(impl.state_updates))
        return state

    def __setstate__(self, state):
        state = dict(state)
        seed, generator, made = state.pop("_hyp_impl")
        self.__dict__.update(state)
        self._impl = _core.RandomStreams(seed)
        self._impl.set_seed_generator(generator)
        for s, n in made:
            self._impl.add_update(s, n)

    @staticmethod
    def _check_seed(seed):
        if seed is None:
            return None
        if not isinstance(seed, (numbers.Integral, np.integer)) or isinstance(seed, bool) or not 0 <= seed < 2**32:
            raise ValueError(f"RandomStreams: seed must be None or an integer in [0, 2**32), got {seed!r}")
        return int(seed)

    def updates(self):
        return list(self.state_updates)

    def seed(self, seed=None):
        """Re-seeds every random variable made so far from a new seed generator (the construction
        seed when None)."""
        self._impl.seed(self._check_seed(self.default_instance_seed if seed is None else seed))

    def __getitem__(self, item):
        """The state of random variable `item` as a numpy RandomState (a copy)."""
        return raw_random.state_to_randomstate(item.rng.get_value())

    def __setitem__(self, item, val):
        """Sets the state of random variable `item` from a numpy RandomState."""
        if not isinstance(val, np.random.RandomState):
            raise TypeError(f"expected a numpy.random.RandomState, got {type(val).__name__}")
        item.rng.set_value(raw_random.randomstate_to_state(val), borrow=True)

    def gen(self, op, *args, **kwargs):
        """op(new state, *args, **kwargs) for a raw_random function op: the draw, its state kept
        in a new shared variable with a default update."""
        state = self._impl.new_state()
        state.tag.is_rng = True
        new_r, out = op(state, *args, **kwargs)
        out.rng = state
        out.update = (state, new_r)
        self._impl.add_update(state, new_r)
        self.state_updates.append(out.update)
        state.default_update = new_r
        return out

    def uniform(self, size=None, low=0.0, high=1.0, ndim=None, dtype=None):
        return self.gen(raw_random.uniform, size, low, high, ndim=ndim, dtype=dtype)

    def normal(self, size=None, avg=0.0, std=1.0, ndim=None, dtype=None):
        return self.gen(raw_random.normal, size, avg, std, ndim=ndim, dtype=dtype)

    def binomial(self, size=None, n=1, p=0.5, ndim=None, dtype="int64", prob=None):
        return self.gen(raw_random.binomial, size, n, p, ndim=ndim, dtype=dtype, prob=prob)

    def random_integers(self, size=None, low=0, high=1, ndim=None, dtype="int64"):
        return self.gen(raw_random.random_integers, size, low, high, ndim=ndim, dtype=dtype)

    def choice(self, size=None, a=2, replace=True, p=None, ndim=None, dtype="int64"):
        return self.gen(raw_random.choice, size, a, replace, p, ndim=ndim, dtype=dtype)

    def poisson(self, size=None, lam=None, ndim=None, dtype="int64"):
        if lam is None:
            raise TypeError("RandomStreams.poisson: lam is required")
        return self.gen(raw_random.poisson, size, lam, ndim=ndim, dtype=dtype)

    def permutation(self, size=None, n=1, ndim=None, dtype="int64"):
        return self.gen(raw_random.permutation, size, n, ndim=ndim, dtype=dtype)

    def multinomial(self, size=None, n=1, pvals=(0.5, 0.5), ndim=None, dtype="int64"):
        return self.gen(raw_random.multinomial, size, n, pvals, ndim=ndim, dtype=dtype)

    def gamma(self, size=None, shape=1.0, scale=1.0, ndim=None, dtype=None):
        return self.gen(raw_random.gamma, size, shape, scale, ndim=ndim, dtype=dtype)

    def beta(self, size=None, a=1.0, b=1.0, ndim=None, dtype=None):
        return self.gen(raw_random.beta, size, a, b, ndim=ndim, dtype=dtype)

    def shuffle_row_elements(self, input):
        """input with the elements of each row (its last axis) permuted, each row its own way."""
        from hypatia import tensor as T

        perm = self.permutation(size=input.shape[:-1], n=input.shape[-1], ndim=input.ndim - 1)
        rows = T.arange(input.shape[0]) if input.ndim == 2 else None
        if input.ndim == 1:
            shuffled = input[perm]
        elif input.ndim == 2:
            shuffled = input[rows.dimshuffle(0, "x"), perm]
        else:
            raise NotImplementedError("shuffle_row_elements: only vectors and matrices")
        perm.input = input
        return shuffled


__all__ = ["RandomStreams"]
