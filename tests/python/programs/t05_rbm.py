"""RBM trained with CD-k / PCD-k, Gibbs sampling via theano.scan, MRG_RandomStreams
(DeepLearningTutorials rbm.py style)."""
import sys
import numpy as np
import hypatia as theano
import hypatia.tensor as T
from hypatia.sandbox.rng_mrg import MRG_RandomStreams
from hypatia.tensor.shared_randomstreams import RandomStreams

FAIL = []


def check(cond, msg):
    if not cond:
        FAIL.append(msg)
        print("FAIL:", msg)


def close(a, b, msg, rtol=1e-6, atol=1e-8):
    a = np.asarray(a)
    b = np.asarray(b)
    ok = a.shape == b.shape and np.allclose(a, b, rtol=rtol, atol=atol)
    check(ok, "%s: shapes %s vs %s; maxdiff %s" % (msg, a.shape, b.shape,
                                                  np.abs(a - b).max() if a.shape == b.shape else '-'))


floatX = theano.config.floatX
tol = 1e-6 if floatX == 'float64' else 1e-3


class RBM(object):
    def __init__(self, input=None, n_visible=16, n_hidden=8, W=None, hbias=None, vbias=None,
                 numpy_rng=None, theano_rng=None):
        self.n_visible = n_visible
        self.n_hidden = n_hidden
        if numpy_rng is None:
            numpy_rng = np.random.RandomState(1234)
        if theano_rng is None:
            theano_rng = MRG_RandomStreams(numpy_rng.randint(2 ** 30))
        if W is None:
            initial_W = np.asarray(numpy_rng.uniform(
                low=-4 * np.sqrt(6. / (n_hidden + n_visible)),
                high=4 * np.sqrt(6. / (n_hidden + n_visible)),
                size=(n_visible, n_hidden)), dtype=theano.config.floatX)
            W = theano.shared(value=initial_W, name='W', borrow=True)
        if hbias is None:
            hbias = theano.shared(value=np.zeros(n_hidden, dtype=theano.config.floatX), name='hbias', borrow=True)
        if vbias is None:
            vbias = theano.shared(value=np.zeros(n_visible, dtype=theano.config.floatX), name='vbias', borrow=True)
        self.input = input
        if not input:
            self.input = T.matrix('input')
        self.W = W
        self.hbias = hbias
        self.vbias = vbias
        self.theano_rng = theano_rng
        self.params = [self.W, self.hbias, self.vbias]

    def free_energy(self, v_sample):
        wx_b = T.dot(v_sample, self.W) + self.hbias
        vbias_term = T.dot(v_sample, self.vbias)
        hidden_term = T.sum(T.log(1 + T.exp(wx_b)), axis=1)
        return -hidden_term - vbias_term

    def propup(self, vis):
        pre_sigmoid_activation = T.dot(vis, self.W) + self.hbias
        return [pre_sigmoid_activation, T.nnet.sigmoid(pre_sigmoid_activation)]

    def sample_h_given_v(self, v0_sample):
        pre_sigmoid_h1, h1_mean = self.propup(v0_sample)
        h1_sample = self.theano_rng.binomial(size=h1_mean.shape, n=1, p=h1_mean, dtype=theano.config.floatX)
        return [pre_sigmoid_h1, h1_mean, h1_sample]

    def propdown(self, hid):
        pre_sigmoid_activation = T.dot(hid, self.W.T) + self.vbias
        return [pre_sigmoid_activation, T.nnet.sigmoid(pre_sigmoid_activation)]

    def sample_v_given_h(self, h0_sample):
        pre_sigmoid_v1, v1_mean = self.propdown(h0_sample)
        v1_sample = self.theano_rng.binomial(size=v1_mean.shape, n=1, p=v1_mean, dtype=theano.config.floatX)
        return [pre_sigmoid_v1, v1_mean, v1_sample]

    def gibbs_hvh(self, h0_sample):
        pre_sigmoid_v1, v1_mean, v1_sample = self.sample_v_given_h(h0_sample)
        pre_sigmoid_h1, h1_mean, h1_sample = self.sample_h_given_v(v1_sample)
        return [pre_sigmoid_v1, v1_mean, v1_sample, pre_sigmoid_h1, h1_mean, h1_sample]

    def gibbs_vhv(self, v0_sample):
        pre_sigmoid_h1, h1_mean, h1_sample = self.sample_h_given_v(v0_sample)
        pre_sigmoid_v1, v1_mean, v1_sample = self.sample_v_given_h(h1_sample)
        return [pre_sigmoid_h1, h1_mean, h1_sample, pre_sigmoid_v1, v1_mean, v1_sample]

    def get_cost_updates(self, lr=0.1, persistent=None, k=1):
        pre_sigmoid_ph, ph_mean, ph_sample = self.sample_h_given_v(self.input)
        if persistent is None:
            chain_start = ph_sample
        else:
            chain_start = persistent
        ([pre_sigmoid_nvs, nv_means, nv_samples, pre_sigmoid_nhs, nh_means, nh_samples], updates) = theano.scan(
            self.gibbs_hvh,
            outputs_info=[None, None, None, None, None, chain_start],
            n_steps=k, name="gibbs_hvh")
        chain_end = nv_samples[-1]
        cost = T.mean(self.free_energy(self.input)) - T.mean(self.free_energy(chain_end))
        gparams = T.grad(cost, self.params, consider_constant=[chain_end])
        for gparam, param in zip(gparams, self.params):
            updates[param] = param - gparam * T.cast(lr, dtype=theano.config.floatX)
        if persistent:
            updates[persistent] = nh_samples[-1]
            monitoring_cost = self.get_pseudo_likelihood_cost(updates)
        else:
            monitoring_cost = self.get_reconstruction_cost(updates, pre_sigmoid_nvs[-1])
        return monitoring_cost, updates, chain_end, gparams, cost

    def get_pseudo_likelihood_cost(self, updates):
        bit_i_idx = theano.shared(value=0, name='bit_i_idx')
        xi = T.round(self.input)
        fe_xi = self.free_energy(xi)
        xi_flip = T.set_subtensor(xi[:, bit_i_idx], 1 - xi[:, bit_i_idx])
        fe_xi_flip = self.free_energy(xi_flip)
        cost = T.mean(self.n_visible * T.log(T.nnet.sigmoid(fe_xi_flip - fe_xi)))
        updates[bit_i_idx] = (bit_i_idx + 1) % self.n_visible
        self.bit_i_idx = bit_i_idx
        return cost

    def get_reconstruction_cost(self, updates, pre_sigmoid_nv):
        cross_entropy = T.mean(T.sum(
            self.input * T.log(T.nnet.sigmoid(pre_sigmoid_nv)) +
            (1 - self.input) * T.log(1 - T.nnet.sigmoid(pre_sigmoid_nv)), axis=1))
        return cross_entropy


def np_sig(a):
    return 1. / (1. + np.exp(-a))


def np_fe(v, W, hb, vb):
    return -np.sum(np.log1p(np.exp(v.dot(W) + hb)), axis=1) - v.dot(vb)


rng = np.random.RandomState(123)
protos = (rng.rand(3, 16) > 0.5).astype(floatX)
data = protos[rng.randint(0, 3, size=40)]
flip = rng.rand(*data.shape) < 0.05
data = np.where(flip, 1 - data, data).astype(floatX)

x = T.matrix('x')
rbm = RBM(input=x, n_visible=16, n_hidden=8, numpy_rng=rng, theano_rng=MRG_RandomStreams(1234))
mon, updates, chain_end, gparams, cd_cost = rbm.get_cost_updates(lr=0.1, persistent=None, k=3)

# probe without parameter updates (but with the random-state updates from scan)
rng_updates = [(k_, v_) for k_, v_ in updates.items() if k_ not in rbm.params]
probe = theano.function([x], [cd_cost, chain_end] + gparams, updates=rng_updates)
W0, hb0, vb0 = [p.get_value().astype('float64') for p in rbm.params]
c, ce, gW, ghb, gvb = probe(data)
ce = np.asarray(ce, dtype='float64')
check(set(np.unique(ce)) <= {0.0, 1.0}, "chain_end must be binary samples, got %r" % np.unique(ce)[:5])
check(ce.shape == data.shape, "chain_end shape %r" % (ce.shape,))
close(c, np.mean(np_fe(data, W0, hb0, vb0)) - np.mean(np_fe(ce, W0, hb0, vb0)), "CD cost vs numpy", rtol=tol)
n = data.shape[0]
ph = np_sig(data.dot(W0) + hb0)
nh = np_sig(ce.dot(W0) + hb0)
gW_np = -(data.T.dot(ph) - ce.T.dot(nh)) / n
ghb_np = -(ph.mean(0) - nh.mean(0))
gvb_np = -(data.mean(0) - ce.mean(0))
close(gW, gW_np, "RBM grad W with consider_constant", rtol=1e-5, atol=1e-7)
close(ghb, ghb_np, "RBM grad hbias", rtol=1e-5, atol=1e-7)
close(gvb, gvb_np, "RBM grad vbias", rtol=1e-5, atol=1e-7)
ce2 = np.asarray(probe(data)[1])
check(not np.array_equal(ce, ce2), "MRG random state inside scan did not advance between calls")

# CD-3 training: reconstruction cross-entropy (monitoring cost, higher is better) must improve
train_rbm = theano.function([x], mon, updates=updates, name='train_rbm')
costs = [float(train_rbm(data)) for _ in range(300)]
check(np.mean(costs[-20:]) > np.mean(costs[:20]) + 1.0,
      "RBM reconstruction log-likelihood did not improve: %r -> %r" % (np.mean(costs[:20]), np.mean(costs[-20:])))
check(np.all(np.isfinite(costs)), "non-finite RBM monitoring cost")

# free energy of training data must be lower than that of random data
fe_fn = theano.function([x], rbm.free_energy(x))
Wt, hbt, vbt = [p.get_value() for p in rbm.params]
close(fe_fn(data), np_fe(data.astype('float64'), Wt, hbt, vbt), "free energy vs numpy", rtol=tol)
randv = (rng.rand(40, 16) > 0.5).astype(floatX)
check(fe_fn(data).mean() < fe_fn(randv).mean(), "trained RBM should give data lower free energy")

# PCD with a persistent chain and the pseudo-likelihood monitor
persistent_chain = theano.shared(np.zeros((40, 8), dtype=theano.config.floatX), borrow=True)
rbm2 = RBM(input=x, n_visible=16, n_hidden=8, numpy_rng=np.random.RandomState(5),
           theano_rng=MRG_RandomStreams(99))
mon2, updates2, _, _, _ = rbm2.get_cost_updates(lr=0.1, persistent=persistent_chain, k=2)
train_pcd = theano.function([x], mon2, updates=updates2)
for i in range(20):
    train_pcd(data)
check(rbm2.bit_i_idx.get_value() == 20 % 16, "bit_i_idx shared update: %r" % rbm2.bit_i_idx.get_value())
pc = persistent_chain.get_value()
check(set(np.unique(pc)) <= {0.0, 1.0} and pc.any(), "persistent chain should hold binary hidden samples")

# sampling from the trained RBM (persistent visible chain, scan over gibbs_vhv, plot_every steps)
n_chains, plot_every = 5, 4
persistent_vis_chain = theano.shared(np.asarray(data[:n_chains], dtype=theano.config.floatX))
([presig_hids, hid_mfs, hid_samples, presig_vis, vis_mfs, vis_samples], updates_s) = theano.scan(
    rbm.gibbs_vhv, outputs_info=[None, None, None, None, None, persistent_vis_chain],
    n_steps=plot_every, name="gibbs_vhv")
updates_s.update({persistent_vis_chain: vis_samples[-1]})
sample_fn = theano.function([], [vis_mfs[-1], vis_samples[-1], vis_samples], updates=updates_s, name='sample_fn')
vm, vs, allvs = sample_fn()
check(np.asarray(allvs).shape == (plot_every, n_chains, 16), "scan stacked output shape %r" % (np.asarray(allvs).shape,))
check(np.array_equal(persistent_vis_chain.get_value(), vs), "persistent_vis_chain must equal last sample")
check(np.all((vm > 0) & (vm < 1)), "mean-field visible in (0,1)")

# MRG stream statistics
mrg = MRG_RandomStreams(seed=4321)
s_b = mrg.binomial(size=(4000,), n=1, p=0.3, dtype='float32')
s_u = mrg.uniform(size=(4000,), low=2., high=4.)
s_n = mrg.normal(size=(4000,), avg=-1., std=2.)
f_mrg = theano.function([], [s_b, s_u, s_n])
bv, uv, nv = f_mrg()
check(bv.dtype == np.float32 and abs(bv.mean() - 0.3) < 0.03, "MRG binomial mean %r dtype %r" % (bv.mean(), bv.dtype))
check(uv.min() >= 2 and uv.max() <= 4 and abs(uv.mean() - 3) < 0.05, "MRG uniform range/mean")
check(abs(nv.mean() + 1) < 0.1 and abs(nv.std() - 2) < 0.1, "MRG normal moments %r %r" % (nv.mean(), nv.std()))
check(not np.array_equal(bv, f_mrg()[0]), "MRG stream did not advance")
# symbolic size
nrow = T.iscalar('nrow')
f_sym = theano.function([nrow], mrg.uniform(size=(nrow, 3)))
check(f_sym(7).shape == (7, 3), "MRG uniform with symbolic size")

# the same RBM using the shared RandomStreams also trains and samples binary states
rbm3 = RBM(input=x, n_visible=16, n_hidden=8, numpy_rng=np.random.RandomState(7), theano_rng=RandomStreams(3))
mon3, upd3, ce3, _, _ = rbm3.get_cost_updates(lr=0.1, k=1)
f3 = theano.function([x], [mon3, ce3], updates=upd3)
m3, c3 = f3(data)
check(set(np.unique(c3)) <= {0.0, 1.0}, "RandomStreams binomial in scan must be binary")

if FAIL:
    print("%d FAILURES" % len(FAIL))
    sys.exit(1)
print("OK t05_rbm")
