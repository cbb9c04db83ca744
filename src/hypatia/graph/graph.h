// The symbolic graph: Variable, Apply and the Op contract.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <tuple>
#include <typeinfo>
#include <vector>

#include "hypatia/core/ndarray.h"
#include "hypatia/graph/type.h"

namespace hypatia {

class Op;
class Apply;
class Variable;
/// Handle to a symbolic variable. Handles to an Apply's outputs keep the Apply alive.
using Var = std::shared_ptr<Variable>;

/// What a variable is: a free input, an op's output, a constant, a shared variable, or the marker
/// for a gradient that is not defined.
enum class VarKind { Input, Output, Constant, Shared, NullGrad };

/// The storage of a shared variable: one value, replaced (never mutated in place) by updates.
/// The value of a shared variable. A call locks `mu` while it reads the value and while it
/// commits an update (several cells in the order of their addresses), so that it sees all of
/// another call's updates or none.
struct SharedCell {
  NDArray value;  // guarded by mu
  mutable std::mutex mu;
  /// The device the value stays on (shared(..., target=)): placement moves no such variable to
  /// the device that reads it (its readers there get a transfer per call), and set_value and
  /// every update commit their value there. Without, a host value that a device reads or updates
  /// moves there when the function is compiled. Set once, before the variable is shared.
  std::optional<Device> fixed_device;

  /// A reference to the current value.
  NDArray load() const {
    std::lock_guard<std::mutex> lock(mu);
    return value;
  }
  /// Replaces the value and returns the old one (released by the caller after the lock).
  NDArray exchange(NDArray v) {
    std::lock_guard<std::mutex> lock(mu);
    std::swap(value, v);
    return v;
  }
};

/// A typed symbolic value. Leaves are created by std::make_shared, so shared_from_this() gives the
/// handle that owns them (bindings use it instead of wrapping the raw pointer in a new owner).
class Variable : public std::enable_shared_from_this<Variable> {
 public:
  TensorType type;
  std::string name;
  VarKind kind = VarKind::Input;
  /// The Apply that computes this variable (kind Output), else null.
  Apply* owner = nullptr;
  /// Which output of `owner`.
  int index = 0;
  /// The value of a Constant.
  NDArray data;
  /// The cell of a Shared variable.
  std::shared_ptr<SharedCell> cell;
  /// Why the gradient is undefined (kind NullGrad).
  std::string null_reason;
  /// Where in user code this variable was created ("file:line"), when known.
  std::string trace;
  /// Test value (compute_test_value), when set.
  NDArray test_value;
  /// Unique id in creation order.
  uint64_t id;

  Variable(TensorType t, VarKind k, std::string n = "");
  int ndim() const { return type.ndim(); }
  DType dtype() const { return type.dtype; }
  bool is_constant() const { return kind == VarKind::Constant; }
  bool is_shared() const { return kind == VarKind::Shared; }
  /// The owner as a shared handle (null when there is none).
  std::shared_ptr<Apply> owner_ptr() const;
  /// "x", "Elemwise{add}.0", "TensorConstant{1.0}", "<TensorType(float32, matrix)>".
  std::string str() const;
};

/// An application of an Op to input variables, producing output variables.
class Apply : public std::enable_shared_from_this<Apply> {
 public:
  std::shared_ptr<const Op> op;
  std::vector<Var> inputs;
  std::string trace;
  /// The rewrite that put this node in a compiled graph ("" when the user's graph had it): set by
  /// FunctionGraph::replace_all on the nodes a replacement brings in (provenance, always on).
  std::string made_by;
  uint64_t id;

  Apply(std::shared_ptr<const Op> op, std::vector<Var> inputs, const std::vector<TensorType>& out_types);
  int nout() const { return static_cast<int>(outputs_.size()); }
  /// Handle to output i (keeps this Apply alive).
  Var output(int i);
  std::vector<Var> outputs();
  Variable* output_ptr(int i) const { return outputs_[i].get(); }

 private:
  std::vector<std::unique_ptr<Variable>> outputs_;
};

/// Symbolic shape: one 0-d int64 variable per dimension.
using ShapeVars = std::vector<Var>;
/// For each output, the input indices it aliases (view_map) or overwrites (destroy_map).
using AliasMap = std::vector<std::vector<int>>;

/// A graph that an op's kernel runs as a sub-program (MapIndex's body; scan's step and ifelse's
/// branches next): compiled by the same pipeline as the function around it, and handed to the
/// kernel (Kernel::bind_inner) when the function is compiled.
struct InnerFunction {
  std::vector<Var> inputs;
  std::vector<Var> outputs;
  /// Per input (empty: none): the kernel lets the body overwrite it (In(mutable=True)), e.g. an
  /// accumulator that an in-place node adds into.
  std::vector<bool> mutable_inputs = {};
};

/// The Op contract. Ops are immutable values: equality and hash cover every attribute.
class Op {
 public:
  virtual ~Op() = default;
  /// Display name with attributes, e.g. "Elemwise{add}", "DimShuffle{1,0}".
  virtual std::string name() const = 0;
  virtual bool equals(const Op& other) const = 0;
  virtual size_t hash() const = 0;
  /// Checks input types; returns output types. Throws TypeError starting with name().
  virtual std::vector<TensorType> make_output_types(const std::vector<Var>& inputs) const = 0;
  /// Output shapes from input shapes, symbolically. Default: shape_i of the outputs themselves.
  virtual std::vector<ShapeVars> infer_shape(const Apply& node, const std::vector<ShapeVars>& input_shapes) const;
  /// d cost/d inputs from d cost/d outputs (a null entry: that output does not reach the cost).
  /// Returns a null entry for a disconnected input, grad_undefined(...) where it is undefined.
  /// Default: throws NotDifferentiableError.
  virtual std::vector<Var> grad(const Apply& node, const std::vector<Var>& output_grads) const;
  /// Forward mode: d outputs from d inputs (null entries: zero). Default: throws.
  virtual std::vector<Var> rop(const Apply& node, const std::vector<Var>& eval_points) const;
  /// An op defined by an inner graph (a fused Composite; later OpFromGraph, scan's body) returns
  /// that graph for `node` on fresh input variables, one per node input: (inputs, outputs).
  /// grad() and Rop() (grad/) differentiate through it, so such an op needs no grad or rop of its
  /// own. Default: none.
  virtual std::optional<std::pair<std::vector<Var>, std::vector<Var>>> inner_graph(const Apply& node) const;
  /// [input][output]: whether the output depends on the input differentiably. Default: all true.
  virtual std::vector<std::vector<bool>> connection_pattern(const Apply& node) const;
  virtual AliasMap view_map() const { return {}; }
  virtual AliasMap destroy_map() const { return {}; }
  /// Whether running the op does more than compute its outputs (Print): such nodes are never
  /// constant-folded, and DebugMode runs them once. Default: whether an inner function (a scan's
  /// body) has such a node.
  virtual bool has_side_effects() const;
  /// Whether the op draws random numbers (its state an input and an output): such nodes are
  /// never constant-folded or merged with an equal node, so each draw stays where it was written.
  virtual bool is_random() const { return false; }
  /// Per input, whether the op may finish without it (ifelse's branches; empty: it needs all).
  /// Its kernel is lazy (Kernel::run_lazy): the runtime computes such an input only when the
  /// kernel asks for it, and the nodes only that input needs run then or never.
  virtual std::vector<bool> lazy_inputs() const { return {}; }
  /// The inner functions its kernel runs (empty: none). Such a node is never constant-folded.
  virtual std::vector<InnerFunction> inner_functions() const { return {}; }
  /// Whether the op moves values between devices (a transfer): it reads and writes arrays of
  /// different devices, so the runtime does not hold its inputs to the backend's device.
  virtual bool moves_between_devices() const { return false; }
  /// Whether check_runtime_inputs works for this op. Only such ops may overwrite a shared
  /// variable in place (rewrite/destroy.h): a call checks every such node before the first of them
  /// writes, so that a failing call leaves every shared variable as it was.
  virtual bool checks_runtime_inputs() const { return false; }
  /// Throws the error the op's kernel would throw for these input values (shapes, dtypes), without
  /// computing or allocating anything. Only called when checks_runtime_inputs().
  virtual void check_runtime_inputs(const Apply& node, std::span<NDArray* const> in) const {
    (void)node;
    (void)in;
  }
  /// Where the name should be printed as "Name{attrs}".
  std::string str() const { return name(); }
};

/// Builds an Apply of `op` on `inputs` (checking types) and returns its outputs.
std::vector<Var> apply_op(std::shared_ptr<const Op> op, std::vector<Var> inputs);
/// apply_op for a one-output op.
Var apply_op1(std::shared_ptr<const Op> op, std::vector<Var> inputs);

/// A free symbolic input.
Var variable(TensorType type, std::string name = "");
/// A constant holding `value` (broadcastable where a dim has length 1).
Var constant(NDArray value, std::string name = "");
/// A 0-d constant of dtype `dt`.
Var constant(double value, DType dt);
/// A shared variable holding `value` (copied unless borrow). Its type is not broadcastable
/// anywhere unless `broadcastable` says so. With a `target` (Theano gpuarray's shared(...,
/// target=)) the value lives on that device (copied there now) and stays there
/// (SharedCell::fixed_device); without, it starts where `value` is.
Var shared(NDArray value, std::string name = "", bool borrow = false, std::vector<bool> broadcastable = {},
           std::optional<Device> target = std::nullopt);
/// Another shared variable holding v's value: the same cell, so a set_value or an update of either
/// is seen by both (Theano's SharedVariable.clone(): a new variable, the same container). A
/// function updating both is refused (the cell would be updated twice).
Var shared_alias(const Var& v);
/// Marker for an undefined gradient of input `input_index` of `op`.
Var grad_undefined(const Op& op, int input_index, const TensorType& type, const std::string& why);

/// Hook that fills Variable::trace for new nodes (the Python layer installs one).
using TraceHook = std::function<std::string()>;
void set_trace_hook(TraceHook hook);
/// While one is alive, the nodes and variables this thread builds ask the trace hook nothing: the
/// compiler's new nodes take the user lines of the nodes they replace (FunctionGraph::replace_all),
/// and asking the hook for each cost a third of the compile time of an MLP step.
class NoTraceScope {
 public:
  NoTraceScope();
  ~NoTraceScope();
  NoTraceScope(const NoTraceScope&) = delete;
  NoTraceScope& operator=(const NoTraceScope&) = delete;

 private:
  bool saved_;
};

/// Hook run on every node apply_op builds (after its trace is set); backends/test_values.cpp
/// installs one that computes test values (config().compute_test_value). Exceptions propagate to
/// the code that built the node.
using NodeHook = std::function<void(Apply&)>;
void set_node_hook(NodeHook hook);

// ----------------------------------------------------------------------------------------------
// Equality and hashing of op attributes.

inline void hash_combine(size_t& seed, size_t v) { seed ^= v + 0x9e3779b97f4a7c15ULL + (seed << 6) + (seed >> 2); }
template <class T>
size_t hash_value(const T& v) {
  if constexpr (requires {
                  v.begin();
                  v.end();
                  typename T::value_type;
                } &&
                !std::is_same_v<T, std::string>) {
    size_t h = v.size();
    for (const auto& x : v) hash_combine(h, hash_value(x));
    return h;
  } else if constexpr (std::is_enum_v<T>) {
    return std::hash<std::underlying_type_t<T>>()(static_cast<std::underlying_type_t<T>>(v));
  } else if constexpr (requires { std::tuple_size<T>::value; }) {
    size_t h = 0;
    std::apply([&](const auto&... xs) { (hash_combine(h, hash_value(xs)), ...); }, v);
    return h;
  } else {
    return std::hash<T>()(v);
  }
}

/// Base for ops whose attributes are returned by `props()` as a tuple: gives equals and hash.
template <class Derived>
class OpWithProps : public Op {
 public:
  bool equals(const Op& other) const override {
    const auto* o = dynamic_cast<const Derived*>(&other);
    return o && typeid(*o) == typeid(Derived) && self().props() == o->props();
  }
  size_t hash() const override {
    size_t h = typeid(Derived).hash_code();
    hash_combine(h, hash_value(self().props()));
    return h;
  }

 private:
  const Derived& self() const { return static_cast<const Derived&>(*this); }
};

}  // namespace hypatia
