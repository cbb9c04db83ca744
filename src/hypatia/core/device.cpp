#include "hypatia/core/device.h"

#include <array>
#include <atomic>
#include <charconv>
#include <cstring>
#include <mutex>
#include <optional>
#include <vector>

#include "hypatia/core/allocator.h"
#include "hypatia/core/config.h"
#include "hypatia/core/error.h"

namespace hypatia {
namespace {

constexpr size_t kKinds = 2;

struct Registry {
  std::mutex mu;
  /// Never freed: arrays made by a replaced entry may still call its functions (deleters hold
  /// their own copies; the copies are looked up per transfer), and replacing is rare (tests).
  std::array<const DeviceMemory*, kKinds> by_kind{};
  /// Every entry ever registered (replaced ones included), so that none is lost.
  std::vector<std::unique_ptr<const DeviceMemory>> all;
};

/// The index of the device of each kind this process drives (-1: not fixed yet).
std::atomic<int> g_driven[kKinds] = {-1, -1};

/// A device's name parsed without resolving "cuda" alone (index -1 then); nullopt if not one.
std::optional<Device> parse_name(std::string_view s) {
  if (s == "cpu") return Device::host();
  // Theano's old CUDA backend named its devices gpu, gpu0, gpu1...: the same GPUs.
  const size_t name = s.substr(0, 4) == "cuda" ? 4 : s.substr(0, 3) == "gpu" ? 3 : 0;
  if (name == 0) return std::nullopt;
  std::string_view rest = s.substr(name);
  if (rest.empty()) return Device{DeviceKind::Cuda, -1};
  if (rest.front() == ':') rest.remove_prefix(1);
  int i = -1;
  auto [p, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), i);
  if (ec == std::errc() && p == rest.data() + rest.size() && i >= 0 && i < 4096) return Device::cuda(i);
  return std::nullopt;
}

/// The index the device flag names for `kind` (0 when it names none).
int flag_index(DeviceKind kind) {
  const std::optional<Device> d = parse_name(config().device);
  return d && d->kind == kind && d->index >= 0 ? d->index : 0;
}

Registry& registry() {
  static Registry* r = new Registry();  // never destroyed: arrays freed at exit may still transfer
  return *r;
}

const DeviceMemory* host_memory() {
  auto* m = new DeviceMemory();
  m->allocate = [](size_t bytes) -> std::shared_ptr<void> {
    size_t capacity = 0;
    void* p = host_alloc(bytes == 0 ? 1 : bytes, &capacity);
    if (!p) return nullptr;
    return std::shared_ptr<void>(p, [capacity](void* q) { host_free(q, capacity); });
  };
  m->copy_from_host = [](void* dst, const void* src, size_t bytes) { std::memcpy(dst, src, bytes); };
  m->copy_to_host = [](void* dst, const void* src, size_t bytes) { std::memcpy(dst, src, bytes); };
  return m;
}

}  // namespace

std::string Device::str() const {
  if (kind == DeviceKind::Host) return "cpu";
  return "cuda:" + std::to_string(index);
}

Device Device::cuda() { return of(DeviceKind::Cuda); }

Device Device::of(DeviceKind kind) {
  if (kind == DeviceKind::Host) return host();
  return {kind, static_cast<int16_t>(driven_device_index(kind))};
}

bool Device::is_name(std::string_view s) { return parse_name(s).has_value(); }

Device Device::parse(std::string_view s) {
  if (std::optional<Device> d = parse_name(s)) {
    if (d->index < 0) {  // "cuda": the one in use, else the flag's
      const int driven = g_driven[static_cast<size_t>(d->kind)].load(std::memory_order_acquire);
      d->index = static_cast<int16_t>(driven >= 0 ? driven : flag_index(d->kind));
    }
    return *d;
  }
  fail<ValueError>("device: '", s,
                   "' is not a device; expected 'cpu', 'cuda', 'cudaN' or 'cuda:N' (or Theano's 'gpu', 'gpuN')");
}

namespace {

struct PressureHandlers {
  std::mutex mu;  // held while handlers run: removing one waits for them
  std::vector<std::pair<uint64_t, MemoryPressureHandler>> handlers;
  uint64_t next_id = 1;
  std::array<std::atomic<uint64_t>, kKinds> count{};
};

PressureHandlers& pressure_handlers() {
  static auto* p = new PressureHandlers();  // never destroyed: programs freed at exit remove theirs
  return *p;
}

thread_local bool t_relieving = false;

}  // namespace

uint64_t add_memory_pressure_handler(MemoryPressureHandler handler) {
  auto& p = pressure_handlers();
  std::lock_guard<std::mutex> lock(p.mu);
  p.handlers.emplace_back(p.next_id, std::move(handler));
  return p.next_id++;
}

void remove_memory_pressure_handler(uint64_t id) {
  auto& p = pressure_handlers();
  std::lock_guard<std::mutex> lock(p.mu);
  std::erase_if(p.handlers, [id](const auto& h) { return h.first == id; });
}

void relieve_memory_pressure(DeviceKind kind) {
  auto& p = pressure_handlers();
  p.count[static_cast<size_t>(kind)].fetch_add(1, std::memory_order_relaxed);
  if (t_relieving) return;
  t_relieving = true;
  try {
    std::lock_guard<std::mutex> lock(p.mu);
    for (const auto& [id, h] : p.handlers) h(kind);
  } catch (...) {
    t_relieving = false;
    throw;
  }
  t_relieving = false;
}

uint64_t memory_pressure_count(DeviceKind kind) {
  return pressure_handlers().count[static_cast<size_t>(kind)].load(std::memory_order_relaxed);
}

void register_device_memory(DeviceKind kind, DeviceMemory memory) {
  auto& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  r.all.push_back(std::make_unique<const DeviceMemory>(std::move(memory)));
  r.by_kind[static_cast<size_t>(kind)] = r.all.back().get();
}

void synchronize_device(Device device) {
  if (device.kind == DeviceKind::Host) return;
  const DeviceMemory& m = device_memory(device);
  if (m.synchronize_device)
    m.synchronize_device();
  else if (m.synchronize)
    m.synchronize();
}

int driven_device_index(DeviceKind kind) {
  if (kind == DeviceKind::Host) return 0;
  std::atomic<int>& driven = g_driven[static_cast<size_t>(kind)];
  int cur = driven.load(std::memory_order_acquire);
  if (cur >= 0) [[likely]]
    return cur;
  driven.compare_exchange_strong(cur, flag_index(kind), std::memory_order_acq_rel);
  return driven.load(std::memory_order_acquire);
}

void claim_device(Device device) {
  if (device.kind == DeviceKind::Host) return;
  // The device backends drive one device of their kind: memory labelled with another index would
  // be that one's (and another library handed it would look for it on the other GPU).
  std::atomic<int>& driven = g_driven[static_cast<size_t>(device.kind)];
  int cur = driven.load(std::memory_order_acquire);
  if (cur == device.index) [[likely]]
    return;
  if (cur < 0 && driven.compare_exchange_strong(cur, device.index, std::memory_order_acq_rel)) return;
  if (cur == device.index) return;
  fail<NotImplementedError>("device ", device.str(), ": this process runs on ", Device{device.kind, int16_t(cur)}.str(),
                            ", fixed at its first use of that kind of device; Hypatia drives one GPU per process ",
                            "(more than one is not built): name the GPU before using one (HYPATIA_FLAGS=device=cuda",
                            device.index, ", or CUDA_VISIBLE_DEVICES)");
}

const DeviceMemory* registered_device_memory(DeviceKind kind) {
  if (kind == DeviceKind::Host) return &device_memory(Device::host());
  auto& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  return r.by_kind[static_cast<size_t>(kind)];
}

const DeviceMemory& device_memory(Device device) {
  claim_device(device);
  auto& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  const DeviceMemory*& m = r.by_kind[static_cast<size_t>(device.kind)];
  if (!m) {
    if (device.kind == DeviceKind::Host)
      m = host_memory();
    else
      fail<ValueError>("device ", device.str(),
                       ": no backend for this device is built into this hypatia "
                       "(the CUDA backend builds when CMake finds the CUDA toolkit)");
  }
  return *m;
}

}  // namespace hypatia
