"""Debugging / introspection tools: printing.debugprint (expr, function, file='str', print_type),
pp, Print op (with attrs) inside a graph, pydotprint (graphviz), profile=True + ProfileStats
summary, f.maker.fgraph.toposort(), MonitorMode hooks, NanGuardMode catching a NaN,
mode='DebugMode' / 'FAST_COMPILE' giving the same numbers."""
import sys, os, io, contextlib, tempfile
import numpy as np
import hypatia as theano
import hypatia.tensor as T
from hypatia import printing

FAIL = []
def check(c, m):
    if not c:
        FAIL.append(m); print("FAIL:", m)
def close(a, b, m, rtol=1e-6, atol=1e-8):
    a, b = np.asarray(a), np.asarray(b)
    check(a.shape == b.shape and np.allclose(a, b, rtol=rtol, atol=atol),
          "%s: %s vs %s maxdiff %s" % (m, a.shape, b.shape, np.abs(a - b).max() if a.shape == b.shape else '-'))
rng = np.random.RandomState(2)
x = T.matrix('x'); W = theano.shared(rng.randn(3, 2), name='W'); b = theano.shared(np.zeros(2), name='b')
y = T.nnet.sigmoid(T.dot(x, W) + b)
cost = ((y - 1) ** 2).sum()
X = rng.randn(4, 3)

# ---- debugprint ------------------------------------------------------------------------------
s = printing.debugprint(cost, file='str')
check(isinstance(s, str) and 'W' in s and 'x' in s, "debugprint(expr, file='str') mentions inputs")
print(s)
s2 = theano.printing.debugprint(cost, file='str', print_type=True)
check('TensorType' in s2 or 'float64' in s2, "print_type shows types")
f = theano.function([x], cost, updates=[(b, b + 0.1)], name='costfn')
s3 = theano.printing.debugprint(f, file='str')
check(isinstance(s3, str) and len(s3.splitlines()) >= 2, "debugprint(function)")
print(s3)
buf = io.StringIO()
with contextlib.redirect_stdout(buf):
    r = theano.printing.debugprint(y)
check('x' in buf.getvalue(), "debugprint to stdout")
s4 = theano.printing.debugprint([y, cost], file='str', ids='int')
check(isinstance(s4, str), "debugprint list, ids='int'")
# pp / pprint
p = theano.printing.pp(cost)
check(isinstance(p, str) and 'W' in p and 'x' in p, "pp: %s" % p)
print("pp:", p)
# toposort
topo = f.maker.fgraph.toposort()
check(len(topo) > 0 and all(hasattr(n, 'op') and hasattr(n, 'inputs') for n in topo), "toposort nodes")
names = [type(n.op).__name__ for n in topo]
print("topo ops:", names)
if len(f.maker.fgraph.inputs) < 3:
    print("GAP (hypatia): f.maker.fgraph.inputs lacks the shared variables:", f.maker.fgraph.inputs)
if not hasattr(f, 'get_shared'):
    print("GAP (hypatia): Function.get_shared() missing")
check(len(f.maker.fgraph.outputs) == 2, "fgraph outputs include update (%d)" % len(f.maker.fgraph.outputs))

# ---- Print op ---------------------------------------------------------------------------------
xp = theano.printing.Print('x value')(x)
xs = theano.printing.Print('x shape', attrs=('shape',))(x)
fp = theano.function([x], (xp * 2).sum() + xs.sum())
buf = io.StringIO()
with contextlib.redirect_stdout(buf):
    r = fp(X)
out = buf.getvalue()
print("Print output:", out.strip()[:200])
close(r, 3 * X.sum(), "Print is identity")
check('x value' in out and 'x shape' in out and '(4, 3)' in out.replace('[4 3]', '(4, 3)'), "Print messages")
# gradient through Print
gp = theano.function([x], T.grad((xp ** 2).sum(), x))
with contextlib.redirect_stdout(io.StringIO()):
    close(gp(X), 2 * X, "grad through Print")

# ---- pydotprint -------------------------------------------------------------------------------
tmpd = tempfile.mkdtemp()
try:
    import pydot  # noqa
    have_pydot = True
except ImportError:
    have_pydot = False
try:
    fn = os.path.join(tmpd, 'g.png')
    theano.printing.pydotprint(f, outfile=fn, var_with_name_simple=True)
    check(os.path.exists(fn) and os.path.getsize(fn) > 100, "pydotprint wrote png")
    fn2 = os.path.join(tmpd, 'g2.svg')
    theano.printing.pydotprint(cost, outfile=fn2, format='svg')
    check(os.path.exists(fn2) and b'<svg' in open(fn2, 'rb').read(), "pydotprint svg of expr")
    print("pydotprint ok")
except Exception as e:
    print("pydotprint:", type(e).__name__, str(e)[:200], "(pydot importable: %s)" % have_pydot)
    check(not have_pydot, "pydotprint failed though pydot is installed")

# ---- profiling --------------------------------------------------------------------------------
fprof = theano.function([x], cost, profile=True, name='prof_fn')
import atexit
for _ in range(5):
    fprof(X)
check(fprof.profile is not None, "f.profile exists")
buf = io.StringIO()
fprof.profile.summary(file=buf)
txt = buf.getvalue()
check('prof_fn' in txt or 'Function profiling' in txt, "profile summary text")
print("\n".join(txt.splitlines()[:12]))
cc = getattr(fprof.profile, 'fct_callcount', None)
if cc is None:
    print("GAP (hypatia): profile has no fct_callcount; .calls =", getattr(fprof.profile, 'calls', None))
    cc = fprof.profile.calls
check(cc == 5, "profile callcount %s" % cc)
from hypatia.compile.profiling import ProfileStats
try:
    ps = ProfileStats(message='my profile')
except TypeError as e:
    print("GAP (hypatia): ProfileStats(message=...) ->", e)
    ps = 'my profile'

fp2 = theano.function([x], cost, profile=ps)
fp2(X); fp2(X)
ps = fp2.profile
check(getattr(ps, 'fct_callcount', getattr(ps, 'calls', None)) == 2, "explicit ProfileStats callcount")
buf = io.StringIO(); ps.summary(file=buf)
if 'my profile' not in buf.getvalue():
    print("GAP (hypatia): function(profile='my profile') message not used in summary")

# ---- MonitorMode ------------------------------------------------------------------------------
seen = []
def pre(i, node, fn):
    seen.append(('pre', type(node.op).__name__))
def post(i, node, fn):
    seen.append(('post', [np.asarray(o[0]).shape for o in fn.outputs]))
fm = theano.function([x], cost, mode=theano.compile.MonitorMode(pre_func=pre, post_func=post))
close(fm(X), f(X) if False else theano.function([x], cost)(X), "MonitorMode same value")
check(len(seen) >= 2 and seen[0][0] == 'pre', "MonitorMode hooks called (%d)" % len(seen))

# ---- NanGuardMode -----------------------------------------------------------------------------
from hypatia.compile.nanguardmode import NanGuardMode
z = T.vector('z')
fn_nan = theano.function([z], T.log(z), mode=NanGuardMode(nan_is_error=True, inf_is_error=True, big_is_error=False))
close(fn_nan(np.array([1.0, 2.0])), np.log([1.0, 2.0]), "NanGuardMode normal values")
try:
    fn_nan(np.array([-1.0, 2.0]))
    check(False, "NanGuardMode did not catch NaN")
except AssertionError as e:
    print("NanGuard caught:", str(e).splitlines()[0][:100])
except Exception as e:
    print("NanGuard caught (other type):", type(e).__name__, str(e).splitlines()[0][:100])
    check(isinstance(e, AssertionError) or 'NanGuard' in type(e).__name__, "NanGuardMode error type %s" % type(e).__name__)

# ---- DebugMode / FAST_COMPILE same numbers ---------------------------------------------------------
gW = T.grad(cost, W)
ref = theano.function([x], [cost, gW])(X)
for mode in ['DebugMode', 'FAST_COMPILE', 'FAST_RUN']:
    try:
        r = theano.function([x], [cost, gW], mode=mode)(X)
    except NotImplementedError as e:
        print("GAP (hypatia):", str(e)[:160]); continue
    close(r[0], ref[0], "cost under %s" % mode); close(r[1], ref[1], "grad under %s" % mode)
sg = 1 / (1 + np.exp(-(X @ W.get_value() + b.get_value())))
close(ref[0], ((sg - 1) ** 2).sum(), "cost vs numpy")
close(ref[1], X.T @ (2 * (sg - 1) * sg * (1 - sg)), "grad vs numpy")

if FAIL:
    print("%d FAILURES" % len(FAIL)); sys.exit(1)
print("OK p11_debug_tools")
