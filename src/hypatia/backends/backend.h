// Backend: the open interface behind every kernel. A backend is an object with a name, the device
// its kernels run on, an allocator for that device, kernel factories per op type, the backend
// whose kernels serve the ops it lacks (its fallback), the backend DebugMode checks it against,
// and the limits the rewrites need (RewriteTarget). Backends register themselves by name; nothing
// above backends/ names a concrete one: compile/ looks a backend up by the name the user gave
// (FunctionOptions::backend, Python's `backend=`), and asks it for every node's kernel when the
// function is compiled.
//
// Adding a backend: derive from Backend (or fill a Backend::Description), register it with
// register_backend() from a function called by register_all_kernels(), and register its kernels
// with register_kernel(name, typeid(Op), factory).
#pragma once
#include <memory>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <typeindex>
#include <unordered_map>
#include <vector>

#include "hypatia/backends/registry.h"
#include "hypatia/core/device.h"
#include "hypatia/rewrite/storage_dtype.h"
#include "hypatia/rewrite/target.h"

namespace hypatia {

/// The largest value in bytes that a recorded kernel reads on the host (KernelTraits::host_inputs):
/// the runtime keys a recording by such values; a run reading a larger one there is not recorded.
inline constexpr size_t kMaxRecordedHostBytes = 256;

/// The device work of a run of kernels, recorded once (Recorder) and queued again by replay()
/// with the same arguments: the same buffers, shapes and parameters (a CUDA graph).
class Recording {
 public:
  virtual ~Recording() = default;
  /// Queues the recorded work again (on the backend's stream, after everything queued before).
  virtual void replay() = 0;
};

/// A backend that can record its kernels' device work (Description::recorder). The runtime
/// (runtime/program_replay.cpp) records runs of steps whose kernels are
/// KernelTraits::recordable once their inputs repeat, and then replays them instead of running
/// their kernels: one launch instead of one per kernel, none of the kernels' host work.
class Recorder {
 public:
  virtual ~Recorder() = default;
  /// Whether recordings are made and replayed now (a configuration may turn them off: then every
  /// call runs the kernels, recordings already made included).
  virtual bool enabled() const { return true; }
  /// Starts recording the calling thread's work: until end(), the backend's kernels queue their
  /// device work into the recording instead of running it, and every buffer allocated meanwhile
  /// is kept by the recording (replays write them). False: not now (another thread records, or
  /// the configuration says no).
  virtual bool begin() = 0;
  /// Ends what begin() started: the recording, or null when the work could not be recorded or
  /// `keep` is false (after an exception). Either way nothing of it has run yet.
  virtual std::unique_ptr<Recording> end(bool keep) = 0;
};

/// How a device backend orders the device work of different functions' calls
/// (Description::queues; null: the backend's work is done when its kernel returns, or one queue
/// orders it all). Each function is given a queue when it is compiled, and its calls queue their
/// device work there; the runtime (Program::run) tells the backend what a call reads and writes
/// that was made outside it (arguments, shared variables' values, buffers reused in place)
/// before the call queues work on them, so that the call's queue waits on the device for the
/// other queues' work on them. The call is the calling thread's.
class CallQueues {
 public:
  virtual ~CallQueues() = default;
  /// The queue of a new function (given when it is first called).
  virtual int assign() = 0;
  /// Begins a call on `queue` on the calling thread, until the matching leave(). A call inside a
  /// call (a compiled function a Python op calls) queues on the outer call's queue, where its
  /// inputs are, ordered after its own queue's earlier work and before its later work (the
  /// buffers its function keeps are written there). (A loop body's program enters no queue: it
  /// belongs to the call that runs the loop.)
  virtual void enter(int queue) = 0;
  virtual void leave() = 0;
  /// The call reads `a` (made outside it; arrays of other devices are ignored): its queue waits
  /// for the work that last wrote a's buffer on another queue.
  virtual void reads(const NDArray& a) = 0;
  /// The call writes into `a`'s buffer in place (an argument, a shared variable's value, or a
  /// buffer the function kept from an earlier call, which others may have read): its queue waits
  /// for every other queue's work on it.
  virtual void writes(const NDArray& a) = 0;
};

class Backend {
 public:
  struct Description {
    std::string name;
    /// The kind of device its kernels read and write (arrays of another device are refused).
    DeviceKind device = DeviceKind::Host;
    /// The backend whose kernels serve ops this one has none for ("": none).
    std::string fallback;
    /// The backend DebugMode (and debug_checks) runs beside this one, node by node ("": none).
    std::string checked_against;
    /// The rewrite mode used when the caller names none ("": config().mode). The reference
    /// backend, the test oracle, runs graphs as written ("NONE").
    std::string default_mode;
    /// Fusion: which Elemwise nodes its fused kernel can take, and its bounds.
    std::function<bool(const Elemwise& op, DType compute)> fusable;
    int max_fusion_inputs = 0, max_fusion_outputs = 0;
    /// The backend that `device=<this kind>` (HYPATIA_FLAGS) selects when a function names none.
    bool default_for_device = false;
    /// Dtypes its kernels store but do not compute in, each with the one they compute in instead
    /// (function() lowers the graph accordingly: rewrite/storage_dtype.h).
    std::vector<rewrite::StorageDType> storage_dtypes;
    /// Records and replays device work (null: the backend cannot).
    std::shared_ptr<Recorder> recorder;
    /// Index arithmetic runs on the fallback (the host): nodes whose outputs are all 0-d integers
    /// (or bools) computed from integer values of at most one dimension (a shape's entries, a
    /// loop's step count: is_index_arithmetic). A device backend whose results come back to the
    /// host for such values (to size an output, to count a loop's steps) sets it: computed on the
    /// device, each would cost a transfer and a wait per call.
    bool index_arithmetic_on_host = false;
    /// Called when a function's kernels are made (Program::make_frame), on the thread that made
    /// them (null: nothing to do). A backend whose kernels request code to be built (the CUDA
    /// backend's modules) builds it here, all at once, and throws its errors from function().
    std::function<void()> kernels_made;
    /// Orders the device work of different functions' calls (null: not needed).
    std::shared_ptr<CallQueues> queues;
  };

  explicit Backend(Description d);
  virtual ~Backend();
  Backend(const Backend&) = delete;
  Backend& operator=(const Backend&) = delete;

  const std::string& name() const { return desc_.name; }
  DeviceKind device_kind() const { return desc_.device; }
  /// The fallback and DebugMode backends (null: none, or not registered).
  const Backend* fallback() const;
  const Backend* checked_against() const;
  const std::string& default_mode() const { return desc_.default_mode; }
  bool default_for_device() const { return desc_.default_for_device; }
  const std::vector<rewrite::StorageDType>& storage_dtypes() const { return desc_.storage_dtypes; }
  Recorder* recorder() const { return desc_.recorder.get(); }
  CallQueues* queues() const { return desc_.queues.get(); }

  /// An uninitialized C-contiguous array on the backend's device (Device::of its kind).
  virtual NDArray allocate(const Shape& shape, DType dtype) const;

  /// Registers the kernel factory of `op_type` (replacing an earlier one).
  void add_kernel(std::type_index op_type, KernelFactory factory, KernelTraits traits = {});
  /// The backend of the fallback chain (this one first) whose kernel serves `node` (one of the
  /// op's type that accepts the node); null: none.
  const Backend* provider(const Apply& node) const;
  /// The traits of the kernel that serves `node` (null: none serves it).
  const KernelTraits* traits(const Apply& node) const;
  bool supports(const Apply& node) const { return provider(node) != nullptr; }
  /// Whether this backend's Recorder records `node`'s kernel: it has one, serves the node itself
  /// with a kernel whose traits say recordable, and that kernel reads more than shapes; a
  /// transfer only of a value computed from shapes and constants on the host (a mean's count).
  bool records(const Apply& node) const;
  /// Builds the kernel for `node` (from the first backend of the chain that has one); throws
  /// NotImplementedError naming the op and the backends asked when there is none.
  std::unique_ptr<Kernel> make_kernel(const Apply& node) const;
  /// Tells this backend and its fallback chain that a function's kernels are made
  /// (Description::kernels_made).
  void kernels_made() const;
  /// "'cpu' (nor its fallback 'reference')": the backends asked for a kernel, for messages.
  std::string chain_str() const;
  /// The op types this backend itself has kernels for (not its fallback's).
  std::vector<std::type_index> op_types() const;

  /// What the rewrites need: constant folding through this backend's kernels, fusion limits.
  const RewriteTarget& rewrite_target() const { return target_; }

 private:
  struct Entry {
    KernelFactory factory;
    KernelTraits traits;
  };
  /// This backend's own kernel of node's op type if it accepts the node; null otherwise.
  const Entry* own_entry(const Apply& node) const;
  /// Whether `v` is a constant or computed on the host from shapes (Shape, Shape_i) and constants
  /// only: the same on every call whose shapes are.
  bool computed_from_shapes(const Variable& v, int depth) const;

  Description desc_;
  RewriteTarget target_;
  mutable std::shared_mutex mu_;
  std::unordered_map<std::type_index, Entry> kernels_;
};

/// Whether `node` is index arithmetic (Description::index_arithmetic_on_host): every output 0-d of
/// an integer or bool dtype, every input an integer or bool of at most one dimension, and the op
/// neither random, with side effects, a transfer, nor one with inner functions or lazy inputs.
/// Whether the op works in place does not count (the in-place pass runs before placement).
bool is_index_arithmetic(const Apply& node);

/// Registers a backend under its name (a second backend of one name is an error).
void register_backend(std::unique_ptr<Backend> backend);
/// The backend named `name`, or null.
const Backend* find_backend(std::string_view name);
/// The backend named `name`; ValueError naming the registered ones when there is none.
const Backend& get_backend(std::string_view name);
/// The registered backends' names, sorted.
std::vector<std::string> backend_names();
/// The backend a function gets when it names none: the default one for config().device's kind
/// (ValueError when no backend for that device is built in).
const Backend& default_backend();
/// `name`'s backend, or default_backend() for an empty name.
const Backend& backend_or_default(std::string_view name);
/// Makes the backend named `name` the default one for devices of `kind` instead of the one
/// registered as such ("": that one again). For a stand-in device (testing/emulated_gpu.h).
void set_default_backend_for(DeviceKind kind, std::string name);

}  // namespace hypatia
