"""hypatia.sandbox: the modules Theano kept under theano.sandbox that programs still import:
rng_mrg (MRG_RandomStreams) and multinomial (the ops that turn uniforms into multinomial draws)."""
from hypatia.sandbox import multinomial, rng_mrg  # noqa: F401
