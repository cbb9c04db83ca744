// Assert and SpecifyShape (ops/checks.h).
#include "hypatia/ops/checks.h"

#include "hypatia/core/error.h"
#include "hypatia/ops/elemwise.h"

namespace hypatia {

// ---------------------------------------------------------------------------------------------
// Assert

std::string Assert::name() const {
  constexpr size_t kShown = 40;
  return "Assert{msg='" + (msg.size() <= kShown ? msg : msg.substr(0, kShown - 3) + "...") + "'}";
}

std::vector<TensorType> Assert::make_output_types(const std::vector<Var>& inputs) const {
  if (inputs.empty()) fail<TypeError>(name(), ": expected a value and conditions, got no input");
  for (size_t i = 1; i < inputs.size(); ++i)
    if (inputs[i]->ndim() != 0)
      fail<TypeError>(name(), ": condition ", i - 1, " must be a 0-d value (a scalar), got ", inputs[i]->type.str());
  return {inputs[0]->type};
}

std::vector<ShapeVars> Assert::infer_shape(const Apply&, const std::vector<ShapeVars>& in) const { return {in[0]}; }

std::vector<Var> Assert::grad(const Apply& node, const std::vector<Var>& output_grads) const {
  std::vector<Var> r(node.inputs.size());
  r[0] = output_grads[0];
  return r;
}

std::vector<Var> Assert::rop(const Apply&, const std::vector<Var>& eval_points) const { return {eval_points[0]}; }

std::vector<std::vector<bool>> Assert::connection_pattern(const Apply& node) const {
  std::vector<std::vector<bool>> r(node.inputs.size(), {false});
  r[0] = {true};
  return r;
}

Var assert_op(Var x, std::vector<Var> conds, std::string msg) {
  if (!x) fail<TypeError>("Assert: the value is null");
  conds.insert(conds.begin(), std::move(x));
  return apply_op1(std::make_shared<Assert>(std::move(msg)), std::move(conds));
}

// ---------------------------------------------------------------------------------------------
// SpecifyShape

int SpecifyShape::input_of_axis(int a) const {
  if (!given[a]) return -1;
  int k = 1;
  for (int i = 0; i < a; ++i) k += given[i] ? 1 : 0;
  return k;
}

std::vector<TensorType> SpecifyShape::make_output_types(const std::vector<Var>& inputs) const {
  if (inputs.empty()) fail<TypeError>(name(), ": expected a value and its shape, got no input");
  const TensorType& t = inputs[0]->type;
  if (static_cast<int>(given.size()) != t.ndim())
    fail<TypeError>(name(), ": a shape of ", given.size(), " entries was given for a value of type ", t.str(), " (",
                    t.ndim(), " dims)");
  size_t n = 1;
  for (bool g : given) n += g ? 1 : 0;
  if (inputs.size() != n)
    fail<TypeError>(name(), ": expected ", n, " inputs (the value and ", n - 1, " lengths), got ", inputs.size());
  for (size_t i = 1; i < inputs.size(); ++i)
    if (inputs[i]->ndim() != 0 || !is_integer(inputs[i]->dtype()))
      fail<TypeError>(name(), ": each length must be a 0-d integer, got ", inputs[i]->type.str());
  return {t};
}

std::vector<ShapeVars> SpecifyShape::infer_shape(const Apply& node, const std::vector<ShapeVars>& in) const {
  ShapeVars s = in[0];
  for (int a = 0; a < static_cast<int>(given.size()); ++a) {
    const int k = input_of_axis(a);
    if (k < 0) continue;
    const Var& v = node.inputs[k];
    s[a] = v->dtype() == DType::Int64 ? v : cast(v, DType::Int64);
  }
  return {s};
}

std::vector<Var> SpecifyShape::grad(const Apply& node, const std::vector<Var>& output_grads) const {
  std::vector<Var> r(node.inputs.size());
  if (!output_grads[0]) return r;
  std::vector<Var> lengths(node.inputs.begin() + 1, node.inputs.end());
  lengths.insert(lengths.begin(), output_grads[0]);
  r[0] = apply_op1(std::make_shared<SpecifyShape>(given), std::move(lengths));
  return r;
}

std::vector<Var> SpecifyShape::rop(const Apply& node, const std::vector<Var>& eval_points) const {
  if (!eval_points[0]) return {nullptr};
  std::vector<Var> in(node.inputs.begin() + 1, node.inputs.end());
  in.insert(in.begin(), eval_points[0]);
  return {apply_op1(std::make_shared<SpecifyShape>(given), std::move(in))};
}

std::vector<std::vector<bool>> SpecifyShape::connection_pattern(const Apply& node) const {
  std::vector<std::vector<bool>> r(node.inputs.size(), {false});
  r[0] = {true};
  return r;
}

Var specify_shape(Var x, const std::vector<Var>& shape) {
  if (!x) fail<TypeError>("SpecifyShape: the value is null");
  if (static_cast<int>(shape.size()) != x->ndim())
    fail<TypeError>("SpecifyShape: a shape of ", shape.size(), " entries was given for a value of type ", x->type.str(),
                    " (", x->ndim(), " dims)");
  std::vector<bool> given;
  std::vector<Var> in{x};
  for (const Var& s : shape) {
    given.push_back(s != nullptr);
    if (s) in.push_back(s);
  }
  return apply_op1(std::make_shared<SpecifyShape>(std::move(given)), std::move(in));
}

}  // namespace hypatia
