// Profile: per-node timings of a compiled function, printed as Theano's profile tables.
#pragma once
#include <string>
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
  std::string function_name;
  std::vector<NodeStats> nodes;
  long calls = 0;
  double call_seconds = 0;  // whole calls, including argument checks
  double compile_seconds = 0;
  /// Theano-style tables: per Op class, per Op, per Apply.
  std::string summary() const;
};

}  // namespace hypatia
