// Theano's Print op: passes its input through unchanged and prints it (with a message) each time
// the function computes it.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "hypatia/graph/graph.h"

namespace hypatia {

/// Output = input (a view). When computed, writes "<message> <attr> = <value>" lines, one per
/// attribute, to the Output message channel (core/messages.h: stdout, or Python's sys.stdout).
/// Built in C++ (print_op): "__str__" (the array), "shape", "dtype", "min", "max", "sum", "mean",
/// "size", "ndim". From Python, any numpy.ndarray attribute, formatted by numpy (the print hook
/// below), as Theano did. Gradient and R_op pass through.
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

/// print_op(x, "message"): x, printed whenever it is computed. attrs: those C++ can print
/// (PrintOp's list); another is a ValueError.
Var print_op(Var x, std::string message = "", std::vector<std::string> attrs = {"__str__"});

/// A front end's printer of Print values (Python formats with numpy and writes to sys.stdout): runs
/// on the kernel's thread; returns false to leave the value to the C++ printer. Null: C++ only.
using PrintValueHook = std::function<bool(const PrintOp& op, const NDArray& value)>;
void set_print_value_hook(PrintValueHook hook);
/// Runs the hook: whether it printed the value.
bool print_value_with_hook(const PrintOp& op, const NDArray& value);
/// The attributes the C++ printer knows.
bool is_cpp_print_attr(const std::string& attr);

}  // namespace hypatia
