// Profile::summary: Theano's profile tables (per Op class, per Op, per Apply) from the timings the
// Program collects (runtime/program.cpp).
#include "hypatia/runtime/profile.h"

#include <algorithm>
#include <iomanip>
#include <map>
#include <sstream>
#include <utility>

namespace hypatia {

std::string Profile::summary() const {
  std::ostringstream os;
  double total = 0;
  for (const auto& n : nodes) total += n.seconds;
  auto pct = [&](double s) { return total > 0 ? 100.0 * s / total : 0.0; };
  os << "Function profiling\n==================\n  Message: " << (function_name.empty() ? "<unnamed>" : function_name)
     << "\n  Time in " << calls << " calls to Function.__call__: " << std::scientific << std::setprecision(6)
     << call_seconds << "s\n  Time in Function.fn.__call__ (thunks): " << total << "s";
  if (call_seconds > 0) os << " (" << std::fixed << std::setprecision(3) << 100.0 * total / call_seconds << "%)";
  os << "\n  Total compile time: " << std::scientific << compile_seconds << "s\n\n";
  auto table = [&](const char* title, const char* key_name, auto key_of) {
    std::map<std::string, std::pair<double, long>> agg;
    std::map<std::string, long> napply;
    for (const auto& n : nodes) {
      auto& a = agg[key_of(n)];
      a.first += n.seconds;
      a.second += n.calls;
      ++napply[key_of(n)];
    }
    std::vector<std::pair<std::string, std::pair<double, long>>> rows(agg.begin(), agg.end());
    std::sort(rows.begin(), rows.end(), [](auto& a, auto& b) { return a.second.first > b.second.first; });
    os << title << "\n---\n<% time> <sum %> <apply time> <time per call> <#call> <#apply> <" << key_name << ">\n";
    double cum = 0;
    for (const auto& [k, v] : rows) {
      cum += pct(v.first);
      os << std::fixed << std::setprecision(1) << std::setw(7) << pct(v.first) << "%  " << std::setw(6) << cum << "%  "
         << std::scientific << std::setprecision(3) << v.first << "s  " << (v.second ? v.first / v.second : 0.0)
         << "s  " << std::setw(6) << v.second << "  " << std::setw(4) << napply[k] << "  " << k << "\n";
    }
    os << "\n";
  };
  table("Class", "Class name", [](const NodeStats& n) { return n.op_class; });
  table("Ops", "Op name", [](const NodeStats& n) { return n.op_name; });
  os << "Apply\n------\n<% time> <sum %> <apply time> <time per call> <#call> <id> <Apply name>\n";
  std::vector<size_t> idx(nodes.size());
  for (size_t i = 0; i < idx.size(); ++i) idx[i] = i;
  std::sort(idx.begin(), idx.end(), [&](size_t a, size_t b) { return nodes[a].seconds > nodes[b].seconds; });
  double cum = 0;
  for (size_t i : idx) {
    const auto& n = nodes[i];
    cum += pct(n.seconds);
    os << std::fixed << std::setprecision(1) << std::setw(7) << pct(n.seconds) << "%  " << std::setw(6) << cum << "%  "
       << std::scientific << std::setprecision(3) << n.seconds << "s  " << (n.calls ? n.seconds / n.calls : 0.0)
       << "s  " << std::setw(6) << n.calls << "  " << std::setw(3) << i << "  " << n.apply_str << "\n";
  }
  if (!nodes.empty()) {
    auto kb = [](int64_t b) {
      std::ostringstream k;
      k << std::fixed << std::setprecision(1) << static_cast<double>(b) / 1024 << "KB";
      return k.str();
    };
    os << "\nMemory profile\n---\n    Max peak memory with current setting (allow_gc=" << (allow_gc ? "True" : "False")
       << ")\n        CPU: " << kb(peak_bytes)
       << "\n    Max peak memory if allow_gc=False\n        CPU: " << kb(peak_bytes_no_gc)
       << "\n    (inputs and shared variables not counted; views and in-place outputs take "
       << "no memory)\n\n    <Sum apply outputs (bytes)> <Apply outputs shape> <Apply node>\n";
    std::vector<size_t> by_mem(nodes.size());
    for (size_t i = 0; i < by_mem.size(); ++i) by_mem[i] = i;
    std::stable_sort(by_mem.begin(), by_mem.end(),
                     [&](size_t a, size_t b) { return nodes[a].output_bytes > nodes[b].output_bytes; });
    int shown = 0;
    for (size_t i : by_mem) {
      if (nodes[i].output_bytes == 0 || shown++ == 10) break;
      os << "     " << std::setw(12) << nodes[i].output_bytes << "B  " << nodes[i].output_shapes << "  "
         << nodes[i].apply_str << "\n";
    }
  }
  if (!compile_phases.empty()) {
    double rewrite = 0;
    for (const auto& [name, s] : compile_phases) rewrite += s;
    os << "\nCompile time per rewrite phase (" << std::scientific << std::setprecision(3) << rewrite << "s of "
       << compile_seconds << "s)\n---------------------------------\n";
    for (const auto& [name, s] : compile_phases)
      os << std::scientific << std::setprecision(3) << "  " << s << "s  " << name << "\n";
  }
  return os.str();
}

}  // namespace hypatia
