// Scan: Theano's loop over sequences with recurrent states, as one op whose body is an inner
// function (compiled with the outer function into a sub-program, run once per step). ScanGrad:
// its backward pass (BPTT), a second op whose body is the vector-Jacobian product of the first's.
// Scan::grad and Scan::rop differentiate the body, so they are defined in grad/scan_grad.cpp.
// Kernels: backends/scan_kernels.cpp.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "hypatia/graph/graph.h"

namespace hypatia {

/// The layout of a Scan (Theano's info record). Outer inputs, in order: n_steps (0-d int64), the
/// sequences, the recurrent states' initial windows, the non-sequences. Inner inputs: one per
/// sequence tap (sequence by sequence, taps ascending), one per state tap (likewise), then the
/// non-sequences. Inner outputs: each state's new value, each nit-sot value, then the `until`
/// condition when there is one. Outer outputs: per state its trace (n_steps, ...) or, untraced,
/// its final value; per nit-sot its trace.
struct ScanInfo {
  /// Per sequence, its taps, ascending: step t reads seq[t + tap - taps.front()].
  std::vector<std::vector<int>> seq_taps;
  /// Per recurrent state, its taps, ascending and negative: step t reads the value of step
  /// t + tap; the initial window holds -taps.front() values (the oldest first).
  std::vector<std::vector<int>> state_taps;
  /// Per state: whether the output is the trace of every step (else only the final value, as for
  /// shared-variable updates and random states).
  std::vector<bool> state_traced;
  /// Per state (empty: none): the untraced output stands for the trace's last entry (the
  /// save-memory rewrite made it), so zero steps is an IndexError as trace[-1] would be, instead
  /// of the initial value a shared-variable update keeps.
  std::vector<bool> state_last_of_trace;
  int n_nitsot = 0;
  int n_nonseq = 0;
  /// The body's last output is a condition that stops the loop after the step where it holds.
  bool until = false;
  /// Backpropagation through at most this many steps (the last ones); -1: all.
  int truncate_gradient = -1;
  std::string name;

  auto key() const {
    return std::tie(seq_taps, state_taps, state_traced, n_nitsot, n_nonseq, until, truncate_gradient);
  }
  int n_seq_inputs() const;    ///< inner inputs for sequences
  int n_state_inputs() const;  ///< inner inputs for states
  int window(int state) const { return -state_taps[state].front(); }
};

/// The loop. An op instance owns its body (inner inputs and outputs): equal only to itself.
class Scan : public Op {
 public:
  Scan(ScanInfo info, std::vector<Var> inner_inputs, std::vector<Var> inner_outputs);
  ScanInfo info;
  std::vector<Var> inner_inputs;
  std::vector<Var> inner_outputs;

  std::string name() const override;
  bool equals(const Op& o) const override { return this == &o; }
  size_t hash() const override { return std::hash<const void*>()(this); }
  std::vector<TensorType> make_output_types(const std::vector<Var>& inputs) const override;
  std::vector<InnerFunction> inner_functions() const override { return {{inner_inputs, inner_outputs}}; }
  std::vector<Var> grad(const Apply& node, const std::vector<Var>& output_grads) const override;
  std::vector<Var> rop(const Apply& node, const std::vector<Var>& eval_points) const override;
  std::vector<std::vector<bool>> connection_pattern(const Apply& node) const override;
};

/// The backward pass of a Scan node (BPTT). Inputs: the forward node's inputs, then each state's
/// trace (n, ...) as the forward pass computed it, each nit-sot's trace, then one gradient per
/// forward output (states, then nit-sots; each a trace or as g_form says).
/// Outputs: the gradients of the sequences, the initial windows and the non-sequences (zeros for
/// those `grad_of` does not cover). The body: the forward body's inner inputs, one cotangent per
/// float forward output (`cot_of`: which), then the body's outputs at the step (read from the
/// traces, so the gradient need not recompute them), giving the gradient of each forward inner
/// input listed in `grad_of`. Run
/// from the last step back, through at most truncate_gradient steps: a state's cotangent at step t
/// is its output gradient there plus what later steps sent back through their taps. A
/// non-sequence's gradient is summed over the steps in the body itself: the body reads the sum so
/// far (an accumulator input, `acc_of`) and returns it with the step's gradient added, so that a
/// matrix product accumulates in place (Gemm with beta 1) instead of being written and added.
class ScanGrad : public Op {
 public:
  /// How a forward output's gradient is given among the node's inputs: as a trace (n, ...) like the
  /// output; as one row, the gradient at step `row` (negative: counted from the end, as out[row]),
  /// zeros at the other steps (a cost that reads out[-1]); as the gradient of an untraced state's
  /// final value (the last step's, or the initial value's when no step ran); or not at all (zeros:
  /// the cost does not reach the output; the input is the 0-d zero those zeros were made of, never read).
  /// local_scan_grad_zero_rows makes Row and None from traces of zeros; Scan::grad gives Last.
  struct OutputGradient {
    enum class Form : uint8_t { Trace, Row, Last, None };
    Form form = Form::Trace;
    int64_t row = 0;
  };
  ScanGrad(ScanInfo info, std::vector<TensorType> forward_input_types, std::vector<Var> vjp_inputs,
           std::vector<Var> vjp_outputs, std::vector<int> cot_of, std::vector<int> grad_of,
           std::vector<int> acc_of = {}, std::vector<int> step_of = {}, std::vector<OutputGradient> g_form = {});
  ScanInfo info;
  std::vector<TensorType> forward_input_types;
  std::vector<Var> vjp_inputs;
  std::vector<Var> vjp_outputs;
  std::vector<int> cot_of;   ///< per cotangent input of the body: the forward output it belongs to
  std::vector<int> grad_of;  ///< per body output: the forward inner input it is the gradient of
  /// Per body output: the body input holding the sum so far that the output adds to (-1: the
  /// output is the step's gradient alone). Those inputs are mutable.
  std::vector<int> acc_of;
  /// The body's last step_of.size() outputs are per-step values whose traces (n, ...) are extra
  /// outputs of the node, after the gradients (rows of steps not run are zeros). They come in
  /// pairs (a_t, b_t) whose product sum_t a_t^T b_t is non-sequence j's gradient, computed after
  /// the loop: entry 2j for a_t, 2j + 1 for b_t (each a matrix; when no step runs the trace is
  /// (n, 0, d) with d the non-sequence's dimension 0 or 1).
  std::vector<int> step_of;
  /// Per forward output (states, nit-sots): how its gradient input is given (all traces when
  /// built; empty means that too).
  std::vector<OutputGradient> g_form;

  std::string name() const override;
  bool equals(const Op& o) const override { return this == &o; }
  size_t hash() const override { return std::hash<const void*>()(this); }
  std::vector<TensorType> make_output_types(const std::vector<Var>& inputs) const override;
  std::vector<InnerFunction> inner_functions() const override;
  /// The gradient of the backward pass (second derivatives through scan, e.g. Hessian-vector
  /// products): the node is rewritten as the Scan it equals (a forward loop over the reversed
  /// steps whose states carry the pending state gradients and the non-sequences' sums) and that
  /// Scan is differentiated; the node itself keeps running the first-order pass.
  std::vector<Var> grad(const Apply& node, const std::vector<Var>& output_grads) const override;
  /// The Scan this node equals, on the node's inputs: its outputs in the node's output order.
  std::vector<Var> as_scan(const Apply& node) const;
};

/// A Scan node on the given body (info.n_nonseq is set from non_sequences). Variables the body
/// reads that are neither inner inputs nor
/// constants (outer inputs, shared variables) become extra non-sequences, so the body is closed.
/// Returns the outer outputs. Checks the types (a body output whose type differs from its state's
/// initial value is a TypeError naming the state, both types and the fix).
std::vector<Var> scan_node(ScanInfo info, std::vector<Var> inner_inputs, std::vector<Var> inner_outputs, Var n_steps,
                           std::vector<Var> sequences, std::vector<Var> initial_windows,
                           std::vector<Var> non_sequences);

/// The C++ form of Theano's scan for the common case: fn(sequence elements at t..., states at
/// t-1..., non-sequences...) returns the new states then the nit-sot values; `initial` gives one
/// value per state (tap -1; a null entry makes that output a nit-sot and it is not passed to fn).
/// n_steps null: the shortest sequence's length. Returns one trace per output.
std::vector<Var> scan(const std::function<std::vector<Var>(const std::vector<Var>&)>& fn,
                      const std::vector<Var>& sequences, const std::vector<Var>& initial,
                      const std::vector<Var>& non_sequences = {}, Var n_steps = nullptr, bool go_backwards = false);

}  // namespace hypatia
