// In-place (phase inplace_elemwise, the last: no rewrite after it may move a reader of an
// overwritten value): a global pass. A node writes its output into the buffer of an input that
// nothing else needs afterwards: elementwise nodes (Elemwise, single-output Composite) into any
// input, Gemm / Gemv / Ger into z, set/inc_subtensor into x. What may be overwritten, and the
// order that makes it safe, is the destroy handler's (rewrite/destroy.h): intermediates whose
// other readers can run first, inputs marked mutable, and shared variables updated with the node's
// own result. Guarantees: each replacement is the same op in its in-place form, of the same type
// and values, accepted by destroy_refusal and destroy_keeps_order (destroy_order's answer, found by
// one search); the shared variable a node computes the update of is taken first, then
// intermediates, then other leaves.
#include <algorithm>

#include "hypatia/ops/blas.h"
#include "hypatia/ops/composite.h"
#include "hypatia/ops/subtensor.h"
#include "hypatia/rewrite/destroy.h"
#include "hypatia/rewrite/passes.h"
#include "hypatia/rewrite/rewrite_util.h"

namespace hypatia::rewrite {
namespace {

/// The in-place form of n's op overwriting input i, or null when it has none.
std::shared_ptr<const Op> inplace_form(const Apply& n, int i) {
  if (const Elemwise* e = elemwise_op(&n)) return std::make_shared<Elemwise>(e->scalar, e->cast_to, i);
  const Op& op = *n.op;
  if (typeid(op) == typeid(Composite)) {
    const auto& c = static_cast<const Composite&>(op);
    if (c.inplace >= 0 || n.nout() != 1) return nullptr;
    return std::make_shared<Composite>(c, i);
  }
  if (i != 0) return nullptr;
  if (typeid(op) == typeid(Gemm) && !static_cast<const Gemm&>(op).inplace) return std::make_shared<Gemm>(true);
  if (typeid(op) == typeid(Gemv) && !static_cast<const Gemv&>(op).inplace) return std::make_shared<Gemv>(true);
  if (typeid(op) == typeid(Ger) && !static_cast<const Ger&>(op).inplace) return std::make_shared<Ger>(true);
  if (typeid(op) == typeid(IncSubtensor)) {
    const auto& s = static_cast<const IncSubtensor&>(op);
    if (!s.inplace) return std::make_shared<IncSubtensor>(s.spec, s.set_instead_of_inc, true);
  }
  return nullptr;
}

}  // namespace

bool inplace_pass(FunctionGraph& fg) {
  bool changed = false;
  for (const auto& n : fg.toposort()) {
    if (!fg.contains(n.get()) || !n->op->destroy_map().empty()) continue;
    // Integer scalars (a shape's entries, index arithmetic) stay out of place: writing one in place
    // saves eight bytes and orders every other reader of the input before the node (on a device
    // backend, device kernels reading a shape: the host's arithmetic would split the device work).
    if (n->nout() == 1 && n->output_ptr(0)->type.ndim() == 0 &&
        (is_integer(n->output_ptr(0)->type.dtype) || n->output_ptr(0)->type.dtype == DType::Bool))
      continue;
    // The shared variable whose new value the node computes first: its buffer stays the
    // variable's from call to call (what the CUDA backend's recorded graphs are keyed on).
    // Then intermediates: overwriting them saves an allocation; other leaves only when nothing
    // else fits.
    std::vector<int> order;
    for (int i = 0; i < static_cast<int>(n->inputs.size()); ++i) {
      const Var& v = n->inputs[i];
      auto it = v->is_shared() ? fg.update_outputs.find(v.get()) : fg.update_outputs.end();
      if (it != fg.update_outputs.end() && fg.outputs()[it->second].get() == n->output_ptr(0)) order.push_back(i);
    }
    for (int pass = 0; pass < 2; ++pass)
      for (int i = 0; i < static_cast<int>(n->inputs.size()); ++i)
        if ((n->inputs[i]->owner != nullptr) == (pass == 0) && std::find(order.begin(), order.end(), i) == order.end())
          order.push_back(i);
    for (int i : order) {
      std::shared_ptr<const Op> op = inplace_form(*n, i);
      if (!op || !destroy_refusal(fg, *n, i).empty() || !destroy_keeps_order(fg, *n, i)) continue;
      Var old = n->output(0);
      Var repl = apply_op1(op, n->inputs);
      if (!(repl->type == old->type)) continue;
      replace_by_rewrite(fg, {{old, repl}}, "inplace");
      changed = true;
      break;
    }
  }
  return changed;
}

}  // namespace hypatia::rewrite
