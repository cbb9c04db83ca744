// Shape ops: dimshuffle, reshape, join/split, alloc and friends, shape, arange, eye, tile, repeat.
#pragma once
#include <optional>
#include <vector>

#include "hypatia/graph/graph.h"

namespace hypatia {

/// Theano's DimShuffle: `pattern[i]` is the input axis placed at output axis i, or -1 for a new
/// broadcastable axis ('x'). Input axes left out must be broadcastable (they are dropped).
class DimShuffle : public OpWithProps<DimShuffle> {
 public:
  std::vector<bool> input_broadcastable;
  std::vector<int> pattern;
  DimShuffle(std::vector<bool> input_bc, std::vector<int> pattern);
  auto props() const { return std::make_tuple(input_broadcastable, pattern); }
  std::string name() const override;  // "DimShuffle{1,0}", "DimShuffle{x,0}"
  std::vector<TensorType> make_output_types(const std::vector<Var>& inputs) const override;
  std::vector<ShapeVars> infer_shape(const Apply& node, const std::vector<ShapeVars>& in) const override;
  std::vector<Var> grad(const Apply& node, const std::vector<Var>& output_grads) const override;
  std::vector<Var> rop(const Apply& node, const std::vector<Var>& eval_points) const override;
  AliasMap view_map() const override { return {{0}}; }
};

Var dimshuffle(Var x, std::vector<int> pattern);
/// Reverses the axes when perm is empty.
Var transpose(Var x, std::vector<int> perm = {});
/// Symbolic shape of x: an int64 vector.
Var shape(Var x);
/// Length of axis i of x: a 0-d int64.
Var shape_i(Var x, int i);
/// The shape of x as one 0-d int64 variable per dim (constants where the type says length 1).
ShapeVars shape_vars(const Var& x);
/// Joins 0-d integer variables into an int64 vector.
Var make_vector(const std::vector<Var>& scalars);
/// Reshape to `shape` (one entry may be -1).
Var reshape(Var x, const std::vector<int64_t>& shape);
/// Reshape to a symbolic int vector of known length ndim.
Var reshape(Var x, Var shape, int ndim);
/// Keeps the first ndim-1 axes and flattens the rest into the last.
Var flatten(Var x, int ndim = 1);
Var concatenate(const std::vector<Var>& xs, int axis = 0);
/// Theano's join(axis, *tensors).
inline Var join(int axis, const std::vector<Var>& xs) { return concatenate(xs, axis); }
Var stack(const std::vector<Var>& xs, int axis = 0);
/// Splits x along axis into pieces of the given symbolic lengths (an int vector of n_splits).
std::vector<Var> split(Var x, Var sizes, int n_splits, int axis = 0);
std::vector<Var> split(Var x, const std::vector<int64_t>& sizes, int axis = 0);
/// An array of `shape` filled with the 0-d (or broadcastable) value.
Var alloc(Var value, const ShapeVars& shape);
Var zeros(const ShapeVars& shape, DType dt);
Var ones(const ShapeVars& shape, DType dt);
Var zeros_like(Var x, std::optional<DType> dt = std::nullopt);
Var ones_like(Var x, std::optional<DType> dt = std::nullopt);
/// Theano's fill(model, value): value broadcast to model's shape.
Var fill(Var model, Var value);
Var arange(Var start, Var stop, Var step, DType dt);
Var arange(int64_t stop);
Var eye(Var n, Var m, Var k, DType dt);
Var eye(int64_t n, DType dt);
Var tile(Var x, const std::vector<int64_t>& reps);
/// numpy.repeat; axis nullopt flattens first.
Var repeat(Var x, Var repeats, std::optional<int> axis = std::nullopt);
Var repeat(Var x, int64_t repeats, std::optional<int> axis = std::nullopt);

/// 0-d int64 constant.
Var int_constant(int64_t v);

}  // namespace hypatia
