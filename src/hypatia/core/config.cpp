#include "hypatia/core/config.h"

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <sstream>

#include "hypatia/core/device.h"
#include "hypatia/core/error.h"
#include "hypatia/core/messages.h"

namespace hypatia {
namespace {
std::string trim(std::string_view s) {
  size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string_view::npos) return "";
  size_t e = s.find_last_not_of(" \t\r\n");
  return std::string(s.substr(b, e - b + 1));
}

bool parse_bool(std::string_view key, std::string_view v) {
  if (v == "1" || v == "True" || v == "true") return true;
  if (v == "0" || v == "False" || v == "false") return false;
  fail<ValueError>("config: ", key, " must be True or False, got '", v, "'");
}

void expect_one_of(std::string_view key, std::string_view v, std::initializer_list<std::string_view> options) {
  for (auto o : options)
    if (o == v) return;
  std::string all;
  for (auto o : options) all += std::string(all.empty() ? "" : ", ") + std::string(o);
  fail<ValueError>("config: ", key, " must be one of ", all, "; got '", v, "'");
}

long parse_long(std::string_view key, std::string_view v) {
  try {
    size_t pos = 0;
    long r = std::stol(std::string(v), &pos);
    if (pos == v.size()) return r;
  } catch (const std::exception&) {
  }
  fail<ValueError>("config: ", key, " must be an integer, got '", v, "'");
}
}  // namespace

void Config::set(std::string_view key, std::string_view value) {
  std::string v = trim(value);
  if (key == "floatX") {
    expect_one_of(key, v, {"float32", "float64", "float16"});
    floatX = dtype_from_name(v);
  } else if (key == "device") {
    if (!Device::is_name(v))
      fail<ValueError>("config: device must be cpu, cuda, cudaN or cuda:N (or Theano's gpu, gpuN), got '", v, "'");
    device = v;
  } else if (key == "mode") {
    expect_one_of(key, v, {"FAST_RUN", "FAST_COMPILE", "NONE", "DebugMode", "DEBUG_MODE", "ProfileMode"});
    mode = v;
  } else if (key == "optimizer") {
    expect_one_of(key, v, {"fast_run", "fast_compile", "None", "o1", "o2", "o3", "o4", "merge"});
    optimizer = v;
  } else if (key == "allow_gc") {
    allow_gc = parse_bool(key, v);
  } else if (key == "profile") {
    profile = parse_bool(key, v);
  } else if (key == "exception_verbosity") {
    expect_one_of(key, v, {"low", "high"});
    exception_verbosity = v;
  } else if (key == "compute_test_value") {
    expect_one_of(key, v, {"off", "ignore", "warn", "raise", "pdb"});
    compute_test_value = v;
  } else if (key == "openmp_elemwise_minsize") {
    openmp_elemwise_minsize = parse_long(key, v);
  } else if (key == "num_threads") {
    num_threads = static_cast<int>(parse_long(key, v));
  } else if (key == "print_rewrites") {
    print_rewrites = parse_bool(key, v);
  } else if (key == "debug_checks") {
    debug_checks = parse_bool(key, v);
  } else if (key == "optimizer_including") {
    optimizer_including = v;
  } else if (key == "optimizer_excluding") {
    optimizer_excluding = v;
  } else if (key == "blas") {
    expect_one_of(key, v, {"auto", "onednn", "openblas"});
    blas = v;
  } else if (key == "conv") {
    expect_one_of(key, v, {"auto", "im2col", "onednn"});
    conv = v;
  } else if (key == "cuda_sync") {
    cuda_sync = parse_bool(key, v);
  } else if (key == "cuda_graphs") {
    cuda_graphs = parse_bool(key, v);
  } else if (key == "cuda_streams") {
    expect_one_of(key, v, {"function", "one"});
    cuda_streams = v;
  } else if (key == "dnn.conv.algo_fwd" || key == "dnn.conv.algo_bwd_data" || key == "dnn.conv.algo_bwd_filter") {
    // Theano's fixed algorithms (small, none, large, fft, winograd, ...) are not offered: cuDNN's
    // own choice or the timed one is always at least as fast where it applies.
    expect_one_of(key, v, {"guess_once", "guess_on_shape_change", "time_once", "time_on_shape_change"});
    (key == "dnn.conv.algo_fwd"        ? dnn_conv_algo_fwd
     : key == "dnn.conv.algo_bwd_data" ? dnn_conv_algo_bwd_data
                                       : dnn_conv_algo_bwd_filter) = v;
  } else if (key == "dnn.enabled") {
    expect_one_of(key, v, {"auto", "True", "False", "no_check"});
    dnn_enabled = v;
  } else {
    fail<ValueError>(
        "config: unknown option '", key, "' (options: floatX, device, mode, optimizer, allow_gc, ",
        "profile, exception_verbosity, compute_test_value, openmp_elemwise_minsize, num_threads, ",
        "print_rewrites, debug_checks, optimizer_including, optimizer_excluding, blas, conv, cuda_sync, ",
        "cuda_graphs, cuda_streams, dnn.enabled, dnn.conv.algo_fwd, dnn.conv.algo_bwd_data, dnn.conv.algo_bwd_filter)");
  }
}

std::string Config::get(std::string_view key) const {
  if (key == "floatX") return std::string(dtype_name(floatX));
  if (key == "device") return device;
  if (key == "mode") return mode;
  if (key == "optimizer") return optimizer;
  if (key == "allow_gc") return allow_gc ? "True" : "False";
  if (key == "profile") return profile ? "True" : "False";
  if (key == "exception_verbosity") return exception_verbosity;
  if (key == "compute_test_value") return compute_test_value;
  if (key == "openmp_elemwise_minsize") return std::to_string(openmp_elemwise_minsize);
  if (key == "num_threads") return std::to_string(num_threads);
  if (key == "print_rewrites") return print_rewrites ? "True" : "False";
  if (key == "debug_checks") return debug_checks ? "True" : "False";
  if (key == "optimizer_including") return optimizer_including;
  if (key == "optimizer_excluding") return optimizer_excluding;
  if (key == "blas") return blas;
  if (key == "conv") return conv;
  if (key == "cuda_sync") return cuda_sync ? "True" : "False";
  if (key == "cuda_graphs") return cuda_graphs ? "True" : "False";
  if (key == "cuda_streams") return cuda_streams;
  if (key == "dnn.enabled") return dnn_enabled;
  if (key == "dnn.conv.algo_fwd") return dnn_conv_algo_fwd;
  if (key == "dnn.conv.algo_bwd_data") return dnn_conv_algo_bwd_data;
  if (key == "dnn.conv.algo_bwd_filter") return dnn_conv_algo_bwd_filter;
  fail<ValueError>("config: unknown option '", key, "'");
}

namespace {

std::function<void(const std::string&)>& warning_handler() {
  static std::function<void(const std::string&)> h = [](const std::string& msg) { warn(msg); };
  return h;
}

/// Sets key from one item of `source`; ignores Theano-only options with a warning; rethrows any
/// other error as a ConfigError that names the source and the item.
void set_from(Config& c, const std::string& key, const std::string& value, const std::string& where) {
  if (is_ignored_theano_option(key)) {
    warning_handler()(where + ": Theano's option '" + key + "' has no effect in Hypatia and is ignored");
    return;
  }
  try {
    c.set(key, value);
  } catch (const ValueError& e) {
    std::string msg = e.what();
    if (msg.rfind("config: ", 0) == 0) msg = msg.substr(8);
    fail<ConfigError>(where, ": ", msg);
  }
}

}  // namespace

bool is_ignored_theano_option(std::string_view key) {
  if (key == "dnn.enabled" || key == "dnn.conv.algo_fwd" || key == "dnn.conv.algo_bwd_data" ||
      key == "dnn.conv.algo_bwd_filter")
    return false;  // (honoured: Config::dnn_enabled, dnn_conv_algo_*)
  static const char* const kTopLevel[] = {"warn_float64",
                                          "cast_policy",
                                          "deterministic",
                                          "int_division",
                                          "cxx",
                                          "linker",
                                          "optimizer_verbose",
                                          "on_opt_error",
                                          "nocleanup",
                                          "on_unused_input",
                                          "openmp",
                                          "check_input",
                                          "cache_optimizations",
                                          "compute_test_value_opt",
                                          "print_test_value",
                                          "unpickle_function",
                                          "reoptimize_unpickled_function",
                                          "check_stack_trace",
                                          "profile_optimizer",
                                          "profile_memory",
                                          "base_compiledir",
                                          "compiledir_format",
                                          "compiledir",
                                          "assert_no_cpu_op",
                                          "init_gpu_device",
                                          "force_device",
                                          "print_active_device",
                                          "pickle_test_value",
                                          "optimizer_requiring",
                                          "allow_output_prealloc",
                                          "experimental",
                                          "lib",
                                          "warn"};
  static const char* const kSections[] = {"gpuarray",     "lib",          "cuda",
                                          "dnn",          "magma",        "nvcc",
                                          "gcc",          "blas",         "scan",
                                          "compile",      "tensor",       "warn",
                                          "experimental", "numpy",        "profiling",
                                          "metaopt",      "optdb",        "cmodule",
                                          "DebugMode",    "NanGuardMode", "vm",
                                          "ctc",          "pycuda",       "unittests",
                                          "gpuelemwise",  "traceback",    "cycle_detection",
                                          "sparse",       "gpu",          "conv"};
  for (const char* k : kTopLevel)
    if (key == k) return true;
  const size_t dot = key.find('.');
  if (dot == std::string_view::npos) return false;
  for (const char* k : kSections)
    if (key.substr(0, dot) == k) return true;
  return false;
}

void set_config_warning_handler(std::function<void(const std::string&)> handler) {
  if (!handler) handler = [](const std::string& msg) { warn(msg); };
  warning_handler() = std::move(handler);
}

void Config::apply_flags(std::string_view flags, std::string_view source) {
  const std::string where = std::string(source) + "='" + std::string(flags) + "'";
  size_t pos = 0;
  while (pos <= flags.size()) {
    size_t end = flags.find(',', pos);
    if (end == std::string_view::npos) end = flags.size();
    std::string item = trim(flags.substr(pos, end - pos));
    if (!item.empty()) {
      size_t eq = item.find('=');
      if (eq == std::string::npos || trim(item.substr(0, eq)).empty())
        fail<ConfigError>(where, ": the item '", item,
                          "' is not of the form key=value (expected comma-separated key=value items, e.g. ", source,
                          "=floatX=float32,mode=FAST_RUN)");
      set_from(*this, trim(item.substr(0, eq)), trim(item.substr(eq + 1)), where);
    }
    pos = end + 1;
  }
}

void Config::apply_rc(std::string_view text, std::string_view source) {
  std::istringstream in{std::string(text)};
  std::string line, section = "global";
  int lineno = 0;
  std::string ignored_section;
  while (std::getline(in, line)) {
    ++lineno;
    const std::string where = std::string(source) + " line " + std::to_string(lineno);
    std::string t = trim(line);
    if (t.empty() || t.front() == '#' || t.front() == ';') continue;
    // Inline comments: " #" or " ;" after a value.
    for (const char* c : {" #", "\t#", " ;", "\t;"})
      if (size_t k = t.find(c); k != std::string::npos) t = trim(t.substr(0, k));
    if (t.front() == '[') {
      if (t.back() != ']') fail<ConfigError>(where, ": expected a section header like [global], got '", t, "'");
      section = trim(t.substr(1, t.size() - 2));
      if (section != "global" && section != "dnn" && section != "dnn.conv")
        warning_handler()(where + ": section [" + section +
                          "] is ignored (Hypatia reads options from [global], [dnn]'s enabled and [dnn.conv]'s "
                          "algo_* options)");
      continue;
    }
    size_t eq = t.find_first_of("=:");
    if (eq == std::string::npos || trim(t.substr(0, eq)).empty())
      fail<ConfigError>(where, ": expected 'key = value' (Theano's rc syntax: a [global] section of key = value ",
                        "lines; # and ; start comments), got '", t, "'");
    if (section == "dnn" || section == "dnn.conv")
      set_from(*this, section + "." + trim(t.substr(0, eq)), trim(t.substr(eq + 1)), where);
    else if (section == "global")
      set_from(*this, trim(t.substr(0, eq)), trim(t.substr(eq + 1)), where);
  }
}

Config& config() {
  static Config* cfg = [] {
    auto c = std::make_unique<Config>();
    if (const char* home = std::getenv("HOME")) {
      const std::string path = std::string(home) + "/.hypatiarc";
      std::ifstream f(path);
      if (f) {
        std::stringstream ss;
        ss << f.rdbuf();
        c->apply_rc(ss.str(), path);
      }
    }
    if (const char* flags = std::getenv("HYPATIA_FLAGS")) c->apply_flags(flags);
    return c.release();
  }();
  return *cfg;
}

}  // namespace hypatia
