#include "hypatia/ops/print.h"

#include "hypatia/core/error.h"

namespace hypatia {

PrintOp::PrintOp(std::string msg, std::vector<std::string> attributes)
    : message(std::move(msg)), attrs(std::move(attributes)) {
  for (const auto& a : attrs)
    if (a != "__str__" && a != "shape" && a != "dtype")
      fail<ValueError>("Print: unknown attribute '", a, "'; expected __str__, shape or dtype");
}

std::vector<TensorType> PrintOp::make_output_types(const std::vector<Var>& inputs) const {
  if (inputs.size() != 1) fail<TypeError>(name(), ": expected 1 input, got ", inputs.size());
  return {inputs[0]->type};
}

std::vector<ShapeVars> PrintOp::infer_shape(const Apply&, const std::vector<ShapeVars>& in) const { return {in[0]}; }

std::vector<Var> PrintOp::grad(const Apply&, const std::vector<Var>& output_grads) const { return {output_grads[0]}; }

std::vector<Var> PrintOp::rop(const Apply&, const std::vector<Var>& eval_points) const { return {eval_points[0]}; }

Var print_op(Var x, std::string message, std::vector<std::string> attrs) {
  return apply_op1(std::make_shared<PrintOp>(std::move(message), std::move(attrs)), {std::move(x)});
}

}  // namespace hypatia
