// Ops defined in Python: a subclass of hypatia.Op (make_node returning hypatia.Apply(self, inputs,
// outputs), perform or make_thunk, and optionally grad, R_op, infer_shape, connection_pattern,
// view_map, destroy_map) becomes a PyOp in the C++ graph. Each part of the Op contract calls the
// Python object (taking the GIL), and one kernel calls perform (or the thunk make_thunk made). A
// node whose inputs are device values (gpu_from_host, as Theano's CudaNdarrayType inputs) runs on
// the device backends: its perform or thunk gets GpuArray values and may give device arrays back.
#include <algorithm>
#include <string>

#include "bindings.h"
#include "device_array.h"

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
  /// `host_inputs`: on a device, the inputs that are not device values (read on the host).
  /// (Made with the GIL held: the name is taken now, so that naming the op, in an error's context
  /// on any thread, never waits for the GIL: a thread recording CUDA work may hold a lock that a
  /// thread holding the GIL waits for.)
  PyOp(nb::object py, bool on_device, std::vector<int> host_inputs)
      : py_(std::move(py)),
        name_(nb::cast<std::string>(nb::str(py_))),
        on_device_(on_device),
        host_inputs_(std::move(host_inputs)) {}
  ~PyOp() override {
    if (!Py_IsInitialized()) {
      (void)py_.release();  // the interpreter is gone: leak rather than touch it
      return;
    }
    nb::gil_scoped_acquire gil;
    py_.reset();
  }
  const nb::object& py() const { return py_; }
  /// Whether the node runs on a device: some input is a device value (device_value()).
  bool on_device() const { return on_device_; }
  /// On a device, the inputs it reads on the host (numpy arrays, as Theano's non-Cuda inputs).
  const std::vector<int>& host_inputs() const { return host_inputs_; }

  std::string name() const override { return name_; }
  bool equals(const Op& other) const override {
    const auto* o = dynamic_cast<const PyOp*>(&other);
    if (!o || o->on_device_ != on_device_ || o->host_inputs_ != host_inputs_) return false;
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
  std::string name_;
  bool on_device_;
  std::vector<int> host_inputs_;
};

/// Whether `v` is a value on a device in the graph as the user built it: the result of a transfer
/// to a device (gpu_from_host) or of a Python op that runs on one.
bool device_value(const Variable& v) {
  if (!v.owner) return false;
  if (dynamic_cast<const DeviceFromHost*>(v.owner->op.get())) return true;
  const auto* p = dynamic_cast<const PyOp*>(v.owner->op.get());
  return p && p->on_device();
}

/// Drops a Python reference held by C++ (leaked once the interpreter is gone).
void release_python(nb::object& o) {
  if (!o.is_valid()) return;
  if (!Py_IsInitialized()) {
    (void)o.release();
    return;
  }
  nb::gil_scoped_acquire gil;
  o.reset();
}

/// Runs a PyOp node in Python: perform(node, inputs, output storage), or the thunk the op's
/// make_thunk(node, storage_map, compute_map, no_recycling) gave (made on the first run, one per
/// kernel, so per function and thread). On the host the inputs are read-only numpy arrays; on a
/// device (PyOp::on_device) they are GpuArrays, C-contiguous, and the device has finished the work
/// that computes them; outputs may be GpuArrays or another library's CUDA arrays (a host value is
/// copied to the device), and the op's own device work is waited for before the function goes on
/// (it may run on any stream).
class PyOpKernel final : public Kernel {
 public:
  PyOpKernel(const Apply& node, bool device) : node_(node), op_(static_cast<const PyOp&>(*node.op)), device_(device) {
    nb::gil_scoped_acquire gil;
    views_ = op_.view_map();
    thunked_ = overrides(op_.py(), "make_thunk");
  }
  ~PyOpKernel() override {
    release_python(thunk_);
    release_python(in_cells_);
    release_python(out_cells_);
    release_python(out_computed_);
  }
  PyOpKernel(const PyOpKernel&) = delete;
  PyOpKernel& operator=(const PyOpKernel&) = delete;

  void run(const KernelArgs& args) override {
    // On a device: its device values C-contiguous (a strided view goes through the host) and
    // read-only, like the host's numpy inputs; its other inputs are on the host.
    std::vector<NDArray> ins;
    ins.reserve(args.in.size());
    for (NDArray* in : args.in) {
      NDArray v = device_ && !in->on_host() ? contiguous_on_device(*in) : *in;
      if (device_ && !v.on_host()) v.set_writeable(false);
      ins.push_back(std::move(v));
    }
    if (device_) synchronize_device(device_of(args));  // the inputs are computed
    nb::gil_scoped_acquire gil;
    nb::list inputs;
    for (const NDArray& in : ins) {
      PyObject* a = in.on_host() ? to_numpy(in, /*writeable=*/false) : wrap_device_array(in);
      if (!a) throw nb::python_error();
      inputs.append(nb::steal(a));
    }
    std::vector<nb::object> values = thunked_ ? run_thunk(inputs) : run_perform(inputs);
    for (size_t i = 0; i < args.out.size(); ++i) *args.out[i] = output(i, values[i], ins, inputs, args);
    if (device_) {
      nb::gil_scoped_release nogil;
      synchronize_device(device_of(args));  // the op's own work on the outputs is done
    }
  }

 private:
  /// The device the node's values are on (its first device input or output).
  static Device device_of(const KernelArgs& args) {
    for (NDArray* a : args.in)
      if (a->valid() && !a->on_host()) return a->device();
    return Device::cuda();
  }
  /// A device input as the op gets it: C-contiguous (a strided view goes through the host).
  static NDArray contiguous_on_device(const NDArray& a) {
    if (a.on_host() || a.is_c_contiguous()) return a;
    return a.to_device(Device::host()).to_device(a.device());
  }

  std::vector<nb::object> run_perform(const nb::list& inputs) {
    nb::list storage;
    for (size_t i = 0; i < static_cast<size_t>(node_.nout()); ++i) storage.append(nb::list(nb::make_tuple(nb::none())));
    op_.py().attr("perform")(node(), inputs, storage);
    std::vector<nb::object> values;
    for (nb::handle cell : storage) values.push_back(nb::cast<nb::list>(cell)[0]);
    return values;
  }

  std::vector<nb::object> run_thunk(const nb::list& inputs) {
    if (!thunk_.is_valid()) make_thunk();
    // Theano's storage cells: the thunk reads each input's cell and sets each output's. Outputs
    // start empty on every run (an output of the previous run may be the caller's now).
    nb::list in_cells = nb::borrow<nb::list>(in_cells_), out_cells = nb::borrow<nb::list>(out_cells_);
    for (size_t i = 0; i < inputs.size(); ++i) nb::cast<nb::list>(in_cells[i])[0] = inputs[i];
    for (nb::handle cell : out_cells) nb::cast<nb::list>(cell)[0] = nb::none();
    for (nb::handle cell : nb::borrow<nb::list>(out_computed_)) nb::cast<nb::list>(cell)[0] = nb::bool_(false);
    // The cells hold nothing between runs (no buffer kept alive, none seen as shared).
    auto clear = [&] {
      for (nb::handle cell : in_cells) nb::cast<nb::list>(cell)[0] = nb::none();
      for (nb::handle cell : out_cells) nb::cast<nb::list>(cell)[0] = nb::none();
    };
    try {
      thunk_();
    } catch (...) {
      clear();
      throw;
    }
    std::vector<nb::object> values;
    for (nb::handle cell : out_cells) values.push_back(nb::cast<nb::list>(cell)[0]);
    clear();
    return values;
  }

  void make_thunk() {
    nb::dict storage_map, compute_map;
    nb::list in_cells, out_cells, out_computed;
    for (const Var& v : node_.inputs) {
      nb::object key = nb::cast(v);
      if (!storage_map.contains(key)) {
        storage_map[key] = nb::list(nb::make_tuple(nb::none()));
        compute_map[key] = nb::list(nb::make_tuple(nb::bool_(true)));
      }
      in_cells.append(storage_map[key]);
    }
    for (int i = 0; i < node_.nout(); ++i) {
      nb::object key = nb::cast(const_cast<Apply&>(node_).output(i));
      storage_map[key] = nb::list(nb::make_tuple(nb::none()));
      compute_map[key] = nb::list(nb::make_tuple(nb::bool_(false)));
      out_cells.append(storage_map[key]);
      out_computed.append(compute_map[key]);
    }
    nb::object thunk = op_.py().attr("make_thunk")(node(), storage_map, compute_map, nb::list());
    if (!PyCallable_Check(thunk.ptr()))
      fail<TypeError>(op_.name(), ".make_thunk: expected a callable (the thunk), got ",
                      nb::cast<std::string>(nb::repr(thunk)));
    thunk_ = std::move(thunk);
    in_cells_ = std::move(in_cells);
    out_cells_ = std::move(out_cells);
    out_computed_ = std::move(out_computed);
  }

  nb::object node() const { return nb::cast(const_cast<Apply&>(node_).shared_from_this()); }

  NDArray output(size_t i, const nb::object& value, const std::vector<NDArray>& ins, const nb::list& inputs,
                 const KernelArgs& args) const {
    const TensorType& type = node_.output_ptr(static_cast<int>(i))->type;
    const std::string who =
        op_.name() + (thunked_ ? ".make_thunk's thunk" : ".perform") + ", output " + std::to_string(i);
    if (value.is_none())
      fail<ValueError>(
          who, ": ",
          thunked_ ? "the thunk did not set its output's storage cell" : "perform did not set output_storage[",
          thunked_ ? "" : std::to_string(i) + "][0]");
    NDArray v = filter_value(value.ptr(), type, Downcast::None, who.c_str());
    if (auto err = type.check_value(v); !err.empty()) fail<TypeError>(who, ": ", err);
    // A value on the other side is moved where the node runs.
    if (device_ && v.on_host()) {
      nb::gil_scoped_release nogil;
      return v.to_device(device_of(args));
    }
    if (!device_ && !v.on_host()) {
      nb::gil_scoped_release nogil;
      return v.to_device(Device::host());
    }
    // An output that aliases an input without view_map saying so is copied: the runtime treats it
    // as a fresh array it may hand out or reuse.
    const bool declared = i < views_.size() && !views_[i].empty();
    if (declared) return v;
    if (device_) {
      for (const NDArray& in : ins)
        if (v.may_share_memory(in)) return contiguous_copy_on_device(v);
      return v;
    }
    // Leaked on purpose: a static nb::object would be released after the interpreter is gone.
    static nb::handle may_share = nb::object(nb::module_::import_("numpy").attr("may_share_memory")).release();
    for (nb::handle in : inputs)
      if (nb::cast<bool>(may_share(value, in))) return v.copy();
    return v;
  }
  static NDArray contiguous_copy_on_device(const NDArray& v) {
    nb::gil_scoped_release nogil;
    return v.is_c_contiguous() ? v.copy() : contiguous_on_device(v);
  }

  const Apply& node_;
  const PyOp& op_;
  bool device_;
  bool thunked_ = false;
  AliasMap views_;
  nb::object thunk_, in_cells_, out_cells_, out_computed_;
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
  else {
    // On a device when some input is a device value; the others it reads on the host.
    std::vector<int> host_inputs;
    for (size_t i = 0; i < inputs.size(); ++i)
      if (inputs[i] && !device_value(*inputs[i])) host_inputs.push_back(static_cast<int>(i));
    const bool on_device = host_inputs.size() < inputs.size();
    cop = std::make_shared<PyOp>(nb::borrow(op), on_device, on_device ? std::move(host_inputs) : std::vector<int>{});
  }
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

void register_pyop_kernels() {
  // A node of host values runs on every host backend (a device backend's fallback takes it); one
  // of device values on every device backend.
  for (const std::string& b : backend_names()) {
    const bool device = get_backend(b).device_kind() != DeviceKind::Host;
    register_kernel(
        b, typeid(PyOp), [device](const Apply& node) { return std::make_unique<PyOpKernel>(node, device); },
        KernelTraits{
            .accepts = [device](const Apply& node) { return static_cast<const PyOp&>(*node.op).on_device() == device; },
            .host_inputs_of = [](const Apply& node) { return static_cast<const PyOp&>(*node.op).host_inputs(); }});
  }
}

void init_pyop(nb::module_&) { register_pyop_kernels(); }

}  // namespace hypatia::python
