// RewriteTarget: what the rewrite passes need to know of the backend that will run the graph,
// given to them by compile/ (from the backend's description) so that no rewrite names a backend.
#pragma once
#include <functional>
#include <span>
#include <string>

#include "hypatia/core/ndarray.h"
#include "hypatia/graph/graph.h"
#include "hypatia/ops/elemwise.h"

namespace hypatia {

struct RewriteTarget {
  /// The backend's name (for messages).
  std::string name;
  /// Runs `node` once on the given values (constant folding); throws hypatia::Error on failure.
  /// Null: nothing is folded.
  std::function<void(const Apply& node, std::span<NDArray* const> in, std::span<NDArray* const> out)> evaluate;
  /// Whether the backend's fused elementwise kernel has a loop for `op` computing in `compute`
  /// (and writing that dtype). Null: nothing is fused.
  std::function<bool(const Elemwise& op, DType compute)> fusable;
  /// The most inputs a fused elementwise node may read, and the most outputs it may write.
  int max_fusion_inputs = 0;
  int max_fusion_outputs = 0;
};

/// The target of the rewrite_graph() run on this thread (null outside one, or when the caller gave
/// none): the passes that depend on the backend (constant folding, fusion) read it.
const RewriteTarget* current_rewrite_target();

/// Makes `t` the current target for its lifetime (rewrite_graph does this; tests that drive
/// rewrites directly may too).
class RewriteTargetScope {
 public:
  explicit RewriteTargetScope(const RewriteTarget* t);
  ~RewriteTargetScope();
  RewriteTargetScope(const RewriteTargetScope&) = delete;
  RewriteTargetScope& operator=(const RewriteTargetScope&) = delete;

 private:
  const RewriteTarget* saved_;
};

}  // namespace hypatia
