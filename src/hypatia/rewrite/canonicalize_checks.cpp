// Checks that cannot fail, taken out (phase canonicalize; Theano's local_remove_useless_assert):
// an Assert's constant nonzero conditions and SpecifyShape's lengths that equal the value's static
// length are dropped; a check left with nothing to check is its input. Local rules on those ops,
// any graph. Guarantees: the replacement has the node's exact type and value, and every check that
// could fail is kept.
#include <optional>
#include <vector>

#include "hypatia/ops/checks.h"
#include "hypatia/rewrite/passes.h"
#include "hypatia/rewrite/rewrite_util.h"

namespace hypatia::rewrite {
namespace {

std::optional<std::vector<Var>> useless_assert(FunctionGraph&, Apply& n) {
  const auto& op = static_cast<const Assert&>(*n.op);
  std::vector<Var> keep{n.inputs[0]};
  for (size_t i = 1; i < n.inputs.size(); ++i) {
    const std::optional<double> c = scalar_constant(n.inputs[i]);
    if (!c || *c == 0.0) keep.push_back(n.inputs[i]);
  }
  if (keep.size() == n.inputs.size()) return std::nullopt;
  if (keep.size() == 1) return one(n.inputs[0]);
  return one(assert_op(n.inputs[0], {keep.begin() + 1, keep.end()}, op.msg));
}

std::optional<std::vector<Var>> useless_specify_shape(FunctionGraph&, Apply& n) {
  const auto& op = static_cast<const SpecifyShape&>(*n.op);
  const Var& x = n.inputs[0];
  std::vector<Var> shape(op.given.size());
  bool dropped = false, any = false;
  for (int a = 0; a < static_cast<int>(op.given.size()); ++a) {
    const int k = op.input_of_axis(a);
    if (k < 0) continue;
    const std::optional<int64_t> want = cval(n.inputs[k]);
    const std::optional<int64_t> have = static_dim(x, a);
    if (want && have && *want == *have) {
      dropped = true;
      continue;
    }
    shape[a] = n.inputs[k];
    any = true;
  }
  if (!dropped) return std::nullopt;
  if (!any) return one(x);
  return one(specify_shape(x, shape));
}

}  // namespace

std::vector<LocalRewrite> canonicalize_check_rules() {
  return {{"local_remove_useless_assert", {typeid(Assert)}, useless_assert},
          {"local_remove_useless_specify_shape", {typeid(SpecifyShape)}, useless_specify_shape}};
}

}  // namespace hypatia::rewrite
