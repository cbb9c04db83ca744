// numpy.random.RandomState (the legacy MT19937 generator and its legacy distribution
// algorithms), reproduced bit for bit in standard C++20. No numpy, no other Hypatia header.
//
// Every draw function below reproduces one RandomState method for scalar parameters and
// consumes the MT19937 stream in exactly the same order. numpy fills arrays in C order with one
// call per element (broadcasting the parameters), so a caller reproduces `size=` and array
// parameters by looping over the output in C order and calling the per-element function.
//
// Parameter checks: numpy validates every parameter of a call (the whole broadcast array) before
// it draws anything. The per-element draw functions therefore do NOT validate; call the matching
// check_* function on every parameter value first (they throw std::invalid_argument with numpy's
// message). multinomial and choice take whole vectors and validate internally, before drawing.
//
// Floating point: the results are bit-identical to numpy's only without FMA contraction and
// without -ffast-math. The .cpp turns contraction off itself (GCC and clang pragmas; GCC would
// otherwise fuse a*b+c under -march=native); -ffast-math / -Ofast must not be used for it. libm
// (log, exp, pow, sqrt) must behave as numpy's does, i.e. glibc's on Linux.
#pragma once

#include <cstdint>

namespace hypatia::legacy_random {

constexpr int kKeyWords = 624;    // MT19937 state words
constexpr int kStateWords = 628;  // packed state: key[624], pos, has_gauss, gauss low, gauss high

// The state of one RandomState: the MT19937 key and position plus the legacy gaussian cache
// (RandomState's aug_bitgen_t.has_gauss / .gauss). numpy's binomial setup cache is not part of
// the state: recomputing it always gives the cached values, so results are identical.
struct MT19937State {
  uint32_t key[kKeyWords];
  int pos;        // next key word to temper; kKeyWords means "regenerate before the next draw"
  int has_gauss;  // 0 or 1
  double gauss;   // the cached second polar Box-Muller value when has_gauss == 1
};

// np.random.RandomState(s) / RandomState.seed(s) for an integer 0 <= s < 2**32: numpy's
// mt19937_seed (Knuth's init_genrand recurrence), pos = 624, and the gaussian cache cleared.
void seed(MT19937State& st, uint32_t s);

// Packs the state into kStateWords words: key[0..623], pos, has_gauss, then the 64 bits of
// `gauss` (low word, high word). key and pos are what RandomState.get_state() returns.
void save(const MT19937State& st, uint32_t* out);
// Inverse of save. Throws std::invalid_argument when pos is not in [0, 624] or has_gauss is not
// 0/1 (st is left unchanged then).
void load(MT19937State& st, const uint32_t* in);

// Raw MT19937 outputs as numpy's bitgen exposes them.
// mt19937_gen: regenerates all 624 key words and sets pos to 0.
void twist(MT19937State& st);
// mt19937_next32: one tempered word (twisting when the key is used up).
inline uint32_t next_uint32(MT19937State& st) {
  if (st.pos == kKeyWords) twist(st);
  uint32_t y = st.key[st.pos++];
  y ^= (y >> 11);
  y ^= (y << 7) & 0x9d2c5680U;
  y ^= (y << 15) & 0xefc60000U;
  y ^= (y >> 18);
  return y;
}
// mt19937_next64: (first << 32) | second.
inline uint64_t next_uint64(MT19937State& st) {
  const uint64_t hi = next_uint32(st);
  return (hi << 32) | next_uint32(st);
}
// ((a >> 5) * 2^26 + (b >> 6)) / 2^53, a drawn first (numpy's legacy random_sample).
inline double next_double(MT19937State& st) {
  const auto a = static_cast<int32_t>(next_uint32(st) >> 5);
  const auto b = static_cast<int32_t>(next_uint32(st) >> 6);
  return (a * 67108864.0 + b) / 9007199254740992.0;
}

// RandomState.random_sample() / random() / rand(): one next_double, in [0, 1).
double random_sample(MT19937State& st);
// RandomState.uniform(low, high): low + (high - low) * random_sample() (numpy's random_uniform,
// with range = high - low computed first in double). See check_uniform.
double uniform(MT19937State& st, double low, double high);
// RandomState.standard_normal(): polar Box-Muller that returns f*x2 and caches f*x1 (legacy_gauss).
double legacy_gauss(MT19937State& st);
// RandomState.normal(loc, scale): loc + scale * legacy_gauss().
double legacy_normal(MT19937State& st, double loc, double scale);
// RandomState.standard_exponential(): -log(1 - random_sample()).
double legacy_standard_exponential(MT19937State& st);
// RandomState.standard_gamma(shape): Marsaglia-Tsang with legacy_gauss for shape > 1, the
// Johnk-type rejection for shape < 1, legacy_standard_exponential for shape == 1, 0 for shape 0.
double legacy_standard_gamma(MT19937State& st, double shape);
// RandomState.gamma(shape, scale): scale * legacy_standard_gamma(shape).
double legacy_gamma(MT19937State& st, double shape, double scale);
// RandomState.beta(a, b): Johnk's algorithm when a <= 1 and b <= 1, else Ga / (Ga + Gb).
double legacy_beta(MT19937State& st, double a, double b);

// numpy's random_interval(max): a uniform integer in [0, max] by masked rejection, with 32-bit
// draws when max <= 0xFFFFFFFF and 64-bit draws otherwise; max == 0 draws nothing.
uint64_t random_interval(MT19937State& st, uint64_t max);
// numpy's random_bounded_uint64(off, rng, mask, use_masked=true): off + a uniform integer in
// [0, rng] (wrapping mod 2^64). rng == 0 draws nothing; rng <= 0xFFFFFFFF uses masked 32-bit
// draws; rng == 2^64-1 returns off + next_uint64; otherwise masked 64-bit draws.
uint64_t bounded_uint64(MT19937State& st, uint64_t off, uint64_t rng);
// RandomState.randint(low, high) for dtype int64 (numpy's default 'long' on LP64), i.e. the
// closed interval [low, high - 1]; requires low < high (see check_randint). dtype=int32 and
// dtype=uint32 consume the stream identically (their rng is always <= 0xFFFFFFFF) and give the
// same values. dtypes int8/int16/uint8/uint16/bool use buffered sub-word draws: NOT reproduced.
int64_t randint(MT19937State& st, int64_t low, int64_t high);
// RandomState.random_integers(low, high) == randint(low, high + 1, dtype='l'): the closed
// interval [low, high]; requires low <= high. Also the core of randint (any int64 range,
// including [INT64_MIN, INT64_MAX]).
int64_t random_integers(MT19937State& st, int64_t low, int64_t high);

// RandomState.binomial(n, p) (legacy_random_binomial): inversion when min(p, 1-p) * n <= 30,
// else BTPE, computed on min(p, 1-p) and mirrored for p > 0.5. Note n == 0 or p == 0 still draws
// one double here (numpy's legacy path has no shortcut).
int64_t legacy_random_binomial(MT19937State& st, double p, int64_t n);
// numpy's non-legacy random_binomial, used by RandomState.multinomial: as above but returns 0
// without drawing when n == 0 or p == 0.
int64_t random_binomial(MT19937State& st, double p, int64_t n);
// RandomState.poisson(lam): 0 for lam == 0, the multiplication method for lam < 10, PTRS
// (Hoermann's transformed rejection) for lam >= 10.
int64_t legacy_random_poisson(MT19937State& st, double lam);

// RandomState.multinomial(n, pvals) for one output row of k counts: sequential binomials on the
// remaining probability (random_binomial(pvals[j] / remaining, remaining n)), the last entry
// absorbing what is left. Validates first like numpy (throws std::invalid_argument: pvals
// outside [0, 1] or NaN, kahan_sum(pvals[:-1]) > 1 + 1e-12, n < 0). For `size` rows call it
// once per row. k == 0 draws nothing.
void legacy_multinomial(MT19937State& st, int64_t n, const double* pvals, int64_t k, int64_t* out);

// RandomState.shuffle on a 1-d int64 array of length n: for i = n-1 down to 1,
// j = random_interval(i), swap data[i], data[j].
void legacy_shuffle(MT19937State& st, int64_t n, int64_t* data);
// The same index sequence for arbitrary elements (e.g. rows of a multi-dimensional array):
// swap(i, j) is called for every i from n-1 down to 1 (also when j == i; numpy skips that swap,
// which changes nothing).
template <class Swap>
void legacy_shuffle_with(MT19937State& st, int64_t n, Swap&& swap) {
  for (int64_t i = n - 1; i >= 1; --i) {
    const auto j = static_cast<int64_t>(random_interval(st, static_cast<uint64_t>(i)));
    swap(i, j);
  }
}
// RandomState.permutation(n) for an integer n >= 0: out = arange(n), then legacy_shuffle.
void legacy_permutation(MT19937State& st, int64_t n, int64_t* out);

// RandomState.choice(pop_size, size, replace, p) for an integer population (a = pop_size, or a
// 1-d array of length pop_size: the results are the indices into it). Fills out[0..size) with
// the flattened result (size = prod(shape); size=None is size 1). p may be null (uniform).
//  - replace, no p:      randint(0, pop_size) per element;
//  - replace, p:         cdf = cumsum(p); cdf /= cdf[-1]; searchsorted(cdf, random_sample(),
//                        side='right') per element;
//  - no replace, no p:   permutation(pop_size)[:size] (always shuffles the whole population);
//  - no replace, p:      numpy's loop: draw size - n_uniq uniforms, zero p at the indices found
//                        so far, renormalised cdf + searchsorted, keep the new unique indices in
//                        order of first occurrence, until size indices are found.
// Validates first like numpy (throws std::invalid_argument): pop_size <= 0 with size != 0,
// p negative / NaN / not summing to 1 within sqrt(eps), size > pop_size without replacement,
// fewer non-zero entries in p than size without replacement.
void legacy_choice(MT19937State& st, int64_t pop_size, int64_t size, bool replace, const double* p, int64_t* out);

// Parameter checks, numpy's constraints and messages (std::invalid_argument, except
// check_uniform which throws std::overflow_error as numpy raises OverflowError).
void check_uniform(double low, double high);            // high - low must be finite
void check_normal(double scale);                        // CONS_NON_NEGATIVE: scale < 0 (or -0.0) fails
void check_standard_gamma(double shape);                // CONS_NON_NEGATIVE on shape
void check_gamma(double shape, double scale);           // CONS_NON_NEGATIVE on shape and scale
void check_beta(double a, double b);                    // CONS_POSITIVE: a <= 0 or b <= 0 fails
void check_binomial(int64_t n, double p);               // n >= 0, 0 <= p <= 1 (NaN fails)
void check_poisson(double lam);                         // 0 <= lam <= LONG_MAX - 10*sqrt(LONG_MAX)
void check_randint(int64_t low, int64_t high);          // low < high
void check_random_integers(int64_t low, int64_t high);  // low <= high

}  // namespace hypatia::legacy_random
