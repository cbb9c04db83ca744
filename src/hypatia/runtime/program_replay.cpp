// Recording and replay of device work (Program::Segment): a backend with a Recorder (the CUDA
// backend: CUDA graphs) records a run of steps once, and later calls queue that recording again
// instead of running the steps' kernels: one launch for the run, none of the kernels' host work
// (shape checks, argument blocks, one launch each).
//
// A recording replays what the steps did when it was made: the same buffers, shapes and
// parameters. So it is made, and replayed, only for the key it was made with: each input cell's
// dtype, shape, device and writeability, the buffer address and strides of those read in device
// memory, and the values of those read on the host (a product's alpha, a shape vector). A segment is recorded when a
// call's key repeats one of the last kRecentKeys calls' that ran its steps (the first call compiles the kernels and
// fills the allocator's cache, so a steady loop records on its second call; a value cycling through a few buffers gets
// a recording per buffer), at most kMaxRecordings keys per segment and frame. (A shared variable updated out of place
// gets a new buffer each call, which seldom cycles: the in-place pass gives an update the variable's own buffer where
// it can.)
//
// The buffers a recording writes are its own: every allocation made while it was recorded is
// kept by it (Recorder::begin), and a replay first checks that the values it gave back last time
// are no longer held outside the frame (an output the caller kept, a shared variable's new value):
// if one is, the steps run instead, as they would without recordings. Live-out views of an input
// (a product written in place into a shared variable) are rebuilt over that input's buffer, so a
// recording holds no reference to a shared variable's value.
#include <algorithm>
#include <cstring>

#include "hypatia/core/cancel.h"
#include "hypatia/runtime/program_frame.h"

namespace hypatia {

using program_detail::with_node_context;

namespace {

/// How a segment's steps read an input (Segment::reads).
constexpr uint8_t kReadOnDevice = 1, kReadOnHost = 2;
/// Fewer steps than this run as they are: one recorded kernel saves little over launching it.
constexpr size_t kMinSegmentSteps = 2;
/// Recordings per segment and frame (keys seen in steady state: one, or two for a value that
/// alternates between buffers).
constexpr size_t kMaxRecordings = 4;
/// Keys remembered from calls that ran the steps: a key seen among them is recorded (a value that
/// cycles through a few buffers repeats within as many calls).
constexpr size_t kRecentKeys = 4;

/// Appends what a recording depends on in cell value `a` to `key`: for a value the steps read in
/// device memory its buffer, shape and strides, for one read on the host its shape and bytes;
/// false when it cannot be keyed (a host-read value too large, or not on the host).
bool append_key(std::vector<int64_t>& key, const NDArray& a, uint8_t reads) {
  const bool host_read = reads & kReadOnHost;
  if (!a.valid()) {
    key.push_back(-1);
    return !host_read;
  }
  key.push_back(static_cast<int64_t>(a.dtype()) | static_cast<int64_t>(a.ndim()) << 8 |
                static_cast<int64_t>(a.writeable()) << 16 | static_cast<int64_t>(a.device().kind) << 24 |
                static_cast<int64_t>(a.device().index) << 32);
  for (int d = 0; d < a.ndim(); ++d) key.push_back(a.shape(d));
  if (reads & kReadOnDevice) {
    key.push_back(static_cast<int64_t>(reinterpret_cast<uintptr_t>(a.raw())));
    for (int d = 0; d < a.ndim(); ++d) key.push_back(a.strides()[d]);
  }
  if (!host_read) return true;
  const size_t n = a.nbytes();
  if (!a.on_host() || !a.is_c_contiguous() || n > kMaxRecordedHostBytes) return false;
  const size_t at = key.size();
  key.resize(at + (n + 7) / 8, 0);
  if (n > 0) std::memcpy(key.data() + at, a.raw(), n);
  return true;
}

/// How many cells of the frame hold `v`'s buffer.
long frame_refs(const std::vector<NDArray>& storage, const NDArray& v) {
  return std::count_if(storage.begin(), storage.end(), [&](const NDArray& c) { return c.shares_buffer(v); });
}

}  // namespace

void Program::plan_segments() {
  segments_.clear();
  segment_at_.assign(steps.size(), -1);
  recorder_ = backend ? backend->recorder() : nullptr;
  if (!recorder_ || debug_mode || profile || pre_step || post_step || any_lazy_ || any_deferred_) return;
  // The last step reading each cell, and the cells read after the call's steps.
  std::vector<int64_t> last_reader(cell_kind.size(), -1);
  for (size_t t = 0; t < steps.size(); ++t)
    for (int c : steps[t].in) last_reader[c] = static_cast<int64_t>(t);
  std::vector<bool> escapes(cell_kind.size(), false);
  for (const OutputSlot& o : outputs) escapes[o.cell] = true;
  for (const UpdateSlot& u : updates) escapes[u.value_cell] = true;

  auto close = [&](size_t b, size_t e) {
    if (e - b < kMinSegmentSteps) return;
    Segment sg;
    sg.begin = b;
    sg.end = e;
    std::vector<bool> written(cell_kind.size(), false), seen(cell_kind.size(), false);
    for (size_t t = b; t < e; ++t) {
      const Step& st = steps[t];
      for (size_t i = 0; i < st.in.size(); ++i) {
        const int c = st.in[i];
        const uint8_t how = i < 64 && (st.host_inputs >> i & 1) ? kReadOnHost : kReadOnDevice;
        if (written[c]) continue;
        if (!seen[c]) {
          seen[c] = true;
          sg.inputs.push_back(c);
          sg.reads.push_back(how);
        } else {
          const auto at = std::find(sg.inputs.begin(), sg.inputs.end(), c) - sg.inputs.begin();
          sg.reads[static_cast<size_t>(at)] |= how;
        }
      }
      for (int c : st.out) {
        written[c] = true;
        sg.written.push_back(c);
        if (escapes[c] || last_reader[c] >= static_cast<int64_t>(e)) sg.live_out.push_back(c);
      }
      sg.freed.insert(sg.freed.end(), st.free_after.begin(), st.free_after.end());
    }
    for (size_t t = b; t < e; ++t) segment_at_[t] = static_cast<int>(segments_.size());
    segments_.push_back(std::move(sg));
  };
  // Runs of recordable steps, apart before and after the shared variables' in-place writers
  // (between them the call checks the updates), ended before a step that reads on the host a
  // value the run computes on the device.
  for (auto [lo, hi] :
       {std::pair{size_t{0}, first_shared_destroyer}, std::pair{first_shared_destroyer, steps.size()}}) {
    size_t b = lo;
    for (size_t t = lo; t < hi; ++t) {
      const Step& st = steps[t];
      bool ok = st.recordable;
      for (size_t i = 0; i < st.in.size() && ok && i < 64; ++i)
        if (st.host_inputs >> i & 1) ok = producer_[st.in[i]] < static_cast<int>(b);
      if (!ok) {
        close(b, t);
        b = st.recordable ? t : t + 1;
      }
    }
    close(b, hi);
  }
}

void Program::relieve_pressure(DeviceKind kind) {
  if (!backend || backend->device_kind() != kind) return;
  // Idle frames only: the primary when no call holds it, and the pool's (a call holding a frame
  // may be recording or replaying; its recordings go at its next segment).
  if (primary_ && !primary_busy_.exchange(true, std::memory_order_acquire)) {
    primary_->drop_recordings();
    primary_busy_.store(false, std::memory_order_release);
  }
  std::lock_guard<std::mutex> lock(pool_mu_);
  for (auto& f : pool_) f->drop_recordings();
}

std::vector<std::pair<size_t, size_t>> Program::recorded_runs() const {
  std::vector<std::pair<size_t, size_t>> r;
  for (const Segment& sg : segments_) r.emplace_back(sg.begin, sg.end);
  return r;
}

void Program::run_segment(Frame& f, size_t s) {
  const Segment& sg = segments_[s];
  Frame::SegmentState& r = f.segments[s];
  auto run_steps_here = [&] {
    for (size_t t = sg.begin; t < sg.end; ++t) {
      check_cancelled();
      run_step(f, t);
    }
  };
  if (r.off || !recorder_->enabled()) return run_steps_here();
  if (const uint64_t pressure = memory_pressure_count(backend->device_kind()); r.pressure != pressure) [[unlikely]] {
    r.recordings.clear();  // memory ran short since they were made
    r.recent.clear();
    r.pressure = pressure;
  }
  std::vector<int64_t>& key = r.key;
  key.clear();
  for (size_t i = 0; i < sg.inputs.size(); ++i)
    if (!append_key(key, f.storage[sg.inputs[i]], sg.reads[i])) return run_steps_here();

  for (const auto& rec : r.recordings) {
    if (rec->key != key) continue;
    // Values of earlier calls in the cells the segment writes (gc off) are not the caller's.
    for (int c : sg.written) f.storage[c].reset();
    bool free = true;
    for (const auto& h : rec->held)
      free = free && (h.value.use_count() == h.refs || h.value.use_count() == h.refs + frame_refs(f.storage, h.value));
    if (!free) continue;
    // The recording writes its live-out buffers again: after other queues' readers of them (a
    // value this function handed out before).
    if (queues_)
      for (const auto& h : rec->held) queues_->writes(h.value);
    check_cancelled();
    with_node_context(*steps[sg.begin].node, f.args(steps[sg.begin], sg.begin), [&] { rec->work->replay(); });
    for (const auto& h : rec->held) f.storage[h.cell] = h.value;
    for (const auto& a : rec->aliases) {
      const NDArray& base = f.storage[sg.inputs[a.input]];
      NDArray v = NDArray::wrap(base.storage(), base.raw() + a.delta, a.shape, a.strides, a.dtype, base.device());
      v.set_writeable(a.writeable);
      f.storage[a.cell] = std::move(v);
    }
    if (allow_gc)
      for (int c : sg.freed) f.storage[c].reset();
    return;
  }

  const bool repeated = std::find(r.recent.begin(), r.recent.end(), key) != r.recent.end();
  if (!repeated || r.recordings.size() >= kMaxRecordings || !recorder_->begin()) {
    if (!repeated) {
      if (r.recent.size() == kRecentKeys) r.recent.pop_back();
      r.recent.insert(r.recent.begin(), key);
    }
    return run_steps_here();
  }
  // Record: the kernels run on the host and queue their device work into the recording. The
  // inputs' values are held until the recording's first replay is queued: gc frees an
  // intermediate input at its last reader during the steps, and (1) a failed recording runs the
  // steps again on it, (2) its buffer must not go back to the allocator before the recorded reads
  // are queued: a later allocation of this recording would take it and key every later call off
  // (the input's next value is elsewhere), or another thread would write it first. A live-out
  // value in an input's buffer is a view of that input. The cells the steps write start empty
  // (gc off keeps last call's buffers there), so that every buffer the recording writes is
  // allocated while it records, and kept by it.
  std::vector<NDArray> inputs_held;
  inputs_held.reserve(sg.inputs.size());
  for (int c : sg.inputs) inputs_held.push_back(f.storage[c]);
  auto restore_inputs = [&] {
    for (size_t i = 0; i < sg.inputs.size(); ++i) f.storage[sg.inputs[i]] = inputs_held[i];
  };
  for (int c : sg.written) f.storage[c].reset();
  std::unique_ptr<Recording> work;
  try {
    for (size_t t = sg.begin; t < sg.end; ++t) run_step(f, t);
  } catch (const Cancelled&) {
    recorder_->end(false);
    throw;
  } catch (...) {
    // Nothing ran. A user's error comes again from the steps; anything else was the
    // recording's, and this segment's steps run from now on.
    recorder_->end(false);
    r.off = true;
    restore_inputs();
    try {
      run_steps_here();
    } catch (...) {
      r.off = false;
      throw;
    }
    return;
  }
  work = recorder_->end(true);
  if (!work) {
    r.off = true;
    restore_inputs();
    return run_steps_here();
  }
  auto rec = std::make_unique<Frame::SegmentRecording>();
  rec->key = key;
  rec->work = std::move(work);
  for (int c : sg.live_out) {
    const NDArray& v = f.storage[c];
    if (!v.valid()) continue;
    size_t input = sg.inputs.size();
    for (size_t i = 0; i < sg.inputs.size() && input == sg.inputs.size(); ++i)
      if (inputs_held[i].valid() && v.storage().get() == inputs_held[i].storage().get()) input = i;
    if (input < sg.inputs.size()) {
      rec->aliases.push_back(
          {c, input, v.raw() - inputs_held[input].raw(), v.shape(), v.strides(), v.dtype(), v.writeable()});
    } else {
      rec->held.push_back({c, v, 0});
    }
  }
  for (auto& h : rec->held) h.refs = h.value.use_count() - frame_refs(f.storage, h.value);
  with_node_context(*steps[sg.begin].node, f.args(steps[sg.begin], sg.begin), [&] { rec->work->replay(); });
  r.recordings.push_back(std::move(rec));
  // (inputs_held goes now: its buffers return to the allocator after the recorded reads.)
}

}  // namespace hypatia
