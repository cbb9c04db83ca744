// The graph optimizer: local rewrites indexed by the op types they match, global passes, a
// worklist driver that revisits only what the last change touched, and one ordered pipeline per
// mode (FAST_RUN, FAST_COMPILE, NONE) filtered by optimizer_including / optimizer_excluding.
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
  double position;  // pipeline order
  GlobalRewriteFn global;
  std::vector<LocalRewrite> locals;
  /// Whether the phase runs only when named in optimizer_including.
  bool opt_in = false;
};

/// Registers a phase (kept sorted by position). Names must be unique.
void register_rewrite_phase(RewritePhase phase);
/// Adds a local rewrite to the phase named `phase` (created by register_rewrite_phase).
void register_local_rewrite(const std::string& phase, LocalRewrite rw);
/// The phases, in pipeline order (registers the built-in ones on first use).
const std::vector<RewritePhase>& rewrite_phases();

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

/// The options config() and `mode` (empty: config().mode) give.
RewriteOptions rewrite_options_from_config(const std::string& mode = "");

/// Runs the pipeline of opts.mode on fg.
RewriteStats rewrite_graph(FunctionGraph& fg, const RewriteOptions& opts);

/// Runs `rewrites` on fg's nodes until none fires (the fixed-point driver). Returns the number
/// of rewrites applied.
int apply_local_rewrites(FunctionGraph& fg, const std::vector<const LocalRewrite*>& rewrites, bool print = false,
                         RewriteStats* stats = nullptr);

namespace rewrite {
/// Registration of each family (called once by rewrite_phases()).
void register_basic();
void register_blas();
void register_fusion();
void register_inplace();
/// Rules written in the pattern form (rewrite/pattern.h), added to the phases above.
void register_patterns();
/// Canonicalize / specialize rules on shapes, subtensors, reductions and mul/div forms.
void register_canonical_extra();
}  // namespace rewrite

}  // namespace hypatia
