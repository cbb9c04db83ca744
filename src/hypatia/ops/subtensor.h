// Indexing ops (Theano's Subtensor, AdvancedSubtensor, IncSubtensor, AdvancedIncSubtensor) and
// the index spec C++ users write: subtensor(x, {sl(1, 3), idx, newaxis(), 0}) is x[1:3, idx, None, 0].
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "hypatia/graph/graph.h"

namespace hypatia {

/// An integer index or a slice bound: absent (None), a constant, or a 0-d integer variable.
struct IndexBound {
  std::optional<int64_t> value;
  Var var;
  IndexBound() = default;
  IndexBound(std::nullopt_t) {}             // NOLINT(google-explicit-constructor)
  IndexBound(int64_t v) : value(v) {}       // NOLINT(google-explicit-constructor)
  IndexBound(int v) : value(v) {}           // NOLINT(google-explicit-constructor)
  IndexBound(Var v) : var(std::move(v)) {}  // NOLINT(google-explicit-constructor)
  bool present() const { return value.has_value() || var != nullptr; }
};

/// One entry of an index expression (numpy semantics).
struct Index {
  enum class Kind : uint8_t {
    Int,       ///< x[i]: drops the axis (i a constant or 0-d integer variable; negative counts from the end)
    Slice,     ///< x[start:stop:step]: keeps the axis (a view)
    NewAxis,   ///< x[None]: inserts a length-1 axis
    Ellipsis,  ///< x[...]: as many full slices as needed
    Array,     ///< x[arr]: an integer array (gathers) or a boolean mask (over as many axes as its ndim)
  };
  Kind kind = Kind::Slice;
  IndexBound i, start, stop, step;
  Var array;

  Index() = default;
  Index(int64_t v) : kind(Kind::Int), i(v) {}  // NOLINT(google-explicit-constructor)
  Index(int v) : kind(Kind::Int), i(v) {}      // NOLINT(google-explicit-constructor)
  /// A 0-d integer variable is an Int index; an integer or boolean array of any ndim is an Array.
  Index(Var v);  // NOLINT(google-explicit-constructor)
};

/// The slice start:stop:step (each bound may be absent, constant or symbolic): x[sl(1, 3)] is x[1:3].
Index sl(IndexBound start = {}, IndexBound stop = {}, IndexBound step = {});
/// The full slice ':'.
inline Index all() { return sl(); }
/// numpy.newaxis (None).
Index newaxis();
/// Ellipsis ('...').
Index ellipsis();

/// How an op stores one index entry: constants in the op, symbolic parts as inputs (in order).
struct IndexEntry {
  enum class Kind : uint8_t { Int, Slice, NewAxis, IntArray, BoolArray };
  /// How one bound is given: absent, a constant held in `value`, or the next index input.
  enum class Bound : uint8_t { None, Const, Input };
  Kind kind = Kind::Slice;
  /// Int: a is the index. Slice: a, b, c are start, stop, step. Arrays: always one input.
  Bound a = Bound::None, b = Bound::None, c = Bound::None;
  int64_t av = 0, bv = 0, cv = 0;
  auto key() const { return std::make_tuple(kind, a, av, b, bv, c, cv); }
  bool operator==(const IndexEntry& o) const { return key() == o.key(); }
};
/// The index entries of an op; axes after the last entry are taken whole.
using IndexSpec = std::vector<IndexEntry>;
/// Hashable, comparable form of a spec (for props()).
std::vector<
    std::tuple<IndexEntry::Kind, IndexEntry::Bound, int64_t, IndexEntry::Bound, int64_t, IndexEntry::Bound, int64_t>>
index_spec_key(const IndexSpec& spec);
/// "1:3:, int64" as in Theano's op names.
std::string index_spec_str(const IndexSpec& spec);
/// Whether `node` (an AdvancedSubtensor or advanced IncSubtensor) indexes by integer vectors on
/// its leading axes only: `spec` k >= 1 integer-array entries, inputs first.. each an integer
/// vector (the indexing a device backend runs with checks on the device).
bool indexes_by_leading_vectors(const Apply& node, const IndexSpec& spec, size_t first);

/// Theano's Subtensor: basic indexing (Int, Slice, NewAxis entries). Inputs: x, then the
/// symbolic index scalars in spec order. The output is a view of x.
class Subtensor : public OpWithProps<Subtensor> {
 public:
  IndexSpec spec;
  explicit Subtensor(IndexSpec s) : spec(std::move(s)) {}
  auto props() const { return std::make_tuple(index_spec_key(spec)); }
  std::string name() const override;  // "Subtensor{1:3:, int64}"
  std::vector<TensorType> make_output_types(const std::vector<Var>& inputs) const override;
  std::vector<ShapeVars> infer_shape(const Apply& node, const std::vector<ShapeVars>& in) const override;
  std::vector<Var> grad(const Apply& node, const std::vector<Var>& output_grads) const override;
  std::vector<Var> rop(const Apply& node, const std::vector<Var>& eval_points) const override;
  std::vector<std::vector<bool>> connection_pattern(const Apply& node) const override;
  AliasMap view_map() const override { return {{0}}; }
};

/// Theano's AdvancedSubtensor (numpy advanced indexing): the spec holds at least one integer or
/// boolean array; integer arrays (and Int entries, as 0-d arrays) broadcast together; the
/// broadcast dims replace the indexed axes when the array entries are adjacent, else they come
/// first. Inputs: x, then the index inputs in spec order. The output is a copy.
class AdvancedSubtensor : public OpWithProps<AdvancedSubtensor> {
 public:
  IndexSpec spec;
  explicit AdvancedSubtensor(IndexSpec s) : spec(std::move(s)) {}
  auto props() const { return std::make_tuple(index_spec_key(spec)); }
  std::string name() const override;  // "AdvancedSubtensor{int64[], ::}"
  std::vector<TensorType> make_output_types(const std::vector<Var>& inputs) const override;
  std::vector<ShapeVars> infer_shape(const Apply& node, const std::vector<ShapeVars>& in) const override;
  std::vector<Var> grad(const Apply& node, const std::vector<Var>& output_grads) const override;
  std::vector<Var> rop(const Apply& node, const std::vector<Var>& eval_points) const override;
  std::vector<std::vector<bool>> connection_pattern(const Apply& node) const override;
};

/// Theano's IncSubtensor (basic spec) and AdvancedIncSubtensor (`advanced`: the spec has arrays).
/// Inputs: x, y, then the index inputs. The output is x with x[index] set to y
/// (set_instead_of_inc) or incremented by y (repeated advanced indices accumulate); y broadcasts
/// to the indexed region. Without `inplace` the output is a copy of x; with it, the output
/// overwrites x's buffer (destroy_map {0: [0]}).
class IncSubtensor : public OpWithProps<IncSubtensor> {
 public:
  IndexSpec spec;
  bool set_instead_of_inc = false;
  bool inplace = false;
  bool advanced = false;
  IncSubtensor(IndexSpec s, bool set, bool inplace_ = false);
  auto props() const { return std::make_tuple(index_spec_key(spec), set_instead_of_inc, inplace); }
  /// "IncSubtensor{Set;1:3:}", "IncSubtensor{InplaceInc;::}", "AdvancedIncSubtensor{Inc;int64[]}".
  std::string name() const override;
  std::vector<TensorType> make_output_types(const std::vector<Var>& inputs) const override;
  std::vector<ShapeVars> infer_shape(const Apply& node, const std::vector<ShapeVars>& in) const override;
  std::vector<Var> grad(const Apply& node, const std::vector<Var>& output_grads) const override;
  std::vector<Var> rop(const Apply& node, const std::vector<Var>& eval_points) const override;
  std::vector<std::vector<bool>> connection_pattern(const Apply& node) const override;
  AliasMap destroy_map() const override;
};

/// x[index] with numpy semantics: a Subtensor (view) for basic indices, else an AdvancedSubtensor.
/// Throws IndexError for too many indices or an out-of-range constant index.
Var subtensor(Var x, const std::vector<Index>& index);
/// x[i] along the first axis.
Var subtensor(Var x, int64_t i);
/// Theano's set_subtensor(x[index], y): `indexed` must be the output of subtensor(); returns x
/// with the region replaced by y (broadcast).
Var set_subtensor(Var indexed, Var y);
/// Theano's inc_subtensor(x[index], y): x with y added to the region (repeated indices accumulate).
Var inc_subtensor(Var indexed, Var y);
/// numpy.take(a, indices, axis): integer indices gathered along axis (a flattened when nullopt).
Var take(Var a, Var indices, std::optional<int> axis = std::nullopt);

}  // namespace hypatia
