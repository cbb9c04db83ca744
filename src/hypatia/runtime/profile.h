// Profile: per-node timings of a compiled function, printed as Theano's profile tables.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace hypatia {

/// Per-node timings collected when profiling is on.
class Profile {
 public:
  struct NodeStats {
    std::string op_name, op_class, apply_str;
    double seconds = 0;
    long calls = 0;
    /// Memory: the most bytes its outputs took in one call (0 for views and in-place outputs,
    /// which allocate nothing), and every output's shape then ("(128, 64) float32; (128,) int64").
    int64_t output_bytes = 0;
    std::string output_shapes;
  };
  /// One run of one node in one call (a Chrome trace slice): microseconds since the process's
  /// first profiled call, and the calling thread's small number.
  struct TraceEvent {
    uint32_t step, thread;
    uint64_t call;
    double start_us, dur_us;
  };
  /// At most this many events are kept (the first ones); later ones are counted in trace_dropped.
  static constexpr size_t kMaxTraceEvents = size_t{1} << 20;
  std::string function_name;
  std::vector<NodeStats> nodes;
  long calls = 0;
  double call_seconds = 0;  // whole calls, including argument checks
  double compile_seconds = 0;
  /// Compile time of each rewrite phase, in pipeline order (name, seconds).
  std::vector<std::pair<std::string, double>> compile_phases;
  std::vector<TraceEvent> trace;
  size_t trace_dropped = 0;
  /// Memory: the most bytes the intermediates and outputs held at once in one call, with the
  /// function's gc setting (a value freed after its last reader) and as if allow_gc were False
  /// (nothing freed before the call ends); inputs and shared variables are not counted.
  int64_t peak_bytes = 0, peak_bytes_no_gc = 0;
  bool allow_gc = true;
  /// Theano-style tables: per Op class, per Op, per Apply; the memory profile; then the compile
  /// time per phase.
  std::string summary() const;
};

}  // namespace hypatia
