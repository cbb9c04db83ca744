// The rewrite pipeline: every phase, in the order it runs, with its tags, the modes that run it,
// whether it is opt-in, and the global pass or the rule families (in the order they are tried)
// that make it up. This list is the one place that says what runs when; the passes and families
// are in rewrite/passes.h, one file each. FAST_RUN runs every phase below, FAST_COMPILE merge1
// and canonicalize, NONE none; optimizer_including / optimizer_excluding add or remove phases by
// name or tag and rules by name (selected_phases, rewrite_graph in rewriter.cpp).
//
// Within a phase of local rules, a node is offered the rules that track its op type in the order
// listed here, then constant folding (which tracks every node); the first rule that returns a
// replacement wins, and the phase runs until no rule fires.
#include <initializer_list>
#include <vector>

#include "hypatia/rewrite/passes.h"

namespace hypatia::rewrite {
namespace {

/// The families' rules, one after the other.
std::vector<LocalRewrite> rules(std::initializer_list<std::vector<LocalRewrite>> families) {
  std::vector<LocalRewrite> r;
  for (const auto& f : families) r.insert(r.end(), f.begin(), f.end());
  return r;
}

}  // namespace

std::vector<RewritePhase> builtin_pipeline() {
  const std::vector<std::string> run_and_compile = {"FAST_RUN", "FAST_COMPILE"};
  const std::vector<std::string> run = {"FAST_RUN"};
  return {
      // One node per computation and one constant per value, before anything looks at the graph.
      {.name = "merge1",
       .tags = {"merge", "fast_run", "fast_compile"},
       .modes = run_and_compile,
       .opt_in = false,
       .global = merge_pass},
      // Canonical forms: what every later rule may assume.
      {.name = "canonicalize",
       .tags = {"canonicalize", "fast_run"},
       .modes = run_and_compile,
       .opt_in = false,
       .locals = rules({{constant_folding_rewrite()},
                        canonicalize_arith_rules(),
                        canonicalize_grad_rules(),
                        canonicalize_check_rules(),
                        canonicalize_shape_rules(),
                        canonicalize_subtensor_rules(),
                        canonicalize_ifelse_rules(),
                        scan_rules(),
                        canonicalize_reduce_rules()})},
      // canonicalize made equal computations out of different ones.
      {.name = "merge1.5", .tags = {"merge", "fast_run"}, .modes = run, .opt_in = false, .global = merge_pass},
      // Numerically stable forms of the canonical graph.
      {.name = "stabilize",
       .tags = {"stabilize", "fast_run"},
       .modes = run,
       .opt_in = false,
       .locals = rules({stabilize_rules(), stabilize_sqrt_sqr_rules(), linalg_rules(), {constant_folding_rewrite()}})},
      // Cheaper forms: x / c -> x * (1 / c) first, then the canonical identities again, sqrt(sqr x)
      // again (pow(pow(x, 2), 0.5) becomes sqrt(sqr x) here), the specializations, and the
      // scalar-fill and DimShuffle rules again.
      {.name = "specialize",
       .tags = {"specialize", "fast_run"},
       .modes = run,
       .opt_in = false,
       .locals = rules({specialize_div_rules(),
                        canonicalize_identity_rules(),
                        stabilize_sqrt_sqr_rules(),
                        specialize_rules(),
                        canonicalize_fill_rules(),
                        canonicalize_dimshuffle_rules(),
                        {constant_folding_rewrite()}})},
      // dot + z -> Gemm, Gemv, Ger.
      {.name = "blas", .tags = {"blas", "fast_run"}, .modes = run, .opt_in = false, .locals = blas_rules()},
      // Scans over the same steps become one loop (before save-mem, which then sees the merged
      // node's readers).
      {.name = "scan_merge", .tags = {"scan", "fast_run"}, .modes = run, .opt_in = false, .global = scan_merge_pass},
      // Scans whose states are read only at their last step keep no trace (after grad, which reads
      // traces, and after the canonical forms made x[-1] one Subtensor); IfElses on one condition
      // become one.
      {.name = "control_flow",
       .tags = {"scan", "ifelse", "fast_run"},
       .modes = run,
       .opt_in = false,
       .global = control_flow_pass},
      // The rewrites above made equal computations out of different ones; fusion groups the rest.
      {.name = "merge2", .tags = {"merge", "fast_run"}, .modes = run, .opt_in = false, .global = merge_pass},
      {.name = "elemwise_fusion", .tags = {"fusion", "fast_run"}, .modes = run, .opt_in = false, .global = fusion_pass},
      // Last: no rewrite after it may move a reader of an overwritten value.
      {.name = "inplace_elemwise",
       .tags = {"inplace", "fast_run"},
       .modes = run,
       .opt_in = false,
       .global = inplace_pass},
  };
}

}  // namespace hypatia::rewrite
