// Device: where an array's buffer lives: the host (CPU memory), or `cuda:N`, the CUDA backend's
// (backends/cuda, built when CMake finds the CUDA toolkit). An NDArray's buffer comes from its device's
// allocator, and code that reads or writes elements on the host refuses any other device.
//
// A process drives one device of each kind, as Theano's device flag did (`device=cuda1` runs the
// program on the second GPU): the index is fixed at the first use of a device of that kind, to the
// index that use names, or, where it names none, to the device flag's (HYPATIA_FLAGS=device=cudaN;
// else 0). Naming another index of the same kind later is refused (claim_device): one process
// does not drive two GPUs (not built).
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

namespace hypatia {

enum class DeviceKind : uint8_t { Host, Cuda };

struct Device {
  DeviceKind kind = DeviceKind::Host;
  int16_t index = 0;

  static constexpr Device host() { return {}; }
  static constexpr Device cuda(int i) { return {DeviceKind::Cuda, static_cast<int16_t>(i)}; }
  /// The CUDA device this process drives (fixes it: see claim_device).
  static Device cuda();
  /// The device of `kind` this process drives (the host for DeviceKind::Host; fixes it).
  static Device of(DeviceKind kind);
  bool is_host() const { return kind == DeviceKind::Host; }
  bool operator==(const Device&) const = default;
  /// "cpu", "cuda:0" (the spelling of Theano's device flag).
  std::string str() const;
  /// Parses "cpu", "cuda", "cudaN" or "cuda:N" (and Theano's "gpu", "gpuN"); throws ValueError naming
  /// the accepted forms. "cuda" alone is the CUDA device this process drives, or will (it fixes
  /// nothing: the one already used, else the device flag's, else cuda:0).
  static Device parse(std::string_view s);
  /// Whether `s` is a device's name parse() takes (without resolving "cuda": no config read).
  static bool is_name(std::string_view s);
};

/// What a device gives NDArray: buffers, and copies to and from host memory. The host's is built
/// in; a backend for another device registers its own (register_device_memory).
struct DeviceMemory {
  /// A buffer of `bytes` (aligned for any dtype) that frees itself when the last owner lets go;
  /// null when the device is out of memory.
  std::function<std::shared_ptr<void>(size_t bytes)> allocate;
  /// Copies `bytes` between host memory and the device (either direction; the pointer that is on
  /// the device is the one allocate() gave, plus an offset).
  std::function<void(void* device_dst, const void* host_src, size_t bytes)> copy_from_host;
  std::function<void(void* host_dst, const void* device_src, size_t bytes)> copy_to_host;
  /// Copies `bytes` within the device (null: through host memory).
  std::function<void(void* device_dst, const void* device_src, size_t bytes)> copy_on_device;
  /// Waits until the work queued on the device so far is done (null: work is never queued), so
  /// that another library may read its buffers (the Python device arrays' DLPack export); in a
  /// call of a backend that gives each function a queue (backends/backend.h: CallQueues), the
  /// work of that call's queue.
  std::function<void()> synchronize;
  /// Waits until all work on the device is done, whoever queued it on whichever stream (null: as
  /// synchronize): before Hypatia reads a buffer another library hands it, and before a buffer it
  /// handed out returns to its allocator.
  std::function<void()> synchronize_device;
};
/// Calls `device`'s synchronize_device (or synchronize); nothing for host memory.
void synchronize_device(Device device);
/// Fixes `device` as the one of its kind this process drives, unless one is already: then
/// NotImplementedError for another index, naming both (one GPU per process: a program names its GPU
/// before using one, with the device flag or CUDA_VISIBLE_DEVICES). device_memory, the transfer ops
/// and the default backend check it; nothing for the host.
void claim_device(Device device);
/// The index of the device of `kind` this process drives, fixed by this call if no use fixed it
/// yet (the device flag's index for its kind, else 0).
int driven_device_index(DeviceKind kind);

/// Memory pressure: a device allocation failed even after its allocator released its cache.
/// Holders of device memory that they can rebuild (the runtime's recordings of device work)
/// register a handler that lets go of what is idle now; relieve_memory_pressure runs them all
/// (from the failing allocation, which then retries) and counts the event, so that a holder busy
/// now lets go at its next use (memory_pressure_count(kind) changed). A handler must not allocate;
/// one that pressure reaches again from inside a handler is skipped.
using MemoryPressureHandler = std::function<void(DeviceKind)>;
/// Adds a handler; returns its id for remove_memory_pressure_handler.
uint64_t add_memory_pressure_handler(MemoryPressureHandler handler);
/// Removes a handler; once it returns, the handler is not running and never runs again.
void remove_memory_pressure_handler(uint64_t id);
/// Counts the event and runs every handler for `kind`.
void relieve_memory_pressure(DeviceKind kind);
/// How many times memory pressure on devices of `kind` was relieved so far.
uint64_t memory_pressure_count(DeviceKind kind);

/// Registers the memory functions of every device of `kind` (replacing earlier ones).
void register_device_memory(DeviceKind kind, DeviceMemory memory);
/// The memory functions of `device` (it claims it: claim_device); throws ValueError when no
/// backend for it is built in.
const DeviceMemory& device_memory(Device device);
/// The memory functions registered for `kind` (null: none), claiming no device (a stand-in
/// installed before any use: testing/emulated_gpu.h).
const DeviceMemory* registered_device_memory(DeviceKind kind);

}  // namespace hypatia
