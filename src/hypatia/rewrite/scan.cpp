// Scan rules (phase canonicalize): a ScanGrad computes, per step, only the gradients the function
// uses (local_scan_grad_unused: a gradient output without readers is dropped from its body, so a
// model that asks for the weights' gradients does not also pay for the inputs' each step).
// Expects ScanGrad nodes as Scan::grad builds them; guarantees the replacement has the same
// output types and, for every output that is read, the same values (unread ones become zeros).
#include "hypatia/ops/scan.h"

#include "hypatia/rewrite/passes.h"
#include "hypatia/rewrite/rewrite_util.h"

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
  std::vector<int> grad_of;
  for (size_t m = 0; m < op.grad_of.size(); ++m) {
    const size_t i = static_cast<size_t>(op.grad_of[m]);
    const bool state = i >= static_cast<size_t>(op.info.n_seq_inputs()) &&
                       i < static_cast<size_t>(op.info.n_seq_inputs() + op.info.n_state_inputs());
    if (state || used[out_of[i]]) {
      outs.push_back(op.vjp_outputs[m]);
      grad_of.push_back(op.grad_of[m]);
    }
  }
  if (grad_of.size() == op.grad_of.size()) return std::nullopt;
  auto pruned = std::make_shared<ScanGrad>(op.info, op.forward_input_types, op.vjp_inputs, outs, op.cot_of, grad_of);
  return apply_op(pruned, n.inputs);
}

}  // namespace

std::vector<LocalRewrite> scan_rules() { return {{"local_scan_grad_unused", {typeid(ScanGrad)}, scan_grad_unused}}; }

}  // namespace hypatia::rewrite
