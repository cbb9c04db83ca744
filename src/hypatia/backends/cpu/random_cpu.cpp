// CPU kernel of MRGUniform: the streams split into contiguous ranges across the thread pool; each
// range is turned into six word arrays (structure of arrays) so that one round draws from many
// streams at once in SIMD lanes (cpu/mrg_simd.h), writing that round's outputs contiguously. Each
// stream's draws are its own, so the bits are the reference kernel's whatever the split.
#include <vector>

#include "hypatia/backends/cpu/mrg_simd.h"
#include "hypatia/backends/cpu/thread_pool.h"
#include "hypatia/backends/mrg_generate.h"
#include "hypatia/backends/random_kernels.h"

namespace hypatia {

void register_random_cpu_kernels();

namespace {

/// Draws the elements of streams [s0, s1) (mrg::generate's contract) through SIMD rounds.
template <class T>
void generate_range(int32_t* states, int64_t ns, int64_t s0, int64_t s1, T* out, int64_t n) {
  const int64_t m = s1 - s0;
  thread_local std::vector<int32_t> scratch;
  scratch.resize(static_cast<size_t>(7 * m));
  int32_t* x[6];
  for (int w = 0; w < 6; ++w) x[w] = scratch.data() + w * m;
  int32_t* k = scratch.data() + 6 * m;
  const int32_t* src = states + s0 * 6;
  for (int64_t j = 0; j < m; ++j)
    for (int w = 0; w < 6; ++w) x[w][j] = src[j * 6 + w];
  for (int64_t base = 0; base < n; base += ns) {
    const int64_t count = std::min(s1, n - base) - s0;
    if (count <= 0) break;
    cpu::mrg_round(x, static_cast<size_t>(count), k);
    T* o = out + base + s0;
    for (int64_t j = 0; j < count; ++j) o[j] = mrg::to_unit<T>(k[j]);
  }
  int32_t* dst = states + s0 * 6;
  for (int64_t j = 0; j < m; ++j)
    for (int w = 0; w < 6; ++w) dst[j * 6 + w] = x[w][j];
}

template <class T>
void generate_parallel(int32_t* states, int64_t ns, T* out, int64_t n) {
  // Only streams that draw need their states moved: at most n of them.
  const int64_t active = std::min(ns, n);
  const int64_t work = parallel_work(n, 2);
  const int threads = parallel_worth(work) ? parallel_threads() : 1;
  const int64_t tasks = std::min<int64_t>(active, parallel_task_count(work, threads));
  if (threads <= 1 || tasks <= 1) return generate_range(states, ns, 0, active, out, n);
  parallel_ranges(active, tasks, threads, [&](int64_t s0, int64_t s1) { generate_range(states, ns, s0, s1, out, n); });
}

void mrg_uniform_cpu(const MRGUniform& op, const KernelArgs& args) {
  mrg_uniform_run(op, args, [](int32_t* states, int64_t ns, float* f, double* d, int64_t n) {
    if (f) generate_parallel(states, ns, f, n);
    if (d) generate_parallel(states, ns, d, n);
  });
}

}  // namespace

void register_random_cpu_kernels() { register_simple_kernel<MRGUniform>(kCpuBackend, &mrg_uniform_cpu); }

}  // namespace hypatia
