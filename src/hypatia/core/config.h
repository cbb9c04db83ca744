// Run-time configuration: defaults < ~/.hypatiarc < HYPATIA_FLAGS < code.
#pragma once
#include <string>
#include <string_view>

#include "hypatia/core/dtype.h"

namespace hypatia {

/// Global settings (Theano's config). Read once from ~/.hypatiarc and HYPATIA_FLAGS on first use.
struct Config {
  /// dtype of float constructors that name none (float32 or float64).
  DType floatX = DType::Float64;
  /// "cpu" (a CUDA device joins later).
  std::string device = "cpu";
  /// Default compilation mode: FAST_RUN, FAST_COMPILE or NONE (no rewrites).
  std::string mode = "FAST_RUN";
  std::string optimizer = "fast_run";
  /// Free intermediates as soon as they are dead (true) or keep them for reuse across calls.
  bool allow_gc = true;
  /// Profile every compiled function and print the tables at exit.
  bool profile = false;
  /// "low" or "high" (high adds a debugprint of the failing node to errors).
  std::string exception_verbosity = "low";
  /// "off", "ignore", "warn" or "raise".
  std::string compute_test_value = "off";
  /// Kernels split their work across the thread pool above this many elements (Theano's name,
  /// kept; Hypatia's kernels no longer use OpenMP).
  long openmp_elemwise_minsize = 200000;
  /// Threads for Hypatia's kernels and the BLAS calls (0: the CPUs this process may run on).
  int num_threads = 0;
  bool print_rewrites = false;
  /// Every function runs DebugMode's checks whatever its mode (the test suites set it): each node
  /// against its reference kernel and its destroy_map, each rewrite against the values it replaced.
  bool debug_checks = false;
  /// Rewrites (names or tags, ':'-separated) added to / removed from the mode's pipeline.
  std::string optimizer_including;
  std::string optimizer_excluding;
  /// Set a key from text ("floatX", "float32"); throws ValueError on an unknown key or bad value.
  void set(std::string_view key, std::string_view value);
  /// Applies "key=value,key=value" (the HYPATIA_FLAGS format).
  void apply_flags(std::string_view flags);
  /// Applies an rc file's text: "key = value" lines, optional [global] sections, '#' comments.
  void apply_rc(std::string_view text);
  /// Reads a key as text.
  std::string get(std::string_view key) const;
};

/// The process-wide configuration, initialized from ~/.hypatiarc and HYPATIA_FLAGS on first call.
Config& config();

}  // namespace hypatia
