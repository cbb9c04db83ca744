"""hypatia.sandbox.multinomial: Theano's MultinomialFromUniform and ChoiceFromUniform ops (C++).

``MultinomialFromUniform(odtype)(pvals, unis, n)``: counts of pvals' shape from rows * n uniforms
(pvals a float matrix, unis a float vector, n an integer scalar, all symbolic);
``ChoiceFromUniform(odtype, replace=False)(pvals, unis, n)``: (rows, n) indices. As in Theano,
pvals is not checked (negative entries or rows that do not sum to 1 give what the cumulative sums
give), and the gradient is zero.
"""
from hypatia import _core

MultinomialFromUniform = _core.MultinomialFromUniform
ChoiceFromUniform = _core.ChoiceFromUniform

__all__ = ["MultinomialFromUniform", "ChoiceFromUniform"]
