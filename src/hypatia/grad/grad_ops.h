// Ops used by the gradient machinery: gradient-blocking/clipping identities and the jacobian map.
#pragma once
#include <memory>
#include <vector>

#include "hypatia/graph/graph.h"

namespace hypatia {

/// Identity whose gradient is zero (Theano's DisconnectedGrad / consider_constant op).
class DisconnectedGradOp : public OpWithProps<DisconnectedGradOp> {
 public:
  auto props() const { return std::make_tuple(); }
  std::string name() const override { return "DisconnectedGrad"; }
  std::vector<TensorType> make_output_types(const std::vector<Var>& in) const override;
  std::vector<ShapeVars> infer_shape(const Apply& node, const std::vector<ShapeVars>& in) const override { return in; }
  std::vector<Var> grad(const Apply& node, const std::vector<Var>& g) const override { return {nullptr}; }
  /// No tangent either (Theano's DisconnectedGrad.R_op: None).
  std::vector<Var> rop(const Apply&, const std::vector<Var>&) const override { return {nullptr}; }
  std::vector<std::vector<bool>> connection_pattern(const Apply&) const override { return {{false}}; }
  AliasMap view_map() const override { return {{0}}; }
};

/// Identity whose gradient is clipped to [lo, hi].
class GradClipOp : public OpWithProps<GradClipOp> {
 public:
  double lo, hi;
  GradClipOp(double l, double h) : lo(l), hi(h) {}
  auto props() const { return std::make_tuple(lo, hi); }
  std::string name() const override;
  std::vector<TensorType> make_output_types(const std::vector<Var>& in) const override;
  std::vector<ShapeVars> infer_shape(const Apply& node, const std::vector<ShapeVars>& in) const override { return in; }
  std::vector<Var> grad(const Apply& node, const std::vector<Var>& g) const override;
  /// The tangent passes through (an identity forward, as Theano's ViewOp.R_op).
  std::vector<Var> rop(const Apply&, const std::vector<Var>& ep) const override { return {ep[0]}; }
  AliasMap view_map() const override { return {{0}}; }
};

/// Identity whose gradient is multiplied by `multiplier` (Theano's GradScale: -1 reverses it).
class GradScaleOp : public OpWithProps<GradScaleOp> {
 public:
  double multiplier;
  explicit GradScaleOp(double m) : multiplier(m) {}
  auto props() const { return std::make_tuple(multiplier); }
  std::string name() const override;
  std::vector<TensorType> make_output_types(const std::vector<Var>& in) const override;
  std::vector<ShapeVars> infer_shape(const Apply& node, const std::vector<ShapeVars>& in) const override { return in; }
  std::vector<Var> grad(const Apply& node, const std::vector<Var>& g) const override;
  /// The tangent passes through (an identity forward; the scale is the gradient's only).
  std::vector<Var> rop(const Apply&, const std::vector<Var>& ep) const override { return {ep[0]}; }
  AliasMap view_map() const override { return {{0}}; }
};

/// Evaluates an inner graph for i = 0..n-1 and stacks the results along a new leading axis.
/// Inputs: n (0-d int64), then the captured free variables of the inner graph. Used by jacobian.
class MapIndexOp : public Op {
 public:
  /// index: the inner 0-d int64 input; captured: the other inner inputs; body: the inner output.
  MapIndexOp(Var index, std::vector<Var> captured, Var body)
      : index(std::move(index)), captured(std::move(captured)), body(std::move(body)) {}
  Var index;
  std::vector<Var> captured;
  Var body;
  std::string name() const override { return "MapIndex"; }
  /// The body, run once per index: inputs (index, captured...), output body.
  std::vector<InnerFunction> inner_functions() const override {
    std::vector<Var> ins{index};
    ins.insert(ins.end(), captured.begin(), captured.end());
    return {InnerFunction{std::move(ins), {body}}};
  }
  bool equals(const Op& o) const override { return this == &o; }
  size_t hash() const override { return std::hash<const void*>()(this); }
  std::vector<TensorType> make_output_types(const std::vector<Var>& in) const override;
};

}  // namespace hypatia
