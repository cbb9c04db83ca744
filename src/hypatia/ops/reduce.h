// Reductions (sum prod mean var std max min argmax argmin all any) and cumulative ops.
#pragma once
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "hypatia/graph/graph.h"

namespace hypatia {

/// Axes to reduce: nullopt means all axes. Negative axes count from the end.
using Axes = std::optional<std::vector<int>>;

/// The reduction a Reduce node applies (Theano's CAReduce scalar ops).
enum class ReduceKind : uint8_t {
  Sum,
  Prod,
  Max,
  Min,
  All,
  Any,
  /// Product of the non-zero elements (used by the gradient of Prod; not differentiable).
  ProdWithoutZeros,
};

/// "Sum", "Prod", "Max", "Min", "All", "Any", "ProdWithoutZeros".
std::string_view reduce_kind_name(ReduceKind k);
/// numpy's output dtype of reduction `k` on an input of dtype `in`: sum/prod of bool and signed ints
/// narrower than 64 bits give int64, of unsigned ints uint64, floats keep theirs; max/min keep the
/// input dtype; all/any give bool.
DType reduce_default_dtype(ReduceKind k, DType in);

/// Theano's CAReduce: reduces `axes` (normalized, sorted, unique) of its input; the reduced axes
/// are dropped (builders add keepdims with a DimShuffle on top). `dtype` is the output dtype;
/// float sums accumulate in float64, integer ones in wrapping 64-bit arithmetic.
/// Reducing a zero-length axis gives the identity (0 for sum, 1 for prod, true for all, false for
/// any); max and min throw ValueError there ("zero-size array to reduction operation maximum which
/// has no identity").
class Reduce : public OpWithProps<Reduce> {
 public:
  ReduceKind kind;
  std::vector<int> axes;
  DType dtype;

  Reduce(ReduceKind k, std::vector<int> axes, DType out_dtype);
  auto props() const { return std::make_tuple(kind, axes, dtype); }
  /// "Sum{axis=[0]}", "Max{axis=[0, 1]}", "Sum{axis=[1], dtype=float64}" (dtype shown when it is
  /// not the default one).
  std::string name() const override;
  std::vector<TensorType> make_output_types(const std::vector<Var>& inputs) const override;
  std::vector<ShapeVars> infer_shape(const Apply& node, const std::vector<ShapeVars>& in) const override;
  std::vector<Var> grad(const Apply& node, const std::vector<Var>& output_grads) const override;
  std::vector<Var> rop(const Apply& node, const std::vector<Var>& eval_points) const override;
  std::vector<std::vector<bool>> connection_pattern(const Apply& node) const override;
};

/// Index of the max (is_max) or min along `axis`, or over the flattened input (C order) when
/// axis is nullopt; int64 output with that axis dropped. The first occurrence wins; a NaN counts
/// as the extreme (numpy). Not differentiable (its output is disconnected from its input).
class ArgReduce : public OpWithProps<ArgReduce> {
 public:
  bool is_max;
  std::optional<int> axis;

  ArgReduce(bool max, std::optional<int> normalized_axis) : is_max(max), axis(normalized_axis) {}
  auto props() const { return std::make_tuple(is_max, axis); }
  /// "Argmax{axis=1}", "Argmin{axis=None}".
  std::string name() const override;
  std::vector<TensorType> make_output_types(const std::vector<Var>& inputs) const override;
  std::vector<ShapeVars> infer_shape(const Apply& node, const std::vector<ShapeVars>& in) const override;
  std::vector<Var> grad(const Apply& node, const std::vector<Var>& output_grads) const override;
  std::vector<std::vector<bool>> connection_pattern(const Apply& node) const override;
};

/// Cumulative sum (is_mul false) or product along `axis` (normalized), from the end when
/// `reverse`. Output dtype follows reduce_default_dtype (cumsum of int8 is int64).
class CumOp : public OpWithProps<CumOp> {
 public:
  bool is_mul;
  int axis;
  bool reverse;

  CumOp(bool mul, int normalized_axis, bool rev = false) : is_mul(mul), axis(normalized_axis), reverse(rev) {}
  auto props() const { return std::make_tuple(is_mul, axis, reverse); }
  /// "CumOp{axis=0, mode=add}", "CumOp{axis=1, mode=mul, reverse}".
  std::string name() const override;
  std::vector<TensorType> make_output_types(const std::vector<Var>& inputs) const override;
  std::vector<ShapeVars> infer_shape(const Apply& node, const std::vector<ShapeVars>& in) const override;
  /// cumsum: the reversed cumsum of the output gradient. cumprod: Theano's formula
  /// reversed_cumsum(g * out) / x, which is not finite where x has zeros.
  std::vector<Var> grad(const Apply& node, const std::vector<Var>& output_grads) const override;
  std::vector<Var> rop(const Apply& node, const std::vector<Var>& eval_points) const override;
};

/// Normalizes reduction axes against ndim (negative count from the end; nullopt: all axes),
/// sorted and unique. Throws IndexError naming `who` for an axis out of range, ValueError for a
/// repeated axis.
std::vector<int> normalize_axes(const Axes& axes, int ndim, const char* who);

/// Applies reduction `k` over `axes`; keepdims leaves the reduced axes as broadcastable length-1
/// dims; `dtype` overrides the output dtype (sum and prod only).
Var reduce(ReduceKind k, Var x, Axes axes = std::nullopt, bool keepdims = false,
           std::optional<DType> dtype = std::nullopt);

/// numpy.sum; `dtype` is the output (and accumulation) dtype, reduce_default_dtype when nullopt.
Var sum(Var x, Axes axes = std::nullopt, bool keepdims = false, std::optional<DType> dtype = std::nullopt);
/// numpy.prod; the gradient is exact where the input has zeros (Theano's rule).
Var prod(Var x, Axes axes = std::nullopt, bool keepdims = false, std::optional<DType> dtype = std::nullopt);
/// numpy.mean: float64 for integer and bool inputs, else the input's dtype (NaN over no element).
Var mean(Var x, Axes axes = std::nullopt, bool keepdims = false);
/// Variance with `ddof` delta degrees of freedom (numpy's var).
Var var(Var x, Axes axes = std::nullopt, bool keepdims = false, int ddof = 0);
/// Standard deviation: sqrt(var(x, axes, keepdims, ddof)).
Var std(Var x, Axes axes = std::nullopt, bool keepdims = false, int ddof = 0);
/// numpy.max (NaN propagates); the gradient goes to every position equal to the max (Theano).
Var max(Var x, Axes axes = std::nullopt, bool keepdims = false);
/// numpy.min (NaN propagates); the gradient goes to every position equal to the min (Theano).
Var min(Var x, Axes axes = std::nullopt, bool keepdims = false);
/// Index of the max along one axis (all axes flattened when nullopt), int64.
Var argmax(Var x, std::optional<int> axis = std::nullopt, bool keepdims = false);
/// Index of the min along one axis (all axes flattened when nullopt), int64.
Var argmin(Var x, std::optional<int> axis = std::nullopt, bool keepdims = false);
/// Whether every element is non-zero (bool).
Var all(Var x, Axes axes = std::nullopt, bool keepdims = false);
/// Whether some element is non-zero (bool).
Var any(Var x, Axes axes = std::nullopt, bool keepdims = false);
/// Cumulative sum/product along axis (flattened when nullopt).
Var cumsum(Var x, std::optional<int> axis = std::nullopt);
/// Cumulative product along axis (flattened when nullopt).
Var cumprod(Var x, std::optional<int> axis = std::nullopt);

}  // namespace hypatia
