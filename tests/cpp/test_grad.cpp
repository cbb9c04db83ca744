// grad (consider_constant, disconnected_inputs, known_grads), Lop, Rop, jacobian, hessian,
// disconnected_grad, grad_clip, verify_grad itself.
#include "test_util.h"

namespace hypatia {
namespace {
using testing::make_array;

NDArray f64(const std::vector<double>& v, const Shape& s) { return make_array(v, s, DType::Float64); }

TEST(Grad, SimpleChainRule) {
  Var x = variable(vector_type(DType::Float64), "x");
  Var cost = sum(x * x * 3.0);
  Var g = grad(cost, x);
  EXPECT_ALLCLOSE(eval(g, {{x, f64({1, 2}, {2})}}), f64({6, 12}, {2}));
}

TEST(Grad, ListOfWrtAndAccumulation) {
  Var a = variable(scalar_type(DType::Float64), "a");
  Var b = variable(scalar_type(DType::Float64), "b");
  Var cost = a * b + a * a;
  auto g = grad(cost, {a, b});
  std::vector<std::pair<Var, NDArray>> in{{a, NDArray::scalar(3, DType::Float64)},
                                          {b, NDArray::scalar(5, DType::Float64)}};
  EXPECT_DOUBLE_EQ(eval(g[0], in).get_flat(0), 5 + 6);
  EXPECT_DOUBLE_EQ(eval(g[1], in).get_flat(0), 3);
}

TEST(Grad, ConsiderConstantAndDisconnectedGrad) {
  Var x = variable(scalar_type(DType::Float64), "x");
  Var y = x * x;
  Var cost = y * x;
  std::vector<std::pair<Var, NDArray>> in{{x, NDArray::scalar(2, DType::Float64)}};
  EXPECT_DOUBLE_EQ(eval(grad(cost, x), in).get_flat(0), 12);
  EXPECT_DOUBLE_EQ(eval(grad(cost, x, GradOptions{.consider_constant = {y}}), in).get_flat(0), 4);
  EXPECT_DOUBLE_EQ(eval(grad(disconnected_grad(y) * x, x), in).get_flat(0), 4);
}

TEST(Grad, DisconnectedInputsPolicy) {
  Var x = variable(vector_type(DType::Float64), "x");
  Var z = variable(vector_type(DType::Float64), "z");
  Var cost = sum(x);
  EXPECT_THROW(grad(cost, z), DisconnectedInputError);
  Var gz = grad(cost, z, GradOptions{.disconnected_inputs = "ignore"});
  EXPECT_ALLCLOSE(eval(gz, {{z, f64({1, 2, 3}, {3})}}), f64({0, 0, 0}, {3}));
  EXPECT_THROW(grad(cost, z, GradOptions{.disconnected_inputs = "bogus"}), ValueError);
}

TEST(Grad, CostMustBeAFloatScalar) {
  Var x = variable(vector_type(DType::Float64), "x");
  EXPECT_THROW(grad(x * 2.0, x), TypeError);
  Var i = variable(scalar_type(DType::Int64), "i");
  EXPECT_THROW(grad(i * i, i), TypeError);
}

TEST(Grad, KnownGrads) {
  Var x = variable(vector_type(DType::Float64), "x");
  Var y = x * 2.0;
  Var gy = variable(vector_type(DType::Float64), "gy");
  Var gx = grad(nullptr, x, GradOptions{.known_grads = {{y, gy}}});
  EXPECT_ALLCLOSE(eval(gx, {{x, f64({1, 1}, {2})}, {gy, f64({3, 4}, {2})}}), f64({6, 8}, {2}));
}

TEST(Grad, LopAndRop) {
  Var x = variable(vector_type(DType::Float64), "x");
  Var y = x * x;
  Var v = variable(vector_type(DType::Float64), "v");
  Var l = Lop({y}, {x}, {v})[0];
  Var r = Rop({y}, {x}, {v})[0];
  std::vector<std::pair<Var, NDArray>> in{{x, f64({1, 2}, {2})}, {v, f64({3, 5}, {2})}};
  EXPECT_ALLCLOSE(eval(l, in), f64({6, 20}, {2}));
  EXPECT_ALLCLOSE(eval(r, in), f64({6, 20}, {2}));
}

TEST(Grad, JacobianAndHessian) {
  Var x = variable(vector_type(DType::Float64), "x");
  Var y = x * x * x;  // dy_i/dx_j = 3 x_i^2 delta_ij
  Var j = jacobian(y, x);
  EXPECT_ALLCLOSE(eval(j, {{x, f64({1, 2}, {2})}}), f64({3, 0, 0, 12}, {2, 2}));
  Var h = hessian(sum(x * x * x), x);  // diag(6 x)
  EXPECT_ALLCLOSE(eval(h, {{x, f64({1, 2}, {2})}}), f64({6, 0, 0, 12}, {2, 2}));
  Var s = jacobian(sum(x), x);  // 0-d expression: the gradient
  EXPECT_ALLCLOSE(eval(s, {{x, f64({1, 2}, {2})}}), f64({1, 1}, {2}));
}

TEST(Grad, GradClipClipsOnlyTheGradient) {
  Var x = variable(scalar_type(DType::Float64), "x");
  Var y = grad_clip(x, -1, 1) * 10.0;
  std::vector<std::pair<Var, NDArray>> in{{x, NDArray::scalar(2, DType::Float64)}};
  EXPECT_DOUBLE_EQ(eval(y, in).get_flat(0), 20);
  EXPECT_DOUBLE_EQ(eval(grad(y, x), in).get_flat(0), 1);
  EXPECT_THROW(grad_clip(x, 1, -1), ValueError);
}

TEST(VerifyGrad, DetectsAWrongGradient) {
  // A correct gradient passes.
  EXPECT_NO_THROW(verify_grad([](const std::vector<Var>& v) { return v[0] * v[0]; }, {f64({0.5, -1.5}, {2})}));
  // grad_clip changes the gradient without changing the value: verify_grad must notice.
  EXPECT_THROW(
      verify_grad([](const std::vector<Var>& v) { return grad_clip(v[0] * 10.0, -0.1, 0.1); }, {f64({0.5, -1.5}, {2})}),
      GradientError);
}

}  // namespace
}  // namespace hypatia
