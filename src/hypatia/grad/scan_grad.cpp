// Scan's gradient (BPTT through a ScanGrad node whose body is the vector-Jacobian product of the
// forward body) and R_op (a Scan over the forward body and its Jacobian-vector product). They
// differentiate the body, so they live in grad/ although the ops are in ops/scan.h.
#include <array>
#include <unordered_map>
#include <unordered_set>

#include "hypatia/core/error.h"
#include "hypatia/grad/grad.h"
#include "hypatia/graph/fgraph.h"
#include "hypatia/ops/blas.h"
#include "hypatia/ops/elemwise.h"
#include "hypatia/ops/scan.h"
#include "hypatia/ops/shape.h"
#include "hypatia/ops/subtensor.h"

namespace hypatia {
namespace {

bool is_null_grad(const Var& v) { return v && v->kind == VarKind::NullGrad; }

/// Whether v is dot(a^T, b) with a and b matrices, or a sum of such terms; collects (a, b).
bool outer_product_terms(const Var& v, std::vector<std::pair<Var, Var>>& terms) {
  const Apply* n = v->owner;
  if (!n) return false;
  if (const auto* e = dynamic_cast<const Elemwise*>(n->op.get())) {
    if (e->scalar != ScalarOpKind::Add || n->inputs.size() != 2) return false;
    for (const Var& x : n->inputs)
      if (x->type != v->type || !outer_product_terms(x, terms)) return false;
    return true;
  }
  if (!dynamic_cast<const Dot*>(n->op.get())) return false;
  const Var& at = n->inputs[0];
  const Var& b = n->inputs[1];
  const Apply* t = at->owner;
  const auto* ds = t ? dynamic_cast<const DimShuffle*>(t->op.get()) : nullptr;
  if (!ds || ds->pattern != std::vector<int>{1, 0} || b->type.ndim() != 2) return false;
  terms.emplace_back(t->inputs[0], b);
  return true;
}

}  // namespace

std::vector<Var> Scan::grad(const Apply& node, const std::vector<Var>& output_grads) const {
  const size_t n_seq = info.seq_taps.size(), n_state = info.state_taps.size();
  const size_t n_nitsot = static_cast<size_t>(info.n_nitsot);
  const size_t n_fwd = node.inputs.size();
  const int n_seq_in = info.n_seq_inputs(), n_state_in = info.n_state_inputs();
  // The body's vector-Jacobian product: one cotangent per float output, gradients of the float
  // inner inputs.
  std::vector<Var> vjp_inputs = inner_inputs;
  std::vector<int> cot_of;
  GradOptions go;
  go.disconnected_inputs = "ignore";
  for (size_t o = 0; o < n_state + n_nitsot; ++o) {
    const Var& out = inner_outputs[o];
    if (!is_float(out->dtype())) continue;
    Var cot = variable(out->type, "g_" + (out->name.empty() ? std::to_string(o) : out->name));
    vjp_inputs.push_back(cot);
    cot_of.push_back(static_cast<int>(o));
    go.known_grads.emplace_back(out, cot);
  }
  std::vector<Var> wrt;
  std::vector<int> wrt_index;
  for (size_t i = 0; i < inner_inputs.size(); ++i)
    if (is_float(inner_inputs[i]->dtype())) {
      wrt.push_back(inner_inputs[i]);
      wrt_index.push_back(static_cast<int>(i));
    }
  std::vector<Var> vjp_outputs;
  std::vector<int> grad_of;
  std::vector<bool> undefined(inner_inputs.size(), false);
  if (!cot_of.empty() && !wrt.empty()) {
    std::vector<Var> gi = hypatia::grad(nullptr, wrt, go);
    for (size_t j = 0; j < gi.size(); ++j) {
      if (is_null_grad(gi[j])) {
        undefined[wrt_index[j]] = true;
        continue;
      }
      vjp_outputs.push_back(gi[j]->dtype() == wrt[j]->dtype() ? gi[j] : cast(gi[j], wrt[j]->dtype()));
      grad_of.push_back(wrt_index[j]);
    }
  }
  // The body's outputs are known at every step (the traces hold them): the gradient reads them
  // instead of recomputing them (tanh's gradient reads tanh's output, so an RNN's backward step
  // does not redo its forward matrix products).
  // Residuals: values of the forward body that the gradient would otherwise recompute with
  // matrix products (an LSTM's gate pre-activations z = x Wx + h Wh, which the gates' gradients
  // read) are traced by the forward loop and read here the same way (JAX's residuals; Theano
  // recomputed them). A residual is a product's value or an elementwise node reading one, kept
  // when the gradient still reads it once the others are substituted.
  std::vector<Var> residuals;
  if (!vjp_outputs.empty()) {
    std::vector<std::pair<Var, Var>> known;
    for (size_t o = 0; o < n_state + n_nitsot; ++o) {
      Var v = variable(inner_outputs[o]->type, "out_" + std::to_string(o));
      known.emplace_back(inner_outputs[o], v);
      vjp_inputs.push_back(v);
    }
    std::unordered_set<const Variable*> is_output;
    for (const Var& v : inner_outputs) is_output.insert(v.get());
    auto is_product = [](const Var& v) { return v->owner && typeid(*v->owner->op) == typeid(Dot); };
    std::vector<std::pair<Var, Var>> candidates;
    for (const auto& n : toposort(inner_outputs)) {
      if (n->nout() != 1 || is_output.count(n->output_ptr(0))) continue;
      bool costly = typeid(*n->op) == typeid(Dot);
      if (!costly && dynamic_cast<const Elemwise*>(n->op.get()))
        for (const Var& x : n->inputs) costly = costly || is_product(x);
      if (!costly) continue;
      std::string name = "res_";
      name += std::to_string(candidates.size());
      candidates.emplace_back(n->output(0), variable(n->output(0)->type, name));
    }
    std::vector<std::pair<Var, Var>> subst = known;
    subst.insert(subst.end(), candidates.begin(), candidates.end());
    vjp_outputs = clone_graph(vjp_outputs, subst);
    std::unordered_set<const Variable*> read;
    for (const Var& v : vjp_outputs) read.insert(v.get());
    for (const auto& n : toposort(vjp_outputs))
      for (const Var& x : n->inputs) read.insert(x.get());
    for (const auto& [v, r] : candidates)
      if (read.count(r.get())) {
        residuals.push_back(v);
        vjp_inputs.push_back(r);
      }
  } else {
    for (size_t o = 0; o < n_state + n_nitsot; ++o) vjp_inputs.push_back(variable(inner_outputs[o]->type));
  }
  const size_t n_res = residuals.size();
  // Every state's trace: the node's own outputs when traced, else those of a twin that traces all
  // of them (the forward pass runs twice then; untraced states are rare under a gradient).
  std::vector<Var> traces(n_state);
  bool all_traced = true;
  for (size_t k = 0; k < n_state; ++k) all_traced = all_traced && info.state_traced[k];
  // The twin also traces the residuals (after the nit-sots); local_scan_twin then runs one loop
  // for both.
  std::vector<Var> twin;
  if (!all_traced || n_res > 0) {
    ScanInfo ti = info;
    std::fill(ti.state_traced.begin(), ti.state_traced.end(), true);
    ti.n_nitsot += static_cast<int>(n_res);
    std::vector<Var> outs = inner_outputs;  // states, nit-sots, residuals, the until condition
    outs.insert(outs.begin() + static_cast<long>(n_state + n_nitsot), residuals.begin(), residuals.end());
    twin = apply_op(std::make_shared<Scan>(ti, inner_inputs, outs), node.inputs);
  }
  for (size_t k = 0; k < n_state; ++k)
    traces[k] = info.state_traced[k] ? const_cast<Apply&>(node).output(static_cast<int>(k)) : twin[k];
  // Output gradients as traces (zeros where the cost does not reach), an untraced state's as the
  // gradient of its final value (Last).
  std::vector<Var> g(n_state + n_nitsot);
  std::vector<ScanGrad::OutputGradient> g_form(n_state + n_nitsot);
  for (size_t o = 0; o < n_state + n_nitsot; ++o) {
    const Var out = const_cast<Apply&>(node).output(static_cast<int>(o));
    const Var& trace = o < n_state ? traces[o] : out;
    if (!is_float(trace->dtype())) {
      g[o] = zeros_like(trace);
      continue;
    }
    const Var& go = output_grads[o];
    if (!go || is_null_grad(go)) {
      g[o] = zeros_like(trace);
    } else if (o < n_state && !info.state_traced[o]) {
      g[o] = go->dtype() == trace->dtype() ? go : cast(go, trace->dtype());
      g_form[o].form = ScanGrad::OutputGradient::Form::Last;
    } else {
      g[o] = go->dtype() == trace->dtype() ? go : cast(go, trace->dtype());
    }
  }
  // The residuals take no cotangent: their slots among the output gradients hold the residuals'
  // traces themselves (never read).
  for (size_t r = 0; r < n_res; ++r) g.push_back(twin[n_state + n_nitsot + r]);
  g_form.resize(g.size());
  // A matrix non-sequence W read as dot(a_t, W) has the gradient sum_t a_t^T b_t: a sum of
  // rank-(batch) updates, slow as small matrix products. Its a_t and b_t become per-step outputs
  // instead (traces of the ScanGrad) and the sum one matrix product over the whole sequence after
  // the loop (Theano's PushOutDot1).
  std::vector<Var> step_outputs;
  std::vector<int> step_of;
  {
    std::vector<Var> kept;
    std::vector<int> kept_grad_of;
    for (size_t m = 0; m < grad_of.size(); ++m) {
      const int i = grad_of[m];
      std::vector<std::pair<Var, Var>> terms;
      const TensorType& wt = inner_inputs[static_cast<size_t>(i)]->type;
      const bool nonseq = i >= n_seq_in + n_state_in && wt.ndim() == 2 && !wt.broadcastable[0] &&
                          !wt.broadcastable[1] && vjp_outputs[m]->type == wt;
      if (nonseq && outer_product_terms(vjp_outputs[m], terms)) {
        const int j = i - n_seq_in - n_state_in;
        for (const auto& [a, b] : terms) {
          step_outputs.push_back(a);
          step_of.push_back(2 * j);
          step_outputs.push_back(b);
          step_of.push_back(2 * j + 1);
        }
        continue;
      }
      kept.push_back(vjp_outputs[m]);
      kept_grad_of.push_back(i);
    }
    vjp_outputs = std::move(kept);
    grad_of = std::move(kept_grad_of);
  }
  // Other non-sequence gradients accumulate in the body: output = accumulator input + step
  // gradient.
  std::vector<int> acc_of(grad_of.size(), -1);
  for (size_t m = 0; m < grad_of.size(); ++m) {
    if (grad_of[m] < n_seq_in + n_state_in) continue;
    const Var& x = inner_inputs[static_cast<size_t>(grad_of[m])];
    Var acc = variable(x->type, "acc_" + (x->name.empty() ? std::to_string(grad_of[m]) : x->name));
    acc_of[m] = static_cast<int>(vjp_inputs.size());
    vjp_inputs.push_back(acc);
    vjp_outputs[m] = acc + vjp_outputs[m];
  }
  // Where each factor of a pushed-out product comes from. A sequence's inner input x_t is read
  // after the loop from the outer sequence instead of being copied into a trace at every step, and
  // a value that several products read (dz_t for both weights of an RNN) is emitted once. Not
  // under truncate_gradient: there a trace's skipped rows are zeros, which an input's are not.
  // (A state's h_{t-1} stays a trace: reading it from the initial window and the forward trace
  // splits the sum at a symbolic step, ~50 index nodes that cost a small loop more per call than
  // the copies they save.)
  struct Factor {
    int trace = -1;  // its index among the emitted step outputs, or
    int inner = -1;  // the sequence inner input it is
  };
  std::vector<std::array<Factor, 2>> factors;  // per product
  std::vector<size_t> product_of;              // per product: the non-sequence
  {
    std::vector<Var> emitted;
    std::vector<int> emitted_of;
    auto inner_index = [&](const Var& v) {
      if (info.truncate_gradient >= 0) return -1;
      for (int i = 0; i < n_seq_in; ++i)
        if (inner_inputs[static_cast<size_t>(i)].get() == v.get()) return i;
      return -1;
    };
    for (size_t k = 0; k < step_outputs.size(); k += 2) {
      std::array<Factor, 2> f;
      for (size_t h = 0; h < 2; ++h) f[h].inner = inner_index(step_outputs[k + h]);
      if (f[0].inner >= 0 && f[1].inner >= 0) f[0].inner = -1;  // the steps run: a trace's length
      for (size_t h = 0; h < 2; ++h) {
        if (f[h].inner >= 0) continue;
        size_t e = 0;
        while (e < emitted.size() && emitted[e].get() != step_outputs[k + h].get()) ++e;
        if (e == emitted.size()) {
          emitted.push_back(step_outputs[k + h]);
          emitted_of.push_back(step_of[k + h]);
        }
        f[h].trace = static_cast<int>(e);
      }
      factors.push_back(f);
      product_of.push_back(static_cast<size_t>(step_of[k] / 2));
    }
    step_outputs = std::move(emitted);
    step_of = std::move(emitted_of);
  }
  std::vector<TensorType> fwd_types;
  for (const Var& v : node.inputs) fwd_types.push_back(v->type);
  std::vector<Var> inputs = node.inputs;
  inputs.insert(inputs.end(), traces.begin(), traces.end());
  for (size_t j = 0; j < n_nitsot; ++j)
    inputs.push_back(const_cast<Apply&>(node).output(static_cast<int>(n_state + j)));
  for (size_t r = 0; r < n_res; ++r) inputs.push_back(twin[n_state + n_nitsot + r]);
  inputs.insert(inputs.end(), g.begin(), g.end());
  vjp_outputs.insert(vjp_outputs.end(), step_outputs.begin(), step_outputs.end());
  ScanInfo grad_info = info;  // the residuals are nit-sots of the forward loop it differentiates
  grad_info.n_nitsot += static_cast<int>(n_res);
  std::vector<Var> d = apply_op(std::make_shared<ScanGrad>(grad_info, fwd_types, vjp_inputs, vjp_outputs, cot_of,
                                                           grad_of, acc_of, step_of, g_form),
                                inputs);
  // The pushed-out sums: per product, sum_t a_t^T b_t as one matrix product over rows (n, batch, d).
  for (size_t p = 0; p < factors.size(); ++p) {
    const auto& f = factors[p];
    auto rows = [](const Var& tr) {
      return reshape(tr, make_vector({shape_i(tr, 0) * shape_i(tr, 1), shape_i(tr, 2)}), 2);
    };
    const Var n = shape_i(d[n_fwd - 1 + static_cast<size_t>(f[0].trace >= 0 ? f[0].trace : f[1].trace)], 0);
    // Factor x's values at every step run: its trace, or the rows of the sequence its tap reads.
    auto values = [&](const Factor& x) {
      if (x.trace >= 0) return d[n_fwd - 1 + static_cast<size_t>(x.trace)];
      int at = 0;
      for (size_t s = 0; s < n_seq; ++s)
        for (int tap : info.seq_taps[s])
          if (at++ == x.inner) {
            const Var off = int_constant(tap - info.seq_taps[s].front());
            return subtensor(node.inputs[1 + s], {sl(off, n + off)});
          }
      HYP_ASSERT(false, "ScanGrad: a pushed-out factor is a sequence input");
      return Var();
    };
    Var& g_ns = d[n_seq + n_state + product_of[p]];
    g_ns = g_ns + dot(transpose(rows(values(f[0]))), rows(values(f[1])));
  }
  // Outer inputs covered: an outer input is undefined when any inner input reading it is.
  std::vector<Var> result(n_fwd);
  auto outer_of_inner = [&](size_t i) -> size_t {
    size_t inner = 0;
    for (size_t s = 0; s < n_seq; ++s)
      for (size_t k = 0; k < info.seq_taps[s].size(); ++k, ++inner)
        if (inner == i) return 1 + s;
    for (size_t s = 0; s < n_state; ++s)
      for (size_t k = 0; k < info.state_taps[s].size(); ++k, ++inner)
        if (inner == i) return 1 + n_seq + s;
    return 1 + n_seq + n_state + (i - static_cast<size_t>(n_seq_in + n_state_in));
  };
  std::vector<bool> outer_undefined(n_fwd, false);
  for (size_t i = 0; i < inner_inputs.size(); ++i)
    if (undefined[i]) outer_undefined[outer_of_inner(i)] = true;
  for (size_t j = 1; j < n_fwd; ++j) {
    const Var& x = node.inputs[j];
    if (!is_float(x->dtype())) continue;
    result[j] = outer_undefined[j] ? grad_undefined(*this, static_cast<int>(j), x->type,
                                                    "the scan body's gradient is undefined for this input")
                                   : d[j - 1];
  }
  return result;
}

std::vector<Var> Scan::rop(const Apply& node, const std::vector<Var>& eval_points) const {
  // Forward mode is a scan too: the body and its Jacobian-vector product side by side, each float
  // sequence, state and non-sequence with a tangent next to it (zeros where none is given).
  const size_t n_seq = info.seq_taps.size(), n_state = info.state_taps.size();
  const size_t n_nitsot = static_cast<size_t>(info.n_nitsot);
  auto tangent_of = [&](size_t outer) {
    const Var& x = node.inputs[outer];
    const Var& e = outer < eval_points.size() ? eval_points[outer] : Var();
    return e ? (e->dtype() == x->dtype() ? e : cast(e, x->dtype())) : zeros_like(x);
  };
  ScanInfo ti = info;
  std::vector<Var> seqs, t_seqs, windows, t_windows, nonseqs, t_nonseqs;
  std::vector<Var> in_seq, t_in_seq, in_state, t_in_state, in_ns, t_in_ns;
  std::vector<Var> wrt, points;
  size_t inner = 0;
  std::vector<size_t> float_states;
  for (size_t s = 0; s < n_seq; ++s) {
    const bool diff = is_float(node.inputs[1 + s]->dtype());
    seqs.push_back(node.inputs[1 + s]);
    if (diff) {
      t_seqs.push_back(tangent_of(1 + s));
      ti.seq_taps.push_back(info.seq_taps[s]);
    }
    for (size_t k = 0; k < info.seq_taps[s].size(); ++k, ++inner) {
      in_seq.push_back(inner_inputs[inner]);
      if (diff) {
        Var t = variable(inner_inputs[inner]->type, "d" + inner_inputs[inner]->name);
        t_in_seq.push_back(t);
        wrt.push_back(inner_inputs[inner]);
        points.push_back(t);
      }
    }
  }
  for (size_t k = 0; k < n_state; ++k) {
    const bool diff = is_float(node.inputs[1 + n_seq + k]->dtype());
    windows.push_back(node.inputs[1 + n_seq + k]);
    if (diff) {
      float_states.push_back(k);
      t_windows.push_back(tangent_of(1 + n_seq + k));
      ti.state_taps.push_back(info.state_taps[k]);
      ti.state_traced.push_back(info.state_traced[k]);
    }
    for (size_t j = 0; j < info.state_taps[k].size(); ++j, ++inner) {
      in_state.push_back(inner_inputs[inner]);
      if (diff) {
        Var t = variable(inner_inputs[inner]->type, "d" + inner_inputs[inner]->name);
        t_in_state.push_back(t);
        wrt.push_back(inner_inputs[inner]);
        points.push_back(t);
      }
    }
  }
  for (int j = 0; j < info.n_nonseq; ++j, ++inner) {
    const size_t outer = 1 + n_seq + n_state + static_cast<size_t>(j);
    nonseqs.push_back(node.inputs[outer]);
    in_ns.push_back(inner_inputs[inner]);
    if (is_float(node.inputs[outer]->dtype())) {
      t_nonseqs.push_back(tangent_of(outer));
      Var t = variable(inner_inputs[inner]->type, "d" + inner_inputs[inner]->name);
      t_in_ns.push_back(t);
      wrt.push_back(inner_inputs[inner]);
      points.push_back(t);
    }
  }
  // The body's outputs and their tangents: states (float ones get a tangent state), nit-sots.
  std::vector<Var> f;
  for (size_t k : float_states) f.push_back(inner_outputs[k]);
  std::vector<size_t> float_nitsots;
  for (size_t j = 0; j < n_nitsot; ++j)
    if (is_float(inner_outputs[n_state + j]->dtype())) {
      float_nitsots.push_back(j);
      f.push_back(inner_outputs[n_state + j]);
    }
  std::vector<Var> jvp = f.empty() ? std::vector<Var>{} : Rop(f, wrt, points);
  std::vector<Var> outs(inner_outputs.begin(), inner_outputs.begin() + static_cast<long>(n_state));
  outs.insert(outs.end(), jvp.begin(), jvp.begin() + static_cast<long>(float_states.size()));
  outs.insert(outs.end(), inner_outputs.begin() + static_cast<long>(n_state),
              inner_outputs.begin() + static_cast<long>(n_state + n_nitsot));
  outs.insert(outs.end(), jvp.begin() + static_cast<long>(float_states.size()), jvp.end());
  if (info.until) outs.push_back(inner_outputs.back());
  ti.n_nitsot = static_cast<int>(n_nitsot + float_nitsots.size());
  std::vector<Var> ins = in_seq;
  ins.insert(ins.end(), t_in_seq.begin(), t_in_seq.end());
  ins.insert(ins.end(), in_state.begin(), in_state.end());
  ins.insert(ins.end(), t_in_state.begin(), t_in_state.end());
  ins.insert(ins.end(), in_ns.begin(), in_ns.end());
  ins.insert(ins.end(), t_in_ns.begin(), t_in_ns.end());
  seqs.insert(seqs.end(), t_seqs.begin(), t_seqs.end());
  windows.insert(windows.end(), t_windows.begin(), t_windows.end());
  nonseqs.insert(nonseqs.end(), t_nonseqs.begin(), t_nonseqs.end());
  std::vector<Var> res = scan_node(ti, ins, outs, node.inputs[0], seqs, windows, nonseqs);
  // The tangent of each output: its tangent trace, or zeros for integer outputs.
  std::vector<Var> r(static_cast<size_t>(node.nout()));
  for (size_t i = 0; i < float_states.size(); ++i) r[float_states[i]] = res[n_state + i];
  const size_t nit_base = n_state + float_states.size();
  for (size_t i = 0; i < float_nitsots.size(); ++i) r[n_state + float_nitsots[i]] = res[nit_base + n_nitsot + i];
  return r;
}

std::vector<Var> ScanGrad::as_scan(const Apply& node) const {
  const size_t n_seq = info.seq_taps.size(), n_state = info.state_taps.size();
  const size_t n_nitsot = static_cast<size_t>(info.n_nitsot), n_nonseq = static_cast<size_t>(info.n_nonseq);
  const size_t n_fwd = forward_input_types.size(), n_outs = n_state + n_nitsot, g_base = n_fwd + n_outs;
  const int n_seq_in = info.n_seq_inputs(), n_state_in = info.n_state_inputs();
  const size_t n_inner = static_cast<size_t>(n_seq_in + n_state_in) + n_nonseq;
  const auto& in = node.inputs;
  // Steps: the traces' length; the loop runs the last m of them, from the last back.
  Var n = n_outs > 0 ? shape_i(in[n_fwd], 0) : in[0];
  // The output gradients as traces (g_form: a row or nothing stands for zeros elsewhere).
  std::vector<Var> g_trace(n_outs);
  for (size_t o = 0; o < n_outs; ++o) {
    const Var& trace = in[n_fwd + o];
    switch (g_form[o].form) {
      case OutputGradient::Form::Trace:
        g_trace[o] = in[g_base + o];
        break;
      case OutputGradient::Form::None:
        g_trace[o] = zeros_like(trace);
        break;
      case OutputGradient::Form::Row:
        g_trace[o] = inc_subtensor(subtensor(zeros_like(trace), {Index(g_form[o].row)}), in[g_base + o]);
        break;
      case OutputGradient::Form::Last:  // the last row ([-1:]: none when no step ran, see below)
        g_trace[o] = inc_subtensor(subtensor(zeros_like(trace), {sl(int64_t{-1})}), in[g_base + o]);
        break;
    }
  }
  Var m = info.truncate_gradient >= 0 ? minimum(n, int_constant(info.truncate_gradient)) : n;
  Var stop = n - m;
  auto reversed = [&](const Var& x, Var begin) {  // x[begin : begin + n][::-1]
    return subtensor(subtensor(x, {sl(begin, begin + n)}), {sl({}, {}, int64_t{-1})});
  };
  ScanInfo li;
  li.name = info.name.empty() ? "grad" : info.name + "_grad";
  std::vector<Var> seqs, ins_seq;
  std::unordered_map<const Variable*, Var> repl;  // the backward body's inputs -> the loop's
  auto add_seq = [&](const Var& outer, const Var& inner_like) {
    Var v = variable(inner_like->type, inner_like->name);
    seqs.push_back(outer);
    ins_seq.push_back(v);
    li.seq_taps.push_back({0});
    return v;
  };
  // The forward inner inputs at step t: sequence taps, state values ([window; trace] rows).
  size_t i = 0;
  for (size_t s = 0; s < n_seq; ++s)
    for (int tap : info.seq_taps[s]) {
      repl[vjp_inputs[i].get()] =
          add_seq(reversed(in[1 + s], int_constant(tap - info.seq_taps[s].front())), vjp_inputs[i]);
      ++i;
    }
  std::vector<Var> full(n_state);
  for (size_t k = 0; k < n_state; ++k) {
    const int64_t win = info.window(static_cast<int>(k));
    full[k] = concatenate({subtensor(in[1 + n_seq + k], {sl(-win)}), in[n_fwd + k]}, 0);
    for (int tap : info.state_taps[k]) {
      repl[vjp_inputs[i].get()] = add_seq(reversed(full[k], int_constant(win + tap)), vjp_inputs[i]);
      ++i;
    }
  }
  // The body's outputs at step t, and the output gradients (cotangents; a state's adds what later
  // steps sent back, carried in its pending state below).
  const size_t known = n_inner + cot_of.size();
  for (size_t o = 0; o < n_outs; ++o)
    repl[vjp_inputs[known + o].get()] = add_seq(reversed(in[n_fwd + o], int_constant(0)), vjp_inputs[known + o]);
  std::vector<Var> g_step(n_outs);
  for (size_t c = 0; c < cot_of.size(); ++c) {
    const size_t o = static_cast<size_t>(cot_of[c]);
    g_step[o] = add_seq(reversed(g_trace[o], int_constant(0)), vjp_inputs[n_inner + c]);
  }
  // States: per float state its pending gradients (window rows: row j is position t + 1 + j
  // before step t), per accumulated non-sequence its sum so far.
  std::vector<Var> windows, ins_state, outs_state;
  std::vector<Var> pending(n_state);
  for (size_t c = 0; c < cot_of.size(); ++c) {
    const size_t o = static_cast<size_t>(cot_of[c]);
    if (o >= n_state) {
      repl[vjp_inputs[n_inner + c].get()] = g_step[o];
      continue;
    }
    const int64_t win = info.window(static_cast<int>(o));
    const Var& trace = in[n_fwd + o];
    Var p = variable(trace->type, "pending_" + std::to_string(o));
    pending[o] = p;
    repl[vjp_inputs[n_inner + c].get()] = g_step[o] + subtensor(p, {Index(win - 1)});
  }
  // Per non-sequence gradient (body output q): a state holding its sum so far. The body's
  // accumulator input reads it (acc_of); an output without one adds the state to it below.
  std::vector<size_t> sum_q;
  std::vector<Var> sum_vars;
  for (size_t q = 0; q < grad_of.size(); ++q) {
    if (grad_of[q] < n_seq_in + n_state_in) continue;
    const Var& x =
        acc_of[q] >= 0 ? vjp_inputs[static_cast<size_t>(acc_of[q])] : vjp_inputs[static_cast<size_t>(grad_of[q])];
    Var v = variable(x->type, "sum_" + x->name);
    if (acc_of[q] >= 0) repl[x.get()] = v;
    sum_q.push_back(q);
    sum_vars.push_back(v);
  }
  std::vector<Var> ins_ns;
  for (size_t j = 0; j < n_nonseq; ++j) {
    const Var& x = vjp_inputs[n_inner - n_nonseq + j];
    Var v = variable(x->type, x->name);
    repl[x.get()] = v;
    ins_ns.push_back(v);
  }
  std::vector<std::pair<Var, Var>> pairs;
  for (const auto& [from, to] : repl)
    for (const Var& v : vjp_inputs)
      if (v.get() == from) pairs.emplace_back(v, to);
  const std::vector<Var> body = clone_graph(vjp_outputs, pairs);
  // New pending rows: the old ones moved down a row, plus the gradients of the taps.
  std::vector<Var> new_pending(n_state);
  for (size_t k = 0; k < n_state; ++k) {
    if (!pending[k]) continue;
    const int64_t win = info.window(static_cast<int>(k));
    const Var& p = pending[k];
    Var zero_row = zeros_like(subtensor(p, {sl(0, 1)}));
    Var np = win == 1 ? zero_row : concatenate({zero_row, subtensor(p, {sl(0, win - 1)})}, 0);
    new_pending[k] = np;
  }
  std::vector<std::vector<std::pair<size_t, Var>>> seq_grads(n_seq);  // (tap index, per-step grad)
  for (size_t q = 0; q < grad_of.size(); ++q) {
    const size_t idx = static_cast<size_t>(grad_of[q]);
    if (idx < static_cast<size_t>(n_seq_in)) {
      size_t s = 0, first = 0;
      while (idx >= first + info.seq_taps[s].size()) first += info.seq_taps[s++].size();
      seq_grads[s].emplace_back(idx - first, body[q]);
    } else if (idx < static_cast<size_t>(n_seq_in + n_state_in)) {
      size_t k = 0, first = static_cast<size_t>(n_seq_in);
      while (idx >= first + info.state_taps[k].size()) first += info.state_taps[k++].size();
      const int tap = info.state_taps[k][idx - first];
      const int64_t row = info.window(static_cast<int>(k)) + tap;
      if (new_pending[k]) new_pending[k] = inc_subtensor(subtensor(new_pending[k], {Index(row)}), body[q]);
    }  // non-sequences: their sums are states (below)
  }
  // The loop: states (pending windows, untraced; sums, untraced), nit-sots (sequence gradients
  // per tap, step outputs).
  std::vector<Var> l_ins = ins_seq, l_outs;
  for (size_t k = 0; k < n_state; ++k)
    if (pending[k]) {
      li.state_taps.push_back({-1});
      li.state_traced.push_back(false);
      l_ins.push_back(pending[k]);
      l_outs.push_back(new_pending[k]);
      const int64_t win = info.window(static_cast<int>(k));
      windows.push_back(expand_dims(zeros_like(subtensor(full[k], {sl(0, win)})), 0));
    }
  for (size_t i = 0; i < sum_q.size(); ++i) {
    const size_t q = sum_q[i];
    li.state_taps.push_back({-1});
    li.state_traced.push_back(false);
    l_ins.push_back(sum_vars[i]);
    l_outs.push_back(acc_of[q] >= 0 ? body[q] : sum_vars[i] + body[q]);
    const size_t j = static_cast<size_t>(grad_of[q] - n_seq_in - n_state_in);
    windows.push_back(expand_dims(zeros_like(in[1 + n_seq + n_state + j]), 0));
  }
  for (size_t s = 0; s < n_seq; ++s)
    for (const auto& [tap_index, gv] : seq_grads[s]) l_outs.push_back(gv);
  for (size_t k = 0; k < step_of.size(); ++k) l_outs.push_back(body[grad_of.size() + k]);
  li.n_nitsot = static_cast<int>(l_outs.size() - li.state_taps.size());
  l_ins.insert(l_ins.end(), ins_ns.begin(), ins_ns.end());
  std::vector<Var> nonseqs(in.begin() + static_cast<long>(1 + n_seq + n_state),
                           in.begin() + static_cast<long>(1 + n_seq + n_state + n_nonseq));
  std::vector<Var> r = scan_node(li, l_ins, l_outs, m, seqs, windows, nonseqs);
  // The node's outputs from the loop's.
  std::vector<Var> result(static_cast<size_t>(node.nout()));
  size_t st = 0;
  for (size_t k = 0; k < n_state; ++k) {
    const Var& w = in[1 + n_seq + k];
    Var d = zeros_like(w);
    if (pending[k]) {
      // The gradient of the initial window's last rows, unless truncation stopped before them.
      const int64_t win = info.window(static_cast<int>(k));
      Var got = r[st++];
      d = inc_subtensor(subtensor(d, {sl(-win)}), got * cast(eq(stop, int_constant(0)), got->dtype()));
    }
    if (g_form[k].form == OutputGradient::Form::Last)  // no step ran: the final value is w[-1]
      d = inc_subtensor(subtensor(d, {Index(int64_t{-1})}), in[g_base + k] * cast(eq(n, int_constant(0)), w->dtype()));
    result[n_seq + k] = d;
  }
  {
    std::vector<Var> ns_grad(n_nonseq);
    for (size_t q : sum_q) ns_grad[static_cast<size_t>(grad_of[q] - n_seq_in - n_state_in)] = r[st++];
    for (size_t j = 0; j < n_nonseq; ++j) {
      const Var& x = in[1 + n_seq + n_state + j];
      result[n_seq + n_state + j] = ns_grad[j] ? ns_grad[j] : zeros_like(x);
    }
  }
  auto in_time_order = [&](const Var& tr) {  // the loop's rows are steps n-1 .. stop
    return subtensor(tr, {sl({}, {}, int64_t{-1})});
  };
  for (size_t s = 0; s < n_seq; ++s) {
    Var d = zeros_like(in[1 + s]);
    for (const auto& [tap_index, gv] : seq_grads[s]) {
      (void)gv;
      const int64_t off = info.seq_taps[s][tap_index] - info.seq_taps[s].front();
      Var rows = in_time_order(r[st++]);
      d = inc_subtensor(subtensor(d, {sl(stop + int_constant(off), n + int_constant(off))}), rows);
    }
    result[s] = d;
  }
  for (size_t k = 0; k < step_of.size(); ++k) {
    Var rows = in_time_order(r[st++]);
    const TensorType& t = vjp_outputs[grad_of.size() + k]->type;
    ShapeVars shp{n};
    for (int d = 0; d < t.ndim(); ++d) shp.push_back(shape_i(rows, d + 1));
    result[n_seq + n_state + n_nonseq + k] = inc_subtensor(subtensor(zeros(shp, t.dtype), {sl(stop)}), rows);
  }
  return result;
}

std::vector<Var> ScanGrad::grad(const Apply& node, const std::vector<Var>& output_grads) const {
  // The Scan is built on fresh variables standing for the node's inputs: differentiating it must
  // stop there (the traces among the inputs depend on the other inputs through the forward Scan,
  // whose own gradient the caller's chain adds).
  std::vector<Var> fresh;
  for (const Var& x : node.inputs) fresh.push_back(variable(x->type, x->name));
  const std::vector<Var> stand_in = apply_op(node.op, fresh);
  const std::vector<Var> outs = as_scan(*stand_in[0]->owner);
  GradOptions go;
  go.disconnected_inputs = "ignore";
  bool any = false;
  for (size_t o = 0; o < outs.size(); ++o)
    if (o < output_grads.size() && output_grads[o] && !is_null_grad(output_grads[o]) && is_float(outs[o]->dtype())) {
      go.known_grads.emplace_back(outs[o], output_grads[o]);
      any = true;
    }
  std::vector<Var> wrt, result(node.inputs.size());
  std::vector<size_t> where;
  for (size_t i = 0; i < node.inputs.size(); ++i)
    if (is_float(node.inputs[i]->dtype())) {
      wrt.push_back(fresh[i]);
      where.push_back(i);
    }
  if (!any || wrt.empty()) return result;
  std::vector<std::pair<Var, Var>> back;
  for (size_t i = 0; i < fresh.size(); ++i) back.emplace_back(fresh[i], node.inputs[i]);
  const std::vector<Var> g = clone_graph(hypatia::grad(nullptr, wrt, go), back);
  for (size_t k = 0; k < wrt.size(); ++k) result[where[k]] = g[k];
  return result;
}

}  // namespace hypatia
