// The random-graph fuzzer over the OpInfo table: graphs composed of every op family the table
// covers (elementwise, BLAS, convolutions, pooling, linear algebra, softmax family, random ops,
// reductions, shapes, subtensors, sorting, ifelse) plus scan loops, gradients, Rop and shared
// updates, compiled in DebugMode, FAST_RUN, FAST_COMPILE and NONE and compared with the reference
// backend running the graph as written. Driven by a byte source, so that the same generator serves
// the seeded GoogleTest (test_graph_fuzz.cpp) and the libFuzzer target (tests/fuzz/fuzz_graph.cpp).
#pragma once
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "hypatia/hypatia.h"

namespace hypatia::testing {

/// Where the generator's decisions come from: a seeded generator, or a fuzzer's bytes (read until
/// they run out, then zeros).
class FuzzSource {
 public:
  explicit FuzzSource(uint64_t seed) : rng_(seed), seeded_(true) {}
  FuzzSource(const uint8_t* data, size_t size) : data_(data), size_(size), seeded_(false) {}
  /// A number in [0, n) (n > 0).
  uint32_t pick(uint32_t n);
  /// True with probability percent / 100.
  bool chance(uint32_t percent) { return pick(100) < percent; }

 private:
  std::mt19937_64 rng_;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0, pos_ = 0;
  bool seeded_;
};

/// One random graph: its free inputs with their values, shared variables with their initial
/// values, outputs and updates, and a line per construction step (for failure reports).
struct FuzzGraph {
  std::vector<Var> inputs;
  std::vector<NDArray> values;
  std::vector<std::pair<Var, NDArray>> shared;
  std::vector<Var> outputs;
  Updates updates;
  std::vector<std::string> steps;
  /// The OpInfo entries and extra kinds (scan, ifelse, grad, rop, update) the graph used.
  std::vector<std::string> used;
  /// Loosest tolerances of the ops the graph uses (0: the dtype's default).
  double rtol = 0, atol = 0;
  std::string describe() const;
};

/// What happened to one graph.
struct FuzzResult {
  /// Built, compiled in every mode and matched the reference.
  bool ran = false;
  /// Empty when nothing is wrong; else what was wrong (the mode, the output, the first mismatch or
  /// the exception).
  std::string failure;
  /// Elements where the reference gave NaN or infinity and a rewritten graph a finite value (an
  /// algebraic cancellation; never accepted without rewrites).
  long cancelled = 0;
};

/// Builds a graph of 1 to `max_steps` construction steps from `src`.
FuzzGraph build_fuzz_graph(FuzzSource& src, int max_steps = 5);
/// Compiles `g` in every mode and compares each result, and each updated shared value, with the
/// reference backend; also checks that no argument was written and that a second call gives the
/// same results.
FuzzResult check_fuzz_graph(const FuzzGraph& g);

}  // namespace hypatia::testing
