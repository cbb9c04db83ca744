"""hypatia.tensor.nnet (T.nnet): Theano's neural-network ops.

basic: softmax and its variants, the cross-entropies, relu, elu, softsign; sigm: the sigmoid
family; abstract_conv: conv2d and its gradients (T.nnet.conv2d is abstract_conv.conv2d, as in
Theano 1.0), conv3d; conv: the older conv.conv2d; bn: batch normalization; neighbours:
images2neibs and neibs2images (also T.nnet.images2neibs / neibs2images).
"""
from hypatia.tensor.nnet import abstract_conv, basic, bn, conv, neighbours, sigm  # noqa: F401
from hypatia.tensor.nnet.abstract_conv import (  # noqa: F401
    bilinear_upsampling,
    causal_conv1d,
    conv2d,
    conv2d_grad_wrt_inputs,
    conv2d_grad_wrt_weights,
    conv2d_transpose,
    conv3d,
    conv3d_grad_wrt_inputs,
    conv3d_grad_wrt_weights,
    separable_conv2d,
)
from hypatia.tensor.nnet.basic import *  # noqa: F401,F403
from hypatia.tensor.nnet.bn import batch_normalization  # noqa: F401  (T.nnet.batch_normalization, as in Theano)
from hypatia.tensor.nnet.sigm import *  # noqa: F401,F403
from hypatia.tensor.nnet.neighbours import Images2Neibs, images2neibs, neibs2images  # noqa: F401
