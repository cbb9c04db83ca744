#include "hypatia/runtime/program.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iomanip>
#include <map>
#include <sstream>

#include "hypatia/core/config.h"
#include "hypatia/core/error.h"
#include "hypatia/graph/printing.h"

namespace hypatia {
namespace {

/// Theano's context block for a failing node: the node, its input types, shapes and strides.
std::string node_context(const Program::Thunk& t) {
  std::ostringstream os;
  const Apply& n = *t.node;
  os << "\nApply node that caused the error: " << n.op->name() << "(";
  for (size_t i = 0; i < n.inputs.size(); ++i) os << (i ? ", " : "") << n.inputs[i]->str();
  os << ")\nInputs types: [";
  for (size_t i = 0; i < n.inputs.size(); ++i) os << (i ? ", " : "") << n.inputs[i]->type.str();
  os << "]\nInputs shapes: [";
  for (size_t i = 0; i < t.in.size(); ++i) os << (i ? ", " : "") << (t.in[i]->valid() ? t.in[i]->shape().str() : "?");
  os << "]\nInputs strides: [";
  for (size_t i = 0; i < t.in.size(); ++i) os << (i ? ", " : "") << (t.in[i]->valid() ? t.in[i]->strides().str() : "?");
  os << "]";
  if (!n.trace.empty())
    os << "\nNode created at: " << n.trace;
  else
    os << "\nHINT: the node was built in C++; where it was created is not recorded.";
  if (config().exception_verbosity == "high") {
    std::vector<Var> outs;
    for (int i = 0; i < n.nout(); ++i) outs.push_back(const_cast<Apply&>(n).output(i));
    os << "\nDebugprint of the apply node:\n" << debugprint(outs, DebugPrintOptions{.print_type = true});
  } else {
    os << "\nHINT: use HYPATIA_FLAGS=exception_verbosity=high for a debugprint of this apply node.";
  }
  return os.str();
}

template <class E>
[[noreturn]] void rethrow_with(const E& e, const std::string& ctx) {
  throw E(std::string(e.what()) + ctx);
}

}  // namespace

void Program::bind_input(size_t i, const NDArray& arg) {
  const InputSlot& s = inputs[i];
  auto where = [&] {
    std::ostringstream os;
    os << "function '" << (name.empty() ? "<unnamed>" : name) << "': input " << i;
    if (!s.name.empty()) os << " ('" << s.name << "')";
    return os.str();
  };
  if (!arg.valid()) fail<TypeError>(where(), ": got an empty (invalid) NDArray; expected ", s.type.str());
  if (arg.ndim() != s.type.ndim())
    fail<TypeError>(where(), ": expected ", s.type.str(), " (", s.type.ndim(),
                    " dimensions) but got an array of shape ", arg.shape().str(), " (", arg.ndim(), " dimensions)");
  for (int d = 0; d < arg.ndim(); ++d)
    if (s.type.broadcastable[d] && arg.shape(d) != 1)
      fail<TypeError>(where(), ": dimension ", d, " of ", s.type.str(),
                      " is broadcastable (length 1) but the array has shape ", arg.shape().str());
  NDArray& cell = storage[s.cell];
  if (arg.dtype() == s.type.dtype) {
    cell = arg;
    return;
  }
  if (!allow_input_downcast && !can_cast_safely(arg.dtype(), s.type.dtype))
    fail<TypeError>(where(), ": expected dtype ", dtype_name(s.type.dtype), " (", s.type.str(), ") but got ",
                    dtype_name(arg.dtype()),
                    "; casting would lose precision. Pass allow_input_downcast=true "
                    "or cast the data to ",
                    dtype_name(s.type.dtype), ".");
  cell = arg.astype(s.type.dtype);
}

namespace {

/// Whether a and b hold the same values (NaN equals NaN) within the dtype's tolerance.
bool values_close(const NDArray& a, const NDArray& b, bool exact) {
  if (a.valid() != b.valid()) return false;
  if (!a.valid()) return true;
  if (a.dtype() != b.dtype() || !(a.shape() == b.shape())) return false;
  const bool f32 = a.dtype() == DType::Float32;
  const double rtol = exact ? 0 : (f32 ? 1e-4 : 1e-7), atol = exact ? 0 : (f32 ? 1e-5 : 1e-10);
  for (int64_t i = 0; i < a.size(); ++i) {
    const double x = a.get_flat(i), y = b.get_flat(i);
    if (std::isnan(x) && std::isnan(y)) continue;
    if (x == y) continue;
    if (!(std::abs(x - y) <= atol + rtol * std::abs(y))) return false;
  }
  return true;
}

}  // namespace

void Program::run_debug(Thunk& th) {
  if (th.node->op->has_side_effects()) {  // run once: a Print must print once
    th.kernel->run(KernelArgs{th.in, th.out});
    return;
  }
  const AliasMap dm = th.node->op->destroy_map();
  std::vector<bool> destroyed(th.in.size(), false);
  for (const auto& o : dm)
    for (int i : o) destroyed[i] = true;
  std::vector<NDArray> before, ref_in, ref_out(th.out.size());
  for (NDArray* a : th.in) {
    before.push_back(a->valid() ? a->copy() : NDArray());
    ref_in.push_back(a->valid() ? a->copy() : NDArray());
  }
  th.kernel->run(KernelArgs{th.in, th.out});
  for (size_t i = 0; i < th.in.size(); ++i)
    if (!destroyed[i] && !values_close(*th.in[i], before[i], /*exact=*/true))
      fail<InternalError>("DebugMode: ", th.node->op->name(), " changed its input ", i,
                          " which its destroy_map does not declare (BadDestroyMap)");
  std::vector<NDArray*> rin, rout;
  for (auto& a : ref_in) rin.push_back(&a);
  for (auto& a : ref_out) rout.push_back(&a);
  th.reference->run(KernelArgs{rin, rout});
  for (size_t o = 0; o < th.out.size(); ++o)
    if (!values_close(*th.out[o], ref_out[o], /*exact=*/false))
      fail<InternalError>("DebugMode: output ", o, " of ", th.node->op->name(),
                          " differs from the reference kernel's (", th.out[o]->valid() ? th.out[o]->describe() : "none",
                          " vs ", ref_out[o].valid() ? ref_out[o].describe() : "none", "; BadThunkOutput)");
}

namespace {

/// Runs fn; an error gets the node's context (Theano's "Apply node that caused the error").
template <class Fn>
void with_node_context(const Program::Thunk& th, Fn&& fn) {
  try {
    fn();
  } catch (const IndexError& e) {
    rethrow_with(e, node_context(th));
  } catch (const NotDifferentiableError& e) {
    rethrow_with(e, node_context(th));
  } catch (const TypeError& e) {
    rethrow_with(e, node_context(th));
  } catch (const ValueError& e) {
    rethrow_with(e, node_context(th));
  } catch (const MemoryError& e) {
    // The allocator's message names the bytes; the node's name goes first.
    throw MemoryError(th.node->op->name() + ": " + e.what() + node_context(th));
  } catch (const Error& e) {
    rethrow_with(e, node_context(th));
  } catch (const InternalError& e) {
    rethrow_with(e, node_context(th));
  } catch (const std::bad_alloc&) {
    throw MemoryError(th.node->op->name() + ": out of memory (std::bad_alloc)" + node_context(th));
  }
}

}  // namespace

void Program::run_thunks(size_t begin, size_t end) {
  const bool prof = profile != nullptr;
  for (size_t t = begin; t < end; ++t) {
    Thunk& th = thunks[t];
    KernelArgs args{th.in, th.out};
    with_node_context(th, [&] {
      if (prof) {
        auto t0 = std::chrono::steady_clock::now();
        th.kernel->run(args);
        auto& st = profile->nodes[t];
        st.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        ++st.calls;
      } else if (debug_mode) {
        run_debug(th);
      } else {
        th.kernel->run(args);
      }
    });
    if (allow_gc)
      for (int c : th.free_after) storage[c] = NDArray();
  }
}

void Program::prepare_shared_destroyers() {
  for (size_t t = first_shared_destroyer; t < thunks.size(); ++t) {
    const Thunk& th = thunks[t];
    with_node_context(th, [&] { th.node->op->check_runtime_inputs(*th.node, th.in); });
  }
  for (size_t t = first_shared_destroyer; t < thunks.size(); ++t) {
    for (int c : thunks[t].view_cells) storage[c].reset();
    for (int c : thunks[t].shared_cells)
      if (storage[c].use_count() > 2) storage[c] = storage[c].copy();  // held outside the call too
  }
}

void Program::finalize() {
  release_cells.clear();
  for (size_t c = 0; c < storage.size(); ++c)
    if (cell_kind[c] == CellKind::Input || cell_kind[c] == CellKind::Shared ||
        (allow_gc && cell_kind[c] == CellKind::Intermediate))
      release_cells.push_back(static_cast<int>(c));
}

void Program::release_intermediates() {
  for (int c : release_cells) storage[c].reset();
}

void Program::run(std::span<const NDArray> args, std::span<NDArray> outs) {
  HYP_ASSERT(args.size() == inputs.size() && outs.size() == outputs.size());
  auto t0 = profile ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
  try {
    for (size_t i = 0; i < args.size(); ++i) bind_input(i, args[i]);
    if (check_rewrites) {
      std::vector<NDArray> bound;
      for (const InputSlot& s : inputs) bound.push_back(storage[s.cell]);
      check_rewrites(bound);
    }
    for (const SharedSlot& s : shared) storage[s.cell] = s.shared->value;
    // The caller's previous outputs, when nothing else holds them, become this call's output buffers.
    for (size_t i = 0; i < outputs.size(); ++i) {
      NDArray& cell = storage[outputs[i].cell];
      if (cell_kind[outputs[i].cell] == CellKind::Intermediate && !cell.valid() && outs[i].valid() && outs[i].unique())
        cell = std::move(outs[i]);
      outs[i].reset();
    }
    run_thunks(0, first_shared_destroyer);
    // Updates: check every new value before committing any, so a failure changes nothing. The
    // nodes that overwrite shared variables run after the other values are checked, and after
    // checking their own inputs: past that point nothing can fail.
    std::vector<NDArray> new_values(updates.size());
    for (size_t i = 0; i < updates.size(); ++i) {
      const UpdateSlot& u = updates[i];
      if (u.in_place) continue;
      NDArray v = storage[u.value_cell];
      if (auto err = u.variable->type.check_value(v); !err.empty())
        fail<ValueError>("function '", name, "': the update of shared variable '", u.variable->name, "': ", err);
      bool alias = u.may_alias_leaf;
      for (const NDArray& prev : new_values) alias |= prev.shares_buffer(v);
      new_values[i] = alias ? v.copy() : std::move(v);
    }
    if (first_shared_destroyer < thunks.size()) {
      prepare_shared_destroyers();
      run_thunks(first_shared_destroyer, thunks.size());
      for (size_t i = 0; i < updates.size(); ++i)
        if (updates[i].in_place) new_values[i] = storage[updates[i].value_cell];
    }
    for (size_t i = 0; i < outputs.size(); ++i) {
      const OutputSlot& o = outputs[i];
      NDArray& cell = storage[o.cell];
      bool fresh = !o.may_alias_leaf;
      for (size_t j = 0; j < i && fresh; ++j) fresh = outputs[j].cell != o.cell;
      for (const NDArray& nv : new_values) fresh = fresh && !nv.shares_buffer(cell);
      if (o.borrow)
        outs[i] = cell;
      else if (fresh && cell_kind[o.cell] == CellKind::Intermediate)
        outs[i] = std::move(cell);
      else
        outs[i] = cell.copy();
    }
    for (size_t i = 0; i < updates.size(); ++i) updates[i].shared->value = std::move(new_values[i]);
  } catch (...) {
    release_intermediates();
    throw;
  }
  release_intermediates();
  if (profile) {
    ++profile->calls;
    profile->call_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
}

std::string Profile::summary() const {
  std::ostringstream os;
  double total = 0;
  for (const auto& n : nodes) total += n.seconds;
  auto pct = [&](double s) { return total > 0 ? 100.0 * s / total : 0.0; };
  os << "Function profiling\n==================\n  Message: " << (function_name.empty() ? "<unnamed>" : function_name)
     << "\n  Time in " << calls << " calls to Function.__call__: " << std::scientific << std::setprecision(6)
     << call_seconds << "s\n  Time in Function.fn.__call__ (thunks): " << total << "s";
  if (call_seconds > 0) os << " (" << std::fixed << std::setprecision(3) << 100.0 * total / call_seconds << "%)";
  os << "\n  Total compile time: " << std::scientific << compile_seconds << "s\n\n";
  auto table = [&](const char* title, const char* key_name, auto key_of) {
    std::map<std::string, std::pair<double, long>> agg;
    std::map<std::string, long> napply;
    for (const auto& n : nodes) {
      auto& a = agg[key_of(n)];
      a.first += n.seconds;
      a.second += n.calls;
      ++napply[key_of(n)];
    }
    std::vector<std::pair<std::string, std::pair<double, long>>> rows(agg.begin(), agg.end());
    std::sort(rows.begin(), rows.end(), [](auto& a, auto& b) { return a.second.first > b.second.first; });
    os << title << "\n---\n<% time> <sum %> <apply time> <time per call> <#call> <#apply> <" << key_name << ">\n";
    double cum = 0;
    for (const auto& [k, v] : rows) {
      cum += pct(v.first);
      os << std::fixed << std::setprecision(1) << std::setw(7) << pct(v.first) << "%  " << std::setw(6) << cum << "%  "
         << std::scientific << std::setprecision(3) << v.first << "s  " << (v.second ? v.first / v.second : 0.0)
         << "s  " << std::setw(6) << v.second << "  " << std::setw(4) << napply[k] << "  " << k << "\n";
    }
    os << "\n";
  };
  table("Class", "Class name", [](const NodeStats& n) { return n.op_class; });
  table("Ops", "Op name", [](const NodeStats& n) { return n.op_name; });
  os << "Apply\n------\n<% time> <sum %> <apply time> <time per call> <#call> <id> <Apply name>\n";
  std::vector<size_t> idx(nodes.size());
  for (size_t i = 0; i < idx.size(); ++i) idx[i] = i;
  std::sort(idx.begin(), idx.end(), [&](size_t a, size_t b) { return nodes[a].seconds > nodes[b].seconds; });
  double cum = 0;
  for (size_t i : idx) {
    const auto& n = nodes[i];
    cum += pct(n.seconds);
    os << std::fixed << std::setprecision(1) << std::setw(7) << pct(n.seconds) << "%  " << std::setw(6) << cum << "%  "
       << std::scientific << std::setprecision(3) << n.seconds << "s  " << (n.calls ? n.seconds / n.calls : 0.0)
       << "s  " << std::setw(6) << n.calls << "  " << std::setw(3) << i << "  " << n.apply_str << "\n";
  }
  return os.str();
}

}  // namespace hypatia
