// The Print op: identity that prints its value when computed.
#include <gtest/gtest.h>

#include "hypatia/core/messages.h"
#include "hypatia/hypatia.h"
#include "test_util.h"

namespace hypatia {
namespace {

using testing::make_array;
using testing::OpSample;

HYP_OPINFO({
    .name = "print",
    .build = [](const std::vector<Var>& v) { return print_op(v[0] * 1.5, "opinfo", {"shape"}); },
    .samples =
        [](DType dt) {
          return std::vector<OpSample>{
              {"matrix", {testing::random_array({2, 3}, dt)}},
              {"0-d", {testing::random_array({}, dt)}},
          };
        },
    .dtypes = testing::kFloatTypes,
});

TEST(Print, PrintsWhenComputedAndPassesValuesAndGradientsThrough) {
  Var x = variable(vector_type(DType::Float64), "x");
  Var y = print_op(x * 2.0, "doubled", {"__str__", "shape"});
  Function f = function({x}, {y, grad(sum(y), x)});
  ::testing::internal::CaptureStdout();
  auto r = f({make_array({1, 2}, {2}, DType::Float64)});
  std::string out = ::testing::internal::GetCapturedStdout();
  EXPECT_NE(out.find("doubled __str__ = "), std::string::npos) << out;
  EXPECT_NE(out.find("doubled shape = (2,)"), std::string::npos) << out;
  EXPECT_EQ(r[0].get_flat(1), 4.0);
  EXPECT_EQ(r[1].get_flat(0), 2.0);
  // A Print of a constant still prints at run time (it is not folded away).
  Function g = function({}, {print_op(constant(NDArray::scalar(3.0, DType::Float64)), "c")});
  ::testing::internal::CaptureStdout();
  g();
  g();
  std::string out2 = ::testing::internal::GetCapturedStdout();
  EXPECT_EQ(std::count(out2.begin(), out2.end(), '\n'), 2) << out2;
  // C++ builds know nine attributes; an op made with another (as from Python) says so when run.
  EXPECT_ERROR(ValueError, print_op(x, "m", {"nope"}), "unknown attribute 'nope'");
  Function h = function({x}, {apply_op1(std::make_shared<PrintOp>("m", std::vector<std::string>{"std"}), {x})});
  EXPECT_ERROR(ValueError, h({make_array({1, 2}, {2}, DType::Float64)}), "is printed from Python only");
}

// Every message a user should see goes through one sink (core/messages.h) that a front end can
// replace: Print's lines (Output), warnings (Warning), profile summaries and rewrite traces
// (Diagnostic). The reductions Print shows in C++.
TEST(Print, MessagesGoThroughTheReplaceableSink) {
  std::vector<std::pair<MessageChannel, std::string>> got;
  set_message_sink([&](MessageChannel ch, const std::string& t) { got.emplace_back(ch, t); });
  struct Restore {
    ~Restore() { set_message_sink(nullptr); }
  } restore;
  Var x = variable(vector_type(DType::Float64), "x");
  Function f = function({x}, {print_op(x, "v", {"min", "max", "sum", "mean", "size", "ndim", "dtype"})});
  f({make_array({1, -2, 4}, {3}, DType::Float64)});
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].first, MessageChannel::Output);
  EXPECT_EQ(got[0].second, "v min = -2\nv max = 4\nv sum = 3\nv mean = 1\nv size = 3\nv ndim = 1\nv dtype = float64\n");
  got.clear();
  // A disconnected input under disconnected_inputs='warn' is a Warning.
  Var y = variable(vector_type(DType::Float64), "y");
  GradOptions go;
  go.disconnected_inputs = "warn";
  grad(sum(x), {y}, go);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].first, MessageChannel::Warning);
  EXPECT_NE(got[0].second.find("not part of the computational graph"), std::string::npos) << got[0].second;
}

}  // namespace
}  // namespace hypatia

namespace hypatia {
namespace {

// Provenance: a compiled node records the rewrite that brought it in; the user's own nodes none.
TEST(Provenance, NodesRecordTheRewriteThatMadeThem) {
  Var x = variable(vector_type(DType::Float64), "x");
  Var y = exp(x) * 2.0 + 1.0;
  Function f = function({x}, {y});
  bool any = false;
  for (const auto& n : f.toposort()) any = any || !n->made_by.empty();
  EXPECT_TRUE(any) << f.debugprint();
  EXPECT_NE(f.debugprint(DebugPrintOptions{.provenance = true}).find("[by "), std::string::npos);
  FunctionOptions o;
  o.mode = "NONE";
  Function g = function({x}, {y}, o);
  for (const auto& n : g.toposort()) EXPECT_EQ(n->made_by, "") << n->op->name();
  EXPECT_NE(g.debugprint(DebugPrintOptions{.provenance = true}).find("[as written; built in C++]"), std::string::npos)
      << g.debugprint(DebugPrintOptions{.provenance = true});
}

}  // namespace
}  // namespace hypatia
