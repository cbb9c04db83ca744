// Scan rules (phase canonicalize).
// - local_scan_push_out_seq: work in the body that depends only on sequence elements (one tap),
//   non-sequences and constants (elementwise ops and matrix products whose first operand is such
//   a value) is done once over the whole sequence outside the loop, and its result read as a new
//   sequence: an RNN's x_t U becomes one matrix product X U (seed 002's "this should be just a
//   GEMM call"). Only when a matrix product moves; not for until loops (they may stop early).
// - local_scan_push_out_non_seq: work that depends only on non-sequences (W.T of a weight) is
//   done once before the loop and read as a new non-sequence.
// - scan_save_mem (a pass, in phase control_flow): a state whose trace is only read at its last step
//   (out[-1]) is not traced: the loop keeps a ring of window + 1 rows instead of every step's
//   value. It runs inside function(), after gradients were taken (ScanGrad reads the whole trace,
//   so a state under a gradient keeps it).
// - scan_merge (a pass, phase scan_merge, just before control_flow): scans of the same n_steps
//   and truncation, without until, none depending on another, become one loop running every body
//   (one pass over the steps instead of several).
// - local_scan_twin: a Scan whose loop another Scan runs too (Scan::grad's twin: the same inputs
//   and body, also tracing the residuals its gradient reads and every state) takes that Scan's
//   outputs, so the forward pass runs once (an untraced state, a shared variable's update or a
//   random state, takes the trace's last row). The push-out rules wait for it (they would
//   rebuild the bodies apart).
// - local_scan_grad_unused: a ScanGrad computes per step only the gradients the function reads
//   (a gradient output without readers is dropped from its body, so a model that asks for the
//   weights' gradients does not also pay for the inputs' each step).
// - local_scan_grad_zero_rows: an output gradient that is zeros of the trace's shape (the cost
//   does not reach the output) or zeros with a value at one constant step (the cost reads
//   out[-1]) is given to the ScanGrad as nothing or as that value alone (ScanGrad::g_form): no
//   trace-sized buffer is filled and read per step.
// Expect Scan and ScanGrad nodes as scan_node and Scan::grad build them; guarantee replacements of
// the same output types and, for every output that is read, the same values (unread ones of a
// pruned ScanGrad become zeros).
#include "hypatia/ops/scan.h"

#include <algorithm>
#include <map>
#include <unordered_map>
#include <unordered_set>

#include "hypatia/graph/fgraph.h"
#include "hypatia/ops/blas.h"
#include "hypatia/ops/elemwise.h"
#include "hypatia/ops/ifelse.h"
#include "hypatia/ops/shape.h"
#include "hypatia/ops/subtensor.h"
#include "hypatia/rewrite/passes.h"
#include "hypatia/rewrite/rewrite_util.h"
#include "hypatia/rewrite/rewriter.h"

namespace hypatia::rewrite {
namespace {

/// The outer input (index among the ScanGrad's outputs: sequences, windows, non-sequences) that
/// forward inner input i reads.
std::vector<size_t> output_of_inner(const ScanInfo& info) {
  std::vector<size_t> r;
  size_t outer = 0;
  for (const auto& taps : info.seq_taps) {
    r.insert(r.end(), taps.size(), outer);
    ++outer;
  }
  for (const auto& taps : info.state_taps) {
    r.insert(r.end(), taps.size(), outer);
    ++outer;
  }
  for (int j = 0; j < info.n_nonseq; ++j) r.push_back(outer++);
  return r;
}

std::optional<std::vector<Var>> scan_grad_unused(FunctionGraph& fg, Apply& n) {
  const auto& op = static_cast<const ScanGrad&>(*n.op);
  const std::vector<size_t> out_of = output_of_inner(op.info);
  std::vector<bool> used(static_cast<size_t>(n.nout()), false);
  for (int o = 0; o < n.nout(); ++o) used[o] = !fg.clients(n.output_ptr(o)).empty();
  // States' window gradients feed the step before; they are needed whenever any gradient is.
  std::vector<Var> outs;
  std::vector<int> grad_of, acc_of;
  // (Step outputs are kept: the product after the loop reads both traces of a pair.)
  for (size_t m = 0; m < op.grad_of.size(); ++m) {
    const size_t i = static_cast<size_t>(op.grad_of[m]);
    const bool state = i >= static_cast<size_t>(op.info.n_seq_inputs()) &&
                       i < static_cast<size_t>(op.info.n_seq_inputs() + op.info.n_state_inputs());
    if (state || used[out_of[i]]) {
      outs.push_back(op.vjp_outputs[m]);
      grad_of.push_back(op.grad_of[m]);
      acc_of.push_back(op.acc_of[m]);
    }
  }
  if (grad_of.size() == op.grad_of.size()) return std::nullopt;
  outs.insert(outs.end(), op.vjp_outputs.end() - static_cast<long>(op.step_of.size()), op.vjp_outputs.end());
  // The body's inputs lose the accumulators of the dropped gradients (the kernel binds only those
  // of the kept ones).
  std::vector<bool> keep(op.vjp_inputs.size(), true);
  for (int a : op.acc_of)
    if (a >= 0) keep[static_cast<size_t>(a)] = false;
  for (int a : acc_of)
    if (a >= 0) keep[static_cast<size_t>(a)] = true;
  std::vector<Var> ins;
  std::vector<int> new_index(op.vjp_inputs.size(), -1);
  for (size_t i = 0; i < op.vjp_inputs.size(); ++i)
    if (keep[i]) {
      new_index[i] = static_cast<int>(ins.size());
      ins.push_back(op.vjp_inputs[i]);
    }
  for (int& a : acc_of)
    if (a >= 0) a = new_index[static_cast<size_t>(a)];
  auto pruned = std::make_shared<ScanGrad>(op.info, op.forward_input_types, ins, outs, op.cot_of, grad_of, acc_of,
                                           op.step_of, op.g_form);
  return apply_op(pruned, n.inputs);
}

/// Whether v is Alloc(0, Shape_i{0}(trace), Shape_i{1}(trace), ...): zeros of trace's shape.
bool zeros_of_shape_of(const Var& v, const Var& trace) {
  const Apply* a = v->owner;
  if (!a || typeid(*a->op) != typeid(Alloc) || !is_constant_value(a->inputs[0], 0) ||
      a->inputs.size() != static_cast<size_t>(trace->ndim()) + 1)
    return false;
  for (int d = 0; d < trace->ndim(); ++d) {
    const Apply* s = a->inputs[static_cast<size_t>(d) + 1]->owner;
    const auto* si = s ? dynamic_cast<const ShapeI*>(s->op.get()) : nullptr;
    if (!si || si->i != d || s->inputs[0].get() != trace.get()) return false;
  }
  return true;
}

std::optional<std::vector<Var>> scan_grad_zero_rows(FunctionGraph&, Apply& n) {
  const auto& op = static_cast<const ScanGrad&>(*n.op);
  const size_t n_fwd = op.forward_input_types.size(), n_outs = op.g_form.size(), g_base = n_fwd + n_outs;
  using Form = ScanGrad::OutputGradient::Form;
  std::vector<ScanGrad::OutputGradient> form = op.g_form;
  std::vector<Var> ins(n.inputs.begin(), n.inputs.end());
  bool changed = false;
  for (size_t o = 0; o < n_outs; ++o) {
    const Var& g = n.inputs[g_base + o];
    const Var& trace = n.inputs[n_fwd + o];
    if (form[o].form != Form::Trace || !(g->type == trace->type) || trace->ndim() < 1) continue;
    if (zeros_of_shape_of(g, trace)) {  // no gradient reaches this output
      form[o].form = Form::None;
      ins[g_base + o] = g->owner->inputs[0];
      changed = true;
      continue;
    }
    // zeros with a value set or added at one constant step: out[k]'s gradient alone
    const Apply* inc = g->owner;
    if (!inc || typeid(*inc->op) != typeid(IncSubtensor)) continue;
    const auto& io = static_cast<const IncSubtensor&>(*inc->op);
    if (io.advanced || io.spec.size() != 1 || io.spec[0].kind != IndexEntry::Kind::Int ||
        io.spec[0].a != IndexEntry::Bound::Const || !zeros_of_shape_of(inc->inputs[0], trace))
      continue;
    const Var& v = inc->inputs[1];
    if (v->ndim() >= trace->ndim()) continue;
    form[o] = {Form::Row, io.spec[0].av};
    ins[g_base + o] = v->dtype() == trace->dtype() ? v : cast(v, trace->dtype());
    changed = true;
  }
  if (!changed) return std::nullopt;
  auto sparse = std::make_shared<ScanGrad>(op.info, op.forward_input_types, op.vjp_inputs, op.vjp_outputs, op.cot_of,
                                           op.grad_of, op.acc_of, op.step_of, form);
  return apply_op(sparse, ins);
}

/// The values of moved nodes that the rest of the body (or its outputs) reads: what the loop must
/// now receive from outside.
std::vector<Var> frontier_of(const std::vector<Var>& inner_outputs, const std::unordered_set<const Apply*>& pushed) {
  std::vector<Var> frontier;
  std::unordered_set<const Variable*> seen;
  auto take = [&](const Var& v) {
    if (v->owner && pushed.count(v->owner) && seen.insert(v.get()).second) frontier.push_back(v);
  };
  for (const auto& node : toposort(inner_outputs))
    if (!pushed.count(node.get()))
      for (const Var& v : node->inputs) take(v);
  for (const Var& v : inner_outputs) take(v);
  return frontier;
}

/// Whether Scan b runs Scan a's loop and more: the same outer inputs and inner inputs, a's outputs
/// first among b's (the same variables; an until condition last in both), the same taps and
/// stopping, every state a traces traced by b too, more nit-sots allowed (Scan::grad's twin, which
/// traces every state and the residuals).
bool runs_loop_of(const Apply& a, const Apply& b) {
  if (&a == &b || typeid(*b.op) != typeid(Scan) || a.inputs.size() != b.inputs.size()) return false;
  for (size_t i = 0; i < a.inputs.size(); ++i)
    if (a.inputs[i].get() != b.inputs[i].get()) return false;
  const auto& oa = static_cast<const Scan&>(*a.op);
  const auto& ob = static_cast<const Scan&>(*b.op);
  const ScanInfo &ia = oa.info, &ib = ob.info;
  for (size_t k = 0; k < ia.state_traced.size() && k < ib.state_traced.size(); ++k)
    if (ia.state_traced[k] && !ib.state_traced[k]) return false;
  if (ia.seq_taps != ib.seq_taps || ia.state_taps != ib.state_taps ||
      ia.state_traced.size() != ib.state_traced.size() || ia.until != ib.until ||
      ia.truncate_gradient != ib.truncate_gradient || ia.n_nonseq != ib.n_nonseq || ia.n_nitsot > ib.n_nitsot ||
      oa.inner_inputs.size() != ob.inner_inputs.size() || oa.inner_outputs.size() > ob.inner_outputs.size())
    return false;
  for (size_t i = 0; i < oa.inner_inputs.size(); ++i)
    if (oa.inner_inputs[i].get() != ob.inner_inputs[i].get()) return false;
  // States and nit-sots, then the until condition (the last inner output of both).
  const size_t own = oa.inner_outputs.size() - (ia.until ? 1 : 0);
  for (size_t i = 0; i < own; ++i)
    if (oa.inner_outputs[i].get() != ob.inner_outputs[i].get()) return false;
  return !ia.until || oa.inner_outputs.back().get() == ob.inner_outputs.back().get();
}

/// The Scan that runs n's loop and more (runs_loop_of), if the graph has one.
const Apply* twin_of(const FunctionGraph& fg, const Apply& n) {
  for (const Client& c : fg.clients(n.inputs[0].get()))
    if (c.node && runs_loop_of(n, *c.node)) return c.node;
  return nullptr;
}

/// Whether n is the larger of a twin pair not merged yet: the loop rules wait until
/// scan_twin has merged the pair (they would give the two different bodies).
bool has_smaller_twin(const FunctionGraph& fg, const Apply& n) {
  for (const Client& c : fg.clients(n.inputs[0].get()))
    if (c.node && typeid(*c.node->op) == typeid(Scan) && runs_loop_of(*c.node, n)) return true;
  return false;
}

std::optional<std::vector<Var>> scan_twin(FunctionGraph& fg, Apply& n) {
  const Apply* b = twin_of(fg, n);
  if (!b) return std::nullopt;
  const ScanInfo& info = static_cast<const Scan&>(*n.op).info;
  const size_t n_seq = info.seq_taps.size();
  std::vector<Var> outs;
  for (int o = 0; o < n.nout(); ++o) {
    Var v = const_cast<Apply*>(b)->output(o);
    const size_t k = static_cast<size_t>(o);
    if (k < info.state_traced.size() && !info.state_traced[k]) {
      // n keeps only the final value, b the trace: its last row, or the initial value's last row
      // when no step ran (unless n's output stood for trace[-1]: then its IndexError too).
      const bool last_of_trace = k < info.state_last_of_trace.size() && info.state_last_of_trace[k];
      const TensorType& t = n.output_ptr(o)->type;
      v = retype(subtensor(v, {Index(int64_t{-1})}), t);
      if (!last_of_trace)
        v = ifelse(gt(shape_i(const_cast<Apply*>(b)->output(o), 0), int_constant(0)), v,
                   retype(subtensor(n.inputs[1 + n_seq + k], {Index(int64_t{-1})}), t));
    }
    outs.push_back(v);
  }
  return outs;
}

std::optional<std::vector<Var>> scan_push_out_seq(FunctionGraph& fg, Apply& n) {
  const auto& op = static_cast<const Scan&>(*n.op);
  const ScanInfo& info = op.info;
  if (info.until || twin_of(fg, n) || has_smaller_twin(fg, n)) return std::nullopt;
  const size_t n_seq = info.seq_taps.size(), n_state = info.state_taps.size();
  const Var& n_steps = n.inputs[0];
  // Inner value -> its value at every step, outside (a leading time axis); inner non-sequence ->
  // its outer value.
  std::unordered_map<const Variable*, Var> over_time, outer_ns;
  size_t inner = 0;
  for (size_t s = 0; s < n_seq; ++s)
    for (size_t k = 0; k < info.seq_taps[s].size(); ++k, ++inner)
      if (info.seq_taps[s].size() == 1)  // row t of the sequence, for the steps that run
        over_time[op.inner_inputs[inner].get()] = subtensor(n.inputs[1 + s], {sl(int64_t{0}, n_steps)});
  inner += static_cast<size_t>(info.n_state_inputs());
  for (int j = 0; j < info.n_nonseq; ++j, ++inner)
    outer_ns[op.inner_inputs[inner].get()] = n.inputs[1 + n_seq + n_state + static_cast<size_t>(j)];
  auto invariant = [&](const Var& v) -> Var {
    if (v->is_constant()) return v;
    auto it = outer_ns.find(v.get());
    return it == outer_ns.end() ? Var() : it->second;
  };
  std::unordered_set<const Apply*> pushed;
  bool moved_a_product = false;
  for (const auto& node : toposort(op.inner_outputs)) {
    if (node->nout() != 1 || !node->op->destroy_map().empty() || node->op->is_random() ||
        !node->op->inner_functions().empty())
      continue;
    bool any_seq = false, ok = true;
    for (const Var& v : node->inputs) {
      if (over_time.count(v.get()))
        any_seq = true;
      else if (!invariant(v))
        ok = false;
    }
    if (!ok || !any_seq) continue;
    Var outer;
    if (elemwise_op(node.get())) {
      std::vector<Var> ins;
      for (const Var& v : node->inputs) {
        auto it = over_time.find(v.get());
        ins.push_back(it != over_time.end() ? it->second : expand_dims(invariant(v), 0));
      }
      outer = apply_op1(node->op, ins);
    } else if (typeid(*node->op) == typeid(Dot) && over_time.count(node->inputs[0].get()) &&
               !over_time.count(node->inputs[1].get()) && node->inputs[0]->ndim() >= 1) {
      outer = dot(over_time.at(node->inputs[0].get()), invariant(node->inputs[1]));
      moved_a_product = true;
    } else {
      continue;
    }
    if (outer->dtype() != node->output(0)->dtype() || outer->ndim() != node->output(0)->ndim() + 1) continue;
    over_time[node->output_ptr(0)] = outer;
    pushed.insert(node.get());
  }
  if (!moved_a_product) return std::nullopt;
  // The values the remaining body reads from moved nodes become new sequences.
  const std::vector<Var> frontier = frontier_of(op.inner_outputs, pushed);
  if (frontier.empty()) return std::nullopt;
  ScanInfo ni = info;
  std::vector<Var> inputs(op.inner_inputs.begin(), op.inner_inputs.begin() + info.n_seq_inputs());
  std::vector<Var> seqs(n.inputs.begin() + 1, n.inputs.begin() + 1 + static_cast<long>(n_seq));
  std::vector<std::pair<Var, Var>> repl;
  for (const Var& v : frontier) {
    Var elem = variable(v->type, v->name);
    inputs.push_back(elem);
    repl.emplace_back(v, elem);
    ni.seq_taps.push_back({0});
    seqs.push_back(over_time.at(v.get()));
  }
  inputs.insert(inputs.end(), op.inner_inputs.begin() + info.n_seq_inputs(), op.inner_inputs.end());
  std::vector<Var> outputs = clone_graph(op.inner_outputs, repl);
  std::vector<Var> windows(n.inputs.begin() + 1 + static_cast<long>(n_seq),
                           n.inputs.begin() + 1 + static_cast<long>(n_seq + n_state));
  std::vector<Var> nonseqs(n.inputs.begin() + 1 + static_cast<long>(n_seq + n_state), n.inputs.end());
  return scan_node(ni, inputs, outputs, n_steps, seqs, windows, nonseqs);
}

std::optional<std::vector<Var>> scan_push_out_non_seq(FunctionGraph& fg, Apply& n) {
  if (twin_of(fg, n) || has_smaller_twin(fg, n)) return std::nullopt;
  const auto& op = static_cast<const Scan&>(*n.op);
  const ScanInfo& info = op.info;
  const size_t n_seq = info.seq_taps.size(), n_state = info.state_taps.size();
  const size_t ns_base = static_cast<size_t>(info.n_seq_inputs() + info.n_state_inputs());
  std::unordered_map<const Variable*, Var> outer;  // loop-invariant inner value -> its outer value
  for (int j = 0; j < info.n_nonseq; ++j)
    outer[op.inner_inputs[ns_base + static_cast<size_t>(j)].get()] =
        n.inputs[1 + n_seq + n_state + static_cast<size_t>(j)];
  std::unordered_set<const Apply*> pushed;
  for (const auto& node : toposort(op.inner_outputs)) {
    if (node->op->destroy_map().size() > 0 || node->op->is_random() || node->op->has_side_effects() ||
        !node->op->inner_functions().empty())
      continue;
    bool ok = true, any_input = false;
    std::vector<Var> ins;
    for (const Var& v : node->inputs) {
      if (v->is_constant()) {
        ins.push_back(v);
        continue;
      }
      auto it = outer.find(v.get());
      if (it == outer.end()) {
        ok = false;
        break;
      }
      any_input = true;
      ins.push_back(it->second);
    }
    if (!ok || !any_input) continue;  // only constants: the body's constant folding takes it
    std::vector<Var> outs = apply_op(node->op, ins);
    for (int o = 0; o < node->nout(); ++o) outer[node->output_ptr(o)] = outs[o];
    pushed.insert(node.get());
  }
  const std::vector<Var> frontier = frontier_of(op.inner_outputs, pushed);
  if (frontier.empty()) return std::nullopt;
  std::vector<Var> inputs = op.inner_inputs;
  std::vector<Var> nonseqs(n.inputs.begin() + 1 + static_cast<long>(n_seq + n_state), n.inputs.end());
  std::vector<std::pair<Var, Var>> repl;
  for (const Var& v : frontier) {
    Var inner = variable(v->type, v->name);
    inputs.push_back(inner);
    repl.emplace_back(v, inner);
    nonseqs.push_back(outer.at(v.get()));
  }
  std::vector<Var> outputs = clone_graph(op.inner_outputs, repl);
  std::vector<Var> seqs(n.inputs.begin() + 1, n.inputs.begin() + 1 + static_cast<long>(n_seq));
  std::vector<Var> windows(n.inputs.begin() + 1 + static_cast<long>(n_seq),
                           n.inputs.begin() + 1 + static_cast<long>(n_seq + n_state));
  return scan_node(info, inputs, outputs, n.inputs[0], seqs, windows, nonseqs);
}

/// Whether `c` reads the last entry of its input (x[-1]).
bool reads_last(const Apply* c) {
  if (!c || typeid(*c->op) != typeid(Subtensor)) return false;
  const IndexSpec& spec = static_cast<const Subtensor&>(*c->op).spec;
  return spec.size() == 1 && spec[0].kind == IndexEntry::Kind::Int && spec[0].a == IndexEntry::Bound::Const &&
         spec[0].av == -1;
}

}  // namespace

bool scan_save_mem_pass(FunctionGraph& fg) {
  bool changed = false;
  for (const auto& n : fg.toposort()) {
    if (!fg.contains(n.get()) || typeid(*n->op) != typeid(Scan)) continue;
    const auto& op = static_cast<const Scan&>(*n->op);
    ScanInfo ni = op.info;
    std::vector<bool> last_only(ni.state_taps.size(), false);
    bool any = false;
    for (size_t k = 0; k < ni.state_taps.size(); ++k) {
      if (!ni.state_traced[k]) continue;
      const auto& cl = fg.clients(n->output_ptr(static_cast<int>(k)));
      bool all_last = !cl.empty();
      for (const Client& c : cl) all_last = all_last && reads_last(c.node);
      if (all_last) {
        last_only[k] = any = true;
        ni.state_traced[k] = false;
        ni.state_last_of_trace.resize(ni.state_taps.size(), false);
        ni.state_last_of_trace[k] = true;
      }
    }
    if (!any) continue;
    std::vector<Var> outs = apply_op(std::make_shared<Scan>(ni, op.inner_inputs, op.inner_outputs), n->inputs);
    std::vector<std::pair<Var, Var>> pairs;
    for (int o = 0; o < n->nout(); ++o) {
      if (o < static_cast<int>(last_only.size()) && last_only[o]) {
        const std::vector<Client> cl = fg.clients(n->output_ptr(o));
        for (const Client& c : cl) pairs.emplace_back(c.node->output(0), retype(outs[o], c.node->output(0)->type));
      } else {
        pairs.emplace_back(n->output(o), outs[o]);
      }
    }
    replace_by_rewrite(fg, pairs, "scan_save_mem");
    changed = true;
  }
  return changed;
}

bool scan_merge_pass(FunctionGraph& fg) {
  // Scans of the same n_steps (and truncation), without until, none reading another's output
  // (directly or not), become one loop whose body runs every body of the group.
  using Key = std::pair<const Variable*, int>;
  bool changed = false;
  const auto groups = mergeable_groups<Key>(fg, [](const Apply& n) -> std::optional<Key> {
    if (typeid(*n.op) != typeid(Scan)) return std::nullopt;
    const ScanInfo& info = static_cast<const Scan&>(*n.op).info;
    if (info.until) return std::nullopt;
    return Key{n.inputs[0].get(), info.truncate_gradient};
  });
  for (const auto& group : groups) {
    ScanInfo mi;
    mi.truncate_gradient = static_cast<const Scan&>(*group[0]->op).info.truncate_gradient;
    std::vector<Var> in_seq, in_state, in_ns, out_state, out_nitsot, seqs, windows, nonseqs;
    std::vector<std::string> names;
    for (Apply* m : group) {
      const auto& op = static_cast<const Scan&>(*m->op);
      const ScanInfo& info = op.info;
      const size_t n_seq = info.seq_taps.size(), n_state = info.state_taps.size();
      const size_t a = static_cast<size_t>(info.n_seq_inputs()), b = a + static_cast<size_t>(info.n_state_inputs());
      // Each body on fresh inputs: bodies never share a variable in the merged one.
      std::vector<Var> fresh;
      std::vector<std::pair<Var, Var>> repl;
      for (const Var& v : op.inner_inputs) {
        fresh.push_back(variable(v->type, v->name));
        repl.emplace_back(v, fresh.back());
      }
      const std::vector<Var> outs = clone_graph(op.inner_outputs, repl);
      in_seq.insert(in_seq.end(), fresh.begin(), fresh.begin() + static_cast<long>(a));
      in_state.insert(in_state.end(), fresh.begin() + static_cast<long>(a), fresh.begin() + static_cast<long>(b));
      in_ns.insert(in_ns.end(), fresh.begin() + static_cast<long>(b), fresh.end());
      out_state.insert(out_state.end(), outs.begin(), outs.begin() + static_cast<long>(n_state));
      out_nitsot.insert(out_nitsot.end(), outs.begin() + static_cast<long>(n_state), outs.end());
      seqs.insert(seqs.end(), m->inputs.begin() + 1, m->inputs.begin() + 1 + static_cast<long>(n_seq));
      windows.insert(windows.end(), m->inputs.begin() + 1 + static_cast<long>(n_seq),
                     m->inputs.begin() + 1 + static_cast<long>(n_seq + n_state));
      nonseqs.insert(nonseqs.end(), m->inputs.begin() + 1 + static_cast<long>(n_seq + n_state), m->inputs.end());
      mi.seq_taps.insert(mi.seq_taps.end(), info.seq_taps.begin(), info.seq_taps.end());
      mi.state_taps.insert(mi.state_taps.end(), info.state_taps.begin(), info.state_taps.end());
      mi.state_traced.insert(mi.state_traced.end(), info.state_traced.begin(), info.state_traced.end());
      std::vector<bool> last = info.state_last_of_trace;
      last.resize(n_state, false);
      mi.state_last_of_trace.insert(mi.state_last_of_trace.end(), last.begin(), last.end());
      mi.n_nitsot += info.n_nitsot;
      if (!info.name.empty()) names.push_back(info.name);
    }
    for (size_t i = 0; i < names.size(); ++i) mi.name += (i ? "&" : "") + names[i];
    std::vector<Var> ins = in_seq, outs_all = out_state;
    ins.insert(ins.end(), in_state.begin(), in_state.end());
    ins.insert(ins.end(), in_ns.begin(), in_ns.end());
    outs_all.insert(outs_all.end(), out_nitsot.begin(), out_nitsot.end());
    const std::vector<Var> merged = scan_node(mi, ins, outs_all, group[0]->inputs[0], seqs, windows, nonseqs);
    std::vector<std::pair<Var, Var>> pairs;
    size_t state_at = 0, nitsot_at = out_state.size();
    for (Apply* m : group) {
      const ScanInfo& info = static_cast<const Scan&>(*m->op).info;
      for (size_t k = 0; k < info.state_taps.size(); ++k)
        pairs.emplace_back(m->output(static_cast<int>(k)),
                           retype(merged[state_at++], m->output(static_cast<int>(k))->type));
      for (int j = 0; j < info.n_nitsot; ++j) {
        const int o = static_cast<int>(info.state_taps.size()) + j;
        pairs.emplace_back(m->output(o), retype(merged[nitsot_at++], m->output(o)->type));
      }
    }
    replace_by_rewrite(fg, pairs, "scan_merge");
    changed = true;
  }
  return changed;
}

bool control_flow_pass(FunctionGraph& fg) {
  const bool a = scan_save_mem_pass(fg);
  const bool b = ifelse_merge_pass(fg);
  return a || b;
}

std::vector<LocalRewrite> scan_rules() {
  return {{"local_scan_twin", {typeid(Scan)}, scan_twin},
          {"local_scan_push_out_non_seq", {typeid(Scan)}, scan_push_out_non_seq},
          {"local_scan_push_out_seq", {typeid(Scan)}, scan_push_out_seq},
          {"local_scan_grad_unused", {typeid(ScanGrad)}, scan_grad_unused},
          {"local_scan_grad_zero_rows", {typeid(ScanGrad)}, scan_grad_zero_rows}};
}

}  // namespace hypatia::rewrite
