#include "hypatia/core/config.h"

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "hypatia/core/error.h"

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
    expect_one_of(key, v, {"float32", "float64"});
    floatX = dtype_from_name(v);
  } else if (key == "device") {
    if (v != "cpu" && v.rfind("cuda", 0) != 0 && v.rfind("gpu", 0) != 0)
      fail<ValueError>("config: device must be cpu or cuda[N], got '", v, "'");
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
  } else {
    fail<ValueError>("config: unknown option '", key, "'");
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
  fail<ValueError>("config: unknown option '", key, "'");
}

void Config::apply_flags(std::string_view flags) {
  size_t pos = 0;
  while (pos <= flags.size()) {
    size_t end = flags.find(',', pos);
    if (end == std::string_view::npos) end = flags.size();
    std::string item = trim(flags.substr(pos, end - pos));
    if (!item.empty()) {
      size_t eq = item.find('=');
      if (eq == std::string::npos) fail<ValueError>("HYPATIA_FLAGS: expected key=value, got '", item, "'");
      set(trim(item.substr(0, eq)), trim(item.substr(eq + 1)));
    }
    pos = end + 1;
  }
}

void Config::apply_rc(std::string_view text) {
  std::istringstream in{std::string(text)};
  std::string line, section = "global";
  while (std::getline(in, line)) {
    std::string t = trim(line.substr(0, line.find('#')));
    if (t.empty()) continue;
    if (t.front() == '[' && t.back() == ']') {
      section = trim(t.substr(1, t.size() - 2));
      continue;
    }
    size_t eq = t.find('=');
    if (eq == std::string::npos) fail<ValueError>("~/.hypatiarc: expected 'key = value', got '", t, "'");
    std::string key = trim(t.substr(0, eq));
    if (section != "global") key = section + "." + key;
    set(key, trim(t.substr(eq + 1)));
  }
}

Config& config() {
  static Config* cfg = [] {
    auto* c = new Config();
    if (const char* home = std::getenv("HOME")) {
      std::ifstream f(std::string(home) + "/.hypatiarc");
      if (f) {
        std::stringstream ss;
        ss << f.rdbuf();
        c->apply_rc(ss.str());
      }
    }
    if (const char* flags = std::getenv("HYPATIA_FLAGS")) c->apply_flags(flags);
    return c;
  }();
  return *cfg;
}

}  // namespace hypatia
