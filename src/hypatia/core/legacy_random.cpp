// numpy.random.RandomState reproduced bit for bit: see legacy_random.h. Each function names the
// numpy source it follows (numpy/random/src/mt19937/mt19937.{h,c},
// src/legacy/legacy-distributions.c, src/distributions/distributions.c, mtrand.pyx,
// _bounded_integers.pyx.in, _common.pyx). Expression shapes and operand orders follow numpy's
// because rounding depends on them.
#include "hypatia/core/legacy_random.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>
#include <unordered_set>
#include <vector>

// numpy's C code is built without FMA contraction; fusing a*b+c here (GCC contracts by default,
// also with -std=c++20, whenever the target has FMA, e.g. -march=native) changes the roundings.
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

namespace hypatia::legacy_random {

namespace {

constexpr int kM = 397;
constexpr uint32_t kMatrixA = 0x9908b0dfU;
constexpr uint32_t kUpperMask = 0x80000000U;
constexpr uint32_t kLowerMask = 0x7fffffffU;

}  // namespace

// mt19937_gen: regenerates all 624 key words (the reference twist) and resets pos.
void twist(MT19937State& st) {
  uint32_t* k = st.key;
  int i = 0;
  for (; i < kKeyWords - kM; ++i) {
    const uint32_t y = (k[i] & kUpperMask) | (k[i + 1] & kLowerMask);
    k[i] = k[i + kM] ^ (y >> 1) ^ ((0U - (y & 1U)) & kMatrixA);
  }
  for (; i < kKeyWords - 1; ++i) {
    const uint32_t y = (k[i] & kUpperMask) | (k[i + 1] & kLowerMask);
    k[i] = k[i + (kM - kKeyWords)] ^ (y >> 1) ^ ((0U - (y & 1U)) & kMatrixA);
  }
  const uint32_t y = (k[kKeyWords - 1] & kUpperMask) | (k[0] & kLowerMask);
  k[kKeyWords - 1] = k[kM - 1] ^ (y >> 1) ^ ((0U - (y & 1U)) & kMatrixA);
  st.pos = 0;
}

namespace {

// C's (long)x on x86-64 (cvttsd2si): truncation, and INT64_MIN for NaN or out-of-range values.
// numpy casts doubles to RAND_INT_TYPE in several rejection loops where the value can be +-inf
// (and then rejects it); this keeps those paths defined here and gives the same decisions.
int64_t to_long(double x) {
  if (!(x >= -9223372036854775808.0 && x < 9223372036854775808.0)) {
    return std::numeric_limits<int64_t>::min();
  }
  return static_cast<int64_t>(x);
}

// random_loggam: log-gamma from SPECFUN (Zhang & Jin), as numpy's distributions.c computes it.
double random_loggam(double x) {
  static const double a[10] = {8.333333333333333e-02,  -2.777777777777778e-03, 7.936507936507937e-04,
                               -5.952380952380952e-04, 8.417508417508418e-04,  -1.917526917526918e-03,
                               6.410256410256410e-03,  -2.955065359477124e-02, 1.796443723688307e-01,
                               -1.39243221690590e+00};
  if (x == 1.0 || x == 2.0) {
    return 0.0;
  }
  double x0 = x;
  int64_t n = 0;
  if (x <= 7.0) {
    n = static_cast<int64_t>(7 - x);
    x0 = x + static_cast<double>(n);
  }
  const double x2 = 1.0 / (x0 * x0);
  const double xp = 2 * 3.14159265358979323846;  // 2 * M_PI
  double gl0 = a[9];
  for (int k = 8; k >= 0; --k) {
    gl0 *= x2;
    gl0 += a[k];
  }
  double gl = gl0 / x0 + 0.5 * std::log(xp) + (x0 - 0.5) * std::log(x0) - x0;
  if (x <= 7.0) {
    for (int64_t k = 1; k <= n; ++k) {
      gl -= std::log(x0 - 1.0);
      x0 -= 1.0;
    }
  }
  return gl;
}

// gen_mask: the smallest all-ones bit mask >= max.
uint64_t gen_mask(uint64_t max) {
  uint64_t mask = max;
  mask |= mask >> 1;
  mask |= mask >> 2;
  mask |= mask >> 4;
  mask |= mask >> 8;
  mask |= mask >> 16;
  mask |= mask >> 32;
  return mask;
}

// random_binomial_inversion (distributions.c); p <= 0.5 on entry. numpy caches q, q^n, n*p and
// the bound per (n, p); recomputing them gives the same values.
int64_t binomial_inversion(MT19937State& st, int64_t n, double p) {
  // The setup of the last (n, p) this thread used, as numpy caches it: a draw of many elements
  // with one (n, p) (a dropout mask) pays for the exp and log once.
  struct Setup {
    int64_t n = -1;
    double p = -1, q = 0, qn = 0;
    int64_t bound = 0;
  };
  thread_local Setup c;
  if (c.n != n || c.p != p) {
    c.n = n;
    c.p = p;
    c.q = 1.0 - p;
    c.qn = std::exp(static_cast<double>(n) * std::log(c.q));
    const double np = static_cast<double>(n) * p;
    const double bound_d = np + 10.0 * std::sqrt(np * c.q + 1);
    // MIN(n, ...) compares and yields a double, then the cast to RAND_INT_TYPE truncates.
    c.bound = to_long(static_cast<double>(n) < bound_d ? static_cast<double>(n) : bound_d);
  }
  const double q = c.q, qn = c.qn;
  const int64_t bound = c.bound;
  int64_t x = 0;
  double px = qn;
  double u = next_double(st);
  while (u > px) {
    ++x;
    if (x > bound) {
      x = 0;
      px = qn;
      u = next_double(st);
    } else {
      u -= px;
      px = (static_cast<double>(n - x + 1) * p * px) / (static_cast<double>(x) * q);
    }
  }
  return x;
}

// random_binomial_btpe (distributions.c): Kachitvichyanukul & Schmeiser's BTPE; p <= 0.5 on entry
// (so numpy's final `if (p > 0.5) y = n - y` never fires). The setup is what numpy caches.
int64_t binomial_btpe(MT19937State& st, int64_t n, double p) {
  const double nd = static_cast<double>(n);
  const double r = std::min(p, 1.0 - p);
  const double q = 1.0 - r;
  const double fm = nd * r + r;
  const int64_t m = to_long(std::floor(fm));
  const double md = static_cast<double>(m);
  const double p1 = std::floor(2.195 * std::sqrt(nd * r * q) - 4.6 * q) + 0.5;
  const double xm = md + 0.5;
  const double xl = xm - p1;
  const double xr = xm + p1;
  const double c = 0.134 + 20.5 / (15.3 + md);
  double a = (fm - xl) / (fm - xl * r);
  const double laml = a * (1.0 + a / 2.0);
  a = (xr - fm) / (xr * q);
  const double lamr = a * (1.0 + a / 2.0);
  const double p2 = p1 * (1.0 + 2.0 * c);
  const double p3 = p2 + c / laml;
  const double p4 = p3 + c / lamr;

  for (;;) {  // Step 10
    const double nrq = nd * r * q;
    const double u = next_double(st) * p4;
    double v = next_double(st);
    int64_t y;
    if (u <= p1) {  // triangular region: accept immediately
      y = to_long(std::floor(xm - p1 * v + u));
      return y;
    }
    if (u <= p2) {  // Step 20: parallelograms
      const double x = xl + (u - p1) / c;
      v = v * c + 1.0 - std::fabs(md - x + 0.5) / p1;
      if (v > 1.0) continue;
      y = to_long(std::floor(x));
    } else if (u <= p3) {      // Step 30: left exponential tail
      if (v == 0.0) continue;  // numpy rejects v == 0 (its cast of -inf happens first)
      y = to_long(std::floor(xl + std::log(v) / laml));
      if (y < 0) continue;
      v = v * (u - p2) * laml;
    } else {  // Step 40: right exponential tail
      if (v == 0.0) continue;
      y = to_long(std::floor(xr - std::log(v) / lamr));
      if (y > n) continue;
      v = v * (u - p3) * lamr;
    }
    // Step 50
    const int64_t k = y > m ? y - m : m - y;
    const double kd = static_cast<double>(k);
    if (!((k > 20) && (kd < ((nrq) / 2.0 - 1)))) {
      // explicit evaluation of f(y) / f(m)
      const double s = r / q;
      const double aa = s * static_cast<double>(n + 1);
      double f = 1.0;
      if (m < y) {
        for (int64_t i = m + 1; i <= y; ++i) f *= (aa / static_cast<double>(i) - s);
      } else if (m > y) {
        for (int64_t i = y + 1; i <= m; ++i) f /= (aa / static_cast<double>(i) - s);
      }
      if (v > f) continue;
      return y;
    }
    // Step 52: squeeze on log f with Stirling's formula
    const double rho = (kd / (nrq)) * ((kd * (kd / 3.0 + 0.625) + 0.16666666666666666) / nrq + 0.5);
    const double t = static_cast<double>(-k * k) / (2 * nrq);
    const double A = std::log(v);
    if (A < (t - rho)) return y;
    if (A > (t + rho)) continue;
    const double x1 = static_cast<double>(y + 1);
    const double f1 = static_cast<double>(m + 1);
    const double z = static_cast<double>(n + 1 - m);
    const double w = static_cast<double>(n - y + 1);
    const double x2 = x1 * x1;
    const double f2 = f1 * f1;
    const double z2 = z * z;
    const double w2 = w * w;
    if (A > (xm * std::log(f1 / x1) + (static_cast<double>(n - m) + 0.5) * std::log(z / w) +
             static_cast<double>(y - m) * std::log(w * r / (x1 * q)) +
             (13680. - (462. - (132. - (99. - 140. / f2) / f2) / f2) / f2) / f1 / 166320. +
             (13680. - (462. - (132. - (99. - 140. / z2) / z2) / z2) / z2) / z / 166320. +
             (13680. - (462. - (132. - (99. - 140. / x2) / x2) / x2) / x2) / x1 / 166320. +
             (13680. - (462. - (132. - (99. - 140. / w2) / w2) / w2) / w2) / w / 166320.)) {
      continue;
    }
    return y;
  }
}

// The dispatch shared by legacy_random_binomial_original and random_binomial.
int64_t binomial_dispatch(MT19937State& st, double p, int64_t n) {
  const double nd = static_cast<double>(n);
  if (p <= 0.5) {
    if (p * nd <= 30.0) return binomial_inversion(st, n, p);
    return binomial_btpe(st, n, p);
  }
  const double q = 1.0 - p;
  if (q * nd <= 30.0) return n - binomial_inversion(st, n, q);
  return n - binomial_btpe(st, n, q);
}

// random_poisson_mult (distributions.c): multiply uniforms until the product drops to exp(-lam).
int64_t poisson_mult(MT19937State& st, double lam) {
  const double enlam = std::exp(-lam);
  int64_t x = 0;
  double prod = 1.0;
  for (;;) {
    const double u = next_double(st);
    prod *= u;
    if (prod > enlam) {
      x += 1;
    } else {
      return x;
    }
  }
}

// random_poisson_ptrs (distributions.c): Hoermann's transformed rejection (PTRS), lam >= 10.
int64_t poisson_ptrs(MT19937State& st, double lam) {
  const double slam = std::sqrt(lam);
  const double loglam = std::log(lam);
  const double b = 0.931 + 2.53 * slam;
  const double a = -0.059 + 0.02483 * b;
  const double invalpha = 1.1239 + 1.1328 / (b - 3.4);
  const double vr = 0.9277 - 3.6224 / (b - 2);
  for (;;) {
    const double u = next_double(st) - 0.5;
    const double v = next_double(st);
    const double us = 0.5 - std::fabs(u);
    const int64_t k = to_long(std::floor((2 * a / us + b) * u + lam + 0.43));
    if ((us >= 0.07) && (v <= vr)) return k;
    if ((k < 0) || ((us < 0.013) && (v > us))) continue;
    if ((std::log(v) + std::log(invalpha) - std::log(a / (us * us) + b)) <=
        (-lam + static_cast<double>(k) * loglam - random_loggam(static_cast<double>(k + 1)))) {
      return k;
    }
  }
}

// _common.pyx kahan_sum: compensated sum of darr[0..n), 0.0 for n <= 0.
double kahan_sum(const double* darr, int64_t n) {
  if (n <= 0) return 0.0;
  double sum = darr[0];
  double c = 0.0;
  for (int64_t i = 1; i < n; ++i) {
    const double y = darr[i] - c;
    const double t = sum + y;
    c = (t - sum) - y;
    sum = t;
  }
  return sum;
}

// np.cumsum(p) (sequential add.accumulate) followed by `cdf /= cdf[-1]`.
void normalized_cdf(const double* p, int64_t n, std::vector<double>& cdf) {
  cdf.resize(static_cast<size_t>(n));
  if (n == 0) return;
  double acc = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    acc = (i == 0) ? p[0] : acc + p[i];
    cdf[static_cast<size_t>(i)] = acc;
  }
  const double last = cdf.back();
  for (double& v : cdf) v /= last;
}

// ndarray.searchsorted(u, side='right') on a non-decreasing cdf: the first index with cdf > u.
int64_t search_right(const std::vector<double>& cdf, double u) {
  return static_cast<int64_t>(std::upper_bound(cdf.begin(), cdf.end(), u) - cdf.begin());
}

[[noreturn]] void fail(const std::string& msg) { throw std::invalid_argument(msg); }

}  // namespace

// ---------------------------------------------------------------------------------------------
// MT19937 core (mt19937.c / mt19937.h / _mt19937.pyx / mtrand.pyx)

void seed(MT19937State& st, uint32_t s) {
  // mt19937_seed: key[i] = s_i, s_{i+1} = 1812433253 * (s_i ^ (s_i >> 30)) + i + 1 (mod 2^32).
  for (int pos = 0; pos < kKeyWords; ++pos) {
    st.key[pos] = s;
    s = 1812433253U * (s ^ (s >> 30)) + static_cast<uint32_t>(pos + 1);
  }
  st.pos = kKeyWords;
  // RandomState._reset_gauss (run by __init__ and by seed()).
  st.has_gauss = 0;
  st.gauss = 0.0;
}

void save(const MT19937State& st, uint32_t* out) {
  std::memcpy(out, st.key, sizeof(st.key));
  out[kKeyWords] = static_cast<uint32_t>(st.pos);
  out[kKeyWords + 1] = static_cast<uint32_t>(st.has_gauss);
  uint64_t bits;
  std::memcpy(&bits, &st.gauss, sizeof(bits));
  out[kKeyWords + 2] = static_cast<uint32_t>(bits & 0xFFFFFFFFU);
  out[kKeyWords + 3] = static_cast<uint32_t>(bits >> 32);
}

void load(MT19937State& st, const uint32_t* in) {
  const uint32_t pos = in[kKeyWords];
  const uint32_t has_gauss = in[kKeyWords + 1];
  if (pos > static_cast<uint32_t>(kKeyWords)) {
    fail("legacy_random::load: MT19937 position " + std::to_string(pos) + " is out of range [0, 624]");
  }
  if (has_gauss > 1) {
    fail("legacy_random::load: has_gauss must be 0 or 1, got " + std::to_string(has_gauss));
  }
  std::memcpy(st.key, in, sizeof(st.key));
  st.pos = static_cast<int>(pos);
  st.has_gauss = static_cast<int>(has_gauss);
  const uint64_t bits = static_cast<uint64_t>(in[kKeyWords + 2]) | (static_cast<uint64_t>(in[kKeyWords + 3]) << 32);
  std::memcpy(&st.gauss, &bits, sizeof(bits));
}

// ---------------------------------------------------------------------------------------------
// Continuous distributions (legacy-distributions.c, distributions.c)

double random_sample(MT19937State& st) { return next_double(st); }

double uniform(MT19937State& st, double low, double high) {
  const double range = high - low;  // mtrand.pyx uniform: range computed once, then random_uniform
  return low + range * next_double(st);
}

double legacy_gauss(MT19937State& st) {
  if (st.has_gauss) {
    const double temp = st.gauss;
    st.has_gauss = 0;
    st.gauss = 0.0;
    return temp;
  }
  double x1, x2, r2;
  do {
    x1 = 2.0 * next_double(st) - 1.0;
    x2 = 2.0 * next_double(st) - 1.0;
    r2 = x1 * x1 + x2 * x2;
  } while (r2 >= 1.0 || r2 == 0.0);
  const double f = std::sqrt(-2.0 * std::log(r2) / r2);
  st.gauss = f * x1;
  st.has_gauss = 1;
  return f * x2;
}

double legacy_normal(MT19937State& st, double loc, double scale) { return loc + scale * legacy_gauss(st); }

double legacy_standard_exponential(MT19937State& st) { return -std::log(1.0 - next_double(st)); }

double legacy_standard_gamma(MT19937State& st, double shape) {
  if (shape == 1.0) return legacy_standard_exponential(st);
  if (shape == 0.0) return 0.0;
  if (shape < 1.0) {
    for (;;) {
      const double u = next_double(st);
      const double v = legacy_standard_exponential(st);
      if (u <= 1.0 - shape) {
        const double x = std::pow(u, 1. / shape);
        if (x <= v) return x;
      } else {
        const double y = -std::log((1 - u) / shape);
        const double x = std::pow(1.0 - shape + shape * y, 1. / shape);
        if (x <= (v + y)) return x;
      }
    }
  }
  const double b = shape - 1. / 3.;
  const double c = 1. / std::sqrt(9 * b);
  for (;;) {
    double x, v;
    do {
      x = legacy_gauss(st);
      v = 1.0 + c * x;
    } while (v <= 0.0);
    v = v * v * v;
    const double u = next_double(st);
    if (u < 1.0 - 0.0331 * (x * x) * (x * x)) return (b * v);
    if (std::log(u) < 0.5 * x * x + b * (1. - v + std::log(v))) return (b * v);
  }
}

double legacy_gamma(MT19937State& st, double shape, double scale) { return scale * legacy_standard_gamma(st, shape); }

double legacy_beta(MT19937State& st, double a, double b) {
  if ((a <= 1.0) && (b <= 1.0)) {
    // Johnk's algorithm
    for (;;) {
      const double u = next_double(st);
      const double v = next_double(st);
      const double x = std::pow(u, 1.0 / a);
      const double y = std::pow(v, 1.0 / b);
      if ((x + y) <= 1.0) {
        if (x + y > 0) return x / (x + y);
        double logx = std::log(u) / a;
        double logy = std::log(v) / b;
        const double logm = logx > logy ? logx : logy;
        logx -= logm;
        logy -= logm;
        return std::exp(logx - std::log(std::exp(logx) + std::exp(logy)));
      }
    }
  }
  const double ga = legacy_standard_gamma(st, a);
  const double gb = legacy_standard_gamma(st, b);
  return ga / (ga + gb);
}

// ---------------------------------------------------------------------------------------------
// Integers (distributions.c random_interval / random_bounded_uint64, _bounded_integers.pyx.in)

uint64_t random_interval(MT19937State& st, uint64_t max) {
  if (max == 0) return 0;
  const uint64_t mask = gen_mask(max);
  uint64_t value;
  if (max <= 0xFFFFFFFFULL) {
    while ((value = (next_uint32(st) & mask)) > max) {
    }
  } else {
    while ((value = (next_uint64(st) & mask)) > max) {
    }
  }
  return value;
}

uint64_t bounded_uint64(MT19937State& st, uint64_t off, uint64_t rng) {
  if (rng == 0) return off;
  const uint64_t mask = gen_mask(rng);
  uint64_t val;
  if (rng <= 0xFFFFFFFFULL) {
    // buffered_bounded_masked_uint32 (the buffer is unused for 32 bits)
    while ((val = (next_uint32(st) & mask)) > rng) {
    }
    return off + val;
  }
  if (rng == 0xFFFFFFFFFFFFFFFFULL) return off + next_uint64(st);
  // bounded_masked_uint64
  while ((val = (next_uint64(st) & mask)) > rng) {
  }
  return off + val;
}

int64_t random_integers(MT19937State& st, int64_t low, int64_t high) {
  // _rand_int64: rng = (uint64)(high - low) on the closed interval, off = (uint64)low.
  const uint64_t off = static_cast<uint64_t>(low);
  const uint64_t rng = static_cast<uint64_t>(high) - off;
  return static_cast<int64_t>(bounded_uint64(st, off, rng));
}

int64_t randint(MT19937State& st, int64_t low, int64_t high) { return random_integers(st, low, high - 1); }

// ---------------------------------------------------------------------------------------------
// Discrete distributions

int64_t legacy_random_binomial(MT19937State& st, double p, int64_t n) { return binomial_dispatch(st, p, n); }

int64_t random_binomial(MT19937State& st, double p, int64_t n) {
  if ((n == 0) || (p == 0.0)) return 0;
  return binomial_dispatch(st, p, n);
}

int64_t legacy_random_poisson(MT19937State& st, double lam) {
  // random_poisson
  if (lam >= 10) return poisson_ptrs(st, lam);
  if (lam == 0) return 0;
  return poisson_mult(st, lam);
}

void legacy_multinomial(MT19937State& st, int64_t n, const double* pvals, int64_t k, int64_t* out) {
  // mtrand.pyx multinomial: the checks, in numpy's order, before any draw.
  for (int64_t j = 0; j < k; ++j) {
    if (!(pvals[j] >= 0) || !(pvals[j] <= 1)) fail("pvals < 0, pvals > 1 or pvals contains NaNs");
  }
  if (k > 0 && kahan_sum(pvals, k - 1) > (1.0 + 1e-12)) fail("sum(pvals[:-1]) > 1.0");
  if (n < 0) fail("n < 0");
  if (k == 0) return;
  // random_multinomial (the output starts zeroed, np.zeros)
  std::fill(out, out + k, int64_t{0});
  double remaining_p = 1.0;
  int64_t dn = n;
  for (int64_t j = 0; j < (k - 1); ++j) {
    out[j] = random_binomial(st, pvals[j] / remaining_p, dn);
    dn = dn - out[j];
    if (dn <= 0) break;
    remaining_p -= pvals[j];
  }
  if (dn > 0) out[k - 1] = dn;
}

void legacy_shuffle(MT19937State& st, int64_t n, int64_t* data) {
  legacy_shuffle_with(st, n, [data](int64_t i, int64_t j) { std::swap(data[i], data[j]); });
}

void legacy_permutation(MT19937State& st, int64_t n, int64_t* out) {
  for (int64_t i = 0; i < n; ++i) out[i] = i;
  legacy_shuffle(st, n, out);
}

void legacy_choice(MT19937State& st, int64_t pop_size, int64_t size, bool replace, const double* p, int64_t* out) {
  // mtrand.pyx choice, for an integer / 1-d population; out receives the indices.
  if (size < 0) fail("negative dimensions are not allowed");
  if (pop_size <= 0 && size != 0) {
    fail("a must be greater than 0 unless no samples are taken");
  }
  if (p != nullptr) {
    const double atol = std::sqrt(std::numeric_limits<double>::epsilon());
    const double p_sum = kahan_sum(p, pop_size);
    if (std::isnan(p_sum)) fail("probabilities contain NaN");
    for (int64_t i = 0; i < pop_size; ++i) {
      if (p[i] < 0) fail("probabilities are not non-negative");
    }
    if (std::fabs(p_sum - 1.) > atol) fail("probabilities do not sum to 1");
  }

  if (replace) {
    if (p != nullptr) {
      std::vector<double> cdf;
      normalized_cdf(p, pop_size, cdf);
      // random_sample(shape) draws all uniforms first; searchsorted draws nothing.
      for (int64_t i = 0; i < size; ++i) out[i] = search_right(cdf, next_double(st));
    } else {
      for (int64_t i = 0; i < size; ++i) out[i] = randint(st, 0, pop_size);
    }
    return;
  }

  if (size > pop_size) {
    fail("Cannot take a larger sample than population when 'replace=False'");
  }
  if (p != nullptr) {
    int64_t nonzero = 0;
    for (int64_t i = 0; i < pop_size; ++i) nonzero += (p[i] > 0) ? 1 : 0;
    if (nonzero < size) fail("Fewer non-zero entries in p than size");
    std::vector<double> pw(p, p + pop_size);  // p.copy()
    std::vector<double> cdf;
    std::vector<double> x;
    std::vector<int64_t> fresh;
    int64_t n_uniq = 0;
    while (n_uniq < size) {
      const int64_t want = size - n_uniq;
      x.resize(static_cast<size_t>(want));
      for (double& u : x) u = next_double(st);  // self.rand(size - n_uniq)
      for (int64_t i = 0; i < n_uniq; ++i) pw[static_cast<size_t>(out[i])] = 0;
      normalized_cdf(pw.data(), pop_size, cdf);
      // new = searchsorted(x); keep each distinct value once, in order of first occurrence
      // (np.unique(..., return_index=True) + sorting the first-occurrence indices).
      fresh.clear();
      std::unordered_set<int64_t> seen;
      for (double u : x) {
        const int64_t idx = search_right(cdf, u);
        if (seen.insert(idx).second) fresh.push_back(idx);
      }
      for (int64_t v : fresh) out[n_uniq++] = v;
    }
    return;
  }
  // permutation(pop_size)[:size]: the whole population is shuffled whatever size is.
  std::vector<int64_t> perm(static_cast<size_t>(pop_size));
  legacy_permutation(st, pop_size, perm.data());
  std::copy(perm.begin(), perm.begin() + size, out);
}

// ---------------------------------------------------------------------------------------------
// Parameter checks (_common.pyx check_constraint, mtrand.pyx, _bounded_integers.pyx.in)

void check_uniform(double low, double high) {
  if (!std::isfinite(high - low)) throw std::overflow_error("Range exceeds valid bounds");
}

void check_normal(double scale) {
  if (!std::isnan(scale) && std::signbit(scale)) fail("scale < 0");
}

void check_standard_gamma(double shape) {
  if (!std::isnan(shape) && std::signbit(shape)) fail("shape < 0");
}

void check_gamma(double shape, double scale) {
  check_standard_gamma(shape);
  if (!std::isnan(scale) && std::signbit(scale)) fail("scale < 0");
}

void check_beta(double a, double b) {
  if (a <= 0) fail("a <= 0");
  if (b <= 0) fail("b <= 0");
}

void check_binomial(int64_t n, double p) {
  if (!(p >= 0) || !(p <= 1)) fail("p < 0, p > 1 or p is NaN");
  if (n < 0) fail("n < 0");
}

void check_poisson(double lam) {
  // LEGACY_POISSON_LAM_MAX = double(LONG_MAX) - sqrt(LONG_MAX) * 10
  static const double kLamMax = static_cast<double>(std::numeric_limits<int64_t>::max()) -
                                std::sqrt(static_cast<double>(std::numeric_limits<int64_t>::max())) * 10;
  if (!(lam >= 0)) fail("lam < 0 or lam is NaN");
  if (!(lam <= kLamMax)) fail("lam value too large");
}

void check_randint(int64_t low, int64_t high) {
  if (low >= high) fail("low >= high");
}

void check_random_integers(int64_t low, int64_t high) {
  // numpy calls randint(low, high + 1), hence its message.
  if (low > high) fail("low >= high");
}

}  // namespace hypatia::legacy_random
