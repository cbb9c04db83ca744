// Elementwise fusion (phase elemwise_fusion, after blas and merge2, before inplace_elemwise), in
// one global pass. Expects the specialized graph (sqr, reciprocal, ... as the fused kernels know
// them) and a RewriteTarget with a fusable function and fusion limits (without one nothing fuses).
// Guarantees: each fused node replaces outputs of its exact types; its elementwise results are
// the unfused steps' (computed one tile at a time), a fused reduction's up to its order of
// accumulation. What it fuses:
//  1. Groups of float elementwise nodes of one dtype become one fused node computed in one pass
//     over memory. Casts between float16 and float32 join float32 groups (float16 storage with
//     float32 arithmetic: the fused loop loads float16 inputs, rounds where the graph rounds and
//     stores float16 results, so x * 2 + 1 on float16 is one pass, not five). A group grows from
//     a root (the graph is walked from its outputs) to the fusible producers of its inputs, the
//     fusible readers of its results and the fusible readers of its inputs (siblings), while it
//     stays convex (no path leaves the group and comes back, so the fused node creates no cycle)
//     and within the target's bounds (RewriteTarget: 8 inputs and 4 outputs on the CPU) and 16
//     steps with a result of their own. A result read only inside the group is computed per tile
//     and never stored; one read outside (a graph output, a non-fusible reader) is an output. One
//     output gives a Composite; several (all of one broadcastable pattern, and provably of one
//     shape at run time) a MultiComposite.
//  2. A Sum, Prod, Max or Min over the result of a Composite or a fusible Elemwise that only
//     such reductions read (at most 3) becomes a CompositeReduce, which never materialises that
//     result (each reduction computes the program again). Trees feeding reductions are grouped
//     first, as single-output trees, so that multi-output groups do not take their nodes.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <span>
#include <unordered_map>
#include <unordered_set>

#include "hypatia/ops/composite.h"
#include "hypatia/ops/reduce.h"
#include "hypatia/rewrite/passes.h"
#include "hypatia/rewrite/rewrite_util.h"
#include "hypatia/rewrite/target.h"

namespace hypatia::rewrite {
namespace {

/// Capacities of a group's input and output lists; the target's limits may be lower. kMaxSteps
/// bounds the steps with a result of their own (a float16 result cast back to float32 is read
/// where its rounding is), kMaxMembers every node.
constexpr int kMaxInputs = 8;
constexpr int kMaxSteps = 16;
constexpr int kMaxMembers = 2 * kMaxSteps;
constexpr int kMaxOutputs = 4;
/// Ancestors visited by one convexity check before giving up (the candidate is then refused).
constexpr size_t kConvexityBudget = 4096;
/// Readers of one input considered as siblings.
constexpr size_t kMaxSiblingScan = 16;
/// Most reductions that each take a copy of one elementwise program.
constexpr int kMaxReduceReaders = 3;

/// The dtype a fused program computes `n` in, or nullopt when n cannot fuse: an Elemwise node
/// that reads and writes one float dtype, with a loop for it in the target's fused kernel, or a
/// cast between float16 and float32 (float16 storage, float32 arithmetic), which the target's
/// fused kernel does as a load, a rounding or a store when it accepts Cast for float32.
std::optional<DType> fusion_dtype(const Apply* n) {
  const Elemwise* e = elemwise_op(n);
  if (!e) return std::nullopt;
  const DType dt = n->output_ptr(0)->dtype();
  DType compute = dt;
  if (e->scalar == ScalarOpKind::Cast) {
    const DType from = n->inputs[0]->dtype();
    if (!((from == DType::Float16 && dt == DType::Float32) || (from == DType::Float32 && dt == DType::Float16)))
      return std::nullopt;
    compute = DType::Float32;
  } else {
    if (dt != DType::Float32 && dt != DType::Float64) return std::nullopt;
    for (const auto& in : n->inputs)
      if (in->dtype() != dt) return std::nullopt;
    std::vector<DType> dts(n->inputs.size(), dt);
    if (elemwise_compute_dtype(e->scalar, dts, dt) != dt) return std::nullopt;
  }
  const RewriteTarget* t = current_rewrite_target();
  if (!t || !t->fusable || !t->fusable(*e, compute)) return std::nullopt;
  return compute;
}

bool fusible(const Apply* n) { return fusion_dtype(n).has_value(); }

/// The step computing n's output from the values `args`.
CompositeStep fused_step(const Apply& n, std::vector<int> args) {
  const auto& e = static_cast<const Elemwise&>(*n.op);
  return CompositeStep{e.scalar, std::move(args), e.scalar == ScalarOpKind::Cast ? e.cast_to : DType::Float32};
}

/// The dtypes of `inputs`.
std::vector<DType> dtypes_of(const std::vector<Var>& inputs) {
  std::vector<DType> d;
  for (const Var& v : inputs) d.push_back(v->dtype());
  return d;
}

/// A reduction CompositeReduce can take over: sum, prod, max or min of a float input over some
/// axes, in that dtype (or float64 for sums and products).
const Reduce* fusible_reduce(const Apply* n) {
  if (!n || typeid(*n->op) != typeid(Reduce)) return nullptr;
  const auto& r = static_cast<const Reduce&>(*n->op);
  const DType in = n->inputs[0]->dtype();
  if (r.axes.empty() || (in != DType::Float32 && in != DType::Float64)) return nullptr;
  const bool sum_like = r.kind == ReduceKind::Sum || r.kind == ReduceKind::Prod;
  if (!sum_like && r.kind != ReduceKind::Max && r.kind != ReduceKind::Min) return nullptr;
  if (r.dtype != in && !(sum_like && r.dtype == DType::Float64)) return nullptr;
  return &r;
}

/// Whether v is read only by reductions that can absorb its program (each gets its own copy of
/// the program: recomputing is cheaper than storing v and reading it back).
bool reduce_fed(const FunctionGraph& fg, const Variable* v) {
  const auto& cl = fg.clients(v);
  if (cl.empty() || static_cast<int>(cl.size()) > kMaxReduceReaders) return false;
  return std::all_of(cl.begin(), cl.end(), [](const Client& c) { return fusible_reduce(c.node) != nullptr; });
}

/// A topological numbering of the graph's nodes (a fused node gets a number between its
/// producers' and its readers').
using Positions = std::unordered_map<const Apply*, double>;

/// The lazy inputs (node, input index: an ifelse's branch values) that alone read a node's
/// results, directly or through nodes read only so; empty for a node something eager reads (a
/// graph output, an input that is not lazy). The runtime runs a node of a non-empty set only when
/// one of them asks for it, so the nodes of one fused group must have the same set: fusing a
/// branch's node with an eager one (or the other branch's) would run the branch, and its
/// producers, whatever the condition.
using Gate = std::vector<std::pair<const Apply*, int>>;
using Gates = std::unordered_map<const Apply*, Gate>;

Gates gates(const FunctionGraph& fg) {
  Gates g;
  const auto order = fg.toposort();
  for (auto it = order.rbegin(); it != order.rend(); ++it) {  // readers before producers
    const Apply* n = it->get();
    Gate set;
    bool eager = false;
    for (int k = 0; k < n->nout() && !eager; ++k)
      for (const Client& c : fg.clients(n->output_ptr(k))) {
        if (!c.node) {
          eager = true;
          break;
        }
        const std::vector<bool> lazy = c.node->op->lazy_inputs();
        if (static_cast<size_t>(c.index) < lazy.size() && lazy[static_cast<size_t>(c.index)]) {
          set.emplace_back(c.node, c.index);
          continue;
        }
        auto r = g.find(c.node);
        if (r == g.end() || r->second.empty()) {
          eager = true;
          break;
        }
        set.insert(set.end(), r->second.begin(), r->second.end());
      }
    if (eager) set.clear();
    std::sort(set.begin(), set.end());
    set.erase(std::unique(set.begin(), set.end()), set.end());
    g[n] = std::move(set);
  }
  return g;
}

/// One group being grown from a root.
class Group {
 public:
  /// `single`: a tree with one output (the root), grown through producers only.
  Group(const FunctionGraph& fg, const Positions& pos, const Gates& gates, Apply* root, bool single)
      : fg_(fg),
        pos_(pos),
        gates_(gates),
        dt_(*fusion_dtype(root)),
        single_(single),
        members_{root},
        lo_{pos.at(root)} {
    const RewriteTarget* t = current_rewrite_target();
    max_inputs_ = std::clamp(t ? t->max_fusion_inputs : 0, 0, kMaxInputs);
    max_outputs_ = std::clamp(t ? t->max_fusion_outputs : 0, 0, kMaxOutputs);
  }

  /// Each member's neighbours are tried once, in the order members joined; a refused candidate
  /// is tried again after the others (a later member can make it fit, e.g. by reading the result
  /// it would have had to output), until a round adds nothing.
  void grow() {
    // Refused candidates, with the group size then: one is tried again only once the group grew.
    std::vector<std::pair<Apply*, size_t>> refused;
    auto offer = [&](Apply* x) {
      if (!candidate(x)) return false;
      auto it = std::find_if(refused.begin(), refused.end(), [&](const auto& r) { return r.first == x; });
      if (it != refused.end() && it->second >= members_.size()) return false;
      if (try_add(x)) {
        if (it != refused.end()) refused.erase(it);
        return true;
      }
      if (it != refused.end())
        it->second = members_.size();
      else
        refused.emplace_back(x, members_.size());
      return false;
    };
    size_t expanded = 0;
    while (!full()) {
      for (; expanded < members_.size() && !full(); ++expanded) {
        Apply* m = members_[expanded];
        for (const Var& u : m->inputs) offer(u->owner);
        if (single_) continue;
        for (const Client& c : fg_.clients(m->output_ptr(0))) offer(c.node);
        for (const Var& u : m->inputs) {
          if (!sibling_source(u)) continue;
          const auto& cl = fg_.clients(u.get());
          for (size_t c = 0; c < cl.size() && c < kMaxSiblingScan; ++c)
            if (cl[c].node && inputs_before(cl[c].node)) offer(cl[c].node);
        }
      }
      bool added = false;
      for (size_t r = 0; r < refused.size() && !full(); ++r)
        if (refused[r].second < members_.size() && offer(refused[r].first)) {
          added = true;
          --r;  // offer erased it
        }
      if (!added) break;
    }
  }

  size_t size() const { return members_.size(); }
  const std::vector<Apply*>& members() const { return members_; }
  /// The lazy inputs that alone read x's results (Gate).
  const Gate& gate(const Apply* x) const {
    static const Gate none;
    auto it = gates_.find(x);
    return it == gates_.end() ? none : it->second;
  }
  /// The results read outside the group, in graph order.
  std::vector<Var> outputs() const {
    std::vector<Apply*> sorted = members_;
    std::sort(sorted.begin(), sorted.end(), [&](Apply* a, Apply* b) { return pos_.at(a) < pos_.at(b); });
    std::vector<Var> outs;
    for (Apply* m : sorted)
      if (read_outside(m)) outs.push_back(m->output(0));
    return outs;
  }

  /// The fused op's inputs and program computing `outs`: post-order from each output, inputs
  /// numbered in the order they are met.
  std::pair<std::vector<Var>, std::shared_ptr<const Op>> build(const std::vector<Var>& outs) const {
    std::vector<Var> externals;
    std::unordered_map<const Variable*, int> index;
    std::function<void(const Var&)> find_inputs = [&](const Var& v) {
      if (index.count(v.get())) return;
      if (v->owner && in(v->owner)) {
        for (const Var& a : v->owner->inputs) find_inputs(a);
        index[v.get()] = -1;  // visited
        return;
      }
      const Var* load = loaded_from(v);
      if (load) {
        index[v.get()] = -1;  // a load step reads the float16 value instead
        if (index.count(load->get())) return;
      }
      const Var& src = load ? *load : v;
      index[src.get()] = static_cast<int>(externals.size());
      externals.push_back(src);
    };
    for (const Var& o : outs) find_inputs(o);
    for (auto it = index.begin(); it != index.end();) it = it->second < 0 ? index.erase(it) : std::next(it);
    std::vector<CompositeStep> steps;
    std::function<int(const Var&)> emit = [&](const Var& v) -> int {
      if (auto f = index.find(v.get()); f != index.end()) return f->second;
      std::vector<int> args;
      if (const Var* load = loaded_from(v)) {
        args.push_back(index.at(load->get()));
      } else {
        for (const Var& a : v->owner->inputs) args.push_back(emit(a));
      }
      steps.push_back(fused_step(*v->owner, std::move(args)));
      const int id = static_cast<int>(externals.size() + steps.size() - 1);
      index[v.get()] = id;
      return id;
    };
    std::vector<int> out_ids;
    for (const Var& o : outs) out_ids.push_back(emit(o));
    const int nin = static_cast<int>(externals.size());
    if (outs.size() == 1)
      return {externals, std::make_shared<Composite>(nin, dt_, std::move(steps), -1, dtypes_of(externals))};
    return {externals,
            std::make_shared<MultiComposite>(nin, dt_, std::move(steps), std::move(out_ids), dtypes_of(externals))};
  }

 private:
  bool full() const {
    return steps_ >= static_cast<size_t>(kMaxSteps) || members_.size() >= static_cast<size_t>(kMaxMembers);
  }

  /// Whether member m casts a float16 member result back to float32 (no step of its own).
  bool rereads(const Apply* m) const { return is_load(m) && m->inputs[0]->owner && in(m->inputs[0]->owner); }

  /// The members that are steps with a result of their own (an output is one).
  size_t own_steps() const {
    return static_cast<size_t>(
        std::count_if(members_.begin(), members_.end(), [&](Apply* m) { return !rereads(m) || read_outside(m); }));
  }

  /// Whether other readers of external input u may join (sibling fusion: u is then read once).
  /// Only full-size computed or input arrays: reading a broadcast constant twice costs nothing.
  bool sibling_source(const Var& u) const {
    if (u->owner && in(u->owner)) return false;
    return !u->is_constant() && u->type.broadcastable == members_[0]->output_ptr(0)->type.broadcastable;
  }

  /// Whether every input of x is a leaf, a member's result or computed before every member: the
  /// siblings worth reading an input once with (unrelated nodes far down the graph are not).
  bool inputs_before(const Apply* x) const {
    const double lo = lowest();
    for (const Var& u : x->inputs)
      if (u->owner && !in(u->owner)) {
        auto p = pos_.find(u->owner);
        if (p == pos_.end() || p->second >= lo) return false;
      }
    return true;
  }

  /// Whether n casts float16 to float32 for a float32 group (a load in the fused loop).
  bool is_load(const Apply* n) const {
    return dt_ == DType::Float32 && n->inputs.size() == 1 && n->inputs[0]->dtype() == DType::Float16 &&
           n->output_ptr(0)->dtype() == DType::Float32 && fusion_dtype(n) == DType::Float32;
  }

  /// The float16 value the fused loop loads itself when u, an input from outside the group, is
  /// its cast to float32 (read as two bytes instead of four; the cast node, if nothing else reads
  /// it, is gone): null when u is not such a cast.
  const Var* loaded_from(const Var& u) const {
    if (!u->owner || !is_load(u->owner) || in(u->owner)) return nullptr;
    return &u->owner->inputs[0];
  }

  /// Membership by linear search: groups have at most kMaxMembers members.
  bool in(const Apply* x) const { return std::find(members_.begin(), members_.end(), x) != members_.end(); }

  bool read_outside(const Apply* m) const {
    for (const Client& c : fg_.clients(m->output_ptr(0)))
      if (!c.node || !in(c.node)) return true;
    return false;
  }

  bool candidate(Apply* x) const {
    return x && !full() && !in(x) && fusion_dtype(x) == dt_ && pos_.count(x) && gate(x) == gate(members_[0]);
  }

  bool try_add(Apply* x) {
    members_.push_back(x);
    lo_.push_back(std::min(lo_.back(), pos_.at(x)));
    if (valid()) {
      steps_ = own_steps();
      return true;
    }
    members_.pop_back();
    lo_.pop_back();
    return false;
  }

  /// The smallest position of a member.
  double lowest() const { return lo_.back(); }

  bool valid() const {
    std::array<const Var*, kMaxInputs> ext;
    int n_ext = 0;
    size_t loads = 0;  // the steps of the float16 loads that build() adds
    for (Apply* m : members_)
      for (const Var& u : m->inputs) {
        if (u->owner && in(u->owner)) continue;
        const Var* load = loaded_from(u);
        const Var& src = load ? *load : u;
        bool seen = false;
        for (int e = 0; e < n_ext && !seen; ++e) seen = ext[e]->get() == src.get();
        if (seen) continue;
        if (n_ext == max_inputs_) return false;
        ext[n_ext++] = &src;
        if (load) ++loads;
      }
    if (own_steps() + loads > static_cast<size_t>(kMaxSteps)) return false;
    std::array<const Variable*, kMaxOutputs> outs;
    int n_out = 0;
    for (Apply* m : members_)
      if (read_outside(m)) {
        // A float16 load that others read too stays outside: build() loads a copy instead.
        if (m != members_[0] && is_load(m) && !rereads(m)) return false;
        if (n_out == (single_ ? 1 : max_outputs_)) return false;
        outs[n_out++] = m->output_ptr(0);
      }
    if (n_out > 1) {
      for (int k = 0; k < n_out; ++k) {
        // One broadcastable pattern (the dtypes may differ: float32 and float16 results).
        if (outs[k]->type.broadcastable != outs[0]->type.broadcastable) return false;
        // A result only reductions read is left to reduction fusion (never stored at all).
        if (reduce_fed(fg_, outs[k])) return false;
      }
      if (!one_shape({outs.data(), static_cast<size_t>(n_out)})) return false;
    }
    return convex({ext.data(), static_cast<size_t>(n_ext)});
  }

  /// Whether the outputs surely have one shape at run time: on each non-broadcastable dim they
  /// are linked by group nodes, each of which requires its non-broadcastable inputs to match its
  /// output. (Two unrelated results of one type may differ in shape.)
  bool one_shape(std::span<const Variable* const> outs) const {
    // Union-find over the variables the members read and write, by index in `vars`.
    std::vector<const Variable*> vars;
    std::vector<int> parent;
    auto id = [&](const Variable* v) {
      auto it = std::find(vars.begin(), vars.end(), v);
      if (it != vars.end()) return static_cast<int>(it - vars.begin());
      vars.push_back(v);
      parent.push_back(static_cast<int>(parent.size()));
      return static_cast<int>(vars.size()) - 1;
    };
    auto find = [&](int i) {
      while (parent[i] != i) i = parent[i] = parent[parent[i]];
      return i;
    };
    const auto& bc = outs[0]->type.broadcastable;
    for (int d = 0; d < static_cast<int>(bc.size()); ++d) {
      if (bc[d]) continue;
      vars.clear();
      parent.clear();
      for (Apply* m : members_) {
        const Variable* o = m->output_ptr(0);
        if (o->type.broadcastable[d]) continue;
        for (const Var& u : m->inputs)
          if (!u->type.broadcastable[d]) {
            const int ui = id(u.get()), oi = id(o);
            parent[find(ui)] = find(oi);
          }
      }
      const int root = find(id(outs[0]));
      for (const Variable* o : outs)
        if (find(id(o)) != root) return false;
    }
    return true;
  }

  /// Whether no path leaves the group and comes back: no external input depends on a member.
  /// Ancestors placed before every member cannot, so the search stops there.
  bool convex(std::span<const Var* const> externals) const {
    const double lo = lowest();
    std::vector<const Apply*> stack;
    for (const Var* u : externals)
      if ((*u)->owner && pos_.at((*u)->owner) > lo) stack.push_back((*u)->owner);
    if (stack.empty()) return true;
    std::unordered_set<const Apply*> seen;
    while (!stack.empty()) {
      const Apply* y = stack.back();
      stack.pop_back();
      if (in(y)) return false;
      auto p = pos_.find(y);
      if (p == pos_.end() || p->second < lo || !seen.insert(y).second) continue;
      if (seen.size() > kConvexityBudget) return false;
      for (const Var& v : y->inputs)
        if (v->owner) stack.push_back(v->owner);
    }
    return true;
  }

  const FunctionGraph& fg_;
  const Positions& pos_;
  const Gates& gates_;
  DType dt_;
  bool single_;
  int max_inputs_ = 0, max_outputs_ = 0;
  std::vector<Apply*> members_;
  size_t steps_ = 1;        // own_steps() of the members
  std::vector<double> lo_;  // lo_[k]: the smallest position of members 0..k
};

Positions positions(const FunctionGraph& fg) {
  Positions pos;
  double i = 0;
  for (const auto& n : fg.toposort()) pos[n.get()] = i++;
  return pos;
}

/// Gives the fused node `f` a place in `pos` between its producers and its readers (the order
/// stays topological without a new sort); false when there is no room.
bool place(const FunctionGraph& fg, Positions& pos, const Apply* f) {
  double a = -1, b = std::numeric_limits<double>::infinity();
  for (const Var& u : f->inputs)
    if (u->owner) a = std::max(a, pos.at(u->owner));
  for (int k = 0; k < f->nout(); ++k)
    for (const Client& c : fg.clients(f->output_ptr(k))) {
      if (!c.node) continue;
      auto it = pos.find(c.node);
      if (it == pos.end()) return false;
      b = std::min(b, it->second);
    }
  if (std::isinf(b)) b = a + 2;
  const double mid = (a + b) / 2;
  if (!(a < mid && mid < b)) return false;
  pos[f] = mid;
  return true;
}

bool fuse_elemwise(FunctionGraph& fg) {
  bool changed = false;
  auto order = fg.toposort();
  auto pos = positions(fg);
  Gates gate = gates(fg);
  // First the trees whose result only reductions read (they become CompositeReduce nodes), so
  // that no multi-output group takes their nodes; then every other group.
  for (int pass = 0; pass < 2; ++pass)
    for (auto it = order.rbegin(); it != order.rend(); ++it) {
      Apply* root = it->get();
      if (!fg.contains(root) || !fusible(root)) continue;
      const bool single = reduce_fed(fg, root->output_ptr(0));
      if (single != (pass == 0)) continue;
      Group g(fg, pos, gate, root, single);
      g.grow();
      if (g.size() < 2) continue;
      const std::vector<Var> olds = g.outputs();
      auto [inputs, op] = g.build(olds);
      const std::vector<Var> fused = apply_op(op, inputs);
      std::vector<Var> repl;
      for (size_t k = 0; k < olds.size(); ++k) repl.push_back(as_type(fused[k], olds[k]->type));
      if (std::find(repl.begin(), repl.end(), nullptr) != repl.end()) continue;
      std::vector<std::pair<Var, Var>> pairs;
      for (size_t k = 0; k < olds.size(); ++k) pairs.emplace_back(olds[k], repl[k]);
      const Gate group_gate = g.gate(root);
      for (const Apply* m : g.members()) gate.erase(m);  // (gone: their addresses may be reused)
      replace_by_rewrite(fg, pairs, "elemwise_fusion");
      gate[fused[0]->owner] = group_gate;
      if (repl != fused || !place(fg, pos, fused[0]->owner)) pos = positions(fg);
      changed = true;
    }
  return changed;
}

bool fuse_reductions(FunctionGraph& fg) {
  bool changed = false;
  for (const auto& n : fg.toposort()) {
    if (!fg.contains(n.get())) continue;
    const Reduce* r = fusible_reduce(n.get());
    if (!r) continue;
    const Var& x = n->inputs[0];
    const Apply* o = x->owner;
    if (!o || !reduce_fed(fg, x.get())) continue;
    std::vector<Var> inputs;
    std::vector<CompositeStep> steps;
    if (typeid(*o->op) == typeid(Composite) && static_cast<const Composite&>(*o->op).inplace < 0) {
      inputs = o->inputs;
      steps = static_cast<const Composite&>(*o->op).steps;
    } else if (fusion_dtype(o) == x->dtype()) {
      std::vector<int> args;
      for (const Var& v : o->inputs) {
        auto f = std::find(inputs.begin(), inputs.end(), v);
        args.push_back(static_cast<int>(f - inputs.begin()));
        if (f == inputs.end()) inputs.push_back(v);
      }
      steps.push_back(fused_step(*o, std::move(args)));
    } else {
      continue;
    }
    auto op = std::make_shared<CompositeReduce>(static_cast<int>(inputs.size()), x->dtype(), std::move(steps), r->kind,
                                                r->axes, r->dtype, dtypes_of(inputs));
    Var old = n->output(0);
    Var repl = as_type(apply_op1(op, inputs), old->type);
    if (!repl) continue;
    replace_by_rewrite(fg, {{old, repl}}, "reduction_fusion");
    changed = true;
  }
  return changed;
}

}  // namespace

bool fusion_pass(FunctionGraph& fg) {
  const bool a = fuse_elemwise(fg);
  const bool b = fuse_reductions(fg);
  return a || b;
}

}  // namespace hypatia::rewrite
