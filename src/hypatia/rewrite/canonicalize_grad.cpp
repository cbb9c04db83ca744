// The gradient machinery's identities taken out (phase canonicalize): DisconnectedGrad
// (consider_constant, zero_grad), GradClip and GradScale change only what T.grad builds, which
// is done before a function is compiled; in the function they are x. Local rules on those ops,
// any graph. Guarantees: the replacement is the op's input, of its exact type; the values are
// the same. Afterwards no node of these ops is left, so no backend needs a kernel for them and
// fusion sees through them (Theano's remove_consider_constant and local_grad_clip).
#include <optional>
#include <vector>

#include "hypatia/grad/grad_ops.h"
#include "hypatia/rewrite/passes.h"
#include "hypatia/rewrite/rewrite_util.h"

namespace hypatia::rewrite {
namespace {

std::optional<std::vector<Var>> gradient_identity(FunctionGraph&, Apply& n) { return one(n.inputs[0]); }

}  // namespace

std::vector<LocalRewrite> canonicalize_grad_rules() {
  return {{"local_remove_gradient_identity",
           {typeid(DisconnectedGradOp), typeid(GradClipOp), typeid(GradScaleOp)},
           gradient_identity}};
}

}  // namespace hypatia::rewrite
