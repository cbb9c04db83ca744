// Random numbers: Theano's MRG31k3p generator (theano.sandbox.rng_mrg) as ops whose state is an
// input and an output, so the graph shows where state flows and a function advances it through an
// update of the shared variable that holds it; the draws from uniforms (multinomial, choice); and
// MRGRandomStreams, which builds them with Theano 1.0's stream layout (same seed, same numbers).
#pragma once
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "hypatia/graph/graph.h"

namespace hypatia {

/// MRG31k3p's moduli (L'Ecuyer and Touzin 2000).
inline constexpr int32_t kMrgM1 = 2147483647;  // 2^31 - 1
inline constexpr int32_t kMrgM2 = 2147462579;  // 2^31 - 21069

/// One generator state: (x11, x12, x13, x21, x22, x23).
using MrgState = std::array<int32_t, 6>;

/// The state `s` advanced 2^72 steps (the start of the next stream of a substream).
MrgState mrg_jump_2p72(const MrgState& s);
/// The state `s` advanced 2^134 steps (the start of the next substream).
MrgState mrg_jump_2p134(const MrgState& s);
/// Theano's get_substream_rstates: an (n_streams, 6) int32 array whose row 0 is `s` and whose row
/// i is row i-1 advanced 2^72 steps.
NDArray mrg_substream_states(const MrgState& s, int64_t n_streams);
/// Theano's guess_n_streams for a size given as integers: prod(size) // 6 when it exceeds 6 (else
/// the product), at most 60 * 256. A symbolic size gets kMrgDefaultStreams.
int64_t mrg_guess_n_streams(const std::vector<int64_t>& size);
inline constexpr int64_t kMrgDefaultStreams = 60 * 256;

/// Theano's mrg_uniform: inputs (rstate: int32 matrix (n_streams, 6), size: an integer vector of
/// length ndim); outputs (the new rstate, a `dtype` (float32 / float64) array of shape `size`).
/// Element i is drawn from stream i % n_streams, which advances one step per draw, and lies in
/// (0, 1) (Theano's C code, bit for bit: float32 as (float)k * 4.6566126e-10f, float64 as
/// k * 2^-31 for the combined integer k). The in-place form (destroy_map {0: [0]}, made by the
/// inplace phase) writes the new state over the old. No gradient (undefined), R_op none. At most
/// 2^31 - 1 draws per call (Theano's limit). Random ops are never constant-folded or merged.
class MRGUniform : public OpWithProps<MRGUniform> {
 public:
  DType dtype;
  int ndim;
  bool inplace;

  MRGUniform(DType dtype, int ndim, bool inplace = false);
  auto props() const { return std::make_tuple(dtype, ndim, inplace); }
  /// "mrg_uniform{TensorType(float32, vector),no_inplace}" (Theano's).
  std::string name() const override;
  std::vector<TensorType> make_output_types(const std::vector<Var>& inputs) const override;
  std::vector<ShapeVars> infer_shape(const Apply& node, const std::vector<ShapeVars>& in) const override;
  std::vector<Var> grad(const Apply& node, const std::vector<Var>& output_grads) const override;
  std::vector<Var> rop(const Apply& node, const std::vector<Var>& eval_points) const override;
  AliasMap destroy_map() const override;
  bool is_random() const override { return true; }
  bool checks_runtime_inputs() const override { return true; }
  void check_runtime_inputs(const Apply& node, std::span<NDArray* const> in) const override { check_inputs(in); }
  /// ValueError naming the op for a state that is not an int32 (n_streams >= 1, 6) matrix, a size
  /// of another length than ndim, a negative dimension or more than 2^31 - 1 draws.
  void check_inputs(std::span<NDArray* const> in) const;
};

/// Theano's MultinomialFromUniform: inputs (pvals: float matrix (rows, outcomes), unis: float
/// vector of rows * n uniforms, n: 0-d integer); output `odtype` counts of pvals' shape: for each
/// of the n rounds and each row, the first outcome whose cumulative probability (summed in double)
/// exceeds the row's uniform gets one more count (none when no cumulative sum exceeds it).
/// Piecewise constant: its gradient is zero.
class MultinomialFromUniform : public OpWithProps<MultinomialFromUniform> {
 public:
  DType odtype;
  explicit MultinomialFromUniform(DType odtype) : odtype(odtype) {}
  auto props() const { return std::make_tuple(odtype); }
  std::string name() const override;
  std::vector<TensorType> make_output_types(const std::vector<Var>& inputs) const override;
  std::vector<ShapeVars> infer_shape(const Apply& node, const std::vector<ShapeVars>& in) const override;
  std::vector<Var> grad(const Apply& node, const std::vector<Var>& output_grads) const override;
  std::vector<Var> rop(const Apply& node, const std::vector<Var>& eval_points) const override;
};

/// Theano's ChoiceFromUniform: the same inputs; output `odtype` indices (rows, n): round c picks,
/// per row, the first outcome whose cumulative probability exceeds unis[c * rows + row]; without
/// replacement the picked probability is set to 0 and the row renormalized (in pvals' dtype, as
/// Theano's C code) before the next round. n larger than the outcomes (without replacement) is a
/// ValueError. Gradient zero.
class ChoiceFromUniform : public OpWithProps<ChoiceFromUniform> {
 public:
  DType odtype;
  bool replace;
  ChoiceFromUniform(DType odtype, bool replace) : odtype(odtype), replace(replace) {}
  auto props() const { return std::make_tuple(odtype, replace); }
  std::string name() const override;
  std::vector<TensorType> make_output_types(const std::vector<Var>& inputs) const override;
  std::vector<ShapeVars> infer_shape(const Apply& node, const std::vector<ShapeVars>& in) const override;
  std::vector<Var> grad(const Apply& node, const std::vector<Var>& output_grads) const override;
  std::vector<Var> rop(const Apply& node, const std::vector<Var>& eval_points) const override;
};

/// mrg_uniform(rstate, size): the (new rstate, sample) outputs of an MRGUniform node. `size` is an
/// integer vector of length `ndim`; ndim < 0: the length read from the graph (a constant, x.shape,
/// or a vector built from scalars; ValueError otherwise).
std::pair<Var, Var> mrg_uniform(Var rstate, Var size, DType dtype, int ndim = -1);

/// Theano 1.0's MRG_RandomStreams: each random variable it makes gets a shared variable holding
/// its streams' states (the next substream of the seed) and an update to the advanced state
/// (`state_updates`; from Python they become the shared variables' default updates, in C++ pass
/// `updates()` to function()). Same seed and same calls, same numbers as Theano 1.0.
class MRGRandomStreams {
 public:
  /// seed: one integer in [1, M2) used six times, or six (the first three < M1 and not all 0, the
  /// last three < M2 and not all 0). ValueError / TypeError otherwise.
  explicit MRGRandomStreams(int64_t seed = 12345);
  explicit MRGRandomStreams(const std::vector<int64_t>& seed);

  struct StateUpdate {
    Var state;      ///< the shared variable holding the states (int32 (n_streams, 6))
    Var new_state;  ///< its value after a draw
    int64_t n_streams;
  };
  const std::vector<StateUpdate>& state_updates() const { return updates_; }
  /// Records a random variable's states and their update (what each draw does; unpickling gives
  /// a restored object its variables back).
  void add_state_update(Var state, Var new_state, int64_t n_streams);
  /// The construction seed (six integers), which seed() without one goes back to.
  const std::vector<int64_t>& default_seed() const { return default_seed_; }
  /// (state, new_state) of every random variable made so far.
  std::vector<std::pair<Var, Var>> updates() const;
  /// The seed's current state: the substream the next random variable takes.
  const MrgState& rstate() const { return rstate_; }
  void set_rstate(const std::vector<int64_t>& seed);
  /// Reseeds (the construction seed when nullopt): every state shared variable made so far gets
  /// the states it would have had if made after this seed, in order.
  void seed(std::optional<std::vector<int64_t>> seed = std::nullopt);
  /// Theano's get_substream_rstates: n_streams states spaced 2^72 apart from rstate(), then
  /// (when inc) rstate() moves to the next substream.
  NDArray get_substream_rstates(int64_t n_streams, bool inc = true);

  /// Uniform draws in (low, high) of `size` (an integer vector of known length) and `dtype`
  /// (float32/float64): u * (high - low) + low with u from an mrg_uniform of n_streams streams
  /// (kMrgDefaultStreams when 0; Theano guesses from integer sizes with mrg_guess_n_streams, which
  /// the callers with integer sizes do).
  Var uniform(Var size, Var low, Var high, DType dtype, int64_t n_streams = 0);
  /// Normal draws (Box-Muller on one uniform draw of the size rounded up to even, Theano 1.0's
  /// layout); truncate: values beyond 2 standard deviations redrawn once from the tail-free part
  /// (Theano's truncate=True).
  Var normal(Var size, Var avg, Var std, DType dtype, int64_t n_streams = 0, bool truncate = false);
  /// cast(u < p, dtype) with u a uniform draw of `size` in `udtype` (n = 1 only, as Theano).
  Var binomial(Var size, Var p, DType dtype, DType udtype, int64_t n_streams = 0);
  /// Counts of n draws per row of pvals (a matrix): MultinomialFromUniform on rows * n uniforms.
  Var multinomial(Var pvals, Var n, DType dtype, DType udtype, int64_t n_streams = 0);
  /// n indices per row of p drawn without replacement (replace=true: with): ChoiceFromUniform.
  Var choice(Var p, Var n, bool replace, DType dtype, DType udtype, int64_t n_streams = 0);

 private:
  MrgState rstate_{};
  std::vector<int64_t> default_seed_;
  std::vector<StateUpdate> updates_;
};

}  // namespace hypatia
