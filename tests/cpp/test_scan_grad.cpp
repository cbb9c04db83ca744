// Scan's gradient: BPTT against finite differences (verify_grad) and hand-written loops on an RNN,
// an LSTM, a gated recurrence with several taps, go_backwards and until; the weights' sums in the
// body or pushed out of the loop as products (their traces counted), residuals read from the
// forward loop, truncate_gradient, second derivatives, ScanGrad as the Scan it equals, output
// gradients given as one step, and R_op.
// The forward loops are in test_scan.cpp.
#include <cmath>

#include "hypatia/ops/scan.h"
#include "test_util.h"

namespace hypatia {
namespace {
using testing::make_array;
using testing::random_array;

TEST(Scan, GradientOfAnRnnMatchesFiniteDifferences) {
  const NDArray xv = random_array({5, 2}, DType::Float64, -1, 1, 7), hv = random_array({3}, DType::Float64, -1, 1, 8);
  const NDArray Wv = random_array({3, 3}, DType::Float64, -0.8, 0.8, 9);
  const NDArray Uv = random_array({3, 2}, DType::Float64, -0.8, 0.8, 10);
  verify_grad(
      [](const std::vector<Var>& v) {
        auto outs =
            scan([](const std::vector<Var>& a) { return std::vector<Var>{tanh(dot(a[2], a[1]) + dot(a[3], a[0]))}; },
                 {v[0]}, {v[1]}, {v[2], v[3]});
        return outs[0];
      },
      {xv, hv, Wv, Uv});
}

/// numpy-style BPTT of sum(h_T) for h_t = tanh(h_{t-1} W + x_t U) (x: (T, B, H), h0: (B, H)),
/// through the last `steps` steps (all when -1): the gradients of W and U.
std::pair<std::vector<double>, std::vector<double>> hand_bptt(const NDArray& xv, const NDArray& hv, const NDArray& Wv,
                                                              const NDArray& Uv, int T, int steps = -1) {
  const int B = static_cast<int>(hv.shape(0)), H = static_cast<int>(hv.shape(1));
  auto mm = [](const std::vector<double>& a, const std::vector<double>& b, int n, int k, int m, bool ta) {
    std::vector<double> c(static_cast<size_t>(n * m), 0.0);
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < m; ++j)
        for (int l = 0; l < k; ++l) c[i * m + j] += (ta ? a[l * n + i] : a[i * k + l]) * b[l * m + j];
    return c;
  };
  auto vec = [](const NDArray& a) { return std::vector<double>(a.data<double>(), a.data<double>() + a.size()); };
  std::vector<std::vector<double>> h{vec(hv)};
  const std::vector<double> w = vec(Wv), u = vec(Uv);
  for (int t = 0; t < T; ++t) {
    std::vector<double> xt(xv.data<double>() + t * B * H, xv.data<double>() + (t + 1) * B * H);
    auto a = mm(h.back(), w, B, H, H, false), b = mm(xt, u, B, H, H, false);
    for (size_t i = 0; i < a.size(); ++i) a[i] = std::tanh(a[i] + b[i]);
    h.push_back(a);
  }
  std::vector<double> dW(H * H, 0.0), dU(H * H, 0.0), dh(B * H, 1.0);
  for (int t = T - 1; t >= (steps < 0 ? 0 : T - steps); --t) {
    std::vector<double> dz(B * H);
    for (int i = 0; i < B * H; ++i) dz[i] = dh[i] * (1 - h[t + 1][i] * h[t + 1][i]);
    std::vector<double> xt(xv.data<double>() + t * B * H, xv.data<double>() + (t + 1) * B * H);
    auto a = mm(h[t], dz, H, B, H, true), b = mm(xt, dz, H, B, H, true);
    for (int i = 0; i < H * H; ++i) {
      dW[i] += a[i];
      dU[i] += b[i];
    }
    std::vector<double> wt(H * H);
    for (int i = 0; i < H; ++i)
      for (int j = 0; j < H; ++j) wt[j * H + i] = w[i * H + j];
    dh = mm(dz, wt, B, H, H, false);
  }
  return {dW, dU};
}

TEST(Scan, NonSequenceGradientsAccumulateInTheBodyOnEveryPath) {
  // The weights' gradients are summed in the body (accumulator inputs the body may overwrite):
  // in place by a Gemm on the CPU outside DebugMode, by a separate sum in FAST_COMPILE (the body
  // returns a buffer of its own), and in DebugMode against the reference kernels. All agree with
  // a hand-written BPTT.
  const int T = 7, B = 4, H = 5;
  const NDArray xv = random_array({T, B, H}, DType::Float64, -1, 1, 17),
                hv = random_array({B, H}, DType::Float64, -1, 1, 18);
  const NDArray Wv = random_array({H, H}, DType::Float64, -0.6, 0.6, 19),
                Uv = random_array({H, H}, DType::Float64, -0.6, 0.6, 20);
  Var xs = tensor3("xs", DType::Float64), h0 = matrix("h0", DType::Float64);
  Var W = matrix("W", DType::Float64), U = matrix("U", DType::Float64);
  auto hs = scan([](const std::vector<Var>& a) { return std::vector<Var>{tanh(dot(a[1], a[2]) + dot(a[0], a[3]))}; },
                 {xs}, {h0}, {W, U});
  Var cost = sum(subtensor(hs[0], {Index(int64_t{-1})}));
  auto g = grad(cost, std::vector<Var>{W, U});
  const auto [dW, dU] = hand_bptt(xv, hv, Wv, Uv, T);
  const NDArray want_W = make_array(dW, {H, H}, DType::Float64), want_U = make_array(dU, {H, H}, DType::Float64);
  for (const char* mode : {"FAST_RUN", "FAST_COMPILE"})
    for (bool checks : {false, true}) {
      SCOPED_TRACE(std::string(mode) + (checks ? " DebugMode" : ""));
      testing::DebugChecks dc(checks);
      FunctionOptions o;
      o.mode = mode;
      Function f = function({In(xs), In(h0), In(W), In(U)}, {g[0], g[1]}, o);
      for (int rep = 0; rep < 2; ++rep) {  // a second call reuses the buffers of the first
        auto r = f({xv, hv, Wv, Uv});
        EXPECT_ALLCLOSE(r[0], want_W, 1e-10, 1e-12);
        EXPECT_ALLCLOSE(r[1], want_U, 1e-10, 1e-12);
      }
    }
}

TEST(Scan, GradientOfTheSequenceAloneDropsTheNonSequenceSums) {
  // Regression: only the sequence's gradient is read, so local_scan_grad_unused drops w's sum from
  // the body; its accumulator input went with it (it was left unbound: "got an empty NDArray").
  Var x = vector("x", DType::Float64), s0 = scalar("s0", DType::Float64), w = scalar("w", DType::Float64);
  auto hs = scan([](const std::vector<Var>& a) { return std::vector<Var>{tanh(a[1] * a[2] + a[0])}; }, {x}, {s0}, {w});
  Var gx = grad(sum(hs[0] * hs[0]), x);
  for (bool checks : {false, true}) {
    testing::DebugChecks dc(checks);
    Function f = function({In(x), In(s0), In(w)}, {gx});
    const NDArray xv = make_array({0.1, -0.2, 0.3}, {3}, DType::Float64);
    auto r = f({xv, make_array({0.5}, {}, DType::Float64), make_array({0.9}, {}, DType::Float64)});
    // Hand BPTT.
    std::vector<double> s{0.5};
    for (int t = 0; t < 3; ++t) s.push_back(std::tanh(s.back() * 0.9 + xv.get_flat(t)));
    double ds = 0;
    std::vector<double> want(3);
    for (int t = 2; t >= 0; --t) {
      ds += 2 * s[t + 1];
      const double dz = ds * (1 - s[t + 1] * s[t + 1]);
      want[t] = dz;
      ds = dz * 0.9;
    }
    EXPECT_ALLCLOSE(r[0], make_array(want, {3}, DType::Float64), 1e-12, 1e-14);
  }
}

TEST(Scan, WeightGradientsArePushedOutOfTheBackwardLoop) {
  // dot(h_{t-1}, W) and dot(x_t, U): their gradients sum_t a_t^T b_t become per-step traces of the
  // ScanGrad and one matrix product each after the loop; truncated steps contribute nothing and a
  // loop of zero steps gives zeros of the weights' shape.
  const int T = 7, B = 3, H = 4, K = 3;
  const NDArray xv = random_array({T, B, H}, DType::Float64, -1, 1, 27),
                hv = random_array({B, H}, DType::Float64, -1, 1, 28);
  const NDArray Wv = random_array({H, H}, DType::Float64, -0.6, 0.6, 29),
                Uv = random_array({H, H}, DType::Float64, -0.6, 0.6, 30);
  Var xs = tensor3("xs", DType::Float64), h0 = matrix("h0", DType::Float64), n = scalar("n", DType::Int64);
  Var W = matrix("W", DType::Float64), U = matrix("U", DType::Float64);
  ScanInfo info;
  info.seq_taps = {{0}};
  info.state_taps = {{-1}};
  info.state_traced = {true};
  info.truncate_gradient = K;
  Var x_t = matrix("", DType::Float64), h_p = matrix("", DType::Float64);
  Var Wi = matrix("", DType::Float64), Ui = matrix("", DType::Float64);
  auto hs =
      scan_node(info, {x_t, h_p, Wi, Ui}, {tanh(dot(h_p, Wi) + dot(x_t, Ui))}, n, {xs}, {expand_dims(h0, 0)}, {W, U});
  auto g = grad(sum(subtensor(hs[0], {Index(int64_t{-1})})), std::vector<Var>{W, U});
  for (bool checks : {false, true}) {
    SCOPED_TRACE(checks ? "DebugMode" : "FAST_RUN");
    testing::DebugChecks dc(checks);
    Function f = function({In(xs), In(h0), In(W), In(U), In(n)}, {g[0], g[1]});
    size_t pushed = 0;
    for (const auto& node : f.toposort())
      if (const auto* sg = dynamic_cast<const ScanGrad*>(node->op.get())) pushed = sg->step_of.size();
    // (h_{t-1}, dz_t) for W, (x_t, dz_t) for U: dz_t traced once; under truncate_gradient the
    // inputs are traced too (their skipped rows must be zeros).
    EXPECT_EQ(pushed, 3u);
    const auto [dW, dU] = hand_bptt(xv, hv, Wv, Uv, T, K);
    auto r = f({xv, hv, Wv, Uv, make_array({T}, {}, DType::Int64)});
    EXPECT_ALLCLOSE(r[0], make_array(dW, {H, H}, DType::Float64), 1e-10, 1e-12);
    EXPECT_ALLCLOSE(r[1], make_array(dU, {H, H}, DType::Float64), 1e-10, 1e-12);
    // Zero steps (the cost reads every step, so no index -1 of an empty trace).
    auto g2 = grad(sum(hs[0]), std::vector<Var>{W, U});
    Function f2 = function({In(xs), In(h0), In(W), In(U), In(n)}, {g2[0], g2[1]});
    auto z = f2({xv, hv, Wv, Uv, make_array({0}, {}, DType::Int64)});
    EXPECT_ALLCLOSE(z[0], NDArray::zeros({H, H}, DType::Float64), 0, 0);
    EXPECT_ALLCLOSE(z[1], NDArray::zeros({H, H}, DType::Float64), 0, 0);
  }
}

TEST(Scan, PushedOutProductsReadTheInputsWhereTheyLie) {
  // Without truncation the products read x_t from the sequence: the backward loop traces h_{t-1}
  // and dz_t, the latter once for both weights. Several taps (h_{t-2}, h_{t-1}; x_{t+1}) and
  // loops shorter than the window.
  const int T = 7, B = 3, H = 4;
  const NDArray xv = random_array({T + 1, B, H}, DType::Float64, -1, 1, 31),
                hv = random_array({2, B, H}, DType::Float64, -1, 1, 32);
  const NDArray Wv = random_array({H, H}, DType::Float64, -0.6, 0.6, 33),
                Vv = random_array({H, H}, DType::Float64, -0.6, 0.6, 34),
                Uv = random_array({H, H}, DType::Float64, -0.6, 0.6, 35);
  {
    Var xs = tensor3("xs", DType::Float64), h0 = matrix("h0", DType::Float64);
    Var W = matrix("W", DType::Float64), U = matrix("U", DType::Float64);
    auto hs = scan([](const std::vector<Var>& a) { return std::vector<Var>{tanh(dot(a[1], a[2]) + dot(a[0], a[3]))}; },
                   {xs}, {h0}, {W, U});
    auto g = grad(sum(subtensor(hs[0], {Index(int64_t{-1})})), std::vector<Var>{W, U});
    Function f = function({In(xs), In(h0), In(W), In(U)}, {g[0], g[1]});
    size_t pushed = 0;
    for (const auto& node : f.toposort())
      if (const auto* sg = dynamic_cast<const ScanGrad*>(node->op.get())) pushed = sg->step_of.size();
    EXPECT_EQ(pushed, 2u);
    const NDArray x7 = xv.slice(0, 0, T, 1).copy(), h1 = hv.select(0, 0).copy();
    const auto [dW, dU] = hand_bptt(x7, h1, Wv, Uv, T);
    auto r = f({x7, h1, Wv, Uv});
    EXPECT_ALLCLOSE(r[0], make_array(dW, {H, H}, DType::Float64), 1e-10, 1e-12);
    EXPECT_ALLCLOSE(r[1], make_array(dU, {H, H}, DType::Float64), 1e-10, 1e-12);
  }
  // h_t = tanh(h_{t-2} W + h_{t-1} V + x_{t+1} U) over n steps, n = 0, 1 (shorter than the
  // window of 2), 2 and 7: against finite differences.
  for (int64_t n : {0, 1, 2, 7}) {
    SCOPED_TRACE(n);
    ScanInfo info;
    info.seq_taps = {{0, 1}};
    info.state_taps = {{-2, -1}};
    info.state_traced = {true};
    Var x0 = matrix("", DType::Float64), x1 = matrix("", DType::Float64);
    Var h2 = matrix("", DType::Float64), h1 = matrix("", DType::Float64);
    Var Wi = matrix("", DType::Float64), Vi = matrix("", DType::Float64), Ui = matrix("", DType::Float64);
    const Var body = tanh(dot(h2, Wi) + dot(h1, Vi) + dot(x1, Ui) + x0 * 0.5);
    const NDArray xn = xv.slice(0, 0, n + 1, 1).copy();
    verify_grad(
        [&](const std::vector<Var>& v) {
          auto hs = scan_node(info, {x0, x1, h2, h1, Wi, Vi, Ui}, {body}, int_constant(n), {v[0]}, {v[1]},
                              {v[2], v[3], v[4]});
          return sum(hs[0] * hs[0]);
        },
        {xn, hv, Wv, Vv, Uv});
    Var xs = tensor3("xs", DType::Float64), hw = tensor3("hw", DType::Float64);
    Var W = matrix("W", DType::Float64), V = matrix("V", DType::Float64), U = matrix("U", DType::Float64);
    auto hs = scan_node(info, {x0, x1, h2, h1, Wi, Vi, Ui}, {body}, int_constant(n), {xs}, {hw}, {W, V, U});
    auto gw = grad(sum(hs[0]), std::vector<Var>{W, V, U});
    Function f = function({In(xs), In(hw), In(W), In(V), In(U)}, {gw[0], gw[1], gw[2]});
    size_t pushed = 0;
    for (const auto& node : f.toposort())
      if (const auto* sg = dynamic_cast<const ScanGrad*>(node->op.get())) pushed = sg->step_of.size();
    EXPECT_EQ(pushed, 3u);  // h_{t-2}, h_{t-1}, dz_t
  }
}

TEST(Scan, GradientOfAGatedRecurrenceWithTapsBackwardsAndUntil) {
  // An LSTM-style gate, a state with taps [-2, -1], a sequence at taps [0, 1], go_backwards.
  const NDArray xv = random_array({6}, DType::Float64, -1, 1, 11), iv = random_array({2, 2}, DType::Float64, -1, 1, 12);
  const NDArray wv = random_array({2}, DType::Float64, -1, 1, 13);
  verify_grad(
      [](const std::vector<Var>& v) {
        ScanInfo info;
        info.seq_taps = {{0, 1}};
        info.state_taps = {{-2, -1}};
        info.state_traced = {true};
        Var x0 = scalar("", DType::Float64), x1 = scalar("", DType::Float64);
        Var hm2 = vector("", DType::Float64), hm1 = vector("", DType::Float64), w = vector("", DType::Float64);
        Var gate = sigmoid(w * x0 + hm2);
        Var h = gate * tanh(hm1 * x1) + (1.0 - gate) * hm2;
        Var seq = subtensor(v[0], {sl({}, {}, int64_t{-1})});
        auto outs = scan_node(info, {x0, x1, hm2, hm1, w}, {h}, int_constant(5), {seq}, {v[1]}, {v[2]});
        return outs[0];
      },
      {xv, iv, wv});
  // until: the gradient flows through the steps that ran only.
  const NDArray av = make_array({0.7}, {}, DType::Float64);
  verify_grad(
      [](const std::vector<Var>& v) {
        ScanInfo info;
        info.state_taps = {{-1}};
        info.state_traced = {true};
        info.until = true;
        Var prev = scalar("", DType::Float64), a = scalar("", DType::Float64);
        Var nxt = prev * a + 1.0;
        auto outs = scan_node(info, {prev, a}, {nxt, gt(nxt, constant(2.5, DType::Float64))}, int_constant(50), {},
                              {expand_dims(v[0], 0)}, {v[0]});
        return outs[0];
      },
      {av});
}

/// A small LSTM step (gates of width H from one product z = x Wx + h Wh), as a scan body.
std::vector<Var> lstm_step(const std::vector<Var>& a, const Var& Wx, const Var& Wh, int64_t H) {
  Var z = dot(a[0], Wx) + dot(a[1], Wh);
  auto gate = [&](int64_t k) { return subtensor(z, {all(), sl(k * H, (k + 1) * H)}); };
  Var c = sigmoid(gate(1)) * a[2] + sigmoid(gate(0)) * tanh(gate(3));
  return {sigmoid(gate(2)) * tanh(c), c};
}

TEST(Scan, GradientReadsTheForwardLoopsResiduals) {
  // An LSTM's gate gradients read z = x Wx + h Wh. The forward loop traces z (a residual) and the
  // backward loop reads it: one Scan runs (local_scan_twin merges the user's loop and the twin
  // that traces z), the backward body has one product (dz Wh^T) instead of three, and the
  // gradients match finite differences in every mode, with until, and at second order.
  const int64_t T = testing::kSanitizerBuild ? 3 : 5, B = 2, I = 3, H = 2;
  const NDArray xv = random_array({T, B, I}, DType::Float64, -1, 1, 61);
  const NDArray hv = random_array({B, H}, DType::Float64, -1, 1, 62),
                cv = random_array({B, H}, DType::Float64, -1, 1, 63);
  const NDArray Wxv = random_array({I, 4 * H}, DType::Float64, -0.8, 0.8, 64),
                Whv = random_array({H, 4 * H}, DType::Float64, -0.8, 0.8, 65);
  auto loop = [&](const std::vector<Var>& v) {
    return scan([&](const std::vector<Var>& a) { return lstm_step(a, v[3], v[4], H); }, {v[0]}, {v[1], v[2]});
  };
  verify_grad(
      [&](const std::vector<Var>& v) {
        auto o = loop(v);
        return sum(o[0] * o[0]) + sum(subtensor(o[1], {Index(int64_t{-1})}));
      },
      {xv, hv, cv, Wxv, Whv});
  Var xs = tensor3("xs", DType::Float64), h0 = matrix("h0", DType::Float64), c0 = matrix("c0", DType::Float64);
  Var Wx = matrix("Wx", DType::Float64), Wh = matrix("Wh", DType::Float64);
  auto o = loop({xs, h0, c0, Wx, Wh});
  Var cost = sum(subtensor(o[0], {Index(int64_t{-1})}));
  auto g = grad(cost, std::vector<Var>{Wx, Wh});
  std::vector<NDArray> want;
  for (const char* mode : {"FAST_RUN", "FAST_COMPILE"}) {
    SCOPED_TRACE(mode);
    FunctionOptions opts;
    opts.mode = mode;
    Function f = function({In(xs), In(h0), In(c0), In(Wx), In(Wh)}, {cost, g[0], g[1]}, opts);
    int scans = 0, products = -1;
    for (const auto& node : f.toposort()) {
      scans += typeid(*node->op) == typeid(Scan);
      if (const auto* sg = dynamic_cast<const ScanGrad*>(node->op.get())) {
        EXPECT_EQ(sg->info.n_nitsot, 1);  // z
        products = 0;
        for (const auto& n : toposort(sg->vjp_outputs)) products += typeid(*n->op) == typeid(Dot);
      }
    }
    if (std::string(mode) == "FAST_RUN") {
      EXPECT_EQ(scans, 1);
    }
    EXPECT_EQ(products, 1);
    auto r = f({xv, hv, cv, Wxv, Whv});
    if (want.empty()) {
      want = r;
    } else {
      for (size_t k = 0; k < r.size(); ++k) EXPECT_ALLCLOSE(r[k], want[k], 1e-12, 1e-12);
    }
  }
  {
    // Two gradients taken apart (two ScanGrads, two twins): still one forward loop.
    Var gx = grad(cost, Wx), gh = grad(sum(o[1]), Wh);
    Function f = function({In(xs), In(h0), In(c0), In(Wx), In(Wh)}, {gx, gh});
    int scans = 0, grads = 0;
    for (const auto& node : f.toposort()) {
      scans += typeid(*node->op) == typeid(Scan);
      grads += typeid(*node->op) == typeid(ScanGrad);
    }
    EXPECT_EQ(scans, 1);
    EXPECT_EQ(grads, 2);
    auto r = f({xv, hv, cv, Wxv, Whv});
    EXPECT_ALLCLOSE(r[0], want[1], 1e-12, 1e-12);
  }
  // Until: the loop stops once sum(c) > 0.2 (at a step the data decides); second order: the
  // gradient of <grad(cost, Wh), V>.
  ScanInfo info;
  info.seq_taps = {{0}};
  info.state_taps = {{-1}, {-1}};
  info.state_traced = {true, true};
  info.until = true;
  const NDArray Vv = random_array({H, 4 * H}, DType::Float64, -1, 1, 66);
  for (bool second : {false, true}) {
    SCOPED_TRACE(second ? "second order" : "until");
    verify_grad(
        [&](const std::vector<Var>& v) {
          Var x = matrix("", DType::Float64), h = matrix("", DType::Float64), c = matrix("", DType::Float64);
          Var wx = matrix("", DType::Float64), wh = matrix("", DType::Float64);
          auto body = lstm_step({x, h, c}, wx, wh, H);
          body.push_back(gt(sum(body[1]), constant(0.2, DType::Float64)));
          auto hs = second ? loop(v)
                           : scan_node(info, {x, h, c, wx, wh}, body, int_constant(T), {v[0]},
                                       {expand_dims(v[1], 0), expand_dims(v[2], 0)}, {v[3], v[4]});
          Var c2 = sum(hs[0] * hs[0]);
          return second ? sum(grad(c2, v[4]) * constant(Vv)) : c2;
        },
        {xv, hv, cv, Wxv, Whv});
  }
}

TEST(Scan, SecondDerivativesThroughScan) {
  // Hessian-vector products: the gradient of <grad(cost, W), V> differentiates the backward pass
  // (ScanGrad::grad, through the Scan it equals). An RNN whose weight gradients are pushed out of
  // the loop, then a recurrence with a two-tap state and sequence taps. Truncation stays an
  // approximation at second order (the forward Scan's gradient is truncated too, as in Theano):
  // there the test checks that the graph runs and agrees with truncation's first-order values.
  // Three steps under the sanitizers (five otherwise): the same graph, fewer finite differences.
  const NDArray xv =
                    random_array(testing::kSanitizerBuild ? Shape{3, 2, 3} : Shape{5, 2, 3}, DType::Float64, -1, 1, 51),
                hv = random_array({2, 3}, DType::Float64, -1, 1, 52);
  const NDArray Wv = random_array({3, 3}, DType::Float64, -0.7, 0.7, 53),
                Uv = random_array({3, 3}, DType::Float64, -0.7, 0.7, 54);
  const NDArray Vv = random_array({3, 3}, DType::Float64, -1, 1, 55);
  verify_grad(
      [](const std::vector<Var>& v) {
        auto hs =
            scan([](const std::vector<Var>& a) { return std::vector<Var>{tanh(dot(a[1], a[2]) + dot(a[0], a[3]))}; },
                 {v[0]}, {v[1]}, {v[2], v[3]});
        Var cost = sum(hs[0] * hs[0]);
        Var gW = grad(cost, v[2]);
        return sum(gW * v[4]);
      },
      {xv, hv, Wv, Uv, Vv});
  for (int trunc : {-1, 2}) {
    SCOPED_TRACE(trunc);
    if (trunc >= 0) {
      // s_t = s_{t-1} w over 4 steps, truncated to 2: g(w) = 2 w^3 s0 (TruncateGradient); its
      // derivative through the ScanGrad runs and is finite.
      Var w = scalar("w", DType::Float64), s0 = scalar("s0", DType::Float64);
      ScanInfo info;
      info.state_taps = {{-1}};
      info.state_traced = {true};
      info.truncate_gradient = trunc;
      Var prev = scalar("", DType::Float64), wi = scalar("", DType::Float64);
      auto outs = scan_node(info, {prev, wi}, {prev * wi}, int_constant(4), {}, {expand_dims(s0, 0)}, {w});
      Var g = grad(subtensor(outs[0], {Index(int64_t{-1})}), w);
      Var gg = grad(g, w);
      auto r = function({In(w), In(s0)},
                        {g, gg})({make_array({2}, {}, DType::Float64), make_array({1}, {}, DType::Float64)});
      EXPECT_DOUBLE_EQ(r[0].get_flat(0), 16.0);
      EXPECT_TRUE(std::isfinite(r[1].get_flat(0)));
      continue;
    }
    const NDArray sv = random_array({7, 2}, DType::Float64, -1, 1, 61),
                  iv = random_array({2, 2}, DType::Float64, -1, 1, 62);
    const NDArray wv = random_array({2}, DType::Float64, -0.8, 0.8, 63),
                  tv = random_array({2}, DType::Float64, -1, 1, 64);
    verify_grad(
        [trunc](const std::vector<Var>& v) {
          ScanInfo info;
          info.seq_taps = {{-1, 0, 1}};
          info.state_taps = {{-2, -1}};
          info.state_traced = {true};
          info.truncate_gradient = trunc;
          Var sm = vector("", DType::Float64), s0 = vector("", DType::Float64), sp = vector("", DType::Float64);
          Var f2 = vector("", DType::Float64), f1 = vector("", DType::Float64), w = vector("", DType::Float64);
          Var nxt = tanh(f1 * w + f2 * 0.5 + sm * s0) + sp;
          auto outs = scan_node(info, {sm, s0, sp, f2, f1, w}, {nxt}, shape_i(v[0], 0) - int_constant(2), {v[0]},
                                {v[1]}, {v[2]});
          Var cost = sum(outs[0] * outs[0] * outs[0]);
          auto g = grad(cost, std::vector<Var>{v[2], v[0], v[1]});
          return sum(g[0] * v[3]) + sum(g[1]) * 0.3 + sum(g[2] * g[2]);
        },
        {sv, iv, wv, tv});
  }
}

TEST(Scan, ScanGradAsScanWithAndWithoutSumsInTheBody) {
  // ScanGrad::as_scan (what its gradient differentiates) equals the node, whether a non-sequence's
  // sum is accumulated in the body (as Scan::grad builds it) or the body returns the step's
  // gradient alone (a ScanGrad built that way by hand): the loop then keeps the sum as a state.
  Var x = vector("x", DType::Float64), s0 = scalar("s0", DType::Float64), w = scalar("w", DType::Float64);
  auto hs = scan([](const std::vector<Var>& a) { return std::vector<Var>{tanh(a[1] * a[2] + a[0])}; }, {x}, {s0}, {w});
  auto g = grad(sum(hs[0] * hs[0]), std::vector<Var>{x, s0, w});
  const Apply* node = nullptr;
  for (const auto& n : toposort(g))
    if (dynamic_cast<const ScanGrad*>(n->op.get())) node = n.get();
  ASSERT_NE(node, nullptr);
  const auto& op = static_cast<const ScanGrad&>(*node->op);
  std::vector<Var> plain = op.vjp_outputs;
  int summed = 0;
  for (size_t q = 0; q < op.acc_of.size(); ++q)
    if (op.acc_of[q] >= 0) {
      plain[q] = plain[q]->owner->inputs[1];  // acc + g -> g
      ++summed;
    }
  ASSERT_EQ(summed, 1);
  std::vector<Var> ins;  // without the accumulator inputs
  for (size_t i = 0; i < op.vjp_inputs.size(); ++i)
    if (std::find(op.acc_of.begin(), op.acc_of.end(), static_cast<int>(i)) == op.acc_of.end())
      ins.push_back(op.vjp_inputs[i]);
  auto by_hand = std::make_shared<ScanGrad>(op.info, op.forward_input_types, ins, plain, op.cot_of, op.grad_of,
                                            std::vector<int>{}, op.step_of);
  const std::vector<Var> hand = apply_op(by_hand, node->inputs);
  std::vector<Var> outs = hand;
  for (const Var& v : op.as_scan(*node)) outs.push_back(v);
  for (const Var& v : by_hand->as_scan(*hand[0]->owner)) outs.push_back(v);
  std::vector<Out> fo(outs.begin(), outs.end());
  auto r = function({In(x), In(s0), In(w)},
                    fo)({make_array({0.3, -0.1, 0.7, 0.2}, {4}, DType::Float64), make_array({0.5}, {}, DType::Float64),
                         make_array({0.8}, {}, DType::Float64)});
  const size_t k = hand.size();
  for (size_t i = 0; i < k; ++i) {
    EXPECT_ALLCLOSE(r[k + i], r[i], 1e-12, 1e-14) << i;
    EXPECT_ALLCLOSE(r[2 * k + i], r[i], 1e-12, 1e-14) << i;
  }
}

TEST(Scan, AnUntracedStateUnderAGradientStillRunsOneLoop) {
  // A state that keeps only its final value (a shared variable's update, a counter) beside an RNN
  // whose gradient is taken: Scan::grad's twin traces every state, and local_scan_twin gives the
  // user's loop the twin's outputs (the untraced one as the trace's last row, or the initial
  // value when no step ran), so one Scan runs one copy of the body. Values against FAST_COMPILE
  // (two loops), over 5 steps and none.
  const int T = 5, B = 2, H = 3;
  const NDArray xv = random_array({T, B, H}, DType::Float64, -1, 1, 81),
                hv = random_array({B, H}, DType::Float64, -1, 1, 82),
                Wv = random_array({H, H}, DType::Float64, -0.7, 0.7, 83);
  Var xs = tensor3("xs", DType::Float64), h0 = matrix("h0", DType::Float64), W = matrix("W", DType::Float64);
  Var s0 = scalar("s0", DType::Float64), n = scalar("n", DType::Int64);
  ScanInfo info;
  info.seq_taps = {{0}};
  info.state_taps = {{-1}, {-1}};
  info.state_traced = {true, false};
  Var x_t = matrix("", DType::Float64), h_p = matrix("", DType::Float64), s_p = scalar("", DType::Float64);
  Var Wi = matrix("", DType::Float64);
  Var h = tanh(dot(h_p, Wi) + x_t);
  auto outs =
      scan_node(info, {x_t, h_p, s_p, Wi}, {h, s_p + sum(h)}, n, {xs}, {expand_dims(h0, 0), expand_dims(s0, 0)}, {W});
  auto g = grad(sum(outs[0]), std::vector<Var>{W, h0});
  std::vector<Out> wanted{g[0], g[1], outs[1]};
  Function fast = function({In(xs), In(h0), In(s0), In(W), In(n)}, wanted);
  FunctionOptions o;
  o.mode = "FAST_COMPILE";
  Function plain = function({In(xs), In(h0), In(s0), In(W), In(n)}, wanted, o);
  size_t scans = 0, body_outputs = 0;
  for (const auto& node : fast.toposort())
    if (const auto* sc = dynamic_cast<const Scan*>(node->op.get())) {
      ++scans;
      body_outputs = sc->inner_outputs.size();
    }
  EXPECT_EQ(scans, 1u);
  EXPECT_EQ(body_outputs, 2u);
  for (int64_t steps : {int64_t{T}, int64_t{0}}) {
    SCOPED_TRACE(steps);
    const NDArray sv = make_array({0.25}, {}, DType::Float64),
                  nv = make_array({static_cast<double>(steps)}, {}, DType::Int64);
    auto a = fast({xv, hv, sv, Wv, nv});
    auto b = plain({xv, hv, sv, Wv, nv});
    for (size_t i = 0; i < a.size(); ++i) EXPECT_ALLCLOSE(a[i], b[i], 1e-12, 1e-14) << i;
    if (steps == 0) {
      EXPECT_EQ(a[2].get_flat(0), 0.25);
    }
  }
  // A cost that reads the untraced state's final value: its gradient reaches s0 through every
  // step, or directly when no step ran (the final value is then s0).
  for (int64_t steps : {int64_t{T}, int64_t{0}}) {
    SCOPED_TRACE(steps);
    verify_grad(
        [&info, steps](const std::vector<Var>& v) {
          Var x_t = matrix("", DType::Float64), h_p = matrix("", DType::Float64), s_p = scalar("", DType::Float64);
          Var Wi = matrix("", DType::Float64);
          Var h = tanh(dot(h_p, Wi) + x_t);
          auto outs = scan_node(info, {x_t, h_p, s_p, Wi}, {h, s_p * 0.5 + sum(h * h)}, int_constant(steps), {v[0]},
                                {expand_dims(v[1], 0), expand_dims(v[2], 0)}, {v[3]});
          return sum(outs[0]) + outs[1] * 2.0;
        },
        {xv, hv, make_array({0.25}, {}, DType::Float64), Wv});
  }
}

TEST(Scan, OutputGradientsOfZerosButOneStepAreGivenAsThatStep) {
  // local_scan_grad_zero_rows: a cost reading h[k] of a state and y[j] of a nit-sot gives the
  // ScanGrad their gradients as that one step (Row), and none for a state the cost does not reach
  // (c); the gradients equal those of the graph compiled without the rule (traces of zeros), at
  // either end and inside, truncated or not. Two steps of one output stay a trace. The node with
  // those forms equals the Scan it stands for (as_scan), and a step out of range is an IndexError.
  const int T = 5, B = 2, H = 3;
  const NDArray xv = random_array({T, B, H}, DType::Float64, -1, 1, 71),
                hv = random_array({B, H}, DType::Float64, -1, 1, 72),
                cv = random_array({B, H}, DType::Float64, -1, 1, 73),
                Wv = random_array({H, H}, DType::Float64, -0.7, 0.7, 74);
  Var xs = tensor3("xs", DType::Float64), h0 = matrix("h0", DType::Float64), c0 = matrix("c0", DType::Float64);
  Var W = matrix("W", DType::Float64);
  using Form = ScanGrad::OutputGradient::Form;
  auto forms_of = [](const Function& f) {
    std::vector<ScanGrad::OutputGradient> r;
    for (const auto& node : f.toposort())
      if (const auto* sg = dynamic_cast<const ScanGrad*>(node->op.get())) r = sg->g_form;
    return r;
  };
  struct Case {
    int64_t k, j;
    int truncate;
    bool twice;  // the cost also reads h[0]: h's gradient has two rows
  };
  for (const Case& c : {Case{-1, -1, -1, false}, Case{0, 2, -1, false}, Case{2, -T, -1, false},
                        Case{T - 1, 0, 2, false}, Case{-1, 1, -1, true}}) {
    SCOPED_TRACE(::testing::Message() << "k " << c.k << " j " << c.j << " truncate " << c.truncate << " twice "
                                      << c.twice);
    ScanInfo info;
    info.seq_taps = {{0}};
    info.state_taps = {{-1}, {-1}};
    info.state_traced = {true, true};
    info.n_nitsot = 1;
    info.truncate_gradient = c.truncate;
    Var x_t = matrix("", DType::Float64), h_p = matrix("", DType::Float64), c_p = matrix("", DType::Float64);
    Var Wi = matrix("", DType::Float64);
    Var h = tanh(dot(h_p, Wi) + x_t);
    auto outs = scan_node(info, {x_t, h_p, c_p, Wi}, {h, c_p + x_t, h * h}, shape_i(xs, 0), {xs},
                          {expand_dims(h0, 0), expand_dims(c0, 0)}, {W});
    Var cost = sum(subtensor(outs[0], {Index(c.k)}) * 0.5) + sum(subtensor(outs[2], {Index(c.j)}));
    if (c.twice) cost = cost + sum(subtensor(outs[0], {Index(int64_t{0})}));
    auto g = grad(cost, std::vector<Var>{xs, h0, c0, W});
    std::vector<Out> wanted(g.begin(), g.end());
    Function with = function({In(xs), In(h0), In(c0), In(W)}, wanted);
    const std::string saved = config().optimizer_excluding;
    config().optimizer_excluding = "local_scan_grad_zero_rows";
    Function without = function({In(xs), In(h0), In(c0), In(W)}, wanted);
    config().optimizer_excluding = saved;
    const auto forms = forms_of(with);
    ASSERT_EQ(forms.size(), 3u);
    EXPECT_EQ(forms[0].form, c.twice ? Form::Trace : Form::Row);
    if (!c.twice) {
      EXPECT_EQ(forms[0].row, c.k);
    }
    EXPECT_EQ(forms[1].form, Form::None);
    EXPECT_EQ(forms[2].form, Form::Row);
    EXPECT_EQ(forms[2].row, c.j);
    for (const auto& f : forms_of(without)) EXPECT_EQ(f.form, Form::Trace);
    for (int rep = 0; rep < 2; ++rep) {  // the second call reuses the first's buffers
      auto a = with({xv, hv, cv, Wv});
      auto b = without({xv, hv, cv, Wv});
      for (size_t i = 0; i < a.size(); ++i) EXPECT_ALLCLOSE(a[i], b[i], 1e-12, 1e-14) << i;
    }
  }
  // By hand: the ScanGrad of sum(h[-1]) + sum(c) with h's gradient as its last row, c's as a
  // trace, y's as none; against the node of traces, its as_scan, and a row out of range.
  ScanInfo info;
  info.seq_taps = {{0}};
  info.state_taps = {{-1}, {-1}};
  info.state_traced = {true, true};
  info.n_nitsot = 1;
  Var x_t = matrix("", DType::Float64), h_p = matrix("", DType::Float64), c_p = matrix("", DType::Float64);
  Var Wi = matrix("", DType::Float64);
  Var h = tanh(dot(h_p, Wi) + x_t);
  auto outs = scan_node(info, {x_t, h_p, c_p, Wi}, {h, c_p * h, h * h}, shape_i(xs, 0), {xs},
                        {expand_dims(h0, 0), expand_dims(c0, 0)}, {W});
  auto g = grad(sum(subtensor(outs[0], {Index(int64_t{-1})})) + sum(outs[1]), std::vector<Var>{xs, h0, c0, W});
  const Apply* node = nullptr;
  for (const auto& n : toposort(g))
    if (dynamic_cast<const ScanGrad*>(n->op.get())) node = n.get();
  ASSERT_NE(node, nullptr);
  const auto& op = static_cast<const ScanGrad&>(*node->op);
  const size_t g_base = op.forward_input_types.size() + 3;
  for (int64_t row : {int64_t{-1}, int64_t{T - 1}, int64_t{T}, int64_t{-T - 1}}) {
    SCOPED_TRACE(row);
    std::vector<Var> ins(node->inputs.begin(), node->inputs.end());
    ins[g_base] = ones({int_constant(H)}, DType::Float64);  // broadcast over the batch
    ins[g_base + 2] = constant(0.0, DType::Float64);
    auto sparse = std::make_shared<ScanGrad>(
        op.info, op.forward_input_types, op.vjp_inputs, op.vjp_outputs, op.cot_of, op.grad_of, op.acc_of, op.step_of,
        std::vector<ScanGrad::OutputGradient>{{Form::Row, row}, {Form::Trace, 0}, {Form::None, 0}});
    const std::vector<Var> got = apply_op(sparse, ins);
    std::vector<Var> all(got.begin(), got.end());
    for (const Var& v : sparse->as_scan(*got[0]->owner)) all.push_back(v);
    for (int o = 0; o < node->nout(); ++o) all.push_back(const_cast<Apply*>(node)->output(o));
    std::vector<Out> fo(all.begin(), all.end());
    Function f = function({In(xs), In(h0), In(c0), In(W)}, fo);
    if (row >= T || row < -T) {
      EXPECT_THROW(f({xv, hv, cv, Wv}), IndexError);
      continue;
    }
    auto r = f({xv, hv, cv, Wv});
    const size_t k = got.size();
    for (size_t i = 0; i < k; ++i) {
      EXPECT_ALLCLOSE(r[k + i], r[2 * k + i], 1e-12, 1e-14) << i;
      EXPECT_ALLCLOSE(r[i], r[2 * k + i], 1e-12, 1e-14) << i;
    }
  }
}

TEST(Scan, TruncateGradient) {
  // s_t = s_{t-1} * w: d s_T / d w sums over every step; truncated to k steps it sums the last k.
  Var w = scalar("w", DType::Float64), s0 = scalar("s0", DType::Float64);
  ScanInfo info;
  info.state_taps = {{-1}};
  info.state_traced = {true};
  info.truncate_gradient = 2;
  Var prev = scalar("", DType::Float64), wi = scalar("", DType::Float64);
  auto outs = scan_node(info, {prev, wi}, {prev * wi}, int_constant(4), {}, {expand_dims(s0, 0)}, {w});
  Var last = subtensor(outs[0], {Index(int64_t{-1})});
  Var g = grad(last, w);
  NDArray gv = eval(g, {{w, make_array({2}, {}, DType::Float64)}, {s0, make_array({1}, {}, DType::Float64)}});
  // Full: d(w^4)/dw = 4 w^3 = 32; the last two steps give 2 * w^3 = 16.
  EXPECT_DOUBLE_EQ(gv.get_flat(0), 16.0);
}

TEST(Scan, RopMatchesFiniteDifferences) {
  // d trace / d (W, h0) along (V, v0), against a central difference of the loop.
  Var xs = matrix("xs", DType::Float64), h0 = vector("h0", DType::Float64), W = matrix("W", DType::Float64);
  auto rnn = [&](const Var& w, const Var& h) {
    return scan([](const std::vector<Var>& a) { return std::vector<Var>{tanh(dot(a[2], a[1]) + a[0])}; }, {xs}, {h},
                {w})[0];
  };
  Var out = rnn(W, h0);
  Var V = matrix("V", DType::Float64), v0 = vector("v0", DType::Float64);
  Var jv = Rop({out}, {W, h0}, {V, v0})[0];
  NDArray xv = random_array({4, 3}, DType::Float64, -1, 1, 21), hv = random_array({3}, DType::Float64, -1, 1, 22);
  NDArray Wv = random_array({3, 3}, DType::Float64, -0.7, 0.7, 23),
          Vv = random_array({3, 3}, DType::Float64, -1, 1, 24);
  NDArray vv = random_array({3}, DType::Float64, -1, 1, 25);
  Function f = function({In(xs), In(h0), In(W), In(V), In(v0)}, {jv});
  NDArray got = f({xv, hv, Wv, Vv, vv})[0];
  Function g = function({In(xs), In(h0), In(W)}, {out});
  const double eps = 1e-6;
  auto shifted = [&](double s) {
    NDArray w2 = Wv.copy(), h2 = hv.copy();
    for (int64_t i = 0; i < w2.size(); ++i) w2.data<double>()[i] += s * Vv.data<double>()[i];
    for (int64_t i = 0; i < h2.size(); ++i) h2.data<double>()[i] += s * vv.data<double>()[i];
    return g({xv, h2, w2})[0];
  };
  NDArray plus = shifted(eps), minus = shifted(-eps);
  for (int64_t i = 0; i < got.size(); ++i)
    EXPECT_NEAR(got.get_flat(i), (plus.get_flat(i) - minus.get_flat(i)) / (2 * eps), 1e-7) << i;
}

}  // namespace
}  // namespace hypatia
