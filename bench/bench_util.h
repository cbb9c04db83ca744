// Shared main for the benchmark programs: runs the registered benchmarks, then prints each
// (benchmark, baseline) pair's time ratio, both measured in the same run.
#pragma once
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "hypatia/hypatia.h"

namespace hypatia::bench {

/// Console output as usual, plus the best real time per iteration (ns) of every benchmark by name,
/// over repetitions (the minimum is the least disturbed by other load on the machine).
class RecordingReporter : public benchmark::ConsoleReporter {
 public:
  std::map<std::string, double> ns_per_iter;
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& r : runs) {
      if (r.run_type != Run::RT_Iteration || r.iterations == 0) continue;
      const double ns = r.GetAdjustedRealTime() * 1e9 / benchmark::GetTimeUnitMultiplier(r.time_unit);
      auto [it, fresh] = ns_per_iter.emplace(r.benchmark_name(), ns);
      if (!fresh) it->second = std::min(it->second, ns);
    }
    ConsoleReporter::ReportRuns(runs);
  }
};

/// One line of the ratio table: `name` against `baseline` (ratio = time / baseline time), or
/// against a fixed target in ns when baseline is empty.
struct Ratio {
  std::string name;
  std::string baseline;
  double target_ns = 0;
};

/// Uniform random float32 array in [lo, hi).
inline NDArray random_f32(const Shape& shape, float lo, float hi, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(lo, hi);
  NDArray a = NDArray::empty(shape, DType::Float32);
  float* p = a.data<float>();
  for (int64_t i = 0; i < a.size(); ++i) p[i] = u(rng);
  return a;
}

/// A time in ns as text with a readable unit ("812 ns", "10.4 ms").
inline std::string format_ns(double ns) {
  char buf[32];
  if (ns < 1e3)
    std::snprintf(buf, sizeof buf, "%.0f ns", ns);
  else if (ns < 1e6)
    std::snprintf(buf, sizeof buf, "%.1f us", ns / 1e3);
  else
    std::snprintf(buf, sizeof buf, "%.2f ms", ns / 1e6);
  return buf;
}

/// Runs the benchmarks (honouring --benchmark_* flags) and prints the ratio table.
inline int run_with_ratios(int argc, char** argv, const std::vector<Ratio>& ratios) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  RecordingReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  std::printf("\n%-44s %-30s %12s %12s %8s\n", "benchmark", "baseline", "time", "baseline", "ratio");
  for (const Ratio& r : ratios) {
    auto it = reporter.ns_per_iter.find(r.name);
    if (it == reporter.ns_per_iter.end()) continue;
    double base = r.target_ns;
    std::string base_name = "target";
    if (!r.baseline.empty()) {
      auto b = reporter.ns_per_iter.find(r.baseline);
      if (b == reporter.ns_per_iter.end()) continue;
      base = b->second;
      base_name = r.baseline;
    }
    std::printf("%-44s %-30s %12s %12s %8.3f%s\n", r.name.c_str(), base_name.c_str(), format_ns(it->second).c_str(),
                format_ns(base).c_str(), it->second / base,
                r.baseline.empty() ? (it->second <= base ? "  (target met)" : "  (target missed)") : "");
  }
  return 0;
}

}  // namespace hypatia::bench
