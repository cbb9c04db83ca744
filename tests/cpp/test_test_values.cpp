// compute_test_value: nodes compute their outputs' test values as they are built.
#include <gtest/gtest.h>

#include "hypatia/hypatia.h"
#include "test_util.h"

namespace hypatia {
namespace {

/// Sets config().compute_test_value for the scope of a test.
struct TestValueMode {
  std::string saved = config().compute_test_value;
  explicit TestValueMode(const char* mode) { config().set("compute_test_value", mode); }
  ~TestValueMode() { config().set("compute_test_value", saved); }
};

TEST(TestValues, PropagateThroughNodes) {
  TestValueMode mode("raise");
  Var x = matrix("x", DType::Float64);
  x->test_value = testing::make_array({1, 2, 3, 4, 5, 6}, {2, 3}, DType::Float64);
  Var w = shared(NDArray::full({3, 2}, DType::Float64, 1.0), "w");
  Var y = exp(dot(x, w)) + 1.0;
  ASSERT_TRUE(y->test_value.valid());
  EXPECT_EQ(y->test_value.shape(), (Shape{2, 2}));
  EXPECT_DOUBLE_EQ(y->test_value.get_flat(0), std::exp(6.0) + 1.0);
}

TEST(TestValues, ShapeErrorsSurfaceWhereTheNodeIsBuilt) {
  TestValueMode mode("raise");
  Var x = vector("x", DType::Float64);
  x->test_value = NDArray::zeros({3}, DType::Float64);
  Var y = vector("y", DType::Float64);
  y->test_value = NDArray::zeros({4}, DType::Float64);
  EXPECT_THROW(x + y, ValueError);
  Var z = vector("z", DType::Float64);  // no test value
  EXPECT_THROW(x * z, ValueError);
}

TEST(TestValues, IgnoreAndOff) {
  Var z = vector("z", DType::Float64);
  {
    TestValueMode mode("ignore");
    EXPECT_FALSE((z * 2.0)->test_value.valid());
  }
  Var x = vector("x", DType::Float64);
  x->test_value = NDArray::zeros({3}, DType::Float64);
  EXPECT_FALSE((x * 2.0)->test_value.valid());  // off by default
}

}  // namespace
}  // namespace hypatia
