// Elemwise: the op class, numpy dtype rules, run-time broadcasting, gradients and builders.
#include "hypatia/ops/elemwise.h"

#include <cmath>
#include <limits>
#include <sstream>

#include "hypatia/core/config.h"
#include "hypatia/core/error.h"
#include "hypatia/ops/reduce.h"
#include "hypatia/ops/shape.h"

namespace hypatia {
namespace {

using K = ScalarOpKind;

using Rule = ScalarDTypeRule;

Rule rule_of(K k) { return scalar_op_info(k).rule; }
bool is_comparison(K k) { return rule_of(k) == Rule::Compare; }
bool is_bitwise(K k) { return rule_of(k) == Rule::Bitwise; }

/// How a scalar op's Grad column (scalar_ops.def) defines its gradient.
enum class GradKind : uint8_t { Expr, Zero, None, Undef };
#define GRAD(...) GradKind::Expr
#define GRAD_ZERO GradKind::Zero
#define GRAD_NONE GradKind::None
#define GRAD_UNDEF(what) GradKind::Undef
constexpr GradKind kGradKinds[] = {
#define HYP_SCALAR_OP(Kind, Name, Arity, Rule, Cost, Simd, Build, Cpp, Core, Py, Doc, Fn, Grad) Grad,
#include "hypatia/ops/scalar_ops.def"
};
#undef GRAD_UNDEF
#define GRAD_UNDEF(what) what
#undef GRAD
#define GRAD(...) ""
#undef GRAD_ZERO
#define GRAD_ZERO ""
#undef GRAD_NONE
#define GRAD_NONE ""
/// For GRAD_UNDEF rows: what the gradient needs ("trigamma needs polygamma of order 2").
constexpr std::string_view kGradUndefined[] = {
#define HYP_SCALAR_OP(Kind, Name, Arity, Rule, Cost, Simd, Build, Cpp, Core, Py, Doc, Fn, Grad) Grad,
#include "hypatia/ops/scalar_ops.def"
};
#undef GRAD_NONE
#undef GRAD_ZERO
#undef GRAD
#undef GRAD_UNDEF

GradKind grad_kind(K k) { return kGradKinds[static_cast<size_t>(k)]; }
/// Ops whose gradient is zero almost everywhere (piecewise constant).
bool is_piecewise_constant(K k) { return grad_kind(k) == GradKind::Zero; }

std::string dtype_list(const std::vector<DType>& in) {
  std::ostringstream os;
  for (size_t i = 0; i < in.size(); ++i) os << (i ? ", " : "") << dtype_name(in[i]);
  return os.str();
}

DType output_dtype_impl(K k, const std::vector<DType>& in, DType cast_to, const std::string& who) {
  const int arity = scalar_op_arity(k);
  if (static_cast<int>(in.size()) != arity) fail<TypeError>(who, ": expects ", arity, " inputs, got ", in.size());
  const Rule rule = rule_of(k);
  if (rule == Rule::Cast) return cast_to;
  if (rule == Rule::Predicate || rule == Rule::Compare) return DType::Bool;
  const size_t first = rule == Rule::Select ? 1 : 0;
  DType p = in[first];
  for (size_t i = first + 1; i < in.size(); ++i) p = promote_types(p, in[i]);
  switch (rule) {
    case Rule::Float:
      return float_upcast(p);
    case Rule::Bitwise:
      if (is_float(p))
        fail<TypeError>(who, ": expects integer or bool inputs, got (", dtype_list(in),
                        "); bitwise operations are not defined on floats");
      return p;
    case Rule::NoBool:
      if (p == DType::Bool)
        fail<TypeError>(who, ": not supported on bool inputs (", dtype_list(in),
                        "); use xor_/invert for booleans, or cast to an integer type first");
      return p;
    case Rule::BoolToInt8:
      return p == DType::Bool ? DType::Int8 : p;  // numpy: bool // bool, bool ** bool -> int8
    default:
      return p;
  }
}

std::string base_name(K k, DType cast_to) {
  if (k == K::Cast) return "Elemwise{Cast{" + std::string(dtype_name(cast_to)) + "}}";
  return "Elemwise{" + std::string(scalar_op_name(k)) + "}";
}

std::string shapes_list(std::span<NDArray* const> in) {
  std::ostringstream os;
  for (size_t i = 0; i < in.size(); ++i) os << (i ? ", " : "") << in[i]->shape().str();
  return os.str();
}

/// Where the input's type broadcasts and the output's does not: the axes to sum a gradient over.
std::vector<int> broadcast_axes(const TensorType& in, const TensorType& out) {
  std::vector<int> axes;
  for (int d = 0; d < in.ndim(); ++d)
    if (in.broadcastable[d] && !out.broadcastable[d]) axes.push_back(d);
  return axes;
}

/// Brings a gradient term of the output's shape back to input `x`'s type (sum over broadcast
/// axes, cast to x's dtype).
Var reduce_to(Var g, const Var& x, const TensorType& out) {
  std::vector<int> axes = broadcast_axes(x->type, out);
  if (!axes.empty()) g = sum(g, axes, true);
  if (g->dtype() != x->dtype()) g = cast(g, x->dtype());
  return g;
}

Var c(double v, const Var& like) { return scalar_like(v, like); }

/// g * d out / d input i (elementwise, not reduced), or null where input i is disconnected.
/// `z` is the node's output.
Var partial_times(const Elemwise& op, const std::vector<Var>& x, const Var& z, const Var& g, int i) {
  const Var& a = x[0];
  (void)a;
  (void)z;
  switch (op.scalar) {
#define GRAD(...) return __VA_ARGS__;
#define GRAD_ZERO return nullptr;
#define GRAD_NONE return nullptr;
#define GRAD_UNDEF(what) return nullptr;
#define HYP_SCALAR_OP(Kind, Name, Arity, Rule, Cost, Simd, Build, Cpp, Core, Py, Doc, Fn, Grad) \
  case K::Kind: {                                                                               \
    Grad                                                                                        \
  }
#include "hypatia/ops/scalar_ops.def"
#undef GRAD_UNDEF
#undef GRAD_NONE
#undef GRAD_ZERO
#undef GRAD
  }
  return nullptr;
}

}  // namespace

std::string_view scalar_op_name(ScalarOpKind k) { return scalar_op_info(k).name; }
int scalar_op_arity(ScalarOpKind k) { return scalar_op_info(k).arity; }
int scalar_op_cost(ScalarOpKind k) { return scalar_op_info(k).cost; }

DType elemwise_output_dtype(ScalarOpKind k, const std::vector<DType>& in, DType cast_to) {
  return output_dtype_impl(k, in, cast_to, base_name(k, cast_to));
}

DType elemwise_compute_dtype(ScalarOpKind k, const std::vector<DType>& in, DType out) {
  if (is_comparison(k)) return promote_types(in[0], in[1]);
  if (rule_of(k) == Rule::Predicate || rule_of(k) == Rule::Cast) return in[0];
  return out;
}

std::string Elemwise::name() const {
  if (scalar == K::Cast) return inplace >= 0 ? base_name(scalar, cast_to) + "[inplace]" : base_name(scalar, cast_to);
  return "Elemwise{" + std::string(scalar_op_name(scalar)) + (inplace >= 0 ? ",inplace}" : ",no_inplace}");
}

std::vector<TensorType> Elemwise::make_output_types(const std::vector<Var>& inputs) const {
  const int arity = scalar_op_arity(scalar);
  if (static_cast<int>(inputs.size()) != arity)
    fail<TypeError>(name(), ": expects ", arity, " inputs, got ", inputs.size());
  const int nd = inputs[0]->ndim();
  for (const Var& v : inputs) {
    if (v->ndim() != nd) {
      std::ostringstream os;
      for (size_t i = 0; i < inputs.size(); ++i) os << (i ? ", " : "") << inputs[i]->type.str();
      fail<TypeError>(name(), ": all inputs must have the same ndim, got (", os.str(),
                      "); the builder functions (add, mul, elemwise...) pad lower-ndim inputs with DimShuffle");
    }
  }
  std::vector<DType> dts;
  for (const Var& v : inputs) dts.push_back(v->dtype());
  TensorType out;
  out.dtype = output_dtype_impl(scalar, dts, cast_to, name());
  out.broadcastable.assign(nd, true);
  for (const Var& v : inputs)
    for (int d = 0; d < nd; ++d) out.broadcastable[d] = out.broadcastable[d] && v->type.broadcastable[d];
  if (inplace >= 0) {
    if (inplace >= arity) fail<TypeError>(name(), ": inplace input ", inplace, " out of range for ", arity, " inputs");
    if (!(inputs[inplace]->type == out))
      fail<TypeError>(name(), ": the overwritten input ", inplace, " has type ", inputs[inplace]->type.str(),
                      " but the output has type ", out.str(), "; in-place needs the same dtype and broadcastable");
  }
  return {out};
}

std::vector<ShapeVars> Elemwise::infer_shape(const Apply& node, const std::vector<ShapeVars>& in) const {
  return {broadcast_infer_shape(node, in)};
}

ShapeVars broadcast_infer_shape(const Apply& node, const std::vector<ShapeVars>& in) {
  const TensorType& out = node.output_ptr(0)->type;
  ShapeVars s;
  for (int d = 0; d < out.ndim(); ++d) {
    if (out.broadcastable[d]) {
      s.push_back(int_constant(1));
      continue;
    }
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      if (!node.inputs[i]->type.broadcastable[d]) {
        s.push_back(in[i][d]);
        break;
      }
    }
  }
  return s;
}

std::vector<std::vector<bool>> Elemwise::connection_pattern(const Apply& node) const {
  std::vector<std::vector<bool>> cp;
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    bool connected =
        is_float(node.inputs[i]->dtype()) && !is_bitwise(scalar) && !(rule_of(scalar) == Rule::Select && i == 0);
    cp.push_back({connected});
  }
  return cp;
}

std::vector<Var> Elemwise::grad(const Apply& node, const std::vector<Var>& output_grads) const {
  const std::vector<Var>& x = node.inputs;
  std::vector<Var> res(x.size());
  const Var& g = output_grads.empty() ? nullptr : output_grads[0];
  if (!g) return res;
  auto cp = connection_pattern(node);
  const TensorType& out_t = node.output_ptr(0)->type;
  const bool float_out = is_float(out_t.dtype);
  Var z = const_cast<Apply&>(node).output(0);
  for (size_t i = 0; i < x.size(); ++i) {
    if (!cp[i][0]) continue;
    if (!float_out || is_piecewise_constant(scalar)) {
      res[i] = zeros_like(x[i]);
      continue;
    }
    if (grad_kind(scalar) == GradKind::Undef) {
      res[i] = grad_undefined(
          *this, static_cast<int>(i), x[i]->type,
          "the gradient of " + std::string(kGradUndefined[static_cast<size_t>(scalar)]) + ", which is not implemented");
      continue;
    }
    Var gi = partial_times(*this, x, z, g, static_cast<int>(i));
    res[i] = gi ? reduce_to(gi, x[i], out_t) : nullptr;
  }
  return res;
}

std::vector<Var> Elemwise::rop(const Apply& node, const std::vector<Var>& eval_points) const {
  const std::vector<Var>& x = node.inputs;
  const TensorType& out_t = node.output_ptr(0)->type;
  if (!is_float(out_t.dtype) || is_piecewise_constant(scalar)) return {nullptr};
  Var z = const_cast<Apply&>(node).output(0);
  auto cp = connection_pattern(node);
  Var total;
  for (size_t i = 0; i < x.size() && i < eval_points.size(); ++i) {
    if (!eval_points[i] || !cp[i][0]) continue;
    if (grad_kind(scalar) == GradKind::Undef)
      fail<NotDifferentiableError>(name(), ": the R-op of ", kGradUndefined[static_cast<size_t>(scalar)],
                                   ", which is not implemented");
    Var t = partial_times(*this, x, z, eval_points[i], static_cast<int>(i));
    if (!t) continue;
    total = total ? add(total, t) : t;
  }
  if (!total) return {nullptr};
  if (total->type.broadcastable != out_t.broadcastable) total = add(total, zeros_like(z));
  if (total->dtype() != out_t.dtype) total = cast(total, out_t.dtype);
  return {total};
}

void check_elemwise_inputs(const Op& op, const Apply& node, std::span<NDArray* const> in, int inplace) {
  const Shape shape = elemwise_broadcast_shape(op, in, BroadcastPattern(node));
  if (inplace >= 0 && !(in[inplace]->shape() == shape))
    fail<ValueError>(op.name(), ": the overwritten input ", inplace, " is ", in[inplace]->describe(),
                     " but the output has shape ", shape.str());
}

void Elemwise::check_runtime_inputs(const Apply& node, std::span<NDArray* const> in) const {
  check_elemwise_inputs(*this, node, in, inplace);
}

AliasMap Elemwise::destroy_map() const {
  if (inplace < 0) return {};
  return {{inplace}};
}

BroadcastPattern::BroadcastPattern(const Apply& node) {
  inputs.reserve(node.inputs.size());
  for (const Var& v : node.inputs) {
    Input in{0, v->type.ndim()};
    for (int d = 0; d < in.ndim; ++d)
      if (v->type.broadcastable[d]) in.mask |= uint32_t{1} << d;
    inputs.push_back(in);
  }
}

Shape elemwise_broadcast_shape(const Op& op, std::span<NDArray* const> in, const BroadcastPattern& broadcastable) {
  static_assert(kMaxNdim <= 32, "one bit per dim in BroadcastPattern::Input::mask");
  const int nd = in[0]->ndim();
  for (size_t i = 0; i < in.size(); ++i)
    if (in[i]->ndim() != nd || broadcastable.inputs[i].ndim != nd)
      fail<ValueError>(op.name(), ": input ", i, " has ", in[i]->ndim(), " dims but the node expects ",
                       broadcastable.inputs[i].ndim, " (input shapes: ", shapes_list(in), ")");
  Shape out;
  out.resize(nd, 1);
  for (int d = 0; d < nd; ++d) {
    int owner = -1;
    for (size_t i = 0; i < in.size(); ++i) {
      const int64_t len = in[i]->shape(d);
      if ((broadcastable.inputs[i].mask >> d) & 1) {
        if (len != 1)
          fail<ValueError>(op.name(), ": input ", i, " has length ", len, " on axis ", d,
                           " which its type declares broadcastable (length 1) (input shapes: ", shapes_list(in), ")");
        continue;
      }
      if (owner < 0) {
        owner = static_cast<int>(i);
        out[d] = len;
        continue;
      }
      if (len == out[d]) continue;
      const bool one_is_1 = len == 1 || out[d] == 1;
      if (one_is_1) {
        const int culprit = len == 1 ? static_cast<int>(i) : owner;
        const int other = len == 1 ? owner : static_cast<int>(i);
        fail<ValueError>(op.name(), ": input ", culprit, " has length 1 on axis ", d, " where input ", other,
                         " has length ", (len == 1 ? out[d] : len), ", but its type does not declare axis ", d,
                         " broadcastable, so it is not broadcast at run time (input shapes: ", shapes_list(in),
                         "). Declare that axis broadcastable (a row/col type, shared(..., broadcastable=...)) or "
                         "make it so with dimshuffle.");
      }
      fail<ValueError>(op.name(), ": shape mismatch on axis ", d, ": input ", owner, " has length ", out[d], ", input ",
                       i, " has length ", len, " (input shapes: ", shapes_list(in), ")");
    }
  }
  return out;
}

Var elemwise(ScalarOpKind k, std::vector<Var> inputs) {
  const int arity = scalar_op_arity(k);
  if (static_cast<int>(inputs.size()) != arity)
    fail<TypeError>(base_name(k, DType::Float64), ": expects ", arity, " inputs, got ", inputs.size());
  int nd = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i]) fail<TypeError>(base_name(k, DType::Float64), ": input ", i, " is null");
    nd = std::max(nd, inputs[i]->ndim());
  }
  for (Var& v : inputs) {
    if (v->ndim() == nd) continue;
    std::vector<int> pattern(nd - v->ndim(), -1);
    for (int d = 0; d < v->ndim(); ++d) pattern.push_back(d);
    v = dimshuffle(v, pattern);
  }
  return apply_op1(std::make_shared<const Elemwise>(k), std::move(inputs));
}

#define HYP_BUILDER_DEF_1(Kind, Cpp) \
  Var Cpp(Var x) { return elemwise(K::Kind, {std::move(x)}); }
#define HYP_BUILDER_DEF_2(Kind, Cpp) \
  Var Cpp(Var a, Var b) { return elemwise(K::Kind, {std::move(a), std::move(b)}); }
#define HYP_BUILDER_DEF_Gen(Arity, Kind, Cpp) HYP_BUILDER_DEF_##Arity(Kind, Cpp)
#define HYP_BUILDER_DEF_Decl(Arity, Kind, Cpp)
#define HYP_BUILDER_DEF_Hand(Arity, Kind, Cpp)
#define HYP_SCALAR_OP(Kind, Name, Arity, Rule, Cost, Simd, Build, Cpp, ...) HYP_BUILDER_DEF_##Build(Arity, Kind, Cpp)
#include "hypatia/ops/scalar_ops.def"
#undef HYP_BUILDER_DEF_Hand
#undef HYP_BUILDER_DEF_Decl
#undef HYP_BUILDER_DEF_Gen
#undef HYP_BUILDER_DEF_2
#undef HYP_BUILDER_DEF_1

Var log(Var x) {
  // log(erfc(y)) is built in its stable form, so that its gradient is stable too.
  if (x->owner && typeid(*x->owner->op) == typeid(Elemwise) && is_float(x->dtype())) {
    const auto& e = static_cast<const Elemwise&>(*x->owner->op);
    if (e.scalar == K::Erfc && e.inplace < 0) return stable_log_erfc(x->owner->inputs[0]);
  }
  return elemwise(K::Log, {std::move(x)});
}

Var stable_log_erfc(Var y) {
  // erfc underflows for large y (float32 near 9, float64 near 27); past a threshold use the
  // asymptotic series -y^2 - log(y) - log(pi)/2 + log(1 - 1/(2y^2) + ...). Each branch reads y
  // clamped to its side of the threshold, so both (and their gradients) are finite everywhere.
  const DType dt = y->dtype();
  auto c = [&](double v) { return constant(NDArray::scalar(v, dt)); };
  Var thr = c(dt == DType::Float32 ? 5.0 : 26.0);
  Var hi = maximum(y, thr);
  Var t = reciprocal(sqr(hi));
  Var series = c(1) + t * (c(-0.5) + t * (c(0.75) + t * (c(-1.875) + t * c(6.5625))));
  Var asym = neg(sqr(hi)) - elemwise(K::Log, {hi}) - c(0.5 * std::log(M_PI)) + elemwise(K::Log, {series});
  Var low = elemwise(K::Log, {erfc(minimum(y, thr))});
  return switch_(lt(y, thr), low, asym);
}
Var cast(Var x, DType dt) {
  if (!x) fail<TypeError>("Elemwise{Cast{", dtype_name(dt), "}}: input is null");
  if (x->dtype() == dt) return x;
  return apply_op1(std::make_shared<const Elemwise>(K::Cast, dt), {std::move(x)});
}
Var clip(Var x, Var lo, Var hi) { return elemwise(K::Clip, {std::move(x), std::move(lo), std::move(hi)}); }
Var switch_(Var cond, Var a, Var b) { return elemwise(K::Switch, {std::move(cond), std::move(a), std::move(b)}); }

Var scalar_like(double v, const Var& like) {
  if (!like) fail<TypeError>("scalar_like: `like` is null");
  const DType dt = like->dtype();
  if (is_float(dt)) return constant(v, dt);
  const bool integral = std::isfinite(v) && v == std::floor(v);
  if (!integral) return constant(v, config().floatX);
  if (is_integer(dt)) {
    double lo = 0, hi = 0;
    dispatch_dtype(dt, [&](auto t) {
      using T = decltype(t);
      lo = static_cast<double>(std::numeric_limits<T>::min());
      hi = static_cast<double>(std::numeric_limits<T>::max());
    });
    if (v >= lo && v <= hi) return constant(v, dt);
  }
  return constant(v, DType::Int64);
}

Var operator+(const Var& a, const Var& b) { return add(a, b); }
Var operator-(const Var& a, const Var& b) { return sub(a, b); }
Var operator*(const Var& a, const Var& b) { return mul(a, b); }
Var operator/(const Var& a, const Var& b) { return true_div(a, b); }
Var operator%(const Var& a, const Var& b) { return mod(a, b); }
Var operator-(const Var& a) { return neg(a); }
Var operator+(const Var& a, double b) { return add(a, scalar_like(b, a)); }
Var operator-(const Var& a, double b) { return sub(a, scalar_like(b, a)); }
Var operator*(const Var& a, double b) { return mul(a, scalar_like(b, a)); }
Var operator/(const Var& a, double b) { return true_div(a, scalar_like(b, a)); }
Var operator+(double a, const Var& b) { return add(scalar_like(a, b), b); }
Var operator-(double a, const Var& b) { return sub(scalar_like(a, b), b); }
Var operator*(double a, const Var& b) { return mul(scalar_like(a, b), b); }
Var operator/(double a, const Var& b) { return true_div(scalar_like(a, b), b); }

}  // namespace hypatia
