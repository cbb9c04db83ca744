// Hypatia's own thread pool, which every parallel CPU kernel (and the chunked BLAS calls) runs on.
//
// Built to tolerate a busy machine, where a thread of ours may be descheduled for milliseconds:
// - the calling thread takes part: a parallel loop is a number of tasks claimed one at a time
//   from an atomic counter by the caller and by whichever workers come; the caller waits only for
//   tasks that a worker has claimed and not finished, never for a worker to show up (a preempted
//   worker that has not started costs nothing: the caller runs its share);
// - workers spin a short bounded time after their last task (so the next kernel of the same call
//   finds them awake), then sleep on a condition variable;
// - one fork/join per kernel; below a size threshold (parallel_worth) the caller runs alone;
// - when a job's wait for a descheduled helper outlasted what the helpers saved (more runnable
//   threads than cores), the next 2..64 jobs run on the caller alone, then it tries again;
// - several user threads may run parallel loops at once: each loop is its own job, workers help
//   whichever job has tasks left; a parallel loop started inside a task runs serially.
// OpenMP's teams (libgomp) instead wait at every region's end for every member to arrive, and
// spin-wait between regions; BENCHMARKS.md (issue 9) has the measurements behind the choice.
#pragma once
#include <algorithm>
#include <cstdint>
#include <limits>
#include <utility>

namespace hypatia {

/// Threads a parallel kernel may use: config().num_threads, or (0) the CPUs this process may run
/// on (its affinity mask, read once).
int parallel_threads();

/// Whether a kernel over `elements` elements is worth splitting across threads:
/// at least config().openmp_elemwise_minsize elements and more than one thread allowed.
bool parallel_worth(int64_t elements);

namespace pool_detail {
using TaskFn = void (*)(const void* ctx, int64_t task);
/// Runs fn(ctx, i) for every i in [0, tasks) on up to `threads` threads (the caller included).
void run(int64_t tasks, int threads, TaskFn fn, const void* ctx);
}  // namespace pool_detail

/// Runs body(i) for every task i in [0, tasks) on up to `threads` threads, the calling thread
/// included, and returns when all are done. Tasks are claimed dynamically one at a time, in
/// increasing order, so make each a fair share of work (a few per thread).
///
/// Cancellation: the caller's cancel flag (core/cancel.h) is read once; once it is set, tasks not
/// yet claimed are skipped (body is not called for them) and the call returns normally: the caller
/// decides what a cancelled kernel means. An exception thrown by body stops handing out tasks too;
/// the first one is rethrown on the calling thread after every running task has finished.
/// Called from inside a task (nested), with threads <= 1 or a single task, or while the pool backs
/// off after jobs that lost to a descheduled helper, it runs the tasks on the calling thread in
/// order.
template <class Body>
void parallel_for(int64_t tasks, int threads, const Body& body) {
  if (tasks <= 0) return;
  pool_detail::run(
      tasks, threads, [](const void* ctx, int64_t i) { (*static_cast<const Body*>(ctx))(i); }, &body);
}

/// How many tasks to cut `total` elements into for `threads` threads: a multiple of the thread
/// count (3 tasks on 2 threads leave one thread running two: a third longer than halves), 1 to 8
/// per thread, about 64K elements or more each (a claim costs well under 1% of that). Several per
/// thread let a thread slowed by other load take fewer; the caller waits at most for the tasks
/// others hold.
/// total elements of `cost` add-elements each (scalar_op_cost), saturating: the work that
/// parallel_worth and parallel_task_count weigh.
inline int64_t parallel_work(int64_t total, int64_t cost) {
  if (cost <= 1) return total;
  return total > std::numeric_limits<int64_t>::max() / cost ? std::numeric_limits<int64_t>::max() : total * cost;
}

inline int64_t parallel_task_count(int64_t total, int threads) {
  if (threads <= 1) return 1;
  return int64_t{threads} * std::clamp<int64_t>(total / (int64_t{threads} << 16), 1, 8);
}

/// The t-th of `tasks` contiguous ranges of nearly equal length that cut [0, n): {begin, end}.
inline std::pair<int64_t, int64_t> task_range(int64_t n, int64_t tasks, int64_t t) {
  const int64_t q = n / tasks, r = n % tasks;
  const int64_t begin = t * q + std::min(t, r);
  return {begin, begin + q + (t < r ? 1 : 0)};
}

/// Cuts [0, n) into min(n, tasks) ranges (task_range) and runs body(begin, end) for each, as
/// parallel_for does.
template <class Body>
void parallel_ranges(int64_t n, int64_t tasks, int threads, const Body& body) {
  tasks = std::min(tasks, n);
  if (tasks <= 0) return;
  parallel_for(tasks, threads, [&](int64_t t) {
    const auto [begin, end] = task_range(n, tasks, t);
    body(begin, end);
  });
}

/// Number of worker threads the pool has started so far (for tests).
int thread_pool_workers();

/// Forgets the back-off after losing jobs, so that the next parallel_for uses its helpers (for
/// tests).
void thread_pool_reset_backoff();

}  // namespace hypatia
