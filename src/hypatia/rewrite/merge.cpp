// The merge pass (phases merge1, merge1.5, merge2): a global pass over any graph. Expects
// nothing. Guarantees: afterwards no two nodes apply equal ops to the same inputs (nodes that
// destroy an input excepted) and no two constants of one type hold the same value (constants of
// more than 65536 elements excepted); each merged output is replaced by the one kept, of the same
// type, so every later phase sees one node per computation.
#include <string>
#include <unordered_map>
#include <vector>

#include "hypatia/rewrite/passes.h"

namespace hypatia::rewrite {
namespace {

std::string constant_key(const Var& v) {
  const NDArray& a = v->data;
  std::string key = v->type.str() + a.shape().str();
  NDArray c = a.ascontiguous();
  key.append(reinterpret_cast<const char*>(c.raw()), static_cast<size_t>(c.nbytes()));
  return key;
}

}  // namespace

bool merge_pass(FunctionGraph& fg) {
  bool changed = false;
  std::unordered_map<std::string, Var> consts;
  for (const Var& v : fg.orphans()) {
    if (!v->is_constant() || v->data.size() > 65536) continue;
    auto [it, fresh] = consts.emplace(constant_key(v), v);
    if (!fresh && it->second->type == v->type) {
      replace_by_rewrite(fg, {{v, it->second}}, "merge");
      changed = true;
    }
  }
  std::unordered_map<size_t, std::vector<Apply*>> seen;
  for (const auto& n : fg.toposort()) {
    if (!fg.contains(n.get())) continue;
    if (!n->op->destroy_map().empty() || n->op->is_random()) continue;
    size_t h = n->op->hash();
    for (const auto& in : n->inputs) hash_combine(h, std::hash<const void*>()(in.get()));
    auto& bucket = seen[h];
    Apply* same = nullptr;
    for (Apply* m : bucket) {
      if (!fg.contains(m) || m->inputs.size() != n->inputs.size() || !m->op->equals(*n->op)) continue;
      bool eq = true;
      for (size_t i = 0; i < m->inputs.size() && eq; ++i) eq = m->inputs[i].get() == n->inputs[i].get();
      if (eq) {
        same = m;
        break;
      }
    }
    if (!same) {
      bucket.push_back(n.get());
      continue;
    }
    std::vector<std::pair<Var, Var>> pairs;
    for (int o = 0; o < n->nout(); ++o) pairs.emplace_back(n->output(o), same->output(o));
    replace_by_rewrite(fg, pairs, "merge");
    changed = true;
  }
  return changed;
}

}  // namespace hypatia::rewrite
