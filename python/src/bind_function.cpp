// Function: a compiled hypatia::Function whose call runs in C++ from the type's call slot: the
// arguments are viewed in place (numpy arrays) or converted (other values) into preallocated
// NDArray slots, Function::call runs, and the outputs come back as numpy arrays that own a
// reference to the C++ buffers. No Python code runs between the caller and the kernels.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>

#include "bindings.h"
#include "interrupt.h"

namespace hypatia::python {
namespace {

PyObject* function_vectorcall(PyObject* self, PyObject* const* args, size_t nargsf, PyObject* kwnames);

/// A compiled function with what the Python call needs beside the C++ Function.
struct PyFunction {
  /// Python's vectorcall entry: calls pass the arguments as an array (no tuple, no dict per call).
  /// The type's tp_vectorcall_offset points here (set once the type exists; checked per instance).
  vectorcallfunc vectorcall = function_vectorcall;
  Function fn;
  std::vector<TensorType> input_types;
  std::vector<std::string> input_names;
  std::vector<std::optional<NDArray>> defaults;
  /// Per input: In's allow_downcast, else the function's allow_input_downcast.
  std::vector<Downcast> downcast;
  /// Outputs were given as one variable (return one array) rather than a list.
  bool unpack_single = false;
  /// Argument and output slots, reused by every call that finds them free (a call from another
  /// thread, or from inside a call, uses slots of its own). `busy` is read and set with the GIL.
  std::vector<NDArray> args, outs;
  bool busy = false;

  /// Whether the last call ran long (the first call counts as long): such a function releases
  /// the GIL and obeys Ctrl-C on every call until a call runs short again.
  std::atomic<bool> last_call_long{true};

  PyFunction(Function f) : fn(std::move(f)) {}

  /// About 100 us on a 2 GHz time-stamp counter.
  static constexpr uint64_t kLongCallTicks = 200000;
  static uint64_t ticks() {
#if defined(__x86_64__) || defined(__i386__)
    return __builtin_ia32_rdtsc();
#else
    return static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
#endif
  }

  /// Whether the call may take long: then it releases the GIL and obeys Ctrl-C. Calls of a
  /// function with updates always do (they may wait for another call of it).
  bool may_run_long(const std::vector<NDArray>& args) const {
    if (fn.n_updates() > 0 || last_call_long.load(std::memory_order_relaxed)) return true;
    int64_t elements = 0;
    for (const NDArray& x : args) elements += x.size();
    return elements > 65536;
  }

  std::string input_label(size_t i) const {
    std::string s =
        "function '" + (fn.name().empty() ? std::string("<unnamed>") : fn.name()) + "': input " + std::to_string(i);
    if (!input_names[i].empty()) s += " ('" + input_names[i] + "')";
    return s;
  }

  /// numpy arrays are viewed as they are (Function::call checks ndim, broadcastable and dtype);
  /// other values go through Theano's filter.
  NDArray convert(PyObject* obj, size_t i) const {
    if (is_numpy_array(obj)) return to_ndarray(obj);
    return filter_value(obj, input_types[i], downcast[i], input_label(i).c_str(), /*offer_downcast_flag=*/true);
  }

  /// argv holds nargs positional values, then one value per name of kwnames (a tuple or null).
  PyObject* call(PyObject* const* argv, size_t nargs, PyObject* kwnames, std::vector<NDArray>& a,
                 std::vector<NDArray>& o) {
    const size_t n_in = input_types.size();
    if (nargs > n_in)
      fail<TypeError>("function '", fn.name().empty() ? "<unnamed>" : fn.name(), "': got ", nargs,
                      " positional arguments but the function has ", n_in, " inputs");
    for (size_t i = 0; i < nargs; ++i) a[i] = convert(argv[i], i);
    const Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    for (Py_ssize_t j = 0; j < nkw; ++j) {
      const char* k = PyUnicode_AsUTF8(PyTuple_GET_ITEM(kwnames, j));
      if (!k) throw nb::python_error();
      size_t i = 0;
      while (i < n_in && input_names[i] != k) ++i;
      if (i == n_in) fail<TypeError>("function got an unexpected keyword argument '", k, "'");
      if (a[i].valid()) fail<TypeError>("function got multiple values for input '", k, "'");
      a[i] = convert(argv[nargs + static_cast<size_t>(j)], i);
    }
    for (size_t i = nargs; i < n_in; ++i) {
      if (a[i].valid()) continue;
      if (!defaults[i])
        fail<TypeError>(input_label(i), " (", input_types[i].str(),
                        ") is missing: it was not given and has no default value");
      a[i] = *defaults[i];
    }
    // Pending signals first (a Ctrl-C before the call raises before it runs).
    if (PyErr_CheckSignals() < 0) throw nb::python_error();
    if (!may_run_long(a)) {
      // A call that is expected to be short keeps the GIL: releasing it and arming Ctrl-C would
      // cost more than the call (a one-element x + 1 takes a few hundred nanoseconds). It never
      // blocks on a lock another call holds while waiting for the GIL: functions with updates
      // always take the other path, and the shared variables' locks are never held across a
      // GIL acquisition.
      const uint64_t t0 = ticks();
      fn.call(a, o);
      last_call_long.store(ticks() - t0 > kLongCallTicks, std::memory_order_relaxed);
    } else {
      const std::atomic<bool>* cancel = begin_interruptible_call();
      for (;;) {
        try {
          // The kernels run without the GIL (other Python threads go on; Python Ops take it back).
          nb::gil_scoped_release nogil;
          CancelScope scope(cancel);
          const uint64_t t0 = ticks();
          fn.call(a, o);
          last_call_long.store(ticks() - t0 > kLongCallTicks, std::memory_order_relaxed);
          break;
        } catch (const Cancelled&) {
          // Ctrl-C: the call stopped between nodes and changed no shared variable. Python's
          // handler raises KeyboardInterrupt; a handler that does not raise lets the call run again.
          if (finish_interrupted_call()) throw nb::python_error();
        }
      }
    }
    for (NDArray& x : a) x.reset();
    if (unpack_single) {
      PyObject* r = to_python(o[0]);
      o[0].reset();
      return r;
    }
    PyObject* list = PyList_New(static_cast<Py_ssize_t>(o.size()));
    if (!list) return nullptr;
    for (size_t i = 0; i < o.size(); ++i) {
      PyObject* r = to_python(o[i]);
      o[i].reset();
      if (!r) {
        Py_DECREF(list);
        return nullptr;
      }
      PyList_SET_ITEM(list, static_cast<Py_ssize_t>(i), r);
    }
    return list;
  }
};

/// The type's vectorcall: the whole per-call path (tp_call, for calls with a tuple and a dict,
/// goes through PyVectorcall_Call to here).
PyObject* function_vectorcall(PyObject* self, PyObject* const* args, size_t nargsf, PyObject* kwnames) {
  PyFunction* f = nb::inst_ptr<PyFunction>(self);
  const size_t nargs = static_cast<size_t>(PyVectorcall_NARGS(nargsf));
  if (f->busy) {
    // A call from another thread (the first one released the GIL) or from inside a call (a
    // Python Op's perform): fresh slots; the C++ Function gives it working state of its own.
    std::vector<NDArray> a(f->args.size()), o(f->outs.size());
    try {
      return f->call(args, nargs, kwnames, a, o);
    } catch (...) {
      set_python_error(std::current_exception());
      return nullptr;
    }
  }
  f->busy = true;
  PyObject* r = nullptr;
  try {
    r = f->call(args, nargs, kwnames, f->args, f->outs);
  } catch (...) {
    for (NDArray& x : f->args) x.reset();
    for (NDArray& x : f->outs) x.reset();
    set_python_error(std::current_exception());
  }
  f->busy = false;
  return r;
}

PyType_Slot function_slots[] = {{Py_tp_call, reinterpret_cast<void*>(PyVectorcall_Call)}, {0, nullptr}};

// variable, name, value, borrow, mutable, allow_downcast (None: the function's)
using InSpec = std::tuple<Var, std::string, nb::object, bool, bool, std::optional<bool>>;
using OutSpec = std::pair<Var, bool>;  // variable, borrow

/// MonitorMode's pre_func / post_func as a node hook: called as func(i, node, fn) with fn.inputs and
/// fn.outputs lists of one-element lists (Theano's thunk storage), the values as read-only arrays.
FunctionOptions::NodeHook monitor_hook(nb::object func) {
  if (func.is_none()) return nullptr;
  auto shared = std::make_shared<nb::object>(std::move(func));
  return [shared](size_t step, const Apply& node, const KernelArgs& a) {
    nb::gil_scoped_acquire gil;
    auto storage = [](std::span<NDArray* const> v) {
      nb::list l;
      for (const NDArray* x : v) {
        nb::list cell;
        if (x->valid()) {
          nb::object arr = nb::steal(to_numpy(*x, /*writeable=*/false));
          if (!arr.is_valid()) throw nb::python_error();
          cell.append(arr);
        } else {
          cell.append(nb::none());
        }
        l.append(cell);
      }
      return l;
    };
    nb::object fn = nb::module_::import_("types").attr("SimpleNamespace")();
    fn.attr("inputs") = storage(a.in);
    fn.attr("outputs") = storage(a.out);
    (*shared)(step, nb::cast(const_cast<Apply*>(&node), nb::rv_policy::reference), fn);
  };
}

nb::object compile(const std::vector<InSpec>& inputs, const std::vector<OutSpec>& outputs,
                   const std::vector<std::pair<Var, Var>>& updates, const std::vector<std::pair<Var, Var>>& givens,
                   std::optional<bool> allow_input_downcast, std::optional<bool> profile, std::optional<bool> allow_gc,
                   const std::string& name, const std::string& on_unused_input, const std::string& backend,
                   std::optional<std::string> mode, bool unpack_single,
                   std::optional<std::tuple<bool, bool, bool, double>> nan_guard, nb::object pre_func,
                   nb::object post_func) {
  const Downcast downcast =
      !allow_input_downcast ? Downcast::None : (*allow_input_downcast ? Downcast::Yes : Downcast::No);
  std::vector<In> ins;
  std::vector<TensorType> types;
  std::vector<std::string> names;
  std::vector<std::optional<NDArray>> defaults;
  std::vector<Downcast> downcasts;
  for (const auto& [var, in_name, value, borrow, mut, allow_downcast] : inputs) {
    if (!var) throw TypeError("function: an input is None");
    In in(var);
    in.name = in_name;
    in.borrow = borrow;
    in.mutable_ = mut;
    const Downcast d = !allow_downcast ? downcast : (*allow_downcast ? Downcast::Yes : Downcast::No);
    in.allow_downcast = allow_downcast;
    downcasts.push_back(d);
    if (!value.is_none()) {
      std::string who = "function: the default value of input '" + (in_name.empty() ? var->str() : in_name) + "'";
      in.value = filter_value(value.ptr(), var->type, d, who.c_str(), /*offer_downcast_flag=*/true);
    }
    defaults.push_back(in.value);
    types.push_back(var->type);
    names.push_back(in_name.empty() ? var->name : in_name);
    ins.push_back(std::move(in));
  }
  std::vector<Out> outs;
  for (const auto& [var, borrow] : outputs) outs.emplace_back(var, borrow);
  FunctionOptions opts;
  opts.updates = updates;
  opts.givens = givens;
  opts.allow_input_downcast = downcast == Downcast::Yes;
  opts.profile = profile;
  opts.allow_gc = allow_gc;
  opts.name = name;
  opts.on_unused_input = on_unused_input;
  opts.mode = std::move(mode);
  opts.backend = backend;  // checked by function(): an unknown name is a ValueError naming the registered ones
  if (nan_guard) {
    const auto& [nan, inf, big, threshold] = *nan_guard;
    opts.nan_guard = NanGuardOptions{nan, inf, big, threshold};
  }
  opts.pre_node = monitor_hook(pre_func);
  opts.post_node = monitor_hook(post_func);
  // Held in the Python object itself (not behind a pointer), so that the vectorcall entry sits at
  // the type's fixed offset. Until marked ready, dropping the object runs no destructor.
  nb::object self = nb::inst_alloc(nb::type<PyFunction>());
  auto* f = new (nb::inst_ptr<PyFunction>(self)) PyFunction(function(std::move(ins), std::move(outs), std::move(opts)));
  nb::inst_mark_ready(self);
  if (reinterpret_cast<char*>(&f->vectorcall) - reinterpret_cast<char*>(self.ptr()) !=
      Py_TYPE(self.ptr())->tp_vectorcall_offset)
    throw InternalError("Function: the instance's vectorcall entry is not at its type's offset");
  f->input_types = std::move(types);
  f->input_names = std::move(names);
  f->defaults = std::move(defaults);
  f->downcast = std::move(downcasts);
  f->unpack_single = unpack_single && outputs.size() == 1;
  f->args.resize(f->input_types.size());
  f->outs.resize(outputs.size());
  return self;
}

/// Turns on vectorcall for the Function type: its offset is where the entry of an instance held in
/// the Python object lies (compile checks every instance against it).
void enable_vectorcall(nb::handle cls) {
  nb::object probe = nb::inst_alloc(cls);  // storage only: never constructed, so never destructed
  auto* tp = reinterpret_cast<PyTypeObject*>(cls.ptr());
  // The entry is PyFunction's first member (no base, nothing virtual): at the object's address.
  const char* entry = reinterpret_cast<const char*>(nb::inst_ptr<PyFunction>(probe));
  tp->tp_vectorcall_offset = entry - reinterpret_cast<const char*>(probe.ptr());
  tp->tp_flags |= Py_TPFLAGS_HAVE_VECTORCALL;
}

}  // namespace

void init_function(nb::module_& m) {
  nb::class_<Profile>(m, "Profile", "Per-node timings of a compiled function.")
      .def("summary_text", &Profile::summary, "Theano-style profile tables.")
      .def_ro("function_name", &Profile::function_name)
      .def_ro("calls", &Profile::calls)
      .def_ro("call_seconds", &Profile::call_seconds)
      .def_ro("compile_seconds", &Profile::compile_seconds)
      .def_prop_ro(
          "compile_phases", [](const Profile& p) { return p.compile_phases; },
          "(rewrite phase, seconds) in pipeline order.")
      .def_ro("trace_dropped", &Profile::trace_dropped)
      .def_ro("peak_bytes", &Profile::peak_bytes,
              "Most bytes the intermediates and outputs held at once in one call, with the function's gc setting.")
      .def_ro("peak_bytes_no_gc", &Profile::peak_bytes_no_gc, "The same as if allow_gc were False.")
      .def_ro("allow_gc", &Profile::allow_gc)
      .def_prop_ro(
          "trace_events",
          [](const Profile& p) {
            nb::list l;
            for (const auto& e : p.trace) l.append(nb::make_tuple(e.call, e.step, e.thread, e.start_us, e.dur_us));
            return l;
          },
          "(call, step, thread, start_us, dur_us) per node run (the first 2^20).")
      .def_prop_ro("nodes", [](const Profile& p) {
        nb::list l;
        for (const auto& n : p.nodes) {
          nb::dict d;
          d["op_name"] = n.op_name;
          d["op_class"] = n.op_class;
          d["apply"] = n.apply_str;
          d["seconds"] = n.seconds;
          d["calls"] = n.calls;
          d["output_bytes"] = n.output_bytes;
          d["output_shapes"] = n.output_shapes;
          l.append(d);
        }
        return l;
      });

  nb::class_<PyFunction>(m, "Function", nb::type_slots(function_slots), nb::dynamic_attr(),
                         "A compiled function: call it with the input values (positional, or by input name).")
      .def_prop_ro("name", [](const PyFunction& f) { return f.fn.name(); })
      .def_prop_ro("n_inputs", [](const PyFunction& f) { return f.fn.n_inputs(); })
      .def_prop_ro("n_outputs", [](const PyFunction& f) { return f.fn.n_outputs(); })
      .def_prop_ro("input_names", [](const PyFunction& f) { return f.input_names; })
      .def_prop_ro("unpack_single", [](const PyFunction& f) { return f.unpack_single; })
      .def(
          "toposort", [](const PyFunction& f) { return f.fn.toposort(); }, "The compiled graph's nodes, in order.")
      .def(
          "node_devices",
          [](const PyFunction& f) {
            std::vector<std::string> r;
            for (const Device& d : f.fn.node_devices()) r.push_back(d.str());
            return r;
          },
          "Where each node of toposort() runs ('cpu', 'cuda:0').")
      .def(
          "graph_outputs", [](const PyFunction& f) { return f.fn.graph_outputs(); },
          "The compiled graph's outputs, then the update values.")
      .def(
          "debugprint_text",
          [](const PyFunction& f, bool print_type, int depth, bool provenance) {
            return f.fn.debugprint(
                DebugPrintOptions{.print_type = print_type, .depth = depth, .provenance = provenance});
          },
          "print_type"_a = false, "depth"_a = -1, "provenance"_a = false)
      .def_prop_ro(
          "profile", [](const PyFunction& f) { return f.fn.profile(); }, nb::rv_policy::reference_internal);
  enable_vectorcall(nb::type<PyFunction>());

  m.def("backend_names", &backend_names, "The registered kernel backends' names (a Mode's linker may name one).");
  m.def("compile_function", &compile, "inputs"_a, "outputs"_a, "updates"_a, "givens"_a, "allow_input_downcast"_a.none(),
        "profile"_a.none(), "allow_gc"_a.none(), "name"_a, "on_unused_input"_a, "backend"_a, "mode"_a.none(),
        "unpack_single"_a, "nan_guard"_a = nb::none(), "pre_func"_a = nb::none(), "post_func"_a = nb::none(),
        nb::rv_policy::take_ownership,
        "Compiles inputs (variable, name, default, borrow, mutable), outputs (variable, borrow), updates and givens;\n"
        "mode: the rewrite pipeline ('FAST_RUN', 'FAST_COMPILE', 'NONE'; None: config.mode and config.optimizer).");
}

}  // namespace hypatia::python
