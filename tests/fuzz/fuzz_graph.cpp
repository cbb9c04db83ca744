// libFuzzer target: the graph fuzzer (tests/cpp/graph_fuzz.h) driven by the fuzzer's bytes. Every
// input builds a graph from the OpInfo table (whose entries live in the C++ test files, linked in)
// plus scan, ifelse, gradients, Rop and shared updates; the graph is compiled in every mode and
// compared with the reference backend. A mismatch or an exception where the reference ran aborts
// (a finding); a crash is one by itself. Built by `make fuzz` (clang, -fsanitize=fuzzer,address,
// undefined on the whole library).
#include <cstdio>
#include <cstdlib>

#include "graph_fuzz.h"
#include "hypatia/core/config.h"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  hypatia::config().debug_checks = true;  // DebugMode's checks on every function, as in the tests
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  hypatia::testing::FuzzSource src(data, size);
  hypatia::testing::FuzzGraph g = hypatia::testing::build_fuzz_graph(src);
  hypatia::testing::FuzzResult r = hypatia::testing::check_fuzz_graph(g);
  if (!r.failure.empty()) {
    std::fprintf(stderr, "graph fuzz failure: %s\n%s\n", r.failure.c_str(), g.describe().c_str());
    std::abort();
  }
  return 0;
}
