// The graph optimizer: local rewrites indexed by the op types they match, global passes, a
// worklist driver that revisits only what the last change touched, and one ordered pipeline
// (rewrite/pipeline.cpp) whose phases each mode (FAST_RUN, FAST_COMPILE, NONE) selects, filtered
// by optimizer_including / optimizer_excluding.
#pragma once
#include <functional>
#include <optional>
#include <string>
#include <typeindex>
#include <vector>

#include "hypatia/graph/fgraph.h"
#include "hypatia/rewrite/target.h"

namespace hypatia {

/// A local rewrite: looks at one node and returns replacements for its outputs (same count,
/// same types; a null entry keeps that output) or nothing.
using LocalRewriteFn = std::function<std::optional<std::vector<Var>>(FunctionGraph&, Apply&)>;
/// A global pass: edits the whole graph; returns whether it changed anything.
using GlobalRewriteFn = std::function<bool(FunctionGraph&)>;

struct LocalRewrite {
  std::string name;
  /// Op types it can match (empty: every node).
  std::vector<std::type_index> tracks;
  LocalRewriteFn fn;
};

/// One step of a pipeline: a global pass, or a group of local rewrites run to a fixed point.
struct RewritePhase {
  std::string name;
  /// Tags for optimizer_including/excluding ("canonicalize", "stabilize", "fast_run" …).
  std::vector<std::string> tags;
  /// Modes whose pipeline runs this phase ("FAST_RUN", "FAST_COMPILE").
  std::vector<std::string> modes;
  /// Whether the phase runs only when named in optimizer_including.
  bool opt_in = false;
  GlobalRewriteFn global;
  /// Tried in this order on a node of an op type they track, then those that track every node.
  std::vector<LocalRewrite> locals;
};

/// The phases, in pipeline order: the built-in pipeline (rewrite/pipeline.cpp, the one list of
/// what runs when), with any phase and rewrite added by the two functions below.
const std::vector<RewritePhase>& rewrite_phases();
/// Adds a phase right after the phase named `after` (ValueError when there is none, or when a
/// phase is already named phase.name). For code outside the built-in pipeline (tests, plugins).
void register_rewrite_phase(RewritePhase phase, const std::string& after);
/// Adds a local rewrite at the end of the phase named `phase` (ValueError when there is none).
void register_local_rewrite(const std::string& phase, LocalRewrite rw);

struct RewriteOptions {
  /// "FAST_RUN", "FAST_COMPILE" or "NONE".
  std::string mode = "FAST_RUN";
  /// Names or tags to add / remove (':'-separated lists, like Theano's flags).
  std::string including, excluding;
  /// Print each rewrite that fires (config().print_rewrites).
  bool print = false;
  /// The backend the graph is rewritten for (constant folding runs its kernels, fusion obeys its
  /// limits); null: neither runs.
  const RewriteTarget* target = nullptr;
};

/// What a pipeline run did.
struct RewriteStats {
  int applied = 0;
  int nodes_before = 0, nodes_after = 0;
  double seconds = 0;
  /// Seconds spent in each phase, in pipeline order.
  std::vector<std::pair<std::string, double>> phase_seconds;
  /// Count of each rewrite that fired, by name.
  std::vector<std::pair<std::string, int>> by_name;
};

/// How every rewrite (local or global) edits a graph: replaces each pair's old variable by its new
/// one, as one change named after `rewrite` (FunctionGraph::replace_all: the nodes it brings in
/// take the user lines of the nodes they replace). A rewrite may only replace a variable by one of
/// exactly its type, the same dtype, ndim and broadcastable pattern; anything else is a bug in
/// the rewrite and throws InternalError naming it, before the graph changes. (Equal types do not
/// make equal shapes: a rewrite must also keep every input's broadcasting, which the property
/// tests check by values.)
void replace_by_rewrite(FunctionGraph& fg, const std::vector<std::pair<Var, Var>>& pairs, const std::string& rewrite);

/// The phases rewrite_graph runs for opts, in order: those of opts.mode that are not opt-in, plus
/// those opts.including names (by name or tag; in mode NONE only those), minus those
/// opts.excluding names. A name that is no phase, tag or rewrite is ignored, as in Theano.
std::vector<const RewritePhase*> selected_phases(const RewriteOptions& opts);

/// The options config() and `mode` (empty: config().mode) give.
RewriteOptions rewrite_options_from_config(const std::string& mode = "");

/// Runs the pipeline of opts.mode on fg.
RewriteStats rewrite_graph(FunctionGraph& fg, const RewriteOptions& opts);

/// Runs `rewrites` on fg's nodes until none fires (the fixed-point driver). Returns the number
/// of rewrites applied.
int apply_local_rewrites(FunctionGraph& fg, const std::vector<const LocalRewrite*>& rewrites, bool print = false,
                         RewriteStats* stats = nullptr);

}  // namespace hypatia
