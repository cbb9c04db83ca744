#include "hypatia/testing/emulated_gpu.h"

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <typeindex>
#include <utility>
#include <vector>

#include "hypatia/backends/backend.h"
#include "hypatia/backends/device_queues.h"
#include "hypatia/backends/registry.h"
#include "hypatia/backends/scan_kernels.h"
#include "hypatia/core/device.h"
#include "hypatia/core/error.h"
#include "hypatia/core/ndarray.h"
#include "hypatia/ops/shape.h"
#include "hypatia/ops/subtensor.h"

namespace hypatia::testing {
namespace {

struct State;
State& state();

struct State {
  std::mutex mu;
  std::atomic<int64_t> to_device{0}, to_host{0}, on_device{0};
  std::optional<DeviceMemory> saved;
  bool had_memory = false, installed = false, backend_registered = false;
  /// The queues' waits (Raw::order: "into waits for from"), the next function's queue.
  std::mutex waits_mu;
  std::vector<std::pair<int, int>> waits;
  std::atomic<int> next_queue{0};
  /// The memory: host buffers through a device's caching allocator, each the queue's that
  /// allocated it, as the CUDA backend's (the waits are noted, there is nothing to wait for).
  CachingAllocator allocator{CachingAllocator::Raw{
      .alloc = [](size_t n) { return std::aligned_alloc(64, n + 64); },  // (+64: SIMD reads past the end)
      .free = [](void* p) { std::free(p); },
      .order =
          [](int into, int from) {
            State& s = state();
            std::lock_guard<std::mutex> lock(s.waits_mu);
            s.waits.emplace_back(into, from);
          },
      .name = "emulated GPU"}};
};
State& state() {
  static State* s = new State;  // leaked: the memory functions may run during static destruction
  return *s;
}

/// `a`'s memory viewed with the device `d` (the stand-in's memory is host memory either way).
NDArray retag(const NDArray& a, Device d) {
  if (!a.valid() || a.device() == d) return a;
  return NDArray::wrap(a.storage(), a.raw(), a.shape(), a.strides(), a.dtype(), d);
}

/// The node's CPU kernel on the stand-in's memory: its inputs viewed as host arrays, its outputs
/// (new buffers, or views and in-place results over the inputs) seen as device arrays. Strict as
/// a device's kernel is: an input on the host is placement's error (InternalError), not read.
class EmulatedKernel final : public Kernel {
 public:
  explicit EmulatedKernel(const Apply& node) : cpu_(get_backend("cpu").make_kernel(node)), op_(node.op->name()) {}
  void run(const KernelArgs& a) override {
    Device device = Device::cuda();
    std::vector<NDArray> in, out;
    in.reserve(a.in.size());
    out.reserve(a.out.size());
    for (size_t i = 0; i < a.in.size(); ++i) {
      const NDArray* x = a.in[i];
      if (x->valid() && x->on_host())
        fail<InternalError>(op_, " on the emulated GPU: input ", i, " is a host array (", x->describe(),
                            "); placement should have moved it to the device");
      if (x->valid()) device = x->device();
      in.push_back(retag(*x, Device::host()));
    }
    // The cells' earlier buffers, moved (not copied) into the host views: a kernel reuses one in
    // place only when nothing else holds it, as a device kernel does.
    std::vector<const void*> earlier;
    for (NDArray* x : a.out) {
      NDArray mine = std::move(*x);
      earlier.push_back(mine.storage().get());
      out.push_back(retag(mine, Device::host()));
    }
    std::vector<NDArray*> ip, op;
    for (NDArray& x : in) ip.push_back(&x);
    for (NDArray& x : out) op.push_back(&x);
    cpu_->run(KernelArgs{ip, op});
    for (size_t k = 0; k < out.size(); ++k) {
      // A new buffer of the CPU kernel's (not an input's, nor the cell's earlier one) is moved
      // into the stand-in's allocator, as a device kernel's output would be allocated there
      // (with its queue's bookkeeping: device_queues.h).
      const NDArray& o = out[k];
      bool fresh = o.valid() && o.storage().get() != earlier[k];
      for (const NDArray& x : in) fresh = fresh && !x.shares_buffer(o);
      if (!fresh) {
        *a.out[k] = retag(o, device);
        continue;
      }
      const NDArray c = o.is_c_contiguous() ? o : o.copy();
      NDArray d = NDArray::empty(c.shape(), c.dtype(), device);
      if (c.nbytes() > 0) std::memcpy(d.raw(), c.raw(), c.nbytes());
      *a.out[k] = std::move(d);
    }
  }

 private:
  std::unique_ptr<Kernel> cpu_;
  std::string op_;
};

/// Advanced indexing by integer vectors on the leading axes, as the CUDA backend runs it
/// (KernelTraits::device_checks): an index out of range does not fail the kernel; the error is
/// kept until the call asks for it (raise_device_errors) after its other steps ran, and the
/// call goes on meanwhile with those indices read as 0 (the values of a call that fails are never
/// seen).
class DeferredIndexKernel final : public Kernel {
 public:
  /// `first`: the first index input (1 for AdvancedSubtensor, 2 for IncSubtensor).
  DeferredIndexKernel(const Apply& node, size_t first) : inner_(node), first_(first) {}
  void run(const KernelArgs& a) override {
    failed_ = nullptr;
    try {
      inner_.run(a);
      return;
    } catch (const IndexError&) {
      failed_ = std::current_exception();
    }
    std::vector<NDArray> clamped;
    std::vector<NDArray*> in(a.in.begin(), a.in.end());
    for (size_t i = first_; i < in.size(); ++i) {
      const NDArray v = retag(*a.in[i], Device::host());
      const int64_t n = a.in[0]->shape(static_cast<int>(i - first_));
      NDArray c = NDArray::empty(v.shape(), DType::Int64);
      for (int64_t j = 0; j < v.size(); ++j) {
        const int64_t x = v.get_flat_int(j);
        c.data<int64_t>()[j] = x < -n || x >= n ? 0 : x;
      }
      clamped.push_back(retag(c, a.in[i]->device()));
    }
    for (size_t i = first_; i < in.size(); ++i) in[i] = &clamped[i - first_];
    try {
      inner_.run(KernelArgs{in, a.out});
    } catch (...) {  // (an empty axis: no index is in range) the error now
      std::rethrow_exception(std::exchange(failed_, nullptr));
    }
  }
  void raise_device_errors() override {
    if (failed_) std::rethrow_exception(std::exchange(failed_, nullptr));
  }

 private:
  EmulatedKernel inner_;
  size_t first_;
  std::exception_ptr failed_;
};

/// The host's loop memory on the stand-in's (host memory seen as the device's).
LoopMemory emulated_loop_memory() {
  const LoopMemory host = host_loop_memory();
  const Device h = Device::host();
  return LoopMemory{.device = Device::cuda(),
                    .copy = [f = host.copy, h](const NDArray& d, const NDArray& s) { f(retag(d, h), retag(s, h)); },
                    .add = [f = host.add, h](const NDArray& d, const NDArray& s) { f(retag(d, h), retag(s, h)); },
                    .fill_zero = [f = host.fill_zero, h](const NDArray& d) { f(retag(d, h)); },
                    .truthy = [f = host.truthy, h](const NDArray& a) { return f(retag(a, h)); }};
}

void register_backend_once(State& s) {
  if (s.backend_registered) return;
  // The CPU's rewrite targets (fusion, float16 stored and computed in float32): its kernels run.
  const Backend& cpu = get_backend("cpu");
  register_backend(std::make_unique<Backend>(
      Backend::Description{.name = kEmulatedGpuBackend,
                           .device = DeviceKind::Cuda,
                           .fallback = "cpu",
                           .fusable = cpu.rewrite_target().fusable,
                           .max_fusion_inputs = cpu.rewrite_target().max_fusion_inputs,
                           .max_fusion_outputs = cpu.rewrite_target().max_fusion_outputs,
                           .storage_dtypes = cpu.storage_dtypes(),
                           .index_arithmetic_on_host = true,
                           .queues = std::make_shared<AllocatorQueues>(s.allocator, DeviceKind::Cuda, [&s] {
                             // (queues 1 to 15, as the CUDA backend's)
                             return 1 + s.next_queue.fetch_add(1) % 15;
                           })}));
  // Every op the CPU runs, but the transfers (host code by definition) and the ops that run inner
  // functions or lazy inputs (their programs are compiled for the host): those stay on the CPU.
  KernelTraits traits;
  traits.accepts = [](const Apply& node) {
    return !node.op->moves_between_devices() && node.op->inner_functions().empty() && node.op->lazy_inputs().empty();
  };
  std::set<std::type_index> types;
  for (const char* b : {"cpu", "reference"})  // the CPU's kernels and those it borrows (views, ...)
    for (std::type_index t : registered_op_types(b)) types.insert(t);
  for (std::type_index t : types)
    register_kernel(
        kEmulatedGpuBackend, t,
        [](const Apply& node) -> std::unique_ptr<Kernel> { return std::make_unique<EmulatedKernel>(node); }, traits);
  // Shape readers run on the host, as the CUDA backend's do (the reference kernels, reading only
  // the shape of a device array): the stand-in has none of its own.
  for (std::type_index t : {std::type_index(typeid(ShapeOp)), std::type_index(typeid(ShapeI))})
    register_kernel(
        kEmulatedGpuBackend, t, [](const Apply&) -> std::unique_ptr<Kernel> { return nullptr; },
        KernelTraits{.accepts = [](const Apply&) { return false; }});
  KernelTraits checked = traits;
  checked.device_checks = true;
  register_kernel(
      kEmulatedGpuBackend, typeid(AdvancedSubtensor),
      [](const Apply& node) -> std::unique_ptr<Kernel> {
        if (indexes_by_leading_vectors(node, static_cast<const AdvancedSubtensor&>(*node.op).spec, 1))
          return std::make_unique<DeferredIndexKernel>(node, 1);
        return std::make_unique<EmulatedKernel>(node);
      },
      checked);
  register_kernel(
      kEmulatedGpuBackend, typeid(IncSubtensor),
      [](const Apply& node) -> std::unique_ptr<Kernel> {
        const auto& op = static_cast<const IncSubtensor&>(*node.op);
        if (op.advanced && !op.set_instead_of_inc && indexes_by_leading_vectors(node, op.spec, 2))
          return std::make_unique<DeferredIndexKernel>(node, 2);
        return std::make_unique<EmulatedKernel>(node);
      },
      checked);
  // Scan, ScanGrad and IfElse as a device backend runs them: the loops' buffers in the stand-in's
  // memory, their bodies compiled for this backend with device arguments and outputs.
  register_device_control_flow(kEmulatedGpuBackend, emulated_loop_memory);
  s.backend_registered = true;
}

}  // namespace

void install_emulated_gpu(bool as_default) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  (void)backend_names();  // the built-in backends first (the CUDA one registers its memory)
  register_backend_once(s);
  if (as_default) set_default_backend_for(DeviceKind::Cuda, kEmulatedGpuBackend);
  if (s.installed) return;
  // (Claiming no device: the GPU the program names after installing is the one it uses.)
  if (const DeviceMemory* cuda = registered_device_memory(DeviceKind::Cuda))
    s.saved = *cuda;
  else
    s.saved.reset();  // no CUDA backend built in
  DeviceMemory m;
  m.allocate = [&s](size_t bytes) -> std::shared_ptr<void> {
    // (A test suite's many sizes would keep host memory cached without end: a bound, 256 MiB.)
    if (s.allocator.stats().cached > (size_t{256} << 20)) s.allocator.release_cached();
    return s.allocator.allocate(bytes, current_queue(), allocation_pool());
  };
  m.copy_from_host = [&s](void* d, const void* src, size_t n) {
    ++s.to_device;
    std::memcpy(d, src, n);
  };
  m.copy_to_host = [&s](void* d, const void* src, size_t n) {
    ++s.to_host;
    std::memcpy(d, src, n);
  };
  m.copy_on_device = [&s](void* d, const void* src, size_t n) {
    ++s.on_device;
    std::memcpy(d, src, n);
  };
  m.synchronize = [] {};
  register_device_memory(DeviceKind::Cuda, std::move(m));
  s.installed = true;
}

void remove_emulated_gpu() {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  if (!s.installed) return;
  set_default_backend_for(DeviceKind::Cuda, "");
  if (s.saved) {
    register_device_memory(DeviceKind::Cuda, *s.saved);
  } else {
    DeviceMemory none;
    none.allocate = [](size_t) -> std::shared_ptr<void> {
      fail<ValueError>("device cuda: no backend for this device is built into this hypatia");
    };
    register_device_memory(DeviceKind::Cuda, std::move(none));
  }
  s.installed = false;
}

std::vector<std::pair<int, int>> take_emulated_gpu_queue_waits() {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.waits_mu);
  return std::exchange(s.waits, {});
}

EmulatedGpuCopies emulated_gpu_copies() {
  const State& s = state();
  return {s.to_device.load(), s.to_host.load(), s.on_device.load()};
}

}  // namespace hypatia::testing
