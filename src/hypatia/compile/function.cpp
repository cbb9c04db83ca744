// function(): check -> clone -> rewrite -> place -> schedule -> plan memory -> build the Program.
#include "hypatia/compile/function.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <mutex>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "hypatia/backends/backend.h"
#include "hypatia/compile/debug_check.h"
#include "hypatia/compile/placement.h"
#include "hypatia/core/config.h"
#include "hypatia/core/error.h"
#include "hypatia/core/messages.h"
#include "hypatia/graph/printing.h"
#include "hypatia/ops/transfer.h"
#include "hypatia/rewrite/destroy.h"
#include "hypatia/rewrite/rewriter.h"
#include "hypatia/runtime/program.h"

namespace hypatia {
namespace {

/// Profiles of every profiled function, printed at exit when config().profile is set.
struct ProfileRegistry {
  std::mutex mu;
  std::vector<std::weak_ptr<Program>> programs;
  /// Prints the summaries and forgets them (the caller holds mu, or the registry is being destroyed).
  void print_and_clear() {
    if (config().profile)
      for (auto& w : programs)
        if (auto p = w.lock(); p && p->profile) emit_message(MessageChannel::Diagnostic, p->profile->summary() + "\n");
    programs.clear();
  }
  ~ProfileRegistry() { print_and_clear(); }
};
ProfileRegistry& profile_registry() {
  static ProfileRegistry r;
  return r;
}

}  // namespace

void print_profile_summaries() {
  auto& reg = profile_registry();
  std::lock_guard<std::mutex> lock(reg.mu);
  reg.print_and_clear();
}

namespace {

std::string fn_label(const std::string& name) { return "function '" + (name.empty() ? "<unnamed>" : name) + "'"; }

void check_unused_input(const FunctionOptions& opts, const std::string& what) {
  if (opts.on_unused_input == "ignore") return;
  if (opts.on_unused_input == "warn") {
    warn(what);
    return;
  }
  throw UnusedInputError(what + " To make this error a warning, pass on_unused_input='warn'.");
}

}  // namespace

namespace {

// function()'s steps, in order. Each takes what the earlier ones made.

/// 1. Check: the inputs are distinct free variables, the updates target shared variables with
/// values of their type, no output is null.
void check_signature(const std::string& label, const std::vector<In>& inputs, const std::vector<Out>& outputs,
                     const FunctionOptions& opts) {
  if (opts.on_unused_input != "raise" && opts.on_unused_input != "warn" && opts.on_unused_input != "ignore")
    fail<ValueError>(label, ": on_unused_input must be 'raise', 'warn' or 'ignore', got '", opts.on_unused_input, "'");
  std::unordered_set<const Variable*> input_set;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Var& v = inputs[i].variable;
    if (!v) fail<TypeError>(label, ": input ", i, " is null");
    if (v->is_shared())
      fail<TypeError>(label, ": input ", i, " ('", v->name,
                      "') is a shared variable; shared variables are implicit "
                      "inputs and cannot be listed in inputs (use givens to replace one)");
    if (v->is_constant()) fail<TypeError>(label, ": input ", i, " is a constant; inputs must be free variables");
    if (v->owner)
      fail<TypeError>(label, ": input ", i, " (", v->str(), ") is computed by ", v->owner->op->name(),
                      "; inputs must be free variables (use givens to replace an intermediate)");
    if (!input_set.insert(v.get()).second)
      fail<ValueError>(label, ": variable ", v->str(), " is listed twice in inputs");
    if (inputs[i].value) {
      if (auto err = v->type.check_value(*inputs[i].value); !err.empty())
        fail<TypeError>(label, ": the default value of input ", i, " ('", v->name, "'): ", err);
    }
  }
  std::unordered_set<const SharedCell*> updated;
  for (const auto& [sv, val] : opts.updates) {
    if (!sv || !val) fail<TypeError>(label, ": null variable in updates");
    if (!sv->is_shared()) fail<TypeError>(label, ": updates must target shared variables; ", sv->str(), " is not one");
    // By value: a clone of a shared variable (shared_alias) holds the same one.
    if (!updated.insert(sv->cell.get()).second)
      fail<ValueError>(label, ": shared variable '", sv->name, "' is updated twice (or it and a clone of it)");
    if (val->type.dtype != sv->type.dtype || val->type.ndim() != sv->type.ndim())
      fail<TypeError>(label,
                      ": an update must have the same type as the original shared variable (shared_var=", sv->name,
                      ", shared_var.type=", sv->type.str(), ", update_val=", val->str(),
                      ", update_val.type=", val->type.str(), "). If the difference is the dtype, cast the update.");
  }
  for (size_t i = 0; i < outputs.size(); ++i)
    if (!outputs[i].variable) fail<TypeError>(label, ": output ", i, " is null");
}

/// 2. Clone the user's graph (outputs, then update values) with givens applied into the
/// program's FunctionGraph; then check that every input is used (on_unused_input) and that the
/// graph needs no variable beyond the inputs, shared variables and constants.
void clone_graph_into(Program& program, const std::string& label, const std::vector<In>& inputs,
                      const std::vector<Out>& outputs, const FunctionOptions& opts) {
  std::vector<Var> roots;
  for (const auto& o : outputs) roots.push_back(o.variable);
  for (const auto& u : opts.updates) roots.push_back(u.second);
  std::vector<Var> cloned = clone_graph(roots, opts.givens);
  std::vector<Var> graph_inputs;
  for (const auto& in : inputs) graph_inputs.push_back(in.variable);
  program.fgraph = std::make_unique<FunctionGraph>(graph_inputs, cloned, /*clone=*/false);
  FunctionGraph& fg = *program.fgraph;
  for (size_t u = 0; u < opts.updates.size(); ++u)
    fg.update_outputs[opts.updates[u].first.get()] = static_cast<int>(outputs.size() + u);
  for (const auto& in : inputs)
    if (in.mutable_) fg.mutable_inputs.insert(in.variable.get());

  std::unordered_set<const Variable*> used;
  for (const auto& n : fg.toposort())
    for (const auto& v : n->inputs) used.insert(v.get());
  for (const auto& v : fg.outputs()) used.insert(v.get());
  for (size_t i = 0; i < inputs.size(); ++i)
    if (!used.count(inputs[i].variable.get())) {
      std::ostringstream os;
      os << label << ": input " << i << " ('" << inputs[i].variable->str()
         << "') is not used to compute the outputs or updates.";
      check_unused_input(opts, os.str());
    }
  for (const Var& orphan : fg.orphans())
    if (orphan->kind == VarKind::Input)
      fail<MissingInputError>(label, ": the graph needs variable '", orphan->str(), "' (", orphan->type.str(),
                              ") which is not among the inputs; add it to the inputs or give it a value with givens");
}

/// 2b. Lower storage dtypes, before the rewrite step (so its rewrites see, and fold or fuse, the
/// casts) and after it (a rewrite may have built a node in a storage dtype): arithmetic on
/// float16 arrays is done in float32 on backends that store float16 only, every mode alike.
void lower_storage(Program& program, const Backend& backend) {
  rewrite::lower_storage_dtypes(*program.fgraph, backend.storage_dtypes());
}

/// 3. Rewrite: the mode's pipeline, for the backend (its constant folding and fusion limits).
/// DebugMode also records the replacements, to check them on each call's values.
void rewrite_step(Program& program, const Backend& backend, const std::string& label, const std::vector<In>& inputs,
                  const FunctionOptions& opts) {
  FunctionGraph& fg = *program.fgraph;
  RewriteOptions ro = rewrite_options_from_config(opts.mode.value_or(""));
  if (!opts.mode && !backend.default_mode().empty()) ro.mode = backend.default_mode();
  ro.target = &backend.rewrite_target();
  std::vector<Replacement> log;
  if (program.debug_mode) fg.replace_log = &log;
  if (opts.rewrite) program.rewrite_stats = rewrite_graph(fg, ro);
  fg.replace_log = nullptr;
  if (program.debug_mode) program.check_rewrites = make_rewrite_check(inputs, log, label, program.oracle->name());
}

/// 4. Place: every node runs on the function's backend (or the fallback it declares); a node
/// none of them has a kernel for is refused here, at compile time, naming the op and the backend.
/// A device backend's graph is then split between the device and the host
/// (compile/placement.h), with transfers, which every backend has kernels for.
void place(const FunctionGraph& fg, const Backend& backend, const std::string& label) {
  for (const auto& n : fg.toposort())
    if (!backend.supports(*n)) {
      // (A Python op of device values runs on device backends only.)
      const bool reads_device_values = backend.device_kind() == DeviceKind::Host &&
                                       std::any_of(n->inputs.begin(), n->inputs.end(), [](const Var& v) {
                                         return v->owner && dynamic_cast<const DeviceFromHost*>(v->owner->op.get());
                                       });
      fail<NotImplementedError>(label, ": ", n->op->name(), " has no kernel on backend ", backend.chain_str(),
                                reads_device_values
                                    ? "; its inputs are device values (gpu_from_host): compile it for a device "
                                      "backend (device=cuda, or mode=Mode(linker='cuda'))"
                                    : "; compile with another backend, or register a kernel for this op");
    }
}

/// 5. Schedule: inputs before users, readers of an overwritten value before the node that
/// overwrites it, and the nodes that overwrite shared variables last (rewrite/destroy.h); on a
/// backend that records its kernels' work, the nodes it records in as few runs as the rest allows.
std::vector<std::shared_ptr<Apply>> schedule(const FunctionGraph& fg, const Backend& backend,
                                             const std::string& label) {
  for (const auto& n : fg.toposort()) {
    const AliasMap dm = n->op->destroy_map();
    for (const auto& o : dm)
      for (int i : o)
        if (std::string why = destroy_refusal(fg, *n, i); !why.empty())
          fail<ValueError>(label, ": ", n->op->name(), " overwrites its input ", i, " (", n->inputs[i]->str(), ") but ",
                           why, "; use the op's non in-place form");
  }
  std::function<bool(const Apply&)> recorded;
  if (backend.recorder()) recorded = [&backend](const Apply& n) { return backend.records(n); };
  auto order = destroy_order(fg, {nullptr, -1}, recorded);
  if (!order)
    fail<ValueError>(label, ": the graph's in-place operations cannot be ordered (each overwrites a value ",
                     "another one still needs); use their non in-place forms");
  return std::move(*order);
}

/// Marks the steps that run only when a lazy step asks for their outputs (Step::deferred): every
/// output is read, and only by lazy inputs of lazy steps or by other deferred steps; no output is
/// a function output or update; and no other step overwrites (in place) memory its inputs may
/// share (a deferred reader runs later than its place in the order). A step that overwrites its
/// own input may be deferred: in a branch, an in-place chain stays lazy.
/// Returns each step's effective position: the latest it may run (a deferred step: with the last
/// lazy step that may ask for it, since the earlier ones may not; its inputs live until then).
std::vector<int> plan_deferred(Program& program, const FunctionGraph& fg,
                               const std::vector<std::shared_ptr<Apply>>& order, const std::unordered_set<int>& keep,
                               const std::unordered_map<const Variable*, int>& cell_of) {
  const int n = static_cast<int>(order.size());
  std::vector<int> eff(n);
  for (int t = 0; t < n; ++t) eff[t] = t;
  if (std::none_of(program.steps.begin(), program.steps.end(), [](const Program::Step& s) { return s.lazy; }))
    return eff;
  // Memory that in-place steps overwrite (the destroyed values, the values they view and the
  // views of all of these), with the steps that overwrite it.
  std::unordered_map<int, std::vector<int>> clobbered;
  int destroyer = 0;
  auto mark = [&](const Var& v) {
    clobbered[cell_of.at(v.get())].push_back(destroyer);
    for (const Var& w : views_of(fg, v)) clobbered[cell_of.at(w.get())].push_back(destroyer);
  };
  for (const auto& node : order)
    for (destroyer = static_cast<int>(&node - order.data()); const auto& o : node->op->destroy_map())
      for (int i : o) {
        Var v = node->inputs[i];
        mark(v);
        // Up the chain of views to the value that owns the memory.
        for (int hops = 0; v->owner && hops < 64; ++hops) {
          const AliasMap vm = v->owner->op->view_map();
          const int out = v->index;
          if (out >= static_cast<int>(vm.size()) || vm[out].empty()) break;
          v = v->owner->inputs[vm[out][0]];
          mark(v);
        }
      }
  std::vector<std::vector<std::pair<int, int>>> readers(program.cell_kind.size());
  for (int t = 0; t < n; ++t)
    for (size_t i = 0; i < program.steps[t].in.size(); ++i) readers[program.steps[t].in[i]].emplace_back(t, i);
  for (int t = std::min(n, static_cast<int>(program.first_shared_destroyer)) - 1; t >= 0; --t) {
    Program::Step& st = program.steps[t];
    bool ok = !st.out.empty();
    for (int c : st.in)
      if (auto it = clobbered.find(c); it != clobbered.end())
        for (int d : it->second) ok = ok && d == t;
    int last = t;
    for (int c : st.out) {
      if (!ok) break;
      if (keep.count(c) || readers[c].empty()) ok = false;
      for (const auto& [r, i] : readers[c]) {
        const Program::Step& rs = program.steps[r];
        ok = ok && ((rs.lazy && rs.lazy_in[i]) || rs.deferred);
        last = std::max(last, eff[r]);
      }
    }
    if (!ok) continue;
    st.deferred = true;
    eff[t] = last;
  }
  return eff;
}

/// 6. Plan memory: one storage cell per variable, the steps over them, the last reader of each
/// intermediate (freed after it with gc), and which values may share memory with a leaf (input,
/// shared or constant: such an output is copied unless borrowed).
void plan_memory(Program& program, const std::vector<std::shared_ptr<Apply>>& order, const std::vector<In>& inputs,
                 const std::vector<Out>& outputs, const FunctionOptions& opts) {
  const FunctionGraph& fg = *program.fgraph;
  std::unordered_map<const Variable*, int> cell_of;
  auto add_cell = [&](const Var& v, CellKind kind) {
    auto [it, fresh] = cell_of.emplace(v.get(), static_cast<int>(program.constants.size()));
    if (fresh) {
      program.constants.emplace_back();
      program.cell_kind.push_back(kind);
      if (kind == CellKind::Constant) program.constants.back() = v->data;
      if (kind == CellKind::Shared) {
        // Where placement left the value (a host backend reads every value on the host).
        const DeviceKind dev =
            program.backend->device_kind() == DeviceKind::Host ? DeviceKind::Host : v->cell->load().device().kind;
        program.shared.push_back({it->second, v->cell, dev});
      }
    }
    return it->second;
  };
  for (size_t i = 0; i < inputs.size(); ++i) {
    int c = add_cell(inputs[i].variable, CellKind::Input);
    program.inputs.push_back({c, inputs[i].variable->type,
                              inputs[i].name.empty() ? inputs[i].variable->name : inputs[i].name, inputs[i].value,
                              inputs[i].mutable_, inputs[i].allow_downcast.value_or(opts.allow_input_downcast)});
  }
  for (const Var& orphan : fg.orphans()) add_cell(orphan, orphan->is_shared() ? CellKind::Shared : CellKind::Constant);

  // Alias analysis: may a variable share memory with a leaf (input, shared, constant)?
  std::unordered_map<const Variable*, bool> alias_leaf;
  auto aliases = [&](const Var& v) {
    if (!v->owner) return true;
    auto it = alias_leaf.find(v.get());
    return it != alias_leaf.end() && it->second;
  };
  for (const auto& n : order) {
    AliasMap vm = n->op->view_map(), dm = n->op->destroy_map();
    for (int o = 0; o < n->nout(); ++o) {
      bool a = false;
      for (const AliasMap* m : {&vm, &dm})
        if (o < static_cast<int>(m->size()))
          for (int i : (*m)[o]) a |= aliases(n->inputs[i]);
      alias_leaf[n->output_ptr(o)] = a;
    }
  }

  // Steps, and the last reader of each intermediate (for gc).
  for (const auto& n : order)
    for (int o = 0; o < n->nout(); ++o) add_cell(n->output(o), CellKind::Intermediate);
  std::unordered_set<int> keep;  // outputs and update values stay until the end of the call
  for (const auto& v : fg.outputs()) keep.insert(cell_of.at(v.get()));
  program.steps.reserve(order.size());
  program.first_shared_destroyer = order.size();
  for (size_t t = 0; t < order.size(); ++t) {
    Program::Step st;
    st.node = order[t];
    for (const auto& v : st.node->inputs) st.in.push_back(cell_of.at(v.get()));
    for (int o = 0; o < st.node->nout(); ++o) st.out.push_back(cell_of.at(st.node->output_ptr(o)));
    if (destroys_shared(*st.node)) {
      for (const auto& o : st.node->op->destroy_map())
        for (int i : o) {
          const Var& v = st.node->inputs[i];
          st.shared_cells.push_back(cell_of.at(v.get()));
          for (const Var& view : views_of(fg, v))
            if (view->owner) st.view_cells.push_back(cell_of.at(view.get()));
        }
    }
    const std::vector<bool> lazy = st.node->op->lazy_inputs();
    if (std::find(lazy.begin(), lazy.end(), true) != lazy.end()) {
      st.lazy = true;
      st.lazy_in = lazy;
      st.lazy_in.resize(st.in.size(), false);
    }
    program.steps.push_back(std::move(st));
  }
  // The steps that overwrite shared variables run last, after every update is checked, so that a
  // failed call changes none. Where the in-place choices make another step follow one of them
  // (it overwrites memory that one reads), only the trailing run of such steps writes in place;
  // the earlier ones write into a per-call copy (their updates are committed as new values).
  std::unordered_set<const Apply*> writes_copy;
  while (program.first_shared_destroyer > 0 && destroys_shared(*order[program.first_shared_destroyer - 1]))
    --program.first_shared_destroyer;
  for (size_t t = 0; t < program.first_shared_destroyer; ++t)
    if (destroys_shared(*order[t])) {
      program.steps[t].writes_shared_copy = true;
      writes_copy.insert(order[t].get());
    }
  const std::vector<int> eff = plan_deferred(program, fg, order, keep, cell_of);
  // The last reader of each cell, by when it is sure to have run: a deferred step runs when a lazy
  // step it serves asks for it, anywhere from the first of them to the last (its effective
  // position), so a cell it reads is freed after that last lazy step, never after the deferred
  // step itself (which may run before an eager reader of the same cell).
  std::unordered_map<int, int> last_use;  // cell -> step index (never a deferred step)
  for (size_t t = 0; t < order.size(); ++t) {
    const int when = program.steps[t].deferred ? eff[t] : static_cast<int>(t);
    for (const auto& v : order[t]->inputs) {
      const int c = cell_of.at(v.get());
      auto it = last_use.find(c);
      if (it == last_use.end() || when > it->second) last_use[c] = when;
    }
  }
  for (const auto& [cell, t] : last_use)
    if (program.cell_kind[cell] == CellKind::Intermediate && !keep.count(cell))
      program.steps[t].free_after.push_back(cell);
  // Outputs nobody reads (e.g. the second output of a two-output node) die after their producer.
  for (size_t t = 0; t < order.size(); ++t)
    for (int o = 0; o < order[t]->nout(); ++o) {
      int c = cell_of.at(order[t]->output_ptr(o));
      if (!last_use.count(c) && !keep.count(c)) program.steps[t].free_after.push_back(c);
    }

  const auto& gouts = fg.outputs();
  for (size_t i = 0; i < outputs.size(); ++i)
    program.outputs.push_back({cell_of.at(gouts[i].get()), outputs[i].borrow, aliases(gouts[i])});
  for (size_t u = 0; u < opts.updates.size(); ++u) {
    const Var& v = gouts[outputs.size() + u];
    // (A step that writes into a per-call copy gives a value of its own: no leaf's memory.)
    const bool copy = v->owner && writes_copy.count(v->owner);
    const bool in_place = v->owner && destroys_shared(*v->owner) && !copy;
    program.updates.push_back({opts.updates[u].first->cell, opts.updates[u].first, cell_of.at(v.get()),
                               aliases(v) && !in_place && !copy, in_place});
  }
}

std::shared_ptr<Program> compile_program(std::vector<In> inputs, std::vector<Out> outputs, FunctionOptions opts);

/// 7. Build the program: the inner functions of ops that run sub-programs (compiled by this same
/// pipeline and mode, for the backend that runs the node: a scan that a device backend runs
/// takes and gives device arrays, one on the host runs its body there with no transfer per
/// step), options, the profile's tables, and the first frame (every kernel).
void build_program(Program& program, const FunctionOptions& opts, const std::string& label) {
  for (Program::Step& st : program.steps) {
    const std::vector<InnerFunction> inner = st.node->op->inner_functions();
    const Backend* runs_on = inner.empty() ? nullptr : program.backend->provider(*st.node);
    for (size_t k = 0; k < inner.size(); ++k) {
      FunctionOptions io;
      io.backend = runs_on ? runs_on->name() : program.backend->name();
      io.device_io = runs_on && runs_on->device_kind() != DeviceKind::Host;
      io.mode = opts.mode;
      io.rewrite = opts.rewrite;
      io.on_unused_input = "ignore";
      io.profile = false;
      io.name = label + ": " + st.node->op->name() + " inner function " + std::to_string(k);
      std::vector<In> ins(inner[k].inputs.begin(), inner[k].inputs.end());
      for (size_t i = 0; i < inner[k].mutable_inputs.size(); ++i) ins[i].mutable_ = inner[k].mutable_inputs[i];
      std::vector<Out> outs(inner[k].outputs.begin(), inner[k].outputs.end());
      st.inner.push_back(compile_program(std::move(ins), std::move(outs), std::move(io)));
    }
  }
  program.allow_gc = opts.allow_gc.value_or(config().allow_gc);
  if (opts.profile.value_or(config().profile)) {
    program.profile = std::make_unique<Profile>();
    program.profile->function_name = opts.name;
    for (const auto& th : program.steps) {
      Profile::NodeStats s;
      s.op_name = th.node->op->name();
      std::string cls = s.op_name.substr(0, s.op_name.find('{'));
      s.op_class = cls;
      std::ostringstream os;
      os << s.op_name << "(";
      for (size_t i = 0; i < th.node->inputs.size(); ++i) os << (i ? ", " : "") << th.node->inputs[i]->str();
      os << ")";
      s.apply_str = os.str();
      program.profile->nodes.push_back(s);
    }
  }
  program.finalize();  // builds the kernels
}

std::shared_ptr<Program> compile_program(std::vector<In> inputs, std::vector<Out> outputs, FunctionOptions opts) {
  auto t_start = std::chrono::steady_clock::now();
  NoTraceScope no_trace;  // compiled nodes take their user lines from the nodes they replace
  const std::string label = fn_label(opts.name);
  check_signature(label, inputs, outputs, opts);
  const Backend& backend = backend_or_default(opts.backend);

  auto program = std::make_shared<Program>();
  program->name = opts.name;
  program->backend = &backend;
  program->oracle = backend.checked_against() ? backend.checked_against() : &backend;
  const std::string mode_name = opts.mode.value_or(config().mode);
  const bool debug_mode_asked = mode_name == "DebugMode" || mode_name == "DEBUG_MODE";
  // DebugMode compares values on the host, node by node; a device backend would need every value
  // brought back first (not built: its kernels are checked against the CPU by tests instead).
  if (debug_mode_asked && backend.device_kind() != DeviceKind::Host)
    fail<NotImplementedError>(label, ": DebugMode is not available on backend '", backend.name(),
                              "' (device memory); use it with the cpu backend, or mode FAST_RUN");
  program->debug_mode = debug_mode_asked || (config().debug_checks && backend.checked_against() != nullptr);

  program->pre_step = opts.pre_node;
  if (opts.nan_guard) {
    program->post_step = [guard = *opts.nan_guard, post = opts.post_node](size_t t, const Apply& node,
                                                                          const KernelArgs& a) {
      nan_guard_check(node, a, guard);
      if (post) post(t, node, a);
    };
  } else {
    program->post_step = opts.post_node;
  }

  clone_graph_into(*program, label, inputs, outputs, opts);
  lower_storage(*program, backend);
  rewrite_step(*program, backend, label, inputs, opts);
  lower_storage(*program, backend);
  place(*program->fgraph, backend, label);
  place_on_devices(*program->fgraph, backend, outputs.size(), opts.device_io);
  if (opts.device_io && backend.device_kind() != DeviceKind::Host)
    program->io_device = Device::of(backend.device_kind());
  const auto order = schedule(*program->fgraph, backend, label);
  plan_memory(*program, order, inputs, outputs, opts);
  build_program(*program, opts, label);

  if (program->profile) program->profile->compile_phases = program->rewrite_stats.phase_seconds;
  if (program->profile) {
    program->profile->compile_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start).count();
    auto& reg = profile_registry();
    std::lock_guard<std::mutex> lock(reg.mu);
    reg.programs.push_back(program);
  }
  return program;
}

}  // namespace

Function function(std::vector<In> inputs, std::vector<Out> outputs, FunctionOptions opts) {
  return Function(compile_program(std::move(inputs), std::move(outputs), std::move(opts)));
}

Function::Function(std::shared_ptr<Program> program) : program_(std::move(program)) {}
Function::~Function() = default;
Function::Function(Function&&) noexcept = default;
Function& Function::operator=(Function&&) noexcept = default;

std::vector<NDArray> Function::operator()(const std::vector<NDArray>& args) {
  const auto& ins = program_->inputs;
  if (args.size() > ins.size())
    fail<TypeError>(fn_label(program_->name), ": got ", args.size(), " arguments but the function has ", ins.size(),
                    " inputs");
  std::vector<NDArray> outs(program_->outputs.size());
  if (args.size() == ins.size()) {
    program_->run(args, outs);
    return outs;
  }
  std::vector<NDArray> all(ins.size());
  for (size_t i = 0; i < ins.size(); ++i) {
    if (i < args.size())
      all[i] = args[i];
    else if (ins[i].default_value)
      all[i] = *ins[i].default_value;
    else
      fail<TypeError>(fn_label(program_->name), ": missing argument for input ", i,
                      ins[i].name.empty() ? "" : " ('" + ins[i].name + "')", " (", ins[i].type.str(),
                      ") which has no default value");
  }
  program_->run(all, outs);
  return outs;
}

void Function::call(std::span<const NDArray> args, std::span<NDArray> outs) {
  if (args.size() != program_->inputs.size() || outs.size() != program_->outputs.size())
    fail<TypeError>(fn_label(program_->name), ": call() needs ", program_->inputs.size(), " arguments and ",
                    program_->outputs.size(), " output slots; got ", args.size(), " and ", outs.size());
  program_->run(args, outs);
}

int Function::n_inputs() const { return static_cast<int>(program_->inputs.size()); }
int Function::n_outputs() const { return static_cast<int>(program_->outputs.size()); }
int Function::n_updates() const { return static_cast<int>(program_->updates.size()); }
std::vector<std::shared_ptr<Apply>> Function::toposort() const {
  std::vector<std::shared_ptr<Apply>> r;
  for (const auto& t : program_->steps) r.push_back(t.node);
  return r;
}
std::vector<std::pair<size_t, size_t>> Function::recorded_runs() const { return program_->recorded_runs(); }
std::vector<Device> Function::node_devices() const {
  std::vector<Device> r;
  for (const auto& t : program_->steps)
    r.push_back(t.node->op->moves_between_devices() ? Device::host() : Device::of(t.device));
  return r;
}
std::vector<Var> Function::graph_outputs() const { return program_->fgraph->outputs(); }
std::string Function::debugprint(const DebugPrintOptions& opts) const {
  auto order = toposort();
  return hypatia::debugprint(program_->fgraph->outputs(), opts, &order);
}
Profile* Function::profile() const { return program_->profile.get(); }
std::unique_ptr<InnerRunner> Function::runner() { return program_->runner(); }
const std::string& Function::name() const { return program_->name; }

NDArray eval(const Var& v, const std::vector<std::pair<Var, NDArray>>& inputs, std::string_view backend) {
  std::vector<In> ins;
  std::vector<NDArray> args;
  for (const auto& [var, val] : inputs) {
    ins.emplace_back(var);
    args.push_back(val);
  }
  FunctionOptions opts;
  opts.on_unused_input = "ignore";
  opts.backend = backend;
  opts.allow_gc = true;
  opts.profile = false;
  return function(std::move(ins), {Out(v)}, opts)(args)[0];
}

NDArray get_value(const Var& shared_var, bool borrow, bool return_internal_type) {
  if (!shared_var || !shared_var->is_shared()) fail<TypeError>("get_value: the variable is not a shared variable");
  NDArray v = shared_var->cell->load();
  if (!v.on_host() && !return_internal_type) return v.to_device(Device::host());
  return borrow ? v : v.copy();
}

void set_value(const Var& shared_var, NDArray value, bool borrow) {
  if (!shared_var || !shared_var->is_shared()) fail<TypeError>("set_value: the variable is not a shared variable");
  if (auto err = shared_var->type.check_value(value); !err.empty())
    fail<TypeError>("set_value of shared variable '", shared_var->name, "' (", shared_var->type.str(), "): ", err);
  // The value stays where the variable lives (a shared variable on the GPU is copied into).
  const Device where = shared_var->cell->fixed_device.value_or(shared_var->cell->load().device());
  if (value.device() != where)
    value = value.to_device(where);
  else if (!borrow)
    value = value.copy();
  NDArray old = shared_var->cell->exchange(std::move(value));
  old.reset();  // released outside the lock
}

}  // namespace hypatia
