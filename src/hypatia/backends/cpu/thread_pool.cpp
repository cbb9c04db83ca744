#include "hypatia/backends/cpu/thread_pool.h"

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#include "hypatia/core/cancel.h"
#include "hypatia/core/config.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace hypatia {
namespace {

/// How long an idle worker keeps polling for a new job before it sleeps. On a machine where the
/// helpers keep up (no lost job lately) long enough to bridge the serial work between two parallel
/// kernels of a call (an MLP step's elementwise nodes between its GEMMs: 50-200 us; waking a
/// sleeping worker costs tens of microseconds each time); once jobs are lost to descheduled
/// helpers (an overloaded machine) short, so that a worker never holds a core that another
/// process wants for long (BENCHMARKS.md, issue 9). libgomp's default spins about a millisecond.
constexpr auto kWorkerSpinQuiet = std::chrono::microseconds(500);
constexpr auto kWorkerSpinBusy = std::chrono::microseconds(20);
/// How long the caller polls for the tasks that workers are still running before it sleeps.
constexpr auto kCallerSpin = std::chrono::microseconds(50);
/// Upper bound on the worker threads (num_threads may ask for more threads than cores).
constexpr int kMaxWorkers = 255;

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#else
  std::this_thread::yield();
#endif
}

/// Polls done() until it holds or `limit` has passed; returns done().
template <class Done>
bool spin_until(const Done& done, std::chrono::microseconds limit) {
  const auto end = std::chrono::steady_clock::now() + limit;
  for (;;) {
    for (int i = 0; i < 64; ++i) {
      if (done()) return true;
      cpu_relax();
    }
    if (std::chrono::steady_clock::now() >= end) return done();
  }
}

/// One parallel loop. Lives on the heap, shared by the caller and the workers that joined it
/// (refs): a worker that joined and was then descheduled may touch the counters after the caller
/// has returned.
struct Job {
  pool_detail::TaskFn fn;
  const void* ctx;
  int64_t tasks;
  const std::atomic<bool>* cancel;
  int max_helpers;
  int helpers = 0;  // workers that joined (guarded by the pool's mutex)
  std::atomic<int64_t> next{0};
  std::atomic<int64_t> left;  // tasks neither finished nor skipped
  std::atomic<int> refs{1};
  std::atomic<bool> failed{false};
  std::exception_ptr error;  // written once, by the thread that set `failed`
  std::mutex m;              // with cv: the caller sleeping until left == 0
  std::condition_variable cv;

  Job(pool_detail::TaskFn f, const void* c, int64_t n, const std::atomic<bool>* cf, int helpers_wanted)
      : fn(f), ctx(c), tasks(n), cancel(cf), max_helpers(helpers_wanted), left(n) {}

  bool stopping() const {
    return failed.load(std::memory_order_relaxed) || (cancel != nullptr && cancel->load(std::memory_order_relaxed));
  }

  bool has_tasks() const { return next.load(std::memory_order_relaxed) < tasks; }

  /// The caller's own share of a job, timed (to judge whether the job gained from its helpers).
  struct OwnShare {
    int64_t tasks = 0;
    std::chrono::steady_clock::duration busy{};
  };

  /// Claims and runs tasks until none is left; returns whether this thread finished the job.
  /// With `own`, times each task (the caller).
  bool work(OwnShare* own = nullptr) {
    int64_t done = 0;
    for (;;) {
      const int64_t i = next.fetch_add(1, std::memory_order_relaxed);
      if (i >= tasks) break;
      // Checked only while holding task i: until it is counted done the caller cannot return,
      // so its cancel flag is still alive (a worker that joined late may claim after the caller
      // left, and then finds no task).
      if (stopping()) {
        // Skip task i and every task nobody has claimed: claims after the exchange find none.
        const int64_t rest = next.exchange(tasks, std::memory_order_relaxed);
        done += 1 + (rest < tasks ? tasks - rest : 0);
        break;
      }
      try {
        if (own != nullptr) {
          const auto t0 = std::chrono::steady_clock::now();
          fn(ctx, i);
          own->busy += std::chrono::steady_clock::now() - t0;
          ++own->tasks;
        } else {
          fn(ctx, i);
        }
      } catch (...) {
        if (!failed.exchange(true, std::memory_order_relaxed)) error = std::current_exception();
      }
      ++done;
    }
    // Release: this thread's task results (and `error`) are visible to whoever sees left == 0.
    return done > 0 && left.fetch_sub(done, std::memory_order_acq_rel) == done;
  }

  void release() {
    if (refs.fetch_sub(1, std::memory_order_acq_rel) == 1) delete this;
  }
};

/// Consecutive jobs lost to descheduled helpers (the back-off below).
std::atomic<int> g_loss_streak{0};

std::chrono::microseconds worker_spin() {
  return g_loss_streak.load(std::memory_order_relaxed) == 0 ? kWorkerSpinQuiet : kWorkerSpinBusy;
}

/// Set on pool threads and while a thread runs tasks: a parallel loop started there runs serially.
thread_local bool t_in_parallel = false;

class Pool {
 public:
  /// Makes sure at least n workers exist.
  void grow(int n) {
    n = std::min(n, kMaxWorkers);
    if (started_.load(std::memory_order_acquire) >= n) return;
    std::lock_guard<std::mutex> lk(mu_);
    while (static_cast<int>(workers_) < n) {
      std::thread([this] { worker(); }).detach();
      ++workers_;
    }
    started_.store(static_cast<int>(workers_), std::memory_order_release);
  }

  int workers() const { return started_.load(std::memory_order_acquire); }

  void post(Job* j) {
    std::lock_guard<std::mutex> lk(mu_);
    jobs_.push_back(j);
    epoch_.store(epoch_.load(std::memory_order_relaxed) + 1, std::memory_order_release);
    if (sleeping_ == 0) return;
    if (j->max_helpers >= sleeping_) {
      cv_.notify_all();
    } else {
      for (int i = 0; i < j->max_helpers; ++i) cv_.notify_one();
    }
  }

  /// Takes the job off the list: no worker joins it from now on.
  void retire(Job* j) {
    std::lock_guard<std::mutex> lk(mu_);
    jobs_.erase(std::find(jobs_.begin(), jobs_.end(), j));
  }

 private:
  Job* join() {
    std::lock_guard<std::mutex> lk(mu_);
    for (Job* j : jobs_)
      if (j->helpers < j->max_helpers && j->has_tasks()) {
        ++j->helpers;
        j->refs.fetch_add(1, std::memory_order_relaxed);
        return j;
      }
    return nullptr;
  }

  void worker() {
    t_in_parallel = true;
    for (;;) {
      const uint64_t seen = epoch_.load(std::memory_order_acquire);
      if (Job* j = join()) {
        if (j->work()) {
          // The last task ended here: wake the caller if it went to sleep (the lock orders this
          // notify after its check of `left`).
          { std::lock_guard<std::mutex> jl(j->m); }
          j->cv.notify_one();
        }
        j->release();
        continue;
      }
      if (spin_until([&] { return epoch_.load(std::memory_order_acquire) != seen; }, worker_spin())) continue;
      std::unique_lock<std::mutex> lk(mu_);
      ++sleeping_;
      cv_.wait(lk, [&] { return epoch_.load(std::memory_order_relaxed) != seen; });
      --sleeping_;
    }
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Job*> jobs_;          // guarded by mu_
  std::atomic<uint64_t> epoch_{0};  // bumped (under mu_) by each post
  int sleeping_ = 0;                // guarded by mu_
  size_t workers_ = 0;              // guarded by mu_
  std::atomic<int> started_{0};
};

/// The process's pool. Never destroyed: its detached workers sleep through exit. A forked child
/// gets a fresh one (its parent's workers do not exist there).
std::atomic<Pool*> g_pool{nullptr};
std::once_flag g_atfork_once;

Pool& pool() {
  Pool* p = g_pool.load(std::memory_order_acquire);
  if (p != nullptr) return *p;
  std::call_once(g_atfork_once,
                 [] { pthread_atfork(nullptr, nullptr, [] { g_pool.store(nullptr, std::memory_order_relaxed); }); });
  Pool* fresh = new Pool;
  if (g_pool.compare_exchange_strong(p, fresh, std::memory_order_acq_rel)) return *fresh;
  delete fresh;
  return *p;
}

int cpu_count() {
  static const int n = [] {
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0) return std::max(1, CPU_COUNT(&set));
    return std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  }();
  return n;
}

/// Backing off on an overloaded machine. A job loses when the caller's wait for the tasks held
/// by its helpers outlasts what they saved (a helper was descheduled while holding a task: the
/// other threads on the machine outnumber the cores). After a loss the next jobs of every caller
/// run on the calling thread alone: 2, 4, ... 64 after consecutive losses; the next job that gains
/// from its helpers ends the streak. On a quiet machine jobs gain and this stays at zero.
std::atomic<int> g_serial_credit{0};
constexpr int kMaxLossStreak = 6;

/// Takes one serial job from the credit, if any is left.
bool take_serial_credit() {
  int c = g_serial_credit.load(std::memory_order_relaxed);
  while (c > 0)
    if (g_serial_credit.compare_exchange_weak(c, c - 1, std::memory_order_relaxed)) return true;
  return false;
}

/// Records a parallel job's outcome: `elapsed` from posting it to the end of the wait, the
/// caller's own share, `tasks` in all.
void judge_job(std::chrono::steady_clock::duration elapsed, const Job::OwnShare& own, int64_t tasks) {
  if (own.tasks <= 0 || own.tasks >= tasks) return;  // no helper took part: nothing to judge
  // The caller's tasks stand for all of them: alone it would have taken about this long.
  const auto alone = own.busy / own.tasks * tasks;
  if (elapsed > alone) {
    const int streak = std::min(g_loss_streak.load(std::memory_order_relaxed) + 1, kMaxLossStreak);
    g_loss_streak.store(streak, std::memory_order_relaxed);
    g_serial_credit.store(1 << streak, std::memory_order_relaxed);
  } else {
    g_loss_streak.store(0, std::memory_order_relaxed);
  }
}

void run_serial(int64_t tasks, pool_detail::TaskFn fn, const void* ctx, const std::atomic<bool>* cancel) {
  for (int64_t i = 0; i < tasks; ++i) {
    if (cancel != nullptr && cancel->load(std::memory_order_relaxed)) return;
    fn(ctx, i);
  }
}

}  // namespace

int parallel_threads() {
  const int n = config().num_threads;
  return n > 0 ? std::min(n, kMaxWorkers + 1) : cpu_count();
}

bool parallel_worth(int64_t elements) { return elements >= config().openmp_elemwise_minsize && parallel_threads() > 1; }

int thread_pool_workers() { return pool().workers(); }

void thread_pool_reset_backoff() {
  g_serial_credit.store(0, std::memory_order_relaxed);
  g_loss_streak.store(0, std::memory_order_relaxed);
}

namespace pool_detail {

void run(int64_t tasks, int threads, TaskFn fn, const void* ctx) {
  const std::atomic<bool>* cancel = current_cancel_flag();
  const int helpers = static_cast<int>(std::min<int64_t>(std::min(threads, kMaxWorkers + 1), tasks)) - 1;
  if (helpers <= 0 || t_in_parallel || take_serial_credit()) return run_serial(tasks, fn, ctx, cancel);
  Pool& p = pool();
  p.grow(helpers);
  Job* j = new Job(fn, ctx, tasks, cancel, helpers);
  const auto start = std::chrono::steady_clock::now();
  p.post(j);
  t_in_parallel = true;
  Job::OwnShare own;
  j->work(&own);
  t_in_parallel = false;
  p.retire(j);
  if (!spin_until([j] { return j->left.load(std::memory_order_acquire) == 0; }, kCallerSpin)) {
    std::unique_lock<std::mutex> lk(j->m);
    j->cv.wait(lk, [j] { return j->left.load(std::memory_order_acquire) == 0; });
  }
  judge_job(std::chrono::steady_clock::now() - start, own, tasks);
  std::exception_ptr error = j->error;
  j->release();
  if (error) std::rethrow_exception(error);
}

}  // namespace pool_detail
}  // namespace hypatia
