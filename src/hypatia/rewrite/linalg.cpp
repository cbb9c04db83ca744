// Linear algebra rewrites (phase stabilize; PyTensor's inv_as_solve, tag_solve_triangular and
// the inverse of an inverse). Local rules on Dot and Linalg nodes. Guarantees: each replacement
// has the replaced value's exact type and computes the same value, more accurately and with less
// work: a product with an explicit inverse becomes a solve (one LU, no inverse formed), a general
// solve with a Cholesky factor (exactly triangular: the kernel zeroes the other triangle) becomes
// a triangular one, and inv(inv(A)) is A (where the replaced graph runs without a singular-matrix
// error). PyTensor's local_det_chol (det(X) -> prod(diag(cholesky(X)))^2 when the graph has the
// factor) is left out: the factor reads one triangle of X, so for a non-symmetric X it is not
// det(X).
#include "hypatia/ops/linalg.h"

#include <optional>
#include <vector>

#include "hypatia/ops/blas.h"
#include "hypatia/ops/elemwise.h"
#include "hypatia/ops/reduce.h"
#include "hypatia/ops/shape.h"
#include "hypatia/rewrite/passes.h"
#include "hypatia/rewrite/rewrite_util.h"

namespace hypatia::rewrite {
namespace {

const Linalg* linalg_of(const Var& v, LinalgKind k) {
  if (!v->owner) return nullptr;
  const auto* op = dynamic_cast<const Linalg*>(v->owner->op.get());
  return op && op->kind == k ? op : nullptr;
}

/// Whether v is the transpose (DimShuffle{1,0}) of a matrix; sets `inner` to it.
bool is_transpose(const Var& v, Var& inner) {
  if (!v->owner || typeid(*v->owner->op) != typeid(DimShuffle)) return false;
  const auto& ds = static_cast<const DimShuffle&>(*v->owner->op);
  if (ds.pattern != std::vector<int>{1, 0}) return false;
  inner = v->owner->inputs[0];
  return true;
}

// dot(inv(A), b) -> solve(A, b); dot(b, inv(A)) -> solve(A^T, b^T)^T (a vector b: solve(A^T, b)).
std::optional<std::vector<Var>> inv_as_solve(FunctionGraph&, Apply& n) {
  const Var x = n.inputs[0], y = n.inputs[1];
  const TensorType& out = n.output_ptr(0)->type;
  if (x->ndim() == 2 && linalg_of(x, LinalgKind::Inverse) && (y->ndim() == 1 || y->ndim() == 2) && is_float(y->dtype()))
    return one(retype(cast(solve(x->owner->inputs[0], y), out.dtype), out));
  if (y->ndim() == 2 && linalg_of(y, LinalgKind::Inverse) && (x->ndim() == 1 || x->ndim() == 2) &&
      is_float(x->dtype())) {
    Var at = transpose(y->owner->inputs[0]);
    Var r = x->ndim() == 1 ? solve(at, x) : transpose(solve(at, transpose(x)));
    return one(retype(cast(r, out.dtype), out));
  }
  return std::nullopt;
}

// solve{general}(L, b) with L a Cholesky factor (or its transpose) -> solve_triangular.
std::optional<std::vector<Var>> solve_with_cholesky(FunctionGraph&, Apply& n) {
  const auto& op = static_cast<const Linalg&>(*n.op);
  if (op.kind != LinalgKind::Solve || op.attrs.structure != SolveStructure::General) return std::nullopt;
  const Var a = n.inputs[0];
  Var inner;
  bool lower;
  if (const Linalg* c = linalg_of(a, LinalgKind::Cholesky))
    lower = c->attrs.lower;
  else if (is_transpose(a, inner) && linalg_of(inner, LinalgKind::Cholesky))
    lower = !linalg_of(inner, LinalgKind::Cholesky)->attrs.lower;
  else
    return std::nullopt;
  return one(retype(solve_triangular(a, n.inputs[1], lower), n.output_ptr(0)->type));
}

// inv(inv(A)) -> A.
std::optional<std::vector<Var>> inv_of_inv(FunctionGraph&, Apply& n) {
  const auto& op = static_cast<const Linalg&>(*n.op);
  if (op.kind != LinalgKind::Inverse || !linalg_of(n.inputs[0], LinalgKind::Inverse)) return std::nullopt;
  return one(retype(n.inputs[0]->owner->inputs[0], n.output_ptr(0)->type));
}

}  // namespace

std::vector<LocalRewrite> linalg_rules() {
  return {
      {"local_inv_as_solve", {typeid(Dot)}, inv_as_solve},
      {"local_solve_with_cholesky", {typeid(Linalg)}, solve_with_cholesky},
      {"local_inv_of_inv", {typeid(Linalg)}, inv_of_inv},
  };
}

}  // namespace hypatia::rewrite
