// Ops defined in Python: a subclass of hypatia.Op (make_node returning hypatia.Apply(self, inputs,
// outputs), perform, and optionally grad, R_op, infer_shape, connection_pattern, view_map,
// destroy_map) becomes a PyOp in the C++ graph. Each part of the Op contract calls the Python
// object (taking the GIL), and one kernel, registered for both backends, calls perform.
#include <string>

#include "bindings.h"

namespace hypatia::python {
namespace {

/// Python's view_map / destroy_map ({output: [inputs]}) as an AliasMap.
AliasMap alias_map(nb::handle py, const char* attr) {
  AliasMap m;
  if (!nb::hasattr(py, attr)) return m;
  nb::object d = py.attr(attr);
  if (d.is_none()) return m;
  for (auto [k, v] : nb::cast<nb::dict>(d)) {
    size_t o = nb::cast<size_t>(k);
    if (m.size() <= o) m.resize(o + 1);
    for (nb::handle i : v) m[o].push_back(nb::cast<int>(i));
  }
  return m;
}

/// Whether the Python op's class overrides `name` (a method of hypatia.Op's defaults otherwise).
bool overrides(nb::handle py, const char* name) {
  nb::object base = nb::module_::import_("hypatia.op").attr("Op");
  nb::object mine = nb::getattr(py.type(), name, nb::none());
  nb::object theirs = nb::getattr(base, name, nb::none());
  return !mine.is_none() && !mine.is(theirs);
}

Var as_var(nb::handle h) {
  if (nb::isinstance<Variable>(h)) return nb::cast<Var>(h);
  nb::object v = nb::module_::import_("hypatia.tensor.basic").attr("as_tensor_variable")(h);
  return nb::cast<Var>(v);
}

class PyOp final : public Op {
 public:
  explicit PyOp(nb::object py) : py_(std::move(py)) {}
  ~PyOp() override {
    if (!Py_IsInitialized()) {
      (void)py_.release();  // the interpreter is gone: leak rather than touch it
      return;
    }
    nb::gil_scoped_acquire gil;
    py_.reset();
  }
  const nb::object& py() const { return py_; }

  std::string name() const override {
    nb::gil_scoped_acquire gil;
    return nb::cast<std::string>(nb::str(py_));
  }
  bool equals(const Op& other) const override {
    const auto* o = dynamic_cast<const PyOp*>(&other);
    if (!o) return false;
    nb::gil_scoped_acquire gil;
    return py_.equal(o->py_);
  }
  size_t hash() const override {
    nb::gil_scoped_acquire gil;
    return static_cast<size_t>(nb::hash(py_));
  }
  std::vector<TensorType> make_output_types(const std::vector<Var>& inputs) const override {
    nb::gil_scoped_acquire gil;
    nb::list args;
    for (const Var& v : inputs) args.append(nb::cast(v));
    nb::object node = py_.attr("make_node")(*nb::tuple(args));
    const Apply& a = nb::cast<const Apply&>(node);
    std::vector<TensorType> types;
    for (int i = 0; i < a.nout(); ++i) types.push_back(a.output_ptr(i)->type);
    return types;
  }
  std::vector<ShapeVars> infer_shape(const Apply& node, const std::vector<ShapeVars>& in) const override {
    nb::gil_scoped_acquire gil;
    if (!overrides(py_, "infer_shape")) return {};
    nb::list shapes;
    for (const ShapeVars& s : in) shapes.append(nb::tuple(nb::cast(s)));
    nb::object r = py_.attr("infer_shape")(nb::cast(const_cast<Apply&>(node).shared_from_this()), shapes);
    std::vector<ShapeVars> out;
    for (nb::handle shape : r) {
      ShapeVars sv;
      for (nb::handle d : shape)
        sv.push_back(nb::isinstance<Variable>(d) ? nb::cast<Var>(d) : int_constant(nb::cast<int64_t>(d)));
      out.push_back(std::move(sv));
    }
    return out;
  }
  std::vector<Var> grad(const Apply& node, const std::vector<Var>& output_grads) const override {
    nb::gil_scoped_acquire gil;
    nb::list ins, gs;
    for (const Var& v : node.inputs) ins.append(nb::cast(v));
    for (const Var& g : output_grads) gs.append(g ? nb::cast(g) : nb::none());
    nb::object r = py_.attr("grad")(ins, gs);
    std::vector<Var> out;
    for (nb::handle g : r) out.push_back(g.is_none() ? nullptr : as_var(g));
    return out;
  }
  std::vector<Var> rop(const Apply& node, const std::vector<Var>& eval_points) const override {
    nb::gil_scoped_acquire gil;
    if (!overrides(py_, "R_op")) return Op::rop(node, eval_points);
    nb::list ins, ev;
    for (const Var& v : node.inputs) ins.append(nb::cast(v));
    for (const Var& e : eval_points) ev.append(e ? nb::cast(e) : nb::none());
    std::vector<Var> out;
    for (nb::handle r : py_.attr("R_op")(ins, ev)) out.push_back(r.is_none() ? nullptr : as_var(r));
    return out;
  }
  std::vector<std::vector<bool>> connection_pattern(const Apply& node) const override {
    nb::gil_scoped_acquire gil;
    if (!overrides(py_, "connection_pattern")) return Op::connection_pattern(node);
    nb::object r = py_.attr("connection_pattern")(nb::cast(const_cast<Apply&>(node).shared_from_this()));
    std::vector<std::vector<bool>> cp;
    for (nb::handle row : r) cp.push_back(nb::cast<std::vector<bool>>(row));
    return cp;
  }
  AliasMap view_map() const override {
    nb::gil_scoped_acquire gil;
    return alias_map(py_, "view_map");
  }
  AliasMap destroy_map() const override {
    nb::gil_scoped_acquire gil;
    return alias_map(py_, "destroy_map");
  }

 private:
  nb::object py_;
};

/// Runs a PyOp node: perform(node, input arrays, output storage) in Python.
class PyOpKernel final : public Kernel {
 public:
  explicit PyOpKernel(const Apply& node) : node_(node), op_(static_cast<const PyOp&>(*node.op)) {
    nb::gil_scoped_acquire gil;
    views_ = op_.view_map();
  }
  void run(const KernelArgs& args) override {
    nb::gil_scoped_acquire gil;
    nb::list inputs;
    for (NDArray* in : args.in) {
      PyObject* a = to_numpy(*in, /*writeable=*/false);
      if (!a) throw nb::python_error();
      inputs.append(nb::steal(a));
    }
    nb::list storage;
    for (size_t i = 0; i < args.out.size(); ++i) storage.append(nb::list(nb::make_tuple(nb::none())));
    nb::object node = nb::cast(const_cast<Apply&>(node_).shared_from_this());
    op_.py().attr("perform")(node, inputs, storage);
    // Leaked on purpose: a static nb::object would be released after the interpreter is gone.
    static nb::handle may_share = nb::object(nb::module_::import_("numpy").attr("may_share_memory")).release();
    for (size_t i = 0; i < args.out.size(); ++i) {
      nb::object value = nb::cast<nb::list>(storage[i])[0];
      const TensorType& type = node_.output_ptr(static_cast<int>(i))->type;
      const std::string who = op_.name() + ".perform, output " + std::to_string(i);
      if (value.is_none()) fail<ValueError>(who, ": perform did not set output_storage[", i, "][0]");
      NDArray v = filter_value(value.ptr(), type, Downcast::None, who.c_str());
      if (auto err = type.check_value(v); !err.empty()) fail<TypeError>(who, ": ", err);
      // An output that aliases an input without view_map saying so is copied: the runtime
      // treats it as a fresh array it may hand out or reuse.
      bool declared = i < views_.size() && !views_[i].empty();
      if (!declared)
        for (nb::handle in : inputs)
          if (nb::cast<bool>(may_share(value, in))) {
            v = v.copy();
            break;
          }
      *args.out[i] = std::move(v);
    }
  }

 private:
  const Apply& node_;
  const PyOp& op_;
  AliasMap views_;
};

}  // namespace

nb::object op_object(const std::shared_ptr<const Op>& op) {
  if (const auto* p = dynamic_cast<const PyOp*>(op.get())) return p->py();
  return nb::cast(std::const_pointer_cast<Op>(op));
}

std::shared_ptr<Apply> make_apply(nb::handle op, std::vector<Var> inputs, nb::handle outputs) {
  std::shared_ptr<const Op> cop;
  if (nb::isinstance<Op>(op))
    cop = nb::cast<std::shared_ptr<Op>>(op);
  else
    cop = std::make_shared<PyOp>(nb::borrow(op));
  for (size_t i = 0; i < inputs.size(); ++i)
    if (!inputs[i]) fail<TypeError>("Apply: input ", i, " is None");
  std::vector<TensorType> types;
  for (nb::handle o : outputs) {
    if (nb::isinstance<TensorType>(o))
      types.push_back(nb::cast<TensorType>(o));
    else if (nb::isinstance<Variable>(o))
      types.push_back(nb::cast<Variable&>(o).type);
    else
      fail<TypeError>("Apply: outputs must be Variables (e.g. x.type()) or TensorTypes");
  }
  auto node = std::make_shared<Apply>(std::move(cop), std::move(inputs), types);
  node->trace = python_trace();
  for (int i = 0; i < node->nout(); ++i) {
    nb::handle o = nb::borrow(outputs)[nb::int_(i)];
    if (nb::isinstance<Variable>(o)) node->output(i)->name = nb::cast<Variable&>(o).name;
  }
  return node;
}

void init_pyop(nb::module_&) {
  // A Python Op's perform runs on host arrays: its kernel serves every host backend.
  for (const std::string& b : backend_names())
    if (get_backend(b).device_kind() == DeviceKind::Host)
      register_kernel(b, typeid(PyOp), [](const Apply& node) { return std::make_unique<PyOpKernel>(node); });
}

}  // namespace hypatia::python
