// Random graphs over the whole OpInfo table, scan, ifelse, gradients, Rop and shared updates,
// compiled in every mode and compared with the reference backend (graph_fuzz.h). CI runs a bounded
// slice; HYPATIA_FUZZ_GRAPHS=N and HYPATIA_FUZZ_SEED=S run a longer one (RELIABILITY.md records
// the runs). A failure prints its seed: HYPATIA_FUZZ_SEED=<seed> HYPATIA_FUZZ_GRAPHS=1 replays it.
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <map>

#include "graph_fuzz.h"
#include "test_util.h"

namespace hypatia::testing {
namespace {

uint64_t env_or(const char* name, uint64_t fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::strtoull(v, nullptr, 10) : fallback;
}

/// The seed being tried, for a crash report (a fatal signal names it before the process dies).
volatile uint64_t g_current_seed = 0;
extern "C" void report_seed_and_die(int sig) {
  char buf[96] = "\n[graph fuzz] fatal signal on graph seed ";
  size_t n = std::strlen(buf);
  char digits[24];
  int k = 0;
  uint64_t v = g_current_seed;
  do digits[k++] = static_cast<char>('0' + v % 10);
  while ((v /= 10) != 0 && k < 23);
  while (k > 0 && n < sizeof(buf) - 2) buf[n++] = digits[--k];
  buf[n++] = '\n';
  ssize_t ignored = write(2, buf, n);
  (void)ignored;
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}

TEST(GraphFuzz, RandomGraphsOfEveryOpFamilyMatchTheReferenceInEveryMode) {
  if (!kSanitizerBuild) {  // the sanitizers print their own report
    std::signal(SIGSEGV, report_seed_and_die);
    std::signal(SIGABRT, report_seed_and_die);
    std::signal(SIGFPE, report_seed_and_die);
  }
  const uint64_t n = env_or("HYPATIA_FUZZ_GRAPHS", kSanitizerBuild ? 12 : 60);
  const uint64_t first = env_or("HYPATIA_FUZZ_SEED", 1);
  std::map<std::string, int> used;
  int ran = 0, failures = 0;
  long cancelled = 0, graphs_with_cancellations = 0;
  auto t0 = std::chrono::steady_clock::now();
  for (uint64_t seed = first; seed < first + n; ++seed) {
    g_current_seed = seed;
    FuzzSource src(seed);
    FuzzGraph g = build_fuzz_graph(src);
    FuzzResult r = check_fuzz_graph(g);
    if (!r.failure.empty()) {
      ADD_FAILURE() << "graph seed " << seed << ": " << r.failure << "\n" << g.describe();
      if (++failures >= 5) break;
      continue;
    }
    if (r.ran) {
      ++ran;
      cancelled += r.cancelled;
      graphs_with_cancellations += r.cancelled > 0;
      for (const auto& u : g.used) ++used[u];
    }
  }
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::cout << "[graph fuzz] seeds " << first << ".." << first + n - 1 << ": " << ran << " graphs ran, " << failures
            << " failed, " << used.size() << " op kinds used, " << graphs_with_cancellations
            << " with algebraic cancellations (" << cancelled << " elements), " << secs << " s\n";
  if (env_or("HYPATIA_FUZZ_VERBOSE", 0))
    for (const auto& [k, c] : used) std::cout << "  " << k << ": " << c << "\n";
  if (!kSanitizerBuild)
    for (int sig : {SIGSEGV, SIGABRT, SIGFPE}) std::signal(sig, SIG_DFL);
  EXPECT_GT(ran, static_cast<int>(n / 2)) << "most graphs should build and run";
}

TEST(GraphFuzz, ByteSourceIsDeterministicAndTolerant) {
  // The libFuzzer target drives the same builder from arbitrary bytes: short, empty and repeated
  // inputs build a graph (or nothing) without throwing, and the same bytes build the same graph.
  const uint8_t bytes[] = {7, 1, 200, 3, 9, 250, 0, 42, 17, 99, 5, 5, 5, 5, 1, 2, 3, 4, 5, 6};
  for (size_t len : {size_t{0}, size_t{1}, size_t{7}, sizeof(bytes)}) {
    FuzzSource a(bytes, len), b(bytes, len);
    FuzzGraph ga = build_fuzz_graph(a), gb = build_fuzz_graph(b);
    EXPECT_EQ(ga.steps, gb.steps);
    FuzzResult r = check_fuzz_graph(ga);
    EXPECT_EQ(r.failure, "") << ga.describe();
  }
}

}  // namespace
}  // namespace hypatia::testing
