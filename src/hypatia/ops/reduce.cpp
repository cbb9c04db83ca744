// Reductions (Reduce, ArgReduce, CumOp) and their builders.
#include "hypatia/ops/reduce.h"

#include <algorithm>
#include <sstream>

#include "hypatia/core/config.h"
#include "hypatia/ops/elemwise.h"
#include "hypatia/ops/shape.h"

namespace hypatia {
namespace {

/// The DimShuffle pattern that puts back the reduced `axes` of an ndim-d input as broadcastable dims.
std::vector<int> keepdims_pattern(const std::vector<int>& axes, int ndim) {
  std::vector<int> pattern;
  int kept = 0;
  for (int d = 0; d < ndim; ++d) {
    if (std::find(axes.begin(), axes.end(), d) != axes.end())
      pattern.push_back(-1);
    else
      pattern.push_back(kept++);
  }
  return pattern;
}

/// Number of elements a reduction over `axes` of x combines, as a 0-d int64.
Var reduced_count(const Var& x, const std::vector<int>& axes) {
  ShapeVars dims = shape_vars(x);
  Var n = int_constant(1);
  for (int a : axes) n = mul(n, dims[a]);
  return n;
}

/// Zero gradient for a discrete input (Theano's rule: floatX zeros).
Var discrete_zero_grad(const Var& x) { return zeros_like(x, config().floatX); }

std::string axes_str(const std::vector<int>& axes) {
  std::ostringstream os;
  os << "[";
  for (size_t i = 0; i < axes.size(); ++i) os << (i ? ", " : "") << axes[i];
  os << "]";
  return os.str();
}

}  // namespace

std::string_view reduce_kind_name(ReduceKind k) {
  switch (k) {
    case ReduceKind::Sum:
      return "Sum";
    case ReduceKind::Prod:
      return "Prod";
    case ReduceKind::Max:
      return "Max";
    case ReduceKind::Min:
      return "Min";
    case ReduceKind::All:
      return "All";
    case ReduceKind::Any:
      return "Any";
    case ReduceKind::ProdWithoutZeros:
      return "ProdWithoutZeros";
  }
  return "?";
}

DType reduce_default_dtype(ReduceKind k, DType in) {
  switch (k) {
    case ReduceKind::Max:
    case ReduceKind::Min:
      return in;
    case ReduceKind::All:
    case ReduceKind::Any:
      return DType::Bool;
    default:
      break;
  }
  if (is_bool(in) || is_signed_int(in)) return DType::Int64;
  if (is_unsigned_int(in)) return DType::UInt64;
  return in;
}

std::vector<int> normalize_axes(const Axes& axes, int ndim, const char* who) {
  std::vector<int> out;
  if (!axes) {
    for (int d = 0; d < ndim; ++d) out.push_back(d);
    return out;
  }
  for (int a : *axes) out.push_back(normalize_axis(a, ndim, who));
  std::sort(out.begin(), out.end());
  if (std::adjacent_find(out.begin(), out.end()) != out.end()) fail<ValueError>(who, ": duplicate value in 'axis'");
  return out;
}

// ---------------------------------------------------------------------------------------------
// Reduce

Reduce::Reduce(ReduceKind k, std::vector<int> ax, DType out_dtype) : kind(k), axes(std::move(ax)), dtype(out_dtype) {}

std::string Reduce::name() const {
  std::ostringstream os;
  os << reduce_kind_name(kind) << "{axis=" << axes_str(axes);
  bool sum_like = kind == ReduceKind::Sum || kind == ReduceKind::Prod || kind == ReduceKind::ProdWithoutZeros;
  if (sum_like) os << ", dtype=" << dtype_name(dtype);
  os << "}";
  return os.str();
}

std::vector<TensorType> Reduce::make_output_types(const std::vector<Var>& inputs) const {
  if (inputs.size() != 1) fail<TypeError>(name(), ": expected 1 input, got ", inputs.size());
  const TensorType& t = inputs[0]->type;
  for (size_t i = 0; i < axes.size(); ++i) {
    if (axes[i] < 0 || axes[i] >= t.ndim() || (i > 0 && axes[i] <= axes[i - 1]))
      fail<TypeError>(name(), ": expected sorted unique axes in [0, ", t.ndim(), ") for input ", t.str(), ", got axis ",
                      axes[i]);
  }
  bool sum_like = kind == ReduceKind::Sum || kind == ReduceKind::Prod || kind == ReduceKind::ProdWithoutZeros;
  if (!sum_like && dtype != reduce_default_dtype(kind, t.dtype))
    fail<TypeError>(name(), ": output dtype must be ", dtype_name(reduce_default_dtype(kind, t.dtype)), " for input ",
                    t.str(), ", got ", dtype_name(dtype));
  std::vector<bool> bc;
  for (int d = 0; d < t.ndim(); ++d)
    if (!std::binary_search(axes.begin(), axes.end(), d)) bc.push_back(t.broadcastable[d]);
  return {TensorType(dtype, bc)};
}

std::vector<ShapeVars> Reduce::infer_shape(const Apply& node, const std::vector<ShapeVars>& in) const {
  ShapeVars out;
  for (int d = 0; d < static_cast<int>(in[0].size()); ++d)
    if (!std::binary_search(axes.begin(), axes.end(), d)) out.push_back(in[0][d]);
  return {out};
}

std::vector<std::vector<bool>> Reduce::connection_pattern(const Apply& node) const {
  bool connected = kind != ReduceKind::All && kind != ReduceKind::Any;
  return {{connected}};
}

std::vector<Var> Reduce::grad(const Apply& node, const std::vector<Var>& output_grads) const {
  const Var& x = node.inputs[0];
  const Var& gz = output_grads[0];
  if (kind == ReduceKind::All || kind == ReduceKind::Any) return {nullptr};
  if (kind == ReduceKind::ProdWithoutZeros)
    return {grad_undefined(*this, 0, x->type, "ProdWithoutZeros is only used inside the gradient of Prod")};
  if (!is_float(x->dtype()) || !gz) return {discrete_zero_grad(x)};
  const int nd = x->ndim();
  std::vector<int> pattern = keepdims_pattern(axes, nd);
  Var g = dimshuffle(gz, pattern);
  if (g->dtype() != x->dtype()) g = cast(g, x->dtype());
  switch (kind) {
    case ReduceKind::Sum:
      return {alloc(g, shape_vars(x))};
    case ReduceKind::Max:
    case ReduceKind::Min: {
      // Theano's convention: every position equal to the extreme gets the whole gradient.
      Var z = dimshuffle(const_cast<Apply&>(node).output(0), pattern);
      return {mul(cast(eq(x, z), x->dtype()), g)};
    }
    case ReduceKind::Prod: {
      // gz * prod / x where a group has no zero; where it has exactly one zero, that position gets
      // gz * (product of the others) and the rest 0; with two or more zeros, everything is 0.
      Var prod_out = dimshuffle(const_cast<Apply&>(node).output(0), pattern);
      if (prod_out->dtype() != x->dtype()) prod_out = cast(prod_out, x->dtype());
      Var zero = scalar_like(0.0, x);
      Var where_zeros = eq(x, zero);
      Var n_zeros = sum(where_zeros, axes, true);
      Var no_zero_group = eq(n_zeros, int_constant(0));
      Var one_zero_group = eq(n_zeros, int_constant(1));
      Var prod_nz = apply_op1(std::make_shared<Reduce>(ReduceKind::ProdWithoutZeros, axes, x->dtype()), {x});
      prod_nz = dimshuffle(prod_nz, pattern);
      Var safe_x = switch_(where_zeros, scalar_like(1.0, x), x);
      Var without_zeros = true_div(mul(g, prod_out), safe_x);
      Var single_zero = mul(switch_(and_(one_zero_group, where_zeros), prod_nz, zero), g);
      return {switch_(no_zero_group, without_zeros, single_zero)};
    }
    default:
      break;
  }
  return {nullptr};
}

std::vector<Var> Reduce::rop(const Apply& node, const std::vector<Var>& eval_points) const {
  if (!eval_points[0]) return {nullptr};
  if (kind == ReduceKind::Sum) return {apply_op1(std::make_shared<Reduce>(kind, axes, dtype), {eval_points[0]})};
  fail<NotDifferentiableError>(name(), ": R_op is only implemented for Sum");
}

// ---------------------------------------------------------------------------------------------
// ArgReduce

std::string ArgReduce::name() const {
  std::ostringstream os;
  os << (is_max ? "Argmax" : "Argmin") << "{axis=";
  if (axis)
    os << *axis;
  else
    os << "None";
  os << "}";
  return os.str();
}

std::vector<TensorType> ArgReduce::make_output_types(const std::vector<Var>& inputs) const {
  if (inputs.size() != 1) fail<TypeError>(name(), ": expected 1 input, got ", inputs.size());
  const TensorType& t = inputs[0]->type;
  if (axis && (*axis < 0 || *axis >= t.ndim()))
    fail<TypeError>(name(), ": expected an axis in [0, ", t.ndim(), ") for input ", t.str(), ", got ", *axis);
  std::vector<bool> bc;
  if (axis)
    for (int d = 0; d < t.ndim(); ++d)
      if (d != *axis) bc.push_back(t.broadcastable[d]);
  return {TensorType(DType::Int64, bc)};
}

std::vector<ShapeVars> ArgReduce::infer_shape(const Apply& node, const std::vector<ShapeVars>& in) const {
  ShapeVars out;
  if (axis)
    for (int d = 0; d < static_cast<int>(in[0].size()); ++d)
      if (d != *axis) out.push_back(in[0][d]);
  return {out};
}

std::vector<std::vector<bool>> ArgReduce::connection_pattern(const Apply& node) const { return {{false}}; }

std::vector<Var> ArgReduce::grad(const Apply& node, const std::vector<Var>& output_grads) const { return {nullptr}; }

// ---------------------------------------------------------------------------------------------
// CumOp

std::string CumOp::name() const {
  std::ostringstream os;
  os << "CumOp{axis=" << axis << ", mode=" << (is_mul ? "mul" : "add") << (reverse ? ", reverse" : "") << "}";
  return os.str();
}

std::vector<TensorType> CumOp::make_output_types(const std::vector<Var>& inputs) const {
  if (inputs.size() != 1) fail<TypeError>(name(), ": expected 1 input, got ", inputs.size());
  const TensorType& t = inputs[0]->type;
  if (axis < 0 || axis >= t.ndim())
    fail<TypeError>(name(), ": expected an axis in [0, ", t.ndim(), ") for input ", t.str(), ", got ", axis);
  return {TensorType(reduce_default_dtype(is_mul ? ReduceKind::Prod : ReduceKind::Sum, t.dtype), t.broadcastable)};
}

std::vector<ShapeVars> CumOp::infer_shape(const Apply& node, const std::vector<ShapeVars>& in) const { return {in[0]}; }

std::vector<Var> CumOp::grad(const Apply& node, const std::vector<Var>& output_grads) const {
  const Var& x = node.inputs[0];
  const Var& gz = output_grads[0];
  if (!is_float(x->dtype()) || !gz) return {discrete_zero_grad(x)};
  auto rev = std::make_shared<CumOp>(false, axis, !reverse);
  if (!is_mul) return {cast(apply_op1(rev, {gz}), x->dtype())};
  Var out = const_cast<Apply&>(node).output(0);
  return {cast(true_div(apply_op1(rev, {mul(gz, out)}), x), x->dtype())};
}

std::vector<Var> CumOp::rop(const Apply& node, const std::vector<Var>& eval_points) const {
  if (!eval_points[0]) return {nullptr};
  if (!is_mul) return {apply_op1(std::make_shared<CumOp>(false, axis, reverse), {eval_points[0]})};
  fail<NotDifferentiableError>(name(), ": R_op is only implemented for cumsum");
}

// ---------------------------------------------------------------------------------------------
// Builders

Var reduce(ReduceKind k, Var x, Axes axes, bool keepdims, std::optional<DType> dtype) {
  std::string who(reduce_kind_name(k));
  std::vector<int> ax = normalize_axes(axes, x->ndim(), who.c_str());
  DType out = dtype ? *dtype : reduce_default_dtype(k, x->dtype());
  Var r = apply_op1(std::make_shared<Reduce>(k, ax, out), {x});
  if (keepdims) r = dimshuffle(r, keepdims_pattern(ax, x->ndim()));
  return r;
}

Var sum(Var x, Axes axes, bool keepdims, std::optional<DType> dtype) {
  return reduce(ReduceKind::Sum, std::move(x), std::move(axes), keepdims, dtype);
}
Var prod(Var x, Axes axes, bool keepdims, std::optional<DType> dtype) {
  return reduce(ReduceKind::Prod, std::move(x), std::move(axes), keepdims, dtype);
}
Var max(Var x, Axes axes, bool keepdims) { return reduce(ReduceKind::Max, std::move(x), std::move(axes), keepdims); }
Var min(Var x, Axes axes, bool keepdims) { return reduce(ReduceKind::Min, std::move(x), std::move(axes), keepdims); }
Var all(Var x, Axes axes, bool keepdims) { return reduce(ReduceKind::All, std::move(x), std::move(axes), keepdims); }
Var any(Var x, Axes axes, bool keepdims) { return reduce(ReduceKind::Any, std::move(x), std::move(axes), keepdims); }

Var mean(Var x, Axes axes, bool keepdims) {
  std::vector<int> ax = normalize_axes(axes, x->ndim(), "mean");
  DType out = is_float(x->dtype()) ? x->dtype() : DType::Float64;
  Var s = sum(x, ax, keepdims, out);
  return true_div(s, cast(reduced_count(x, ax), out));
}

Var var(Var x, Axes axes, bool keepdims, int ddof) {
  std::vector<int> ax = normalize_axes(axes, x->ndim(), "var");
  DType out = is_float(x->dtype()) ? x->dtype() : DType::Float64;
  Var xf = x->dtype() == out ? x : cast(x, out);
  Var centered = sub(xf, mean(xf, ax, true));
  Var ss = sum(sqr(centered), ax, keepdims);
  Var n = reduced_count(x, ax);
  if (ddof != 0) n = sub(n, int_constant(ddof));
  return true_div(ss, cast(n, out));
}

Var std(Var x, Axes axes, bool keepdims, int ddof) { return sqrt(var(std::move(x), std::move(axes), keepdims, ddof)); }

namespace {
Var arg_reduce(bool is_max, Var x, std::optional<int> axis, bool keepdims) {
  const char* who = is_max ? "argmax" : "argmin";
  std::optional<int> ax;
  if (axis) ax = normalize_axis(*axis, x->ndim(), who);
  const int nd = x->ndim();
  Var r = apply_op1(std::make_shared<ArgReduce>(is_max, ax), {x});
  if (keepdims) {
    std::vector<int> all_axes;
    if (ax)
      all_axes = {*ax};
    else
      for (int d = 0; d < nd; ++d) all_axes.push_back(d);
    r = dimshuffle(r, keepdims_pattern(all_axes, nd));
  }
  return r;
}

Var cum_op(bool is_mul, Var x, std::optional<int> axis) {
  const char* who = is_mul ? "cumprod" : "cumsum";
  if (!axis) {
    if (x->ndim() != 1) x = flatten(x, 1);
    return apply_op1(std::make_shared<CumOp>(is_mul, 0), {x});
  }
  return apply_op1(std::make_shared<CumOp>(is_mul, normalize_axis(*axis, x->ndim(), who)), {x});
}
}  // namespace

Var argmax(Var x, std::optional<int> axis, bool keepdims) { return arg_reduce(true, std::move(x), axis, keepdims); }
Var argmin(Var x, std::optional<int> axis, bool keepdims) { return arg_reduce(false, std::move(x), axis, keepdims); }
Var cumsum(Var x, std::optional<int> axis) { return cum_op(false, std::move(x), axis); }
Var cumprod(Var x, std::optional<int> axis) { return cum_op(true, std::move(x), axis); }

}  // namespace hypatia
