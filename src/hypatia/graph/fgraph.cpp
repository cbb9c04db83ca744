#include "hypatia/graph/fgraph.h"

#include <algorithm>
#include <functional>
#include <limits>
#include <string_view>
#include <utility>

#include "hypatia/core/error.h"

namespace hypatia {

std::vector<Var> clone_graph(const std::vector<Var>& outputs, const std::vector<std::pair<Var, Var>>& replace,
                             std::unordered_map<const Variable*, Var>* memo_out) {
  std::unordered_map<const Variable*, Var> memo;
  // Replacements are cloned first on their own (without the replacements applied to them).
  for (const auto& [old_v, new_v] : replace) {
    if (!old_v || !new_v) fail<TypeError>("givens: null variable");
    if (!(old_v->type == new_v->type))
      fail<TypeError>("givens: the replacement for ", old_v->str(), " has type ", new_v->type.str(),
                      " but the variable has type ", old_v->type.str());
    memo[old_v.get()] = clone_graph({new_v})[0];
  }
  auto clone_node = [&](Apply* node) {
    std::vector<Var> ins;
    ins.reserve(node->inputs.size());
    for (const auto& in : node->inputs) ins.push_back(memo.at(in.get()));
    std::vector<TensorType> types;
    for (int i = 0; i < node->nout(); ++i) types.push_back(node->output_ptr(i)->type);
    auto copy = std::make_shared<Apply>(node->op, std::move(ins), types);
    copy->trace = node->trace;
    for (int i = 0; i < node->nout(); ++i) {
      Var o = copy->output(i);
      const Variable* orig = node->output_ptr(i);
      o->name = orig->name;
      o->trace = orig->trace;
      o->test_value = orig->test_value;
      memo[orig] = o;
    }
  };
  // Depth first without recursion (graphs may be chains of many thousands of nodes): a node is
  // copied once every input has its copy (leaves are kept).
  auto rec = [&](const Var& v) -> Var {
    if (auto it = memo.find(v.get()); it != memo.end()) return it->second;
    if (v->kind != VarKind::Output) return memo[v.get()] = v;
    std::vector<std::pair<Apply*, size_t>> stack{{v->owner, 0}};
    while (!stack.empty()) {
      Apply* node = stack.back().first;
      Apply* child = nullptr;
      for (size_t& next = stack.back().second; next < node->inputs.size() && !child; ++next) {
        const Var& in = node->inputs[next];
        if (memo.count(in.get())) continue;
        if (in->kind != VarKind::Output)
          memo[in.get()] = in;
        else
          child = in->owner;
      }
      if (child) {
        stack.emplace_back(child, 0);
        continue;
      }
      clone_node(node);
      stack.pop_back();
    }
    return memo.at(v.get());
  };
  std::vector<Var> result;
  for (const auto& o : outputs) result.push_back(rec(o));
  if (memo_out) *memo_out = std::move(memo);
  return result;
}

std::vector<std::shared_ptr<Apply>> toposort(const std::vector<Var>& outputs) {
  std::vector<std::shared_ptr<Apply>> order;
  std::unordered_set<const Apply*> done;
  // Iterative post-order DFS over owners, inputs visited left to right.
  struct Frame {
    Apply* node;
    size_t next;
  };
  std::vector<Frame> stack;
  for (const auto& out : outputs) {
    if (!out || !out->owner || done.count(out->owner)) continue;
    stack.push_back({out->owner, 0});
    done.insert(out->owner);
    while (!stack.empty()) {
      Frame& f = stack.back();
      if (f.next < f.node->inputs.size()) {
        Apply* in = f.node->inputs[f.next++]->owner;
        if (in && !done.count(in)) {
          done.insert(in);
          stack.push_back({in, 0});
        }
        continue;
      }
      order.push_back(f.node->shared_from_this());
      stack.pop_back();
    }
  }
  return order;
}

FunctionGraph::FunctionGraph(std::vector<Var> inputs, std::vector<Var> outputs, bool clone)
    : inputs_(std::move(inputs)) {
  outputs_ = clone ? clone_graph(outputs) : std::move(outputs);
  for (const auto& n : hypatia::toposort(outputs_)) {
    nodes_.emplace(n.get(), n);
    for (size_t i = 0; i < n->inputs.size(); ++i)
      clients_[n->inputs[i].get()].push_back({n.get(), static_cast<int>(i)});
  }
  for (size_t i = 0; i < outputs_.size(); ++i) clients_[outputs_[i].get()].push_back({nullptr, static_cast<int>(i)});
}

const std::vector<Client>& FunctionGraph::clients(const Variable* v) const {
  static const std::vector<Client> kNone;
  auto it = clients_.find(v);
  return it == clients_.end() ? kNone : it->second;
}

std::vector<std::shared_ptr<Apply>> FunctionGraph::toposort() const { return hypatia::toposort(outputs_); }

std::shared_ptr<Apply> FunctionGraph::node_ptr(const Apply* node) const {
  auto it = nodes_.find(node);
  return it == nodes_.end() ? nullptr : it->second;
}

bool FunctionGraph::has_clients(const Apply* node) const {
  for (int o = 0; o < node->nout(); ++o)
    if (!clients(node->output_ptr(o)).empty()) return true;
  return false;
}

void FunctionGraph::remove_listener(GraphListener* l) {
  listeners_.erase(std::remove(listeners_.begin(), listeners_.end(), l), listeners_.end());
}

std::vector<Var> FunctionGraph::orphans() const {
  std::unordered_set<const Variable*> ins;
  for (const auto& v : inputs_) ins.insert(v.get());
  std::unordered_set<const Variable*> seen;
  std::vector<Var> r;
  auto visit = [&](const Var& v) {
    if (v->owner || ins.count(v.get()) || !seen.insert(v.get()).second) return;
    r.push_back(v);
  };
  for (const auto& n : toposort())
    for (const auto& v : n->inputs) visit(v);
  for (const auto& v : outputs_) visit(v);
  return r;
}

void FunctionGraph::import_var(const Var& v) {
  Apply* owner = v->owner;
  if (!owner || nodes_.count(owner)) return;
  // Iterative post-order, so that deep replacement graphs do not overflow the stack.
  std::vector<std::pair<Apply*, size_t>> stack{{owner, 0}};
  std::unordered_set<const Apply*> on_stack{owner};
  while (!stack.empty()) {
    auto& [node, next] = stack.back();
    if (next < node->inputs.size()) {
      Apply* in = node->inputs[next++]->owner;
      if (in && !nodes_.count(in) && on_stack.insert(in).second) stack.push_back({in, 0});
      continue;
    }
    Apply* n = node;
    stack.pop_back();
    nodes_.emplace(n, n->shared_from_this());
    for (size_t i = 0; i < n->inputs.size(); ++i) clients_[n->inputs[i].get()].push_back({n, static_cast<int>(i)});
    if (imported_sink_) imported_sink_->push_back(n->shared_from_this());
    for (GraphListener* l : listeners_) l->on_import(n);
  }
}

void FunctionGraph::prune(Apply* root) {
  std::vector<Apply*> work{root};
  while (!work.empty()) {
    Apply* node = work.back();
    work.pop_back();
    auto it = nodes_.find(node);
    if (it == nodes_.end() || has_clients(node)) continue;
    std::shared_ptr<Apply> keep = it->second;  // alive until its listeners have seen it
    nodes_.erase(it);
    if (pruned_traces_sink_) pruned_traces_sink_->push_back(node->trace);
    for (int o = 0; o < node->nout(); ++o) clients_.erase(node->output_ptr(o));
    for (size_t i = 0; i < node->inputs.size(); ++i) {
      const Variable* in = node->inputs[i].get();
      auto& cl = clients_[in];
      cl.erase(std::remove_if(cl.begin(), cl.end(),
                              [&](const Client& c) { return c.node == node && c.index == static_cast<int>(i); }),
               cl.end());
      if (cl.empty()) clients_.erase(in);
      if (in->owner) work.push_back(in->owner);
    }
    for (GraphListener* l : listeners_) l->on_prune(node);
  }
}

void FunctionGraph::replace(const Var& old_var, const Var& new_var, const std::string& reason) {
  replace_all({{old_var, new_var}}, reason);
}

void FunctionGraph::replace_all(const std::vector<std::pair<Var, Var>>& pairs, const std::string& reason,
                                bool inherit_traces) {
  for (const auto& [old_var, new_var] : pairs) {
    if (!old_var || !new_var)
      fail<TypeError>("FunctionGraph.replace", reason.empty() ? "" : " (" + reason + ")", ": a null variable");
    if (!(old_var->type == new_var->type))
      fail<TypeError>("FunctionGraph.replace", reason.empty() ? "" : " (" + reason + ")", ": the replacement of ",
                      old_var->str(), " has type ", new_var->type.str(), " but the variable has type ",
                      old_var->type.str());
  }
  std::vector<std::shared_ptr<Apply>> imported;
  std::vector<std::string> replaced_traces;
  struct Sinks {
    FunctionGraph& fg;
    ~Sinks() {
      fg.imported_sink_ = nullptr;
      fg.pruned_traces_sink_ = nullptr;
    }
  } sinks{*this};
  imported_sink_ = &imported;
  pruned_traces_sink_ = &replaced_traces;
  for (const auto& [old_var, new_var] : pairs) {
    if (old_var->owner && nodes_.count(old_var->owner) && clients_.count(old_var.get()))
      replaced_traces.push_back(old_var->owner->trace);
    replace_one(old_var, new_var, reason);
  }
  imported_sink_ = nullptr;
  pruned_traces_sink_ = nullptr;
  if (!reason.empty())
    for (const auto& n : imported)
      if (n->made_by.empty()) n->made_by = reason;
  if (!inherit_traces || imported.empty()) return;
  const std::string merged = merge_traces(replaced_traces);
  if (merged.empty()) return;  // nothing known about the replaced nodes (built in C++)
  for (const auto& n : imported) n->trace = merged;
}

void FunctionGraph::replace_one(const Var& old_var, const Var& new_var, const std::string& reason) {
  if (old_var.get() == new_var.get()) return;
  auto it = clients_.find(old_var.get());
  if (it == clients_.end()) return;
  if (replace_log) replace_log->push_back({old_var, new_var, reason});
  std::vector<Client> moved = std::move(it->second);
  clients_.erase(it);
  for (const Client& c : moved) {
    if (c.node)
      c.node->inputs[c.index] = new_var;
    else
      outputs_[c.index] = new_var;
  }
  import_var(new_var);
  auto& dst = clients_[new_var.get()];
  dst.insert(dst.end(), moved.begin(), moved.end());
  for (const Client& c : moved)
    for (GraphListener* l : listeners_) l->on_change_input(c.node, c.index, old_var, new_var);
  if (old_var->owner) prune(old_var->owner);
}

void FunctionGraph::change_input(Apply* node, int index, const Var& new_var) {
  const Var old_var = node ? node->inputs.at(index) : outputs_.at(index);
  if (old_var.get() == new_var.get()) return;
  if (!(old_var->type == new_var->type))
    fail<TypeError>("change_input: ", new_var->type.str(), " cannot replace ", old_var->type.str());
  auto it = clients_.find(old_var.get());
  if (it != clients_.end()) {
    auto& v = it->second;
    v.erase(std::remove_if(v.begin(), v.end(), [&](const Client& c) { return c.node == node && c.index == index; }),
            v.end());
  }
  if (node)
    node->inputs[index] = new_var;
  else
    outputs_[index] = new_var;
  import_var(new_var);
  clients_[new_var.get()].push_back({node, index});
  for (GraphListener* l : listeners_) l->on_change_input(node, index, old_var, new_var);
  // (The insertion above may have moved the map's entries: look the old variable up again.)
  if (auto left = clients_.find(old_var.get()); left != clients_.end() && left->second.empty()) {
    clients_.erase(left);
    if (old_var->owner) prune(old_var->owner);
  }
}

std::string merge_traces(const std::vector<std::string>& traces) {
  constexpr size_t kMaxEntries = 32;
  static const std::string kSep = ", ";
  std::vector<std::string_view> entries;
  for (const std::string& t : traces) {
    std::string_view rest = t;
    while (!rest.empty() && entries.size() < kMaxEntries) {
      const size_t cut = rest.find(kSep);
      const std::string_view e = rest.substr(0, cut);
      rest = cut == std::string_view::npos ? std::string_view() : rest.substr(cut + kSep.size());
      if (!e.empty() && std::find(entries.begin(), entries.end(), e) == entries.end()) entries.push_back(e);
    }
  }
  // In source order: by file, then by line number (entries without a line number last).
  auto key = [](std::string_view e) {
    const size_t colon = e.rfind(':');
    long line = -1;
    if (colon != std::string_view::npos && colon + 1 < e.size()) {
      line = 0;
      for (char c : e.substr(colon + 1))
        line = c >= '0' && c <= '9' && line >= 0 && line < 100000000 ? line * 10 + (c - '0') : -1;
    }
    return std::make_pair(line >= 0 ? e.substr(0, colon) : e, line >= 0 ? line : std::numeric_limits<long>::max());
  };
  std::stable_sort(entries.begin(), entries.end(),
                   [&](std::string_view a, std::string_view b) { return key(a) < key(b); });
  std::string r;
  for (const auto& e : entries) {
    if (!r.empty()) r += kSep;
    r += e;
  }
  return r;
}

}  // namespace hypatia
