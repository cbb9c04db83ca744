// function(): compiles inputs, outputs and updates into a callable Function.
#pragma once
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "hypatia/backends/registry.h"
#include "hypatia/graph/graph.h"
#include "hypatia/graph/printing.h"
#include "hypatia/runtime/nan_guard.h"
#include "hypatia/runtime/profile.h"

namespace hypatia {

/// A function input, optionally with a default value (Theano's In).
struct In {
  Var variable;
  std::string name;
  /// Default used when the caller passes fewer arguments.
  std::optional<NDArray> value;
  /// The caller allows the function to keep a reference to the argument between calls.
  bool borrow = false;
  /// The function may overwrite the argument's buffer (for in-place rewrites).
  bool mutable_ = false;
  /// Accept a lossy cast of the argument to the input's dtype (Theano's In(allow_downcast=)); unset:
  /// FunctionOptions::allow_input_downcast decides.
  std::optional<bool> allow_downcast;
  In(Var v) : variable(std::move(v)) {}  // NOLINT(google-explicit-constructor)
  In(Var v, NDArray default_value) : variable(std::move(v)), value(std::move(default_value)) {}
};

/// A function output (Theano's Out). borrow: return the function's internal storage, which the
/// next call may overwrite, instead of a fresh array.
struct Out {
  Var variable;
  bool borrow = false;
  Out(Var v, bool b = false) : variable(std::move(v)), borrow(b) {}  // NOLINT(google-explicit-constructor)
};

using Updates = std::vector<std::pair<Var, Var>>;
using Givens = std::vector<std::pair<Var, Var>>;

struct FunctionOptions {
  /// (shared variable, new value expression): computed from pre-call values, committed together.
  Updates updates;
  /// (variable, replacement): the graph is compiled with each variable replaced.
  Givens givens;
  /// Accept a lossy cast of an argument to the input's dtype.
  bool allow_input_downcast = false;
  /// Override config().allow_gc.
  std::optional<bool> allow_gc;
  /// Time every node (and print at exit when config().profile).
  std::optional<bool> profile;
  std::string name;
  /// "raise", "warn" or "ignore".
  std::string on_unused_input = "raise";
  /// The backend whose kernels run the function, by name (backends/backend.h); empty: the
  /// default backend of config().device.
  std::string backend;
  /// The function's arguments arrive in, and its outputs leave in, the memory of the backend's
  /// device (no transfer at its edges): the inner functions of the nodes that run on a device
  /// (scan's body), which pass it device arrays step after step. No effect on a host backend.
  bool device_io = false;
  /// Rewrite pipeline: "FAST_RUN", "FAST_COMPILE" or "NONE". Default: the backend's default mode
  /// when it declares one (the reference backend, the test oracle, runs graphs as written), else
  /// config().mode (and optimizer).
  std::optional<std::string> mode;
  /// False: no rewrite runs at all, whatever the mode and optimizer_including (DebugMode's
  /// unoptimized reference graph).
  bool rewrite = true;
  /// NanGuardMode: every node's floating outputs (and the function inputs they read) are checked
  /// after it runs; the first NaN / infinity / big value raises NanGuardError naming the node, the
  /// line that built it and its inputs' statistics (runtime/nan_guard.h).
  std::optional<NanGuardOptions> nan_guard;
  /// MonitorMode: called before / after each node's kernel with the step's index, the node and
  /// its arguments (after the NaN guard, when both are set).
  using NodeHook = std::function<void(size_t step, const Apply& node, const KernelArgs& args)>;
  NodeHook pre_node, post_node;
};

class Program;

/// A compiled function. Calls may come from several threads at once and from inside a call (each
/// call runs in working state of its own); calls of a function with updates are serialized.
class Function {
 public:
  Function(std::shared_ptr<Program> program);
  ~Function();
  Function(Function&&) noexcept;
  Function& operator=(Function&&) noexcept;

  /// Runs with positional arguments (defaults fill the rest); returns the outputs.
  std::vector<NDArray> operator()(const std::vector<NDArray>& args = {});
  /// Allocation-free call: args.size() == number of inputs, outs.size() == number of outputs.
  /// An array already in outs[i] that nothing else references (no copy or view of it is alive)
  /// is reused as the storage of output i when its shape and dtype fit, so a loop that passes the
  /// same `outs` back allocates nothing. After a call that throws, outs holds no values.
  void call(std::span<const NDArray> args, std::span<NDArray> outs);
  /// A caller for many calls in a row on one thread (a loop that calls the function itself): it
  /// keeps a frame of its own between calls, so a call costs the kernels and the argument checks;
  /// for a function of 0-d values only, InnerRunner::run_scalars calls it on elements. Its
  /// outputs may share memory with the arguments (read them before the next call). A function
  /// with updates, shared variables, DebugMode or profiling gives a runner that calls call().
  /// The function must outlive the runner.
  std::unique_ptr<InnerRunner> runner();
  /// Number of inputs and outputs.
  int n_inputs() const;
  int n_outputs() const;
  /// Number of shared-variable updates the function commits.
  int n_updates() const;
  /// The compiled graph, in execution order ("f.maker.fgraph.toposort()").
  std::vector<std::shared_ptr<Apply>> toposort() const;
  /// Where each node of toposort() runs: its kernel's device (a GPU for the nodes placement put
  /// there; the host for the others). Transfers count as the host's, whichever backend's kernel
  /// copies (Theano's GpuFromHost and HostFromGpu are neither host nor GPU work).
  std::vector<Device> node_devices() const;
  /// The runs of toposort() that the backend records once and then replays whole, as [begin,
  /// end) index pairs (none on a backend without a Recorder, under DebugMode or profiling).
  std::vector<std::pair<size_t, size_t>> recorded_runs() const;
  /// The outputs of the compiled graph (then the update values).
  std::vector<Var> graph_outputs() const;
  /// debugprint of the compiled graph (with provenance: the rewrite behind each node and the user
  /// line it came from).
  std::string debugprint(const DebugPrintOptions& opts = {}) const;
  /// The profile, or null when profiling is off.
  Profile* profile() const;
  const std::string& name() const;

 private:
  std::shared_ptr<Program> program_;
};

Function function(std::vector<In> inputs, std::vector<Out> outputs, FunctionOptions opts = {});

/// With config().profile set, sends the summary of every profiled function to the Diagnostic
/// message channel now (a front end calls it before it shuts down, so that the summaries reach its
/// own stderr) and forgets them; else, or for the functions compiled later, that happens at exit.
void print_profile_summaries();

/// Compiles and runs once: the value of `v` given input values (Theano's var.eval({x: v})).
NDArray eval(const Var& v, const std::vector<std::pair<Var, NDArray>>& inputs = {}, std::string_view backend = {});

/// Shared variables: value access with Theano's borrow semantics. A value on a device (a shared
/// variable a CUDA function placed on the GPU) comes back as a host copy, unless
/// return_internal_type asks for the device array itself.
NDArray get_value(const Var& shared_var, bool borrow = false, bool return_internal_type = false);
/// Replaces the value (copied unless borrow); checks the variable's type. The value goes to the
/// device the variable's current value is on.
void set_value(const Var& shared_var, NDArray value, bool borrow = false);

}  // namespace hypatia
