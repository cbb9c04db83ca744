// Scan: loops against plain C++ loops (cumulative sums, an RNN, several taps, nit-sots, until,
// go_backwards, n_steps 0), the rewrites that move work out of a loop and merge loops, calls
// from several threads, loops on elements against the array path, and errors. The gradient's
// tests are in test_scan_grad.cpp.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <thread>

#include "hypatia/ops/scan.h"
#include "hypatia/testing/emulated_gpu.h"
#include "test_util.h"

namespace hypatia {
namespace {
using testing::make_array;
using testing::random_array;

NDArray run1(const Var& out, const std::vector<std::pair<Var, NDArray>>& in) { return eval(out, in); }

TEST(Scan, CumulativeSum) {
  Var x = vector("x", DType::Float64);
  Var s0 = scalar("s0", DType::Float64);
  auto outs = scan([](const std::vector<Var>& a) { return std::vector<Var>{a[1] + a[0]}; }, {x}, {s0});
  NDArray xv = make_array({1, 2, 3, 4}, {4}, DType::Float64);
  NDArray r = run1(outs[0], {{x, xv}, {s0, make_array({10}, {}, DType::Float64)}});
  EXPECT_ALLCLOSE(r, make_array({11, 13, 16, 20}, {4}, DType::Float64), 0, 0);
}

TEST(Scan, RnnMatchesALoop) {
  Var xs = matrix("xs", DType::Float64), h0 = vector("h0", DType::Float64);
  Var W = matrix("W", DType::Float64), U = matrix("U", DType::Float64);
  auto outs = scan(
      [](const std::vector<Var>& a) {
        // a: x_t, h_{t-1}, W, U
        return std::vector<Var>{tanh(dot(a[2], a[1]) + dot(a[3], a[0])), sum(a[1])};
      },
      {xs}, {h0, nullptr}, {W, U});
  const int T = 6, H = 3, I = 2;
  NDArray xv = random_array({T, I}, DType::Float64, -1, 1, 1), hv = random_array({H}, DType::Float64, -1, 1, 2);
  NDArray Wv = random_array({H, H}, DType::Float64, -1, 1, 3), Uv = random_array({H, I}, DType::Float64, -1, 1, 4);
  FunctionOptions o;
  Function f = function({In(xs), In(h0), In(W), In(U)}, {outs[0], outs[1]}, o);
  auto got = f({xv, hv, Wv, Uv});
  std::vector<double> h(hv.data<double>(), hv.data<double>() + H);
  for (int t = 0; t < T; ++t) {
    double hs = 0;
    for (double v : h) hs += v;
    EXPECT_NEAR(got[1].get_flat(t), hs, 1e-12);
    std::vector<double> nh(H);
    for (int i = 0; i < H; ++i) {
      double acc = 0;
      for (int j = 0; j < H; ++j) acc += Wv.data<double>()[i * H + j] * h[j];
      for (int j = 0; j < I; ++j) acc += Uv.data<double>()[i * I + j] * xv.data<double>()[t * I + j];
      nh[i] = std::tanh(acc);
    }
    h = nh;
    for (int i = 0; i < H; ++i) EXPECT_NEAR(got[0].get_flat(t * H + i), h[i], 1e-12);
  }
}

TEST(Scan, TapsNitsotsAndBackwards) {
  // Fibonacci-like state with taps [-2, -1], a sequence read at taps [-1, 0, 1], a nit-sot.
  Var seq = vector("seq", DType::Float64), init = vector("init", DType::Float64);
  ScanInfo info;
  info.seq_taps = {{-1, 0, 1}};
  info.state_taps = {{-2, -1}};
  info.state_traced = {true};
  info.n_nitsot = 1;
  Var sm1 = scalar("", DType::Float64), s0 = scalar("", DType::Float64), sp1 = scalar("", DType::Float64);
  Var f2 = scalar("", DType::Float64), f1 = scalar("", DType::Float64);
  Var next = f2 + f1 + sm1 * 0.0 + sp1 * 0.0;
  Var n_steps = shape_i(seq, 0) - int_constant(2);
  auto outs = scan_node(info, {sm1, s0, sp1, f2, f1}, {next, sm1 + s0 + sp1}, n_steps, {seq}, {init}, {});
  NDArray sv = make_array({1, 2, 3, 4, 5, 6}, {6}, DType::Float64);
  Function f = function({In(seq), In(init)}, {outs[0], outs[1]});
  auto r = f({sv, make_array({1, 1}, {2}, DType::Float64)});
  EXPECT_ALLCLOSE(r[0], make_array({2, 3, 5, 8}, {4}, DType::Float64), 0, 0);
  EXPECT_ALLCLOSE(r[1], make_array({6, 9, 12, 15}, {4}, DType::Float64), 0, 0);
  // go_backwards: the sequence from its end.
  Var x = vector("x", DType::Float64), z = scalar("z", DType::Float64);
  auto back =
      scan([](const std::vector<Var>& a) { return std::vector<Var>{a[1] * 2.0 + a[0]}; }, {x}, {z}, {}, nullptr, true);
  NDArray bv =
      run1(back[0], {{x, make_array({1, 2, 3}, {3}, DType::Float64)}, {z, make_array({0}, {}, DType::Float64)}});
  EXPECT_ALLCLOSE(bv, make_array({3, 8, 17}, {3}, DType::Float64), 0, 0);
}

TEST(Scan, UntilStopsAndZeroSteps) {
  // x_t = 2 x_{t-1} until x > 100: the step that crosses is kept.
  Var x0 = scalar("x0", DType::Float64);
  ScanInfo info;
  info.state_taps = {{-1}};
  info.state_traced = {true};
  info.until = true;
  Var prev = scalar("prev", DType::Float64);
  Var nxt = prev * 2.0;
  auto outs = scan_node(info, {prev}, {nxt, gt(nxt, constant(100.0, DType::Float64))}, int_constant(1000), {},
                        {expand_dims(x0, 0)}, {});
  NDArray r = run1(outs[0], {{x0, make_array({3}, {}, DType::Float64)}});
  EXPECT_ALLCLOSE(r, make_array({6, 12, 24, 48, 96, 192}, {6}, DType::Float64), 0, 0);
  Var n = scalar("n", DType::Int64);
  Var x = vector("x", DType::Float64);
  auto zero = scan(
      [](const std::vector<Var>& a) {
        return std::vector<Var>{a[0] + 1.0, a[0] * 2.0};
      },
      {}, {x, nullptr}, {}, n);
  Function f = function({In(x), In(n)}, {zero[0], zero[1]});
  auto z = f({make_array({1, 2}, {2}, DType::Float64), make_array({0}, {}, DType::Int64)});
  EXPECT_EQ(z[0].shape(), (Shape{0, 2}));
  EXPECT_EQ(z[1].shape()[0], 0);
}

TEST(Scan, AnUntilLoopAllocatesForTheStepsItRunsNotForItsBound) {
  // n_steps is a bound of 2^40 steps. The traces, the state's and a nit-sot's, start at 64 MiB
  // (256 rows of this 256 KiB state) and double as the steps need (300 steps: grown once), on the
  // host and on a device (the emulated GPU: the loop's device memory path); the second call
  // starts at the first's 300.
  constexpr int64_t kElems = 32768, kSteps = 300;
  Var x0 = vector("x0", DType::Float64);
  ScanInfo info;
  info.state_taps = {{-1}};
  info.state_traced = {true};
  info.n_nitsot = 1;
  info.until = true;
  Var prev = vector("prev", DType::Float64);
  Var nxt = prev + 1.0;
  // x0 is zeros: after step t (from 1) every element is t, the sum t * kElems.
  auto outs = scan_node(info, {prev}, {nxt, nxt * 2.0, ge(sum(nxt), constant(double(kSteps * kElems), DType::Float64))},
                        int_constant(int64_t{1} << 40), {}, {expand_dims(x0, 0)}, {});
  testing::EmulatedGpu gpu;
  for (const char* backend : {"cpu", hypatia::testing::kEmulatedGpuBackend}) {
    SCOPED_TRACE(backend);
    // (DebugMode would run each of the 300 steps' 256 KiB again on the reference kernels.)
    const bool saved = config().debug_checks;
    config().debug_checks = false;
    FunctionOptions o;
    o.backend = backend;
    Function f = function({In(x0)}, {outs[0], outs[1]}, o);
    config().debug_checks = saved;
    for (int call = 0; call < 2; ++call) {
      auto r = f({NDArray::zeros({kElems}, DType::Float64)});
      ASSERT_EQ(r[0].shape(), (Shape{kSteps, kElems}));
      ASSERT_EQ(r[1].shape(), (Shape{kSteps, kElems}));
      for (int64_t t = 0; t < kSteps; ++t)
        for (int64_t k : {int64_t{0}, kElems / 2, kElems - 1}) {
          EXPECT_EQ(r[0].get_flat(t * kElems + k), t + 1) << t;
          EXPECT_EQ(r[1].get_flat(t * kElems + k), 2.0 * (t + 1)) << t;
        }
    }
  }
}

TEST(Scan, SequenceWorkIsPushedOutOfTheLoop) {
  // x_t U + b depends only on the sequence: one product over the whole sequence outside the loop;
  // the result equals the loop's with the rule excluded.
  Var xs = matrix("xs", DType::Float64), h0 = vector("h0", DType::Float64);
  Var W = matrix("W", DType::Float64), U = matrix("U", DType::Float64), b = vector("b", DType::Float64);
  auto outs =
      scan([](const std::vector<Var>& a) { return std::vector<Var>{tanh(dot(a[1], a[2]) + (dot(a[0], a[3]) + a[4]))}; },
           {xs}, {h0}, {W, U, b});
  Var cost = sum(outs[0]);
  std::vector<Var> g = grad(cost, {W, U, b});
  Function f = function({In(xs), In(h0), In(W), In(U), In(b)}, {outs[0], g[0], g[1], g[2]});
  auto dots_outside = [](const Function& fn) {
    int k = 0;
    for (const auto& n : fn.toposort())
      if (n->op->name() == "dot" || n->op->name().rfind("Gemm", 0) == 0) ++k;
    return k;
  };
  EXPECT_GE(dots_outside(f), 1);
  const std::string saved = config().optimizer_excluding;
  config().optimizer_excluding = "local_scan_push_out_seq";
  Function plain = function({In(xs), In(h0), In(W), In(U), In(b)}, {outs[0], g[0], g[1], g[2]});
  config().optimizer_excluding = saved;
  EXPECT_EQ(dots_outside(plain), 0);
  std::vector<NDArray> args{
      random_array({7, 2}, DType::Float64, -1, 1, 31), random_array({3}, DType::Float64, -1, 1, 32),
      random_array({3, 3}, DType::Float64, -0.5, 0.5, 33), random_array({2, 3}, DType::Float64, -1, 1, 34),
      random_array({3}, DType::Float64, -1, 1, 35)};
  auto a = f(args), p = plain(args);
  for (size_t i = 0; i < a.size(); ++i) EXPECT_ALLCLOSE(a[i], p[i], 1e-12, 1e-12);
}

TEST(Scan, ScansOverTheSameStepsMergeIntoOneLoop) {
  // A cumulative sum and a cumulative product of one sequence (and a third scan reading the
  // first's output, which cannot join them) run as two loops instead of three; values as before.
  for (bool checks : {false, true}) {
    testing::DebugChecks dc(checks);
    Var x = vector("x", DType::Float64), a0 = scalar("a0", DType::Float64), b0 = scalar("b0", DType::Float64);
    auto cs = scan([](const std::vector<Var>& a) { return std::vector<Var>{a[1] + a[0]}; }, {x}, {a0});
    auto cp = scan(
        [](const std::vector<Var>& a) {
          return std::vector<Var>{a[1] * a[0], a[0] * 2.0};
        },
        {x}, {b0, nullptr});
    auto dep = scan([](const std::vector<Var>& a) { return std::vector<Var>{a[1] - a[0]}; }, {cs[0]}, {a0});
    Function f = function({In(x), In(a0), In(b0)}, {cs[0], cp[0], cp[1], dep[0]});
    int loops = 0;
    for (const auto& n : f.toposort()) loops += typeid(*n->op) == typeid(Scan);
    EXPECT_EQ(loops, 2);
    auto r = f({make_array({1, 2, 3, 4}, {4}, DType::Float64), make_array({0}, {}, DType::Float64),
                make_array({1}, {}, DType::Float64)});
    EXPECT_ALLCLOSE(r[0], make_array({1, 3, 6, 10}, {4}, DType::Float64), 0, 0);
    EXPECT_ALLCLOSE(r[1], make_array({1, 2, 6, 24}, {4}, DType::Float64), 0, 0);
    EXPECT_ALLCLOSE(r[2], make_array({2, 4, 6, 8}, {4}, DType::Float64), 0, 0);
    EXPECT_ALLCLOSE(r[3], make_array({-1, -4, -10, -20}, {4}, DType::Float64), 0, 0);
    const std::string saved = config().optimizer_excluding;
    config().optimizer_excluding = "scan_merge";
    Function g = function({In(x), In(a0), In(b0)}, {cs[0], cp[0], cp[1], dep[0]});
    config().optimizer_excluding = saved;
    loops = 0;
    for (const auto& n : g.toposort()) loops += typeid(*n->op) == typeid(Scan);
    EXPECT_EQ(loops, 3);
  }
}

TEST(Scan, CallsFromFourThreadsAtOnce) {
  // Each call runs in a frame of its own; the body (a sub-program) is shared and thread-safe.
  Var xs = matrix("xs", DType::Float64), h0 = vector("h0", DType::Float64), W = matrix("W", DType::Float64);
  auto outs =
      scan([](const std::vector<Var>& a) { return std::vector<Var>{tanh(dot(a[2], a[1]) + a[0])}; }, {xs}, {h0}, {W});
  Var g = grad(sum(outs[0]), W);
  Function f = function({In(xs), In(h0), In(W)}, {outs[0], g});
  std::vector<NDArray> args{random_array({20, 4}, DType::Float64, -1, 1, 41),
                            random_array({4}, DType::Float64, -1, 1, 42),
                            random_array({4, 4}, DType::Float64, -0.5, 0.5, 43)};
  const auto want = f(args);
  std::vector<std::thread> threads;
  std::atomic<int> bad{0};
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < 20; ++i) {
        auto got = f(args);
        if (!testing::compare_arrays(got[0], want[0], 0, 0).empty() ||
            !testing::compare_arrays(got[1], want[1], 0, 0).empty())
          ++bad;
      }
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(bad.load(), 0);
}

/// The raw bytes of a (contiguous copy of an) array, for bit-for-bit comparisons.
std::vector<std::byte> bytes_of(const NDArray& a) {
  const NDArray c = a.ascontiguous();
  return std::vector<std::byte>(c.data<std::byte>(), c.data<std::byte>() + c.nbytes());
}

TEST(Scan, ScalarBodiesMatchTheArrayPathBitForBit) {
  // A body of 0-d values runs on elements (InnerRunner::run_scalars, no arrays per step); the
  // same recurrence on 1-element vectors runs on arrays. Both must give the same bits: fused
  // transcendentals and a nit-sot in float32 and float64, a two-tap state of which only the last
  // value is read (a ring buffer), integer arithmetic, outputs that are an input or a constant.
  const int T = 37;
  for (DType dt : {DType::Float32, DType::Float64}) {
    SCOPED_TRACE(dtype_name(dt));
    auto body = [dt](const std::vector<Var>& a) {
      Var s = a[0], x = a[1];
      Var nx = tanh(x * constant(0.9, dt) + s) + exp(-x) * constant(0.1, dt);
      return std::vector<Var>{nx, nx * s + sqrt(abs(x))};
    };
    NDArray sv = random_array({T}, dt, -2, 2, 7), xv = make_array({0.3}, {}, dt);
    Var s1 = vector("s", dt), x1 = scalar("x0", dt);
    auto o1 = scan(body, {s1}, {x1, nullptr});
    auto r1 = function({In(s1), In(x1)}, {o1[0], o1[1]})({sv, xv});
    Var s2 = matrix("s", dt), x2 = vector("x0", dt);
    auto o2 = scan(body, {s2}, {x2, nullptr});
    auto r2 = function({In(s2), In(x2)}, {o2[0], o2[1]})({sv.reshape({T, 1}), xv.reshape({1})});
    EXPECT_EQ(bytes_of(r1[0]), bytes_of(r2[0]));
    EXPECT_EQ(bytes_of(r1[1]), bytes_of(r2[1]));
    EXPECT_EQ(r1[0].shape(), (Shape{T}));
  }
  {
    // Fibonacci with taps [-2, -1], only the last value read.
    auto fib = [](int ndim) {
      Var init = ndim == 0 ? vector("init", DType::Float64) : matrix("init", DType::Float64);
      ScanInfo info;
      info.state_taps = {{-2, -1}};
      info.state_traced = {true};
      Var a = ndim == 0 ? scalar("", DType::Float64) : vector("", DType::Float64);
      Var b = ndim == 0 ? scalar("", DType::Float64) : vector("", DType::Float64);
      auto outs = scan_node(info, {a, b}, {a + b * 1.0000001}, int_constant(60), {}, {init}, {});
      Function f = function({In(init)}, {subtensor(outs[0], {Index(int64_t{-1})})});
      NDArray iv = make_array({1, 1}, {2}, DType::Float64);
      return f({ndim == 0 ? iv : iv.reshape({2, 1})})[0];
    };
    const NDArray a = fib(0), b = fib(1);
    EXPECT_EQ(bytes_of(a), bytes_of(b));
    EXPECT_NEAR(a.get_flat(0), 4.05e12, 0.01e12);
  }
  {
    // int32: x_t = (3 x + s_t) mod 1001, with x // 7, the input itself and a constant as nit-sots.
    Var s = vector("s", DType::Int32), x0 = scalar("x0", DType::Int32);
    auto outs = scan(
        [](const std::vector<Var>& a) {
          Var nx = (a[1] * constant(3, DType::Int32) + a[0]) % constant(1001, DType::Int32);
          return std::vector<Var>{nx, int_div(nx, constant(7, DType::Int32)), a[0], constant(2.5, DType::Float64)};
        },
        {s}, {x0, nullptr, nullptr, nullptr});
    std::vector<double> sv(T);
    for (int t = 0; t < T; ++t) sv[t] = (t * 37) % 101 - 50;
    auto r = function({In(s), In(x0)}, {outs[0], outs[1], outs[2], outs[3]})(
        {make_array(sv, {T}, DType::Int32), make_array({5}, {}, DType::Int32)});
    int64_t x = 5;
    for (int t = 0; t < T; ++t) {
      x = ((3 * x + static_cast<int64_t>(sv[t])) % 1001 + 1001) % 1001;  // numpy's sign rule (divisor's)
      EXPECT_EQ(r[0].get_flat_int(t), x) << t;
      EXPECT_EQ(r[1].get_flat_int(t), x / 7) << t;
      EXPECT_EQ(r[2].get_flat_int(t), static_cast<int64_t>(sv[t])) << t;
      EXPECT_EQ(r[3].get_flat(t), 2.5) << t;
    }
  }
  {
    // x_t = 2 x_{t-1} until x > 100 (an int8 condition), with a nit-sot.
    Var x0 = scalar("x0", DType::Float32);
    ScanInfo info;
    info.state_taps = {{-1}};
    info.state_traced = {true};
    info.n_nitsot = 1;
    info.until = true;
    Var prev = scalar("prev", DType::Float32);
    Var nxt = prev * constant(2.0, DType::Float32);
    auto outs =
        scan_node(info, {prev}, {nxt, prev + constant(1.0, DType::Float32), gt(nxt, constant(100.0, DType::Float32))},
                  int_constant(1000), {}, {expand_dims(x0, 0)}, {});
    auto r = function({In(x0)}, {outs[0], outs[1]})({make_array({3}, {}, DType::Float32)});
    EXPECT_ALLCLOSE(r[0], make_array({6, 12, 24, 48, 96, 192}, {6}, DType::Float32), 0, 0);
    EXPECT_ALLCLOSE(r[1], make_array({4, 7, 13, 25, 49, 97}, {6}, DType::Float32), 0, 0);
  }
}

TEST(Scan, ScalarStepsOverRingsOfDifferentWindowsTracedStatesAndSequenceTaps) {
  // The element pointers of a scalar loop are laid out before it: rings (untraced states, of
  // windows 1 and 3: one period of 4), a traced state reading two steps back, a sequence at taps
  // [0, 2], a non-sequence, a nit-sot and an until condition. Against the same loop on
  // 1-element vectors (bit for bit) and a plain C++ loop.
  const int T = 40;
  const NDArray xv = random_array({T + 2}, DType::Float64, -1, 1, 41);
  for (double limit : {1e9, 0.92}) {  // the condition never holds / stops the loop early
    SCOPED_TRACE(limit);
    auto run = [&](int ndim) {
      auto v = [&](const char* name) {
        return ndim == 0 ? scalar(name, DType::Float64) : vector(name, DType::Float64);
      };
      ScanInfo info;
      info.seq_taps = {{0, 2}};
      info.state_taps = {{-1}, {-3, -1}, {-2}};
      info.state_traced = {false, false, true};
      info.n_nitsot = 1;
      info.until = true;
      Var x0 = v("x0"), x2 = v("x2"), a1 = v("a1"), b3 = v("b3"), b1 = v("b1"), c2 = v("c2"), w = v("w");
      Var na = a1 * 0.5 + x0, nb = b3 - b1 * 0.25 + x2 * w, nc = c2 + na * nb * 0.125;
      Var xs = ndim == 0 ? vector("xs", DType::Float64) : matrix("xs", DType::Float64);
      Var ia = ndim == 0 ? vector("ia", DType::Float64) : matrix("ia", DType::Float64);
      Var ib = ndim == 0 ? vector("ib", DType::Float64) : matrix("ib", DType::Float64);
      Var ic = ndim == 0 ? vector("ic", DType::Float64) : matrix("ic", DType::Float64);
      Var wv = v("w");
      auto outs = scan_node(info, {x0, x2, a1, b3, b1, c2, w},
                            {na, nb, nc, na + c2, gt(ndim == 0 ? nc : sum(nc), constant(limit, DType::Float64))},
                            int_constant(T), {xs}, {ia, ib, ic}, {wv});
      Function f = function({In(xs), In(ia), In(ib), In(ic), In(wv)}, {outs[0], outs[1], outs[2], outs[3]});
      auto shaped = [&](const NDArray& a) { return ndim == 0 ? a : a.reshape({a.size(), 1}); };
      const NDArray w0 = make_array({0.75}, {}, DType::Float64);
      return f({shaped(xv), shaped(make_array({0.2}, {1}, DType::Float64)),
                shaped(make_array({0.1, -0.3, 0.4}, {3}, DType::Float64)),
                shaped(make_array({0.5, -0.5}, {2}, DType::Float64)), ndim == 0 ? w0 : w0.reshape({1})});
    };
    const auto r0 = run(0), r1 = run(1);
    for (size_t k = 0; k < r0.size(); ++k) EXPECT_EQ(bytes_of(r0[k]), bytes_of(r1[k])) << k;
    // The plain loop.
    std::vector<double> a{0.2}, b{0.1, -0.3, 0.4}, c{0.5, -0.5}, y;
    int steps = 0;
    for (int t = 0; t < T; ++t) {
      const double na = a.back() * 0.5 + xv.get_flat(t);
      const double nb = b[b.size() - 3] - b.back() * 0.25 + xv.get_flat(t + 2) * 0.75;
      const double nc = c[c.size() - 2] + na * nb * 0.125;
      y.push_back(na + c[c.size() - 2]);
      a.push_back(na);
      b.push_back(nb);
      c.push_back(nc);
      ++steps;
      if (nc > limit) break;
    }
    if (limit < 1e9) {
      EXPECT_LT(steps, T);
    }
    EXPECT_DOUBLE_EQ(r0[0].get_flat(0), a.back());
    EXPECT_DOUBLE_EQ(r0[1].get_flat(0), b.back());
    ASSERT_EQ(r0[2].shape(), (Shape{steps}));
    ASSERT_EQ(r0[3].shape(), (Shape{steps}));
    for (int t = 0; t < steps; ++t) {
      EXPECT_DOUBLE_EQ(r0[2].get_flat(t), c[static_cast<size_t>(t) + 2]) << t;
      EXPECT_DOUBLE_EQ(r0[3].get_flat(t), y[static_cast<size_t>(t)]) << t;
    }
  }
}

TEST(Scan, FunctionRunnerOnScalarsAndArrays) {
  // Function::runner(): a function of 0-d values runs on elements, others on arrays with their
  // buffers kept from one run to the next.
  testing::DebugChecks fast(false);
  Var x = scalar("x", DType::Float64), y = scalar("y", DType::Float64);
  Function f = function({In(x), In(y)}, {x * y + 1.0, x, constant(4.0, DType::Float64)});
  auto r = f.runner();
  ASSERT_TRUE(r->scalar());
  double in[2] = {3, 5}, out[3] = {0, 0, 0};
  const std::byte* pin[2] = {reinterpret_cast<const std::byte*>(&in[0]), reinterpret_cast<const std::byte*>(&in[1])};
  std::byte* pout[3] = {reinterpret_cast<std::byte*>(&out[0]), reinterpret_cast<std::byte*>(&out[1]),
                        reinterpret_cast<std::byte*>(&out[2])};
  r->run_scalars(pin, pout);
  EXPECT_EQ(out[0], 16);
  EXPECT_EQ(out[1], 3);
  EXPECT_EQ(out[2], 4);
  std::vector<NDArray> outs(3);
  const std::vector<NDArray> xy{make_array({2}, {}, DType::Float64), make_array({4}, {}, DType::Float64)};
  r->run(xy, outs);
  EXPECT_EQ(outs[0].get_flat(0), 9);
  Var v = vector("v", DType::Float64);
  Function g = function({In(v)}, {exp(v) * 2.0});
  auto rv = g.runner();
  EXPECT_FALSE(rv->scalar());
  std::vector<NDArray> o(1);
  const NDArray a = random_array({100}, DType::Float64, -1, 1, 3);
  rv->run(std::vector<NDArray>{a}, o);
  const std::byte* first = o[0].data<std::byte>();
  EXPECT_ALLCLOSE(o[0], g({a})[0], 0, 0);
  rv->run(std::vector<NDArray>{a}, o);  // the output the caller gave back is this run's buffer
  EXPECT_EQ(o[0].data<std::byte>(), first);
  EXPECT_ERROR(TypeError, rv->run(std::vector<NDArray>{make_array({1}, {}, DType::Float64)}, o), "expected");
  rv->release();
}

TEST(Scan, Errors) {
  Var x = vector("x", DType::Float64), s0 = scalar("s0", DType::Float32);
  EXPECT_ERROR(TypeError, scan([](const std::vector<Var>& a) { return std::vector<Var>{a[1] + a[0]}; }, {x}, {s0}),
               "but its initial value (outputs_info) is TensorType(float32, scalar)");
  // A state whose window is shorter than its taps reach.
  Var init = vector("init", DType::Float64);
  ScanInfo info;
  info.state_taps = {{-3, -1}};
  info.state_traced = {true};
  Var a = scalar("", DType::Float64), b = scalar("", DType::Float64);
  auto outs = scan_node(info, {a, b}, {a + b}, int_constant(3), {}, {init}, {});
  EXPECT_ERROR(ValueError, run1(outs[0], {{init, make_array({1, 2}, {2}, DType::Float64)}}),
               "reads 3 past values (taps down to -3) but its initial value has 2 entries");
  EXPECT_ERROR(ValueError, ScanInfo i2; i2.state_taps = {{0}}; i2.state_traced = {true};
               scan_node(i2, {a}, {a}, int_constant(1), {}, {init}, {}), "can only read past steps");
  Var n = scalar("n", DType::Int64);
  auto o2 = scan([](const std::vector<Var>& v) { return std::vector<Var>{v[0] * 2.0}; }, {x}, {nullptr}, {}, n);
  Function f = function({In(x), In(n)}, {o2[0]});
  EXPECT_ERROR(ValueError, f({make_array({1, 2}, {2}, DType::Float64), make_array({5}, {}, DType::Int64)}),
               "sequence 0 has 2 entries; 5 steps");
}

}  // namespace
}  // namespace hypatia
