#include "hypatia/rewrite/rewriter.h"

#include <algorithm>
#include <chrono>
#include <deque>
#include <iostream>
#include <map>
#include <unordered_map>
#include <unordered_set>

#include "hypatia/core/config.h"
#include "hypatia/core/error.h"
#include "hypatia/core/messages.h"
#include "hypatia/rewrite/passes.h"

namespace hypatia {
namespace {

/// The pipeline: built from rewrite::builtin_pipeline() on first use.
std::vector<RewritePhase>& phases_storage() {
  static std::vector<RewritePhase> phases = rewrite::builtin_pipeline();
  return phases;
}

std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> r;
  size_t pos = 0;
  while (pos <= s.size()) {
    size_t end = s.find_first_of(":,", pos);
    if (end == std::string::npos) end = s.size();
    if (end > pos) r.push_back(s.substr(pos, end - pos));
    pos = end + 1;
  }
  return r;
}

bool named(const RewritePhase& p, const std::vector<std::string>& names) {
  for (const auto& n : names) {
    if (n == p.name) return true;
    if (std::find(p.tags.begin(), p.tags.end(), n) != p.tags.end()) return true;
  }
  return false;
}

/// The worklist: nodes to (re)visit, deduplicated, in arrival order.
class Worklist final : public GraphListener {
 public:
  explicit Worklist(FunctionGraph& fg) : fg_(fg) {}
  void push(Apply* n) {
    if (n && queued_.insert(n).second) queue_.push_back(fg_.node_ptr(n));
  }
  std::shared_ptr<Apply> pop() {
    while (!queue_.empty()) {
      auto n = std::move(queue_.front());
      queue_.pop_front();
      if (!n) continue;
      queued_.erase(n.get());
      if (fg_.contains(n.get())) return n;
    }
    return nullptr;
  }
  void on_import(Apply* node) override {
    push(node);
    // Its clients may match new patterns once this node exists (they are pushed by on_change_input).
  }
  void on_change_input(Apply* node, int, const Var&, const Var& new_var) override {
    push(node);
    if (new_var->owner) push(new_var->owner);
  }

 private:
  FunctionGraph& fg_;
  std::deque<std::shared_ptr<Apply>> queue_;
  std::unordered_set<const Apply*> queued_;
};

}  // namespace

const std::vector<RewritePhase>& rewrite_phases() { return phases_storage(); }

void register_rewrite_phase(RewritePhase phase, const std::string& after) {
  auto& ps = phases_storage();
  for (const auto& p : ps)
    if (p.name == phase.name) fail<ValueError>("register_rewrite_phase: a phase named '", phase.name, "' exists");
  auto it = std::find_if(ps.begin(), ps.end(), [&](const RewritePhase& p) { return p.name == after; });
  if (it == ps.end())
    fail<ValueError>("register_rewrite_phase: no phase named '", after, "' to add '", phase.name, "' after");
  ps.insert(it + 1, std::move(phase));
}

void register_local_rewrite(const std::string& phase, LocalRewrite rw) {
  for (auto& p : phases_storage())
    if (p.name == phase) {
      p.locals.push_back(std::move(rw));
      return;
    }
  fail<ValueError>("register_local_rewrite: no phase named '", phase, "'");
}

std::vector<const RewritePhase*> selected_phases(const RewriteOptions& opts) {
  const auto including = split_list(opts.including);
  const auto excluding = split_list(opts.excluding);
  std::vector<const RewritePhase*> r;
  for (const RewritePhase& p : rewrite_phases()) {
    bool in_mode = std::find(p.modes.begin(), p.modes.end(), opts.mode) != p.modes.end();
    bool run = (in_mode && !p.opt_in) || named(p, including);
    if (opts.mode == "NONE" && !named(p, including)) run = false;
    if (named(p, excluding)) run = false;
    if (run) r.push_back(&p);
  }
  return r;
}

RewriteOptions rewrite_options_from_config(const std::string& mode) {
  const Config& c = config();
  RewriteOptions o;
  o.mode = mode.empty() ? c.mode : mode;
  if (o.mode == "DebugMode" || o.mode == "DEBUG_MODE" || o.mode == "ProfileMode") o.mode = "FAST_RUN";
  if (mode.empty()) {
    if (c.optimizer == "None")
      o.mode = "NONE";
    else if (c.optimizer == "fast_compile" || c.optimizer == "merge" || c.optimizer == "o1")
      o.mode = "FAST_COMPILE";
  }
  o.including = c.optimizer_including;
  o.excluding = c.optimizer_excluding;
  o.print = c.print_rewrites;
  return o;
}

void replace_by_rewrite(FunctionGraph& fg, const std::vector<std::pair<Var, Var>>& pairs, const std::string& rewrite) {
  for (const auto& [old, nv] : pairs) {
    if (!old || !nv) fail<InternalError>("rewrite ", rewrite, " returned a null variable");
    const TensorType &a = old->type, &b = nv->type;
    if (a == b) continue;
    const char* what = a.dtype != b.dtype ? "dtype" : a.ndim() != b.ndim() ? "ndim" : "broadcastable pattern";
    fail<InternalError>("rewrite ", rewrite, " replaced ", old->str(), " of type ", a.str(), " by ", nv->str(),
                        " of type ", b.str(), ": the ", what,
                        " differs (a rewrite must keep the exact type of what it replaces)");
  }
  fg.replace_all(pairs, rewrite, /*inherit_traces=*/true);
}

int apply_local_rewrites(FunctionGraph& fg, const std::vector<const LocalRewrite*>& rewrites, bool print,
                         RewriteStats* stats) {
  std::unordered_map<std::type_index, std::vector<const LocalRewrite*>> by_type;
  std::vector<const LocalRewrite*> generic;
  for (const LocalRewrite* rw : rewrites) {
    if (rw->tracks.empty()) generic.push_back(rw);
    for (const auto& t : rw->tracks) by_type[t].push_back(rw);
  }
  Worklist work(fg);
  for (const auto& n : fg.toposort()) work.push(n.get());
  fg.add_listener(&work);
  struct Detach {
    FunctionGraph& fg;
    Worklist* w;
    ~Detach() { fg.remove_listener(w); }
  } detach{fg, &work};

  int applied = 0;
  // A bound on the work: a rewrite that keeps undoing another would otherwise loop forever.
  const long budget = 200 + 50 * static_cast<long>(fg.num_nodes() + 1) * static_cast<long>(rewrites.size() + 1);
  long steps = 0;
  while (auto node = work.pop()) {
    if (++steps > budget) {
      warn("rewriting stopped after " + std::to_string(budget) +
           " steps without reaching a fixed point (a rewrite may be undoing another)");
      break;
    }
    if (!fg.has_clients(node.get())) continue;
    const auto it = by_type.find(std::type_index(typeid(*node->op)));
    auto try_list = [&](const std::vector<const LocalRewrite*>& list) {
      for (const LocalRewrite* rw : list) {
        std::optional<std::vector<Var>> r = rw->fn(fg, *node);
        if (!r) continue;
        if (static_cast<int>(r->size()) != node->nout())
          fail<InternalError>("rewrite ", rw->name, " returned ", r->size(), " replacements for ", node->op->name(),
                              " which has ", node->nout(), " outputs");
        std::vector<std::pair<Var, Var>> pairs;
        for (int o = 0; o < node->nout(); ++o) {
          const Var& nv = (*r)[o];
          if (!nv || nv.get() == node->output_ptr(o)) continue;
          Var old = node->output(o);
          if (print)
            emit_message(MessageChannel::Diagnostic, "rewriting: rewrite " + rw->name + " replaces " + old->str() +
                                                         " of " + node->op->name() + " with " + nv->str() +
                                                         (nv->owner ? " of " + nv->owner->op->name() : "") + "\n");
          pairs.emplace_back(std::move(old), nv);
        }
        const bool changed = !pairs.empty();
        if (changed) {
          replace_by_rewrite(fg, pairs, rw->name);
          for (const auto& [old, nv] : pairs)
            if (nv->name.empty()) nv->name = old->name;
        }
        if (!changed) continue;
        ++applied;
        if (stats) {
          auto& v = stats->by_name;
          auto f = std::find_if(v.begin(), v.end(), [&](const auto& p) { return p.first == rw->name; });
          if (f == v.end())
            v.emplace_back(rw->name, 1);
          else
            ++f->second;
        }
        return true;
      }
      return false;
    };
    if (it != by_type.end() && try_list(it->second)) continue;
    try_list(generic);
  }
  return applied;
}

namespace {
thread_local const RewriteTarget* t_target = nullptr;
}  // namespace

const RewriteTarget* current_rewrite_target() { return t_target; }
RewriteTargetScope::RewriteTargetScope(const RewriteTarget* t) : saved_(t_target) { t_target = t; }
RewriteTargetScope::~RewriteTargetScope() { t_target = saved_; }

RewriteStats rewrite_graph(FunctionGraph& fg, const RewriteOptions& opts) {
  auto t0 = std::chrono::steady_clock::now();
  RewriteTargetScope target_scope(opts.target);
  RewriteStats stats;
  stats.nodes_before = static_cast<int>(fg.num_nodes());
  const auto excluding = split_list(opts.excluding);
  for (const RewritePhase* phase : selected_phases(opts)) {
    const RewritePhase& p = *phase;
    const auto tp = std::chrono::steady_clock::now();
    if (p.global) {
      if (p.global(fg)) {
        ++stats.applied;
        if (opts.print)
          emit_message(MessageChannel::Diagnostic,
                       "rewriting: global pass " + std::string(p.name) + " changed the graph\n");
      }
    } else {
      std::vector<const LocalRewrite*> rws;
      for (const auto& rw : p.locals)
        if (std::find(excluding.begin(), excluding.end(), rw.name) == excluding.end()) rws.push_back(&rw);
      if (!rws.empty()) stats.applied += apply_local_rewrites(fg, rws, opts.print, &stats);
    }
    stats.phase_seconds.emplace_back(p.name,
                                     std::chrono::duration<double>(std::chrono::steady_clock::now() - tp).count());
  }
  stats.nodes_after = static_cast<int>(fg.num_nodes());
  stats.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return stats;
}

}  // namespace hypatia
