// Ops that check their input at run time and pass it through as a view: Assert (Theano's
// tensor.opt.Assert) and SpecifyShape (Theano's tensor.SpecifyShape). Their gradient is the
// output gradient itself; a failed check raises when the function runs (before any shared
// variable is written: a call that fails changes none).
#pragma once
#include <string>
#include <vector>

#include "hypatia/graph/graph.h"

namespace hypatia {

/// Theano's Assert: inputs (x, c_1, ..., c_k), each condition a 0-d number or bool; output x (a
/// view). A condition equal to zero raises AssertionError with the op's message, the condition's
/// index and x's description. Constant true conditions are dropped when compiling
/// (local_remove_useless_assert; none left: x).
class Assert : public OpWithProps<Assert> {
 public:
  std::string msg;
  explicit Assert(std::string message = "Theano Assert failed!") : msg(std::move(message)) {}
  auto props() const { return std::make_tuple(msg); }
  /// "Assert{msg='...'}", the message cut to 40 characters (the error prints it whole).
  std::string name() const override;
  std::vector<TensorType> make_output_types(const std::vector<Var>& inputs) const override;
  std::vector<ShapeVars> infer_shape(const Apply& node, const std::vector<ShapeVars>& in) const override;
  std::vector<Var> grad(const Apply& node, const std::vector<Var>& output_grads) const override;
  std::vector<Var> rop(const Apply& node, const std::vector<Var>& eval_points) const override;
  std::vector<std::vector<bool>> connection_pattern(const Apply& node) const override;
  AliasMap view_map() const override { return {{0}}; }
};

/// x, checked at run time against `conds` (Theano's assert_op).
Var assert_op(Var x, std::vector<Var> conds, std::string msg = "Theano Assert failed!");

/// Theano's SpecifyShape: inputs (x, one 0-d integer per axis a with given[a]); output x (a view),
/// whose shape is those values (infer_shape answers with them). An axis of another length raises
/// AssertionError naming the shape expected ("?" where not given) and x's shape and strides. Axes not given (None in
/// Python, as PyTensor allows) are not checked.
class SpecifyShape : public OpWithProps<SpecifyShape> {
 public:
  std::vector<bool> given;
  explicit SpecifyShape(std::vector<bool> given_axes) : given(std::move(given_axes)) {}
  auto props() const { return std::make_tuple(given); }
  std::string name() const override { return "SpecifyShape"; }
  std::vector<TensorType> make_output_types(const std::vector<Var>& inputs) const override;
  std::vector<ShapeVars> infer_shape(const Apply& node, const std::vector<ShapeVars>& in) const override;
  std::vector<Var> grad(const Apply& node, const std::vector<Var>& output_grads) const override;
  std::vector<Var> rop(const Apply& node, const std::vector<Var>& eval_points) const override;
  std::vector<std::vector<bool>> connection_pattern(const Apply& node) const override;
  AliasMap view_map() const override { return {{0}}; }
  /// The input index of axis a's length, or -1 when that axis is not given.
  int input_of_axis(int a) const;
};

/// x with its shape specified: one entry per axis of x, a null entry for an axis not checked.
Var specify_shape(Var x, const std::vector<Var>& shape);

}  // namespace hypatia
