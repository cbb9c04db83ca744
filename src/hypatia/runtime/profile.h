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
  /// Theano-style tables: per Op class, per Op, per Apply; then the compile time per phase.
  std::string summary() const;
};

}  // namespace hypatia
