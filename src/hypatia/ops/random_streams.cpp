// RandomFunction and RandomStreams (kernel: backends/random_kernels.cpp; the generator and the
// distributions: core/legacy_random.h).
#include "hypatia/ops/random_streams.h"

#include <random>

#include "hypatia/core/error.h"
#include "hypatia/core/legacy_random.h"
#include "hypatia/ops/elemwise.h"
#include "hypatia/ops/shape.h"
#include "hypatia/ops/shape_util.h"
#include "hypatia/ops/subtensor.h"

namespace hypatia {
namespace {

constexpr const char* kDistNames[] = {"uniform", "normal",      "binomial",    "random_integers", "choice",
                                      "poisson", "permutation", "multinomial", "gamma",           "beta"};
constexpr int kDistParams[] = {2, 2, 2, 2, 3, 1, 1, 2, 2, 2};

int known_length(const Var& size, const std::string& who) {
  if (size->is_constant()) return static_cast<int>(size->data.shape(0));
  if (size->owner && typeid(*size->owner->op) == typeid(MakeVector))
    return static_cast<int>(size->owner->inputs.size());
  if (size->owner && typeid(*size->owner->op) == typeid(ShapeOp)) return size->owner->inputs[0]->ndim();
  fail<ValueError>(who, ": the length of the size vector ", size->str(),
                   " must be known when the graph is built (give a tuple, a constant, x.shape, a vector built from "
                   "scalars, or ndim)");
}

}  // namespace

std::string_view random_dist_name(RandomDist d) { return kDistNames[static_cast<int>(d)]; }
int random_dist_params(RandomDist d) { return kDistParams[static_cast<int>(d)]; }

NDArray random_state_from_seed(uint32_t seed) {
  legacy_random::MT19937State st;
  legacy_random::seed(st, seed);
  NDArray r = NDArray::empty({kRandomStateWords}, DType::UInt32);
  legacy_random::save(st, r.data<uint32_t>());
  return r;
}

// ---------------------------------------------------------------------------------------------
// RandomFunction

RandomFunction::RandomFunction(RandomDist dist, DType dtype, std::vector<bool> broadcastable)
    : dist(dist), dtype(dtype), broadcastable(std::move(broadcastable)) {
  if (static_cast<int>(dist) > static_cast<int>(RandomDist::Beta))
    fail<ValueError>("RandomFunction: unknown distribution ", static_cast<int>(dist));
  if (dtype == DType::Bool || dtype == DType::Float16)
    fail<TypeError>("RandomFunction{", random_dist_name(dist), "}: draws of dtype ", dtype_name(dtype),
                    " are not supported (draw in another dtype and cast)");
  if (static_cast<int>(this->broadcastable.size()) < ndim_added())
    fail<ValueError>("RandomFunction{", random_dist_name(dist), "}: the draws need at least ", ndim_added(),
                     " dimensions");
}

int RandomFunction::ndim_added() const {
  return dist == RandomDist::Permutation || dist == RandomDist::Multinomial ? 1 : 0;
}

std::string RandomFunction::name() const { return "RandomFunction{" + std::string(random_dist_name(dist)) + "}"; }

std::vector<TensorType> RandomFunction::make_output_types(const std::vector<Var>& in) const {
  const size_t want = 2 + static_cast<size_t>(random_dist_params(dist));
  if (in.size() != want)
    fail<TypeError>(name(), ": expected ", want, " inputs (state, size and ", want - 2, " parameters), got ",
                    in.size());
  if (in[0]->type.dtype != DType::UInt32 || in[0]->ndim() != 1)
    fail<TypeError>(name(), ": expected the state as a uint32 vector of ", kRandomStateWords, " words, got ",
                    in[0]->type.str());
  if (in[1]->ndim() != 1 || !is_integer(in[1]->dtype()))
    fail<TypeError>(name(), ": expected the size as an integer vector, got ", in[1]->type.str());
  for (size_t i = 2; i < in.size(); ++i)
    if (is_bool(in[i]->dtype()) && !(dist == RandomDist::Choice && i == 3))
      fail<TypeError>(name(), ": parameter ", i - 2, " is ", in[i]->type.str(), "; expected numbers");
  return {in[0]->type, TensorType(dtype, broadcastable)};
}

std::vector<Var> RandomFunction::grad(const Apply& node, const std::vector<Var>&) const {
  std::vector<Var> r;
  for (size_t i = 0; i < node.inputs.size(); ++i)
    r.push_back(is_float(node.inputs[i]->dtype()) ? grad_undefined(*this, static_cast<int>(i), node.inputs[i]->type,
                                                                   "No gradient defined through raw random numbers op")
                                                  : Var());
  return r;
}

std::vector<Var> RandomFunction::rop(const Apply& node, const std::vector<Var>&) const { return {nullptr, nullptr}; }

// ---------------------------------------------------------------------------------------------
// RandomStreams

namespace {

/// Theano's _infer_ndim_bcast: the draws' ndim, the size as an int64 vector, and their
/// broadcastable pattern (constant 1 entries of a tuple size broadcast; a size=None draw takes the
/// broadcast parameters' shape and pattern).
struct SizeInfo {
  Var size;
  std::vector<bool> bc;
};

SizeInfo infer_size(const std::string& who, Var size, const std::vector<Var>& args, int ndim) {
  int args_ndim = 0;
  for (const Var& a : args) args_ndim = std::max(args_ndim, a->ndim());
  SizeInfo r;
  if (!size) {
    if (args.empty()) fail<TypeError>(who, ": cannot infer the size without a size or parameters");
    Var t = args[0];
    for (size_t i = 1; i < args.size(); ++i) t = t + args[i];
    r.size = shape(t);
    r.bc = t->type.broadcastable;
    return r;
  }
  if (size->ndim() != 1 || !is_integer(size->dtype()))
    fail<TypeError>(who, ": size must be an integer vector or a tuple of integers, got ", size->type.str());
  const int n = ndim >= 0 ? ndim : known_length(size, who);
  r.size = detail::as_int64(size);
  if (r.size->dtype() != DType::Int64) r.size = cast(size, DType::Int64);
  for (int i = 0; i < n; ++i) {
    const auto c = detail::vector_entry_constant(size, i);
    if (c && *c < 0) fail<ValueError>(who, ": negative size entry ", *c);
    r.bc.push_back(c == std::optional<int64_t>(1));
  }
  if (args_ndim > n)
    fail<ValueError>(who, ": ndim should be at least as big as required by the parameters (", n, " < ", args_ndim, ")");
  return r;
}

std::vector<uint32_t> seedgen_state(std::optional<uint32_t> seed) {
  legacy_random::MT19937State st;
  legacy_random::seed(st, seed ? *seed : std::random_device{}());
  std::vector<uint32_t> words(kRandomStateWords);
  legacy_random::save(st, words.data());
  return words;
}

/// numpy's RandomState.randint(2**30) on the seed generator.
uint32_t next_variable_seed(std::vector<uint32_t>& seedgen) {
  legacy_random::MT19937State st;
  legacy_random::load(st, seedgen.data());
  const auto s = static_cast<uint32_t>(legacy_random::random_interval(st, (uint64_t{1} << 30) - 1));
  legacy_random::save(st, seedgen.data());
  return s;
}

}  // namespace

RandomStreams::RandomStreams(std::optional<uint32_t> seed) : default_seed_(seed), seedgen_(seedgen_state(seed)) {}

void RandomStreams::set_seed_generator(std::vector<uint32_t> words) {
  if (words.size() != seedgen_.size())
    fail<ValueError>("RandomStreams: a seed generator state has ", seedgen_.size(), " words, got ", words.size());
  seedgen_ = std::move(words);
}

void RandomStreams::seed(std::optional<uint32_t> s) {
  std::vector<uint32_t> gen = seedgen_state(s ? s : default_seed_);
  for (const auto& [state, next] : updates_) state->cell->exchange(random_state_from_seed(next_variable_seed(gen)));
}

std::pair<Var, Var> random_draw(RandomDist dist, Var state, Var size, std::vector<Var> params, DType dtype, int ndim) {
  const std::string who = "RandomStreams." + std::string(random_dist_name(dist));
  if (static_cast<int>(params.size()) != random_dist_params(dist))
    fail<TypeError>(who, ": expected ", random_dist_params(dist), " parameters, got ", params.size());
  // The parameters that broadcast against the size: all but choice's and permutation's, and only
  // pvals' leading axes for multinomial.
  std::vector<Var> bcast_args;
  if (dist == RandomDist::Multinomial) {
    bcast_args = {params[0]};
    if (params[1]->ndim() < 1) fail<ValueError>(who, ": pvals must have at least one dimension");
    std::vector<Index> first(static_cast<size_t>(params[1]->ndim() - 1), all());
    first.push_back(Index(int64_t{0}));
    bcast_args.push_back(subtensor(params[1], first));
  } else if (dist != RandomDist::Choice && dist != RandomDist::Permutation) {
    bcast_args = params;
  }
  // Without a size, choice draws one value and permutation one permutation (numpy's size=None).
  if (!size && bcast_args.empty()) {
    size = constant(NDArray::empty({0}, DType::Int64));
    ndim = 0;
  }
  SizeInfo si = infer_size(who, std::move(size), bcast_args, ndim);
  if (dist == RandomDist::Permutation) si.bc.push_back(false);
  if (dist == RandomDist::Multinomial) si.bc.push_back(params[1]->type.broadcastable.back());
  std::vector<Var> inputs{std::move(state), si.size};
  inputs.insert(inputs.end(), params.begin(), params.end());
  auto outs = apply_op(std::make_shared<RandomFunction>(dist, dtype, si.bc), inputs);
  return {outs[0], outs[1]};
}

Var RandomStreams::new_state() {
  return shared(random_state_from_seed(next_variable_seed(seedgen_)), "", /*borrow=*/true);
}

void RandomStreams::add_update(Var state, Var new_state) {
  if (!state || !state->is_shared()) fail<TypeError>("RandomStreams: the state must be a shared variable");
  updates_.emplace_back(std::move(state), std::move(new_state));
}

Var RandomStreams::gen(RandomDist dist, Var size, std::vector<Var> params, DType dtype, int ndim) {
  Var state = new_state();
  auto [next, out] = random_draw(dist, state, std::move(size), std::move(params), dtype, ndim);
  add_update(state, next);
  return out;
}

Var RandomStreams::uniform(Var size, Var low, Var high, DType dtype, int ndim) {
  return gen(RandomDist::Uniform, std::move(size), {std::move(low), std::move(high)}, dtype, ndim);
}
Var RandomStreams::normal(Var size, Var avg, Var std, DType dtype, int ndim) {
  return gen(RandomDist::Normal, std::move(size), {std::move(avg), std::move(std)}, dtype, ndim);
}
Var RandomStreams::binomial(Var size, Var n, Var p, DType dtype, int ndim) {
  return gen(RandomDist::Binomial, std::move(size), {std::move(n), std::move(p)}, dtype, ndim);
}
Var RandomStreams::random_integers(Var size, Var low, Var high, DType dtype, int ndim) {
  return gen(RandomDist::RandomIntegers, std::move(size), {std::move(low), std::move(high)}, dtype, ndim);
}
Var RandomStreams::choice(Var size, Var a, bool replace, Var p, DType dtype, int ndim) {
  if (!p) p = constant(NDArray::empty({0}, DType::Float64));
  return gen(RandomDist::Choice, std::move(size), {std::move(a), constant(replace ? 1.0 : 0.0, DType::Int8), p}, dtype,
             ndim);
}
Var RandomStreams::poisson(Var size, Var lam, DType dtype, int ndim) {
  return gen(RandomDist::Poisson, std::move(size), {std::move(lam)}, dtype, ndim);
}
Var RandomStreams::permutation(Var size, Var n, DType dtype, int ndim) {
  return gen(RandomDist::Permutation, std::move(size), {std::move(n)}, dtype, ndim);
}
Var RandomStreams::multinomial(Var size, Var n, Var pvals, DType dtype, int ndim) {
  return gen(RandomDist::Multinomial, std::move(size), {std::move(n), std::move(pvals)}, dtype, ndim);
}
Var RandomStreams::gamma(Var size, Var shape, Var scale, DType dtype, int ndim) {
  return gen(RandomDist::Gamma, std::move(size), {std::move(shape), std::move(scale)}, dtype, ndim);
}
Var RandomStreams::beta(Var size, Var a, Var b, DType dtype, int ndim) {
  return gen(RandomDist::Beta, std::move(size), {std::move(a), std::move(b)}, dtype, ndim);
}

}  // namespace hypatia
