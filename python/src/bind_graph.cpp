// TensorType, Variable, Apply, the Op classes, FunctionGraph, constants, shared variables,
// debugprint and the trace hook.
#include <string>
#include <unordered_map>

#include "bindings.h"
// After Python.h (through bindings.h).
#include <frameobject.h>

// Apply holds unique_ptrs (std::is_copy_constructible says yes through std::vector, wrongly).
template <>
struct nanobind::detail::is_copy_constructible<hypatia::Apply> : std::false_type {};

namespace hypatia::python {
namespace {

nb::tuple bool_tuple(const std::vector<bool>& v) {
  nb::list l;
  for (bool b : v) l.append(nb::bool_(b));
  return nb::tuple(l);
}

const char* kind_name(VarKind k) {
  switch (k) {
    case VarKind::Input:
      return "input";
    case VarKind::Output:
      return "output";
    case VarKind::Constant:
      return "constant";
    case VarKind::Shared:
      return "shared";
    case VarKind::NullGrad:
      return "nullgrad";
  }
  return "?";
}

/// {output index: [input indices]} as Theano's view_map / destroy_map.
nb::dict alias_dict(const AliasMap& m) {
  nb::dict d;
  for (size_t o = 0; o < m.size(); ++o)
    if (!m[o].empty()) d[nb::int_(o)] = nb::cast(m[o]);
  return d;
}

std::string apply_str(const Apply& a) {
  std::string s = a.op->name() + "(";
  for (size_t i = 0; i < a.inputs.size(); ++i) s += (i ? ", " : "") + a.inputs[i]->str();
  return s + ")";
}

/// One index bound: None, an integer, or a 0-d integer Variable.
IndexBound to_bound(nb::handle h) {
  if (h.is_none()) return {};
  if (nb::isinstance<Variable>(h)) return IndexBound(nb::cast<Var>(h));
  return IndexBound(static_cast<int64_t>(nb::cast<int64_t>(nb::int_(h))));
}

/// One entry of a Python index tuple (arrays and lists were made Variables by the caller).
Index to_index(nb::handle h) {
  if (h.is_none()) return newaxis();
  if (h.ptr() == Py_Ellipsis) return ellipsis();
  if (PySlice_Check(h.ptr())) return sl(to_bound(h.attr("start")), to_bound(h.attr("stop")), to_bound(h.attr("step")));
  if (nb::isinstance<Variable>(h)) return Index(nb::cast<Var>(h));
  if (PyBool_Check(h.ptr())) fail<IndexError>("subtensor: a bool index is not supported; use a boolean array");
  if (PyIndex_Check(h.ptr())) return Index(static_cast<int64_t>(nb::cast<int64_t>(nb::int_(h))));
  fail<IndexError>("subtensor: cannot index with ", nb::cast<std::string>(nb::repr(h)),
                   "; use integers, slices, None, Ellipsis or integer/boolean arrays");
}

}  // namespace

/// Files under this prefix (the hypatia package) are skipped when recording where a node was built.
static std::string g_trace_skip_prefix;

/// "file.py:12" of the innermost Python frame outside the hypatia package ("" outside Python).
/// Per code object (kept alive here, so that its address is not reused): its file name and whether
/// it is inside hypatia (skipped). Read under the GIL.
struct CodeInfo {
  bool inside;
  std::string file;
};
std::unordered_map<PyCodeObject*, CodeInfo>& code_infos() {
  static std::unordered_map<PyCodeObject*, CodeInfo> m;
  return m;
}

const CodeInfo& code_info(PyCodeObject* code) {
  auto& m = code_infos();
  auto it = m.find(code);
  if (it != m.end()) return it->second;
  const char* file = PyUnicode_AsUTF8(code->co_filename);
  if (!file) PyErr_Clear();
  CodeInfo info{!file || (!g_trace_skip_prefix.empty() && std::string_view(file).starts_with(g_trace_skip_prefix)),
                file ? std::string(file) : std::string()};
  if (m.size() >= 16384) {  // a program that makes code objects without end: stop caching
    static CodeInfo last;
    last = std::move(info);
    return last;
  }
  Py_INCREF(code);
  return m.emplace(code, std::move(info)).first->second;
}

/// "file:line" of the innermost frame outside hypatia (the user's line that built a node). Called
/// for every node and variable a user builds: file names and the inside/outside test are cached
/// per code object (building an MLP step's graph took 30% longer with the trace than without).
std::string python_trace() {
  if (!Py_IsInitialized() || !PyGILState_Check()) return {};
  PyFrameObject* f = PyEval_GetFrame();
  if (!f) return {};
  Py_INCREF(f);
  std::string result;
  while (f) {
    PyCodeObject* code = PyFrame_GetCode(f);
    const CodeInfo& info = code_info(code);
    if (!info.inside) {
      result.reserve(info.file.size() + 8);
      result = info.file;
      result += ':';
      result += std::to_string(PyFrame_GetLineNumber(f));
    }
    Py_DECREF(code);
    PyFrameObject* back = info.inside ? PyFrame_GetBack(f) : nullptr;
    Py_DECREF(f);
    f = back;
  }
  return result;
}

/// Converts a Python index tuple (already normalized to a tuple) to the C++ index list.
std::vector<Index> to_index_list(const nb::tuple& key) {
  std::vector<Index> idx;
  for (nb::handle h : key) idx.push_back(to_index(h));
  return idx;
}

void init_graph(nb::module_& m) {
  nb::class_<TensorType>(m, "TensorType", "The static type of a symbolic tensor: dtype and broadcastable pattern.")
      .def(nb::init<DType, std::vector<bool>>(), "dtype"_a, "broadcastable"_a)
      .def_prop_ro("dtype", [](const TensorType& t) { return t.dtype; })
      .def_prop_ro("broadcastable", [](const TensorType& t) { return bool_tuple(t.broadcastable); })
      .def_prop_ro("ndim", &TensorType::ndim)
      .def(
          "__call__",
          [](const TensorType& t, std::optional<std::string> name) { return variable(t, name.value_or("")); },
          "name"_a = nb::none(), "A new symbolic variable of this type.")
      .def(
          "make_variable",
          [](const TensorType& t, std::optional<std::string> name) { return variable(t, name.value_or("")); },
          "name"_a = nb::none())
      .def("check_value", &TensorType::check_value, "Empty when the array is a valid value, else what is wrong.")
      .def("__eq__", [](const TensorType& a,
                        nb::handle b) { return nb::isinstance<TensorType>(b) && a == nb::cast<const TensorType&>(b); })
      .def("__ne__",
           [](const TensorType& a, nb::handle b) {
             return !(nb::isinstance<TensorType>(b) && a == nb::cast<const TensorType&>(b));
           })
      .def("__hash__",
           [](const TensorType& t) {
             size_t h = std::hash<int>()(static_cast<int>(t.dtype));
             for (bool b : t.broadcastable) hash_combine(h, b ? 2 : 1);
             return h;
           })
      .def("__str__", &TensorType::str)
      .def("__repr__", &TensorType::str);

  nb::class_<Variable>(m, "Variable", nb::dynamic_attr(),
                       "A typed symbolic value: a free input, an op's output, a constant or a shared variable.")
      .def_prop_ro("type", [](const Variable& v) { return v.type; })
      .def_prop_rw(
          "name",
          [](const Variable& v) -> nb::object {
            return v.name.empty() ? nb::object(nb::none()) : nb::object(nb::str(v.name.c_str()));
          },
          [](Variable& v, std::optional<std::string> n) { v.name = n.value_or(""); }, nb::arg("name").none())
      .def_prop_ro("kind", [](const Variable& v) { return kind_name(v.kind); })
      .def_prop_ro("owner", [](const Variable& v) { return v.owner_ptr(); })
      .def_prop_ro("index", [](const Variable& v) { return v.index; })
      .def_prop_ro("ndim", &Variable::ndim)
      .def_prop_ro("dtype", [](const Variable& v) { return v.type.dtype; })
      .def_prop_ro("broadcastable", [](const Variable& v) { return bool_tuple(v.type.broadcastable); })
      .def_prop_ro("id", [](const Variable& v) { return v.id; })
      .def_prop_ro("created_at",
                   [](const Variable& v) { return v.trace.empty() && v.owner ? v.owner->trace : v.trace; })
      .def_prop_ro(
          "data",
          [](const Variable& v) -> nb::object {
            if (!v.is_constant()) throw nb::attribute_error("only constants have .data");
            return nb::steal(to_numpy(v.data, /*writeable=*/false));
          },
          "The value of a constant (a read-only numpy view).")
      .def_prop_rw(
          "test_value",
          [](const Variable& v) -> nb::object {
            if (!v.test_value.valid()) throw nb::attribute_error("this variable has no test value");
            return nb::steal(to_numpy(v.test_value));
          },
          [](Variable& v, nb::handle value) {
            std::string who = "test value of " + v.str();
            NDArray a = filter_value(value.ptr(), v.type, Downcast::None, who.c_str());
            if (auto err = v.type.check_value(a); !err.empty()) throw TypeError(who + ": " + err);
            v.test_value = a.copy();
          },
          "The test value (compute_test_value): set on inputs, computed for the nodes built from them.")
      .def_prop_ro("null_reason", [](const Variable& v) { return v.null_reason; })
      .def("__str__", &Variable::str)
      .def("__repr__", &Variable::str);

  nb::class_<Apply>(m, "Apply", "An application of an Op to input variables.")
      .def(nb::new_(&make_apply), "op"_a, "inputs"_a, "outputs"_a,
           "Apply(op, inputs, outputs): a node of op whose outputs have the types of `outputs` (Theano's make_node).")
      .def_prop_ro("op", [](const Apply& a) { return op_object(a.op); })
      .def_prop_ro("inputs", [](const Apply& a) { return a.inputs; })
      .def_prop_ro("outputs", [](Apply& a) { return a.outputs(); })
      .def_prop_ro("nout", &Apply::nout)
      .def_prop_ro("id", [](const Apply& a) { return a.id; })
      .def_prop_ro("created_at", [](const Apply& a) { return a.trace; })
      .def_prop_ro(
          "made_by", [](const Apply& a) { return a.made_by; },
          "The rewrite that put this node in a compiled graph ('' for the user's own nodes).")
      .def("output", &Apply::output)
      .def("__str__", &apply_str)
      .def("__repr__", &apply_str);

  nb::class_<Op>(m, "Op", "An operation on tensors (immutable; equal ops have equal attributes).")
      .def_prop_ro("name", &Op::name)
      .def_prop_ro("view_map", [](const Op& o) { return alias_dict(o.view_map()); })
      .def_prop_ro("destroy_map", [](const Op& o) { return alias_dict(o.destroy_map()); })
      .def(
          "make_node",
          [](std::shared_ptr<Op> op, const std::vector<Var>& inputs) {
            auto outs = apply_op(op, inputs);
            return outs.empty() ? nullptr : outs[0]->owner_ptr();
          },
          "inputs"_a, "Applies the op to input variables; returns the Apply node.")
      .def(
          "__call__",
          [](std::shared_ptr<Op> op, nb::args args) -> nb::object {
            // Numbers, arrays and lists become constants, as Theano's make_node converts them.
            std::vector<Var> inputs;
            for (nb::handle h : args) {
              if (nb::isinstance<Variable>(h))
                inputs.push_back(nb::cast<Var>(h));
              else
                inputs.push_back(nb::cast<Var>(nb::module_::import_("hypatia._convert").attr("as_tensor_variable")(h)));
            }
            auto outs = apply_op(op, inputs);
            if (outs.size() == 1) return nb::cast(outs[0]);
            return nb::cast(outs);
          },
          "Applies the op to input variables; returns its output (a list when it has several), like Theano.")
      .def("__eq__",
           [](const Op& a, nb::handle b) { return nb::isinstance<Op>(b) && a.equals(nb::cast<const Op&>(b)); })
      .def("__ne__",
           [](const Op& a, nb::handle b) { return !(nb::isinstance<Op>(b) && a.equals(nb::cast<const Op&>(b))); })
      .def("__hash__", &Op::hash)
      .def("__str__", &Op::name)
      .def("__repr__", &Op::name);

  nb::class_<FunctionGraph>(m, "FunctionGraph", "A graph with fixed inputs and outputs (cloned unless clone=False).")
      .def(nb::init<std::vector<Var>, std::vector<Var>, bool>(), "inputs"_a, "outputs"_a, "clone"_a = true)
      .def_prop_ro("inputs", &FunctionGraph::inputs)
      .def_prop_ro("outputs", &FunctionGraph::outputs)
      .def("toposort", &FunctionGraph::toposort)
      .def("orphans", &FunctionGraph::orphans)
      .def(
          "clients",
          [](const FunctionGraph& fg, const Var& v) {
            nb::list l;
            for (const Client& c : fg.clients(v.get()))
              l.append(nb::make_tuple(c.node ? nb::cast(c.node->shared_from_this()) : nb::object(nb::str("output")),
                                      c.index));
            return l;
          },
          "Uses of a variable: (Apply, input index), or ('output', output index).")
      .def("replace", &FunctionGraph::replace, "old"_a, "new"_a, "reason"_a = "")
      .def_prop_ro("apply_nodes", &FunctionGraph::toposort)
      .def("__len__", &FunctionGraph::num_nodes);

  m.def("variable", &variable, "type"_a, "name"_a = "");
  m.def(
      "constant", [](nb::handle value, std::string name) { return constant(to_ndarray(value.ptr()), std::move(name)); },
      "value"_a, "name"_a = "", "A constant holding the value (numpy arrays viewed, other values converted).");
  m.def(
      "shared",
      [](nb::handle value, std::string name, bool borrow, std::vector<bool> broadcastable,
         std::optional<std::string> target) {
        std::optional<Device> where;
        if (target) where = Device::parse(*target);
        return shared(to_ndarray(value.ptr()), std::move(name), borrow, std::move(broadcastable), where);
      },
      "value"_a, "name"_a = "", "borrow"_a = false, "broadcastable"_a = std::vector<bool>{}, "target"_a = nb::none(),
      "A shared variable holding the value (copied unless borrow: then a numpy array is used in place); "
      "with a target device ('cpu', 'cuda0') the value lives there and stays there.");
  m.def("shared_alias", &shared_alias, "v"_a,
        "Another shared variable holding v's value (the same cell: Theano's SharedVariable.clone()).");
  m.def(
      "shared_target",
      [](const Var& v) -> std::optional<std::string> {
        if (!v || !v->is_shared()) throw TypeError("shared_target: the variable is not a shared variable");
        if (!v->cell->fixed_device) return std::nullopt;
        return v->cell->fixed_device->str();
      },
      "shared_var"_a, "The device a shared variable was created on with shared(target=), else None.");
  m.def(
      "set_shared_target",
      [](const Var& v, const std::string& target) {
        if (!v || !v->is_shared()) throw TypeError("set_shared_target: the variable is not a shared variable");
        const Device d = Device::parse(target);
        // (For a variable just made, that no function has read yet: MRG_RandomStreams' states.)
        NDArray cur = v->cell->load();
        NDArray moved = cur.device() == d ? cur : cur.to_device(d);
        v->cell->fixed_device = d;
        v->cell->exchange(std::move(moved)).reset();  // (the old value released outside the lock)
      },
      "shared_var"_a, "target"_a,
      "Fixes a shared variable just made on a device, as shared(..., target=) does (its value moved there).");
  m.def(
      "device_from_host",
      [](const Var& x, const std::string& device) { return device_from_host(x, Device::parse(device)); }, "x"_a,
      "device"_a = "cuda",
      "x copied to a device (Theano's gpu_from_host): as a function output it keeps the result there.");
  m.def("host_from_device", &host_from_device, "x"_a, "x copied back to the host (Theano's host_from_gpu).");
  m.def(
      "get_value",
      [](const Var& v, bool borrow, bool return_internal_type) { return get_value(v, borrow, return_internal_type); },
      "shared_var"_a, "borrow"_a = false, "return_internal_type"_a = false);
  m.def(
      "set_value",
      [](const Var& v, nb::handle value, bool borrow) {
        if (!v || !v->is_shared()) throw TypeError("set_value: the variable is not a shared variable");
        std::string who = "set_value of shared variable '" + v->name + "'";
        set_value(v, filter_value(value.ptr(), v->type, Downcast::None, who.c_str()), borrow);
      },
      "shared_var"_a, "value"_a, "borrow"_a = false);
  m.def(
      "filter_value",
      [](nb::handle value, const TensorType& type, std::optional<bool> allow_downcast) {
        Downcast d = !allow_downcast ? Downcast::None : (*allow_downcast ? Downcast::Yes : Downcast::No);
        NDArray a = filter_value(value.ptr(), type, d, "filter");
        if (auto err = type.check_value(a); !err.empty()) throw TypeError("filter: " + err);
        return a;
      },
      "value"_a, "type"_a, "allow_downcast"_a = nb::none(), "Theano's TensorType.filter.");
  m.def(
      "as_ndarray", [](nb::handle v) { return to_ndarray(v.ptr()); },
      "The NDArray Hypatia sees for a value, as numpy (a view of numpy arrays that fit).");
  m.def(
      "debugprint",
      [](const std::vector<Var>& outputs, bool print_type, int depth, bool provenance) {
        return debugprint(outputs,
                          DebugPrintOptions{.print_type = print_type, .depth = depth, .provenance = provenance});
      },
      "outputs"_a, "print_type"_a = false, "depth"_a = -1, "provenance"_a = false);
  m.def(
      "debugprint_fgraph",
      [](const FunctionGraph& fg, bool print_type, int depth, bool provenance) {
        return debugprint(fg, DebugPrintOptions{.print_type = print_type, .depth = depth, .provenance = provenance});
      },
      "fgraph"_a, "print_type"_a = false, "depth"_a = -1, "provenance"_a = false);
  m.def(
      "clone_graph",
      [](const std::vector<Var>& outputs, const std::vector<std::pair<Var, Var>>& replace) {
        return clone_graph(outputs, replace);
      },
      "outputs"_a, "replace"_a = std::vector<std::pair<Var, Var>>{});
  m.def("toposort", &toposort, "outputs"_a);
  m.def(
      "install_trace_hook",
      [](std::string skip_prefix) {
        if (skip_prefix != g_trace_skip_prefix) {  // the cached inside/outside tests change
          for (auto& [code, info] : code_infos()) Py_DECREF(code);
          code_infos().clear();
        }
        g_trace_skip_prefix = std::move(skip_prefix);
        set_trace_hook(&python_trace);
      },
      "skip_prefix"_a,
      "Records 'file:line' of the user code that builds each node (frames under skip_prefix skipped).");
  m.def("remove_trace_hook", [] { set_trace_hook(nullptr); });
}

}  // namespace hypatia::python
