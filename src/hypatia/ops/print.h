// Theano's Print op: passes its input through unchanged and prints it (with a message) each time
// the function computes it.
#pragma once
#include <string>
#include <vector>

#include "hypatia/graph/graph.h"

namespace hypatia {

/// Output = input (a view). When computed, writes "<message> <attr> = <value>" lines to stdout,
/// one per attribute: "__str__" (the array), "shape", "dtype". Gradient and R_op pass through.
class PrintOp : public OpWithProps<PrintOp> {
 public:
  std::string message;
  std::vector<std::string> attrs;
  PrintOp(std::string msg, std::vector<std::string> attributes);
  auto props() const { return std::make_tuple(message, attrs); }
  std::string name() const override { return "Print{" + message + "}"; }
  std::vector<TensorType> make_output_types(const std::vector<Var>& inputs) const override;
  std::vector<ShapeVars> infer_shape(const Apply& node, const std::vector<ShapeVars>& in) const override;
  std::vector<Var> grad(const Apply& node, const std::vector<Var>& output_grads) const override;
  std::vector<Var> rop(const Apply& node, const std::vector<Var>& eval_points) const override;
  AliasMap view_map() const override { return {{0}}; }
  bool has_side_effects() const override { return true; }
};

/// print_op(x, "message"): x, printed whenever it is computed.
Var print_op(Var x, std::string message = "", std::vector<std::string> attrs = {"__str__"});

}  // namespace hypatia
