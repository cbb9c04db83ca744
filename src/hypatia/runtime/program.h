// Program: the flat, precomputed schedule that a Function runs (steps over storage cells).
//
// The schedule is fixed at compile time and never changes; each call runs in a Frame of its own
// (the storage cells and the kernels, which may keep per-call scratch), so one Program can be
// called from several threads at once and re-entered from inside a call (a Python Op whose
// perform calls the function again). A call that finds the first frame free takes it (one atomic
// exchange); otherwise it takes a frame from a pool, built on first need.
#pragma once
#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "hypatia/backends/backend.h"
#include "hypatia/graph/fgraph.h"
#include "hypatia/rewrite/rewriter.h"
#include "hypatia/runtime/profile.h"

namespace hypatia {

/// What kind of value a storage cell holds.
enum class CellKind : uint8_t { Input, Shared, Constant, Intermediate };

/// A compiled function's schedule. Built by function(); run by Function. run() is thread-safe.
class Program final : public InnerProgram {
 public:
  /// One node of the schedule: which cells it reads and writes.
  struct Step {
    std::shared_ptr<Apply> node;
    std::vector<int> in, out;
    /// Intermediate cells whose last reader is this step (freed after it when gc is on).
    std::vector<int> free_after;
    /// For a node that overwrites shared variables: their cells, and the cells of views of them
    /// (dead by then; emptied so that the buffer's only holders are the cell and the variable).
    std::vector<int> shared_cells, view_cells;
    /// A node that overwrites shared variables before steps that do not (the in-place choices
    /// order it so: a later step overwrites memory it reads): it runs among them, on a per-call
    /// copy of each shared cell, so that a later failure leaves the variables as they were.
    bool writes_shared_copy = false;
    /// The op has lazy inputs (its kernel's run_lazy runs it), which of its inputs are lazy, and
    /// whether this step runs only when a lazy step asks for one of its outputs (it is skipped
    /// in the schedule's order).
    bool lazy = false;
    std::vector<bool> lazy_in;
    bool deferred = false;
    /// Compiled inner functions of the node's op (Op::inner_functions), given to its kernel.
    std::vector<std::shared_ptr<InnerProgram>> inner;
    /// Some input comes from a transfer (it may be on another device): checked before the
    /// kernel runs, which reads its backend's memory only.
    bool check_devices = false;
    /// Where the kernel reads its inputs: its backend's device kind, except the inputs in
    /// host_inputs (bit i: input i is read on the host); any_device: shapes only (no check).
    DeviceKind device = DeviceKind::Host;
    uint64_t host_inputs = 0;
    bool any_device = false;
    /// The program's backend runs the node with a kernel whose device work can be recorded and
    /// replayed (KernelTraits::recordable).
    bool recordable = false;
    /// The kernel checks inputs on the device (KernelTraits::device_checks).
    bool device_checks = false;
  };
  struct InputSlot {
    int cell;
    TensorType type;
    std::string name;
    std::optional<NDArray> default_value;
    /// In(mutable=True): nodes may overwrite the argument. An argument that cannot be written
    /// safely (read-only, overlapping elements, memory shared with another argument or a shared
    /// variable) is copied first.
    bool mutable_ = false;
    /// Accept a lossy cast of the argument (In's allow_downcast, else the function's).
    bool allow_downcast = false;
    /// Every reader of the input copies it to this device (GpuFromHost): an argument already
    /// there is accepted, and the transfer copies it on the device (finalize sets it).
    std::optional<Device> device_readers;
    /// The argument arrives in this device's memory and is read there as it is, any strides (the
    /// inputs of a device node's inner function: Program::io_device).
    std::optional<Device> device_arg;
  };
  struct SharedSlot {
    int cell;
    std::shared_ptr<SharedCell> shared;
    /// Where the program reads the value (placement's choice at compile time): a value found on
    /// another device (set_value, another function's placement) is transferred when bound.
    DeviceKind device = DeviceKind::Host;
  };
  struct UpdateSlot {
    std::shared_ptr<SharedCell> shared;
    Var variable;
    int value_cell;
    bool may_alias_leaf;
    /// The value was computed in the shared variable's own buffer (an in-place node).
    bool in_place = false;
  };
  struct OutputSlot {
    int cell;
    bool borrow;
    /// The value may share memory with an input, shared or constant cell (copy unless borrow).
    bool may_alias_leaf;
  };

  std::string name;
  std::unique_ptr<FunctionGraph> fgraph;
  /// The backend whose kernels every frame builds, and the one DebugMode checks them against.
  const Backend* backend = nullptr;
  const Backend* oracle = nullptr;
  /// Per cell: the constant's value for constant cells, empty otherwise.
  std::vector<NDArray> constants;
  std::vector<CellKind> cell_kind;
  std::vector<Step> steps;
  /// Steps from this index on overwrite shared variables: they run after all others, and only
  /// after each of them has checked its inputs (Op::check_runtime_inputs), so that a failing call
  /// changes no shared variable.
  size_t first_shared_destroyer = 0;
  std::vector<InputSlot> inputs;
  /// The inner function of a node that runs on a device (FunctionOptions::device_io): its
  /// arguments arrive in, and its outputs leave in, that device's memory.
  std::optional<Device> io_device;
  std::vector<SharedSlot> shared;
  std::vector<UpdateSlot> updates;
  std::vector<OutputSlot> outputs;
  /// DebugMode: every step is checked against its reference kernel, and inputs outside its
  /// destroy_map must come out unchanged (Theano's BadThunkOutput / BadDestroyMap).
  bool debug_mode = false;
  /// DebugMode: checks the rewrites' replacements on each call's arguments (compile/debug_check.h).
  std::function<void(std::span<const NDArray>)> check_rewrites;
  bool allow_gc = true;
  /// Run before and after each step's kernel, inside the step's error context (MonitorMode's
  /// pre_func / post_func, NanGuardMode's checks): step index, node, arguments. A throw fails the
  /// call as the kernel's own error would.
  using StepHook = std::function<void(size_t step, const Apply& node, const KernelArgs& args)>;
  StepHook pre_step, post_step;
  std::unique_ptr<Profile> profile;
  /// What the rewrite pipeline did at compile time.
  RewriteStats rewrite_stats;

  Program();
  ~Program() override;

  /// Call once the steps and cells are final: derives the per-call tables and builds the first
  /// frame (every step's kernel; a missing kernel fails here, at compile time).
  void finalize();

  /// Runs one call: args.size() == inputs.size(), outs.size() == outputs.size(). Thread-safe and
  /// re-entrant. Calls of a function with updates are serialized (a re-entrant call from inside a
  /// call on the same thread goes through); others run concurrently. Between steps the call
  /// checks the calling thread's cancel flag (core/cancel.h) and throws Cancelled, changing no
  /// shared variable.
  void run(std::span<const NDArray> args, std::span<NDArray> outs) override;

  /// A runner with a frame of its own for a loop's body (InnerProgram::runner): its runs skip the
  /// frame lease, keep intermediate buffers from one run to the next (no allocation per step for
  /// fixed shapes) and, when every value is a 0-d scalar and every kernel has a scalar path, run
  /// on elements without arrays. A program with shared variables, updates, DebugMode or
  /// profiling gets a runner that calls run().
  std::unique_ptr<InnerRunner> runner() override;

  /// The kernel of step `i` in the first frame (for introspection).
  const Kernel& kernel(size_t i) const;
  /// The runs of steps [begin, end) that the backend's Recorder records and replays (Segment).
  std::vector<std::pair<size_t, size_t>> recorded_runs() const;

 private:
  struct Frame;
  class FrameLease;
  class Runner;

  std::unique_ptr<Frame> make_frame() const;
  /// The device every step reading `cell` copies it to (DeviceFromHost), if there is one and
  /// nothing else reads it (no host step, output or update).
  std::optional<Device> device_readers(int cell) const;
  void bind_input(Frame& f, size_t i, const NDArray& arg, std::span<const NDArray> args) const;
  /// Runs steps [begin, end); `replay`: runs of recordable steps go through run_segment.
  void run_steps(Frame& f, size_t begin, size_t end, bool replay = false);
  void run_step(Frame& f, size_t t);
  void check_input_devices(const Step& st, const KernelArgs& a) const;
  /// At compile time: every step's inputs are where its kernel reads them (InternalError naming
  /// the op and the input otherwise: a placement error, which a device would meet as a bad
  /// address).
  void check_placement() const;
  /// Runs step t's lazy kernel, computing the inputs it asks for.
  void run_lazy_step(Frame& f, size_t t);
  /// Computes cell c if a deferred step produces it and has not run in this call.
  void ensure_cell(Frame& f, int c);
  /// Checks the shared-variable-overwriting steps' inputs, and gives each overwritten shared
  /// value a buffer of its own (a copy when something outside the call holds it, or when it may
  /// not be written).
  void prepare_shared_destroyers(Frame& f) const;
  /// Waits for the device and raises the first failed device check of the steps that ran
  /// (KernelTraits::device_checks), before any shared variable is overwritten.
  void check_on_device(Frame& f) const;
  void run_debug(Frame& f, size_t t);
  void release(Frame& f) const;

  // Recording and replay of device work (runtime/program_replay.cpp).
  /// A run of recordable steps [begin, end) that the backend's Recorder records once its inputs
  /// repeat, and replays instead of running its kernels.
  struct Segment {
    size_t begin = 0, end = 0;
    /// Cells the steps read and no step of the run writes (the recording's key: their buffers,
    /// shapes and strides), and which of them are read on the host (their values join the key).
    std::vector<int> inputs;
    std::vector<uint8_t> reads;  ///< 1: read in device memory, 2: on the host, 3: both
    /// Cells the steps write, and those of them read after the run (later steps, outputs,
    /// updates): the values a replay gives back.
    std::vector<int> written, live_out;
    /// Cells freed after the run's steps (with gc).
    std::vector<int> freed;
  };
  /// Finds the segments (at finalize; none without a Recorder, with DebugMode, profiling, step
  /// hooks or lazy steps).
  void plan_segments();
  /// A memory-pressure handler (core/device.h): the idle frames drop their recordings (a busy one
  /// drops them at its next segment: Frame::SegmentState::pressure).
  void relieve_pressure(DeviceKind kind);
  /// Runs segment s: replays a recording whose key the cells match, records one when the key
  /// repeats the previous call's, or runs the steps.
  void run_segment(Frame& f, size_t s);

  /// The step that writes each cell (-1: an input, shared or constant cell), and whether any
  /// step is deferred.
  std::vector<int> producer_;
  bool any_deferred_ = false, any_lazy_ = false, any_device_checks_ = false;
  Recorder* recorder_ = nullptr;
  /// The backend's ordering of device work between functions (null: none), and this program's
  /// queue there (its calls' device work goes to it; -1 until its first call). A loop body's
  /// program (another program's step runs it) has none: its work is the outer call's.
  CallQueues* queues_ = nullptr;
  std::atomic<int> queue_{-1};
  bool inner_ = false;
  /// The cells a call may find holding an earlier call's buffer and write again in place
  /// (intermediates kept with gc off, but views and in-place results): others may have read that
  /// buffer since (CallQueues::writes).
  std::vector<int> kept_cells_;
  std::vector<Segment> segments_;
  /// The id of relieve_pressure's registration (0: none).
  uint64_t pressure_handler_ = 0;
  /// Per step: the segment that begins there, or -1.
  std::vector<int> segment_at_;
  /// Cells emptied after every call: inputs, shared values and (with gc) intermediates.
  std::vector<int> release_cells_;
  /// The shared variables the call reads, and those it updates, in one global lock order.
  std::vector<SharedCell*> read_locks_, update_locks_;
  bool any_mutable_input_ = false;

  std::unique_ptr<Frame> primary_;
  std::atomic<bool> primary_busy_{false};
  std::mutex pool_mu_;
  std::vector<std::unique_ptr<Frame>> pool_;
  /// Serializes calls of a function with updates; the owner's re-entrant calls pass.
  std::mutex update_mu_;
  std::atomic<std::thread::id> update_owner_{};
  /// Serializes the profile's counters.
  std::mutex profile_mu_;
};

}  // namespace hypatia
