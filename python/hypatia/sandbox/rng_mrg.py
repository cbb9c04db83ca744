"""hypatia.sandbox.rng_mrg: Theano 1.0's MRG_RandomStreams (MRG31k3p, L'Ecuyer and Touzin 2000).

The same seed and the same calls give the same numbers as Theano 1.0: uniform, binomial and
multinomial bit for bit, normal to float rounding. Each random variable takes the next substream of
the seed; its states live in a shared variable (``v.rstate``) whose ``default_update`` is the
advanced state, so ``function`` advances it without being told (``no_default_updates=True`` keeps
it). ``updates()`` lists the (state, new state) pairs; ``seed(s)`` resets every state made so far.

The generator, the stream layout and the draws are C++ (hypatia._core.MRGRandomStreams, usable from
C++ as hypatia::MRGRandomStreams); this module keeps Theano's signatures, size rules and dtypes.
"""
import numbers

import numpy as np

from hypatia import _convert, _core, _random
from hypatia.sandbox import multinomial  # noqa: F401  (Theano's module imports it)

Variable = _core.Variable
mrg_uniform = _core.mrg_uniform
M1 = 2147483647  # 2^31 - 1
M2 = 2147462579  # 2^31 - 21069


def guess_n_streams(size, warn=False):
    """Theano's guess: prod(size) // 6 for a tuple or list of ints (the product when it is at most
    6), at most 60 * 256; 60 * 256 for a symbolic size."""
    if isinstance(size, (tuple, list)) and all(isinstance(i, numbers.Integral) and not isinstance(i, Variable)
                                               for i in size):
        return _core.mrg_guess_n_streams([int(i) for i in size])
    if warn:
        import warnings

        warnings.warn(f"MRG_RandomStreams can't determine #streams from size ({size}), guessing 60*256",
                      stacklevel=3)
    return 60 * 256


def _seed_list(seed):
    if isinstance(seed, (numbers.Integral, np.integer)) and not isinstance(seed, bool):
        return [int(seed)]
    try:
        values = [int(s) for s in seed]
    except TypeError:
        raise TypeError(f"seed should be 1 integer or 6 integers, got {seed!r}") from None
    if len(values) != 6:
        raise TypeError(f"seed should be 1 integer or 6 integers, got {len(values)} values")
    return values


def _size_var(size, ndim, who):
    # Theano's MRG draws refuse empty dimensions (a size entry <= 0).
    if isinstance(size, (tuple, list)) and any(
            isinstance(i, (numbers.Integral, np.integer)) and not isinstance(i, Variable) and i <= 0 for i in size):
        raise ValueError(f"{who}: the specified size contains a dimension with value <= 0: {size}")
    return _random.size_var(size, ndim, who)


class MRG_RandomStreams:
    """Module component with an interface like numpy.random.RandomState, on MRG31k3p.

    seed: an int in [1, M2) (replicated 6 times), or 6 ints (the first 3 < M1 and not all 0, the
    last 3 < M2 and not all 0).
    """

    def __init__(self, seed=12345):
        self._impl = _core.MRGRandomStreams(_seed_list(seed))
        self.default_instance_seed = seed
        # (state shared variable, new state, size, nstreams) per random variable, as Theano's.
        self.state_updates = []

    # ---- pickling (a model that keeps its streams, self.theano_rng, pickles with them)
    def __getstate__(self):
        state = dict(self.__dict__)
        impl = state.pop("_impl")
        state["_hyp_impl"] = (list(impl.default_seed), [int(v) for v in impl.rstate],
                              [(s, n, k) for s, n, k in impl.state_updates])
        return state

    def __setstate__(self, state):
        state = dict(state)
        seed, rstate, made = state.pop("_hyp_impl")
        self.__dict__.update(state)
        self._impl = _core.MRGRandomStreams(seed)
        self._impl.set_rstate(rstate)
        for s, n, k in made:
            self._impl.add_state_update(s, n, k)

    # ---- the seed's state
    @property
    def rstate(self):
        """The substream the next random variable takes (6 int32)."""
        return np.asarray(self._impl.rstate, dtype="int32")

    @rstate.setter
    def rstate(self, value):
        self.set_rstate(list(np.asarray(value).ravel()))

    def set_rstate(self, seed):
        self._impl.set_rstate(_seed_list(seed))

    def inc_rstate(self):
        """Moves rstate 2^134 steps forward, to the next substream's start."""
        self._impl.inc_rstate()

    def get_substream_rstates(self, n_streams, dtype=None, inc_rstate=True):
        """(n_streams, 6) int32 states spaced 2^72 apart from rstate; then rstate moves on when
        inc_rstate."""
        return self._impl.get_substream_rstates(int(n_streams), bool(inc_rstate))

    def seed(self, seed=None):
        """Re-initializes every random stream made so far, as if made after MRG_RandomStreams(seed)
        (the construction seed when None)."""
        self._impl.seed(None if seed is None else _seed_list(seed))

    def updates(self):
        return [(s, n) for s, n, _, _ in self.state_updates]

    def n_streams(self, size):
        return guess_n_streams(size)

    # ---- what each random variable gets
    def _register(self, before, sample, size, nstreams, target=None):
        made = self._impl.state_updates[before:]
        for state, new_state, _ in made:
            if target is not None:  # Theano's shared(rstates, target=...): where the state lives
                try:
                    _core.set_shared_target(state, target)
                except ValueError as e:
                    raise ValueError(f"MRG_RandomStreams: target={target!r}: {e}") from None
            state.default_update = new_state
            state.tag.is_rng = True
            self.state_updates.append((state, new_state, size, nstreams))
        if made:
            sample.rstate = made[0][0]
            sample.update = (made[0][0], made[0][1])
        return sample

    def _streams(self, size, nstreams):
        return int(nstreams) if nstreams is not None else guess_n_streams(size)

    @staticmethod
    def _no_kwargs(kwargs, who):
        """The target keyword (Theano's: the device of the draw's state, as shared(..., target=));
        any other keyword is an error."""
        kwargs = dict(kwargs)
        target = kwargs.pop("target", None)
        if kwargs:
            raise TypeError(f"{who}() got unexpected keyword arguments {sorted(kwargs)}")
        if target is not None and not isinstance(target, str):
            raise TypeError(f"{who}(target=...) takes a device name ('cpu', 'cuda', 'cuda0'); got {target!r}")
        return target

    def uniform(self, size, low=0.0, high=1.0, ndim=None, dtype=None, nstreams=None, **kwargs):
        """Uniform draws in (low, high) of the given size (a tuple of ints and scalar variables, or
        an integer vector variable). dtype defaults to upcast(floatX, low, high)."""
        target = self._no_kwargs(kwargs, "uniform")
        dtype = _random.default_dtype(low, high) if dtype is None else _convert._dtype_name(dtype)
        size_v = _size_var(size, ndim, "uniform")
        before = len(self._impl.state_updates)
        r = self._impl.uniform(size_v, _random.operand(low), _random.operand(high), dtype, self._streams(size, nstreams))
        return self._register(before, r, size, nstreams, target)

    def normal(self, size, avg=0.0, std=1.0, ndim=None, dtype=None, nstreams=None, truncate=False, **kwargs):
        """Normal draws (Box-Muller); truncate=True redraws values beyond 2 standard deviations."""
        target = self._no_kwargs(kwargs, "normal")
        dtype = _random.default_dtype(avg, std) if dtype is None else _convert._dtype_name(dtype)
        size_v = _size_var(size, ndim, "normal")
        before = len(self._impl.state_updates)
        # Theano draws the uniforms with a symbolic size: 60 * 256 streams unless nstreams is given.
        r = self._impl.normal(size_v, _random.operand(avg), _random.operand(std), dtype,
                              int(nstreams) if nstreams is not None else 60 * 256, bool(truncate))
        return self._register(before, r, size, nstreams, target)

    def truncated_normal(self, size, avg=0.0, std=1.0, ndim=None, dtype=None, nstreams=None, **kwargs):
        """Normal draws truncated at 2 standard deviations, scaled so that std is the result's."""
        std = _random.operand(std) / _convert.constant(0.87962566103423978)
        return self.normal(size=size, avg=avg, std=std, truncate=True, ndim=ndim, dtype=dtype,
                           nstreams=nstreams, **kwargs)

    def binomial(self, size=None, n=1, p=0.5, ndim=None, dtype="int64", nstreams=None, **kwargs):
        """cast(uniform(size) < p, dtype): draws with one trial (n=1, as in Theano)."""
        target = self._no_kwargs(kwargs, "binomial")
        if not (isinstance(n, numbers.Integral) and n == 1):
            raise NotImplementedError("MRG_RandomStreams.binomial with n > 1")
        size_v = _size_var(size, ndim, "binomial")
        udtype = _random.default_dtype(0.0, 1.0)
        before = len(self._impl.state_updates)
        r = self._impl.binomial(size_v, _random.operand(p), _convert._dtype_name(dtype), udtype,
                                self._streams(size, nstreams))
        return self._register(before, r, size, nstreams, target)

    def multinomial(self, size=None, n=1, pvals=None, ndim=None, dtype="int64", nstreams=None, **kwargs):
        """n draws per row of pvals (a matrix): the counts, of pvals' shape. size and ndim are not
        used (Theano's signature); pvals is not checked."""
        target = self._no_kwargs(kwargs, "multinomial")
        if pvals is None:
            raise TypeError("You have to specify pvals")
        if size is not None:
            raise ValueError("Provided a size argument to MRG_RandomStreams.multinomial, which does not use it.")
        if ndim is not None:
            raise ValueError("Provided an ndim argument to MRG_RandomStreams.multinomial, which does not use it.")
        pvals = _convert.as_tensor_variable(pvals)
        udtype = _random.default_dtype(0.0, 1.0)
        before = len(self._impl.state_updates)
        r = self._impl.multinomial(pvals, _convert._int_scalar(n) if not isinstance(n, Variable) else n,
                                   _convert._dtype_name(dtype), udtype,
                                   int(nstreams) if nstreams is not None else 60 * 256)
        return self._register(before, r, None, nstreams, target)

    def choice(self, size=1, a=None, replace=True, p=None, ndim=None, dtype="int64", nstreams=None, **kwargs):
        """`size` indices per row of p (a matrix), in [0, p.shape[1]), drawn without replacement
        (replace=False) or with it. a must be None (Theano's restriction)."""
        target = self._no_kwargs(kwargs, "choice")
        if a is not None:
            raise TypeError("For now, a has to be None in MRG_RandomStreams.choice. Sampled values are between "
                            "0 and p.shape[1]-1")
        if p is None:
            raise TypeError("For now, p has to be specified in MRG_RandomStreams.choice.")
        if ndim is not None:
            raise ValueError("ndim argument to MRG_RandomStreams.choice is not used.")
        p = _convert.as_tensor_variable(p)
        udtype = _random.default_dtype(0.0, 1.0)
        before = len(self._impl.state_updates)
        r = self._impl.choice(p, _convert._int_scalar(size) if not isinstance(size, Variable) else size,
                              bool(replace), _convert._dtype_name(dtype), udtype,
                              int(nstreams) if nstreams is not None else 60 * 256)
        return self._register(before, r, None, nstreams, target)

    def multinomial_wo_replacement(self, size=None, n=1, pvals=None, ndim=None, dtype="int64", nstreams=None,
                                   **kwargs):
        """Deprecated in Theano: choice(size=n, replace=False, p=pvals)."""
        import warnings

        warnings.warn("MRG_RandomStreams.multinomial_wo_replacement() is deprecated; use choice() instead.",
                      DeprecationWarning, stacklevel=2)
        if size is not None:
            raise ValueError("multinomial_wo_replacement does not use size")
        return self.choice(size=n, a=None, replace=False, p=pvals, dtype=dtype, nstreams=nstreams, ndim=ndim,
                           **kwargs)


__all__ = ["MRG_RandomStreams", "guess_n_streams", "mrg_uniform", "M1", "M2"]
