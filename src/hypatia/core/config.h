// Run-time configuration: defaults < ~/.hypatiarc < HYPATIA_FLAGS < code.
#pragma once
#include <functional>
#include <string>
#include <string_view>

#include "hypatia/core/dtype.h"
#include "hypatia/core/error.h"

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
  /// Which library runs float32 matrix products: "auto" (the faster of oneDNN and OpenBLAS for
  /// the product's size class, measured once per process), "onednn" or "openblas". float64
  /// products and LAPACK always use OpenBLAS.
  std::string blas = "auto";
  /// Which implementation runs float32 2-d convolutions and their input gradients on the CPU:
  /// "auto" (im2col + GEMM or oneDNN's convolution primitives, the faster for each shape, timed
  /// at its first call), "im2col" or "onednn". Other dtypes and the weight gradient use im2col.
  std::string conv = "auto";
  /// The CUDA backend waits for every kernel to finish (like CUDA_LAUNCH_BLOCKING=1), so that a
  /// kernel's error is reported by the node that launched it.
  bool cuda_sync = false;
  /// The CUDA backend records a function's runs of device kernels as CUDA graphs once their
  /// inputs repeat and replays them (one launch instead of one per kernel); False runs every
  /// kernel from the host on every call.
  bool cuda_graphs = true;
  /// How the CUDA backend queues device work: "function" (each function gets a stream of its
  /// own, so that calls of different functions from different threads overlap on the device;
  /// values one function's call writes are waited for by another function's call on the device,
  /// through events) or "one" (one stream for the process: every call's work in the order it
  /// was queued). Read when the CUDA backend first starts.
  std::string cuda_streams = "function";
  /// How the CUDA backend picks cuDNN's algorithm for each convolution shape, per direction
  /// (Theano's dnn.conv.algo_fwd, algo_bwd_data, algo_bwd_filter): "guess_once" (cuDNN's first
  /// heuristic choice) or "time_once" (each candidate timed on the node's first call with that
  /// shape, the fastest kept). The "..._on_shape_change" forms mean the same here: choices are
  /// kept per shape. Float32 always computes in float32 (no TF32).
  std::string dnn_conv_algo_fwd = "guess_once", dnn_conv_algo_bwd_data = "guess_once",
              dnn_conv_algo_bwd_filter = "guess_once";
  /// Whether the CUDA backend's convolutions use cuDNN (Theano's dnn.enabled): "auto" (where
  /// libcudnn loads, else im2col and cuBLAS; "no_check" means the same), "True" (cuDNN or an
  /// error naming why it cannot be loaded) or "False" (always im2col and cuBLAS).
  std::string dnn_enabled = "auto";
  /// Set a key from text ("floatX", "float32"); throws ValueError on an unknown key or bad value.
  void set(std::string_view key, std::string_view value);
  /// Applies "key=value,key=value" (the HYPATIA_FLAGS format). `source` names the text in
  /// messages. Theano options that Hypatia does not have (linker, nvcc.fastmath, ...) are ignored
  /// with a warning; a malformed item, an unknown option or a bad value throws ConfigError naming
  /// the source, the item and the expected form.
  void apply_flags(std::string_view flags, std::string_view source = "HYPATIA_FLAGS");
  /// Applies an rc file's text in Theano's syntax: "key = value" (or "key: value") lines under
  /// [global]; '#' and ';' start comments; other sections ([nvcc], [blas], ...) are ignored with a
  /// warning. Errors as apply_flags, naming the file and the line.
  void apply_rc(std::string_view text, std::string_view source = "~/.hypatiarc");
  /// Reads a key as text.
  std::string get(std::string_view key) const;
};

/// A malformed HYPATIA_FLAGS or ~/.hypatiarc, or a bad value in one (Python: ValueError).
class ConfigError : public ValueError {
 public:
  using ValueError::ValueError;
};

/// The process-wide configuration, initialized from ~/.hypatiarc and HYPATIA_FLAGS on first call
/// (a malformed one throws ConfigError from every call).
Config& config();

/// Whether `key` is an option of Theano 1.0 that Hypatia does not have (it is ignored with a
/// warning instead of failing, so that a Theano user's flags keep working).
bool is_ignored_theano_option(std::string_view key);

/// Receives the warnings of reading the configuration (ignored options and sections). The
/// default prints them to stderr; the Python module turns them into Python warnings.
void set_config_warning_handler(std::function<void(const std::string&)> handler);

}  // namespace hypatia
