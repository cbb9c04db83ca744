// SortOp and ArgSortOp: types, shapes, gradients and builders (kernels: backends/reference/sort_ref.cpp).
#include "hypatia/ops/sort.h"

#include "hypatia/core/config.h"
#include "hypatia/core/error.h"
#include "hypatia/ops/elemwise.h"
#include "hypatia/ops/shape.h"
#include "hypatia/ops/subtensor.h"

namespace hypatia {
namespace {

void check_sort_input(const std::string& who, int axis, const std::vector<Var>& inputs) {
  if (inputs.size() != 1) fail<TypeError>(who, ": expected 1 input, got ", inputs.size());
  const TensorType& t = inputs[0]->type;
  if (axis < 0 || axis >= t.ndim())
    fail<TypeError>(who, ": expected an axis in [0, ", t.ndim(), ") for input ", t.str(), ", got ", axis);
}

std::optional<int> sort_axis(Var& x, std::optional<int> axis, const char* who) {
  if (!axis) {
    if (x->ndim() != 1) x = flatten(x, 1);
    return 0;
  }
  return normalize_axis(*axis, x->ndim(), who);
}

}  // namespace

Var take_along_axis(Var x, Var indices, int axis) {
  const int nd = x->ndim();
  if (indices->ndim() != nd)
    fail<ValueError>("take_along_axis: indices have ", indices->ndim(), " dimensions, x has ", nd);
  axis = normalize_axis(axis, nd, "take_along_axis");
  std::vector<Index> idx;
  for (int d = 0; d < nd; ++d) {
    if (d == axis) {
      idx.emplace_back(indices);
      continue;
    }
    // arange(x.shape[d]) along axis d, broadcast over the others.
    std::vector<int> pattern(nd, -1);
    pattern[d] = 0;
    Var r = arange(int_constant(0), shape_i(x, d), int_constant(1), DType::Int64);
    idx.emplace_back(dimshuffle(r, pattern));
  }
  Var out = subtensor(x, idx);
  if (out->type.broadcastable != x->type.broadcastable) out = patternbroadcast(out, x->type.broadcastable);
  return out;
}

// ---------------------------------------------------------------------------------------------
// SortOp

std::string SortOp::name() const { return "SortOp{axis=" + std::to_string(axis) + "}"; }

std::vector<TensorType> SortOp::make_output_types(const std::vector<Var>& inputs) const {
  check_sort_input(name(), axis, inputs);
  return {inputs[0]->type};
}

std::vector<ShapeVars> SortOp::infer_shape(const Apply&, const std::vector<ShapeVars>& in) const { return {in[0]}; }

std::vector<Var> SortOp::grad(const Apply& node, const std::vector<Var>& output_grads) const {
  const Var& x = node.inputs[0];
  const Var& gz = output_grads[0];
  if (!is_float(x->dtype()) || !gz) return {zeros_like(x, is_float(x->dtype()) ? x->dtype() : config().floatX)};
  // out[j] = x[p[j]] with p = argsort(x); so dx[i] = g[q[i]] with q = argsort(p), p's inverse.
  auto op = std::make_shared<ArgSortOp>(axis);
  Var p = apply_op1(op, {x});
  Var q = apply_op1(op, {p});
  Var gx = take_along_axis(gz, q, axis);
  return {gx->dtype() == x->dtype() ? gx : cast(gx, x->dtype())};
}

std::vector<Var> SortOp::rop(const Apply& node, const std::vector<Var>& eval_points) const {
  if (!eval_points[0]) return {nullptr};
  Var p = apply_op1(std::make_shared<ArgSortOp>(axis), {node.inputs[0]});
  return {take_along_axis(eval_points[0], p, axis)};
}

// ---------------------------------------------------------------------------------------------
// ArgSortOp

std::string ArgSortOp::name() const { return "ArgSortOp{axis=" + std::to_string(axis) + "}"; }

std::vector<TensorType> ArgSortOp::make_output_types(const std::vector<Var>& inputs) const {
  check_sort_input(name(), axis, inputs);
  return {TensorType(DType::Int64, inputs[0]->type.broadcastable)};
}

std::vector<ShapeVars> ArgSortOp::infer_shape(const Apply&, const std::vector<ShapeVars>& in) const { return {in[0]}; }

std::vector<Var> ArgSortOp::grad(const Apply& node, const std::vector<Var>&) const {
  const Var& x = node.inputs[0];
  return {zeros_like(x, is_float(x->dtype()) ? x->dtype() : config().floatX)};
}

std::vector<Var> ArgSortOp::rop(const Apply&, const std::vector<Var>&) const { return {nullptr}; }

// ---------------------------------------------------------------------------------------------
// Builders

Var sort(Var x, std::optional<int> axis) {
  int ax = *sort_axis(x, axis, "sort");
  return apply_op1(std::make_shared<SortOp>(ax), {x});
}

Var argsort(Var x, std::optional<int> axis) {
  int ax = *sort_axis(x, axis, "argsort");
  return apply_op1(std::make_shared<ArgSortOp>(ax), {x});
}

}  // namespace hypatia
