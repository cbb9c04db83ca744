// Constant folding (the rule constant_folding, in canonicalize, stabilize and specialize): a local
// rule tracking every node. Expects a RewriteTarget with an evaluate function (current_rewrite_target;
// without one nothing folds). A node whose inputs are all constants, that destroys no input and
// has no side effects, is replaced by constants holding its outputs, computed once by the target's
// kernels, of exactly the outputs' types. Not folded: a node whose kernel raises (the error
// surfaces when the function runs, with its context) and a node with an output of more than
// 65536 elements (known from infer_shape before anything runs, so compiling alloc(0., 2**40)
// allocates nothing).
#include <cstdint>
#include <optional>
#include <vector>

#include "hypatia/core/checked.h"
#include "hypatia/core/error.h"
#include "hypatia/ops/shape.h"
#include "hypatia/rewrite/passes.h"
#include "hypatia/rewrite/rewrite_util.h"
#include "hypatia/rewrite/target.h"

namespace hypatia::rewrite {
namespace {

constexpr int64_t kMaxFoldElements = 65536;

// Whether the node's infer_shape, on its constant inputs, says an output has more than
// kMaxFoldElements elements (or a count past int64, or shape arithmetic that fails): such a node
// is not folded, so that compiling T.alloc(0., 2**40) or T.eye(10**5) allocates nothing.
bool fold_output_too_large(const Apply& n) {
  std::vector<ShapeVars> in_shapes;
  for (const auto& in : n.inputs) in_shapes.push_back(shape_vars(in));
  std::vector<ShapeVars> shapes;
  try {
    shapes = n.op->infer_shape(n, in_shapes);
  } catch (const Error&) {
    return true;
  }
  for (const ShapeVars& s : shapes) {
    int64_t total = 1;
    for (const Var& d : s) {
      if (!d || !d->is_constant() || d->ndim() != 0 || !is_integer(d->dtype())) {
        total = -1;  // unknown: the size check after the kernel decides
        break;
      }
      const int64_t v = d->data.get_flat_int(0);
      if (v < 0) {
        total = -1;  // invalid: the kernel raises, and the error surfaces at run time
        break;
      }
      if (v == 0) {
        total = 0;
        continue;
      }
      auto p = checked_mul(total, v);
      if (!p) return true;
      total = *p;
    }
    if (total > kMaxFoldElements) return true;
  }
  return false;
}

std::optional<std::vector<Var>> constant_fold(FunctionGraph&, Apply& n) {
  const RewriteTarget* target = current_rewrite_target();
  if (!target || !target->evaluate) return std::nullopt;
  if (n.inputs.empty() || !n.op->destroy_map().empty() || n.op->has_side_effects() || n.op->is_random())
    return std::nullopt;
  for (const auto& in : n.inputs)
    if (!in->is_constant()) return std::nullopt;
  // Large results are not folded (the graph would hold the big constant, and compiling would
  // allocate it).
  if (fold_output_too_large(n)) return std::nullopt;
  std::vector<NDArray> in_vals, out_vals(n.nout());
  for (const auto& v : n.inputs) in_vals.push_back(v->data);
  std::vector<NDArray*> in_ptrs, out_ptrs;
  for (auto& a : in_vals) in_ptrs.push_back(&a);
  for (auto& a : out_vals) out_ptrs.push_back(&a);
  try {
    target->evaluate(n, in_ptrs, out_ptrs);
  } catch (const Error&) {
    return std::nullopt;  // the error surfaces when the function runs, with its context
  }
  std::vector<Var> r;
  for (int o = 0; o < n.nout(); ++o) {
    NDArray& a = out_vals[o];
    if (!a.valid() || a.size() > kMaxFoldElements) return std::nullopt;
    const TensorType& t = n.output_ptr(o)->type;
    if (!t.check_value(a).empty()) return std::nullopt;
    r.push_back(typed_constant(a.copy(), t));  // a copy: the value must not alias an input constant
  }
  return r;
}

}  // namespace

LocalRewrite constant_folding_rewrite() { return {"constant_folding", {}, constant_fold}; }

}  // namespace hypatia::rewrite
