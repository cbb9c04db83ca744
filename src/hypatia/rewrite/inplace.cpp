// In-place: an elementwise node (Elemwise or fused Composite) writes its output into the buffer
// of an input that nothing else needs. The destroy check: the input is computed in this call (not
// a function input, shared variable or constant), by a node whose output owns its buffer (no view
// of something else), it has no other reader (this node is its only client and it is not a
// graph output), and it has the output's exact type (so the same shape at run time).
#include "hypatia/ops/composite.h"
#include "hypatia/rewrite/rewrite_util.h"

namespace hypatia::rewrite {
namespace {

int destroyable_input(const FunctionGraph& fg, const Apply& n) {
  const TensorType& out = n.output_ptr(0)->type;
  for (size_t i = 0; i < n.inputs.size(); ++i) {
    const Var& v = n.inputs[i];
    const Apply* producer = v->owner;
    if (!producer || !(v->type == out)) continue;
    if (!producer->op->view_map().empty()) continue;
    const auto& cl = fg.clients(v.get());
    if (cl.size() != 1 || cl[0].node != &n) continue;
    return static_cast<int>(i);
  }
  return -1;
}

bool inplace_pass(FunctionGraph& fg) {
  bool changed = false;
  for (const auto& n : fg.toposort()) {
    if (!fg.contains(n.get())) continue;
    std::shared_ptr<const Op> op;
    if (const Elemwise* e = elemwise_op(n.get())) {
      const int i = destroyable_input(fg, *n);
      if (i < 0) continue;
      op = std::make_shared<Elemwise>(e->scalar, e->cast_to, i);
    } else if (typeid(*n->op) == typeid(Composite)) {
      const auto& c = static_cast<const Composite&>(*n->op);
      if (c.inplace >= 0) continue;
      const int i = destroyable_input(fg, *n);
      if (i < 0) continue;
      op = std::make_shared<Composite>(c.nin, c.dtype, c.steps, i);
    } else {
      continue;
    }
    Var old = n->output(0);
    Var repl = apply_op1(op, n->inputs);
    if (!(repl->type == old->type)) continue;
    fg.replace(old, repl, "inplace_elemwise");
    changed = true;
  }
  return changed;
}

}  // namespace

void register_inplace() {
  register_rewrite_phase({.name = "inplace_elemwise",
                          .tags = {"inplace", "fast_run"},
                          .modes = {"FAST_RUN"},
                          .position = 10,
                          .global = inplace_pass});
}

}  // namespace hypatia::rewrite
