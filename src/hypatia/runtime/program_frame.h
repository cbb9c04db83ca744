// Internal to the runtime (program.cpp and program_runner.cpp): the working state of one call of
// a Program, and the wrapper that gives a failing kernel's error its node's context. Not public.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "hypatia/core/cancel.h"
#include "hypatia/core/error.h"
#include "hypatia/runtime/program.h"

namespace hypatia {

/// The working state of one call: storage cells and kernels (which may keep scratch between
/// calls), and each step's cell pointers.
struct Program::Frame {
  std::vector<NDArray> storage;
  std::vector<std::unique_ptr<Kernel>> kernels;
  /// DebugMode only: each step's reference kernel, run beside its kernel and compared.
  std::vector<std::unique_ptr<Kernel>> references;
  /// Per step, its input cells then its output cells, from ptrs[first[t]] on.
  std::vector<NDArray*> ptrs;
  std::vector<size_t> first;
  /// Profiling: this call's seconds per step and its trace slices (merged into the Profile at the
  /// end of the call).
  std::vector<double> seconds;
  std::vector<Profile::TraceEvent> events;
  /// Profiling: the bytes each cell's producer allocated in this call (0: not run, a view or in
  /// place).
  std::vector<int64_t> cell_bytes;
  std::vector<std::string> cell_desc;  ///< "(128, 64) float32" of each output this call wrote
  /// With deferred steps: which steps ran in this call.
  std::vector<uint8_t> done;
  /// A runner's frame: intermediates stay between runs (their buffers are reused).
  bool keep_intermediates = false;

  /// One recording of a segment (Program::Segment) in this frame: the key its inputs had, and
  /// the values its replays give back.
  struct SegmentRecording {
    std::vector<int64_t> key;
    std::unique_ptr<Recording> work;
    /// A live-out value in buffers the recording wrote, with the references to its buffer that
    /// are not the frame's cells (this one, the recording's other values, the allocations the
    /// recording keeps): more means somebody else holds it, and a replay would change it.
    struct Held {
      int cell;
      NDArray value;
      long refs;
    };
    std::vector<Held> held;
    /// A live-out view of one of the segment's inputs (the in-place product into a shared
    /// variable): rebuilt over that input's buffer, `delta` bytes from its element 0.
    struct Alias {
      int cell;
      size_t input;
      int64_t delta;
      Shape shape;
      Strides strides;
      DType dtype;
      bool writeable;
    };
    std::vector<Alias> aliases;
  };
  /// Per segment: its recordings, the keys of the last calls that ran its steps (newest first),
  /// whether recording failed (the steps then always run), the key being built, and the
  /// memory_pressure_count() of its device kind its recordings were made under (pressure since:
  /// they are dropped).
  struct SegmentState {
    std::vector<std::unique_ptr<SegmentRecording>> recordings;
    std::vector<std::vector<int64_t>> recent;
    std::vector<int64_t> key;
    bool off = false;
    uint64_t pressure = 0;
  };
  /// Drops every recording (their buffers go back to the allocator): memory pressure.
  void drop_recordings() {
    for (SegmentState& s : segments) {
      s.recordings.clear();
      s.recent.clear();
    }
  }
  std::vector<SegmentState> segments;

  KernelArgs args(const Step& s, size_t t) const {
    NDArray* const* p = ptrs.data() + first[t];
    return KernelArgs{std::span<NDArray* const>(p, s.in.size()),
                      std::span<NDArray* const>(p + s.in.size(), s.out.size())};
  }
};

namespace program_detail {

/// Theano's context block for a failing node: the node, its input types, shapes and strides.
std::string node_context(const Apply& n, const KernelArgs& a);

template <class E>
[[noreturn]] void rethrow_with(const E& e, const std::string& ctx) {
  throw E(std::string(e.what()) + ctx);
}

/// Runs fn; an error gets the node's context (Theano's "Apply node that caused the error").
template <class Fn>
void with_node_context(const Apply& node, const KernelArgs& a, Fn&& fn) {
  try {
    fn();
  } catch (const Cancelled&) {
    throw;
  } catch (const IndexError& e) {
    rethrow_with(e, node_context(node, a));
  } catch (const NotDifferentiableError& e) {
    rethrow_with(e, node_context(node, a));
  } catch (const NanGuardError& e) {
    rethrow_with(e, node_context(node, a));
  } catch (const AssertionError& e) {
    rethrow_with(e, node_context(node, a));
  } catch (const TypeError& e) {
    rethrow_with(e, node_context(node, a));
  } catch (const ValueError& e) {
    rethrow_with(e, node_context(node, a));
  } catch (const MemoryError& e) {
    // The allocator's message names the bytes; the node's name goes first.
    throw MemoryError(node.op->name() + ": " + e.what() + node_context(node, a));
  } catch (const Error& e) {
    rethrow_with(e, node_context(node, a));
  } catch (const InternalError& e) {
    rethrow_with(e, node_context(node, a));
  } catch (const std::bad_alloc&) {
    throw MemoryError(node.op->name() + ": out of memory (std::bad_alloc)" + node_context(node, a));
  }
}

}  // namespace program_detail

}  // namespace hypatia
