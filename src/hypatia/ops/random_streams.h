// Theano's RandomStreams (theano.tensor.shared_randomstreams, raw_random): draws from numpy's
// legacy RandomState (MT19937 and its distribution algorithms, reproduced bit for bit in C++), with
// the state an input and an output of each draw (a uint32 vector of kRandomStateWords) held in a
// shared variable per random variable. Same seed, same calls: the numbers Theano's RandomStreams
// gave (it seeded each variable's numpy RandomState from RandomState(seed).randint(2**30)).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "hypatia/graph/graph.h"

namespace hypatia {

/// The words of one generator state: MT19937's 624 key words, the position, whether a second
/// Gaussian is cached, and that Gaussian's 64 bits (low word first).
inline constexpr int64_t kRandomStateWords = 628;

/// The distributions of RandomFunction, each numpy RandomState's method of the same name.
enum class RandomDist : uint8_t {
  Uniform,         ///< (low, high)
  Normal,          ///< (avg, std)
  Binomial,        ///< (n, p)
  RandomIntegers,  ///< (low, high): integers in [low, high], both included
  Choice,          ///< (a, replace, p): a an integer (range(a)) or a vector; p empty for uniform
  Poisson,         ///< (lam)
  Permutation,     ///< (n): adds a last axis of length n
  Multinomial,     ///< (n, pvals): adds pvals' last axis
  Gamma,           ///< (shape, scale)
  Beta,            ///< (a, b)
};

/// "uniform", "normal", ... (numpy's method names).
std::string_view random_dist_name(RandomDist d);
/// How many parameter inputs the distribution takes.
int random_dist_params(RandomDist d);

/// Theano's RandomFunction: inputs (state: uint32 vector of kRandomStateWords, size: int64 vector,
/// parameters...); outputs (the new state, the draws). The draws have `size`'s shape (plus the
/// added axis of permutation and multinomial); an empty size draws one value per element of the
/// parameters broadcast together (numpy's size=None). Parameters broadcast against size as numpy
/// broadcasts them, and elements are drawn in C order, one numpy call each, so the numbers are
/// numpy's RandomState's. Integer distributions write `dtype` (as Theano casts numpy's result).
/// No gradient (undefined), never merged or constant-folded.
class RandomFunction : public OpWithProps<RandomFunction> {
 public:
  RandomDist dist;
  DType dtype;
  std::vector<bool> broadcastable;  ///< of the draws

  RandomFunction(RandomDist dist, DType dtype, std::vector<bool> broadcastable);
  auto props() const { return std::make_tuple(dist, dtype, broadcastable); }
  /// "RandomFunction{uniform}" (Theano's).
  std::string name() const override;
  std::vector<TensorType> make_output_types(const std::vector<Var>& inputs) const override;
  std::vector<Var> grad(const Apply& node, const std::vector<Var>& output_grads) const override;
  std::vector<Var> rop(const Apply& node, const std::vector<Var>& eval_points) const override;
  bool is_random() const override { return true; }
  /// Axes the draws have beyond the size (1 for permutation and multinomial).
  int ndim_added() const;
};

/// Theano's RandomStreams: each random variable gets a shared state of its own, seeded from a seed
/// generator (numpy's RandomState(seed).randint(2**30)), and an update to its advanced state
/// (`state_updates`; from Python they become default updates, in C++ pass `updates()` to
/// function()). seed nullopt: seeds from the operating system's entropy.
class RandomStreams {
 public:
  explicit RandomStreams(std::optional<uint32_t> seed = std::nullopt);

  /// (state, new_state) of every random variable made so far.
  const std::vector<std::pair<Var, Var>>& state_updates() const { return updates_; }
  /// Reseeds every state made so far from a new seed generator (the construction seed when
  /// nullopt), in order, as Theano's seed() does.
  void seed(std::optional<uint32_t> seed = std::nullopt);

  /// A draw (random_draw) from a new state of its own, whose update is recorded.
  Var gen(RandomDist dist, Var size, std::vector<Var> params, DType dtype, int ndim = -1);
  /// A shared variable holding the next variable's state: numpy's RandomState(s) for the next
  /// seed s of the seed generator (RandomState(seed).randint(2**30)).
  Var new_state();
  /// Records (state, new_state) as a random variable's update.
  void add_update(Var state, Var new_state);
  /// The construction seed, and the generator of the next variables' seeds (numpy RandomState
  /// words), so that a pickled object goes on with the same numbers.
  std::optional<uint32_t> default_seed() const { return default_seed_; }
  const std::vector<uint32_t>& seed_generator() const { return seedgen_; }
  void set_seed_generator(std::vector<uint32_t> words);

  Var uniform(Var size, Var low, Var high, DType dtype, int ndim = -1);
  Var normal(Var size, Var avg, Var std, DType dtype, int ndim = -1);
  Var binomial(Var size, Var n, Var p, DType dtype = DType::Int64, int ndim = -1);
  Var random_integers(Var size, Var low, Var high, DType dtype = DType::Int64, int ndim = -1);
  /// a: an integer scalar (draws from range(a)) or a vector (draws its elements); p: null or an
  /// empty vector for equal probabilities.
  Var choice(Var size, Var a, bool replace, Var p, DType dtype = DType::Int64, int ndim = -1);
  Var poisson(Var size, Var lam, DType dtype = DType::Int64, int ndim = -1);
  /// Permutations of range(n), one per element of size.
  Var permutation(Var size, Var n, DType dtype = DType::Int64, int ndim = -1);
  Var multinomial(Var size, Var n, Var pvals, DType dtype = DType::Int64, int ndim = -1);
  Var gamma(Var size, Var shape, Var scale, DType dtype, int ndim = -1);
  Var beta(Var size, Var a, Var b, DType dtype, int ndim = -1);

 private:
  std::optional<uint32_t> default_seed_;
  std::vector<uint32_t> seedgen_;  // the seed generator's state (kRandomStateWords)
  std::vector<std::pair<Var, Var>> updates_;
};

/// Theano's raw_random draw: (new state, draws) of `dist` with `params` (numpy's order) from
/// `state`, of `size` (an integer vector of known length, or null for numpy's size=None: the
/// parameters' broadcast shape; choice and permutation then draw one); dtype: of the draws; ndim:
/// the size's length when it cannot be read from the graph (-1: read it).
std::pair<Var, Var> random_draw(RandomDist dist, Var state, Var size, std::vector<Var> params, DType dtype,
                                int ndim = -1);

/// The state numpy's RandomState(seed) starts from, as kRandomStateWords uint32 words.
NDArray random_state_from_seed(uint32_t seed);

}  // namespace hypatia
