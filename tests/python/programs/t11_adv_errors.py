"""Adversarial: wrong shapes / dtypes / argument lists must raise clear Python exceptions
(types as Theano 1.0.5 raises them, messages naming the op and the shapes or the input)."""
import sys
import re
import numpy as np
import hypatia as theano
import hypatia.tensor as T
from hypatia.tensor.nnet import conv2d

FAIL = []


def check(cond, msg):
    if not cond:
        FAIL.append(msg)
        print("FAIL:", msg)


def expect_raise(exc_types, fn, what, contains_all=(), contains_any=()):
    """Run fn; require an exception of exc_types whose message contains every string in
    contains_all and at least one of contains_any (case-insensitive, whitespace removed)."""
    try:
        fn()
    except exc_types as e:
        s = str(e)
        norm = re.sub(r'\s+', '', s).lower()
        for c in contains_all:
            check(re.sub(r'\s+', '', c).lower() in norm, "%s: message lacks %r:\n    %s" % (what, c, s[:600]))
        if contains_any:
            check(any(re.sub(r'\s+', '', c).lower() in norm for c in contains_any),
                  "%s: message lacks any of %r:\n    %s" % (what, contains_any, s[:600]))
        return e
    except Exception as e:
        check(False, "%s: raised %s, expected %s: %s" % (what, type(e).__name__,
                                                        getattr(exc_types, '__name__', exc_types), str(e)[:400]))
        return e
    check(False, "%s: no exception raised" % what)


x = T.dmatrix('x')
y = T.dmatrix('y')

# --- elementwise shape mismatch: ValueError naming the op and both shapes
f_add = theano.function([x, y], x + y)
expect_raise(ValueError, lambda: f_add(np.ones((2, 3)), np.ones((2, 4))), "elemwise add (2,3)+(2,4)",
             contains_all=("3", "4"), contains_any=("add", "elemwise"))
# also inside a bigger fused expression
f_fused = theano.function([x, y], T.exp(x) * 2 + T.tanh(y))
expect_raise(ValueError, lambda: f_fused(np.ones((2, 3)), np.ones((5, 3))), "fused elemwise (2,3) vs (5,3)",
             contains_all=("2", "5"))

# --- dot shape mismatch
f_dot = theano.function([x, y], T.dot(x, y))
expect_raise(ValueError, lambda: f_dot(np.ones((2, 3)), np.ones((4, 5))), "dot (2,3).(4,5)",
             contains_all=("3", "4"), contains_any=("dot", "gemm", "gemv"))

# --- reshape to an incompatible size
f_rs = theano.function([x], x.reshape((4, 4)))
expect_raise(ValueError, lambda: f_rs(np.ones((3, 5))), "reshape 15 -> (4,4)",
             contains_any=("reshape",))

# --- index out of bounds
v = T.dvector('v')
i = T.lscalar('i')
f_idx = theano.function([v, i], v[i])
expect_raise(IndexError, lambda: f_idx(np.ones(3), 5), "v[5] with len 3", contains_all=("5",))
ivec = T.lvector('ivec')
f_adv = theano.function([v, ivec], v[ivec])
expect_raise(IndexError, lambda: f_adv(np.ones(3), np.array([0, 7])), "v[[0,7]] with len 3", contains_all=("7",))

# --- conv2d with mismatched channel counts
xi = T.tensor4('xi')
wi = T.tensor4('wi')
f_conv = theano.function([xi, wi], conv2d(xi, wi))
expect_raise(ValueError, lambda: f_conv(np.ones((1, 3, 5, 5)), np.ones((2, 2, 3, 3))), "conv2d 3 vs 2 channels",
             contains_any=("conv", "corr"))

# --- wrong number of dimensions: TypeError naming the input
expect_raise(TypeError, lambda: f_add(np.ones(3), np.ones((2, 3))), "1-d array into dmatrix",
             contains_all=("dimensions",), contains_any=("'x'", "x"))

# --- float64 into float32 input without allow_input_downcast
fx = T.fmatrix('fx')
f32 = theano.function([fx], fx * 2)
e = expect_raise(TypeError, lambda: f32(np.ones((2, 2))), "float64 -> fmatrix", contains_all=("float64",),
                 contains_any=("allow_input_downcast",))
# int64 array into int32 vector
iv = T.ivector('iv')
fi = theano.function([iv], iv + 1)
expect_raise(TypeError, lambda: fi(np.array([1, 2], dtype='int64')), "int64 -> ivector", contains_all=("int64",))
# float array into an int vector
expect_raise(TypeError, lambda: fi(np.array([1.5, 2.0])), "float64 -> ivector", contains_all=("float64",))
# a string where a matrix is expected
expect_raise((TypeError, ValueError), lambda: f_add("abc", np.ones((2, 2))), "string into dmatrix")
# None where a matrix is expected
expect_raise((TypeError, ValueError), lambda: f_add(None, np.ones((2, 2))), "None into dmatrix")

# --- argument count / keyword errors
expect_raise(TypeError, lambda: f_add(np.ones((2, 2))), "too few args", contains_any=("y", "missing"))
expect_raise(TypeError, lambda: f_add(np.ones((2, 2)), np.ones((2, 2)), np.ones((2, 2))), "too many args")
expect_raise(TypeError, lambda: f_add(np.ones((2, 2)), z=np.ones((2, 2))), "unknown keyword", contains_all=("z",))
r = f_add(y=np.ones((2, 2)), x=np.zeros((2, 2)) + 2)
check(np.allclose(r, 3), "keyword arguments by input name")
# both positional and keyword for the same input
expect_raise(TypeError, lambda: f_add(np.ones((2, 2)), np.ones((2, 2)), x=np.ones((2, 2))),
             "same input positional and keyword")

# --- graph construction errors
w32 = theano.shared(np.zeros(3, dtype='float32'), name='w32')
expect_raise(TypeError, lambda: theano.function([], [], updates=[(w32, w32 + np.ones(3))]),
             "update of float32 shared with float64 expression", contains_all=("update",), contains_any=("w32",))
sv = theano.shared(np.zeros(3), name='sv')
expect_raise(TypeError, lambda: theano.function([sv], sv * 2), "shared variable as explicit input",
             contains_any=("shared",))
expect_raise(Exception, lambda: theano.function([v, v], v * 2), "duplicate input variable")
expect_raise(Exception, lambda: theano.function([v], v, updates=[(sv, sv + 1), (sv, sv + 2)]), "duplicate update")
z = T.dvector('z')
e = expect_raise(Exception, lambda: theano.function([v], v + z), "missing input", contains_all=("z",))
check(e is not None and type(e).__name__ == 'MissingInputError', "missing input should raise MissingInputError, got %r"
      % type(e).__name__)
expect_raise(TypeError, lambda: T.grad(v * 2, v), "grad of non-scalar")
expect_raise(Exception, lambda: T.grad(v.sum(), [v, 3.0]), "grad wrt a python float")
expect_raise((TypeError, ValueError), lambda: x.dimshuffle(0, 1, 2), "dimshuffle with too many dims")
expect_raise(Exception, lambda: T.concatenate([x, v], axis=0), "concatenate 2d with 1d")
expect_raise(Exception, lambda: theano.scan(lambda a: a, sequences=T.dscalar('sc')), "scan over a 0-d sequence")
# the update of a shared variable with a mismatched broadcastable pattern
wb = theano.shared(np.zeros((1, 3)), name='wb')   # not broadcastable by default
check(wb.broadcastable == (False, False), "shared() default broadcastable should be all False, got %r" % (wb.broadcastable,))

# --- scan runtime error inside the step: must propagate as an exception mentioning the shapes
W = T.dmatrix('W')
seq = T.dmatrix('seq')
hs, _ = theano.scan(lambda s, W: T.dot(s, W), sequences=seq, non_sequences=W)
f_scan = theano.function([seq, W], hs)
expect_raise(ValueError, lambda: f_scan(np.ones((4, 3)), np.ones((5, 2))), "scan step dot mismatch",
             contains_all=("3", "5"))

# --- after all these errors, functions still work
check(np.allclose(f_add(np.ones((2, 3)), np.ones((2, 3))), 2), "function usable after a failed call")
check(np.allclose(f_scan(np.ones((4, 3)), np.ones((3, 2))), 3), "scan function usable after a failed call")

if FAIL:
    print("%d FAILURES" % len(FAIL))
    sys.exit(1)
print("OK t11_adv_errors")
