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

/// Theano's Shape: the shape of its input as an int64 vector.
class ShapeOp : public OpWithProps<ShapeOp> {
 public:
  auto props() const { return std::make_tuple(); }
  std::string name() const override { return "Shape"; }
  std::vector<TensorType> make_output_types(const std::vector<Var>& inputs) const override;
  std::vector<ShapeVars> infer_shape(const Apply& node, const std::vector<ShapeVars>& in) const override;
  std::vector<Var> grad(const Apply& node, const std::vector<Var>& output_grads) const override;
  std::vector<std::vector<bool>> connection_pattern(const Apply& node) const override;
};

/// Theano's Shape_i: the length of axis `i` of its input, a 0-d int64.
class ShapeI : public OpWithProps<ShapeI> {
 public:
  int i;
  explicit ShapeI(int axis) : i(axis) {}
  auto props() const { return std::make_tuple(i); }
  std::string name() const override;  // "Shape_i{0}"
  std::vector<TensorType> make_output_types(const std::vector<Var>& inputs) const override;
  std::vector<ShapeVars> infer_shape(const Apply& node, const std::vector<ShapeVars>& in) const override;
  std::vector<Var> grad(const Apply& node, const std::vector<Var>& output_grads) const override;
  std::vector<std::vector<bool>> connection_pattern(const Apply& node) const override;
};

/// Theano's MakeVector: joins 0-d integer inputs into an int64 vector.
class MakeVector : public OpWithProps<MakeVector> {
 public:
  auto props() const { return std::make_tuple(); }
  std::string name() const override { return "MakeVector{dtype='int64'}"; }
  std::vector<TensorType> make_output_types(const std::vector<Var>& inputs) const override;
  std::vector<ShapeVars> infer_shape(const Apply& node, const std::vector<ShapeVars>& in) const override;
  std::vector<Var> grad(const Apply& node, const std::vector<Var>& output_grads) const override;
  std::vector<std::vector<bool>> connection_pattern(const Apply& node) const override;
};

/// Theano's Alloc: inputs (value, s0, s1, ...) with 0-d integer s_i; the output has shape
/// (s0, s1, ...) and holds value broadcast to it (value's dims align with the trailing dims; a
/// value dim of length != the output's must be broadcastable in value's type).
class Alloc : public OpWithProps<Alloc> {
 public:
  auto props() const { return std::make_tuple(); }
  std::string name() const override { return "Alloc"; }
  std::vector<TensorType> make_output_types(const std::vector<Var>& inputs) const override;
  std::vector<ShapeVars> infer_shape(const Apply& node, const std::vector<ShapeVars>& in) const override;
  std::vector<Var> grad(const Apply& node, const std::vector<Var>& output_grads) const override;
  std::vector<Var> rop(const Apply& node, const std::vector<Var>& eval_points) const override;
  std::vector<std::vector<bool>> connection_pattern(const Apply& node) const override;
};

/// Theano's Reshape: inputs (x, shape) with shape an integer vector of length `ndim` (one entry
/// may be -1). The output is a view of x when the layout allows, else a C-contiguous copy.
class Reshape : public OpWithProps<Reshape> {
 public:
  int ndim;
  explicit Reshape(int nd) : ndim(nd) {}
  auto props() const { return std::make_tuple(ndim); }
  std::string name() const override;  // "Reshape{2}"
  std::vector<TensorType> make_output_types(const std::vector<Var>& inputs) const override;
  std::vector<ShapeVars> infer_shape(const Apply& node, const std::vector<ShapeVars>& in) const override;
  std::vector<Var> grad(const Apply& node, const std::vector<Var>& output_grads) const override;
  std::vector<Var> rop(const Apply& node, const std::vector<Var>& eval_points) const override;
  std::vector<std::vector<bool>> connection_pattern(const Apply& node) const override;
  AliasMap view_map() const override { return {{0}}; }
};

/// Theano's Join with a fixed axis: concatenates its inputs (same ndim, equal lengths on the other
/// axes) along `axis`. The output dtype is the promotion of the inputs' dtypes.
class Join : public OpWithProps<Join> {
 public:
  int axis;
  explicit Join(int ax) : axis(ax) {}
  auto props() const { return std::make_tuple(axis); }
  std::string name() const override;  // "Join{axis=0}"
  std::vector<TensorType> make_output_types(const std::vector<Var>& inputs) const override;
  std::vector<ShapeVars> infer_shape(const Apply& node, const std::vector<ShapeVars>& in) const override;
  std::vector<Var> grad(const Apply& node, const std::vector<Var>& output_grads) const override;
  std::vector<Var> rop(const Apply& node, const std::vector<Var>& eval_points) const override;
};

/// Theano's Split: inputs (x, sizes) with sizes an integer vector of length n_splits summing to
/// x's length on `axis`; the outputs are views of the consecutive pieces.
class Split : public OpWithProps<Split> {
 public:
  int n_splits;
  int axis;
  Split(int n, int ax) : n_splits(n), axis(ax) {}
  auto props() const { return std::make_tuple(n_splits, axis); }
  std::string name() const override;  // "Split{3}"
  std::vector<TensorType> make_output_types(const std::vector<Var>& inputs) const override;
  std::vector<ShapeVars> infer_shape(const Apply& node, const std::vector<ShapeVars>& in) const override;
  std::vector<Var> grad(const Apply& node, const std::vector<Var>& output_grads) const override;
  std::vector<Var> rop(const Apply& node, const std::vector<Var>& eval_points) const override;
  std::vector<std::vector<bool>> connection_pattern(const Apply& node) const override;
  AliasMap view_map() const override;
};

/// Theano's ARange: inputs (start, stop, step), 0-d numbers; a vector of dtype `dtype`.
class ARange : public OpWithProps<ARange> {
 public:
  DType dtype;
  explicit ARange(DType dt) : dtype(dt) {}
  auto props() const { return std::make_tuple(dtype); }
  std::string name() const override;  // "ARange{dtype='int64'}"
  std::vector<TensorType> make_output_types(const std::vector<Var>& inputs) const override;
  std::vector<ShapeVars> infer_shape(const Apply& node, const std::vector<ShapeVars>& in) const override;
  std::vector<Var> grad(const Apply& node, const std::vector<Var>& output_grads) const override;
  std::vector<std::vector<bool>> connection_pattern(const Apply& node) const override;
};

/// Theano's Eye: inputs (n, m, k), 0-d integers; an n x m matrix with ones on diagonal k.
class Eye : public OpWithProps<Eye> {
 public:
  DType dtype;
  explicit Eye(DType dt) : dtype(dt) {}
  auto props() const { return std::make_tuple(dtype); }
  std::string name() const override;  // "Eye{dtype='float64'}"
  std::vector<TensorType> make_output_types(const std::vector<Var>& inputs) const override;
  std::vector<ShapeVars> infer_shape(const Apply& node, const std::vector<ShapeVars>& in) const override;
  std::vector<Var> grad(const Apply& node, const std::vector<Var>& output_grads) const override;
  std::vector<std::vector<bool>> connection_pattern(const Apply& node) const override;
};

/// numpy.tile with constant repetitions: the input (padded with leading length-1 axes to
/// reps.size() dims when it has fewer) repeated reps[i] times along axis i.
class Tile : public OpWithProps<Tile> {
 public:
  std::vector<int64_t> reps;
  explicit Tile(std::vector<int64_t> r) : reps(std::move(r)) {}
  auto props() const { return std::make_tuple(reps); }
  std::string name() const override;  // "Tile{reps=(2, 3)}"
  std::vector<TensorType> make_output_types(const std::vector<Var>& inputs) const override;
  std::vector<ShapeVars> infer_shape(const Apply& node, const std::vector<ShapeVars>& in) const override;
  std::vector<Var> grad(const Apply& node, const std::vector<Var>& output_grads) const override;
  std::vector<Var> rop(const Apply& node, const std::vector<Var>& eval_points) const override;
};

/// numpy.repeat along `axis`: inputs (x, repeats) with repeats a 0-d integer (every element
/// repeated that many times) or an integer vector with one count per element of the axis.
class Repeat : public OpWithProps<Repeat> {
 public:
  int axis;
  explicit Repeat(int ax) : axis(ax) {}
  auto props() const { return std::make_tuple(axis); }
  std::string name() const override;  // "Repeat{axis=0}"
  std::vector<TensorType> make_output_types(const std::vector<Var>& inputs) const override;
  std::vector<ShapeVars> infer_shape(const Apply& node, const std::vector<ShapeVars>& in) const override;
  std::vector<Var> grad(const Apply& node, const std::vector<Var>& output_grads) const override;
  std::vector<Var> rop(const Apply& node, const std::vector<Var>& eval_points) const override;
  std::vector<std::vector<bool>> connection_pattern(const Apply& node) const override;
};

/// Theano's Rebroadcast: a view of its input with some axes' broadcastable flags changed.
/// `flags[i]` is -1 (unchanged), 0 (not broadcastable) or 1 (broadcastable: checked at run time to
/// have length 1).
class Rebroadcast : public OpWithProps<Rebroadcast> {
 public:
  std::vector<int> flags;
  explicit Rebroadcast(std::vector<int> f) : flags(std::move(f)) {}
  auto props() const { return std::make_tuple(flags); }
  std::string name() const override;  // "Rebroadcast{?,1}"
  std::vector<TensorType> make_output_types(const std::vector<Var>& inputs) const override;
  std::vector<ShapeVars> infer_shape(const Apply& node, const std::vector<ShapeVars>& in) const override;
  std::vector<Var> grad(const Apply& node, const std::vector<Var>& output_grads) const override;
  std::vector<Var> rop(const Apply& node, const std::vector<Var>& eval_points) const override;
  AliasMap view_map() const override { return {{0}}; }
};

/// DimShuffle of x: pattern entries are input axes or -1 for a new broadcastable axis.
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
/// Concatenation along `axis` (negative counts from the end).
Var concatenate(const std::vector<Var>& xs, int axis = 0);
/// Theano's join(axis, *tensors).
inline Var join(int axis, const std::vector<Var>& xs) { return concatenate(xs, axis); }
/// Stacks tensors of one shape along a new axis.
Var stack(const std::vector<Var>& xs, int axis = 0);
/// Splits x along axis into pieces of the given symbolic lengths (an int vector of n_splits).
std::vector<Var> split(Var x, Var sizes, int n_splits, int axis = 0);
/// Splits x along axis into pieces of constant lengths.
std::vector<Var> split(Var x, const std::vector<int64_t>& sizes, int axis = 0);
/// An array of `shape` filled with the 0-d (or broadcastable) value.
Var alloc(Var value, const ShapeVars& shape);
/// Zeros of a symbolic shape.
Var zeros(const ShapeVars& shape, DType dt);
/// Ones of a symbolic shape.
Var ones(const ShapeVars& shape, DType dt);
/// Zeros with x's shape and broadcastable pattern (and x's dtype unless dt is given).
Var zeros_like(Var x, std::optional<DType> dt = std::nullopt);
/// Ones with x's shape and broadcastable pattern (and x's dtype unless dt is given).
Var ones_like(Var x, std::optional<DType> dt = std::nullopt);
/// Theano's fill(model, value): value broadcast to model's shape.
Var fill(Var model, Var value);
/// numpy.arange(start, stop, step) of dtype dt.
Var arange(Var start, Var stop, Var step, DType dt);
/// numpy.arange(stop) as int64.
Var arange(int64_t stop);
/// An n x m matrix with ones on diagonal k.
Var eye(Var n, Var m, Var k, DType dt);
/// The n x n identity.
Var eye(int64_t n, DType dt);
/// numpy.tile with constant repetitions.
Var tile(Var x, const std::vector<int64_t>& reps);
/// numpy.repeat; axis nullopt flattens first.
Var repeat(Var x, Var repeats, std::optional<int> axis = std::nullopt);
/// numpy.repeat with a constant count; axis nullopt flattens first.
Var repeat(Var x, int64_t repeats, std::optional<int> axis = std::nullopt);

/// x with the broadcastable pattern `bc` (Theano's patternbroadcast); x itself when it already has it.
Var patternbroadcast(Var x, const std::vector<bool>& bc);
/// x with `axes` made broadcastable (checked at run time to have length 1).
Var addbroadcast(Var x, const std::vector<int>& axes);
/// x with `axes` made not broadcastable.
Var unbroadcast(Var x, const std::vector<int>& axes);
/// Drops the broadcastable axes of x (numpy.squeeze on the axes the type knows have length 1).
Var squeeze(Var x);
/// Inserts a broadcastable axis at `axis` (numpy.expand_dims; negative counts from the end of the result).
Var expand_dims(Var x, int axis);
/// Swaps two axes.
Var swapaxes(Var x, int a, int b);

/// numpy.roll: elements shifted by `shift` (symbolic 0-d integer) along axis, wrapping around;
/// the flattened array when axis is nullopt.
Var roll(Var x, Var shift, std::optional<int> axis = std::nullopt);
/// numpy.roll with a constant shift.
Var roll(Var x, int64_t shift, std::optional<int> axis = std::nullopt);
/// numpy.flip along one axis (a view with a negative stride).
Var flip(Var x, int axis);

/// 0-d int64 constant.
Var int_constant(int64_t v);

/// Sums `g` down to `target`'s type: over leading axes g has in excess and over axes where
/// target is broadcastable and g is not; the result has target's ndim and broadcastable pattern.
/// (The gradient of a broadcast.)
Var sum_to_type(Var g, const TensorType& target);

}  // namespace hypatia
