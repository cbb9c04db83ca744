// Sorting along an axis: Theano's SortOp and ArgSortOp (numpy.sort / numpy.argsort).
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "hypatia/graph/graph.h"

namespace hypatia {

/// numpy.sort along `axis` (normalized): ascending, NaN last, and stable (equal elements keep their
/// order, which is one of the orders numpy's 'quicksort' may give). The output has the input's type.
/// Gradient (Theano's): the output gradient goes back through the permutation (out[j] = x[p[j]],
/// so dx[p[j]] = g[j]: dx = g gathered by argsort(p)). R_op: the eval point gathered by p.
class SortOp : public OpWithProps<SortOp> {
 public:
  int axis;

  explicit SortOp(int normalized_axis) : axis(normalized_axis) {}
  auto props() const { return std::make_tuple(axis); }
  /// "SortOp{axis=1}".
  std::string name() const override;
  std::vector<TensorType> make_output_types(const std::vector<Var>& inputs) const override;
  std::vector<ShapeVars> infer_shape(const Apply& node, const std::vector<ShapeVars>& in) const override;
  std::vector<Var> grad(const Apply& node, const std::vector<Var>& output_grads) const override;
  std::vector<Var> rop(const Apply& node, const std::vector<Var>& eval_points) const override;
};

/// numpy.argsort along `axis` (normalized): the int64 indices that sort the input (stable, NaN
/// last), with the input's broadcastable pattern. Piecewise constant: its gradient is zero
/// (Theano returns zeros for the input), and so is its R_op.
class ArgSortOp : public OpWithProps<ArgSortOp> {
 public:
  int axis;

  explicit ArgSortOp(int normalized_axis) : axis(normalized_axis) {}
  auto props() const { return std::make_tuple(axis); }
  /// "ArgSortOp{axis=1}".
  std::string name() const override;
  std::vector<TensorType> make_output_types(const std::vector<Var>& inputs) const override;
  std::vector<ShapeVars> infer_shape(const Apply& node, const std::vector<ShapeVars>& in) const override;
  std::vector<Var> grad(const Apply& node, const std::vector<Var>& output_grads) const override;
  std::vector<Var> rop(const Apply& node, const std::vector<Var>& eval_points) const override;
};

/// x sorted along `axis` (negative counts from the end); nullopt sorts the flattened input.
Var sort(Var x, std::optional<int> axis = -1);
/// The indices that sort x along `axis` (int64); nullopt: of the flattened input.
Var argsort(Var x, std::optional<int> axis = -1);
/// numpy.take_along_axis(x, indices, axis): out[..., j, ...] = x[..., indices[..., j, ...], ...]
/// where `indices` (integers) has x's ndim and the same length as x on every other axis. An
/// AdvancedSubtensor with aranges on the other axes; the result keeps x's broadcastable pattern.
Var take_along_axis(Var x, Var indices, int axis);

}  // namespace hypatia
