// The destroy handler: which values an in-place node may overwrite, and the order that makes it
// safe (every other reader of the overwritten value, or of a view of it, runs first).
//
// A node may overwrite its input V when
//  - V is computed in this call by a node that does not return a view, or V is a function input
//    the caller marked mutable, or V is a shared variable that this function updates with exactly
//    this node's result (read by nothing else) and the op can check its inputs before running
//    (Op::checks_runtime_inputs: every such node is checked before the first of them writes, and
//    they run last, so that a failing call changes no shared variable);
//  - neither V nor a view of V is an output of the function;
//  - the node reads V only once (not also through another input or a view);
//  - no other reader of V (or of a view of V) depends on the node's result, and the readers can all
//    run before it together with the other in-place nodes' constraints (no cycle).
#pragma once
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "hypatia/graph/fgraph.h"

namespace hypatia {

/// Why input `input` of `n` may not be overwritten (empty: it may). Does not check the ordering
/// constraints between in-place nodes (destroy_order does).
std::string destroy_refusal(const FunctionGraph& fg, const Apply& n, int input);

/// Whether `n` overwrites a shared variable.
bool destroys_shared(const Apply& n);

/// The variables that share v's memory through view_map (v included).
std::vector<Var> views_of(const FunctionGraph& fg, const Var& v);

/// fg's nodes, inputs before users, every reader of a destroyed value (or of a view of it) before
/// the node that destroys it, and nodes overwriting shared variables last. `extra`: one more
/// (node, input) pair to treat as destroyed (to test a candidate rewrite). Nothing when the
/// constraints form a cycle.
/// `recorded` (a device backend that records runs of its kernels: Backend::records) groups the
/// nodes it accepts: where the constraints allow, the other nodes that depend on none of them
/// (the host's shape arithmetic) come first and those that do (transfers back to the host) as late
/// as they can, so that the recorded nodes form few long runs.
std::optional<std::vector<std::shared_ptr<Apply>>> destroy_order(
    const FunctionGraph& fg, std::pair<const Apply*, int> extra = {nullptr, -1},
    const std::function<bool(const Apply&)>& recorded = {});

/// Whether destroy_order(fg, {&n, input}) would find an order, given that destroy_order(fg) does:
/// the new constraints (every other reader of the value, or of a view of it, before n) close a
/// cycle only if n already reaches one of those readers. One search from n along the reads and the
/// existing constraints, where destroy_order rebuilds and sorts the whole graph (the in-place pass
/// asks this for every candidate). With debug_checks on, also runs destroy_order and throws
/// InternalError where they disagree.
bool destroy_keeps_order(const FunctionGraph& fg, const Apply& n, int input);

}  // namespace hypatia
