// Helpers shared by the rewrite passes and rule families (rewrite/passes.h): reading a node's
// elementwise op, constant values and shapes, and making a replacement of the exact type of what
// it replaces.
#pragma once
#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <vector>

#include "hypatia/graph/fgraph.h"
#include "hypatia/ops/elemwise.h"
#include "hypatia/ops/shape.h"
#include "hypatia/rewrite/rewriter.h"

namespace hypatia::rewrite {

// ---------------------------------------------------------------------------------------------
// Ops and constants

/// The node's Elemwise op when it is one (and not in place), else null.
const Elemwise* elemwise_op(const Apply* n);
/// v's owner's Elemwise op when it applies scalar op k (not in place), else null.
const Elemwise* elemwise_of(const Var& v, ScalarOpKind k);
/// The value of a constant whose elements are all equal (looking through DimShuffles).
std::optional<double> scalar_constant(const Var& v);
/// Whether v is a constant whose elements all equal `value` (looking through DimShuffles).
bool is_constant_value(const Var& v, double value);
/// Whether every dim of v is broadcastable (a scalar, or one made to look like an array).
bool all_broadcastable(const Var& v);
/// The value of a 0-d constant, or nullopt.
std::optional<int64_t> cval(const Var& v);

// ---------------------------------------------------------------------------------------------
// Replacements of the exact type

/// x made to have type t (cast, or marked broadcastable); null when x would need broadcasting.
Var as_type(Var x, const TensorType& t);
/// x, whose shape is t's, made to have type t exactly (cast, broadcastable flags set or dropped).
Var retype(Var x, const TensorType& t);
/// {v}, or nothing when v is null.
std::optional<std::vector<Var>> one(Var v);
/// A constant of exactly type t.
Var typed_constant(NDArray value, const TensorType& t);
/// The output shape of broadcasting node n (its inputs' shapes through broadcast_infer_shape).
ShapeVars output_shape(const Apply& n);
/// x broadcast to the shape and type of n's output (an Alloc where x is smaller); null when impossible.
Var broadcast_to_output(Var x, const Apply& n);
/// An array of n's output shape and type filled with value.
Var filled_output(double value, const Apply& n);

// ---------------------------------------------------------------------------------------------
// Shapes

/// A shape variable followed through Shape_i of its producers' infer_shape (the shape feature,
/// without editing the graph).
Var resolve_dim(Var d);
/// Whether two 0-d shape variables provably hold the same value.
bool same_dim(const Var& a, const Var& b, int depth = 4);
/// The length of x's axis when it is known statically.
std::optional<int64_t> static_dim(const Var& x, int axis);

// ---------------------------------------------------------------------------------------------
// Merging nodes

/// The nodes of fg that `key` gives a key (nullopt: left out), grouped by key in topological
/// order, each group kept to the nodes that read no output of an earlier member (directly or
/// not), so that merging a group into one node makes no cycle. Groups of one are dropped.
template <class Key, class KeyFn>
std::vector<std::vector<Apply*>> mergeable_groups(FunctionGraph& fg, KeyFn key) {
  std::map<Key, size_t> slot;
  std::vector<std::vector<Apply*>> by_key;
  for (const auto& n : fg.toposort())
    if (std::optional<Key> k = key(*n)) {
      auto [it, fresh] = slot.emplace(*k, by_key.size());
      if (fresh) by_key.emplace_back();
      by_key[it->second].push_back(n.get());
    }
  std::vector<std::vector<Apply*>> groups;
  for (const auto& nodes : by_key) {
    // In topological order a node cannot depend on a later one: a node joins unless it depends
    // on one already in the group.
    std::vector<Apply*> group;
    for (Apply* m : nodes) {
      bool depends = false;
      for (const auto& anc : toposort(m->inputs))
        depends = depends || std::find(group.begin(), group.end(), anc.get()) != group.end();
      if (!depends) group.push_back(m);
    }
    if (group.size() > 1) groups.push_back(std::move(group));
  }
  return groups;
}

}  // namespace hypatia::rewrite
