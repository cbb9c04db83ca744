// grad (consider_constant, disconnected_inputs, known_grads), Lop, Rop, jacobian, hessian,
// disconnected_grad, grad_clip, verify_grad itself.
#include <atomic>
#include <thread>

#include "hypatia/grad/grad_ops.h"
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

TEST(Grad, RopOfAGradientIsTheHessianTimesAVector) {
  // Theano's tutorial: Rop(grad(sum(x^3), x), x, v) = H v with H = diag(6x). The gradient's graph
  // reads shapes (Shape_i, Alloc of its seed), whose integer values carry no tangent.
  Var x = variable(vector_type(DType::Float64), "x");
  Var v = variable(vector_type(DType::Float64), "v");
  Var gy = grad(sum(x * x * x), x);
  Var hv = Rop({gy}, {x}, {v})[0];
  std::vector<std::pair<Var, NDArray>> in{{x, f64({1, 2}, {2})}, {v, f64({3, 5}, {2})}};
  EXPECT_ALLCLOSE(eval(hv, in), f64({18, 60}, {2}));
  // An integer output with a tangent in reaches nothing: the shape of x, from x.
  Var s = Rop({cast(shape_i(x, 0), DType::Float64) * x}, {x}, {v})[0];
  EXPECT_ALLCLOSE(eval(s, in), f64({6, 10}, {2}));
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

/// The MapIndex node of a compiled jacobian, and the op types its body (the inner function) runs.
std::vector<std::string> mapindex_body_ops(const Function& f) {
  std::vector<std::string> r;
  for (const auto& n : f.toposort())
    if (const auto* m = dynamic_cast<const MapIndexOp*>(n.get()->op.get()))
      for (const auto& b : toposort({m->body})) r.push_back(b->op->name());
  return r;
}

TEST(Grad, JacobianRunsOnlyThePerRowWorkInItsBody) {
  // y = tanh(W x): the forward pass (the product, tanh) does not depend on the row, so it is
  // computed once outside the loop; the body scales one row of W. Values match the Jacobian
  // written by hand, (1 - y^2)[:, None] * W.
  NDArray wv = make_array({0.5, -1, 2, 0.25, 1.5, -0.75}, {3, 2}, DType::Float64);
  Var w = shared(wv, "W");
  Var x = variable(vector_type(DType::Float64), "x");
  Var y = tanh(dot(w, x));
  Function f = function({x}, {jacobian(y, x)});
  const std::vector<std::string> body_ops = mapindex_body_ops(f);
  EXPECT_FALSE(body_ops.empty());
  for (const std::string& op : body_ops) {
    EXPECT_EQ(op.find("tanh"), std::string::npos) << op;
    EXPECT_EQ(op.find("Dot"), std::string::npos) << op;
    EXPECT_EQ(op.find("Gemv"), std::string::npos) << op;
  }
  NDArray xv = f64({0.3, -0.2}, {2});
  Var d = sub(constant(1.0, DType::Float64), sqr(y));
  NDArray want = eval(mul(dimshuffle(d, {0, -1}), w), {{x, xv}});
  EXPECT_ALLCLOSE(f({xv})[0], want);
  // Again (the body's buffers are reused between calls), and from four threads at once (the
  // sub-program gives each call working state of its own).
  EXPECT_ALLCLOSE(f({xv})[0], want);
  std::vector<std::thread> ts;
  std::atomic<int> bad{0};
  for (int t = 0; t < 4; ++t)
    ts.emplace_back([&] {
      for (int k = 0; k < 20; ++k) {
        NDArray r = f({xv})[0];
        for (int64_t e = 0; e < r.size(); ++e) bad += std::abs(r.get_flat(e) - want.get_flat(e)) > 1e-12;
      }
    });
  for (auto& t : ts) t.join();
  EXPECT_EQ(bad.load(), 0);
}

TEST(Grad, JacobianOfAnEmptyVectorAndOfAMatrixExpression) {
  Var x = variable(vector_type(DType::Float64), "x");
  Function f = function({x}, {jacobian(exp(x), x)});
  EXPECT_EQ(f({NDArray::empty({0}, DType::Float64)})[0].shape(), Shape({0, 0}));
  // A matrix expression is flattened: rows are its elements in C order.
  Var m = dimshuffle(x, {0, -1}) * dimshuffle(x, {-1, 0});  // m_ij = x_i x_j
  NDArray j = eval(jacobian(m, x), {{x, f64({1, 2}, {2})}});
  EXPECT_ALLCLOSE(j, f64({2, 0, 2, 1, 2, 1, 0, 4}, {4, 2}));
}

TEST(Grad, MapIndexRunsOnlyInsideAFunction) {
  // Its kernel runs a sub-program compiled with the function; built alone it has none.
  Var x = variable(vector_type(DType::Float64), "x");
  Var j = jacobian(x * x, x);
  auto k = make_kernel(kCpuBackend, *j->owner);
  NDArray n = NDArray::scalar_int64(2), xv = f64({1, 2}, {2}), out;
  std::vector<NDArray*> in{&n, &xv}, o{&out};
  EXPECT_ERROR(NotImplementedError, k->run(KernelArgs{in, o}), "compiled only within a function");
}

TEST(Grad, GradClipClipsOnlyTheGradient) {
  Var x = variable(scalar_type(DType::Float64), "x");
  Var y = grad_clip(x, -1, 1) * 10.0;
  std::vector<std::pair<Var, NDArray>> in{{x, NDArray::scalar(2, DType::Float64)}};
  EXPECT_DOUBLE_EQ(eval(y, in).get_flat(0), 20);
  EXPECT_DOUBLE_EQ(eval(grad(y, x), in).get_flat(0), 1);
  EXPECT_THROW(grad_clip(x, 1, -1), ValueError);
}

TEST(Grad, GradScaleScalesOnlyTheGradient) {
  Var x = variable(TensorType(DType::Float32, {false}), "x");
  Var y = sum(grad_scale(x, -0.5) * x);  // value sum(x^2); gradient -0.5 x + x
  std::vector<std::pair<Var, NDArray>> in{{x, NDArray::from_vector<float>({2, -4}, {2})}};
  EXPECT_FLOAT_EQ(eval(y, in).get_flat(0), 20);
  const NDArray g = eval(grad(y, x), in);
  EXPECT_EQ(g.dtype(), DType::Float32);
  EXPECT_FLOAT_EQ(g.get_flat(0), 1);
  EXPECT_FLOAT_EQ(g.get_flat(1), -2);
  EXPECT_THROW(grad_scale(x, std::nan("")), ValueError);
  // The same multiplier makes the same op (merge), another one another.
  EXPECT_TRUE(grad_scale(x, 2)->owner->op->equals(*grad_scale(x, 2)->owner->op));
  EXPECT_FALSE(grad_scale(x, 2)->owner->op->equals(*grad_scale(x, 3)->owner->op));
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
