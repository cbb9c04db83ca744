// CPU kernel of MRGUniform: the streams split into contiguous ranges across the thread pool. Each
// stream's draws are its own, so the bits are the reference kernel's whatever the split.
#include "hypatia/backends/cpu/thread_pool.h"
#include "hypatia/backends/mrg_generate.h"
#include "hypatia/backends/random_kernels.h"

namespace hypatia {

void register_random_cpu_kernels();

namespace {

template <class T>
void generate_parallel(int32_t* states, int64_t ns, T* out, int64_t n) {
  // About 20 integer operations per draw: weigh a draw as 8 additions for the threshold.
  const int64_t work = parallel_work(n, 8);
  const int threads = parallel_worth(work) ? parallel_threads() : 1;
  const int64_t tasks = std::min<int64_t>(ns, parallel_task_count(work, threads));
  if (threads <= 1 || tasks <= 1) return mrg::generate(states, ns, 0, ns, out, n);
  parallel_ranges(ns, tasks, threads, [&](int64_t s0, int64_t s1) { mrg::generate(states, ns, s0, s1, out, n); });
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
