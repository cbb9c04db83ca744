"""Hybrid Monte Carlo (DeepLearningTutorials hmc.py): leapfrog via scan, Metropolis
accept/reject with T.switch, shared-variable updates of step size and acceptance rate, ifelse."""
import sys
import numpy as np
import hypatia as theano
import hypatia.tensor as T
from hypatia import function, shared
from hypatia.ifelse import ifelse
from hypatia.sandbox.rng_mrg import MRG_RandomStreams
from hypatia.tensor.shared_randomstreams import RandomStreams

FAIL = []
def check(c, m):
    if not c:
        FAIL.append(m); print("FAIL:", m)
def close(a, b, m, rtol=1e-6, atol=1e-8):
    a, b = np.asarray(a), np.asarray(b)
    check(a.shape == b.shape and np.allclose(a, b, rtol=rtol, atol=atol),
          "%s: %s vs %s maxdiff %s" % (m, a.shape, b.shape, np.abs(a - b).max() if a.shape == b.shape else '-'))
sharedX = lambda X, name: shared(np.asarray(X, dtype=theano.config.floatX), name=name)

def kinetic_energy(vel):
    return 0.5 * (vel ** 2).sum(axis=1)

def hamiltonian(pos, vel, energy_fn):
    return energy_fn(pos) + kinetic_energy(vel)

def metropolis_hastings_accept(energy_prev, energy_next, s_rng):
    ediff = energy_prev - energy_next
    return (T.exp(ediff) - s_rng.uniform(size=energy_prev.shape)) >= 0

def simulate_dynamics(initial_pos, initial_vel, stepsize, n_steps, energy_fn):
    def leapfrog(pos, vel, step):
        dE_dpos = T.grad(energy_fn(pos).sum(), pos)
        new_vel = vel - step * dE_dpos
        new_pos = pos + step * new_vel
        return [new_pos, new_vel], {}
    initial_energy = energy_fn(initial_pos)
    dE_dpos = T.grad(initial_energy.sum(), initial_pos)
    vel_half_step = initial_vel - 0.5 * stepsize * dE_dpos
    pos_full_step = initial_pos + stepsize * vel_half_step
    (all_pos, all_vel), scan_updates = theano.scan(
        leapfrog, outputs_info=[dict(initial=pos_full_step), dict(initial=vel_half_step)],
        non_sequences=[stepsize], n_steps=n_steps - 1)
    final_pos = all_pos[-1]
    final_vel = all_vel[-1]
    assert not scan_updates
    energy = energy_fn(final_pos)
    final_vel = final_vel - 0.5 * stepsize * T.grad(energy.sum(), final_pos)
    return final_pos, final_vel

def hmc_move(s_rng, positions, energy_fn, stepsize, n_steps):
    initial_vel = s_rng.normal(size=positions.shape)
    final_pos, final_vel = simulate_dynamics(positions, initial_vel, stepsize, n_steps, energy_fn)
    accept = metropolis_hastings_accept(hamiltonian(positions, initial_vel, energy_fn),
                                        hamiltonian(final_pos, final_vel, energy_fn), s_rng)
    return accept, final_pos

def hmc_updates(positions, stepsize, avg_acceptance_rate, final_pos, accept, target_acceptance_rate,
                stepsize_inc, stepsize_dec, stepsize_min, stepsize_max, avg_acceptance_slowness):
    accept_matrix = accept.dimshuffle(0, *(('x',) * (final_pos.ndim - 1)))
    new_positions = T.switch(accept_matrix, final_pos, positions)
    _new_stepsize = T.switch(avg_acceptance_rate > target_acceptance_rate,
                             stepsize * stepsize_inc, stepsize * stepsize_dec)
    new_stepsize = T.clip(_new_stepsize, stepsize_min, stepsize_max)
    try:
        mean_dtype = theano.scalar.upcast(accept.dtype, avg_acceptance_rate.dtype)
    except AttributeError:  # hypatia gap: no theano.scalar
        print("GAP: theano.scalar missing")
        mean_dtype = str(np.result_type(accept.dtype, avg_acceptance_rate.dtype))
    new_acceptance_rate = T.add(avg_acceptance_slowness * avg_acceptance_rate,
                                (1.0 - avg_acceptance_slowness) * accept.mean(dtype=mean_dtype))
    return [(positions, new_positions), (stepsize, new_stepsize), (avg_acceptance_rate, new_acceptance_rate)]

class HMC_sampler(object):
    def __init__(self, **kwargs):
        self.__dict__.update(kwargs)
    @classmethod
    def new_from_shared_positions(cls, shared_positions, energy_fn, initial_stepsize=0.01,
                                  target_acceptance_rate=.9, n_steps=20, stepsize_dec=0.98,
                                  stepsize_min=0.001, stepsize_max=0.25, stepsize_inc=1.02,
                                  avg_acceptance_slowness=0.9, seed=12345):
        stepsize = sharedX(initial_stepsize, 'hmc_stepsize')
        avg_acceptance_rate = sharedX(target_acceptance_rate, 'avg_acceptance_rate')
        s_rng = RandomStreams(seed)
        accept, final_pos = hmc_move(s_rng, shared_positions, energy_fn, stepsize, n_steps)
        simulate_updates = hmc_updates(shared_positions, stepsize, avg_acceptance_rate, final_pos=final_pos,
                                       accept=accept, stepsize_min=stepsize_min, stepsize_max=stepsize_max,
                                       stepsize_inc=stepsize_inc, stepsize_dec=stepsize_dec,
                                       target_acceptance_rate=target_acceptance_rate,
                                       avg_acceptance_slowness=avg_acceptance_slowness)
        simulate = function([], [], updates=simulate_updates)
        return cls(positions=shared_positions, stepsize=stepsize, stepsize_min=stepsize_min,
                   stepsize_max=stepsize_max, avg_acceptance_rate=avg_acceptance_rate,
                   target_acceptance_rate=target_acceptance_rate, s_rng=s_rng, _updates=simulate_updates,
                   simulate=simulate)
    def draw(self, **kwargs):
        self.simulate()
        return self.positions.get_value(borrow=False)

# ---- 1. deterministic checks of leapfrog vs numpy ------------------------------------------
rng = np.random.RandomState(123)
dim = 3
mu = np.array(rng.rand(dim) * 2, dtype=theano.config.floatX)
cov = np.array(rng.rand(dim, dim), dtype=theano.config.floatX)
cov = (cov + cov.T) / 2.
cov[np.arange(dim), np.arange(dim)] = 1.0
cov_inv = np.linalg.inv(cov)

def gaussian_energy(x):
    return 0.5 * (T.dot((x - mu), cov_inv) * (x - mu)).sum(axis=1)

p0 = T.matrix('p0'); v0 = T.matrix('v0'); st = T.scalar('st')
fp, fv = simulate_dynamics(p0, v0, st, 7, gaussian_energy)
H0 = hamiltonian(p0, v0, gaussian_energy); H1 = hamiltonian(fp, fv, gaussian_energy)
f_dyn = function([p0, v0, st], [fp, fv, H0, H1])
P0 = rng.randn(4, dim); V0 = rng.randn(4, dim)
def np_dyn(p, v, s, n):
    g = lambda x: (x - mu).dot(cov_inv)  # grad of energy (cov_inv symmetric)
    v = v - 0.5 * s * g(p); p = p + s * v
    for _ in range(n - 1):
        v = v - s * g(p); p = p + s * v
    v = v - 0.5 * s * g(p)
    return p, v
rp, rv = np_dyn(P0, V0, 0.05, 7)
out = f_dyn(P0, V0, 0.05)
close(out[0], rp, "leapfrog final pos"); close(out[1], rv, "leapfrog final vel")
E = lambda x: 0.5 * ((x - mu).dot(cov_inv) * (x - mu)).sum(1)
close(out[2], E(P0) + 0.5 * (V0 ** 2).sum(1), "H0")
check(np.all(np.abs(out[3] - out[2]) < 0.05), "leapfrog roughly conserves energy %s" % (out[3] - out[2]))

# gradient of final position wrt step size through the scan vs finite differences
gst = function([p0, v0, st], T.grad(fp.sum(), st))
eps = 1e-6
fd = (np_dyn(P0, V0, 0.05 + eps, 7)[0].sum() - np_dyn(P0, V0, 0.05 - eps, 7)[0].sum()) / (2 * eps)
close(gst(P0, V0, 0.05), fd, "d final_pos / d stepsize", rtol=1e-5)

# ---- 2. the ifelse-based stepsize rule -----------------------------------------------------
a = T.scalar('a'); s = T.scalar('s')
new_s = ifelse(T.gt(a, 0.9), s * 1.02, s * 0.98)
f_if = function([a, s], new_s)
close(f_if(0.95, 0.1), 0.102, "ifelse true"); close(f_if(0.5, 0.1), 0.098, "ifelse false")

# ---- 3. the sampler (DLT test_hmc) ---------------------------------------------------------
batchsize = 3
position = rng.randn(batchsize, dim).astype(theano.config.floatX)
position = shared(position)
sampler = HMC_sampler.new_from_shared_positions(position, gaussian_energy, initial_stepsize=1e-3, stepsize_max=0.5)
garbage = [sampler.draw() for r in range(200)]
samples = np.asarray([sampler.draw() for r in range(1500)])
flat = samples.T.reshape(dim, -1).T
print('target mean:', mu, 'empirical mean:', flat.mean(axis=0))
print('target cov:\n', cov, '\nempirical cov:\n', np.cov(flat.T))
print('final stepsize', sampler.stepsize.get_value(), 'acceptance', sampler.avg_acceptance_rate.get_value())
check(np.allclose(flat.mean(0), mu, atol=0.35), "sample mean off")
check(np.allclose(np.cov(flat.T), cov, atol=0.45), "sample cov off")
check(0.001 <= sampler.stepsize.get_value() <= 0.5, "stepsize clipped")
check(sampler.stepsize.get_value() > 0.01, "stepsize adapted upward from 1e-3")
check(abs(sampler.avg_acceptance_rate.get_value() - 0.9) < 0.1, "acceptance near target")
# samples actually move (acceptance happens) and sometimes reject
moves = np.any(samples[1:] != samples[:-1], axis=2)
check(moves.mean() > 0.5, "most moves accepted %s" % moves.mean())
check(moves.mean() < 1.0, "some moves rejected %s" % moves.mean())

if FAIL:
    print("%d FAILURES" % len(FAIL)); sys.exit(1)
print("OK p02_hmc")
