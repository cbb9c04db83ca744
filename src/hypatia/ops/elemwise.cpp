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

struct KindInfo {
  std::string_view name;
  int arity;
};

KindInfo kind_info(K k) {
  switch (k) {
    case K::Add:
      return {"add", 2};
    case K::Sub:
      return {"sub", 2};
    case K::Mul:
      return {"mul", 2};
    case K::TrueDiv:
      return {"true_div", 2};
    case K::IntDiv:
      return {"int_div", 2};
    case K::Mod:
      return {"mod", 2};
    case K::Pow:
      return {"pow", 2};
    case K::Maximum:
      return {"maximum", 2};
    case K::Minimum:
      return {"minimum", 2};
    case K::ArcTan2:
      return {"arctan2", 2};
    case K::Eq:
      return {"eq", 2};
    case K::Neq:
      return {"neq", 2};
    case K::Lt:
      return {"lt", 2};
    case K::Le:
      return {"le", 2};
    case K::Gt:
      return {"gt", 2};
    case K::Ge:
      return {"ge", 2};
    case K::And:
      return {"and_", 2};
    case K::Or:
      return {"or_", 2};
    case K::Xor:
      return {"xor", 2};
    case K::Neg:
      return {"neg", 1};
    case K::Abs:
      return {"abs", 1};
    case K::Sign:
      return {"sign", 1};
    case K::Reciprocal:
      return {"reciprocal", 1};
    case K::Sqr:
      return {"sqr", 1};
    case K::Sqrt:
      return {"sqrt", 1};
    case K::Exp:
      return {"exp", 1};
    case K::Exp2:
      return {"exp2", 1};
    case K::Expm1:
      return {"expm1", 1};
    case K::Log:
      return {"log", 1};
    case K::Log2:
      return {"log2", 1};
    case K::Log10:
      return {"log10", 1};
    case K::Log1p:
      return {"log1p", 1};
    case K::Sin:
      return {"sin", 1};
    case K::Cos:
      return {"cos", 1};
    case K::Tan:
      return {"tan", 1};
    case K::ArcSin:
      return {"arcsin", 1};
    case K::ArcCos:
      return {"arccos", 1};
    case K::ArcTan:
      return {"arctan", 1};
    case K::Sinh:
      return {"sinh", 1};
    case K::Cosh:
      return {"cosh", 1};
    case K::Tanh:
      return {"tanh", 1};
    case K::ArcSinh:
      return {"arcsinh", 1};
    case K::ArcCosh:
      return {"arccosh", 1};
    case K::ArcTanh:
      return {"arctanh", 1};
    case K::Sigmoid:
      return {"sigmoid", 1};
    case K::Softplus:
      return {"softplus", 1};
    case K::Erf:
      return {"erf", 1};
    case K::Erfc:
      return {"erfc", 1};
    case K::Erfinv:
      return {"erfinv", 1};
    case K::Gamma:
      return {"gamma", 1};
    case K::GammaLn:
      return {"gammaln", 1};
    case K::Psi:
      return {"psi", 1};
    case K::TriGamma:
      return {"tri_gamma", 1};
    case K::Floor:
      return {"floor", 1};
    case K::Ceil:
      return {"ceil", 1};
    case K::Round:
      return {"round", 1};
    case K::Trunc:
      return {"trunc", 1};
    case K::Invert:
      return {"invert", 1};
    case K::IsNan:
      return {"isnan", 1};
    case K::IsInf:
      return {"isinf", 1};
    case K::Cast:
      return {"cast", 1};
    case K::Identity:
      return {"identity", 1};
    case K::Clip:
      return {"clip", 3};
    case K::Switch:
      return {"switch", 3};
  }
  return {"?", 1};
}

bool is_comparison(K k) { return k >= K::Eq && k <= K::Ge; }
bool is_bitwise(K k) { return k == K::And || k == K::Or || k == K::Xor || k == K::Invert; }
/// Ops whose output is float for any input (integers are upcast with float_upcast).
bool is_float_op(K k) {
  switch (k) {
    case K::TrueDiv:
    case K::ArcTan2:
    case K::Reciprocal:
    case K::Sqrt:
    case K::Exp:
    case K::Exp2:
    case K::Expm1:
    case K::Log:
    case K::Log2:
    case K::Log10:
    case K::Log1p:
    case K::Sin:
    case K::Cos:
    case K::Tan:
    case K::ArcSin:
    case K::ArcCos:
    case K::ArcTan:
    case K::Sinh:
    case K::Cosh:
    case K::Tanh:
    case K::ArcSinh:
    case K::ArcCosh:
    case K::ArcTanh:
    case K::Sigmoid:
    case K::Softplus:
    case K::Erf:
    case K::Erfc:
    case K::Erfinv:
    case K::Gamma:
    case K::GammaLn:
    case K::Psi:
    case K::TriGamma:
    case K::Floor:
    case K::Ceil:
    case K::Trunc:
      return true;
    default:
      return false;
  }
}
/// Ops whose gradient is zero almost everywhere (piecewise constant).
bool is_piecewise_constant(K k) {
  return is_comparison(k) || k == K::IntDiv || k == K::Sign || k == K::Floor || k == K::Ceil || k == K::Round ||
         k == K::Trunc || k == K::IsNan || k == K::IsInf;
}

std::string dtype_list(const std::vector<DType>& in) {
  std::ostringstream os;
  for (size_t i = 0; i < in.size(); ++i) os << (i ? ", " : "") << dtype_name(in[i]);
  return os.str();
}

DType output_dtype_impl(K k, const std::vector<DType>& in, DType cast_to, const std::string& who) {
  if (static_cast<int>(in.size()) != kind_info(k).arity)
    fail<TypeError>(who, ": expects ", kind_info(k).arity, " inputs, got ", in.size());
  if (k == K::Cast) return cast_to;
  if (k == K::IsNan || k == K::IsInf || is_comparison(k)) return DType::Bool;
  const size_t first = k == K::Switch ? 1 : 0;
  DType p = in[first];
  for (size_t i = first + 1; i < in.size(); ++i) p = promote_types(p, in[i]);
  if (is_float_op(k)) return float_upcast(p);
  if (is_bitwise(k)) {
    if (is_float(p))
      fail<TypeError>(who, ": expects integer or bool inputs, got (", dtype_list(in),
                      "); bitwise operations are not defined on floats");
    return p;
  }
  switch (k) {
    case K::Sub:
    case K::Neg:
    case K::Sign:
    case K::Round:
      if (p == DType::Bool)
        fail<TypeError>(who, ": not supported on bool inputs (", dtype_list(in),
                        "); use xor_/invert for booleans, or cast to an integer type first");
      return p;
    case K::IntDiv:
    case K::Mod:
    case K::Pow:
    case K::Sqr:
      return p == DType::Bool ? DType::Int8 : p;  // numpy: bool // bool, bool ** bool -> int8
    default:
      return p;
  }
}

std::string base_name(K k, DType cast_to) {
  if (k == K::Cast) return "Elemwise{Cast{" + std::string(dtype_name(cast_to)) + "}}";
  return "Elemwise{" + std::string(kind_info(k).name) + "}";
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
  switch (op.scalar) {
    case K::Add:
      return g;
    case K::Sub:
      return i == 0 ? g : neg(g);
    case K::Mul:
      return i == 0 ? mul(g, x[1]) : mul(g, x[0]);
    case K::TrueDiv:
      return i == 0 ? true_div(g, x[1]) : neg(true_div(mul(g, x[0]), mul(x[1], x[1])));
    case K::Mod:
      return i == 0 ? g : neg(mul(g, int_div(x[0], x[1])));
    case K::Pow: {
      if (i == 0) return mul(mul(g, x[1]), pow(x[0], sub(x[1], c(1, x[1]))));
      // d/db a^b = log(a) a^b; 0 where a == 0 (the limit for b > 0) instead of 0 * -inf.
      return switch_(eq(x[0], c(0, x[0])), c(0, z), mul(mul(g, log(x[0])), z));
    }
    case K::Maximum:
    case K::Minimum:
      return mul(g, eq(z, x[i]));
    case K::ArcTan2: {
      Var den = add(sqr(x[0]), sqr(x[1]));
      return i == 0 ? true_div(mul(g, x[1]), den) : neg(true_div(mul(g, x[0]), den));
    }
    case K::Neg:
      return neg(g);
    case K::Abs:
      return mul(g, sign(a));
    case K::Reciprocal:
      return neg(mul(g, sqr(z)));
    case K::Sqr:
      return mul(mul(g, c(2, g)), a);
    case K::Sqrt:
      return true_div(mul(g, c(0.5, g)), z);
    case K::Exp:
      return mul(g, z);
    case K::Exp2:
      return mul(mul(g, z), c(std::log(2.0), z));
    case K::Expm1:
      return mul(g, add(z, c(1, z)));
    case K::Log:
      return true_div(g, a);
    case K::Log2:
      return true_div(g, mul(a, c(std::log(2.0), a)));
    case K::Log10:
      return true_div(g, mul(a, c(std::log(10.0), a)));
    case K::Log1p:
      return true_div(g, add(a, c(1, a)));
    case K::Sin:
      return mul(g, cos(a));
    case K::Cos:
      return neg(mul(g, sin(a)));
    case K::Tan:
      return mul(g, add(c(1, z), sqr(z)));
    case K::ArcSin:
      return true_div(g, sqrt(sub(c(1, a), sqr(a))));
    case K::ArcCos:
      return neg(true_div(g, sqrt(sub(c(1, a), sqr(a)))));
    case K::ArcTan:
      return true_div(g, add(c(1, a), sqr(a)));
    case K::Sinh:
      return mul(g, cosh(a));
    case K::Cosh:
      return mul(g, sinh(a));
    case K::Tanh:
      return mul(g, sub(c(1, z), sqr(z)));
    case K::ArcSinh:
      return true_div(g, sqrt(add(sqr(a), c(1, a))));
    case K::ArcCosh:
      return true_div(g, sqrt(sub(sqr(a), c(1, a))));
    case K::ArcTanh:
      return true_div(g, sub(c(1, a), sqr(a)));
    case K::Sigmoid:
      return mul(mul(g, z), sub(c(1, z), z));
    case K::Softplus:
      return mul(g, sigmoid(a));
    case K::Erf:
      return mul(mul(g, c(2.0 / std::sqrt(M_PI), g)), exp(neg(sqr(a))));
    case K::Erfc:
      return neg(mul(mul(g, c(2.0 / std::sqrt(M_PI), g)), exp(neg(sqr(a)))));
    case K::Erfinv:
      return mul(mul(g, c(std::sqrt(M_PI) / 2.0, g)), exp(sqr(z)));
    case K::Gamma:
      return mul(mul(g, z), psi(a));
    case K::Psi:
      return mul(g, trigamma(a));
    case K::GammaLn:
      return mul(g, psi(a));
    case K::Identity:
      return g;
    case K::Cast:
      return g;
    case K::Clip: {
      if (i == 0) return mul(g, and_(ge(x[0], x[1]), le(x[0], x[2])));
      if (i == 1) return mul(g, lt(x[0], x[1]));
      return mul(g, gt(x[0], x[2]));
    }
    case K::Switch:
      if (i == 0) return nullptr;
      return i == 1 ? switch_(x[0], g, c(0, g)) : switch_(x[0], c(0, g), g);
    default:
      return nullptr;
  }
}

}  // namespace

std::string_view scalar_op_name(ScalarOpKind k) { return kind_info(k).name; }
int scalar_op_arity(ScalarOpKind k) { return kind_info(k).arity; }

int scalar_op_cost(ScalarOpKind k) {
  switch (k) {
    case K::TrueDiv:
    case K::IntDiv:
    case K::Mod:
    case K::Reciprocal:
    case K::Sqrt:
      return 4;
    case K::Floor:
    case K::Ceil:
    case K::Trunc:
      return 1;
    case K::Pow:
      return 8;
    default:
      // The other float-valued functions are the transcendental ones (exp ... trigamma).
      return is_float_op(k) ? 8 : 1;
  }
}

DType elemwise_output_dtype(ScalarOpKind k, const std::vector<DType>& in, DType cast_to) {
  return output_dtype_impl(k, in, cast_to, base_name(k, cast_to));
}

DType elemwise_compute_dtype(ScalarOpKind k, const std::vector<DType>& in, DType out) {
  if (is_comparison(k)) return promote_types(in[0], in[1]);
  if (k == K::IsNan || k == K::IsInf || k == K::Cast) return in[0];
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
    bool connected = is_float(node.inputs[i]->dtype()) && !is_bitwise(scalar) && !(scalar == K::Switch && i == 0);
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
    if (scalar == K::TriGamma) {
      res[i] = grad_undefined(*this, static_cast<int>(i), x[i]->type,
                              "the gradient of trigamma needs polygamma of order 2, which is not implemented");
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
    if (scalar == K::TriGamma)
      fail<NotDifferentiableError>(name(),
                                   ": the R-op of trigamma needs polygamma of order 2, which is not implemented");
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
  std::vector<std::vector<bool>> bc;
  for (const auto& v : node.inputs) bc.push_back(v->type.broadcastable);
  const Shape shape = elemwise_broadcast_shape(op, in, bc);
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

Shape elemwise_broadcast_shape(const Op& op, std::span<NDArray* const> in,
                               const std::vector<std::vector<bool>>& broadcastable) {
  const int nd = in[0]->ndim();
  for (size_t i = 0; i < in.size(); ++i)
    if (in[i]->ndim() != nd || static_cast<int>(broadcastable[i].size()) != nd)
      fail<ValueError>(op.name(), ": input ", i, " has ", in[i]->ndim(), " dims but the node expects ",
                       broadcastable[i].size(), " (input shapes: ", shapes_list(in), ")");
  Shape out;
  out.resize(nd, 1);
  for (int d = 0; d < nd; ++d) {
    int owner = -1;
    for (size_t i = 0; i < in.size(); ++i) {
      const int64_t len = in[i]->shape(d);
      if (broadcastable[i][d]) {
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

Var add(Var a, Var b) { return elemwise(K::Add, {std::move(a), std::move(b)}); }
Var sub(Var a, Var b) { return elemwise(K::Sub, {std::move(a), std::move(b)}); }
Var mul(Var a, Var b) { return elemwise(K::Mul, {std::move(a), std::move(b)}); }
Var true_div(Var a, Var b) { return elemwise(K::TrueDiv, {std::move(a), std::move(b)}); }
Var int_div(Var a, Var b) { return elemwise(K::IntDiv, {std::move(a), std::move(b)}); }
Var mod(Var a, Var b) { return elemwise(K::Mod, {std::move(a), std::move(b)}); }
Var pow(Var a, Var b) { return elemwise(K::Pow, {std::move(a), std::move(b)}); }
Var maximum(Var a, Var b) { return elemwise(K::Maximum, {std::move(a), std::move(b)}); }
Var minimum(Var a, Var b) { return elemwise(K::Minimum, {std::move(a), std::move(b)}); }
Var arctan2(Var a, Var b) { return elemwise(K::ArcTan2, {std::move(a), std::move(b)}); }
Var eq(Var a, Var b) { return elemwise(K::Eq, {std::move(a), std::move(b)}); }
Var neq(Var a, Var b) { return elemwise(K::Neq, {std::move(a), std::move(b)}); }
Var lt(Var a, Var b) { return elemwise(K::Lt, {std::move(a), std::move(b)}); }
Var le(Var a, Var b) { return elemwise(K::Le, {std::move(a), std::move(b)}); }
Var gt(Var a, Var b) { return elemwise(K::Gt, {std::move(a), std::move(b)}); }
Var ge(Var a, Var b) { return elemwise(K::Ge, {std::move(a), std::move(b)}); }
Var and_(Var a, Var b) { return elemwise(K::And, {std::move(a), std::move(b)}); }
Var or_(Var a, Var b) { return elemwise(K::Or, {std::move(a), std::move(b)}); }
Var xor_(Var a, Var b) { return elemwise(K::Xor, {std::move(a), std::move(b)}); }
Var neg(Var x) { return elemwise(K::Neg, {std::move(x)}); }
Var abs(Var x) { return elemwise(K::Abs, {std::move(x)}); }
Var sign(Var x) { return elemwise(K::Sign, {std::move(x)}); }
Var reciprocal(Var x) { return elemwise(K::Reciprocal, {std::move(x)}); }
Var sqr(Var x) { return elemwise(K::Sqr, {std::move(x)}); }
Var sqrt(Var x) { return elemwise(K::Sqrt, {std::move(x)}); }
Var exp(Var x) { return elemwise(K::Exp, {std::move(x)}); }
Var exp2(Var x) { return elemwise(K::Exp2, {std::move(x)}); }
Var expm1(Var x) { return elemwise(K::Expm1, {std::move(x)}); }
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
Var log2(Var x) { return elemwise(K::Log2, {std::move(x)}); }
Var log10(Var x) { return elemwise(K::Log10, {std::move(x)}); }
Var log1p(Var x) { return elemwise(K::Log1p, {std::move(x)}); }
Var sin(Var x) { return elemwise(K::Sin, {std::move(x)}); }
Var cos(Var x) { return elemwise(K::Cos, {std::move(x)}); }
Var tan(Var x) { return elemwise(K::Tan, {std::move(x)}); }
Var arcsin(Var x) { return elemwise(K::ArcSin, {std::move(x)}); }
Var arccos(Var x) { return elemwise(K::ArcCos, {std::move(x)}); }
Var arctan(Var x) { return elemwise(K::ArcTan, {std::move(x)}); }
Var sinh(Var x) { return elemwise(K::Sinh, {std::move(x)}); }
Var cosh(Var x) { return elemwise(K::Cosh, {std::move(x)}); }
Var tanh(Var x) { return elemwise(K::Tanh, {std::move(x)}); }
Var arcsinh(Var x) { return elemwise(K::ArcSinh, {std::move(x)}); }
Var arccosh(Var x) { return elemwise(K::ArcCosh, {std::move(x)}); }
Var arctanh(Var x) { return elemwise(K::ArcTanh, {std::move(x)}); }
Var sigmoid(Var x) { return elemwise(K::Sigmoid, {std::move(x)}); }
Var softplus(Var x) { return elemwise(K::Softplus, {std::move(x)}); }
Var erf(Var x) { return elemwise(K::Erf, {std::move(x)}); }
Var erfc(Var x) { return elemwise(K::Erfc, {std::move(x)}); }
Var erfinv(Var x) { return elemwise(K::Erfinv, {std::move(x)}); }
Var gamma(Var x) { return elemwise(K::Gamma, {std::move(x)}); }
Var gammaln(Var x) { return elemwise(K::GammaLn, {std::move(x)}); }
Var psi(Var x) { return elemwise(K::Psi, {std::move(x)}); }
Var trigamma(Var x) { return elemwise(K::TriGamma, {std::move(x)}); }
Var floor(Var x) { return elemwise(K::Floor, {std::move(x)}); }
Var ceil(Var x) { return elemwise(K::Ceil, {std::move(x)}); }
Var round(Var x) { return elemwise(K::Round, {std::move(x)}); }
Var trunc(Var x) { return elemwise(K::Trunc, {std::move(x)}); }
Var invert(Var x) { return elemwise(K::Invert, {std::move(x)}); }
Var isnan(Var x) { return elemwise(K::IsNan, {std::move(x)}); }
Var isinf(Var x) { return elemwise(K::IsInf, {std::move(x)}); }
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
