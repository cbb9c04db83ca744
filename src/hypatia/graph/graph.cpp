#include "hypatia/graph/graph.h"

#include <atomic>
#include <sstream>

#include "hypatia/core/error.h"
#include "hypatia/graph/fgraph.h"

namespace hypatia {
namespace {
std::atomic<uint64_t> g_next_id{1};
TraceHook& trace_hook() {
  static TraceHook hook;
  return hook;
}
thread_local bool t_no_trace = false;
std::string current_trace() {
  auto& h = trace_hook();
  return h && !t_no_trace ? h() : std::string();
}
}  // namespace

void set_trace_hook(TraceHook hook) { trace_hook() = std::move(hook); }
NoTraceScope::NoTraceScope() : saved_(t_no_trace) { t_no_trace = true; }
NoTraceScope::~NoTraceScope() { t_no_trace = saved_; }

namespace {
NodeHook& node_hook() {
  static NodeHook hook;
  return hook;
}
}  // namespace

void set_node_hook(NodeHook hook) { node_hook() = std::move(hook); }

Variable::Variable(TensorType t, VarKind k, std::string n)
    : type(std::move(t)), name(std::move(n)), kind(k), id(g_next_id++) {}

std::shared_ptr<Apply> Variable::owner_ptr() const { return owner ? owner->shared_from_this() : nullptr; }

std::string Variable::str() const {
  if (!name.empty()) return name;
  std::ostringstream os;
  switch (kind) {
    case VarKind::Output:
      os << owner->op->name();
      os << "." << index;
      return os.str();
    case VarKind::Constant:
      if (data.size() == 1 && is_integer(data.dtype()))
        os << "TensorConstant{" << data.get_flat_int(0) << "}";  // exact, not 1.09951e+12
      else if (data.size() == 1)
        os << "TensorConstant{" << data.get_flat(0) << "}";
      else if (data.size() <= 10)
        os << "TensorConstant{" << data.str() << "}";
      else
        os << "TensorConstant{" << dtype_name(data.dtype()) << " " << data.shape().str() << "}";
      return os.str();
    case VarKind::NullGrad:
      os << "NullGrad{" << null_reason << "}";
      return os.str();
    default:
      os << "<" << type.str() << ">";
      return os.str();
  }
}

Apply::Apply(std::shared_ptr<const Op> op_, std::vector<Var> inputs_, const std::vector<TensorType>& out_types)
    : op(std::move(op_)), inputs(std::move(inputs_)), id(g_next_id++) {
  for (size_t i = 0; i < out_types.size(); ++i) {
    auto v = std::make_unique<Variable>(out_types[i], VarKind::Output);
    v->owner = this;
    v->index = static_cast<int>(i);
    outputs_.push_back(std::move(v));
  }
}

Var Apply::output(int i) { return Var(shared_from_this(), outputs_.at(i).get()); }

std::vector<Var> Apply::outputs() {
  std::vector<Var> r;
  for (int i = 0; i < nout(); ++i) r.push_back(output(i));
  return r;
}

std::vector<ShapeVars> Op::infer_shape(const Apply&, const std::vector<ShapeVars>&) const { return {}; }

std::vector<Var> Op::grad(const Apply&, const std::vector<Var>&) const {
  fail<NotDifferentiableError>(name(), ": gradient is not implemented for this op");
}

std::optional<std::pair<std::vector<Var>, std::vector<Var>>> Op::inner_graph(const Apply&) const {
  return std::nullopt;
}

std::vector<Var> Op::rop(const Apply&, const std::vector<Var>&) const {
  fail<NotDifferentiableError>(name(), ": R_op (forward-mode derivative) is not implemented for this op");
}

std::vector<std::vector<bool>> Op::connection_pattern(const Apply& node) const {
  return std::vector<std::vector<bool>>(node.inputs.size(), std::vector<bool>(node.nout(), true));
}

std::vector<Var> apply_op(std::shared_ptr<const Op> op, std::vector<Var> inputs) {
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i]) fail<TypeError>(op->name(), ": input ", i, " is null");
    if (inputs[i]->kind == VarKind::NullGrad)
      fail<NotDifferentiableError>(op->name(), ": input ", i, " is an undefined gradient (", inputs[i]->null_reason,
                                   ")");
  }
  std::vector<TensorType> types = op->make_output_types(inputs);
  auto node = std::make_shared<Apply>(std::move(op), std::move(inputs), types);
  node->trace = current_trace();
  if (auto& hook = node_hook()) hook(*node);
  return node->outputs();
}

Var apply_op1(std::shared_ptr<const Op> op, std::vector<Var> inputs) {
  auto outs = apply_op(std::move(op), std::move(inputs));
  HYP_ASSERT(outs.size() == 1, "apply_op1 on an op with ", outs.size(), " outputs");
  return outs[0];
}

Var variable(TensorType type, std::string name) {
  auto v = std::make_shared<Variable>(std::move(type), VarKind::Input, std::move(name));
  v->trace = current_trace();
  return v;
}

Var constant(NDArray value, std::string name) {
  if (!value.valid()) fail<ValueError>("constant: the value is an empty NDArray");
  auto v = std::make_shared<Variable>(TensorType::of_value(value), VarKind::Constant, std::move(name));
  v->data = std::move(value);
  return v;
}

Var constant(double value, DType dt) { return constant(NDArray::scalar(value, dt)); }

Var shared(NDArray value, std::string name, bool borrow, std::vector<bool> broadcastable,
           std::optional<Device> target) {
  if (!value.valid()) fail<ValueError>("shared: the value is an empty NDArray");
  if (broadcastable.empty()) broadcastable.assign(value.ndim(), false);
  TensorType t{value.dtype(), broadcastable};
  if (auto err = t.check_value(value); !err.empty()) fail<TypeError>("shared '", name, "': ", err);
  auto v = std::make_shared<Variable>(t, VarKind::Shared, std::move(name));
  v->cell = std::make_shared<SharedCell>();
  if (target && value.device() != *target) {
    v->cell->value = value.to_device(*target);
  } else {
    v->cell->value = borrow ? std::move(value) : value.copy();
  }
  v->cell->fixed_device = target;
  v->trace = current_trace();
  return v;
}

Var shared_alias(const Var& v) {
  if (!v || !v->is_shared()) fail<TypeError>("shared_alias: the variable is not a shared variable");
  auto c = std::make_shared<Variable>(v->type, VarKind::Shared, v->name);
  c->cell = v->cell;
  c->trace = current_trace();
  return c;
}

Var grad_undefined(const Op& op, int input_index, const TensorType& type, const std::string& why) {
  auto v = std::make_shared<Variable>(type, VarKind::NullGrad);
  std::ostringstream os;
  os << op.name() << " input " << input_index << ": " << why;
  v->null_reason = os.str();
  return v;
}

bool Op::has_side_effects() const {
  for (const InnerFunction& f : inner_functions())
    for (const auto& n : toposort(f.outputs))
      if (n->op->has_side_effects()) return true;
  return false;
}

}  // namespace hypatia
