// The per-call path under pressure: calls from many threads at once, calls of functions with
// updates, cancellation between nodes, and arguments that must not be written (read-only, aliased,
// overlapping elements).
#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "hypatia/hypatia.h"
#include "test_util.h"

namespace hypatia {
namespace {

using testing::compare_arrays;
using testing::random_array;

FunctionOptions fast_run() {
  FunctionOptions o;
  o.mode = "FAST_RUN";
  return o;
}

/// Runs body(thread index) on n threads at once and joins them.
template <class Body>
void on_threads(int n, Body body) {
  std::vector<std::thread> ts;
  std::atomic<int> ready{0};
  for (int t = 0; t < n; ++t)
    ts.emplace_back([&, t] {
      ready.fetch_add(1);
      while (ready.load() < n) std::this_thread::yield();  // start together
      body(t);
    });
  for (auto& t : ts) t.join();
}

TEST(RuntimeCalls, ConcurrentCallsOfOneFunctionGiveEachCallersResult) {
  // Fused elementwise work (per-kernel scratch), a reduction, a product and a softmax: every
  // kind of kernel state, one function, eight threads with different arguments.
  Var x = variable(matrix_type(DType::Float32), "x"), w = variable(matrix_type(DType::Float32), "w");
  Var h = tanh(exp(x * 0.5f) - 1.0f) * 2.0f;
  Var y = softmax(dot(h, w));
  Function f = function({x, w}, {y, sum(h)}, fast_run());
  Function ref = function({x, w}, {y, sum(h)}, FunctionOptions{.mode = "NONE"});
  const int kThreads = 8, kCalls = 40;
  std::vector<NDArray> xs, ws, expect_y, expect_s;
  for (int t = 0; t < kThreads; ++t) {
    xs.push_back(random_array({33, 17}, DType::Float32, -1, 1, 100 + t));
    ws.push_back(random_array({17, 9}, DType::Float32, -1, 1, 200 + t));
    auto r = ref({xs[t], ws[t]});
    expect_y.push_back(r[0]);
    expect_s.push_back(r[1]);
  }
  std::atomic<int> bad{0};
  on_threads(kThreads, [&](int t) {
    for (int i = 0; i < kCalls; ++i) {
      auto r = f({xs[t], ws[t]});
      if (!compare_arrays(r[0], expect_y[t], 1e-4, 1e-5).empty() ||
          !compare_arrays(r[1], expect_s[t], 1e-4, 1e-4).empty())
        bad.fetch_add(1);
    }
  });
  EXPECT_EQ(bad.load(), 0);
}

TEST(RuntimeCalls, ConcurrentCallsKeepTheirIntermediatesApartWithoutGc) {
  Var x = variable(vector_type(DType::Float64), "x");
  FunctionOptions o = fast_run();
  o.allow_gc = false;  // intermediates stay in the call's frame between calls
  Function f = function({x}, {sum(exp(x) * x), x * 3.0}, o);
  std::atomic<int> bad{0};
  on_threads(6, [&](int t) {
    NDArray xv = NDArray::full({1000 + t}, DType::Float64, t);
    for (int i = 0; i < 30; ++i) {
      auto r = f({xv});
      if (r[1].shape(0) != 1000 + t || r[1].get_flat(0) != 3.0 * t ||
          std::abs(r[0].get_flat(0) - (1000 + t) * std::exp(double(t)) * t) > 1e-6 * (1 + r[0].get_flat(0)))
        bad.fetch_add(1);
    }
  });
  EXPECT_EQ(bad.load(), 0);
}

TEST(RuntimeCalls, CallsOfAFunctionWithUpdatesAreSerialized) {
  Var c = shared(NDArray::zeros({3}, DType::Float64), "c");
  FunctionOptions o = fast_run();
  o.updates = {{c, c + 1.0}};
  Function f = function({}, {}, o);
  const int kThreads = 6, kCalls = 150;
  on_threads(kThreads, [&](int) {
    for (int i = 0; i < kCalls; ++i) f({});
  });
  NDArray v = get_value(c);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(v.get_flat(i), double(kThreads * kCalls));
}

TEST(RuntimeCalls, AReaderSeesAllOfAnUpdateOrNone) {
  // The writer keeps w[0, 0] == b[0] + 0 after every call; a reader running beside it computes
  // w[0, 0] - b[0] from one snapshot of both, so it must always see 0.
  Var w = shared(NDArray::zeros({64, 64}, DType::Float64), "w"), b = shared(NDArray::zeros({64}, DType::Float64), "b");
  FunctionOptions o = fast_run();
  o.updates = {{w, w + 1.0}, {b, b + 1.0}};
  Function writer = function({}, {}, o);
  Function reader = function({}, {sum(w) / 4096.0 - sum(b) / 64.0}, fast_run());
  std::atomic<bool> stop{false};
  std::atomic<int> torn{0}, reads{0};
  std::thread r([&] {
    while (!stop.load()) {
      if (reader({})[0].get_flat(0) != 0.0) torn.fetch_add(1);
      reads.fetch_add(1);
    }
  });
  for (int i = 0; i < 400; ++i) writer({});
  while (reads.load() < 10) std::this_thread::yield();
  stop = true;
  r.join();
  EXPECT_EQ(torn.load(), 0);
  EXPECT_EQ(get_value(b).get_flat(0), 400.0);
}

TEST(RuntimeCalls, ConcurrentProfiledCallsAreAllCounted) {
  Var x = variable(vector_type(DType::Float32), "x");
  FunctionOptions o = fast_run();
  o.profile = true;
  Function f = function({x}, {exp(x) + 1.0f}, o);
  NDArray xv = random_array({100}, DType::Float32);
  on_threads(4, [&](int) {
    for (int i = 0; i < 25; ++i) f({xv});
  });
  ASSERT_NE(f.profile(), nullptr);
  EXPECT_EQ(f.profile()->calls, 100);
  for (const auto& n : f.profile()->nodes) EXPECT_EQ(n.calls, 100);
}

TEST(RuntimeCalls, ACancelledCallThrowsAndChangesNoSharedVariable) {
  Var w = shared(random_array({8, 8}, DType::Float64, -1, 1, 3), "w");
  Var x = variable(matrix_type(DType::Float64), "x");
  FunctionOptions o = fast_run();
  o.updates = {{w, w + dot(x, x)}};
  Function f = function({x}, {exp(x)}, o);
  NDArray before = get_value(w);
  std::atomic<bool> stop{true};
  {
    CancelScope scope(&stop);
    EXPECT_THROW(f({random_array({8, 8}, DType::Float64)}), Cancelled);
  }
  EXPECT_EQ(compare_arrays(get_value(w), before, 0, 0), "");
  stop = false;
  CancelScope scope(&stop);
  f({random_array({8, 8}, DType::Float64)});  // the flag cleared: calls run again
  EXPECT_NE(compare_arrays(get_value(w), before), "");
}

TEST(RuntimeCalls, AFlagSetFromAnotherThreadStopsALongCall) {
  // Eighty dependent passes over 4M elements: far longer than the 20 ms after which another thread
  // sets the flag. The call must stop between nodes with Cancelled, the shared variable untouched.
  Var x = variable(vector_type(DType::Float64), "x");
  Var c = shared(NDArray::zeros({}, DType::Float64), "calls");
  Var y = x;
  for (int i = 0; i < 80; ++i) y = sqrt(abs(y) + 1.0);  // nothing folds or fuses across all of it
  FunctionOptions o;
  o.mode = "FAST_COMPILE";
  o.updates = {{c, c + 1.0}};
  Function f = function({x}, {y}, o);
  NDArray xv = random_array({4 << 20}, DType::Float64);
  std::atomic<bool> stop{false};
  std::thread t([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    stop = true;
  });
  CancelScope scope(&stop);
  EXPECT_THROW(f({xv}), Cancelled);
  t.join();
  EXPECT_EQ(get_value(c).get_flat(0), 0.0);
}

/// exp(x) * 2 with x mutable (computed in x's buffer) and y + 1 beside it.
In mutable_input(Var v) {
  In in(std::move(v));
  in.mutable_ = true;
  return in;
}

struct MutablePair {
  Var x = variable(vector_type(DType::Float64), "x"), y = variable(vector_type(DType::Float64), "y");
  Function f = function({mutable_input(x), In(y)}, {exp(x) * 2.0, y + 1.0}, fast_run());
  Function ref = function({x, y}, {exp(x) * 2.0, y + 1.0}, FunctionOptions{.mode = "NONE"});
  bool writes_in_place() const {
    for (const auto& n : f.toposort())
      if (!n->op->destroy_map().empty()) return true;
    return false;
  }
};

TEST(RuntimeCalls, AMutableArgumentAlsoPassedAsAnotherIsCopiedFirst) {
  MutablePair p;
  ASSERT_TRUE(p.writes_in_place()) << p.f.debugprint();
  NDArray a = random_array({9}, DType::Float64, -1, 1, 4);
  NDArray keep = a.copy();
  auto expected = p.ref({keep, keep});
  auto r = p.f({a, a});  // the same array for x (overwritten) and y (read)
  EXPECT_ALLCLOSE(r[0], expected[0]);
  EXPECT_ALLCLOSE(r[1], expected[1]);
  // Two wrappings of one buffer (different owners) alias too.
  NDArray b = random_array({9}, DType::Float64, -1, 1, 5);
  NDArray b_again =
      NDArray::wrap(std::shared_ptr<void>(b.storage(), b.raw()), b.raw(), b.shape(), b.strides(), b.dtype());
  NDArray b_keep = b.copy();
  auto expected_b = p.ref({b_keep, b_keep});
  r = p.f({b, b_again});
  EXPECT_ALLCLOSE(r[1], expected_b[1]);
}

TEST(RuntimeCalls, AMutableArgumentWithAZeroStrideIsNotWrittenInPlace) {
  MutablePair p;
  NDArray one = NDArray::full({1}, DType::Float64, 0.25);
  NDArray view = one.broadcast_to({9});  // nine elements over one double
  ASSERT_TRUE(view.has_internal_overlap());
  auto r = p.f({view, NDArray::zeros({9}, DType::Float64)});
  for (int i = 0; i < 9; ++i) EXPECT_DOUBLE_EQ(r[0].get_flat(i), 2.0 * std::exp(0.25));
  EXPECT_EQ(one.get_flat(0), 0.25);
}

TEST(RuntimeCalls, AReadOnlyMutableArgumentIsNotWritten) {
  MutablePair p;
  NDArray a = random_array({9}, DType::Float64, -1, 1, 6);
  NDArray keep = a.copy();
  NDArray ro = a;
  ro.set_writeable(false);
  auto r = p.f({ro, keep});
  EXPECT_ALLCLOSE(r[0], p.ref({keep, keep})[0]);
  EXPECT_EQ(compare_arrays(a, keep, 0, 0), "");
}

TEST(RuntimeCalls, AMutableArgumentSharingASharedVariablesMemoryIsCopied) {
  NDArray wv = random_array({9}, DType::Float64, -1, 1, 7);
  Var w = shared(wv, "w", /*borrow=*/true);
  Var x = variable(vector_type(DType::Float64), "x");
  Function f = function({mutable_input(x)}, {exp(x) * 2.0 + w}, fast_run());
  NDArray keep = wv.copy();
  auto r = f({get_value(w, /*borrow=*/true)});
  for (int i = 0; i < 9; ++i) EXPECT_DOUBLE_EQ(r[0].get_flat(i), std::exp(keep.get_flat(i)) * 2.0 + keep.get_flat(i));
  EXPECT_EQ(compare_arrays(get_value(w), keep, 0, 0), "");
}

TEST(RuntimeCalls, AReadOnlySharedValueIsNeverOverwritten) {
  NDArray mem = random_array({5, 5}, DType::Float32, -1, 1, 8);
  NDArray keep = mem.copy();
  NDArray ro = mem;
  ro.set_writeable(false);
  Var w = shared(ro, "w", /*borrow=*/true), a = shared(random_array({5, 5}, DType::Float32, -1, 1, 9), "a");
  FunctionOptions o = fast_run();
  o.updates = {{w, w + dot(a, a)}};
  Function f = function({}, {}, o);
  bool inplace = false;
  for (const auto& n : f.toposort()) inplace |= !n->op->destroy_map().empty();
  ASSERT_TRUE(inplace) << f.debugprint();
  f({});
  EXPECT_EQ(compare_arrays(mem, keep, 0, 0), "") << "the read-only memory was written";
  NDArray av = get_value(a);
  Var kc = constant(keep), ac = constant(av);
  NDArray expected = function({}, {kc + dot(ac, ac)}, FunctionOptions{.mode = "NONE"})({})[0];
  EXPECT_ALLCLOSE(get_value(w), expected, 1e-5, 1e-5);
  // set_value(borrow) of read-only memory: the same.
  NDArray mem2 = random_array({5, 5}, DType::Float32, -1, 1, 10);
  NDArray keep2 = mem2.copy(), ro2 = mem2;
  ro2.set_writeable(false);
  set_value(w, ro2, /*borrow=*/true);
  f({});
  EXPECT_EQ(compare_arrays(mem2, keep2, 0, 0), "");
}

TEST(RuntimeCalls, MemoryOverlapQueries) {
  NDArray a = NDArray::zeros({4, 6}, DType::Float64);
  EXPECT_FALSE(a.has_internal_overlap());
  EXPECT_FALSE(a.transpose().has_internal_overlap());
  EXPECT_FALSE(a.slice(1, 5, -1, -2).has_internal_overlap());
  EXPECT_TRUE(a.select(0, 0).broadcast_to({3, 6}).has_internal_overlap());
  EXPECT_TRUE(a.as_strided({4, 4}, {8, 8}).has_internal_overlap());  // sliding windows
  EXPECT_FALSE(NDArray::zeros({0, 3}, DType::Float64).broadcast_to({0, 3}).has_internal_overlap());
  EXPECT_TRUE(a.may_share_memory(a.slice(0, 1, 2, 1)));
  EXPECT_FALSE(a.slice(0, 0, 2, 1).may_share_memory(a.slice(0, 2, 4, 1)));
  EXPECT_FALSE(a.may_share_memory(a.copy()));
  NDArray other_owner = NDArray::wrap(std::shared_ptr<void>(a.storage(), a.raw()), a.raw() + 8, {2}, {8}, a.dtype());
  EXPECT_TRUE(a.may_share_memory(other_owner));
  EXPECT_FALSE(a.slice(0, 0, 0, 1).may_share_memory(a));  // empty views share nothing
  NDArray ro = a;
  ro.set_writeable(false);
  EXPECT_FALSE(ro.transpose().writeable());
  EXPECT_TRUE(ro.copy().writeable());
  EXPECT_FALSE(ro.can_write_in_place());
}

}  // namespace
}  // namespace hypatia
