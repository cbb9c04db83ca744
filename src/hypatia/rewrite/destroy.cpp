#include "hypatia/rewrite/destroy.h"

#include <algorithm>
#include <queue>
#include <sstream>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

#include "hypatia/core/config.h"
#include "hypatia/core/error.h"

namespace hypatia {
namespace {

bool contains_var(const std::vector<Var>& vs, const Variable* v) {
  return std::any_of(vs.begin(), vs.end(), [&](const Var& u) { return u.get() == v; });
}

/// Every node that reads (transitively) an output of n.
std::unordered_set<const Apply*> descendants(const FunctionGraph& fg, const Apply& n) {
  std::unordered_set<const Apply*> seen;
  std::vector<const Apply*> stack{&n};
  while (!stack.empty()) {
    const Apply* a = stack.back();
    stack.pop_back();
    for (int o = 0; o < a->nout(); ++o)
      for (const Client& c : fg.clients(a->output_ptr(o)))
        if (c.node && seen.insert(c.node).second) stack.push_back(c.node);
  }
  return seen;
}

/// Calls fn(reader) for every node other than d that reads d's input i or a view of it: once d
/// overwrites that input, each of them must run before d (a reader may come more than once).
template <class Fn>
void for_each_reader_before(const FunctionGraph& fg, const Apply& d, int i, Fn&& fn) {
  for (const Var& u : views_of(fg, d.inputs[i]))
    for (const Client& c : fg.clients(u.get()))
      if (c.node && c.node != &d) fn(c.node);
}

std::string reader_str(const Apply* a) {
  std::ostringstream os;
  os << a->op->name() << "(";
  for (size_t i = 0; i < a->inputs.size(); ++i) os << (i ? ", " : "") << a->inputs[i]->str();
  os << ")";
  return os.str();
}

}  // namespace

std::vector<Var> views_of(const FunctionGraph& fg, const Var& v) {
  std::vector<Var> out{v};
  for (size_t k = 0; k < out.size(); ++k) {
    const Var u = out[k];
    for (const Client& c : fg.clients(u.get())) {
      if (!c.node) continue;
      const AliasMap vm = c.node->op->view_map();
      for (size_t o = 0; o < vm.size(); ++o)
        if (std::find(vm[o].begin(), vm[o].end(), c.index) != vm[o].end() &&
            !contains_var(out, c.node->output_ptr(static_cast<int>(o))))
          out.push_back(c.node->output(static_cast<int>(o)));
    }
  }
  return out;
}

bool destroys_shared(const Apply& n) {
  for (const auto& o : n.op->destroy_map())
    for (int i : o)
      if (n.inputs[i]->is_shared()) return true;
  return false;
}

std::string destroy_refusal(const FunctionGraph& fg, const Apply& n, int input) {
  const Var& v = n.inputs[input];
  int output = 0;
  const AliasMap dm = n.op->destroy_map();
  for (size_t o = 0; o < dm.size(); ++o)
    if (std::find(dm[o].begin(), dm[o].end(), input) != dm[o].end()) output = static_cast<int>(o);
  const Variable* out = n.output_ptr(output);
  if (v->is_constant()) return "it is a constant";
  if (!(v->type == out->type)) return "it does not have the result's type";
  const std::vector<Var> views = views_of(fg, v);
  for (size_t k = 0; k < n.inputs.size(); ++k)
    if (static_cast<int>(k) != input && contains_var(views, n.inputs[k].get()))
      return "the node also reads it (or a view of it) as its input " + std::to_string(k);
  for (const Var& u : views)
    for (const Client& c : fg.clients(u.get()))
      if (!c.node) return "it (or a view of it) is an output or an update value of the function";
  if (!v->owner) {
    if (v->is_shared()) {
      auto it = fg.update_outputs.find(v.get());
      if (it == fg.update_outputs.end()) return "it is a shared variable that the function does not update";
      if (fg.outputs()[it->second].get() != out) return "it is a shared variable updated with another value";
      const auto& cl = fg.clients(out);
      if (cl.size() != 1 || cl[0].node) return "it is a shared variable and the node's result has other readers";
      if (!n.op->checks_runtime_inputs())
        return "it is a shared variable and " + n.op->name() + " cannot check its inputs before the call writes";
    } else if (!fg.mutable_inputs.count(v.get())) {
      return "it is an input of the function (pass In(..., mutable=true) to allow it)";
    }
  } else if (!v->owner->op->view_map().empty()) {
    return "it is a view of another value";
  }
  const auto desc = descendants(fg, n);
  for (const Var& u : views)
    for (const Client& c : fg.clients(u.get()))
      if (c.node && c.node != &n && desc.count(c.node))
        return "it is also read by " + reader_str(c.node) + " which needs the node's result";
  return "";
}

std::optional<std::vector<std::shared_ptr<Apply>>> destroy_order(const FunctionGraph& fg,
                                                                 std::pair<const Apply*, int> extra,
                                                                 const std::function<bool(const Apply&)>& recorded) {
  const auto order = fg.toposort();
  const int n = static_cast<int>(order.size());
  std::unordered_map<const Apply*, int> idx;
  for (int i = 0; i < n; ++i) idx[order[i].get()] = i;
  std::vector<std::vector<int>> succ(n);
  std::vector<int> indeg(n, 0);
  auto edge = [&](int a, int b) {
    succ[a].push_back(b);
    ++indeg[b];
  };
  std::vector<bool> last(n, false);
  std::vector<std::pair<int, int>> destroyed;  // (node index, input)
  for (int b = 0; b < n; ++b) {
    const Apply& a = *order[b];
    for (const Var& v : a.inputs)
      if (v->owner)
        if (auto it = idx.find(v->owner); it != idx.end()) edge(it->second, b);
    for (const auto& o : a.op->destroy_map())
      for (int i : o) destroyed.emplace_back(b, i);
    last[b] = destroys_shared(a);
  }
  if (extra.first) {
    const int b = idx.at(extra.first);
    destroyed.emplace_back(b, extra.second);
    last[b] = last[b] || extra.first->inputs[extra.second]->is_shared();
  }
  for (const auto& d : destroyed) {
    const int b = d.first;  // a named copy: clang 14 cannot capture a structured binding
    for_each_reader_before(fg, *order[b], d.second, [&](const Apply* c) { edge(idx.at(c), b); });
  }
  // Each node's group: 0, or with `recorded` 0 for the others that depend on no recorded node, 1
  // for the recorded ones, 2 for the others (the toposort lists inputs' owners first).
  std::vector<int> group(n, 0);
  if (recorded)
    for (int b = 0; b < n; ++b) {
      bool after = false;
      for (const Var& v : order[b]->inputs)
        if (v->owner)
          if (auto it = idx.find(v->owner); it != idx.end()) after = after || group[it->second] > 0;
      group[b] = recorded(*order[b]) ? 1 : after ? 2 : 0;
    }
  // Kahn's algorithm, keeping the plain toposort's order where the constraints allow, with the
  // nodes that overwrite shared variables after all others, and the groups in their order.
  using Key = std::tuple<bool, int, int>;
  std::priority_queue<Key, std::vector<Key>, std::greater<Key>> ready;
  for (int i = 0; i < n; ++i)
    if (indeg[i] == 0) ready.push({last[i], group[i], i});
  std::vector<std::shared_ptr<Apply>> result;
  result.reserve(n);
  while (!ready.empty()) {
    const int i = std::get<2>(ready.top());
    ready.pop();
    result.push_back(order[i]);
    for (int s : succ[i])
      if (--indeg[s] == 0) ready.push({last[s], group[s], s});
  }
  if (static_cast<int>(result.size()) != n) return std::nullopt;
  return result;
}

bool destroy_keeps_order(const FunctionGraph& fg, const Apply& n, int input) {
  std::unordered_set<const Apply*> readers;  // the sources of the new constraints
  for_each_reader_before(fg, n, input, [&](const Apply* c) { readers.insert(c); });
  bool ok = true;
  if (!readers.empty()) {
    // The existing constraints: a reader of a value that node d destroys runs before d.
    std::unordered_map<const Apply*, std::vector<const Apply*>> before;
    fg.any_node([&](const Apply& d) {
      for (const auto& o : d.op->destroy_map())
        for (int i : o) for_each_reader_before(fg, d, i, [&](const Apply* c) { before[c].push_back(&d); });
      return false;
    });
    std::unordered_set<const Apply*> seen{&n};
    std::vector<const Apply*> stack{&n};
    while (!stack.empty() && ok) {
      const Apply* a = stack.back();
      stack.pop_back();
      auto visit = [&](const Apply* b) {
        if (!seen.insert(b).second) return;
        if (readers.count(b)) ok = false;
        stack.push_back(b);
      };
      for (int o = 0; o < a->nout(); ++o)
        for (const Client& c : fg.clients(a->output_ptr(o)))
          if (c.node) visit(c.node);
      if (auto it = before.find(a); it != before.end())
        for (const Apply* d : it->second) visit(d);
    }
  }
  if (config().debug_checks && ok != destroy_order(fg, {&n, input}).has_value())
    fail<InternalError>("destroy_keeps_order: ", n.op->name(), " overwriting its input ", input, ": the search says ",
                        ok ? "an order exists" : "no order exists", " and destroy_order the opposite");
  return ok;
}

}  // namespace hypatia
