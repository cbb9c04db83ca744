// MRG31k3p random ops and MRGRandomStreams (kernels: backends/random_kernels.cpp).
#include "hypatia/ops/random.h"

#include <cmath>
#include <numbers>

#include "hypatia/core/error.h"
#include "hypatia/ops/elemwise.h"
#include "hypatia/ops/reduce.h"
#include "hypatia/ops/shape.h"
#include "hypatia/ops/shape_util.h"
#include "hypatia/ops/subtensor.h"

namespace hypatia {
namespace {

// Jump-ahead matrices of MRG31k3p's two components (L'Ecuyer and Touzin; Theano's A1p72 ...).
using Mat3 = std::array<std::array<int64_t, 3>, 3>;
constexpr Mat3 kA1p72{
    {{1516919229, 758510237, 499121365}, {1884998244, 1516919229, 335398200}, {601897748, 1884998244, 358115744}}};
constexpr Mat3 kA2p72{
    {{1228857673, 1496414766, 954677935}, {1133297478, 1407477216, 1496414766}, {2002613992, 1639496704, 1407477216}}};
constexpr Mat3 kA1p134{
    {{1702500920, 1849582496, 1656874625}, {828554832, 1702500920, 1512419905}, {1143731069, 828554832, 102237247}}};
constexpr Mat3 kA2p134{
    {{796789021, 1464208080, 607337906}, {1241679051, 1431130166, 1464208080}, {1401213391, 1178684362, 1431130166}}};

/// Rows of A times s, each product reduced mod m, summed, reduced mod m (Theano's DotModulo).
void mat_vec_mod(const Mat3& a, const int32_t* s, int64_t m, int32_t* out) {
  for (int i = 0; i < 3; ++i) {
    int64_t r = 0;
    for (int j = 0; j < 3; ++j) r += (static_cast<int64_t>(s[j]) * a[i][j]) % m;
    out[i] = static_cast<int32_t>(r % m);
  }
}

MrgState jump(const MrgState& s, const Mat3& a1, const Mat3& a2) {
  MrgState r{};
  mat_vec_mod(a1, s.data(), kMrgM1, r.data());
  mat_vec_mod(a2, s.data() + 3, kMrgM2, r.data() + 3);
  return r;
}

void check_random_state_type(const std::string& who, const TensorType& t, const char* role) {
  if (t.dtype != DType::Int32 || t.ndim() != 2)
    fail<TypeError>(who, ": expected the ", role, " to be an int32 matrix (n_streams, 6), got ", t.str());
}

void check_float_dtype(const std::string& who, DType dt) {
  if (dt != DType::Float32 && dt != DType::Float64)
    fail<TypeError>(who, ": expected the sample dtype float32 or float64, got ", dtype_name(dt),
                    " (draw in float32 and cast)");
}

MrgState state_from_seed(const std::vector<int64_t>& seed) {
  MrgState s{};
  if (seed.size() == 1) {
    if (seed[0] == 0) fail<ValueError>("MRG_RandomStreams: the seed should not be 0");
    if (seed[0] < 0 || seed[0] >= kMrgM2)
      fail<ValueError>("MRG_RandomStreams: the seed should be in [1, ", kMrgM2, "), got ", seed[0]);
    s.fill(static_cast<int32_t>(seed[0]));
    return s;
  }
  if (seed.size() != 6)
    fail<TypeError>("MRG_RandomStreams: the seed should be 1 integer or 6 integers, got ", seed.size(), " integers");
  for (int i = 0; i < 6; ++i) {
    const int64_t m = i < 3 ? kMrgM1 : kMrgM2;
    if (seed[i] < 0 || seed[i] >= m)
      fail<ValueError>("MRG_RandomStreams: seed value ", i, " should be in [0, ", m, "), got ", seed[i]);
    s[i] = static_cast<int32_t>(seed[i]);
  }
  if (s[0] == 0 && s[1] == 0 && s[2] == 0)
    fail<ValueError>("MRG_RandomStreams: the first 3 values of the seed should not be all 0");
  if (s[3] == 0 && s[4] == 0 && s[5] == 0)
    fail<ValueError>("MRG_RandomStreams: the last 3 values of the seed should not be all 0");
  return s;
}

/// The length of an integer size vector, which must be known when the graph is built.
int size_length(const Var& size, const char* who) {
  if (!size || size->ndim() != 1 || !is_integer(size->dtype()))
    fail<TypeError>(who, ": expected the size as an integer vector, got ",
                    size ? size->type.str() : std::string("nothing"));
  if (size->is_constant()) return static_cast<int>(size->data.shape(0));
  if (size->owner && typeid(*size->owner->op) == typeid(MakeVector))
    return static_cast<int>(size->owner->inputs.size());
  if (size->owner && typeid(*size->owner->op) == typeid(ShapeOp)) return size->owner->inputs[0]->ndim();
  fail<ValueError>(
      who, ": the length of the size vector ", size->str(),
      " must be known when the graph is built (give a tuple, a constant, x.shape or a vector built from scalars)");
}

}  // namespace

MrgState mrg_jump_2p72(const MrgState& s) { return jump(s, kA1p72, kA2p72); }
MrgState mrg_jump_2p134(const MrgState& s) { return jump(s, kA1p134, kA2p134); }

NDArray mrg_substream_states(const MrgState& s, int64_t n_streams) {
  if (n_streams <= 0) fail<ValueError>("MRG_RandomStreams: the number of streams must be positive, got ", n_streams);
  NDArray r = NDArray::empty({n_streams, 6}, DType::Int32);
  int32_t* d = r.data<int32_t>();
  MrgState cur = s;
  for (int64_t i = 0; i < n_streams; ++i) {
    if (i > 0) cur = mrg_jump_2p72(cur);
    std::copy(cur.begin(), cur.end(), d + i * 6);
  }
  return r;
}

int64_t mrg_guess_n_streams(const std::vector<int64_t>& size) {
  int64_t r = 1;
  for (int64_t s : size) {
    if (s > 0 && r > kMrgDefaultStreams * 6 / s + 6) return kMrgDefaultStreams;  // large: capped anyway
    r *= s;
  }
  if (r > 6) r /= 6;
  return std::min<int64_t>(r, kMrgDefaultStreams);
}

// ---------------------------------------------------------------------------------------------
// MRGUniform

MRGUniform::MRGUniform(DType dtype, int ndim, bool inplace) : dtype(dtype), ndim(ndim), inplace(inplace) {
  check_float_dtype("mrg_uniform", dtype);
  if (ndim < 0) fail<ValueError>("mrg_uniform: ndim must be >= 0, got ", ndim);
}

std::string MRGUniform::name() const {
  return "mrg_uniform{" + TensorType(dtype, std::vector<bool>(static_cast<size_t>(ndim), false)).str() + "," +
         (inplace ? "inplace" : "no_inplace") + "}";
}

std::vector<TensorType> MRGUniform::make_output_types(const std::vector<Var>& in) const {
  if (in.size() != 2) fail<TypeError>(name(), ": expected 2 inputs (rstate, size), got ", in.size());
  check_random_state_type(name(), in[0]->type, "rstate");
  const TensorType& st = in[1]->type;
  if (st.ndim() != 1 || !is_integer(st.dtype))
    fail<TypeError>(name(), ": expected the size as an integer vector, got ", st.str());
  if (in[1]->is_constant() && in[1]->data.shape(0) != ndim)
    fail<ValueError>(name(), ": the size has ", in[1]->data.shape(0), " entries for a ", ndim, "-d sample");
  std::vector<bool> bc(static_cast<size_t>(ndim), false);
  for (int i = 0; i < ndim; ++i) bc[i] = detail::vector_entry_constant(in[1], i) == std::optional<int64_t>(1);
  return {TensorType(DType::Int32, in[0]->type.broadcastable), TensorType(dtype, bc)};
}

std::vector<ShapeVars> MRGUniform::infer_shape(const Apply& node, const std::vector<ShapeVars>& in) const {
  ShapeVars out;
  for (int i = 0; i < ndim; ++i) out.push_back(detail::vector_entry(node.inputs[1], i));
  return {in[0], out};
}

std::vector<Var> MRGUniform::grad(const Apply& node, const std::vector<Var>&) const {
  std::vector<Var> r;
  for (int i = 0; i < 2; ++i)
    r.push_back(grad_undefined(*this, i, node.inputs[i]->type, "No gradient defined through random sampling op"));
  return r;
}

std::vector<Var> MRGUniform::rop(const Apply&, const std::vector<Var>&) const { return {nullptr, nullptr}; }

AliasMap MRGUniform::destroy_map() const { return inplace ? AliasMap{{0}} : AliasMap{}; }

void MRGUniform::check_inputs(std::span<NDArray* const> in) const {
  const NDArray& rstate = *in[0];
  const NDArray& size = *in[1];
  if (rstate.ndim() != 2 || rstate.shape(1) != 6 || rstate.dtype() != DType::Int32)
    fail<ValueError>(name(), ": rstate must be an int32 matrix with 6 columns, got ", rstate.describe());
  if (rstate.shape(0) < 1) fail<ValueError>(name(), ": rstate has no stream (shape ", rstate.describe(), ")");
  if (size.ndim() != 1 || size.shape(0) != ndim)
    fail<ValueError>(name(), ": size must have length ", ndim, ", got ", size.describe());
  int64_t n = 1;
  for (int i = 0; i < ndim; ++i) {
    const int64_t d = size.get_flat_int(i);
    if (d < 0) fail<ValueError>(name(), ": size has a negative dimension ", d);
    n = d == 0 || n == 0 ? 0 : (n > kMrgM1 / d ? int64_t{kMrgM1} + 1 : n * d);
  }
  if (n > kMrgM1)
    fail<ValueError>(name(), ": rng_mrg does not support more than (2**31 - 1) samples per draw, got size ",
                     size.describe());
}

// ---------------------------------------------------------------------------------------------
// MultinomialFromUniform and ChoiceFromUniform

namespace {

void check_from_uniform_inputs(const std::string& who, const std::vector<Var>& in) {
  if (in.size() != 3) fail<TypeError>(who, ": expected 3 inputs (pvals, unis, n), got ", in.size());
  if (in[0]->ndim() != 2 || !is_float(in[0]->dtype()))
    fail<TypeError>(who, ": expected pvals as a float matrix, got ", in[0]->type.str());
  if (in[1]->ndim() != 1 || !is_float(in[1]->dtype()))
    fail<TypeError>(who, ": expected unis as a float vector, got ", in[1]->type.str());
  if (in[2]->ndim() != 0 || !is_integer(in[2]->dtype()))
    fail<TypeError>(who, ": expected n as an integer scalar, got ", in[2]->type.str());
}

std::vector<Var> zero_grads(const Apply& node) {
  std::vector<Var> r;
  for (const Var& x : node.inputs) r.push_back(is_float(x->dtype()) ? zeros_like(x) : Var());
  return r;
}

}  // namespace

std::string MultinomialFromUniform::name() const {
  return "MultinomialFromUniform{" + std::string(dtype_name(odtype)) + "}";
}

std::vector<TensorType> MultinomialFromUniform::make_output_types(const std::vector<Var>& in) const {
  check_from_uniform_inputs(name(), in);
  return {TensorType(odtype, in[0]->type.broadcastable)};
}

std::vector<ShapeVars> MultinomialFromUniform::infer_shape(const Apply&, const std::vector<ShapeVars>& in) const {
  return {in[0]};
}

std::vector<Var> MultinomialFromUniform::grad(const Apply& node, const std::vector<Var>&) const {
  return zero_grads(node);
}

std::vector<Var> MultinomialFromUniform::rop(const Apply&, const std::vector<Var>&) const { return {nullptr}; }

std::string ChoiceFromUniform::name() const {
  return "ChoiceFromUniform{" + std::string(dtype_name(odtype)) + (replace ? ",replace" : ",no_replace") + "}";
}

std::vector<TensorType> ChoiceFromUniform::make_output_types(const std::vector<Var>& in) const {
  check_from_uniform_inputs(name(), in);
  return {TensorType(odtype, {in[0]->type.broadcastable[0], false})};
}

std::vector<ShapeVars> ChoiceFromUniform::infer_shape(const Apply& node, const std::vector<ShapeVars>& in) const {
  return {{in[0][0], detail::as_int64(node.inputs[2])}};
}

std::vector<Var> ChoiceFromUniform::grad(const Apply& node, const std::vector<Var>&) const { return zero_grads(node); }

std::vector<Var> ChoiceFromUniform::rop(const Apply&, const std::vector<Var>&) const { return {nullptr}; }

std::pair<Var, Var> mrg_uniform(Var rstate, Var size, DType dtype, int ndim) {
  const int nd = ndim >= 0 ? ndim : size_length(size, "mrg_uniform");
  auto outs = apply_op(std::make_shared<MRGUniform>(dtype, nd), {std::move(rstate), std::move(size)});
  return {outs[0], outs[1]};
}

// ---------------------------------------------------------------------------------------------
// MRGRandomStreams

MRGRandomStreams::MRGRandomStreams(int64_t seed) : MRGRandomStreams(std::vector<int64_t>{seed}) {}

MRGRandomStreams::MRGRandomStreams(const std::vector<int64_t>& seed) : default_seed_(seed) { set_rstate(seed); }

void MRGRandomStreams::set_rstate(const std::vector<int64_t>& seed) { rstate_ = state_from_seed(seed); }

void MRGRandomStreams::add_state_update(Var state, Var new_state, int64_t n_streams) {
  if (!state || !state->is_shared() || !new_state || !(state->type == new_state->type) ||
      state->type.dtype != DType::Int32 || state->ndim() != 2)
    fail<TypeError>(
        "MRG_RandomStreams: a state update must be an int32 matrix shared variable and a value of its type");
  updates_.push_back({std::move(state), std::move(new_state), n_streams});
}

std::vector<std::pair<Var, Var>> MRGRandomStreams::updates() const {
  std::vector<std::pair<Var, Var>> r;
  for (const auto& u : updates_) r.emplace_back(u.state, u.new_state);
  return r;
}

NDArray MRGRandomStreams::get_substream_rstates(int64_t n_streams, bool inc) {
  NDArray r = mrg_substream_states(rstate_, n_streams);
  if (inc) rstate_ = mrg_jump_2p134(rstate_);
  return r;
}

void MRGRandomStreams::seed(std::optional<std::vector<int64_t>> s) {
  set_rstate(s ? *s : default_seed_);
  for (const StateUpdate& u : updates_) {
    NDArray v = get_substream_rstates(u.n_streams);
    u.state->cell->exchange(std::move(v));
  }
}

Var MRGRandomStreams::uniform(Var size, Var low, Var high, DType dtype, int64_t n_streams) {
  check_float_dtype("MRG_RandomStreams.uniform", dtype);
  size_length(size, "MRG_RandomStreams.uniform");
  if (n_streams <= 0) n_streams = kMrgDefaultStreams;
  low = cast(low, dtype);
  high = cast(high, dtype);
  Var state = shared(get_substream_rstates(n_streams), "", /*borrow=*/true);
  auto [new_state, u] = mrg_uniform(state, std::move(size), dtype);
  updates_.push_back({state, new_state, n_streams});
  Var r = u * (high - low) + low;
  if (r->type.broadcastable != u->type.broadcastable)
    fail<NotImplementedError>("MRG_RandomStreams.uniform: low ", low->type.str(), " and high ", high->type.str(),
                              " broadcast the sample ", u->type.str(), " to ", r->type.str(),
                              "; increase the size to match the broadcasting pattern of low and high");
  return r;
}

Var MRGRandomStreams::normal(Var size, Var avg, Var std, DType dtype, int64_t n_streams, bool truncate) {
  check_float_dtype("MRG_RandomStreams.normal", dtype);
  const int nd = size_length(size, "MRG_RandomStreams.normal");
  avg = cast(avg, dtype);
  std = cast(std, dtype);
  // An even number of uniforms: the first half gives the radii, the second the angles.
  Var n_odd = prod(detail::as_int64(size), std::nullopt, false, DType::Int64);
  Var n_even = n_odd + n_odd % int_constant(2);
  Var half = int_div(n_even, int_constant(2));
  Var zero = constant(0.0, dtype), one = constant(1.0, dtype);
  Var u = uniform(make_vector({n_even}), zero, one, dtype, n_streams);
  Var u1 = subtensor(u, {sl({}, half)});
  Var u2 = subtensor(u, {sl(half, {})});
  Var r = sqrt(constant(-2.0, dtype) * log(u1));
  Var theta = constant(2.0 * std::numbers::pi, dtype) * u2;
  Var cos_theta = cos(theta), sin_theta = sin(theta);
  Var z0 = r * cos_theta, z1 = r * sin_theta;
  Var samples;
  if (truncate) {
    // Values beyond 2 standard deviations are drawn again, once, from radii that stay within 2.
    Var two = constant(2.0, dtype), mtwo = constant(-2.0, dtype);
    Var fix0 = or_(lt(z0, mtwo), gt(z0, two));
    Var fix1 = or_(lt(z1, mtwo), gt(z1, two));
    Var z0_valid = subtensor(z0, {Index(invert(fix0))});
    Var z1_valid = subtensor(z1, {Index(invert(fix1))});
    Var n_fix0 = sum(fix0, std::nullopt, false, DType::Int64);
    Var n_fix1 = sum(fix1, std::nullopt, false, DType::Int64);
    Var u_fix = uniform(make_vector({n_fix0 + n_fix1}), constant(1.0 / (std::numbers::e * std::numbers::e), dtype), one,
                        dtype, n_streams);
    Var r_fix = sqrt(constant(-2.0, dtype) * log(u_fix));
    Var z0_fixed = subtensor(r_fix, {sl({}, n_fix0)}) * subtensor(cos_theta, {Index(fix0)});
    Var z1_fixed = subtensor(r_fix, {sl(n_fix0, {})}) * subtensor(sin_theta, {Index(fix1)});
    samples = concatenate({z0_valid, z0_fixed, z1_valid, z1_fixed}, 0);
  } else {
    samples = concatenate({z0, z1}, 0);
  }
  samples = subtensor(samples, {sl({}, n_odd)});
  samples = reshape(samples, size, nd);
  return samples * std + avg;
}

Var MRGRandomStreams::binomial(Var size, Var p, DType dtype, DType udtype, int64_t n_streams) {
  Var u = uniform(std::move(size), constant(0.0, udtype), constant(1.0, udtype), udtype, n_streams);
  return cast(lt(u, p), dtype);
}

namespace {
/// (rows * n,): the uniforms a multinomial or choice over the rows of `pvals` needs.
Var rows_times(const Var& pvals, const Var& n, const char* who) {
  if (pvals->ndim() != 2)
    fail<NotImplementedError>(who, ": only implemented for a matrix of probabilities, got ", pvals->type.str());
  detail::check_int_scalar(who, n, "n");
  return make_vector({shape_i(pvals, 0) * detail::as_int64(n)});
}
}  // namespace

Var MRGRandomStreams::multinomial(Var pvals, Var n, DType dtype, DType udtype, int64_t n_streams) {
  Var size = rows_times(pvals, n, "MRG_RandomStreams.multinomial");
  Var u = uniform(size, constant(0.0, udtype), constant(1.0, udtype), udtype, n_streams);
  return apply_op1(std::make_shared<MultinomialFromUniform>(dtype), {std::move(pvals), u, std::move(n)});
}

Var MRGRandomStreams::choice(Var p, Var n, bool replace, DType dtype, DType udtype, int64_t n_streams) {
  Var size = rows_times(p, n, "MRG_RandomStreams.choice");
  Var u = uniform(size, constant(0.0, udtype), constant(1.0, udtype), udtype, n_streams);
  return apply_op1(std::make_shared<ChoiceFromUniform>(dtype, replace), {std::move(p), u, std::move(n)});
}

}  // namespace hypatia
