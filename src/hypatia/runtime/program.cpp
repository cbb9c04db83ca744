#include "hypatia/runtime/program.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <sstream>
#include <utility>

#include "hypatia/core/cancel.h"
#include "hypatia/core/config.h"
#include "hypatia/core/error.h"
#include "hypatia/graph/printing.h"
#include "hypatia/ops/transfer.h"
#include "hypatia/runtime/program_frame.h"

namespace hypatia {

namespace program_detail {

/// Theano's context block for a failing node: the node, its input types, shapes and strides.
std::string node_context(const Apply& n, const KernelArgs& a) {
  std::ostringstream os;
  os << "\nApply node that caused the error: " << n.op->name() << "(";
  for (size_t i = 0; i < n.inputs.size(); ++i) os << (i ? ", " : "") << n.inputs[i]->str();
  os << ")\nInputs types: [";
  for (size_t i = 0; i < n.inputs.size(); ++i) os << (i ? ", " : "") << n.inputs[i]->type.str();
  os << "]\nInputs shapes: [";
  for (size_t i = 0; i < a.in.size(); ++i) os << (i ? ", " : "") << (a.in[i]->valid() ? a.in[i]->shape().str() : "?");
  os << "]\nInputs strides: [";
  for (size_t i = 0; i < a.in.size(); ++i) os << (i ? ", " : "") << (a.in[i]->valid() ? a.in[i]->strides().str() : "?");
  os << "]";
  if (!n.trace.empty())
    os << "\nNode created at: " << n.trace;
  else
    os << "\nHINT: the node was built in C++; where it was created is not recorded.";
  if (config().exception_verbosity == "high") {
    std::vector<Var> outs;
    for (int i = 0; i < n.nout(); ++i) outs.push_back(const_cast<Apply&>(n).output(i));
    os << "\nDebugprint of the apply node:\n" << debugprint(outs, DebugPrintOptions{.print_type = true});
  } else {
    os << "\nHINT: use HYPATIA_FLAGS=exception_verbosity=high for a debugprint of this apply node.";
  }
  return os.str();
}

}  // namespace program_detail

using program_detail::with_node_context;

namespace {

/// The library's load time: Chrome trace time stamps count from it (never negative).
const std::chrono::steady_clock::time_point g_trace_epoch = std::chrono::steady_clock::now();

/// Microseconds since the library was loaded (Chrome trace time stamps).
double trace_us(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double, std::micro>(t - g_trace_epoch).count();
}

/// A small number per thread (1, 2, ... in order of first use): Chrome trace thread ids.
uint32_t trace_thread_number() {
  static std::atomic<uint32_t> next{1};
  thread_local const uint32_t mine = next.fetch_add(1);
  return mine;
}

/// Profiling: one run of step t from t0 to t1, in the step's seconds and as a trace slice. A
/// template, so that it takes the Program's private Frame.
template <class FrameT>
void record_run(FrameT& f, size_t t, std::chrono::steady_clock::time_point t0,
                std::chrono::steady_clock::time_point t1) {
  f.seconds[t] += std::chrono::duration<double>(t1 - t0).count();
  f.events.push_back({static_cast<uint32_t>(t), trace_thread_number(), 0, trace_us(t0),
                      std::chrono::duration<double, std::micro>(t1 - t0).count()});
}

/// Profiling: the bytes each output of a step allocated in this call (a view or an in-place
/// output allocates none). A template, so that it takes the Program's private Frame and Step.
template <class FrameT, class StepT>
void record_output_bytes(FrameT& f, const StepT& st, const KernelArgs& a) {
  const AliasMap vm = st.node->op->view_map(), dm = st.node->op->destroy_map();
  for (size_t o = 0; o < st.out.size(); ++o) {
    const bool aliases = (o < vm.size() && !vm[o].empty()) || (o < dm.size() && !dm[o].empty());
    const bool valid = a.out[o]->valid();
    f.cell_bytes[st.out[o]] = !aliases && valid ? static_cast<int64_t>(a.out[o]->nbytes()) : 0;
    f.cell_desc[st.out[o]] =
        valid ? a.out[o]->shape().str() + " " + std::string(dtype_name(a.out[o]->dtype())) : std::string("?");
  }
}

/// Locks shared variables' cells in the order given (the global order: by address) for a scope.
class CellLocks {
 public:
  explicit CellLocks(const std::vector<SharedCell*>& cells) : cells_(cells) {
    for (SharedCell* c : cells_) c->mu.lock();
  }
  ~CellLocks() {
    for (auto it = cells_.rbegin(); it != cells_.rend(); ++it) (*it)->mu.unlock();
  }
  CellLocks(const CellLocks&) = delete;
  CellLocks& operator=(const CellLocks&) = delete;

 private:
  const std::vector<SharedCell*>& cells_;
};

/// The cells of `slots`' shared variables, once each, in the global lock order.
template <class Slots>
std::vector<SharedCell*> lock_order(const Slots& slots) {
  std::vector<SharedCell*> v;
  for (const auto& s : slots) v.push_back(s.shared.get());
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  return v;
}

}  // namespace

/// Holds a frame for one call: the first frame when it is free, else one from the pool.
class Program::FrameLease {
 public:
  explicit FrameLease(Program& p) : p_(p) {
    if (!p.primary_busy_.exchange(true, std::memory_order_acquire)) {
      frame_ = p.primary_.get();
      return;
    }
    {
      std::lock_guard<std::mutex> lock(p.pool_mu_);
      if (!p.pool_.empty()) {
        owned_ = std::move(p.pool_.back());
        p.pool_.pop_back();
      }
    }
    if (!owned_) owned_ = p.make_frame();
    frame_ = owned_.get();
  }
  ~FrameLease() {
    if (!owned_) {
      p_.primary_busy_.store(false, std::memory_order_release);
      return;
    }
    std::lock_guard<std::mutex> lock(p_.pool_mu_);
    // A burst of concurrent calls leaves a few frames for the next one; more are dropped.
    if (p_.pool_.size() < 8) p_.pool_.push_back(std::move(owned_));
  }
  FrameLease(const FrameLease&) = delete;
  FrameLease& operator=(const FrameLease&) = delete;
  Frame& frame() { return *frame_; }

 private:
  Program& p_;
  Frame* frame_ = nullptr;
  std::unique_ptr<Frame> owned_;
};

namespace {

/// Serializes the calls of a function with updates (so that two threads running one training
/// step apply their updates one after the other); a re-entrant call on the owning thread passes.
class UpdateSerializer {
 public:
  UpdateSerializer(bool needed, std::mutex& mu, std::atomic<std::thread::id>& owner) {
    if (!needed) return;
    const std::thread::id me = std::this_thread::get_id();
    if (owner.load(std::memory_order_relaxed) == me) return;
    mu.lock();
    owner.store(me, std::memory_order_relaxed);
    mu_ = &mu;
    owner_ = &owner;
  }
  ~UpdateSerializer() {
    if (!mu_) return;
    owner_->store(std::thread::id{}, std::memory_order_relaxed);
    mu_->unlock();
  }
  UpdateSerializer(const UpdateSerializer&) = delete;
  UpdateSerializer& operator=(const UpdateSerializer&) = delete;

 private:
  std::mutex* mu_ = nullptr;
  std::atomic<std::thread::id>* owner_ = nullptr;
};

/// A call on its function's device queue (CallQueues): the calling thread's device work goes
/// there from construction to destruction (a call inside a call: CallQueues::enter). None: -1.
class QueueScope {
 public:
  QueueScope(CallQueues* q, int queue) : q_(queue >= 0 ? q : nullptr) {
    if (q_) q_->enter(queue);
  }
  ~QueueScope() {
    if (q_) q_->leave();
  }
  QueueScope(const QueueScope&) = delete;
  QueueScope& operator=(const QueueScope&) = delete;

 private:
  CallQueues* q_;
};

}  // namespace

Program::Program() = default;
Program::~Program() {
  // First: once removed, the handler is not running (and never runs) on this program.
  if (pressure_handler_) remove_memory_pressure_handler(pressure_handler_);
}

std::unique_ptr<Program::Frame> Program::make_frame() const {
  auto f = std::make_unique<Frame>();
  f->storage = constants;
  f->kernels.reserve(steps.size());
  for (const Step& s : steps) {
    f->kernels.push_back(backend->make_kernel(*s.node));
    if (!s.inner.empty()) f->kernels.back()->bind_inner(s.inner);
    if (debug_mode) {
      f->references.push_back(oracle->make_kernel(*s.node));
      if (!s.inner.empty()) f->references.back()->bind_inner(s.inner);
    }
    f->first.push_back(f->ptrs.size());
    for (int c : s.in) f->ptrs.push_back(&f->storage[c]);
    for (int c : s.out) f->ptrs.push_back(&f->storage[c]);
  }
  backend->kernels_made();
  if (debug_mode) oracle->kernels_made();
  if (profile) {
    f->seconds.assign(steps.size(), 0.0);
    f->cell_bytes.assign(constants.size(), 0);
    f->cell_desc.assign(constants.size(), std::string());
  }
  if (any_deferred_) f->done.assign(steps.size(), 0);
  f->segments.resize(segments_.size());
  return f;
}

std::optional<Device> Program::device_readers(int cell) const {
  for (const OutputSlot& o : outputs)
    if (o.cell == cell) return std::nullopt;
  for (const UpdateSlot& u : updates)
    if (u.value_cell == cell) return std::nullopt;
  std::optional<Device> to;
  for (const Step& s : steps) {
    if (std::find(s.in.begin(), s.in.end(), cell) == s.in.end()) continue;
    const auto* t = dynamic_cast<const DeviceFromHost*>(s.node->op.get());
    if (!t || (to && *to != t->device)) return std::nullopt;
    to = t->device;
  }
  return to;
}

void Program::finalize() {
  release_cells_.clear();
  for (size_t c = 0; c < cell_kind.size(); ++c)
    if (cell_kind[c] == CellKind::Input || cell_kind[c] == CellKind::Shared ||
        (allow_gc && cell_kind[c] == CellKind::Intermediate))
      release_cells_.push_back(static_cast<int>(c));
  read_locks_ = lock_order(shared);
  update_locks_ = lock_order(updates);
  queues_ = backend ? backend->queues() : nullptr;
  kept_cells_.clear();
  if (!allow_gc)
    for (const Step& s : steps) {
      // (Outputs with buffers of their own: a view or an in-place result is its input's buffer.)
      const AliasMap views = s.node->op->view_map(), destroys = s.node->op->destroy_map();
      for (size_t o = 0; o < s.out.size(); ++o) {
        const bool alias = (o < views.size() && !views[o].empty()) || (o < destroys.size() && !destroys[o].empty());
        if (!alias && cell_kind[s.out[o]] == CellKind::Intermediate) kept_cells_.push_back(s.out[o]);
      }
    }
  for (const Step& s : steps)
    for (const auto& p : s.inner)
      if (auto* inner = dynamic_cast<Program*>(p.get())) inner->inner_ = true;
  any_mutable_input_ = std::any_of(inputs.begin(), inputs.end(), [](const InputSlot& s) { return s.mutable_; });
  producer_.assign(cell_kind.size(), -1);
  for (size_t t = 0; t < steps.size(); ++t)
    for (int c : steps[t].out) producer_[c] = static_cast<int>(t);
  for (InputSlot& in : inputs) {
    in.device_readers = device_readers(in.cell);
    in.device_arg = io_device;
  }
  any_deferred_ = std::any_of(steps.begin(), steps.end(), [](const Step& s) { return s.deferred; });
  any_lazy_ = std::any_of(steps.begin(), steps.end(), [](const Step& s) { return s.lazy; });
  // Steps that read a transfer's output (and are not transfers themselves) check their inputs'
  // devices on each call.
  std::vector<bool> from_transfer(cell_kind.size(), false);
  for (Step& s : steps) {
    if (const Backend* p = backend->provider(*s.node)) {
      s.device = p->device_kind();
      if (const KernelTraits* t = p->traits(*s.node)) {
        s.any_device = t->any_device_inputs;
        s.recordable = backend->records(*s.node) && !s.writes_shared_copy;  // (its copy is made per call)
        s.device_checks = t->device_checks && s.device != DeviceKind::Host;
        for (int i : t->host_inputs_for(*s.node))
          if (i < 64) s.host_inputs |= uint64_t{1} << i;
      }
    }
    const bool transfer = s.node->op->moves_between_devices();
    if (!transfer)
      for (int c : s.in) s.check_devices = s.check_devices || from_transfer[c];
    for (int c : s.out) from_transfer[c] = transfer;
  }
  check_placement();
  any_device_checks_ = std::any_of(steps.begin(), steps.end(), [](const Step& s) { return s.device_checks; });
  for (size_t t = first_shared_destroyer; t < steps.size(); ++t)
    if (steps[t].device_checks)
      fail<InternalError>(steps[t].node->op->name(), ": a kernel that checks its inputs on the device overwrites a ",
                          "shared variable (its checks would come after the write)");
  plan_segments();
  primary_ = make_frame();
  // (After the primary frame exists: the handler reads it from any thread.)
  if (!segments_.empty() && !pressure_handler_)
    pressure_handler_ = add_memory_pressure_handler([this](DeviceKind kind) { relieve_pressure(kind); });
}

const Kernel& Program::kernel(size_t i) const { return *primary_->kernels.at(i); }

void Program::bind_input(Frame& f, size_t i, const NDArray& arg, std::span<const NDArray> args) const {
  const InputSlot& s = inputs[i];
  auto where = [&] {
    std::ostringstream os;
    os << "function '" << (name.empty() ? "<unnamed>" : name) << "': input " << i;
    if (!s.name.empty()) os << " ('" << s.name << "')";
    return os.str();
  };
  if (!arg.valid()) fail<TypeError>(where(), ": got an empty (invalid) NDArray; expected ", s.type.str());
  // An inner function's arguments on its node's device are read there as they are.
  const bool device_arg = s.device_arg && arg.device() == *s.device_arg;
  if (s.device_arg && (!device_arg || arg.dtype() != s.type.dtype)) [[unlikely]]
    fail<TypeError>(where(), ": expected an array of dtype ", dtype_name(s.type.dtype), " on ", s.device_arg->str(),
                    " (the inner function of a node that runs there) but got ", arg.describe());
  // Arguments are host arrays (a device backend's placement transfers them where needed), or
  // arrays on the device that every reader of the input copies them to.
  if (!device_arg && !arg.on_host() && s.device_readers != arg.device()) [[unlikely]]
    fail<TypeError>(where(), ": expected an array in ", Device::host().str(), " memory (backend '", backend->name(),
                    "') but got one on ", arg.device().str(), " (", arg.describe(), "); ",
                    s.device_readers ? "only an array on " + s.device_readers->str() + " or the host is accepted"
                                     : std::string("the function reads this input on the host: transfer it first"));
  if (!device_arg && !arg.on_host() && (!arg.is_c_contiguous() || arg.dtype() != s.type.dtype)) [[unlikely]]
    fail<TypeError>(where(), ": an array on ", arg.device().str(), " is accepted as it is (C-contiguous, of dtype ",
                    dtype_name(s.type.dtype), ") but got ", arg.describe(),
                    "; copy or cast it on the host, or in a function of its own");
  if (arg.ndim() != s.type.ndim())
    fail<TypeError>(where(), ": expected ", s.type.str(), " (", s.type.ndim(),
                    " dimensions) but got an array of shape ", arg.shape().str(), " (", arg.ndim(), " dimensions)");
  for (int d = 0; d < arg.ndim(); ++d)
    if (s.type.broadcastable[d] && arg.shape(d) != 1)
      fail<TypeError>(where(), ": dimension ", d, " of ", s.type.str(),
                      " is broadcastable (length 1) but the array has shape ", arg.shape().str());
  NDArray& cell = f.storage[s.cell];
  if (arg.dtype() != s.type.dtype) {
    if (!s.allow_downcast && !can_cast_safely(arg.dtype(), s.type.dtype))
      fail<TypeError>(where(), ": expected dtype ", dtype_name(s.type.dtype), " (", s.type.str(), ") but got ",
                      dtype_name(arg.dtype()),
                      "; casting would lose precision. Pass allow_input_downcast=true "
                      "or cast the data to ",
                      dtype_name(s.type.dtype), ".");
    cell = arg.astype(s.type.dtype);  // a fresh array: the call may overwrite it
    return;
  }
  cell = arg;
  if (!s.mutable_) return;
  // A mutable argument is written in place only when that is safe: writeable, no element
  // sharing memory with another, and no memory shared with another argument (f(a, a)) or the
  // input's default value. (Shared variables are checked once they are bound.)
  bool copy = !arg.can_write_in_place() || (s.default_value && s.default_value->may_share_memory(arg));
  for (size_t j = 0; j < args.size() && !copy; ++j) copy = j != i && args[j].may_share_memory(arg);
  if (copy) cell = arg.copy();
}

void Program::run_step(Frame& f, size_t t) {
  const Step& st = steps[t];
  if (st.writes_shared_copy)
    for (int c : st.shared_cells) f.storage[c] = f.storage[c].copy();
  const KernelArgs a = f.args(st, t);
  with_node_context(*st.node, a, [&] {
    if (st.check_devices) check_input_devices(st, a);
    if (pre_step) pre_step(t, *st.node, a);
    if (profile) {
      auto t0 = std::chrono::steady_clock::now();
      f.kernels[t]->run(a);
      record_run(f, t, t0, std::chrono::steady_clock::now());
      record_output_bytes(f, st, a);
    } else if (debug_mode) {
      run_debug(f, t);
    } else {
      f.kernels[t]->run(a);
    }
    if (post_step) post_step(t, *st.node, a);
  });
  // A parallel kernel asked to stop returns early with a partial output: nothing may read it.
  check_cancelled();
  if (allow_gc && !f.keep_intermediates)
    for (int c : st.free_after) f.storage[c].reset();
}

void Program::run_steps(Frame& f, size_t begin, size_t end, bool replay) {
  if (!any_lazy_) {
    replay = replay && !segments_.empty();
    for (size_t t = begin; t < end; ++t) {
      check_cancelled();
      if (replay && segment_at_[t] >= 0) {
        run_segment(f, static_cast<size_t>(segment_at_[t]));
        t = segments_[static_cast<size_t>(segment_at_[t])].end - 1;
        continue;
      }
      run_step(f, t);
    }
    return;
  }
  if (any_deferred_) std::fill(f.done.begin(), f.done.end(), 0);
  for (size_t t = begin; t < end; ++t) {
    const Step& st = steps[t];
    if (st.deferred) continue;
    check_cancelled();
    if (st.lazy)
      run_lazy_step(f, t);
    else
      run_step(f, t);
    if (any_deferred_) f.done[t] = 1;
  }
}

void Program::ensure_cell(Frame& f, int c) {
  // The deferred step that writes `cell` and has not run (nor started) in this call, or -1.
  auto pending = [&](int cell) {
    const int p = producer_[cell];
    return p >= 0 && steps[p].deferred && f.done[p] == 0 ? p : -1;
  };
  const int root = pending(c);
  if (root < 0) return;
  // Depth first without recursion (a branch may be a long chain): a step runs once the deferred
  // steps writing its eager inputs have. done: 0 not run, 2 started, 1 ran.
  std::vector<std::pair<int, size_t>> stack{{root, 0}};
  f.done[root] = 2;
  while (!stack.empty()) {
    const int p = stack.back().first;
    const Step& st = steps[p];
    int child = -1;
    for (size_t& next = stack.back().second; next < st.in.size() && child < 0; ++next)
      if (!st.lazy || !st.lazy_in[next]) child = pending(st.in[next]);
    if (child >= 0) {
      f.done[child] = 2;
      stack.emplace_back(child, 0);
      continue;
    }
    check_cancelled();
    if (st.lazy)
      run_lazy_step(f, p);
    else
      run_step(f, p);
    f.done[p] = 1;
    stack.pop_back();
  }
}

void Program::run_lazy_step(Frame& f, size_t t) {
  const Step& st = steps[t];
  const KernelArgs a = f.args(st, t);
  // An input is ready unless it is lazy and a deferred step that has not run writes it.
  std::unique_ptr<bool[]> ready(new bool[st.in.size()]);
  for (size_t i = 0; i < st.in.size(); ++i) {
    const int p = producer_[st.in[i]];
    ready[i] = !st.lazy_in[i] || p < 0 || !steps[p].deferred || f.done[p] == 1;
  }
  if (pre_step) with_node_context(*st.node, a, [&] { pre_step(t, *st.node, a); });
  for (int round = 0;; ++round) {
    std::vector<int> need;
    with_node_context(*st.node, a, [&] {
      auto t0 = profile ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
      need = f.kernels[t]->run_lazy(a, std::span<const bool>(ready.get(), st.in.size()));
      // Each round of a lazy node is a slice of its own (the nodes it asked for run between).
      if (profile) record_run(f, t, t0, std::chrono::steady_clock::now());
    });
    if (need.empty()) {
      if (profile) record_output_bytes(f, st, a);
      if (post_step) with_node_context(*st.node, a, [&] { post_step(t, *st.node, a); });
      break;
    }
    for (int i : need) {
      if (i < 0 || i >= static_cast<int>(st.in.size()) || ready[i] || round > static_cast<int>(st.in.size()))
        throw InternalError(st.node->op->name() + ": its lazy kernel asked for input " + std::to_string(i) +
                            " which it has or which does not exist");
      ensure_cell(f, st.in[i]);
      ready[i] = true;
    }
  }
  check_cancelled();
  if (allow_gc && !f.keep_intermediates)
    for (int c : st.free_after) f.storage[c].reset();
}

void Program::prepare_shared_destroyers(Frame& f) const {
  for (size_t t = first_shared_destroyer; t < steps.size(); ++t) {
    const Step& st = steps[t];
    const KernelArgs a = f.args(st, t);
    with_node_context(*st.node, a, [&] { st.node->op->check_runtime_inputs(*st.node, a.in); });
  }
  for (size_t t = first_shared_destroyer; t < steps.size(); ++t)
    for (int c : steps[t].shared_cells) {
      NDArray& cell = f.storage[c];
      // The cell's own reference, and the shared variable's when it still holds this buffer
      // (another call may have committed a new value since this call read it).
      long ours = 1;
      for (const SharedSlot& s : shared)
        if (s.cell == c && s.shared->value.shares_buffer(cell)) ours = 2;
      // A step hook (NanGuardMode, MonitorMode) may fail the call after a step wrote in place: the
      // step then writes into a copy, so that the shared variable keeps its value until commit.
      if (cell.use_count() > ours || !cell.can_write_in_place() || pre_step || post_step)
        cell = cell.copy();
      else if (queues_)
        queues_->writes(cell);  // (a device's other queues may still read it)
    }
}

void Program::check_on_device(Frame& f) const {
  // (Only the program's own backend is a device one: its fallback runs on the host.)
  if (const auto& wait = device_memory(Device::of(backend->device_kind())).synchronize) wait();
  // Every kernel that ran is asked (each clears what it found); the first failure in the steps'
  // order is raised.
  std::exception_ptr first;
  for (size_t t = 0; t < first_shared_destroyer; ++t) {
    const Step& st = steps[t];
    if (!st.device_checks || (any_deferred_ && !f.done[t])) continue;
    try {
      with_node_context(*st.node, f.args(st, t), [&] { f.kernels[t]->raise_device_errors(); });
    } catch (...) {
      if (!first) first = std::current_exception();
    }
  }
  if (first) std::rethrow_exception(first);
}

void Program::release(Frame& f) const {
  for (int c : release_cells_) f.storage[c].reset();
}

void Program::run(std::span<const NDArray> args, std::span<NDArray> outs) {
  HYP_ASSERT(args.size() == inputs.size() && outs.size() == outputs.size());
  UpdateSerializer serial(!updates.empty(), update_mu_, update_owner_);
  auto t0 = profile ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
  int q = -1;
  if (queues_ && !inner_) {
    q = queue_.load(std::memory_order_acquire);
    if (q < 0) {  // (the first call: two threads may both ask; the first answer stays)
      int none = -1;
      queue_.compare_exchange_strong(none, queues_->assign(), std::memory_order_acq_rel);
      q = queue_.load(std::memory_order_acquire);
    }
  }
  QueueScope queue(queues_, q);
  FrameLease lease(*this);
  Frame& f = lease.frame();
  if (profile) {  // a failed call's timings are not merged into this one
    f.events.clear();
    std::fill(f.seconds.begin(), f.seconds.end(), 0.0);
    std::fill(f.cell_bytes.begin(), f.cell_bytes.end(), 0);
    for (auto& d : f.cell_desc) d.clear();
  }
  // Values the updates replace: released after the shared variables' locks (the last reference
  // to a buffer borrowed from Python needs the GIL, which another thread waiting on a lock may
  // hold).
  std::vector<NDArray> replaced;
  try {
    for (size_t i = 0; i < args.size(); ++i) {
      if (queues_) queues_->reads(args[i]);  // (before binding copies it, say)
      bind_input(f, i, args[i], args);
    }
    if (check_rewrites) {
      std::vector<NDArray> bound;
      for (const InputSlot& s : inputs) bound.push_back(f.storage[s.cell]);
      check_rewrites(bound);
    }
    {
      // One consistent snapshot: another call's updates are seen all or none.
      CellLocks lock(read_locks_);
      for (const SharedSlot& s : shared) f.storage[s.cell] = s.shared->value;
    }
    for (const SharedSlot& s : shared) {
      NDArray& v = f.storage[s.cell];
      if (queues_) queues_->reads(v);
      if (v.valid() && v.device().kind != s.device) [[unlikely]]
        v = v.to_device(Device::of(s.device));
    }
    if (any_mutable_input_)
      for (const InputSlot& in : inputs) {
        NDArray& cell = f.storage[in.cell];
        if (!in.mutable_ || !cell.valid() || cell.use_count() == 1) continue;  // private copy already
        bool copied = false;
        for (const SharedSlot& s : shared)
          if (f.storage[s.cell].may_share_memory(cell)) {
            cell = cell.copy();
            copied = true;
            break;
          }
        if (!copied && queues_) queues_->writes(cell);  // (the caller's buffer, written in place)
      }
    // The caller's previous outputs, when nothing else holds them, become this call's output buffers.
    for (size_t i = 0; i < outputs.size(); ++i) {
      NDArray& cell = f.storage[outputs[i].cell];
      if (cell_kind[outputs[i].cell] == CellKind::Intermediate && !cell.valid() && outs[i].valid() &&
          outs[i].unique() && outs[i].writeable()) {
        cell = std::move(outs[i]);
        if (queues_) queues_->writes(cell);  // (another function's call may still read it)
      }
      outs[i].reset();
    }
    // Buffers kept from earlier calls (gc off) that this call writes again: after other queues'
    // readers of them (a borrowed output, an update's value since replaced).
    if (queues_)
      for (int c : kept_cells_)
        if (f.storage[c].valid()) queues_->writes(f.storage[c]);
    // Recorded device work is replayed only where no hook or profile needs each step run.
    const bool replay = !profile && !pre_step && !post_step && !debug_mode;
    run_steps(f, 0, first_shared_destroyer, replay);
    check_cancelled();
    // Checks made on the device (index bounds) are known once it has run this far: a failed one
    // fails the call before any shared variable is written.
    if (any_device_checks_) check_on_device(f);
    // Updates: check every new value before committing any, so a failure changes nothing. The
    // nodes that overwrite shared variables run after the other values are checked, and after
    // checking their own inputs: past that point nothing can fail.
    std::vector<NDArray> new_values(updates.size());
    // A variable created on a device other than where this program computes its update
    // (shared(target=)) gets the value there: copied now, or, for an update the program writes in
    // place into its per-call copy, into a buffer taken now (after that point nothing may fail).
    std::vector<NDArray> homes;  // (sized only when needed: a call allocates nothing for them)
    for (size_t i = 0; i < updates.size(); ++i) {
      const UpdateSlot& u = updates[i];
      const std::optional<Device>& home = u.shared->fixed_device;
      if (u.in_place) {
        if (!home) continue;
        for (const SharedSlot& s : shared)  // (the per-call value the program writes in place)
          if (const NDArray& cur = f.storage[s.cell]; s.shared == u.shared && cur.valid() && cur.device() != *home) {
            homes.resize(updates.size());
            homes[i] = NDArray::empty(cur.shape(), cur.dtype(), *home);
          }
        continue;
      }
      NDArray v = f.storage[u.value_cell];
      if (auto err = u.variable->type.check_value(v); !err.empty())
        fail<ValueError>("function '", name, "': the update of shared variable '", u.variable->name, "': ", err);
      if (home && v.device() != *home) {
        new_values[i] = v.to_device(*home);
        continue;
      }
      bool alias = u.may_alias_leaf;
      for (const NDArray& prev : new_values) alias |= prev.shares_buffer(v);
      new_values[i] = alias ? v.copy() : std::move(v);
    }
    for (size_t t = first_shared_destroyer; t < steps.size(); ++t)
      for (int c : steps[t].view_cells) f.storage[c].reset();
    CellLocks lock(update_locks_);
    if (first_shared_destroyer < steps.size()) {
      // Past this point nothing may fail or stop half way: the in-place writers of shared
      // variables run to the end whatever the cancel flag says.
      CancelScope uncancellable(nullptr);
      prepare_shared_destroyers(f);
      for (size_t t = first_shared_destroyer; t < steps.size(); ++t) {
        if (const int s = segments_.empty() || !replay ? -1 : segment_at_[t]; s >= 0) {
          run_segment(f, static_cast<size_t>(s));
          t = segments_[static_cast<size_t>(s)].end - 1;
          continue;
        }
        run_step(f, t);
      }
      for (size_t i = 0; i < updates.size(); ++i) {
        if (!updates[i].in_place) continue;
        new_values[i] = f.storage[updates[i].value_cell];
        NDArray& v = new_values[i];
        if (i < homes.size() && homes[i].valid()) {
          // (The in-place result is the program's per-call copy of the value: same shape,
          // contiguous, on the other side. Anything else would be committed in the wrong place.)
          if (!(homes[i].shape() == v.shape() && v.is_c_contiguous() && v.on_host() != homes[i].on_host()))
            fail<InternalError>("function '", name, "': the in-place update of shared variable '",
                                updates[i].variable->name, "' (", v.describe(), ") cannot go back to ",
                                homes[i].device().str());
          if (v.nbytes() > 0) {
            if (v.on_host())
              device_memory(homes[i].device()).copy_from_host(homes[i].raw(), v.raw(), v.nbytes());
            else
              device_memory(v.device()).copy_to_host(homes[i].raw(), v.raw(), v.nbytes());
          }
          v = std::move(homes[i]);
        }
      }
    }
    for (size_t i = 0; i < outputs.size(); ++i) {
      const OutputSlot& o = outputs[i];
      NDArray& cell = f.storage[o.cell];
      bool fresh = !o.may_alias_leaf;
      for (size_t j = 0; j < i && fresh; ++j) fresh = outputs[j].cell != o.cell;
      for (const NDArray& nv : new_values) fresh = fresh && !nv.shares_buffer(cell);
      if (o.borrow) {
        outs[i] = cell;
        // A constant's own buffer, lent: read-only (written, it would change every later call).
        if (cell_kind[o.cell] == CellKind::Constant) outs[i].set_writeable(false);
      } else if (fresh && cell_kind[o.cell] == CellKind::Intermediate)
        outs[i] = std::move(cell);
      else
        outs[i] = cell.copy();
    }
    replaced.reserve(updates.size());
    for (size_t i = 0; i < updates.size(); ++i)
      replaced.push_back(std::exchange(updates[i].shared->value, std::move(new_values[i])));
  } catch (...) {
    release(f);
    throw;
  }
  release(f);
  if (profile) {
    std::lock_guard<std::mutex> lock(profile_mu_);
    // Memory: the steps in order, each value freed after its last reader (with gc) or never.
    int64_t live = 0, peak = 0, all = 0;
    for (size_t t = 0; t < steps.size(); ++t) {
      Profile::NodeStats& n = profile->nodes[t];
      n.seconds += f.seconds[t];
      ++n.calls;
      f.seconds[t] = 0;
      int64_t bytes = 0;
      for (int c : steps[t].out) bytes += f.cell_bytes[c];
      if (bytes > n.output_bytes ||
          (n.output_shapes.empty() && !steps[t].out.empty() && !f.cell_desc[steps[t].out[0]].empty())) {
        n.output_bytes = std::max(n.output_bytes, bytes);
        n.output_shapes.clear();
        for (size_t o = 0; o < steps[t].out.size(); ++o)
          n.output_shapes += (o ? "; " : "") + f.cell_desc[steps[t].out[o]];
      }
      live += bytes;
      all += bytes;
      peak = std::max(peak, live);
      if (allow_gc)
        for (int c : steps[t].free_after) live -= f.cell_bytes[c];
    }
    profile->peak_bytes = std::max(profile->peak_bytes, peak);
    profile->peak_bytes_no_gc = std::max(profile->peak_bytes_no_gc, all);
    profile->allow_gc = allow_gc;
    for (Profile::TraceEvent& e : f.events) {
      if (profile->trace.size() >= Profile::kMaxTraceEvents) {
        ++profile->trace_dropped;
        continue;
      }
      e.call = static_cast<uint64_t>(profile->calls);
      profile->trace.push_back(e);
    }
    f.events.clear();
    ++profile->calls;
    profile->call_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
}

}  // namespace hypatia
