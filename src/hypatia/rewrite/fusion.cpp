// Elementwise fusion: a tree of float elementwise nodes whose intermediate results have no other
// reader becomes one Composite node, computed in one pass over memory.
#include <algorithm>
#include <functional>
#include <unordered_map>
#include <unordered_set>

#include "hypatia/backends/cpu/elemwise_inner.h"
#include "hypatia/ops/composite.h"
#include "hypatia/rewrite/rewrite_util.h"

namespace hypatia::rewrite {
namespace {

constexpr int kMaxInputs = 8;
constexpr int kMaxSteps = 16;

/// An Elemwise node that reads and writes one float dtype, with a CPU loop for it.
bool fusible(const Apply* n) {
  const Elemwise* e = elemwise_op(n);
  if (!e || e->scalar == ScalarOpKind::Cast) return false;
  const DType dt = n->output_ptr(0)->dtype();
  if (dt != DType::Float32 && dt != DType::Float64) return false;
  for (const auto& in : n->inputs)
    if (in->dtype() != dt) return false;
  std::vector<DType> dts(n->inputs.size(), dt);
  if (elemwise_compute_dtype(e->scalar, dts, dt) != dt) return false;
  auto [fn, writes] = elemwise_inner_fn(*e, dt);
  return fn != nullptr && writes == dt;
}

bool fuse_pass(FunctionGraph& fg) {
  bool changed = false;
  auto order = fg.toposort();
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    Apply* root = it->get();
    if (!fg.contains(root) || !fusible(root)) continue;
    const DType dt = root->output_ptr(0)->dtype();
    // Grow the group: an input computed by a fusible node read only by the group joins it.
    std::vector<Apply*> group{root};
    std::unordered_set<const Apply*> in_group{root};
    std::vector<Var> externals;
    std::function<void(const Var&)> grow = [&](const Var& v) {
      Apply* o = v->owner;
      if (o && !in_group.count(o) && fusible(o) && o->output_ptr(0)->dtype() == dt && fg.clients(v.get()).size() == 1 &&
          static_cast<int>(group.size()) < kMaxSteps) {
        group.push_back(o);
        in_group.insert(o);
        for (const auto& in : o->inputs) grow(in);
        return;
      }
      if (std::find_if(externals.begin(), externals.end(), [&](const Var& e) { return e.get() == v.get(); }) ==
          externals.end())
        externals.push_back(v);
    };
    for (const auto& in : root->inputs) grow(in);
    if (group.size() < 2 || static_cast<int>(externals.size()) > kMaxInputs) continue;
    // Steps in dependency order (post-order from the root).
    std::unordered_map<const Variable*, int> index;
    for (size_t i = 0; i < externals.size(); ++i) index[externals[i].get()] = static_cast<int>(i);
    std::vector<Composite::Step> steps;
    std::function<int(const Var&)> emit = [&](const Var& v) -> int {
      if (auto f = index.find(v.get()); f != index.end()) return f->second;
      Apply* o = v->owner;
      Composite::Step s{static_cast<const Elemwise&>(*o->op).scalar, {}};
      for (const auto& in : o->inputs) s.args.push_back(emit(in));
      steps.push_back(s);
      const int id = static_cast<int>(externals.size() + steps.size() - 1);
      index[v.get()] = id;
      return id;
    };
    emit(root->output(0));
    auto op = std::make_shared<Composite>(static_cast<int>(externals.size()), dt, std::move(steps));
    Var fused = apply_op1(op, externals);
    Var old = root->output(0);
    Var repl = as_type(fused, old->type);
    if (!repl) continue;
    fg.replace(old, repl, "elemwise_fusion");
    changed = true;
  }
  return changed;
}

}  // namespace

void register_fusion() {
  register_rewrite_phase({.name = "elemwise_fusion",
                          .tags = {"fusion", "fast_run"},
                          .modes = {"FAST_RUN"},
                          .position = 5,
                          .global = fuse_pass});
}

}  // namespace hypatia::rewrite
