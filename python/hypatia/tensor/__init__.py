"""hypatia.tensor (import hypatia.tensor as T): Theano's tensor namespace.

Type constructors (scalar .. tensor4, with b/w/i/l/f/d prefixes), every op of the core as a
function, Python operators and methods on variables, gradients (T.grad, T.Rop, T.Lop), sort and
argsort, T.nnet, T.extra_ops, T.nlinalg and T.slinalg (diag, diagonal, tri, tril, triu and
trace also at the top). Modules as in Theano: basic (with shape_ops), type, var,
sharedvar, sort, extra_ops, nnet (a package).
"""
from hypatia.tensor import basic, blas, extra_ops, nnet, opt, sharedvar, shape_ops, signal, type  # noqa: F401,A004
from hypatia.tensor import var as _var  # noqa: F401  (attaches operators and methods to Variable)
from hypatia.tensor.basic import *  # noqa: F401,F403
from hypatia.tensor.basic import (  # noqa: F401  (names the star import skips or shadows)
    Apply, Constant, SharedVariable, TensorConstant, TensorSharedVariable, TensorType, TensorVariable, Variable,
    abs, all, any, max, min, pow, round, sum, _dtype_name,
)
from hypatia.tensor.sort import argsort, argtopk, inverse_permutation, sort, topk, topk_and_argtopk  # noqa: E402,F401  (after `var`: T.sort is the function)
from hypatia.tensor import nlinalg, slinalg  # noqa: E402,F401
from hypatia.tensor.linalg_basic import diag, diagonal, tri, tril, triu, trace  # noqa: E402,F401
from hypatia.tensor.extra_ops import (  # noqa: E402,F401  (Theano's T.fill_diagonal, T.bincount, ...)
    bartlett, bincount, fill_diagonal, fill_diagonal_offset, ravel_multi_index, unravel_index,
)
from hypatia.tensor import subtensor  # noqa: E402,F401  (T.subtensor is the module, as in Theano)
from hypatia.tensor.subtensor import (  # noqa: E402,F401  (Theano's T.advanced_*)
    advanced_inc_subtensor, advanced_inc_subtensor1, advanced_set_subtensor, advanced_set_subtensor1,
    advanced_subtensor, advanced_subtensor1,
)
from hypatia.gradient import Lop, Rop, grad, hessian, jacobian, verify_grad, consider_constant  # noqa: E402,F401
from hypatia.configparser import config  # noqa: E402,F401

__all__ = [n for n in dir(basic) if not n.startswith("_")] + ["nnet", "extra_ops", "grad", "Lop", "Rop", "jacobian",
                                                              "hessian", "verify_grad", "sort", "argsort", "nlinalg",
                                                              "slinalg", "diag", "diagonal", "tri", "tril", "triu",
                                                              "trace"]
