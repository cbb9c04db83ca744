"""Adversarial: shared-variable and buffer semantics.
- a failed call must leave shared variables unchanged
- borrow=True / borrow=False aliasing at construction, get_value, set_value (Theano CPU behaviour)
- set_value with a different shape / wrong ndim / wrong dtype
- returned outputs must not alias inputs, shared storage, or be overwritten by later calls
- inputs must never be modified by a function"""
import sys
import numpy as np
import hypatia as theano
import hypatia.tensor as T

FAIL = []


def check(cond, msg):
    if not cond:
        FAIL.append(msg)
        print("FAIL:", msg)


# ---------------------------------------------------------------- failed call leaves state unchanged
x = T.dmatrix('x')
y = T.dvector('y')
W = theano.shared(np.ones((3, 1)), name='W')
b = theano.shared(np.zeros(1), name='b')
count = theano.shared(np.asarray(0, dtype='int64'), name='count')
pred = T.dot(x, W).flatten() + b[0]
cost = T.mean((pred - y) ** 2)
gW, gb = T.grad(cost, [W, b])
train = theano.function([x, y], cost, updates=[(W, W - 0.1 * gW), (b, b - 0.1 * gb), (count, count + 1)])
W0, b0 = W.get_value(), b.get_value()
# (a) runtime shape mismatch: 5 rows of x but 4 targets
try:
    train(np.ones((5, 3)), np.ones(4))
    check(False, "shape-mismatched training call should raise")
except ValueError:
    pass
except Exception as e:
    check(False, "shape-mismatched training call raised %s (Theano: ValueError)" % type(e).__name__)
check(np.array_equal(W.get_value(), W0), "W changed by a failed call")
check(np.array_equal(b.get_value(), b0), "b changed by a failed call")
check(int(count.get_value()) == 0, "count changed by a failed call: %r" % count.get_value())
# (b) bad input type: nothing may change either
try:
    train(np.ones(3), np.ones(3))
    check(False, "wrong-ndim training call should raise")
except TypeError:
    pass
except Exception as e:
    check(False, "wrong-ndim call raised %s (Theano: TypeError)" % type(e).__name__)
check(np.array_equal(W.get_value(), W0) and int(count.get_value()) == 0, "state changed by a call with bad input types")
# (c) a good call afterwards works and updates exactly once
c = train(np.ones((4, 3)), np.ones(4) * 2)
check(np.isclose(c, 1.0), "cost after failed calls: %r" % c)
check(int(count.get_value()) == 1, "count after one good call: %r" % count.get_value())
check(np.allclose(W.get_value(), W0 - 0.1 * (2 * 1.0 * np.ones((3, 1)) * 1.0)), "W after one good call: %r" % W.get_value().ravel())

# ---------------------------------------------------------------- borrow at construction (Theano aliasing doc example)
np_array = np.ones(2, dtype='float32')
s_default = theano.shared(np_array)
s_false = theano.shared(np_array, borrow=False)
s_true = theano.shared(np_array, borrow=True)
np_array += 1
check(np.array_equal(s_default.get_value(), [1, 1]), "shared(arr) must copy: %r" % s_default.get_value())
check(np.array_equal(s_false.get_value(), [1, 1]), "shared(arr, borrow=False) must copy")
check(np.array_equal(s_true.get_value(), [2, 2]),
      "shared(arr, borrow=True) should alias arr on CPU (Theano docs aliasing example): %r" % s_true.get_value())

# ---------------------------------------------------------------- get_value borrow
s = theano.shared(np.arange(4.), name='s')
v_copy = s.get_value()
v_copy[0] = 100
check(s.get_value()[0] == 0, "get_value() must return a copy")
v_borrow = s.get_value(borrow=True)
v_borrow[1] = 200
check(s.get_value()[1] == 200, "get_value(borrow=True) should return the internal buffer on CPU")
v_int = s.get_value(borrow=True, return_internal_type=True)
check(isinstance(v_int, np.ndarray), "return_internal_type=True gives an ndarray on CPU")

# ---------------------------------------------------------------- set_value semantics
arr = np.zeros(3)
s.set_value(arr)                    # copy
arr[0] = 5
check(s.get_value()[0] == 0, "set_value(arr) must copy")
arr2 = np.zeros(3)
s.set_value(arr2, borrow=True)      # alias on CPU
arr2[0] = 7
check(s.get_value()[0] == 7, "set_value(arr, borrow=True) should alias on CPU")
# different shape is allowed; compiled functions follow the new shape
f_sum = theano.function([], [s.sum(), s.shape])
s.set_value(np.ones(10))
r = f_sum()
check(np.isclose(r[0], 10) and tuple(r[1]) == (10,), "function after set_value with a new shape: %r" % (r,))
M = theano.shared(np.ones((2, 3)), name='M')
f_M = theano.function([x], T.dot(x, M))
M.set_value(np.ones((3, 5)))
check(f_M(np.ones((4, 3))).shape == (4, 5), "dot with resized shared matrix")
# wrong ndim -> TypeError, value unchanged
try:
    M.set_value(np.ones(3))
    check(False, "set_value with wrong ndim should raise TypeError")
except TypeError:
    pass
except Exception as e:
    check(False, "set_value wrong ndim raised %s (Theano: TypeError)" % type(e).__name__)
check(M.get_value().shape == (3, 5), "failed set_value must not change the value")
# float64 into a float32 shared -> TypeError (Theano's filter refuses the downcast)
s32 = theano.shared(np.zeros(3, dtype='float32'), name='s32')
try:
    s32.set_value(np.ones(3))
    check(False, "set_value(float64 array) on a float32 shared variable should raise TypeError")
except TypeError:
    pass
except Exception as e:
    check(False, "set_value float64->float32 raised %s (Theano: TypeError)" % type(e).__name__)
s32.set_value(np.ones(3, dtype='float32'))
s32.set_value([1, 2, 3])  # python list: lossless conversion accepted
check(s32.get_value().dtype == np.float32 and np.array_equal(s32.get_value(), [1, 2, 3]), "set_value(list)")
# int shared
si = theano.shared(np.arange(3), name='si')
check(si.dtype == 'int64', "shared(int array) dtype %r" % si.dtype)
try:
    si.set_value(np.array([1.5, 2.5, 3.5]))
    check(False, "set_value(float array) on int64 shared should raise TypeError")
except TypeError:
    pass
except Exception as e:
    check(False, "set_value float->int raised %s (Theano: TypeError)" % type(e).__name__)
# python scalars
sc = theano.shared(1.5)
check(sc.dtype == 'float64' and sc.ndim == 0, "shared(1.5): dtype %r ndim %r" % (sc.dtype, sc.ndim))
sc32 = theano.shared(np.float32(1.5))
check(sc32.dtype == 'float32', "shared(np.float32) dtype %r" % sc32.dtype)
sb = theano.shared(np.zeros((1, 3)), broadcastable=(True, False))
check(sb.broadcastable == (True, False), "shared broadcastable kwarg")
f_b = theano.function([x], x + sb)
check(f_b(np.ones((4, 3))).shape == (4, 3), "broadcastable shared broadcasts")

# ---------------------------------------------------------------- outputs vs inputs / storage aliasing
v = T.dvector('v')
f_id = theano.function([v], v)
a = np.arange(3.)
r = f_id(a)
check(r is not a, "function([v], v) must not return the input object")
r[0] = 99
check(a[0] == 0, "modifying the output of function([v], v) modified the input")
w = theano.shared(np.arange(3.), name='w')
f_w = theano.function([], w)
r = f_w()
r[0] = 99
check(w.get_value()[0] == 0, "modifying the output of function([], w) modified the shared variable")
f_wu = theano.function([], w, updates=[(w, w * 2)])
r1 = f_wu()
r2 = f_wu()
check(np.array_equal(r1, [0, 1, 2]) and np.array_equal(r2, [0, 2, 4]),
      "returned value must be the pre-update value and must not change later: %r %r" % (r1, r2))
f_sq = theano.function([v], v ** 2 + 1)
o1 = f_sq(np.array([1., 2.]))
o2 = f_sq(np.array([3., 4.]))
check(np.array_equal(o1, [2., 5.]), "first result overwritten by second call: %r" % o1)
check(np.array_equal(o2, [10., 17.]), "second result")
# inputs are never modified by inplace optimisations
inp = np.array([1., 2., 3.])
inp_copy = inp.copy()
f_inplace = theano.function([v], [T.exp(v) + v * 2, T.set_subtensor(v[0], 5.), T.inc_subtensor(v[1:], 1.)])
f_inplace(inp)
check(np.array_equal(inp, inp_copy), "function modified its input array: %r" % inp)
# the same array passed for two inputs
vv = T.dvector('vv')
f_two = theano.function([v, vv], [T.set_subtensor(v[0], 0.), vv * 2])
arr = np.array([1., 2.])
o, o2 = f_two(arr, arr)
check(np.array_equal(arr, [1., 2.]) and np.array_equal(o2, [2., 4.]), "same array for two inputs")
# updating a shared variable from an input aliasing its value
arr = np.array([1., 1., 1.])
u = theano.shared(arr, borrow=True)
f_u = theano.function([v], u.sum(), updates=[(u, u + v)])
f_u(arr)
check(np.allclose(u.get_value(), 2.), "update with input aliasing the shared buffer: %r" % u.get_value())
# Out(borrow=True) results may be reused, but values at return time must be right
f_ob = theano.function([v], theano.Out(v * 3, borrow=True))
check(np.array_equal(f_ob(np.array([1., 2.])), [3., 6.]), "Out(borrow=True) value")
# non-contiguous / strided / Fortran-ordered inputs
big = np.arange(24.).reshape(4, 6)
f_t = theano.function([x], x * 1 + T.dot(x, T.ones((x.shape[1], 1))))
for arrv in [big[:, ::2], big.T, np.asfortranarray(big), big[::-1]]:
    exp = arrv * 1 + arrv.sum(1, keepdims=True)
    check(np.allclose(f_t(arrv), exp), "strided/fortran input of shape %r strides %r" % (arrv.shape, arrv.strides))
# zero-size inputs
check(f_t(np.zeros((0, 3))).shape == (0, 1) or f_t(np.zeros((0, 3))).shape == (0, 3),
      "zero-size input: %r" % (f_t(np.zeros((0, 3))).shape,))
check(np.isclose(theano.function([v], v.sum())(np.zeros(0)), 0.), "sum of empty vector")

if FAIL:
    print("%d FAILURES" % len(FAIL))
    sys.exit(1)
print("OK t12_adv_shared")
