// Linear algebra ops: dot (numpy semantics), Gemm, Gemv, Ger, outer, tensordot and batched_dot.
#pragma once
#include <string>
#include <vector>

#include "hypatia/graph/graph.h"

namespace hypatia {

/// numpy.dot for vectors and matrices (Theano's Dot; its name is "dot"): vector·vector -> 0-d,
/// matrix·vector -> vector, vector·matrix -> vector, matrix·matrix -> matrix. Inputs of different
/// dtypes are promoted (numpy rules). The matrix·matrix case is Theano's Dot22.
class Dot : public OpWithProps<Dot> {
 public:
  auto props() const { return std::make_tuple(); }
  std::string name() const override { return "dot"; }
  std::vector<TensorType> make_output_types(const std::vector<Var>& inputs) const override;
  std::vector<ShapeVars> infer_shape(const Apply& node, const std::vector<ShapeVars>& in) const override;
  std::vector<Var> grad(const Apply& node, const std::vector<Var>& output_grads) const override;
  std::vector<Var> rop(const Apply& node, const std::vector<Var>& eval_points) const override;
};

/// Theano's Gemm: inputs (z, alpha, x, y, beta), output beta*z + alpha*dot(x, y) for matrices
/// z, x, y of one dtype and 0-d alpha, beta. As in BLAS, z is not read when beta == 0.
/// `inplace`: the output overwrites z (destroy_map {0: [0]}), for the optimizer's in-place pass.
class Gemm : public OpWithProps<Gemm> {
 public:
  bool inplace = false;
  explicit Gemm(bool inplace_ = false) : inplace(inplace_) {}
  auto props() const { return std::make_tuple(inplace); }
  /// "Gemm{inplace}" or "Gemm{no_inplace}".
  std::string name() const override;
  std::vector<TensorType> make_output_types(const std::vector<Var>& inputs) const override;
  std::vector<ShapeVars> infer_shape(const Apply& node, const std::vector<ShapeVars>& in) const override;
  std::vector<Var> grad(const Apply& node, const std::vector<Var>& output_grads) const override;
  std::vector<Var> rop(const Apply& node, const std::vector<Var>& eval_points) const override;
  AliasMap destroy_map() const override;
  bool checks_runtime_inputs() const override { return true; }
  void check_runtime_inputs(const Apply& node, std::span<NDArray* const> in) const override;
};

/// Theano's Gemv: inputs (z, alpha, A, x, beta), output beta*z + alpha*dot(A, x) for vectors z, x,
/// a matrix A of one dtype and 0-d alpha, beta. z is not read when beta == 0.
/// `inplace`: the output overwrites z (destroy_map {0: [0]}).
class Gemv : public OpWithProps<Gemv> {
 public:
  bool inplace = false;
  explicit Gemv(bool inplace_ = false) : inplace(inplace_) {}
  auto props() const { return std::make_tuple(inplace); }
  /// "Gemv{inplace}" or "Gemv{no_inplace}".
  std::string name() const override;
  std::vector<TensorType> make_output_types(const std::vector<Var>& inputs) const override;
  std::vector<ShapeVars> infer_shape(const Apply& node, const std::vector<ShapeVars>& in) const override;
  std::vector<Var> grad(const Apply& node, const std::vector<Var>& output_grads) const override;
  std::vector<Var> rop(const Apply& node, const std::vector<Var>& eval_points) const override;
  AliasMap destroy_map() const override;
  bool checks_runtime_inputs() const override { return true; }
  void check_runtime_inputs(const Apply& node, std::span<NDArray* const> in) const override;
};

/// Theano's Ger: inputs (A, alpha, x, y), output A + alpha*outer(x, y) for a matrix A, vectors x,
/// y of one dtype and a 0-d alpha. `inplace` (Theano's `destructive`): the output overwrites A.
class Ger : public OpWithProps<Ger> {
 public:
  bool inplace = false;
  explicit Ger(bool inplace_ = false) : inplace(inplace_) {}
  auto props() const { return std::make_tuple(inplace); }
  /// "Ger{destructive}" or "Ger{non-destructive}" (Theano's spelling).
  std::string name() const override;
  std::vector<TensorType> make_output_types(const std::vector<Var>& inputs) const override;
  std::vector<ShapeVars> infer_shape(const Apply& node, const std::vector<ShapeVars>& in) const override;
  std::vector<Var> grad(const Apply& node, const std::vector<Var>& output_grads) const override;
  std::vector<Var> rop(const Apply& node, const std::vector<Var>& eval_points) const override;
  AliasMap destroy_map() const override;
  bool checks_runtime_inputs() const override { return true; }
  void check_runtime_inputs(const Apply& node, std::span<NDArray* const> in) const override;
};

/// Theano's BatchedDot: x and y have a leading batch axis of equal length and are 2-d or 3-d
/// (a 2-d input is a batch of vectors); out[i] = dot(x[i], y[i]). Dtypes are promoted.
/// The shape checks of the Gemm, Gemv and Ger kernels (ValueError naming `op`), shared with
/// their check_runtime_inputs.
void check_gemm_shapes(const Op& op, const NDArray& z, const NDArray& x, const NDArray& y);
void check_gemv_shapes(const Op& op, const NDArray& z, const NDArray& A, const NDArray& x);
void check_ger_shapes(const Op& op, const NDArray& A, const NDArray& x, const NDArray& y);

class BatchedDot : public OpWithProps<BatchedDot> {
 public:
  auto props() const { return std::make_tuple(); }
  std::string name() const override { return "BatchedDot"; }
  std::vector<TensorType> make_output_types(const std::vector<Var>& inputs) const override;
  std::vector<ShapeVars> infer_shape(const Apply& node, const std::vector<ShapeVars>& in) const override;
  std::vector<Var> grad(const Apply& node, const std::vector<Var>& output_grads) const override;
  std::vector<Var> rop(const Apply& node, const std::vector<Var>& eval_points) const override;
};

/// numpy.dot: a 0-d operand multiplies elementwise; vectors and matrices use the Dot op; higher
/// ndim contracts the last axis of a with the second-to-last of b (the last when b is a vector),
/// via tensordot.
Var dot(Var a, Var b);
/// beta*z + alpha*dot(x, y) (the Gemm op, not in place).
Var gemm(Var z, Var alpha, Var x, Var y, Var beta);
/// beta*z + alpha*dot(A, x) (the Gemv op, not in place).
Var gemv(Var z, Var alpha, Var A, Var x, Var beta);
/// A + alpha*outer(x, y) (the Ger op, not in place).
Var ger(Var A, Var alpha, Var x, Var y);
/// Outer product of two vectors: a matrix (Theano's outer: a column times a row, through Dot).
Var outer(Var x, Var y);
/// numpy.tensordot with `axes` an integer: the last `axes` axes of a against the first of b.
Var tensordot(Var a, Var b, int axes = 2);
/// numpy.tensordot summing a's axes `a_axes` against b's axes `b_axes` (same length, pairwise).
/// The result's axes are a's free axes then b's free axes, in order.
Var tensordot(Var a, Var b, const std::vector<int>& a_axes, const std::vector<int>& b_axes);
/// Theano's batched_dot: the dot of a[i] and b[i] for each i of the leading batch axis. A vector
/// operand scales the other's batch elementwise; 2-d and 3-d operands use BatchedDot; higher ndim
/// contracts a's last axis with b's axis max(1, b.ndim - 2) per batch element.
Var batched_dot(Var a, Var b);

}  // namespace hypatia
