"""hypatia.sandbox: the modules Theano kept under theano.sandbox that programs still import:
rng_mrg (MRG_RandomStreams), multinomial (the ops that turn uniforms into multinomial draws) and
cuda (the transfers' old names: cuda.basic_ops.gpu_from_host)."""
from hypatia.sandbox import cuda, multinomial, rng_mrg  # noqa: F401
