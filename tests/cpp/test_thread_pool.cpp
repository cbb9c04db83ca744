// The thread pool (backends/cpu/thread_pool.h): every task runs once, the caller never waits for a
// busy worker, cancellation stops handing out tasks, exceptions come back to the caller, nested
// and concurrent loops are correct, a forked child gets a working pool; the kernels that run on it
// (chunked BLAS included) give the single-threaded results at odd thread counts.
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <thread>
#include <vector>

#include "hypatia/backends/cpu/blas_matmul.h"
#include "hypatia/backends/cpu/thread_pool.h"
#include "hypatia/core/cancel.h"
#include "test_util.h"

namespace hypatia {
namespace {
using testing::random_array;

/// Sets config().num_threads (and the parallel threshold) for a scope.
struct ThreadsScope {
  int saved_threads = config().num_threads;
  long saved_min = config().openmp_elemwise_minsize;
  ThreadsScope(int threads, long minsize) {
    config().num_threads = threads;
    config().openmp_elemwise_minsize = minsize;
  }
  ~ThreadsScope() {
    config().num_threads = saved_threads;
    config().openmp_elemwise_minsize = saved_min;
  }
};

TEST(ThreadPool, EveryTaskRunsExactlyOnce) {
  thread_pool_reset_backoff();
  for (int threads : {1, 2, 3, 8})
    for (int64_t tasks : {0, 1, 2, 7, 64, 1000}) {
      std::vector<std::atomic<int>> hits(static_cast<size_t>(tasks));
      parallel_for(tasks, threads, [&](int64_t i) { hits[i].fetch_add(1); });
      for (int64_t i = 0; i < tasks; ++i) ASSERT_EQ(hits[i].load(), 1) << "task " << i << " of " << tasks;
    }
}

TEST(ThreadPool, RangesCoverEverythingOnce) {
  for (int64_t n : {1, 5, 16, 1001})
    for (int64_t tasks : {1, 3, 16, 2000}) {
      std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
      parallel_ranges(n, tasks, 3, [&](int64_t b, int64_t e) {
        EXPECT_LT(b, e);
        for (int64_t i = b; i < e; ++i) hits[i].fetch_add(1);
      });
      for (int64_t i = 0; i < n; ++i) ASSERT_EQ(hits[i].load(), 1) << n << " in " << tasks;
    }
}

TEST(ThreadPool, ThreadCountFollowsConfig) {
  ThreadsScope s(3, 1);
  EXPECT_EQ(parallel_threads(), 3);
  EXPECT_TRUE(parallel_worth(1));
  config().num_threads = 1;
  EXPECT_FALSE(parallel_worth(1 << 30));
  config().num_threads = 0;
  EXPECT_GE(parallel_threads(), 1);
}

// The property that makes the pool tolerate a busy machine: when every worker is held up (here by
// another caller's tasks that block), a parallel loop still completes, on the caller alone.
TEST(ThreadPool, CallerFinishesAloneWhenEveryWorkerIsBusy) {
  thread_pool_reset_backoff();
  // Enough threads to hold every worker the pool has (earlier tests may have started more).
  const int threads = std::max(4, thread_pool_workers() + 1);
  std::atomic<bool> release{false};
  std::atomic<int> blocked{0};
  std::thread holder([&] {
    parallel_for(threads, threads, [&](int64_t) {
      blocked.fetch_add(1);
      while (!release.load()) std::this_thread::sleep_for(std::chrono::microseconds(100));
    });
  });
  // Wait (bounded) until the holder's caller and every worker sit in blocked tasks.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (blocked.load() < threads && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  if (blocked.load() < threads || thread_pool_workers() != threads - 1) {
    release.store(true);
    holder.join();
    FAIL() << blocked.load() << " of " << threads << " threads blocked; " << thread_pool_workers() << " workers";
  }
  const std::thread::id me = std::this_thread::get_id();
  std::atomic<int> ran{0}, elsewhere{0};
  parallel_for(100, threads, [&](int64_t) {
    ran.fetch_add(1);
    if (std::this_thread::get_id() != me) elsewhere.fetch_add(1);
  });
  EXPECT_EQ(ran.load(), 100);
  EXPECT_EQ(elsewhere.load(), 0);  // no worker was free: the caller ran every task
  release.store(true);
  holder.join();
}

// On an overloaded machine a helper may be descheduled while it holds a task, and the caller then
// waits longer than the helpers saved it: the pool notices and runs the next jobs on the caller.
TEST(ThreadPool, JobsAfterALosingOneRunOnTheCaller) {
  thread_pool_reset_backoff();
  const std::thread::id me = std::this_thread::get_id();
  std::atomic<int> helped{0};
  parallel_for(1000, 2, [&](int64_t) {
    if (std::this_thread::get_id() != me) {
      helped.fetch_add(1);
      std::this_thread::sleep_for(std::chrono::milliseconds(100));  // a "descheduled" helper
    } else {
      // A short busy task (a sleep would last the timer slack and more on a loaded machine,
      // making "alone" look as long as the helper's 100 ms and the job a gain).
      const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(5);
      while (std::chrono::steady_clock::now() < until) {
      }
    }
  });
  if (helped.load() == 0) GTEST_SKIP() << "no worker joined the first job in time";
  std::atomic<int> elsewhere{0};
  parallel_for(100, 2, [&](int64_t) {
    if (std::this_thread::get_id() != me) elsewhere.fetch_add(1);
    std::this_thread::sleep_for(std::chrono::microseconds(20));
  });
  EXPECT_EQ(elsewhere.load(), 0);
}

TEST(ThreadPool, CancelStopsHandingOutTasks) {
  thread_pool_reset_backoff();
  for (int threads : {1, 2, 4}) {
    std::atomic<bool> flag{false};
    CancelScope scope(&flag);
    std::atomic<int64_t> ran{0};
    constexpr int64_t kTasks = 1'000'000;
    parallel_for(kTasks, threads, [&](int64_t) {
      // The 100th task to run (not task 100: helpers claim from the back) sets the flag.
      if (ran.fetch_add(1) == 99) flag.store(true);
      std::this_thread::sleep_for(std::chrono::microseconds(1));
    });
    // Tasks claimed before the flag was seen may still run: at most a few per thread.
    EXPECT_GT(ran.load(), 0);
    EXPECT_LT(ran.load(), 100 + 64 * threads) << threads << " threads";
  }
  // A flag already set: nothing runs.
  std::atomic<bool> set{true};
  CancelScope scope(&set);
  std::atomic<int> ran{0};
  parallel_for(1000, 4, [&](int64_t) { ran.fetch_add(1); });
  EXPECT_EQ(ran.load(), 0);
}

// A kernel's parallel loop (an elementwise exp over 8M elements) obeys the caller's flag: with it
// set, no task runs and the output stays unwritten (the runtime, not the kernel, reports it).
TEST(ThreadPool, KernelLoopRunsNoTaskOnceCancelled) {
  // The CPU kernel of exp, run directly (the runtime would stop before it): with the flag set, its
  // parallel loop hands out no task and returns; the runtime throws Cancelled after it.
  ThreadsScope s(2, 1 << 16);
  Var x = variable(vector_type(DType::Float32), "x");
  Var y = exp(x);
  std::unique_ptr<Kernel> kernel = make_kernel(kCpuBackend, *y->owner);
  constexpr int64_t n = 8 << 20;
  NDArray xv = NDArray::zeros({n}, DType::Float32);
  NDArray out = NDArray::zeros({n}, DType::Float32);  // exp(0) = 1 where written
  std::vector<NDArray*> in{&xv}, outs{&out};
  std::atomic<bool> flag{true};
  {
    CancelScope scope(&flag);
    kernel->run(KernelArgs{in, outs});
  }
  ASSERT_TRUE(out.valid());
  const float* p = out.data<float>();
  int64_t written = 0;
  for (int64_t i = 0; i < n; ++i) written += p[i] == 1.0f;
  EXPECT_EQ(written, 0) << "the loop ran tasks after its cancel flag was set";
  // Without the flag the same kernel writes everything.
  kernel->run(KernelArgs{in, outs});
  written = 0;
  for (int64_t i = 0; i < n; ++i) written += out.data<float>()[i] == 1.0f;
  EXPECT_EQ(written, n);
}

TEST(ThreadPool, FirstExceptionIsRethrownAndPoolStaysUsable) {
  for (int threads : {1, 3}) {
    std::atomic<int> ran{0};
    EXPECT_THROW(parallel_for(10000, threads,
                              [&](int64_t) {
                                // The 6th task to run throws (the order of indices is the pool's).
                                if (ran.fetch_add(1) == 5) throw std::runtime_error("task 5");
                              }),
                 std::runtime_error);
    EXPECT_LT(ran.load(), 10000);
    std::atomic<int> after{0};
    parallel_for(50, threads, [&](int64_t) { after.fetch_add(1); });
    EXPECT_EQ(after.load(), 50);
  }
}

TEST(ThreadPool, NestedLoopsRunSeriallyInsideTasks) {
  std::vector<std::atomic<int>> hits(64 * 64);
  parallel_for(64, 4, [&](int64_t i) { parallel_for(64, 4, [&](int64_t j) { hits[i * 64 + j].fetch_add(1); }); });
  for (auto& h : hits) ASSERT_EQ(h.load(), 1);
}

TEST(ThreadPool, ConcurrentCallersGetTheirOwnResults) {
  thread_pool_reset_backoff();
  constexpr int kCallers = 6;
  std::vector<std::thread> callers;
  std::vector<int> bad(kCallers, 0);
  for (int c = 0; c < kCallers; ++c)
    callers.emplace_back([&bad, c] {
      for (int rep = 0; rep < 200; ++rep) {
        const int64_t n = 100 + (rep * 37 + c * 11) % 900;
        std::vector<int64_t> out(static_cast<size_t>(n), -1);
        parallel_for(n, 1 + (rep + c) % 4, [&](int64_t i) { out[i] = i * (c + 1); });
        for (int64_t i = 0; i < n; ++i) bad[c] += out[i] != i * (c + 1);
      }
    });
  for (auto& t : callers) t.join();
  for (int c = 0; c < kCallers; ++c) EXPECT_EQ(bad[c], 0) << "caller " << c;
}

// Compiled functions (one per thread: a Function's call is not shared here) whose kernels all
// run parallel loops at once give the single-threaded results.
TEST(ThreadPool, ConcurrentKernelsMatchSingleThreaded) {
  thread_pool_reset_backoff();
  ThreadsScope s(3, 1000);
  Var x = variable(matrix_type(DType::Float32), "x");
  Var w = variable(matrix_type(DType::Float32), "w");
  std::vector<Out> outs = {tanh(exp(x * 0.5 + 0.25) - 1.5) * 2.0,
                           sum(x, std::vector<int>{0}),
                           sum(x * x),
                           softmax(x),
                           argmax(x, -1),
                           dot(x, w)};
  // Every kernel above the 1000-element threshold; smaller under the sanitizers (about 20x slower).
  const int64_t rows = testing::kSanitizerBuild ? 100 : 300;
  NDArray xv = random_array({rows, 257}, DType::Float32, -2, 2, 1);
  NDArray wv = random_array({257, rows}, DType::Float32, -1, 1, 2);
  std::vector<NDArray> want;
  {
    ThreadsScope one(1, 1000);
    Function f = function({x, w}, outs);
    want = f({xv, wv});
  }
  constexpr int kCallers = 4;
  std::vector<std::string> errors(kCallers);
  std::vector<Function> fs;
  for (int c = 0; c < kCallers; ++c) fs.push_back(function({x, w}, outs));
  std::vector<std::thread> ts;
  for (int c = 0; c < kCallers; ++c)
    ts.emplace_back([&, c] {
      for (int rep = 0; rep < (testing::kSanitizerBuild ? 3 : 10); ++rep) {
        std::vector<NDArray> got = fs[c]({xv, wv});
        for (size_t k = 0; k < got.size(); ++k) {
          std::string e = testing::compare_arrays(got[k], want[k], 1e-5, 1e-5);
          if (!e.empty() && errors[c].empty()) errors[c] = "output " + std::to_string(k) + ": " + e;
        }
      }
    });
  for (auto& t : ts) t.join();
  for (int c = 0; c < kCallers; ++c) EXPECT_EQ(errors[c], "") << "caller " << c;
}

TEST(ThreadPool, ForkedChildGetsAWorkingPool) {
#if defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "ThreadSanitizer does not support starting threads after a multi-threaded fork";
#endif
  parallel_for(16, 4, [](int64_t) {});  // the parent's workers exist
  const pid_t pid = fork();
  if (pid == 0) {
    std::atomic<int> ran{0};
    parallel_for(1000, 4, [&](int64_t) { ran.fetch_add(1); });
    _exit(ran.load() == 1000 ? 0 : 1);
  }
  ASSERT_GT(pid, 0);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

// The threshold weighs each element by its op's cost: at the default 200,000 (in add-elements),
// tanh over 50,000 float64 elements threads and an add over as many does not. Observed in a
// forked child, whose pool starts empty: the first threaded kernel starts its workers.
TEST(ThreadPool, ExpensiveElementwiseOpsThreadAtFewerElements) {
#if defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "ThreadSanitizer does not support starting threads after a multi-threaded fork";
#endif
  EXPECT_EQ(scalar_op_cost(ScalarOpKind::Add), 1);
  EXPECT_EQ(scalar_op_cost(ScalarOpKind::Tanh), 8);
  EXPECT_EQ(parallel_work(int64_t{1} << 62, 8), std::numeric_limits<int64_t>::max());
  Var v = variable(vector_type(DType::Float64), "v");
  Function add = function({v}, {v + v}), th = function({v}, {tanh(v)});
  const NDArray x = random_array({50000}, DType::Float64, -3, 3, 9);
  for (bool expensive : {false, true}) {
    const pid_t pid = fork();
    if (pid == 0) {
      ThreadsScope s(2, 200000);
      const NDArray got = (expensive ? th : add)({x})[0];
      const double want0 = expensive ? std::tanh(x.data<double>()[0]) : 2 * x.data<double>()[0];
      const bool threaded = thread_pool_workers() > 0;
      _exit(got.data<double>()[0] == want0 && threaded == expensive ? 0 : 1);
    }
    ASSERT_GT(pid, 0);
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 0) << (expensive ? "tanh did not thread" : "add threaded");
  }
}

// The BLAS calls cut into output panels (GEMM by columns or rows of C, GEMV by ranges of y, GER
// by rows, dot in pieces) agree with the reference product on every layout, at 3 threads (panels
// that do not divide evenly).
TEST(ThreadPool, ChunkedBlasMatchesReference) {
  ThreadsScope s(3, 1000);
  // Contiguous, transposed, padded leading dimension (the first `count`).
  auto layouts = [](const Shape& sh, DType dt, uint64_t seed, size_t count = 3) {
    NDArray big = random_array({sh[0] + 1, sh[1] + 5}, dt, -1, 1, seed);
    std::vector<NDArray> r{random_array(sh, dt, -1, 1, seed), random_array({sh[1], sh[0]}, dt, -1, 1, seed).transpose(),
                           big.slice(0, 1, sh[0] + 1, 1).slice(1, 2, sh[1] + 2, 1)};
    r.resize(count);
    return r;
  };
  // Under a sanitizer (naive reference products at -O0): one dtype, one layout of B, beta 1.
  const std::vector<DType> dtypes = testing::kSanitizerBuild ? std::vector<DType>{DType::Float64}
                                                             : std::vector<DType>{DType::Float32, DType::Float64};
  const std::vector<double> betas = testing::kSanitizerBuild ? std::vector<double>{1.0} : std::vector<double>{0.0, 1.0};
  for (DType dt : dtypes)
    for (Shape mnk : {Shape{200, 260, 130}, Shape{520, 100, 130}, Shape{1, 1500, 400}, Shape{1500, 1, 400},
                      Shape{1, 1, 300000}, Shape{900, 700, 1}})
      for (const NDArray& A : layouts({mnk[0], mnk[2]}, dt, 1))
        for (const NDArray& B : layouts({mnk[2], mnk[1]}, dt, 2, testing::kSanitizerBuild ? 1 : 2))
          for (bool c_transposed : {false, true})
            for (double beta : betas) {
              const NDArray c0 = random_array({mnk[0], mnk[1]}, dt, -1, 1, 3);
              NDArray want = c0.copy();
              NDArray got = c_transposed ? NDArray::empty({mnk[1], mnk[0]}, dt).transpose() : c0.copy();
              got.assign(c0);
              reference_matmul(A, B, want, 1.5, beta);
              cpu_matmul(A, B, got, 1.5, beta);
              const double tol = dt == DType::Float32 ? 2e-4 : 1e-10;
              EXPECT_ALLCLOSE(got, want, tol, tol) << "M N K " << mnk.str() << " A " << A.describe() << " B "
                                                   << B.describe() << " C^T " << c_transposed << " beta " << beta;
            }
}

}  // namespace
}  // namespace hypatia
