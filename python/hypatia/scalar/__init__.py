"""hypatia.scalar (theano.scalar): Theano's dtype rule, upcast. Theano's scalar types and scalar
ops are not built: the tensor ops of 0-d tensors (T.dscalar(), T.exp ...) serve in their place."""
import numpy as np

from hypatia.configparser import config


def upcast(dtype, *dtypes):
    """The dtype of an operation on operands of these dtypes (numpy's promotion of their arrays),
    e.g. upcast('int8', 'float32') is 'float32', upcast('int32', 'float32') 'float64'. With
    config.cast_policy 'numpy+floatX' and floatX float32, float64 becomes float32 unless asked
    for (Theano's keep_float32); Hypatia has the 'custom' policy only, so that never applies."""
    return np.result_type(*[np.dtype(d) for d in (dtype, *dtypes)]).name


__all__ = ["upcast", "config"]
