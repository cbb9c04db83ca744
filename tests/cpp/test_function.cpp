// function(): inputs, outputs, updates, givens, defaults, borrow, errors, gc, profiling, debugprint.
#include <cmath>

#include "test_util.h"

namespace hypatia {
namespace {
using testing::make_array;

NDArray f32(const std::vector<double>& v, const Shape& s) { return make_array(v, s, DType::Float32); }

TEST(Function, ComputesOutputsAsASingleOrSeveral) {
  Var x = variable(vector_type(DType::Float32), "x");
  Var y = variable(vector_type(DType::Float32), "y");
  Function f = function({x, y}, {x + y, x * y});
  auto r = f({f32({1, 2}, {2}), f32({3, 4}, {2})});
  ASSERT_EQ(r.size(), 2u);
  EXPECT_ALLCLOSE(r[0], f32({4, 6}, {2}));
  EXPECT_ALLCLOSE(r[1], f32({3, 8}, {2}));
  EXPECT_EQ(f.n_inputs(), 2);
  EXPECT_EQ(f.n_outputs(), 2);
}

TEST(Function, SharedVariablesAndUpdatesCommitTogether) {
  Var m = shared(f32({2}, {1}), "m");
  Var b = shared(f32({1}, {1}), "b");
  Var x = variable(vector_type(DType::Float32), "x");
  Var y = m * x + b;
  FunctionOptions o;
  // Both updates read the values from before the call.
  o.updates = {{m, m + b}, {b, b * m}};
  Function f = function({x}, {y}, o);
  auto r = f({f32({3}, {1})});
  EXPECT_ALLCLOSE(r[0], f32({7}, {1}));
  EXPECT_ALLCLOSE(get_value(m), f32({3}, {1}));
  EXPECT_ALLCLOSE(get_value(b), f32({2}, {1}));
  f({f32({1}, {1})});
  EXPECT_ALLCLOSE(get_value(m), f32({5}, {1}));
  EXPECT_ALLCLOSE(get_value(b), f32({6}, {1}));
}

TEST(Function, FailedCallLeavesSharedVariablesUnchanged) {
  Var acc = shared(f32({0, 0}, {2}), "acc");
  Var x = variable(vector_type(DType::Float32), "x");
  FunctionOptions o;
  o.updates = {{acc, acc + x}};
  Function f = function({x}, {acc * x}, o);
  f({f32({1, 2}, {2})});
  EXPECT_ALLCLOSE(get_value(acc), f32({1, 2}, {2}));
  NDArray before = get_value(acc, /*borrow=*/true);
  EXPECT_THROW(f({f32({1, 2, 3}, {3})}), ValueError);  // shape mismatch in the elementwise op
  EXPECT_TRUE(get_value(acc, true).shares_buffer(before));
  EXPECT_ALLCLOSE(get_value(acc), f32({1, 2}, {2}));
}

TEST(Function, UpdatesChangingTheShapeAreRefusedBeforeAnyCommit) {
  Var a = shared(f32({1, 2}, {2}), "a");
  Var b = shared(f32({5}, {1}), "b");
  Var x = variable(vector_type(DType::Float32), "x");
  FunctionOptions o;
  o.updates = {{b, b + 1.0}, {a, x}};  // a's update is fine for any vector, b's too
  Function f = function({x}, {}, o);
  f({f32({7, 8, 9}, {3})});  // a vector of another length is still a valid vector value
  EXPECT_ALLCLOSE(get_value(a), f32({7, 8, 9}, {3}));
  EXPECT_ALLCLOSE(get_value(b), f32({6}, {1}));
}

TEST(Function, UpdateValueThatIsAnInputIsCopied) {
  Var s = shared(f32({0, 0}, {2}), "s");
  Var x = variable(vector_type(DType::Float32), "x");
  FunctionOptions o;
  o.updates = {{s, x}};
  Function f = function({x}, {}, o);
  NDArray arg = f32({1, 2}, {2});
  f({arg});
  arg.data<float>()[0] = 99;
  EXPECT_ALLCLOSE(get_value(s), f32({1, 2}, {2}));
}

TEST(Function, GetAndSetValueBorrowSemantics) {
  NDArray v = f32({1, 2, 3}, {3});
  Var s = shared(v, "s");
  EXPECT_FALSE(get_value(s, true).shares_buffer(v));  // shared() copies unless borrow
  Var t = shared(v, "t", /*borrow=*/true);
  EXPECT_TRUE(get_value(t, true).shares_buffer(v));
  EXPECT_FALSE(get_value(t, false).shares_buffer(v));
  set_value(s, f32({4, 5}, {2}));
  EXPECT_ALLCLOSE(get_value(s), f32({4, 5}, {2}));
  EXPECT_THROW(set_value(s, make_array({1}, {1}, DType::Float64)), TypeError);
  EXPECT_THROW(set_value(s, f32({1, 2}, {1, 2})), TypeError);
  Var x = variable(vector_type(DType::Float32), "x");
  EXPECT_THROW(get_value(x), TypeError);
}

TEST(Function, OutputsAreFreshUnlessBorrowed) {
  Var s = shared(f32({1, 2}, {2}), "s");
  Var x = variable(vector_type(DType::Float32), "x");
  // Returning a shared variable or an input directly must not alias them.
  Function f = function({x}, {s, x});
  NDArray arg = f32({5, 6}, {2});
  auto r = f({arg});
  EXPECT_FALSE(r[0].shares_buffer(get_value(s, true)));
  EXPECT_FALSE(r[1].shares_buffer(arg));
  Function g = function({x}, {Out(x + 1.0, /*borrow=*/true)}, FunctionOptions{.allow_gc = false});
  NDArray a1 = g({arg})[0];
  EXPECT_ALLCLOSE(a1, f32({6, 7}, {2}));
  // A constant output lent with borrow is the constant's buffer, read-only: written, it would
  // change every later call's result.
  Function c = function({}, {Out(constant(f32({1, 2, 3}, {3})), /*borrow=*/true)});
  NDArray lent = c({})[0];
  EXPECT_FALSE(lent.writeable());
  EXPECT_ERROR(ValueError, lent.fill(42.0), "read-only");
  EXPECT_ALLCLOSE(c({})[0], f32({1, 2, 3}, {3}));
  EXPECT_TRUE(function({}, {Out(constant(f32({1, 2, 3}, {3})), /*borrow=*/false)})({})[0].writeable());
}

TEST(Function, NoGcReusesIntermediateBuffers) {
  Var x = variable(vector_type(DType::Float64), "x");
  Function f = function({x}, {Out(exp(x) * 2.0, true)}, FunctionOptions{.allow_gc = false});
  NDArray in = make_array({0, 1}, {2}, DType::Float64);
  NDArray r1 = f({in})[0];
  const std::byte* p1 = r1.raw();
  r1 = NDArray();  // drop our reference so the buffer may be reused
  NDArray r2 = f({in})[0];
  EXPECT_EQ(r2.raw(), p1);
}

TEST(Function, DefaultsAndGivens) {
  Var x = variable(scalar_type(DType::Float64), "x");
  Var y = variable(scalar_type(DType::Float64), "y");
  Function f = function({In(x), In(y, NDArray::scalar(10, DType::Float64))}, {x + y});
  EXPECT_EQ(f({NDArray::scalar(1, DType::Float64)})[0].get_flat(0), 11);
  EXPECT_EQ(f({NDArray::scalar(1, DType::Float64), NDArray::scalar(2, DType::Float64)})[0].get_flat(0), 3);
  EXPECT_THROW(f({}), TypeError);
  Var z = variable(scalar_type(DType::Float64), "z");
  FunctionOptions o;
  o.givens = {{y, z * 3.0}};
  Function g = function({x, z}, {x + y}, o);
  EXPECT_EQ(g({NDArray::scalar(1, DType::Float64), NDArray::scalar(2, DType::Float64)})[0].get_flat(0), 7);
}

TEST(Function, InputChecksNameTheInput) {
  Var x = variable(matrix_type(DType::Float32), "x");
  Function f = function({x}, {x * 2.0});
  try {
    f({make_array({1, 2}, {1, 2}, DType::Float64)});
    FAIL();
  } catch (const TypeError& e) {
    EXPECT_NE(std::string(e.what()).find("input 0 ('x')"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("allow_input_downcast"), std::string::npos) << e.what();
  }
  EXPECT_THROW(f({f32({1, 2}, {2})}), TypeError);  // wrong ndim
  Function g = function({x}, {x * 2.0}, FunctionOptions{.allow_input_downcast = true});
  EXPECT_ALLCLOSE(g({make_array({1, 2}, {1, 2}, DType::Float64)})[0], f32({2, 4}, {1, 2}));
  // A safe upcast needs no permission.
  EXPECT_ALLCLOSE(f({make_array({1, 2}, {1, 2}, DType::Int8)})[0], f32({2, 4}, {1, 2}));
  Var r = variable(row_type(DType::Float32), "r");
  Function h = function({r}, {r + 1.0});
  EXPECT_THROW(h({f32({1, 2, 3, 4}, {2, 2})}), TypeError);  // broadcastable dim must be 1
}

TEST(Function, UnusedMissingAndBadInputs) {
  Var x = variable(vector_type(DType::Float32), "x");
  Var y = variable(vector_type(DType::Float32), "y");
  EXPECT_THROW(function({x, y}, {x * 2.0}), UnusedInputError);
  EXPECT_NO_THROW(function({x, y}, {x * 2.0}, FunctionOptions{.on_unused_input = "ignore"}));
  EXPECT_THROW(function({x}, {x + y}), MissingInputError);
  Var s = shared(f32({1}, {1}), "s");
  EXPECT_THROW(function({s}, {s * 2.0}), TypeError);
  EXPECT_THROW(function({x * 2.0}, {x}), TypeError);
  FunctionOptions o;
  o.updates = {{x, x + 1.0}};
  EXPECT_THROW(function({x}, {x}, o), TypeError);
  FunctionOptions o2;
  o2.updates = {{s, cast(s, DType::Float64)}};
  EXPECT_THROW(function({}, {}, o2), TypeError);
}

TEST(Function, KernelErrorsCarryTheNodeContext) {
  Var x = variable(vector_type(DType::Float32), "x");
  Var y = variable(vector_type(DType::Float32), "y");
  Function f = function({x, y}, {x + y});
  try {
    f({f32({1, 2}, {2}), f32({1, 2, 3}, {3})});
    FAIL();
  } catch (const ValueError& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("Apply node that caused the error"), std::string::npos) << m;
    EXPECT_NE(m.find("Inputs shapes: [(2,), (3,)]"), std::string::npos) << m;
    EXPECT_NE(m.find("Inputs strides"), std::string::npos) << m;
  }
}

TEST(Function, ConstantSubgraphsRunOnceAtCompileTime) {
  Var x = variable(vector_type(DType::Float32), "x");
  // exp(2) and its broadcasting DimShuffle depend only on constants; only the add reads x.
  Var c = exp(constant(NDArray::scalar(2.0, DType::Float32)));
  Function f = function({x}, {x + c, c});
  EXPECT_EQ(f.toposort().size(), 1u);
  for (int i = 0; i < 2; ++i) {
    auto r = f({make_array({1, 2}, {2}, DType::Float32)});
    EXPECT_NEAR(r[0].at<float>({1}), 2.0f + std::exp(2.0f), 1e-5);
    EXPECT_NEAR(r[1].get_flat(0), std::exp(2.0f), 1e-5);
    r[1].assign(NDArray::scalar(0.0, DType::Float32));  // the caller's copy, not the folded cell
  }
  // A large constant result is not folded (the function would hold it).
  Var n = constant(NDArray::scalar(1000, DType::Int64));
  Var big = alloc(constant(NDArray::scalar(1.0, DType::Float32)), {n, n});
  Function g = function({x}, {sum(x) + sum(big)});
  bool has_alloc = false;
  for (const auto& n : g.toposort()) has_alloc |= n->op->name().find("Alloc") != std::string::npos;
  EXPECT_TRUE(has_alloc);
}

TEST(Function, ProfileMemoryPeaksWithAndWithoutGcAndOutputBytesPerNode) {
  testing::DebugChecks plain(false);  // DebugMode keeps intermediates alive for its checks
  // FAST_COMPILE keeps a chain of separate nodes: e1 = exp(x), e2 = e1 * 2, e3 = e2 + 1, then its
  // sum and a view of it (a row). With gc, e1 is freed after e2 runs: at most two vectors of n
  // doubles at once; without gc, all three.
  const int64_t n = 1000;
  Var x = variable(vector_type(DType::Float64), "x");
  Var e3 = (exp(x) * 2.0) + 1.0;
  std::vector<Out> outs{Out(sum(e3)), Out(dimshuffle(e3, {-1, 0}))};
  for (bool gc : {true, false}) {
    Function f = function({x}, outs, FunctionOptions{.allow_gc = gc, .profile = true, .mode = "FAST_COMPILE"});
    NDArray xv = NDArray::zeros({n}, DType::Float64);
    for (int i = 0; i < 2; ++i) f({xv});
    const Profile& p = *f.profile();
    const int64_t vec = n * 8;
    EXPECT_EQ(p.allow_gc, gc);
    EXPECT_EQ(p.peak_bytes_no_gc, 3 * vec + 8) << "three vectors and the 0-d sum";
    EXPECT_EQ(p.peak_bytes, gc ? 2 * vec : 3 * vec + 8);
    int64_t views = 0, vectors = 0;
    for (const auto& node : p.nodes) {
      if (node.op_class == "DimShuffle") {
        EXPECT_EQ(node.output_bytes, 0) << "a view allocates nothing";
        ++views;
      }
      if (node.output_bytes == vec) {
        EXPECT_EQ(node.output_shapes, "(1000,) float64");
        ++vectors;
      }
    }
    EXPECT_EQ(views, 1);
    EXPECT_EQ(vectors, 3);
    std::string s = p.summary();
    EXPECT_NE(s.find("Memory profile"), std::string::npos) << s;
    EXPECT_NE(s.find("Max peak memory if allow_gc=False"), std::string::npos) << s;
    EXPECT_NE(s.find("8000B  (1000,) float64"), std::string::npos) << s;
  }
}

TEST(Function, ProfileTraceHasTheLazyNodesRounds) {
  // An ifelse asks for its branch, which runs between two rounds of the IfElse: each round is a
  // slice of the trace, and the branch's nodes have theirs.
  Var c = variable(scalar_type(DType::Int64), "c");
  Var x = variable(vector_type(DType::Float64), "x");
  Function f = function({c, x}, {ifelse(c, exp(x) * 2.0, log(x))}, FunctionOptions{.profile = true});
  f({NDArray::scalar_int64(1), make_array({1, 2}, {2}, DType::Float64)});
  const auto order = f.toposort();
  size_t ifelse_step = order.size();
  for (size_t i = 0; i < order.size(); ++i)
    if (order[i]->op->name().find("IfElse") != std::string::npos) ifelse_step = i;
  ASSERT_LT(ifelse_step, order.size());
  int rounds = 0;
  for (const auto& e : f.profile()->trace) rounds += e.step == ifelse_step;
  EXPECT_GE(rounds, 2);
  EXPECT_GT(f.profile()->trace.size(), static_cast<size_t>(rounds));
}

TEST(Function, ProfileAndDebugprint) {
  Var x = variable(vector_type(DType::Float64), "x");
  // FAST_COMPILE: no fusion, so exp and add stay separate nodes.
  Function f = function({x}, {exp(x) + 1.0}, FunctionOptions{.profile = true, .name = "prof", .mode = "FAST_COMPILE"});
  for (int i = 0; i < 3; ++i) f({make_array({1, 2}, {2}, DType::Float64)});
  ASSERT_NE(f.profile(), nullptr);
  std::string s = f.profile()->summary();
  EXPECT_NE(s.find("Elemwise{exp"), std::string::npos) << s;
  EXPECT_NE(s.find("Class"), std::string::npos);
  EXPECT_EQ(f.profile()->calls, 3);
  // The trace: one slice per node per call, in order within each call; the compile time of each
  // rewrite phase, printed after the tables.
  const auto& tr = f.profile()->trace;
  ASSERT_EQ(tr.size(), 3 * f.toposort().size());
  for (size_t i = 0; i < tr.size(); ++i) {
    EXPECT_EQ(tr[i].call, i / 2) << i;
    EXPECT_EQ(tr[i].step, i % 2) << i;
    EXPECT_GE(tr[i].dur_us, 0.0);
    if (i > 0) {
      EXPECT_GE(tr[i].start_us, tr[i - 1].start_us + tr[i - 1].dur_us - 1e-3) << i;
    }
  }
  ASSERT_FALSE(f.profile()->compile_phases.empty());
  EXPECT_NE(s.find("Compile time per rewrite phase"), std::string::npos) << s;
  EXPECT_NE(s.find(f.profile()->compile_phases[0].first), std::string::npos) << s;
  std::string d = f.debugprint();
  // Constant folding replaced the constant's DimShuffle by a constant.
  EXPECT_NE(d.find("Elemwise{add,no_inplace} [id A] ''   1"), std::string::npos) << d;
  EXPECT_NE(d.find(" |TensorConstant{1} [id D]"), std::string::npos) << d;
  EXPECT_EQ(f.toposort().size(), 2u);
  EXPECT_NE(d.find(" |Elemwise{exp,no_inplace} [id B] ''   0"), std::string::npos) << d;
  EXPECT_NE(d.find(" | |x [id C]"), std::string::npos) << d;
}

TEST(Function, AllocationFreeCall) {
  Var x = variable(vector_type(DType::Float32), "x");
  Function f = function({x}, {x + 1.0});
  std::vector<NDArray> args{f32({1}, {1})}, outs(1);
  for (int i = 0; i < 3; ++i) f.call(args, outs);
  EXPECT_ALLCLOSE(outs[0], f32({2}, {1}));
  std::vector<NDArray> wrong(2);
  EXPECT_THROW(f.call(args, wrong), TypeError);
}

TEST(Function, CallReusesTheCallersUnsharedOutputBuffers) {
  Var x = variable(vector_type(DType::Float32), "x");
  for (bool borrow : {false, true}) {
    Function f = function({x}, {Out(exp(x), borrow)});
    std::vector<NDArray> args{f32({0, 1, 2}, {3})}, outs(1);
    f.call(args, outs);
    const std::byte* first = outs[0].raw();
    f.call(args, outs);
    EXPECT_EQ(outs[0].raw(), first) << "borrow=" << borrow;  // reused: nothing else held it
    EXPECT_NEAR(outs[0].get_flat(2), std::exp(2.0), 1e-5);
    NDArray kept = outs[0];  // the caller keeps the result: the next call must not overwrite it
    f.call(std::vector<NDArray>{f32({1, 1, 1}, {3})}, outs);
    EXPECT_NE(outs[0].raw(), kept.raw());
    EXPECT_NEAR(kept.get_flat(0), 1.0, 1e-6);
    EXPECT_NEAR(outs[0].get_flat(0), std::exp(1.0), 1e-5);
    // A buffer of the wrong shape is dropped, not written out of bounds.
    f.call(std::vector<NDArray>{f32({1, 1, 1, 1, 1}, {5})}, outs);
    EXPECT_EQ(outs[0].shape(), (Shape{5}));
    // Arguments are never reused as outputs, even when passed as the output slot.
    NDArray in = f32({0, 0, 0}, {3});
    std::vector<NDArray> io{in};
    f.call(io, io);
    EXPECT_NEAR(in.get_flat(0), 0.0, 1e-6);
    EXPECT_NEAR(io[0].get_flat(0), 1.0, 1e-6);
  }
}

}  // namespace
}  // namespace hypatia

namespace hypatia {
namespace {

TEST(Function, AChainOfTenThousandNodesCompilesAndRunsInEveryMode) {
  // Graph algorithms (clone, toposort, rewrites, scheduling) must not recurse per node: an
  // unrolled loop makes chains this long.
  Var x = vector("x", DType::Float64);
  Var y = x;
  double want[2] = {0.0, 1.0};
  for (int k = 0; k < 10000; ++k) {
    y = k % 2 ? tanh(y) : y + 0.5;
    for (double& w : want) w = k % 2 ? std::tanh(w) : w + 0.5;
  }
  for (const char* mode : {"NONE", "FAST_COMPILE", "FAST_RUN"}) {
    FunctionOptions o;
    o.mode = mode;
    Function f = function({x}, {y}, o);
    NDArray r = f({NDArray::from_vector<double>({0.0, 1.0})})[0];
    EXPECT_NEAR(r.get_flat(0), want[0], 1e-9) << mode;
    EXPECT_NEAR(r.get_flat(1), want[1], 1e-9) << mode;
  }
}

}  // namespace
}  // namespace hypatia
