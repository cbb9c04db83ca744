"""hypatia.tensor.random: the random streams under one roof (Theano's shared_randomstreams and
raw_random, and MRG_RandomStreams from hypatia.sandbox.rng_mrg)."""
from hypatia.sandbox.rng_mrg import MRG_RandomStreams  # noqa: F401
from hypatia.tensor import raw_random  # noqa: F401
from hypatia.tensor.shared_randomstreams import RandomStreams  # noqa: F401

__all__ = ["RandomStreams", "MRG_RandomStreams", "raw_random"]
