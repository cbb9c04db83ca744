// The rewrite pipeline: each rewrite's structural effect and numerical equivalence with the
// unoptimized graph (mode NONE on the reference kernels).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "hypatia/hypatia.h"
#include "hypatia/rewrite/rewrite_util.h"
#include "test_util.h"

namespace hypatia {
namespace {

using testing::make_array;
using testing::random_array;

std::vector<std::string> op_names(const Function& f) {
  std::vector<std::string> r;
  for (const auto& n : f.toposort()) r.push_back(n->op->name());
  return r;
}

int count_ops(const Function& f, const std::string& needle) {
  int c = 0;
  for (const auto& s : op_names(f)) c += s.find(needle) != std::string::npos;
  return c;
}

std::string joined(const Function& f) {
  std::string s;
  for (const auto& n : op_names(f)) s += n + " ";
  return s;
}

/// Compiles `outs` in FAST_RUN and in NONE (reference kernels) and checks both agree on `args`.
Function check_equivalent(const std::vector<Var>& ins, const std::vector<Var>& outs, const std::vector<NDArray>& args,
                          double rtol = 1e-5, double atol = 1e-6) {
  std::vector<In> in;
  for (const auto& v : ins) in.emplace_back(v);
  std::vector<Out> out;
  for (const auto& v : outs) out.emplace_back(v);
  FunctionOptions fast;
  fast.mode = "FAST_RUN";
  fast.on_unused_input = "ignore";
  FunctionOptions none;
  none.mode = "NONE";
  none.backend = kReferenceBackend;
  none.on_unused_input = "ignore";
  Function f = function(in, out, fast);
  Function g = function(in, out, none);
  auto a = f(args);
  auto b = g(args);
  for (size_t i = 0; i < a.size(); ++i) EXPECT_ALLCLOSE(a[i], b[i], rtol, atol);
  return f;
}

TEST(Rewrite, MergeRemovesDuplicateNodesAndConstants) {
  Var x = variable(matrix_type(DType::Float64), "x");
  Var y = exp(x) * 2.0 + exp(x) * 2.0;
  Function f = check_equivalent({x}, {y}, {random_array({3, 4}, DType::Float64)});
  EXPECT_EQ(count_ops(f, "exp"), 1) << joined(f);
  EXPECT_EQ(count_ops(f, "mul"), 1) << joined(f);
}

TEST(Rewrite, ConstantFoldingAndCanonicalForms) {
  Var x = variable(vector_type(DType::Float64), "x");
  Var c = exp(constant(NDArray::scalar(1.0, DType::Float64)));
  Var y = neg(neg(x * 1.0 + 0.0)) / 1.0 + c;
  Function f = check_equivalent({x}, {y}, {make_array({1, 2, 3}, {3}, DType::Float64)});
  EXPECT_EQ(op_names(f).size(), 1u) << joined(f);  // only the add of x and the folded exp(1)
  EXPECT_EQ(count_ops(f, "add"), 1) << joined(f);
  // x - x -> zeros, dimshuffle chains collapse.
  Var m = variable(matrix_type(DType::Float64), "m");
  Function g = check_equivalent({m}, {transpose(transpose(m)) - m, m - m}, {random_array({2, 3}, DType::Float64)});
  EXPECT_EQ(count_ops(g, "DimShuffle"), 0) << joined(g);
  EXPECT_EQ(count_ops(g, "sub"), 0) << joined(g);  // both became m - m, then zeros
}

TEST(Rewrite, TheGradientMachinerysIdentitiesAreTakenOut) {
  // consider_constant, grad_clip and grad_scale shape only what T.grad builds: in a compiled
  // function they are their input, and the elementwise work around them fuses into one loop.
  Var x = variable(vector_type(DType::Float64), "x");
  Var y = exp(grad_scale(grad_clip(disconnected_grad(x) * 2.0, -1, 1), -3.0)) + 1.0;
  Function f = check_equivalent({x}, {y}, {make_array({0.5, -2, 3}, {3}, DType::Float64)});
  for (const char* name : {"DisconnectedGrad", "GradClip", "GradScale"}) EXPECT_EQ(count_ops(f, name), 0) << joined(f);
  EXPECT_EQ(op_names(f).size(), 1u) << joined(f);
  // A gradient built before compiling keeps their effect: d sum(gs(z^2, -3)) / dz = -3 * 2z.
  Var z = variable(vector_type(DType::Float64), "z");
  Var w = sum(grad_scale(z * z, -3.0));
  FunctionOptions fast;
  fast.mode = "FAST_RUN";
  Function g = function({z}, {grad(w, z)}, fast);
  EXPECT_ALLCLOSE(g({make_array({1, -2}, {2}, DType::Float64)})[0], make_array({-6, 12}, {2}, DType::Float64), 0, 0);
}

TEST(Rewrite, StabilizeGivesFiniteValuesAtExtremes) {
  Var x = variable(vector_type(DType::Float64), "x");
  NDArray big = make_array({-1000, -1, 0, 1, 1000}, {5}, DType::Float64);
  // log(1 + x) -> log1p, exp(x) - 1 -> expm1 (accurate for tiny x).
  {
    Function f = check_equivalent({x}, {log(1.0 + x), exp(x) - 1.0}, {make_array({1e-10, 0.5}, {2}, DType::Float64)});
    EXPECT_EQ(count_ops(f, "log1p"), 1) << joined(f);
    EXPECT_EQ(count_ops(f, "expm1"), 1) << joined(f);
    auto r = f({make_array({1e-17}, {1}, DType::Float64)});
    EXPECT_DOUBLE_EQ(r[0].get_flat(0), 1e-17);
    EXPECT_DOUBLE_EQ(r[1].get_flat(0), 1e-17);
  }
  // log(sigmoid(x)) -> -softplus(-x); 1 - sigmoid(x) -> sigmoid(-x).
  {
    FunctionOptions o;
    o.mode = "FAST_RUN";
    Function f = function({x}, {log(sigmoid(x)), 1.0 - sigmoid(x)}, o);
    EXPECT_EQ(count_ops(f, "log"), 0) << joined(f);
    auto r = f({big});
    EXPECT_NEAR(r[0].get_flat(0), -1000.0, 1e-9);
    EXPECT_NEAR(r[0].get_flat(4), 0.0, 1e-12);
    EXPECT_EQ(r[1].get_flat(4), 0.0);  // exp(-1000) underflows to 0
    // 1 - sigmoid(40) is 4.2e-18, which 1 - 0.99999... rounds to 0.
    EXPECT_NEAR(f({make_array({40}, {1}, DType::Float64)})[1].get_flat(0), std::exp(-40.0), 1e-25);
    Var g = grad(sum(log(sigmoid(x))), x);
    Function fg = function({x}, {g}, o);
    auto gr = fg({big});
    EXPECT_NEAR(gr[0].get_flat(0), 1.0, 1e-12);
    EXPECT_NEAR(gr[0].get_flat(4), 0.0, 1e-12);
  }
  // log(erfc(x)) stays finite where erfc underflows.
  for (DType dt : {DType::Float32, DType::Float64}) {
    Var v = variable(vector_type(dt), "v");
    FunctionOptions o;
    o.mode = "FAST_RUN";
    Function f = function({v}, {log(erfc(v))}, o);
    auto r = f({make_array({-3, 0.5, 4, 30, 1000}, {5}, dt)});
    EXPECT_NEAR(r[0].get_flat(0), std::log(std::erfc(-3.0)), 1e-6);
    EXPECT_NEAR(r[0].get_flat(1), std::log(std::erfc(0.5)), 1e-6);
    EXPECT_NEAR(r[0].get_flat(2), std::log(std::erfc(4.0)), 1e-5);
    // log(erfc(30)) = -903.97412 (erfc(30) underflows in both precisions)
    EXPECT_NEAR(r[0].get_flat(3), -903.97412, dt == DType::Float32 ? 1e-2 : 1e-4);
    EXPECT_NEAR(r[0].get_flat(4) / -1e6, 1.0, 1e-4);
    // Its gradient is finite and right too (log builds the stable form before grad runs).
    Function g = function({v}, {grad(sum(log(erfc(v))), v)}, o);
    auto gr = g({make_array({-3, 0.5, 4, 30, 1000}, {5}, dt)});
    auto exact = [](double x) { return -2.0 / std::sqrt(M_PI) * std::exp(-x * x) / std::erfc(x); };
    for (int i = 0; i < 3; ++i) {
      const double x = std::vector<double>{-3, 0.5, 4}[i];
      EXPECT_NEAR(gr[0].get_flat(i), exact(x), 1e-3 * std::abs(exact(x)) + 1e-6) << "x = " << x;
    }
    EXPECT_NEAR(gr[0].get_flat(3), -2 * 30.0 - 1 / 30.0, 1e-2);
    EXPECT_NEAR(gr[0].get_flat(4) / (-2000.0), 1.0, 1e-4);
  }
  // log(softmax) -> log_softmax; log(sum(exp)) -> stable logsumexp.
  {
    Var m = variable(matrix_type(DType::Float64), "m");
    FunctionOptions o;
    o.mode = "FAST_RUN";
    Function f = function({m}, {log(softmax(m)), log(sum(exp(m), std::vector<int>{1}))}, o);
    EXPECT_EQ(count_ops(f, "LogSoftmax"), 1) << joined(f);
    auto r = f({make_array({1000, 0, -1000, 1000, 1000, 1000}, {2, 3}, DType::Float64)});
    EXPECT_NEAR(r[0].get_flat(0), 0.0, 1e-12);
    EXPECT_NEAR(r[0].get_flat(1), -1000.0, 1e-9);
    EXPECT_NEAR(r[1].get_flat(0), 1000.0, 1e-9);
    EXPECT_NEAR(r[1].get_flat(1), 1000.0 + std::log(3.0), 1e-9);
    check_equivalent({m}, {log(softmax(m)), log(sum(exp(m), std::vector<int>{1}))},
                     {random_array({3, 4}, DType::Float64)});
  }
}

TEST(Rewrite, SoftmaxCrossentropyIsStableInValueAndGradient) {
  Var x = variable(matrix_type(DType::Float64), "x");
  Var y = variable(vector_type(DType::Int64), "y");
  Var cost = mean(categorical_crossentropy(softmax(x), y));
  Var g = grad(cost, x);
  FunctionOptions o;
  o.mode = "FAST_RUN";
  Function f = function({x, y}, {cost, g}, o);
  EXPECT_EQ(count_ops(f, "CrossentropyCategorical1Hot"), 0) << joined(f);  // nor its Grad
  // Built directly (not through categorical_crossentropy), the op is rewritten too.
  Var direct = apply_op1(std::make_shared<CrossentropyCategorical1Hot>(), {softmax(x), y});
  EXPECT_EQ(count_ops(function({x, y}, {direct}, o), "CrossentropyCategorical1Hot"), 0);
  NDArray xv = make_array({1000, -1000, 0, 0, 0, 0}, {2, 3}, DType::Float64);
  NDArray yv = make_array({1, 2}, {2}, DType::Int64);
  auto r = f({xv, yv});
  EXPECT_NEAR(r[0].get_flat(0), (2000.0 + std::log(3.0)) / 2, 1e-9);
  for (int64_t i = 0; i < r[1].size(); ++i) EXPECT_TRUE(std::isfinite(r[1].get_flat(i)));
  EXPECT_NEAR(r[1].get_flat(1), -0.5, 1e-12);  // d/dx of -log softmax at the true (tiny) class
  check_equivalent({x, y}, {cost, g}, {random_array({3, 4}, DType::Float64), make_array({0, 3, 1}, {3}, DType::Int64)});
}

TEST(Rewrite, TheCrossentropyOfASoftmaxTakesTheBiasAddIntoItsPass) {
  // softmax(dot(x, w) + b) with labels: one CrossentropySoftmax1HotWithBias reading b itself (the
  // add gone), its gradient one Dx; the same values as the graph that keeps the add.
  Var x = variable(matrix_type(DType::Float64), "x");
  Var y = variable(vector_type(DType::Int64), "y");
  Var w = variable(matrix_type(DType::Float64), "w");
  Var b = variable(vector_type(DType::Float64), "b");
  Var cost = mean(categorical_crossentropy(softmax(add(dot(x, w), b)), y));
  std::vector<Var> g = grad(cost, std::vector<Var>{w, b});
  FunctionOptions o;
  o.mode = "FAST_RUN";
  Function f = function({x, y, w, b}, {cost, g[0], g[1]}, o);
  int fused = 0;
  for (const auto& n : f.toposort()) {
    if (typeid(*n->op) != typeid(CrossentropySoftmax1HotWithBias)) continue;
    ++fused;
    EXPECT_EQ(n->inputs[1]->name, "b") << joined(f);
  }
  EXPECT_EQ(fused, 1) << joined(f);
  EXPECT_EQ(count_ops(f, "CrossentropySoftmax1HotWithBiasDx"), 1) << joined(f);
  // The mean's gradient, one value for every row, is read by Dx as it is (no Alloc of n copies).
  EXPECT_EQ(count_ops(f, "Alloc"), 0) << joined(f);
  const std::vector<NDArray> args = {random_array({4, 3}, DType::Float64), make_array({0, 4, 1, 4}, {4}, DType::Int64),
                                     random_array({3, 5}, DType::Float64), random_array({5}, DType::Float64)};
  check_equivalent({x, y, w, b}, {cost, g[0], g[1]}, args);
  // A fill whose length is not provably the rows' keeps its Alloc (and Dx's check of that length).
  Var sm = variable(matrix_type(DType::Float64), "sm"), d = scalar("d", DType::Float64), m = scalar("m", DType::Int64);
  Function fill =
      function({sm, y, d, m}, {crossentropy_softmax_1hot_with_bias_dx(alloc(dimshuffle(d, {-1}), {m}), sm, y)}, o);
  EXPECT_EQ(count_ops(fill, "Alloc"), 1) << joined(fill);
  EXPECT_ERROR(ValueError,
               fill({random_array({2, 3}, DType::Float64), make_array({0, 1}, {2}, DType::Int64),
                     NDArray::scalar(1.0, DType::Float64), NDArray::scalar(int64_t{3}, DType::Int64)}),
               "expected dy of shape (2,)");
  // The sum read elsewhere too (an output): the add stays, and the cross-entropy reads it.
  Var z = add(dot(x, w), b);
  Function keep = function({x, y, w, b}, {mean(categorical_crossentropy(softmax(z), y)), z}, o);
  int kept = 0;
  for (const auto& n : keep.toposort()) {
    if (typeid(*n->op) != typeid(CrossentropySoftmax1HotWithBias)) continue;
    ++kept;
    EXPECT_TRUE(rewrite::is_constant_value(n->inputs[1], 0.0)) << joined(keep);
  }
  EXPECT_EQ(kept, 1) << joined(keep);
}

TEST(Rewrite, SpecializePowAndDivision) {
  Var x = variable(vector_type(DType::Float32), "x");
  Function f = check_equivalent({x}, {pow(x, constant(NDArray::scalar(2.0, DType::Float32))), x / 4.0},
                                {make_array({1, 2, 3}, {3}, DType::Float32)});
  EXPECT_EQ(count_ops(f, "pow"), 0) << joined(f);
  EXPECT_EQ(count_ops(f, "sqr"), 1) << joined(f);
  EXPECT_EQ(count_ops(f, "true_div"), 0) << joined(f);
}

TEST(Rewrite, DotPlusMatrixBecomesOneGemm) {
  Var a = variable(matrix_type(DType::Float32), "a");
  Var b = variable(matrix_type(DType::Float32), "b");
  Var c = variable(matrix_type(DType::Float32), "c");
  std::vector<NDArray> args{random_array({3, 4}, DType::Float32), random_array({4, 5}, DType::Float32, -1, 1, 1),
                            random_array({3, 5}, DType::Float32, -1, 1, 2)};
  Function f = check_equivalent({a, b, c}, {dot(a, b) + c}, args);
  EXPECT_EQ(joined(f), "Gemm{no_inplace} ");
  Function g = check_equivalent({a, b, c}, {c - dot(a, b) * 0.1}, args);
  EXPECT_EQ(joined(g), "Gemm{no_inplace} ");
  // Matrix times vector plus vector: one Gemv.
  Var v = variable(vector_type(DType::Float32), "v");
  Var zv = variable(vector_type(DType::Float32), "zv");
  Function gv = check_equivalent(
      {a, v, zv}, {zv + dot(a, v) * 2.0},
      {args[0], random_array({4}, DType::Float32, -1, 1, 5), random_array({3}, DType::Float32, -1, 1, 6)});
  EXPECT_EQ(joined(gv), "Gemv{no_inplace} ");
  // A broadcast bias stays a separate add (Gemm needs the full z).
  Var bias = variable(vector_type(DType::Float32), "bias");
  Function h =
      check_equivalent({a, b, bias}, {dot(a, b) + bias}, {args[0], args[1], random_array({5}, DType::Float32)});
  EXPECT_EQ(count_ops(h, "Gemm"), 0) << joined(h);
}

TEST(Rewrite, ModesIncludingExcludingAndPrint) {
  Var x = variable(vector_type(DType::Float64), "x");
  Var y = log(1.0 + x);
  FunctionOptions none;
  none.mode = "NONE";
  EXPECT_EQ(count_ops(function({x}, {y}, none), "log1p"), 0);
  Config saved = config();
  config().optimizer_excluding = "stabilize";
  FunctionOptions fast;
  fast.mode = "FAST_RUN";
  EXPECT_EQ(count_ops(function({x}, {y}, fast), "log1p"), 0);
  config().optimizer_excluding = "";
  config().print_rewrites = true;
  ::testing::internal::CaptureStderr();
  Function f = function({x}, {y}, fast);
  std::string err = ::testing::internal::GetCapturedStderr();
  config() = saved;
  EXPECT_EQ(count_ops(f, "log1p"), 1);
  EXPECT_NE(err.find("local_stabilize_elemwise"), std::string::npos) << err;
}

TEST(Rewrite, FunctionGraphReplaceIsIncremental) {
  Var x = variable(vector_type(DType::Float64), "x");
  Var a = exp(x);
  Var b = a + 1.0;
  FunctionGraph fg({x}, {b * 2.0}, /*clone=*/true);
  const size_t before = fg.num_nodes();
  Var out = fg.outputs()[0];
  Var old_add = out->owner->inputs[0];
  Var repl = log1p(old_add->owner->inputs[0]);  // log1p(exp(x)) replaces exp(x) + 1
  fg.replace(old_add, repl, "test");
  EXPECT_LT(fg.num_nodes(), before);  // the add and the DimShuffle of its 1 left, log1p came
  EXPECT_EQ(fg.num_nodes(), fg.toposort().size());
  EXPECT_TRUE(fg.contains(repl->owner));
  EXPECT_FALSE(fg.contains(old_add->owner));
  EXPECT_EQ(fg.clients(repl.get()).size(), 1u);
  EXPECT_THROW(fg.replace(repl, variable(vector_type(DType::Float32)), "bad"), TypeError);
}

}  // namespace
}  // namespace hypatia

namespace hypatia {
namespace {

/// An op whose CPU kernel misbehaves as `kind` says: 0 correct, 1 overwrites its input without
/// declaring it, 2 computes a wrong value, 3 adds into the output buffer it is given (right only
/// when that buffer is new), 4 is not deterministic (every other run is off by 1e-12), 5 reads its
/// input as if it were contiguous. Its reference kernel is correct (x + 1).
struct MisbehavingOp : OpWithProps<MisbehavingOp> {
  int kind;
  explicit MisbehavingOp(int k) : kind(k) {}
  auto props() const { return std::make_tuple(kind); }
  std::string name() const override { return "Misbehaving{" + std::to_string(kind) + "}"; }
  std::vector<TensorType> make_output_types(const std::vector<Var>& in) const override { return {in[0]->type}; }
};

void register_misbehaving_kernels() {
  static bool done = false;
  if (done) return;
  done = true;
  register_kernel(kReferenceBackend, typeid(MisbehavingOp), [](const Apply&) -> std::unique_ptr<Kernel> {
    struct K : Kernel {
      void run(const KernelArgs& a) override {
        NDArray r = a.in[0]->copy();
        for (int64_t i = 0; i < r.size(); ++i) r.data<double>()[i] += 1;
        *a.out[0] = r;
      }
    };
    return std::make_unique<K>();
  });
  register_kernel(kCpuBackend, typeid(MisbehavingOp), [](const Apply& node) -> std::unique_ptr<Kernel> {
    struct K : Kernel {
      int kind;
      explicit K(int k) : kind(k) {}
      int runs = 0;
      void run(const KernelArgs& a) override {
        NDArray r = a.in[0]->copy();
        for (int64_t i = 0; i < r.size(); ++i) r.data<double>()[i] += kind == 2 ? 2 : 1;
        if (kind == 1) a.in[0]->fill(0);
        if (kind == 3) {
          NDArray& o = *a.out[0];
          if (!o.valid() || !(o.shape() == r.shape())) o = NDArray::zeros(r.shape(), DType::Float64);
          for (int64_t i = 0; i < r.size(); ++i) o.data<double>()[i] += r.data<double>()[i];
          return;
        }
        if (kind == 4 && runs++ % 2 == 1) r.data<double>()[0] += 1e-12;
        if (kind == 5)
          for (int64_t i = 0; i < r.size(); ++i) r.data<double>()[i] = a.in[0]->data<double>()[i] + 1;
        *a.out[0] = r;
      }
    };
    return std::make_unique<K>(static_cast<const MisbehavingOp&>(*node.op).kind);
  });
}

TEST(DebugMode, ChecksEveryNodeAgainstItsReferenceAndItsDestroyMap) {
  register_misbehaving_kernels();
  Var x = variable(vector_type(DType::Float64), "x");
  FunctionOptions dbg;
  dbg.mode = "DebugMode";
  NDArray v = make_array({1, 2, 3}, {3}, DType::Float64);
  // A well-behaved optimized graph (fused, in place) passes.
  Var good = apply_op1(std::make_shared<MisbehavingOp>(0), {exp(x) * 2.0 + 1.0});
  auto r = function({x}, {sigmoid(good) * 3.0 - good}, dbg)({v});
  EXPECT_EQ(r[0].size(), 3);
  // An undeclared in-place write (into an intermediate another node still reads) is caught.
  Var e = exp(x);
  Var bad1 = apply_op1(std::make_shared<MisbehavingOp>(1), {e});
  try {
    function({x}, {bad1 + e}, dbg)({v});
    FAIL() << "expected a DebugMode error";
  } catch (const InternalError& err) {
    EXPECT_NE(std::string(err.what()).find("BadDestroyMap"), std::string::npos) << err.what();
    EXPECT_NE(std::string(err.what()).find("Misbehaving{1}"), std::string::npos) << err.what();
  }
  // A wrong value is caught.
  Var bad2 = apply_op1(std::make_shared<MisbehavingOp>(2), {x});
  try {
    function({x}, {bad2}, dbg)({v});
    FAIL() << "expected a DebugMode error";
  } catch (const InternalError& err) {
    EXPECT_NE(std::string(err.what()).find("BadThunkOutput"), std::string::npos) << err.what();
  }
  // Theano's DebugMode variations: a kernel that reads the output buffer it is given, one that is
  // not deterministic, and one that is wrong on non-contiguous inputs are caught, each named.
  for (auto [kind, what] : {std::pair<int, const char*>{3, "differs between two runs"},
                            {4, "differs between two runs"},
                            {5, "differs when its inputs are not contiguous"}}) {
    Var bad = apply_op1(std::make_shared<MisbehavingOp>(kind), {x});
    try {
      function({x}, {bad}, dbg)({v});
      ADD_FAILURE() << "expected a DebugMode error for kind " << kind;
    } catch (const InternalError& err) {
      EXPECT_NE(std::string(err.what()).find(what), std::string::npos) << err.what();
      EXPECT_NE(std::string(err.what()).find("Misbehaving{" + std::to_string(kind) + "}"), std::string::npos)
          << err.what();
    }
  }
  // Outside DebugMode (and without the test suite's debug_checks) the wrong kernel runs unchecked.
  const bool checks = config().debug_checks;
  config().debug_checks = false;
  const double unchecked = function({x}, {bad2})({v})[0].get_flat(0);
  config().debug_checks = checks;
  EXPECT_NEAR(unchecked, 3.0, 1e-12);
}

TEST(DebugMode, ChecksEveryRewriteAgainstTheValuesItReplaced) {
  // A deliberately wrong rewrite (exp(x) -> x), in an opt-in phase only this test names.
  static const bool registered = [] {
    register_rewrite_phase({.name = "test_bad_rewrite", .tags = {}, .modes = {"FAST_RUN"}, .opt_in = true}, "merge1.5");
    register_local_rewrite(
        "test_bad_rewrite",
        {"local_test_bad_exp", {typeid(Elemwise)}, [](FunctionGraph&, Apply& n) -> std::optional<std::vector<Var>> {
           const auto& e = static_cast<const Elemwise&>(*n.op);
           if (e.scalar != ScalarOpKind::Exp) return std::nullopt;
           return std::vector<Var>{n.inputs[0]};
         }});
    return true;
  }();
  (void)registered;
  Var x = variable(vector_type(DType::Float64), "x");
  const std::string including = config().optimizer_including;
  config().optimizer_including = "test_bad_rewrite";
  FunctionOptions dbg;
  dbg.mode = "DebugMode";
  Function f = function({x}, {exp(x) * 2.0}, dbg);
  Function plain = function({x}, {exp(x) * 2.0}, FunctionOptions{.mode = "FAST_RUN"});
  config().optimizer_including = including;
  NDArray v = make_array({1, 2, 3}, {3}, DType::Float64);
  try {
    f({v});
    FAIL() << "expected a BadOptimization error";
  } catch (const InternalError& err) {
    const std::string what = err.what();
    EXPECT_NE(what.find("BadOptimization"), std::string::npos) << what;
    EXPECT_NE(what.find("local_test_bad_exp"), std::string::npos) << what;
  }
  (void)plain;
}

}  // namespace
}  // namespace hypatia

namespace hypatia {
namespace {

TEST(Rewrite, ShapesOfIntermediatesAreKnownWithoutComputingThem) {
  Var a = variable(matrix_type(DType::Float64), "a");
  Var b = variable(matrix_type(DType::Float64), "b");
  Var p = exp(dot(a, b));
  FunctionOptions o;
  o.mode = "FAST_RUN";
  Function f = function({a, b}, {shape_i(p, 1), zeros_like(p)}, o);
  for (const auto& n : f.toposort()) {
    EXPECT_EQ(n->op->name().find("dot"), std::string::npos) << f.debugprint();
    EXPECT_EQ(n->op->name().find("exp"), std::string::npos) << f.debugprint();
  }
  auto r = f({random_array({2, 3}, DType::Float64), random_array({3, 4}, DType::Float64)});
  EXPECT_EQ(r[0].get_flat(0), 4.0);
  EXPECT_EQ(r[1].shape(), (Shape{2, 4}));
  // Shapes of constants fold away entirely.
  Var c = constant(random_array({5, 7}, DType::Float64));
  Function g = function({a}, {shape_i(dot(a, c), 1) + 0}, o);
  EXPECT_LE(g.toposort().size(), 1u) << g.debugprint();
  EXPECT_EQ(g({random_array({2, 5}, DType::Float64)})[0].get_flat(0), 7.0);
}

}  // namespace
}  // namespace hypatia

// ---------------------------------------------------------------------------------------------
// The pipeline (rewrite/pipeline.cpp) and the names optimizer_including / optimizer_excluding take

namespace hypatia {
namespace {

/// The names of the phases rewrite_graph runs for a mode and the two flags.
std::vector<std::string> phase_names(const std::string& mode, const std::string& including = "",
                                     const std::string& excluding = "") {
  RewriteOptions o;
  o.mode = mode;
  o.including = including;
  o.excluding = excluding;
  std::vector<std::string> r;
  for (const RewritePhase* p : selected_phases(o)) r.push_back(p->name);
  return r;
}

/// The FAST_RUN pipeline as docs/ARCHITECTURE.md lists it.
const std::vector<std::string> kFastRun = {
    "merge1",     "canonicalize", "merge1.5", "stabilize",       "specialize",      "blas",
    "scan_merge", "control_flow", "merge2",   "elemwise_fusion", "inplace_elemwise"};

TEST(Pipeline, PhaseOrderOfEachModeIsTheDocumentedList) {
  EXPECT_EQ(phase_names("FAST_RUN"), kFastRun);
  EXPECT_EQ(phase_names("FAST_COMPILE"), (std::vector<std::string>{"merge1", "canonicalize"}));
  EXPECT_TRUE(phase_names("NONE").empty());
  // Every phase that is not opt-in (tests add opt-in ones) runs in FAST_RUN: the list above is
  // the whole built-in pipeline, in order.
  std::vector<std::string> built_in;
  for (const RewritePhase& p : rewrite_phases())
    if (!p.opt_in) built_in.push_back(p.name);
  EXPECT_EQ(built_in, kFastRun);
  // A phase is a global pass or a group of local rules, never both.
  for (const RewritePhase& p : rewrite_phases()) {
    if (!p.opt_in) {
      EXPECT_NE(static_cast<bool>(p.global), !p.locals.empty()) << p.name;
    }
  }
}

TEST(Pipeline, EveryNameTheFlagsAreGivenExists) {
  // The names the tests, README, docs and the Python package give optimizer_including /
  // optimizer_excluding (phase names and tags), and the phases each one removes from FAST_RUN.
  const std::vector<std::pair<std::string, std::vector<std::string>>> removes = {
      {"merge", {"merge1", "merge1.5", "merge2"}},
      {"merge1", {"merge1"}},
      {"merge1.5", {"merge1.5"}},
      {"merge2", {"merge2"}},
      {"canonicalize", {"canonicalize"}},
      {"stabilize", {"stabilize"}},
      {"specialize", {"specialize"}},
      {"blas", {"blas"}},
      {"scan", {"scan_merge", "control_flow"}},
      {"scan_merge", {"scan_merge"}},
      {"ifelse", {"control_flow"}},
      {"control_flow", {"control_flow"}},
      {"fusion", {"elemwise_fusion"}},
      {"elemwise_fusion", {"elemwise_fusion"}},
      {"inplace", {"inplace_elemwise"}},
      {"inplace_elemwise", {"inplace_elemwise"}},
      {"fast_compile", {"merge1"}},
      {"fast_run", kFastRun},
  };
  for (const auto& [name, gone] : removes) {
    std::vector<std::string> want;
    for (const auto& p : kFastRun)
      if (std::find(gone.begin(), gone.end(), p) == gone.end()) want.push_back(p);
    EXPECT_EQ(phase_names("FAST_RUN", "", name), want) << name;
  }
  // ':'-separated lists, as the tests and the Python Mode pass them.
  EXPECT_EQ(phase_names("FAST_RUN", "", "fusion:inplace"),
            (std::vector<std::string>{"merge1", "canonicalize", "merge1.5", "stabilize", "specialize", "blas",
                                      "scan_merge", "control_flow", "merge2"}));
  // Including adds a phase to a mode that does not run it, in pipeline order; in NONE only those named.
  EXPECT_EQ(phase_names("FAST_COMPILE", "stabilize"),
            (std::vector<std::string>{"merge1", "canonicalize", "stabilize"}));
  EXPECT_EQ(phase_names("NONE", "canonicalize:merge"),
            (std::vector<std::string>{"merge1", "canonicalize", "merge1.5", "merge2"}));
  // Every phase name and tag above is one the pipeline has.
  for (const auto& [name, gone] : removes) {
    bool found = false;
    for (const RewritePhase& p : rewrite_phases())
      found = found || p.name == name || std::find(p.tags.begin(), p.tags.end(), name) != p.tags.end();
    EXPECT_TRUE(found) << name;
  }
  // A name that is no phase, tag or rule is ignored, as Theano's optimizer database ignores an
  // unknown tag.
  EXPECT_EQ(phase_names("FAST_RUN", "no_such_phase", "no_such_phase"), kFastRun);
}

TEST(Pipeline, RuleNamesTheFlagsTakeAreInTheirPhases) {
  // optimizer_excluding also removes single rules by name (they keep their names in every phase).
  const auto in_phase = testing::phase_has_rule;
  for (const char* phase : {"canonicalize", "stabilize", "specialize"}) {
    EXPECT_TRUE(in_phase(phase, "constant_folding")) << phase;
  }
  EXPECT_TRUE(in_phase("canonicalize", "local_subtensor_merge"));
  EXPECT_TRUE(in_phase("canonicalize", "local_reduce_merge"));
  EXPECT_TRUE(in_phase("canonicalize", "local_mul_div_canonical"));
  EXPECT_TRUE(in_phase("canonicalize", "local_useless_alloc"));
  EXPECT_TRUE(in_phase("specialize", "local_dimshuffle_lift"));
  EXPECT_TRUE(in_phase("specialize", "local_sum_sqr"));
  EXPECT_TRUE(in_phase("blas", "local_dot_to_gemm"));
  Var x = variable(vector_type(DType::Float64), "x");
  Config saved = config();
  config().optimizer_excluding = "local_stabilize_elemwise_log1p";
  FunctionOptions fast;
  fast.mode = "FAST_RUN";
  const int log1p_ops = count_ops(function({x}, {log(1.0 + x)}, fast), "log1p");
  config() = saved;
  EXPECT_EQ(log1p_ops, 0);
}

TEST(Pipeline, PhasesAreAddedAfterANamedPhase) {
  EXPECT_THROW(register_rewrite_phase({.name = "test_after_nothing", .modes = {"FAST_RUN"}}, "no_such_phase"),
               ValueError);
  EXPECT_THROW(register_rewrite_phase({.name = "merge1", .modes = {"FAST_RUN"}}, "merge2"), ValueError);
  EXPECT_THROW(register_local_rewrite("no_such_phase", {"local_test", {}, nullptr}), ValueError);
  EXPECT_EQ(phase_names("FAST_RUN"), kFastRun);
}

}  // namespace
}  // namespace hypatia
