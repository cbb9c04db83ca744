"""hypatia.tensor.nnet (T.nnet): Theano's neural-network ops.

basic: softmax and its variants, the cross-entropies, relu, elu, softsign; sigm: the sigmoid
family. (Theano's conv and bn modules would sit beside them.)
"""
from hypatia.tensor.nnet import basic, sigm  # noqa: F401
from hypatia.tensor.nnet.basic import *  # noqa: F401,F403
from hypatia.tensor.nnet.sigm import *  # noqa: F401,F403
