#include "hypatia/backends/cpu/thread_pool.h"

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
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

/// Locks m, polling briefly first. The pool's mutex is held for a few hundred nanoseconds at a
/// time (posting, joining, retiring a job), and a worker that sees a new job tries to join while
/// the caller may still hold it: blocking there put the worker to sleep in the kernel, and its
/// wake-up (several microseconds on a VM) let the caller run the whole job alone.
std::unique_lock<std::mutex> lock_soon(std::mutex& m) {
  for (int i = 0; i < 256; ++i) {
    if (m.try_lock()) return std::unique_lock<std::mutex>(m, std::adopt_lock);
    cpu_relax();
  }
  return std::unique_lock<std::mutex>(m);
}

/// Polls done() until it holds or `limit` has passed, yielding the core between polls: on an idle
/// core a yield returns at once, on a busy one the other thread runs first. Returns done().
template <class Done>
bool yield_until(const Done& done, std::chrono::microseconds limit) {
  if (limit.count() <= 0) return done();
  const auto end = std::chrono::steady_clock::now() + limit;
  for (;;) {
    if (done()) return true;
    std::this_thread::yield();
    if (std::chrono::steady_clock::now() >= end) return done();
  }
}

/// One parallel loop. Lives on the heap, shared by the caller and the workers that joined it
/// (refs): a worker that joined and was then descheduled may touch the counters after the caller
/// has returned.
struct Job {
  pool_detail::TaskFn fn;
  const void* ctx;
  const std::atomic<bool>* cancel;
  int max_helpers;
  int helpers = 0;  // workers that joined (guarded by the pool's mutex)
  // The tasks nobody has claimed, [lo, hi) packed as lo | hi << 32. The caller claims from the
  // front, helpers from the back: on two threads the caller runs the first half of a loop and the
  // helper the second, call after call, so each half stays in its core's cache (claiming from one
  // end made the halves swap at random: exp over 230K float32 took 26 us instead of 21).
  std::atomic<uint64_t> range;
  std::atomic<int64_t> left;  // tasks neither finished nor skipped
  std::atomic<int> refs{1};
  std::atomic<bool> failed{false};
  std::exception_ptr error;  // written once, by the thread that set `failed`
  std::mutex m;              // with cv: the caller sleeping until left == 0
  std::condition_variable cv;

  Job(pool_detail::TaskFn f, const void* c, int64_t n, const std::atomic<bool>* cf, int helpers_wanted)
      : fn(f), ctx(c), cancel(cf), max_helpers(helpers_wanted), range(pack(0, n)), left(n) {}

  static uint64_t pack(uint64_t lo, uint64_t hi) { return lo | hi << 32; }

  /// Claims the lowest (front) or the highest task nobody has claimed; -1 when none is left.
  int64_t claim(bool front) {
    uint64_t r = range.load(std::memory_order_relaxed);
    for (;;) {
      const uint64_t lo = r & 0xffffffffu, hi = r >> 32;
      if (lo >= hi) return -1;
      if (range.compare_exchange_weak(r, front ? pack(lo + 1, hi) : pack(lo, hi - 1), std::memory_order_relaxed))
        return static_cast<int64_t>(front ? lo : hi - 1);
    }
  }

  /// Claims every task nobody has claimed; returns how many.
  int64_t claim_rest() {
    const uint64_t r = range.exchange(0, std::memory_order_relaxed);
    const uint64_t lo = r & 0xffffffffu, hi = r >> 32;
    return lo < hi ? static_cast<int64_t>(hi - lo) : 0;
  }

  bool stopping() const {
    return failed.load(std::memory_order_relaxed) || (cancel != nullptr && cancel->load(std::memory_order_relaxed));
  }

  bool has_tasks() const {
    const uint64_t r = range.load(std::memory_order_relaxed);
    return (r & 0xffffffffu) < (r >> 32);
  }

  /// The caller's own share of a job, timed (to judge whether the job gained from its helpers).
  struct OwnShare {
    int64_t tasks = 0;
    std::chrono::steady_clock::duration busy{};
  };

  /// Claims and runs tasks until none is left; returns whether this thread finished the job.
  /// With `own` (the caller), claims from the front and times each task; helpers claim from the
  /// back.
  bool work(OwnShare* own = nullptr) {
    int64_t done = 0;
    for (;;) {
      const int64_t i = claim(own != nullptr);
      if (i < 0) break;
      // Checked only while holding task i: until it is counted done the caller cannot return,
      // so its cancel flag is still alive (a worker that joined late may claim after the caller
      // left, and then finds no task).
      if (stopping()) {
        // Skip task i and every task nobody has claimed: claims after this find none.
        done += 1 + claim_rest();
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
/// Jobs left to run on the caller alone (the back-off below).
std::atomic<int> g_serial_credit{0};

/// Short spins once two jobs in a row were lost: one loss is as likely a hiccup of a quiet machine
/// (an interrupt, a VM exit), and a short spin after it put the worker to sleep during the serial
/// jobs that follow, so that the next parallel job waited for its wake-up and was lost too (on a
/// quiet machine 6% of exp-over-230K jobs ended up serial that way).
std::chrono::microseconds worker_spin() {
  return g_loss_streak.load(std::memory_order_relaxed) < 2 ? kWorkerSpinQuiet : kWorkerSpinBusy;
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
    const auto lk = lock_soon(mu_);
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
    const auto lk = lock_soon(mu_);
    jobs_.erase(std::find(jobs_.begin(), jobs_.end(), j));
  }

 private:
  Job* join() {
    const auto lk = lock_soon(mu_);
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
      const auto posted = [&] { return epoch_.load(std::memory_order_acquire) != seen; };
      if (spin_until(posted, kWorkerSpinBusy) || yield_until(posted, worker_spin() - kWorkerSpinBusy)) continue;
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
  std::call_once(g_atfork_once, [] {
    pthread_atfork(nullptr, nullptr, [] {
      // The child's pool starts empty, and so does its record of lost jobs (the parent's load is
      // not the child's).
      g_pool.store(nullptr, std::memory_order_relaxed);
      g_serial_credit.store(0, std::memory_order_relaxed);
      g_loss_streak.store(0, std::memory_order_relaxed);
    });
  });
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
/// run on the calling thread alone: 2, 4, ... 64 as losses outnumber gains; each job that gains
/// from its helpers takes one loss off the streak. On a quiet machine jobs gain and this stays at
/// zero.
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
  } else if (const int streak = g_loss_streak.load(std::memory_order_relaxed); streak > 0) {
    // One gain takes one loss off the streak: under steady load gains and losses alternate, and
    // resetting at once put a loss, which costs a time slice, after every short streak.
    g_loss_streak.store(streak - 1, std::memory_order_relaxed);
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
  // (A job's task indices are 32-bit; a loop of 2^32 tasks is a bug of its caller's, run serially.)
  if (helpers <= 0 || t_in_parallel || tasks > INT32_MAX || take_serial_credit())
    return run_serial(tasks, fn, ctx, cancel);
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
