// Scan and ScanGrad: layouts, types and builders (gradients: grad/scan_grad.cpp; kernels:
// backends/scan_kernels.cpp).
#include "hypatia/ops/scan.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "hypatia/core/error.h"
#include "hypatia/graph/fgraph.h"
#include "hypatia/ops/elemwise.h"
#include "hypatia/ops/reduce.h"
#include "hypatia/ops/shape.h"
#include "hypatia/ops/shape_util.h"
#include "hypatia/ops/subtensor.h"

namespace hypatia {

int ScanInfo::n_seq_inputs() const {
  int n = 0;
  for (const auto& t : seq_taps) n += static_cast<int>(t.size());
  return n;
}

int ScanInfo::n_state_inputs() const {
  int n = 0;
  for (const auto& t : state_taps) n += static_cast<int>(t.size());
  return n;
}

namespace {

std::string scan_who(const ScanInfo& info) { return info.name.empty() ? "scan" : "scan '" + info.name + "'"; }

void check_info(const ScanInfo& info) {
  const std::string who = scan_who(info);
  for (const auto& taps : info.seq_taps) {
    if (taps.empty()) fail<ValueError>(who, ": a sequence has no taps");
    if (!std::is_sorted(taps.begin(), taps.end()) || std::adjacent_find(taps.begin(), taps.end()) != taps.end())
      fail<ValueError>(who, ": sequence taps must be distinct and ascending");
  }
  if (info.state_traced.size() != info.state_taps.size())
    fail<ValueError>(who, ": state_traced has ", info.state_traced.size(), " entries for ", info.state_taps.size(),
                     " states");
  for (size_t k = 0; k < info.state_taps.size(); ++k) {
    const auto& taps = info.state_taps[k];
    if (taps.empty()) fail<ValueError>(who, ": state ", k, " has no taps");
    if (!std::is_sorted(taps.begin(), taps.end()) || std::adjacent_find(taps.begin(), taps.end()) != taps.end())
      fail<ValueError>(who, ": state ", k, "'s taps must be distinct and ascending");
    if (taps.back() >= 0)
      fail<ValueError>(who, ": state ", k, " has tap ", taps.back(),
                       "; a recurrent state can only read past steps (negative taps)");
  }
  if (info.n_nitsot < 0 || info.n_nonseq < 0) fail<ValueError>(who, ": negative output or input counts");
}

/// The element type of a sequence or window (its first axis dropped).
TensorType element_type(const TensorType& t) {
  return TensorType(t.dtype, std::vector<bool>(t.broadcastable.begin() + 1, t.broadcastable.end()));
}

TensorType traced_type(const TensorType& elem) {
  std::vector<bool> bc{false};
  bc.insert(bc.end(), elem.broadcastable.begin(), elem.broadcastable.end());
  return TensorType(elem.dtype, bc);
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Scan

Scan::Scan(ScanInfo info_, std::vector<Var> in, std::vector<Var> out)
    : info(std::move(info_)), inner_inputs(std::move(in)), inner_outputs(std::move(out)) {
  check_info(info);
  const std::string who = scan_who(info);
  const size_t n_in = static_cast<size_t>(info.n_seq_inputs() + info.n_state_inputs() + info.n_nonseq);
  if (inner_inputs.size() != n_in)
    fail<ValueError>(who, ": the body has ", inner_inputs.size(), " inputs; the layout needs ", n_in);
  const size_t n_out = info.state_taps.size() + static_cast<size_t>(info.n_nitsot) + (info.until ? 1 : 0);
  if (inner_outputs.size() != n_out)
    fail<ValueError>(who, ": the body has ", inner_outputs.size(), " outputs; the layout needs ", n_out);
  if (info.until && inner_outputs.back()->ndim() != 0)
    fail<TypeError>(who, ": the until condition must be a scalar, got ", inner_outputs.back()->type.str());
}

std::string Scan::name() const { return info.name.empty() ? "Scan" : "Scan{" + info.name + "}"; }

std::vector<TensorType> Scan::make_output_types(const std::vector<Var>& in) const {
  const std::string who = scan_who(info);
  const size_t n_seq = info.seq_taps.size(), n_state = info.state_taps.size();
  const size_t want = 1 + n_seq + n_state + static_cast<size_t>(info.n_nonseq);
  if (in.size() != want) fail<TypeError>(who, ": expected ", want, " inputs, got ", in.size());
  if (in[0]->ndim() != 0 || !is_integer(in[0]->dtype()))
    fail<TypeError>(who, ": n_steps must be an integer scalar, got ", in[0]->type.str());
  size_t inner = 0;
  for (size_t s = 0; s < n_seq; ++s) {
    const TensorType& t = in[1 + s]->type;
    if (t.ndim() < 1) fail<TypeError>(who, ": sequence ", s, " must have at least one dimension, got ", t.str());
    for (size_t k = 0; k < info.seq_taps[s].size(); ++k, ++inner) {
      const TensorType& it = inner_inputs[inner]->type;
      if (it.dtype != t.dtype || it.ndim() != t.ndim() - 1)
        fail<TypeError>(who, ": sequence ", s, " is ", t.str(), " but the body reads its elements as ", it.str());
    }
  }
  std::vector<TensorType> outs;
  for (size_t k = 0; k < n_state; ++k) {
    const TensorType& w = in[1 + n_seq + k]->type;
    const TensorType& o = inner_outputs[k]->type;
    if (w.ndim() < 1)
      fail<TypeError>(who, ": the initial window of state ", k, " must have a first (time) axis, got ", w.str());
    const TensorType elem = element_type(w);
    for (size_t j = 0; j < info.state_taps[k].size(); ++j, ++inner) {
      const TensorType& it = inner_inputs[inner]->type;
      if (it.dtype != elem.dtype || it.ndim() != elem.ndim())
        fail<TypeError>(who, ": state ", k, "'s initial value is ", elem.str(), " but the body reads it as ", it.str());
    }
    if (o.dtype != elem.dtype || o.ndim() != elem.ndim())
      fail<TypeError>(who, ": output ", k, " of the body is ", o.str(), " but its initial value (outputs_info) is ",
                      elem.str(), "; they must have the same dtype and number of dimensions: cast one (T.cast), ",
                      "or pass strict=False / allow_downcast to scan");
    TensorType st(elem.dtype, elem.broadcastable);
    for (int d = 0; d < st.ndim(); ++d) st.broadcastable[d] = elem.broadcastable[d] && o.broadcastable[d];
    outs.push_back(info.state_traced[k] ? traced_type(st) : st);
  }
  for (int j = 0; j < info.n_nitsot; ++j) outs.push_back(traced_type(inner_outputs[n_state + j]->type));
  for (int j = 0; j < info.n_nonseq; ++j, ++inner) {
    const TensorType& t = in[1 + n_seq + n_state + j]->type;
    const TensorType& it = inner_inputs[inner]->type;
    if (it.dtype != t.dtype || it.ndim() != t.ndim())
      fail<TypeError>(who, ": non-sequence ", j, " is ", t.str(), " but the body reads it as ", it.str());
  }
  return outs;
}

std::vector<std::vector<bool>> Scan::connection_pattern(const Apply& node) const {
  std::vector<std::vector<bool>> p(node.inputs.size(), std::vector<bool>(node.nout(), true));
  for (int o = 0; o < node.nout(); ++o) p[0][o] = false;  // n_steps
  return p;
}

// ---------------------------------------------------------------------------------------------
// ScanGrad

ScanGrad::ScanGrad(ScanInfo info_, std::vector<TensorType> fwd, std::vector<Var> in, std::vector<Var> out,
                   std::vector<int> cot_of_, std::vector<int> grad_of_, std::vector<int> acc_of_,
                   std::vector<int> step_of_, std::vector<OutputGradient> g_form_)
    : info(std::move(info_)),
      forward_input_types(std::move(fwd)),
      vjp_inputs(std::move(in)),
      vjp_outputs(std::move(out)),
      cot_of(std::move(cot_of_)),
      grad_of(std::move(grad_of_)),
      acc_of(std::move(acc_of_)),
      step_of(std::move(step_of_)),
      g_form(std::move(g_form_)) {
  if (acc_of.empty()) acc_of.assign(grad_of.size(), -1);
  if (g_form.empty()) g_form.resize(info.state_taps.size() + static_cast<size_t>(info.n_nitsot));
  HYP_ASSERT(g_form.size() == info.state_taps.size() + static_cast<size_t>(info.n_nitsot),
             "ScanGrad: one g_form entry per forward output");
  HYP_ASSERT(acc_of.size() == grad_of.size() && grad_of.size() + step_of.size() == vjp_outputs.size(),
             "ScanGrad: one grad_of and one acc_of entry per gradient output, one step_of per step output");
}

std::vector<InnerFunction> ScanGrad::inner_functions() const {
  std::vector<bool> mut(vjp_inputs.size(), false);
  for (int a : acc_of)
    if (a >= 0) mut[static_cast<size_t>(a)] = true;
  return {{vjp_inputs, vjp_outputs, mut}};
}

std::string ScanGrad::name() const { return info.name.empty() ? "ScanGrad" : "ScanGrad{" + info.name + "}"; }

std::vector<TensorType> ScanGrad::make_output_types(const std::vector<Var>& in) const {
  const size_t n_fwd = forward_input_types.size();
  const size_t n_state = info.state_taps.size();
  const size_t n_out = n_state + static_cast<size_t>(info.n_nitsot);
  if (in.size() != n_fwd + 2 * n_out)
    fail<TypeError>(name(), ": expected ", n_fwd + 2 * n_out, " inputs, got ", in.size());
  // Gradients of the sequences, initial windows and non-sequences: their types; then the traces
  // of the step outputs.
  std::vector<TensorType> r(forward_input_types.begin() + 1, forward_input_types.end());
  for (size_t k = 0; k < step_of.size(); ++k) {
    const TensorType& t = vjp_outputs[grad_of.size() + k]->type;
    std::vector<bool> bc{false};
    bc.insert(bc.end(), t.broadcastable.begin(), t.broadcastable.end());
    r.emplace_back(t.dtype, bc);
  }
  return r;
}

// ---------------------------------------------------------------------------------------------
// Builders

std::vector<Var> scan_node(ScanInfo info, std::vector<Var> inner_inputs, std::vector<Var> inner_outputs, Var n_steps,
                           std::vector<Var> sequences, std::vector<Var> initial_windows,
                           std::vector<Var> non_sequences) {
  info.n_nonseq = static_cast<int>(non_sequences.size());
  check_info(info);
  const std::string who = scan_who(info);
  // Close the body: free variables become extra non-sequences.
  std::unordered_set<const Variable*> bound;
  for (const Var& v : inner_inputs) bound.insert(v.get());
  std::vector<Var> free;
  std::unordered_set<const Variable*> seen;
  for (const auto& n : toposort(inner_outputs))
    for (const Var& v : n->inputs)
      if (!v->owner && !v->is_constant() && !bound.count(v.get()) && seen.insert(v.get()).second) free.push_back(v);
  for (const Var& v : inner_outputs)
    if (!v->owner && !v->is_constant() && !bound.count(v.get()) && seen.insert(v.get()).second) free.push_back(v);
  if (!free.empty()) {
    std::vector<std::pair<Var, Var>> repl;
    for (const Var& v : free) {
      Var inner = variable(v->type, v->name);
      repl.emplace_back(v, inner);
      inner_inputs.push_back(inner);
      non_sequences.push_back(v);
    }
    info.n_nonseq += static_cast<int>(free.size());
    inner_outputs = clone_graph(inner_outputs, repl);
  } else {
    // The body is copied so that later edits of the user's graph cannot reach the op's.
    inner_outputs = clone_graph(inner_outputs);
  }
  if (!n_steps) fail<ValueError>(who, ": n_steps is required (the builder of the Python scan computes it)");
  n_steps = detail::as_int64(n_steps);
  std::vector<Var> inputs{n_steps};
  inputs.insert(inputs.end(), sequences.begin(), sequences.end());
  inputs.insert(inputs.end(), initial_windows.begin(), initial_windows.end());
  inputs.insert(inputs.end(), non_sequences.begin(), non_sequences.end());
  return apply_op(std::make_shared<Scan>(std::move(info), std::move(inner_inputs), std::move(inner_outputs)), inputs);
}

std::vector<Var> scan(const std::function<std::vector<Var>(const std::vector<Var>&)>& fn,
                      const std::vector<Var>& sequences, const std::vector<Var>& initial,
                      const std::vector<Var>& non_sequences, Var n_steps, bool go_backwards) {
  ScanInfo info;
  std::vector<Var> inner_seq, inner_state, inner_ns, seqs, windows;
  for (const Var& s : sequences) {
    if (s->ndim() < 1) fail<TypeError>("scan: sequence ", s->str(), " has no dimension to iterate over");
    Var x = go_backwards ? subtensor(s, {sl({}, {}, int64_t{-1})}) : s;
    seqs.push_back(x);
    info.seq_taps.push_back({0});
    inner_seq.push_back(variable(element_type(x->type), s->name.empty() ? "" : s->name + "[t]"));
  }
  std::vector<int> state_of;  // per fn output: the state index, or -1 for a nit-sot
  for (const Var& v : initial) {
    if (!v) {
      state_of.push_back(-1);
      continue;
    }
    state_of.push_back(static_cast<int>(info.state_taps.size()));
    info.state_taps.push_back({-1});
    info.state_traced.push_back(true);
    windows.push_back(expand_dims(v, 0));
    inner_state.push_back(variable(v->type, v->name.empty() ? "" : v->name + "[t-1]"));
  }
  for (const Var& v : non_sequences) inner_ns.push_back(variable(v->type, v->name));
  std::vector<Var> args = inner_seq;
  args.insert(args.end(), inner_state.begin(), inner_state.end());
  args.insert(args.end(), inner_ns.begin(), inner_ns.end());
  std::vector<Var> outs = fn(args);
  if (outs.size() != initial.size())
    fail<ValueError>("scan: fn returned ", outs.size(), " outputs but initial has ", initial.size(), " entries");
  std::vector<Var> ordered(info.state_taps.size());
  std::vector<int> nitsot_of(outs.size(), -1);
  std::vector<Var> nitsots;
  for (size_t i = 0; i < outs.size(); ++i) {
    if (state_of[i] >= 0) {
      ordered[state_of[i]] = outs[i];
    } else {
      nitsot_of[i] = static_cast<int>(nitsots.size());
      nitsots.push_back(outs[i]);
    }
  }
  info.n_nitsot = static_cast<int>(nitsots.size());
  info.n_nonseq = static_cast<int>(non_sequences.size());
  ordered.insert(ordered.end(), nitsots.begin(), nitsots.end());
  // Body outputs of another dtype than their state are cast when the cast is safe.
  for (size_t k = 0; k < info.state_taps.size(); ++k) {
    const DType want = windows[k]->dtype();
    if (ordered[k]->dtype() != want && can_cast_safely(ordered[k]->dtype(), want)) ordered[k] = cast(ordered[k], want);
  }
  if (!n_steps) {
    if (seqs.empty()) fail<ValueError>("scan: give n_steps when there is no sequence");
    n_steps = shape_i(seqs[0], 0);
    for (size_t s = 1; s < seqs.size(); ++s) n_steps = minimum(n_steps, shape_i(seqs[s], 0));
  }
  std::vector<Var> inner_inputs = inner_seq;
  inner_inputs.insert(inner_inputs.end(), inner_state.begin(), inner_state.end());
  inner_inputs.insert(inner_inputs.end(), inner_ns.begin(), inner_ns.end());
  std::vector<Var> res = scan_node(info, inner_inputs, ordered, n_steps, seqs, windows, non_sequences);
  std::vector<Var> result;
  for (size_t i = 0; i < outs.size(); ++i)
    result.push_back(state_of[i] >= 0 ? res[state_of[i]] : res[info.state_taps.size() + nitsot_of[i]]);
  return result;
}

}  // namespace hypatia
