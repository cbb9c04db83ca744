// FunctionGraph: a graph with fixed inputs and outputs that rewrites can edit.
#pragma once
#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "hypatia/graph/graph.h"

namespace hypatia {

/// A use of a variable: input `index` of `node`, or output `index` of the graph when node is null.
struct Client {
  Apply* node;
  int index;
};

/// Copies the graph between `inputs` and `outputs`: every Apply is new; leaves (inputs,
/// constants, shared variables) are kept. `replace` maps variables to replacements whose own
/// graphs are copied too (givens). Returns the new outputs; `memo` (optional) receives old -> new.
std::vector<Var> clone_graph(const std::vector<Var>& outputs, const std::vector<std::pair<Var, Var>>& replace = {},
                             std::unordered_map<const Variable*, Var>* memo = nullptr);

/// The union of several node traces ("file:line" entries separated by ", ") without repeats or
/// empty entries, in source order (by file, then line), at most 32 entries: the trace of a node
/// that replaced those nodes.
std::string merge_traces(const std::vector<std::string>& traces);

/// Every Apply between the leaves and `outputs`, inputs before users.
std::vector<std::shared_ptr<Apply>> toposort(const std::vector<Var>& outputs);

/// Receives a FunctionGraph's changes (the rewrite driver's worklist, the destroy handler).
class GraphListener {
 public:
  virtual ~GraphListener() = default;
  /// `node` entered the graph (its inputs are already in it).
  virtual void on_import(Apply* node) {}
  /// `node` left the graph (none of its outputs has a client any more).
  virtual void on_prune(Apply* node) {}
  /// Input `index` of `node` (or graph output `index` when node is null) changed from old to new.
  virtual void on_change_input(Apply* node, int index, const Var& old_var, const Var& new_var) {}
};

/// One replace() of a FunctionGraph: old_var's uses now read new_var, because of `reason`.
struct Replacement {
  Var old_var, new_var;
  std::string reason;
};

/// A graph with fixed inputs and outputs. It owns its Apply nodes (built by clone_graph unless
/// clone is false) and keeps, for every variable, the list of its clients. Rewrites edit it with
/// replace(), which updates clients incrementally: nodes of the replacement enter the graph and
/// nodes left without clients leave it.
class FunctionGraph {
 public:
  FunctionGraph(std::vector<Var> inputs, std::vector<Var> outputs, bool clone = true);

  const std::vector<Var>& inputs() const { return inputs_; }
  const std::vector<Var>& outputs() const { return outputs_; }
  /// Uses of v (empty when v is not in the graph).
  const std::vector<Client>& clients(const Variable* v) const;
  /// Apply nodes, inputs before users (deterministic order).
  std::vector<std::shared_ptr<Apply>> toposort() const;
  /// Leaves that are not inputs: constants and shared variables (and free variables, which
  /// function() reports as missing inputs).
  std::vector<Var> orphans() const;
  /// Replaces every use of `old_var` by `new_var`. Their types must be equal; throws TypeError
  /// naming `reason` otherwise. The same as replace_all with one pair, the new nodes keeping
  /// their own traces (a graph edited by hand).
  void replace(const Var& old_var, const Var& new_var, const std::string& reason = "");
  /// Replaces each pair's old variable by its new one, in order, as one change made for `reason`
  /// (the outputs of one fused node, say). Every type is checked before anything changes. With
  /// `inherit_traces` (the rewrites' replace_by_rewrite), the nodes the change brings into the
  /// graph were built by a rewrite, so where they were created says nothing to the user: they
  /// take instead the user lines (Apply::trace) of the nodes they replace, the owners of the old
  /// variables and every node the change leaves unused (when any of those has one; see
  /// merge_traces).
  void replace_all(const std::vector<std::pair<Var, Var>>& pairs, const std::string& reason = "",
                   bool inherit_traces = false);
  /// Makes input `index` of `node` (a node of this graph; null: output `index` of the graph) read
  /// `new_var` instead, its other readers unchanged (placement gives one reader a transfer).
  /// The types must be equal (TypeError otherwise); a node left unused is pruned.
  void change_input(Apply* node, int index, const Var& new_var);
  size_t num_nodes() const { return nodes_.size(); }
  /// Whether pred holds for some node (visited in no particular order; cheaper than toposort).
  template <class Pred>
  bool any_node(Pred&& pred) const {
    for (const auto& [node, owner] : nodes_)
      if (pred(*node)) return true;
    return false;
  }
  /// Whether `node` is part of the graph now.
  bool contains(const Apply* node) const { return nodes_.count(node) > 0; }
  /// The graph's owning handle of `node` (null when it is not in the graph).
  std::shared_ptr<Apply> node_ptr(const Apply* node) const;
  /// Whether some client of some output of `node` exists (false: the node is dead).
  bool has_clients(const Apply* node) const;
  void add_listener(GraphListener* l) { listeners_.push_back(l); }
  /// For the destroy handler (rewrite/destroy.h): the shared variables the function updates, each
  /// with the index of the graph output that holds its new value, and the inputs the caller lets
  /// the function overwrite (In::mutable_). Set by function() before rewriting.
  std::unordered_map<const Variable*, int> update_outputs;
  std::unordered_set<const Variable*> mutable_inputs;
  /// When set, every replace() is appended to it (DebugMode checks each one's values).
  std::vector<Replacement>* replace_log = nullptr;
  void remove_listener(GraphListener* l);

 private:
  void import_var(const Var& v);
  void prune(Apply* node);
  void replace_one(const Var& old_var, const Var& new_var, const std::string& reason);
  /// While replace_all runs: the nodes imported and the traces of the nodes pruned.
  std::vector<std::shared_ptr<Apply>>* imported_sink_ = nullptr;
  std::vector<std::string>* pruned_traces_sink_ = nullptr;
  std::vector<Var> inputs_, outputs_;
  std::unordered_map<const Apply*, std::shared_ptr<Apply>> nodes_;
  std::unordered_map<const Variable*, std::vector<Client>> clients_;
  std::vector<GraphListener*> listeners_;
};

}  // namespace hypatia
