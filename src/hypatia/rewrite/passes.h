// The global passes and local rule families the rewrite pipeline is made of, one file each, named
// by what it does. Each file's opening comment states what its rules expect (the phase they run
// in, the graph they look at) and guarantee. Only pipeline.cpp puts them together: it says which
// phase runs which pass or which families, in which order.
//
// Every rule replaces a value by one of exactly its type (replace_by_rewrite checks it) that
// computes the same values wherever the replaced graph runs without an error, or more accurate
// ones (stabilize). Within a phase, a node is offered the rules that track its op type in list
// order, then the rules that track every node (constant folding); the first that returns a
// replacement wins, so the order of the rules that track one op type is part of what a phase does.
#pragma once
#include <vector>

#include "hypatia/rewrite/rewriter.h"

namespace hypatia::rewrite {

// merge.cpp
/// One node per (op, inputs) and one constant per value.
bool merge_pass(FunctionGraph& fg);

// constant_folding.cpp
/// A node whose inputs are all constants -> its value, computed by the target's kernels.
LocalRewrite constant_folding_rewrite();

// canonicalize_arith.cpp
/// x + 0, x - 0, x / 1, neg(neg x), x - x, x * 1, x * 0, (a / s) * s, cast to the same dtype
/// (the first rules of canonicalize_arith_rules; specialize runs them again).
std::vector<LocalRewrite> canonicalize_identity_rules();
/// The identities, then x - (-y), x + (-y), useless switches and elementwise ops applied to one
/// variable twice, mul/div cancellation.
std::vector<LocalRewrite> canonicalize_arith_rules();

// canonicalize_shape.cpp
/// Identity and chained DimShuffles.
std::vector<LocalRewrite> canonicalize_dimshuffle_rules();
/// Scalar fills (alloc of an all-broadcastable value) read by elementwise ops.
std::vector<LocalRewrite> canonicalize_fill_rules();
/// The DimShuffle rules, Shape_i through infer_shape, reshape chains and useless reshapes, alloc
/// of alloc and useless allocs, then the fill rules.
std::vector<LocalRewrite> canonicalize_shape_rules();

// canonicalize_grad.cpp
/// DisconnectedGrad, GradClip and GradScale (identities but for T.grad) -> their input.
std::vector<LocalRewrite> canonicalize_grad_rules();

// canonicalize_checks.cpp
/// Assert's constant true conditions and SpecifyShape's statically known lengths -> dropped.
std::vector<LocalRewrite> canonicalize_check_rules();

// canonicalize_subtensor.cpp
/// Subtensor of Subtensor -> one Subtensor.
std::vector<LocalRewrite> canonicalize_subtensor_rules();

// canonicalize_ifelse.cpp
/// IfElse with a constant condition -> the branch it takes; with identical branches -> the branch;
/// a branch that is an IfElse on the same condition -> its branch; the same elementwise op on both
/// branches -> applied once after the choice.
std::vector<LocalRewrite> canonicalize_ifelse_rules();
/// IfElse nodes on one condition -> one IfElse.
bool ifelse_merge_pass(FunctionGraph& fg);

// scan.cpp
/// Scan: loop-invariant and sequence-only work moved out of the body; ScanGrad: only the
/// gradients the function reads are computed per step.
std::vector<LocalRewrite> scan_rules();
/// States read only at their last step keep no trace.
bool scan_save_mem_pass(FunctionGraph& fg);
/// Merges Scan nodes of the same n_steps and truncation, without until, none depending on
/// another, into one loop (Theano's scan merge; phase scan_merge).
bool scan_merge_pass(FunctionGraph& fg);
/// The control-flow pass: scan_save_mem_pass, then ifelse_merge_pass.
bool control_flow_pass(FunctionGraph& fg);

// canonicalize_reduce.cpp
/// Reductions over no axes, of added broadcastable dims, of reductions, of c * x, of neg(x).
std::vector<LocalRewrite> canonicalize_reduce_rules();

// linalg.cpp
/// dot(inv(A), b) -> solve(A, b) (either side), a general solve with a Cholesky factor -> a
/// triangular solve, inv(inv(A)) -> A.
std::vector<LocalRewrite> linalg_rules();

// stabilize.cpp
/// Numerically stable forms (log1p, expm1, softplus, log_softmax, logsumexp, ...).
std::vector<LocalRewrite> stabilize_rules();
/// sqrt(sqr x) -> abs(x) (stabilize runs it after stabilize_rules, specialize again).
std::vector<LocalRewrite> stabilize_sqrt_sqr_rules();

// specialize.cpp
/// x / c -> x * (1 / c).
std::vector<LocalRewrite> specialize_div_rules();
/// pow by 2, 1, 0.5, -1; -1 * x, x * x, 1 / x; sum(x * x) -> sum(sqr x).
std::vector<LocalRewrite> specialize_rules();

// blas.cpp
/// dot + z -> Gemm, Gemv, Ger.
std::vector<LocalRewrite> blas_rules();

// fusion.cpp
/// Elementwise fusion (Composite, MultiComposite) and fused reductions (CompositeReduce).
bool fusion_pass(FunctionGraph& fg);

// inplace.cpp
/// Nodes that overwrite an input the destroy handler allows.
bool inplace_pass(FunctionGraph& fg);

// pipeline.cpp
/// The built-in pipeline: every phase, in the order it runs.
std::vector<RewritePhase> builtin_pipeline();

}  // namespace hypatia::rewrite
