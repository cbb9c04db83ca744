// NanGuardMode (runtime/nan_guard.h through FunctionOptions::nan_guard) and the node hooks behind
// MonitorMode: the first node that produces NaN, an infinity or a big value is named with its
// inputs' statistics; a bad function input is named instead of its reader; each check can be
// turned off; the hooks see every node in schedule order; a failed call changes no shared variable.
#include "hypatia/testing/emulated_gpu.h"
#include "test_util.h"

namespace hypatia {
namespace {
using testing::make_array;

TEST(NanGuard, NamesTheFirstNodeThatProducesABadValue) {
  Var x = variable(vector_type(DType::Float64), "x");
  Var y = log(x);        // NaN for x < 0
  Var z = exp(y * 2.0);  // reads the NaN: not the culprit
  FunctionOptions o;
  o.nan_guard = NanGuardOptions{};
  o.mode = "FAST_COMPILE";  // keep log and exp as separate nodes
  Function f = function({x}, {z}, o);
  EXPECT_NO_THROW(f({make_array({1, 2}, {2}, DType::Float64)}));
  const std::string msg = testing::error_of<NanGuardError>([&] { f({make_array({1, -2, 3}, {3}, DType::Float64)}); });
  EXPECT_NE(msg.find("log"), std::string::npos) << msg;
  EXPECT_NE(msg.find("NaN"), std::string::npos) << msg;
  EXPECT_NE(msg.find("flat index 1"), std::string::npos) << msg;
  EXPECT_NE(msg.find("min -2, max 3"), std::string::npos) << msg;  // the input's statistics
  EXPECT_EQ(msg.find("Elemwise{exp"), std::string::npos) << msg;
  // Infinity and big values; each check can be turned off.
  Var w = x * 1e12;
  Function big = function({x}, {w}, o);
  EXPECT_ERROR(NanGuardError, big({make_array({1}, {1}, DType::Float64)}), "a big value");
  FunctionOptions nobig = o;
  nobig.nan_guard->big = false;
  Function big_ok = function({x}, {w}, nobig);
  EXPECT_NO_THROW(big_ok({make_array({1}, {1}, DType::Float64)}));
  EXPECT_ERROR(NanGuardError, big_ok({make_array({1e308}, {1}, DType::Float64)}), "an infinity");
  // A function input that is already bad is named, not the node that reads it.
  EXPECT_ERROR(NanGuardError, f({make_array({1, NAN}, {2}, DType::Float64)}), "input x of the function holds NaN");
}

TEST(NanGuard, OnADeviceTheNodeThatMadeTheValueIsNamedNotTheTransfer) {
  // The emulated GPU: log runs on the device; its output is checked through a host copy.
  testing::EmulatedGpu gpu;
  Var x = variable(vector_type(DType::Float64), "x");
  FunctionOptions o;
  o.nan_guard = NanGuardOptions{};
  o.mode = "FAST_COMPILE";
  o.backend = testing::kEmulatedGpuBackend;
  Function f = function({x}, {exp(log(x) * 2.0)}, o);
  EXPECT_NO_THROW(f({make_array({1, 2}, {2}, DType::Float64)}));
  const std::string msg = testing::error_of<NanGuardError>([&] { f({make_array({1, -2, 3}, {3}, DType::Float64)}); });
  EXPECT_NE(msg.find("NanGuardMode: Elemwise{log"), std::string::npos) << msg;
  EXPECT_NE(msg.find("flat index 1"), std::string::npos) << msg;
  EXPECT_NE(msg.find("min -2, max 3"), std::string::npos) << msg;
}

TEST(NanGuard, AFailedCallChangesNoSharedVariable) {
  Var s = shared(make_array({1, 2}, {2}, DType::Float64), "s");
  Var x = variable(vector_type(DType::Float64), "x");
  FunctionOptions o;
  o.nan_guard = NanGuardOptions{};
  o.updates = {{s, s + log(x)}};
  Function f = function({x}, {}, o);
  EXPECT_THROW(f({make_array({1, -1}, {2}, DType::Float64)}), NanGuardError);
  EXPECT_ALLCLOSE(get_value(s), make_array({1, 2}, {2}, DType::Float64));
  f({make_array({1, 1}, {2}, DType::Float64)});
  EXPECT_ALLCLOSE(get_value(s), make_array({1, 2}, {2}, DType::Float64));
}

TEST(NanGuard, NodeHooksSeeEveryNodeInOrder) {
  Var x = variable(vector_type(DType::Float64), "x");
  FunctionOptions o;
  o.mode = "FAST_COMPILE";
  std::vector<std::string> pre, post;
  o.pre_node = [&](size_t t, const Apply& n, const KernelArgs&) { pre.push_back(std::to_string(t) + n.op->name()); };
  o.post_node = [&](size_t t, const Apply& n, const KernelArgs& a) {
    EXPECT_TRUE(a.out[0]->valid());
    post.push_back(std::to_string(t) + n.op->name());
  };
  Function f = function({x}, {exp(log(x))}, o);
  f({make_array({1, 2}, {2}, DType::Float64)});
  ASSERT_EQ(pre.size(), f.toposort().size());
  EXPECT_EQ(pre, post);
  for (size_t i = 0; i < pre.size(); ++i) EXPECT_EQ(pre[i].rfind(std::to_string(i), 0), 0u) << pre[i];
}

}  // namespace
}  // namespace hypatia
