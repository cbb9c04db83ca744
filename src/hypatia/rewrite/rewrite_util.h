// Helpers shared by the rewrite families.
#pragma once
#include <optional>
#include <vector>

#include "hypatia/ops/elemwise.h"
#include "hypatia/rewrite/rewriter.h"

namespace hypatia::rewrite {

/// The node's Elemwise op when it is one (and not in place), else null.
const Elemwise* elemwise_op(const Apply* n);
/// v's owner's Elemwise op when it applies scalar op k (not in place), else null.
const Elemwise* elemwise_of(const Var& v, ScalarOpKind k);
/// The value of a constant whose elements are all equal (looking through DimShuffles).
std::optional<double> scalar_constant(const Var& v);
/// x made to have type t (cast, or marked broadcastable); null when x would need broadcasting.
Var as_type(Var x, const TensorType& t);
/// {v}, or nothing when v is null.
std::optional<std::vector<Var>> one(Var v);
/// A constant of exactly type t.
Var typed_constant(NDArray value, const TensorType& t);
/// The constant folding rule (shared by several phases).
LocalRewrite constant_folding_rewrite();

}  // namespace hypatia::rewrite
