// Storage-dtype lowering (see storage_dtype.h). Not a phase of the pipeline: function() runs it
// for its backend's storage dtypes in every mode, before and after the pipeline.
#include "hypatia/rewrite/storage_dtype.h"

#include <typeinfo>

#include "hypatia/ops/composite.h"
#include "hypatia/ops/elemwise.h"
#include "hypatia/ops/reduce.h"
#include "hypatia/ops/shape.h"
#include "hypatia/ops/subtensor.h"
#include "hypatia/rewrite/rewrite_util.h"

namespace hypatia::rewrite {
namespace {

/// The compute dtype for `dt`, or nullopt when `dt` is not a storage dtype.
std::optional<DType> compute_for(DType dt, std::span<const StorageDType> storage) {
  for (const auto& s : storage)
    if (s.storage == dt) return s.compute;
  return std::nullopt;
}

/// The first storage dtype n reads or writes (with its compute dtype), or nullopt.
std::optional<StorageDType> storage_hit(const Apply& n, std::span<const StorageDType> storage) {
  for (const Var& v : n.inputs)
    if (auto c = compute_for(v->dtype(), storage)) return StorageDType{v->dtype(), *c};
  for (int j = 0; j < n.nout(); ++j)
    if (auto c = compute_for(n.output_ptr(j)->dtype(), storage)) return StorageDType{n.output_ptr(j)->dtype(), *c};
  return std::nullopt;
}

/// Ops whose kernels move, view or convert elements without arithmetic on them, and fused
/// programs (built from lowered nodes: their float16 values are loads, roundings and stores).
bool moves_elements_only(const Apply& n) {
  const Op& op = *n.op;
  if (dynamic_cast<const CompositeProgram*>(&op)) return true;
  if (const Elemwise* e = elemwise_op(&n)) return e->scalar == ScalarOpKind::Cast;
  return typeid(op) == typeid(DimShuffle) || typeid(op) == typeid(Reshape) || typeid(op) == typeid(Rebroadcast) ||
         typeid(op) == typeid(Subtensor) || typeid(op) == typeid(ShapeOp) || typeid(op) == typeid(ShapeI) ||
         op.moves_between_devices() || !op.inner_functions().empty();
}

/// n's op asked for `compute` where it names a storage dtype.
std::shared_ptr<const Op> op_in_compute_dtype(const Apply& n, DType storage, DType compute) {
  const Op& op = *n.op;
  if (typeid(op) == typeid(Reduce)) {
    const auto& r = static_cast<const Reduce&>(op);
    if (r.dtype == storage) return std::make_shared<Reduce>(r.kind, r.axes, compute);
  } else if (typeid(op) == typeid(ARange)) {
    if (static_cast<const ARange&>(op).dtype == storage) return std::make_shared<ARange>(compute);
  } else if (typeid(op) == typeid(Eye)) {
    if (static_cast<const Eye&>(op).dtype == storage) return std::make_shared<Eye>(compute);
  }
  return n.op;
}

}  // namespace

bool lower_storage_dtypes(FunctionGraph& fg, std::span<const StorageDType> storage) {
  // Graphs without a storage dtype (nearly all) cost one pass over the nodes, no toposort.
  if (storage.empty() || !fg.any_node([&](const Apply& n) { return storage_hit(n, storage).has_value(); }))
    return false;
  bool changed = false;
  for (const auto& n : fg.toposort()) {
    if (!fg.contains(n.get()) || moves_elements_only(*n)) continue;
    const std::optional<StorageDType> hit = storage_hit(*n, storage);
    if (!hit) continue;

    std::vector<Var> ins;
    ins.reserve(n->inputs.size());
    for (const Var& v : n->inputs) {
      auto c = compute_for(v->dtype(), storage);
      ins.push_back(c ? cast(v, *c) : v);
    }
    std::shared_ptr<const Op> op = op_in_compute_dtype(*n, hit->storage, hit->compute);
    std::vector<Var> outs = apply_op(op, ins);
    std::vector<std::pair<Var, Var>> pairs;
    for (int j = 0; j < n->nout(); ++j) {
      const Var& now = outs[j];
      if (compute_for(now->dtype(), storage))
        fail<InternalError>(n->op->name(), " computes in the storage dtype ", dtype_name(now->dtype()), " even on ",
                            dtype_name(hit->compute), " inputs; it needs a case in lower_storage_dtypes");
      // Cast back down to the dtype (and broadcast pattern) the graph asked for.
      pairs.emplace_back(n->output(j), retype(now, n->output(j)->type));
    }
    fg.replace_all(pairs, "lower_storage_dtypes", /*inherit_traces=*/true);
    changed = true;
  }
  return changed;
}

}  // namespace hypatia::rewrite
