// The Print op: identity that prints its value when computed.
#include <gtest/gtest.h>

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
  EXPECT_THROW(PrintOp("m", {"nope"}), ValueError);
}

}  // namespace
}  // namespace hypatia
