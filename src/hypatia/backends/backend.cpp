#include "hypatia/backends/backend.h"

#include <algorithm>
#include <map>
#include <mutex>

#include "hypatia/core/config.h"
#include "hypatia/core/error.h"

namespace hypatia {
namespace {

struct Backends {
  std::shared_mutex mu;
  std::map<std::string, std::unique_ptr<Backend>, std::less<>> by_name;
  std::map<DeviceKind, std::string> default_override;  // set_default_backend_for
};

Backends& backends() {
  static Backends b;
  return b;
}

/// Set on the thread that runs register_all_kernels (its registrations must not wait for it).
thread_local bool t_registering = false;

void ensure_registered() {
  static std::once_flag once;
  if (t_registering) return;
  std::call_once(once, [] {
    t_registering = true;
    try {
      register_all_kernels();
    } catch (...) {
      t_registering = false;
      throw;
    }
    t_registering = false;
  });
}

const Backend* find_unlocked(std::string_view name) {
  auto& b = backends();
  std::shared_lock lock(b.mu);
  auto it = b.by_name.find(name);
  return it == b.by_name.end() ? nullptr : it->second.get();
}

std::string known_names() {
  std::string s;
  for (const std::string& n : backend_names()) s += (s.empty() ? "'" : ", '") + n + "'";
  return s;
}

}  // namespace

Backend::Backend(Description d) : desc_(std::move(d)) {
  target_.name = desc_.name;
  target_.fusable = desc_.fusable;
  target_.max_fusion_inputs = desc_.max_fusion_inputs;
  target_.max_fusion_outputs = desc_.max_fusion_outputs;
  target_.evaluate = [this](const Apply& node, std::span<NDArray* const> in, std::span<NDArray* const> out) {
    if (!node.op->inner_functions().empty())
      fail<NotImplementedError>(node.op->name(), ": a node with inner functions is not folded");
    // Folded values are graph constants, in host memory: a device backend folds through the
    // first host backend of its fallback chain.
    const Backend* b = this;
    for (int hops = 0; b && b->device_kind() != DeviceKind::Host && hops < 8; ++hops) b = b->fallback();
    if (!b) fail<NotImplementedError>(node.op->name(), ": no host backend to fold it with");
    b->make_kernel(node)->run(KernelArgs{in, out});
  };
}

Backend::~Backend() = default;

const Backend* Backend::fallback() const { return desc_.fallback.empty() ? nullptr : find_unlocked(desc_.fallback); }
const Backend* Backend::checked_against() const {
  return desc_.checked_against.empty() ? nullptr : find_unlocked(desc_.checked_against);
}

NDArray Backend::allocate(const Shape& shape, DType dtype) const {
  return NDArray::empty(shape, dtype, Device::of(desc_.device));
}

void Backend::add_kernel(std::type_index op_type, KernelFactory factory, KernelTraits traits) {
  std::unique_lock lock(mu_);
  kernels_[op_type] = Entry{std::move(factory), std::move(traits)};
}

const Backend::Entry* Backend::own_entry(const Apply& node) const {
  const Entry* e = nullptr;
  {
    std::shared_lock lock(mu_);
    auto it = kernels_.find(std::type_index(typeid(*node.op)));
    // Entries are never removed, and a replaced one is replaced in place before any compile
    // uses it (registration happens at start-up and when a Python Op class is defined).
    if (it != kernels_.end()) e = &it->second;
  }
  if (e && e->traits.accepts && !e->traits.accepts(node)) return nullptr;
  if (e && desc_.index_arithmetic_on_host && is_index_arithmetic(node)) return nullptr;
  return e;
}

bool is_index_arithmetic(const Apply& node) {
  // The types first: they rule out nearly every node without building the op's lists.
  auto integral = [](DType d) { return d == DType::Bool || is_integer(d); };
  if (node.nout() == 0) return false;
  for (int k = 0; k < node.nout(); ++k) {
    const TensorType& t = node.output_ptr(k)->type;
    if (t.ndim() != 0 || !integral(t.dtype)) return false;
  }
  for (const Var& in : node.inputs)
    if (in->type.ndim() > 1 || !integral(in->type.dtype)) return false;
  const Op& op = *node.op;
  return !op.is_random() && !op.has_side_effects() && !op.moves_between_devices() && op.inner_functions().empty() &&
         op.lazy_inputs().empty();
}

const Backend* Backend::provider(const Apply& node) const {
  ensure_registered();
  int hops = 0;
  for (const Backend* b = this; b && hops < 8; b = b->fallback(), ++hops)
    if (b->own_entry(node)) return b;
  return nullptr;
}

const KernelTraits* Backend::traits(const Apply& node) const {
  const Backend* b = provider(node);
  return b ? &b->own_entry(node)->traits : nullptr;
}

bool Backend::records(const Apply& node) const {
  if (!recorder() || provider(node) != this) return false;
  const KernelTraits& t = own_entry(node)->traits;
  if (!t.recordable || t.any_device_inputs) return false;
  // A transfer's value joins the recording (keyed by its bytes) only where it is computed from
  // shapes: an argument may change on every call, and a recording keyed by it would then never
  // replay (its transfer runs before the recorded run, which reads the copy in device memory).
  if (node.op->moves_between_devices())
    for (int i : t.host_inputs_for(node))
      if (i < static_cast<int>(node.inputs.size()) && !computed_from_shapes(*node.inputs[i], 0)) return false;
  return true;
}

bool Backend::computed_from_shapes(const Variable& v, int depth) const {
  if (v.kind == VarKind::Constant) return true;
  if (!v.owner || depth > 32) return false;
  const Apply& n = *v.owner;
  const Backend* p = provider(n);
  const KernelTraits* t = p ? &p->own_entry(n)->traits : nullptr;
  if (!t) return false;
  if (t->any_device_inputs) return true;  // Shape, Shape_i
  if (p->device_kind() != DeviceKind::Host || n.op->moves_between_devices() || n.op->is_random() ||
      n.op->has_side_effects() || !n.op->inner_functions().empty())
    return false;
  for (const Var& in : n.inputs)
    if (!computed_from_shapes(*in, depth + 1)) return false;
  return true;
}

std::unique_ptr<Kernel> Backend::make_kernel(const Apply& node) const {
  const Backend* b = provider(node);
  if (!b) {
    fail<NotImplementedError>(node.op->name(), ": no kernel for this op on backend ", chain_str(),
                              "; choose another backend or mode, or register a kernel for it");
  }
  KernelFactory f;
  {
    std::shared_lock lock(b->mu_);
    f = b->kernels_.at(std::type_index(typeid(*node.op))).factory;
  }
  return f(node);
}

void Backend::kernels_made() const {
  int hops = 0;
  for (const Backend* b = this; b && hops < 8; b = b->fallback(), ++hops)
    if (b->desc_.kernels_made) b->desc_.kernels_made();
}

std::string Backend::chain_str() const {
  std::string chain = "'" + name() + "'";
  int hops = 0;
  for (const Backend* f = fallback(); f && hops < 8; f = f->fallback(), ++hops)
    chain += " (nor its fallback '" + f->name() + "')";
  return chain;
}

std::vector<std::type_index> Backend::op_types() const {
  ensure_registered();
  std::shared_lock lock(mu_);
  std::vector<std::type_index> r;
  for (const auto& [k, f] : kernels_) r.push_back(k);
  return r;
}

void register_backend(std::unique_ptr<Backend> backend) {
  if (!backend) throw InternalError("register_backend: null backend");
  auto& b = backends();
  std::unique_lock lock(b.mu);
  const std::string name = backend->name();
  if (!b.by_name.emplace(name, std::move(backend)).second)
    fail<ValueError>("register_backend: a backend named '", name, "' is already registered");
}

const Backend* find_backend(std::string_view name) {
  ensure_registered();
  return find_unlocked(name);
}

const Backend& get_backend(std::string_view name) {
  if (const Backend* b = find_backend(name)) return *b;
  fail<ValueError>("backend '", name, "' is not registered; the backends are ", known_names());
}

std::vector<std::string> backend_names() {
  ensure_registered();
  auto& b = backends();
  std::shared_lock lock(b.mu);
  std::vector<std::string> r;
  for (const auto& [n, be] : b.by_name) r.push_back(n);
  return r;
}

const Backend& default_backend() {
  const Device d = Device::parse(config().device);
  // A process drives one device of a kind: another index than the one in use is refused rather
  // than run there silently.
  claim_device(d);
  ensure_registered();
  {
    auto& b = backends();
    std::shared_lock lock(b.mu);
    if (auto o = b.default_override.find(d.kind); o != b.default_override.end())
      if (auto it = b.by_name.find(o->second); it != b.by_name.end()) return *it->second;
    for (const auto& [n, be] : b.by_name)
      if (be->device_kind() == d.kind && be->default_for_device()) return *be;
  }
  fail<ValueError>("device=", config().device, ": no backend for ", d.str(),
                   " is built into this hypatia; the backends are ", known_names());
}

void set_default_backend_for(DeviceKind kind, std::string name) {
  auto& b = backends();
  std::unique_lock lock(b.mu);
  if (name.empty())
    b.default_override.erase(kind);
  else
    b.default_override[kind] = std::move(name);
}

const Backend& backend_or_default(std::string_view name) {
  return name.empty() ? default_backend() : get_backend(name);
}

// The registration functions of registry.h, by backend name.

void register_kernel(std::string_view backend, std::type_index op_type, KernelFactory factory, KernelTraits traits) {
  ensure_registered();
  const Backend* b = find_unlocked(backend);
  if (!b)
    fail<ValueError>("register_kernel: backend '", backend, "' is not registered; the backends are ", known_names());
  const_cast<Backend*>(b)->add_kernel(op_type, std::move(factory), std::move(traits));
}

bool supports(std::string_view backend, const Apply& node) { return get_backend(backend).supports(node); }

std::unique_ptr<Kernel> make_kernel(std::string_view backend, const Apply& node) {
  return get_backend(backend).make_kernel(node);
}

std::vector<std::type_index> registered_op_types(std::string_view backend) { return get_backend(backend).op_types(); }

}  // namespace hypatia
