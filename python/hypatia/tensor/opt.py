"""hypatia.tensor.opt: the names Theano users import from theano.tensor.opt.

`Assert(msg)(x, *conditions)` (and `assert_op`, an `Assert()`) is x, checked when the function
runs: each condition, a 0-d value, must be nonzero, or the call raises AssertionError with the
message. The gradient passes through to x. Constant true conditions are dropped when compiling
(local_remove_useless_assert). Theano's graph rewrites themselves are C++ passes here
(hypatia.printing and the mode's optimizer flags name them).
"""
from hypatia import _core

Assert = _core.Assert
assert_op = Assert()
assert_ = assert_op

__all__ = ["Assert", "assert_op", "assert_"]
