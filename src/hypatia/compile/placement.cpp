#include "hypatia/compile/placement.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "hypatia/backends/backend.h"
#include "hypatia/ops/transfer.h"
#include "hypatia/rewrite/destroy.h"

namespace hypatia {
namespace {

enum class Side : uint8_t { Host, Device };

class Placer {
 public:
  Placer(FunctionGraph& fg, const Backend& backend, bool device_io)
      : fg_(fg), backend_(backend), device_(Device::of(backend.device_kind())), device_io_(device_io) {}

  void run(size_t n_outputs) {
    const auto order = fg_.toposort();
    move_shared_values(order);
    for (const auto& node : order) place(*node);
    const auto outs = fg_.outputs();
    for (size_t k = 0; k < outs.size(); ++k) {
      const Var& v = outs[k];
      Side want = Side::Host;
      if (k >= n_outputs) {
        // An update: its shared variable's side.
        for (const auto& [var, idx] : fg_.update_outputs)
          if (static_cast<size_t>(idx) == k) want = side_of_leaf(*var);
      } else if (device_io_ || user_device_value(v)) {
        want = Side::Device;
      }
      const Var moved = want == Side::Host ? to_host(v) : to_device(v);
      if (moved.get() != v.get()) fg_.change_input(nullptr, static_cast<int>(k), moved);
    }
    // The user's transfer of a value the device has anyway moves nothing: it leaves the graph
    // (as in Theano, whose toposort for gpu_from_host(exp(x)) is the GpuElemwise alone), its
    // readers and outputs reading the value itself, which stays on the device. Not where a node
    // overwrites the transfer's result or its input in place (the in-place pass ran first and
    // took them for two buffers: x * gpu_from_host(x) overwriting the transfer's result, or
    // [gpu_from_host(e), set_subtensor(e[0], 0)] overwriting e): the transfer stays, a copy on
    // the device.
    for (const auto& node : order)
      if (dynamic_cast<const DeviceFromHost*>(node->op.get()) && side(node->inputs[0]) == Side::Device &&
          !fg_.clients(node->output_ptr(0)).empty() && !overwritten(node->output(0)) && !overwritten(node->inputs[0]))
        fg_.replace(node->output(0), node->inputs[0], "a transfer to the device of a value already there");
  }

 private:
  /// Whether a node overwrites v, or a view of it, in place.
  bool overwritten(const Var& v) const {
    for (const Var& u : views_of(fg_, v))
      for (const Client& c : fg_.clients(u.get())) {
        if (!c.node) continue;
        for (const auto& o : c.node->op->destroy_map())
          if (std::find(o.begin(), o.end(), c.index) != o.end()) return true;
      }
    return false;
  }

  static bool user_device_value(const Var& v) {
    return v->owner && dynamic_cast<const DeviceFromHost*>(v->owner->op.get()) != nullptr;
  }

  /// Where a node's kernel runs and how it reads its inputs (function()'s place step checked that
  /// every node has a provider before this runs).
  struct Kernel {
    bool dev;
    const KernelTraits* traits;
    std::vector<int> host_inputs;
    /// Whether input i is read on the device.
    bool reads_on_device(int i) const {
      return dev && std::find(host_inputs.begin(), host_inputs.end(), i) == host_inputs.end();
    }
    /// Whether the kernel reads only its inputs' shapes (they stay where they are).
    bool any_device() const { return traits->any_device_inputs; }
  };
  Kernel kernel(const Apply& node) const {
    const Backend* p = backend_.provider(node);
    const KernelTraits* t = p->traits(node);
    return {p->device_kind() != DeviceKind::Host, t, t->host_inputs_for(node)};
  }

  Side side_of_leaf(const Variable& v) const {
    if (v.is_shared()) return v.cell->load().on_host() ? Side::Host : Side::Device;
    if (device_io_ && v.kind != VarKind::Constant) return Side::Device;  // an inner function's arguments
    return Side::Host;  // inputs (arguments are host arrays) and constants
  }

  Side side(const Var& v) {
    auto it = side_.find(v.get());
    if (it != side_.end()) return it->second;
    return side_of_leaf(*v);
  }

  /// Shared variables on the host that the device reads or updates: moved to the device now.
  void move_shared_values(const std::vector<std::shared_ptr<Apply>>& order) {
    std::unordered_set<Variable*> to_move;
    for (const auto& node : order) {
      if (node->op->moves_between_devices()) continue;
      const Kernel k = kernel(*node);
      if (k.any_device()) continue;
      for (size_t i = 0; i < node->inputs.size(); ++i) {
        Variable* in = node->inputs[i].get();
        if (in->is_shared() && !in->cell->fixed_device && k.reads_on_device(static_cast<int>(i))) to_move.insert(in);
      }
    }
    for (const auto& [var, idx] : fg_.update_outputs) {
      const Var& value = fg_.outputs().at(idx);
      if (value->owner && !value->owner->op->moves_between_devices() && kernel(*value->owner).dev &&
          !var->cell->fixed_device)
        to_move.insert(const_cast<Variable*>(var));
    }
    for (Variable* v : to_move) {
      NDArray cur = v->cell->load();
      if (!cur.on_host()) continue;
      NDArray moved = cur.to_device(device_);
      NDArray old = v->cell->exchange(std::move(moved));
      old.reset();
    }
  }

  /// Where a transfer placement inserts was "created": the user line of the value's producer,
  /// else of its first reader (`reader`), so that its errors point at the user's code too.
  static void trace_transfer(const Var& t, const Var& v, const Apply* reader) {
    if (!t->owner) return;
    if (v->owner && !v->owner->trace.empty())
      t->owner->trace = v->owner->trace;
    else if (reader)
      t->owner->trace = reader->trace;
  }

  Var to_device(const Var& v, const Apply* reader = nullptr) {
    if (side(v) == Side::Device) return v;
    auto it = on_device_.find(v.get());
    if (it != on_device_.end()) return it->second;
    Var d;
    if (v->kind == VarKind::Constant) {
      // Copied once, at compile time: a constant in device memory.
      d = constant(v->data.to_device(device_));
      d->type = v->type;  // (a 1x1 constant's own type may be a matrix, not broadcastable)
      d->name = "GpuArrayConstant{" + constant_text(*v) + "}";
    } else {
      d = device_from_host(v, device_);
      trace_transfer(d, v, reader);
    }
    side_[d.get()] = Side::Device;
    on_device_.emplace(v.get(), d);
    return d;
  }

  Var to_host(const Var& v, const Apply* reader = nullptr) {
    if (side(v) == Side::Host) return v;
    auto it = on_host_.find(v.get());
    if (it != on_host_.end()) return it->second;
    Var h = host_from_device(v);
    trace_transfer(h, v, reader);
    side_[h.get()] = Side::Host;
    on_host_.emplace(v.get(), h);
    return h;
  }

  static std::string constant_text(const Variable& c) {
    const std::string s = c.str();  // "TensorConstant{2.0}" (or the constant's name)
    const size_t open = s.find('{');
    return open == std::string::npos || s.back() != '}' ? s : s.substr(open + 1, s.size() - open - 2);
  }

  void place(Apply& node) {
    if (dynamic_cast<const DeviceFromHost*>(node.op.get())) {
      // The user's transfer of a value the device computes anyway passes it through (Theano's
      // gpu_from_host(exp(x)) with x on the GPU: the result stays there, nothing moves).
      side_[node.output_ptr(0)] = Side::Device;
      return;
    }
    if (dynamic_cast<const HostFromDevice*>(node.op.get())) {
      side_[node.output_ptr(0)] = Side::Host;  // (a host input is copied)
      return;
    }
    const Kernel k = kernel(node);
    if (!k.any_device())
      for (size_t i = 0; i < node.inputs.size(); ++i) {
        const Var in = node.inputs[i];
        const Var moved = k.reads_on_device(static_cast<int>(i)) ? to_device(in, &node) : to_host(in, &node);
        if (moved.get() != in.get()) fg_.change_input(&node, static_cast<int>(i), moved);
      }
    for (int o = 0; o < node.nout(); ++o) side_[node.output_ptr(o)] = k.dev ? Side::Device : Side::Host;
  }

  FunctionGraph& fg_;
  const Backend& backend_;
  Device device_;
  bool device_io_;
  std::unordered_map<const Variable*, Side> side_;
  std::unordered_map<const Variable*, Var> on_device_, on_host_;
};

}  // namespace

void place_on_devices(FunctionGraph& fg, const Backend& backend, size_t n_outputs, bool device_io) {
  if (backend.device_kind() == DeviceKind::Host) return;
  Placer(fg, backend, device_io).run(n_outputs);
}

}  // namespace hypatia
