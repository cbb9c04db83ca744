#include "hypatia/ops/print.h"

#include <memory>
#include <mutex>

#include "hypatia/core/error.h"

namespace hypatia {

namespace {
constexpr const char* kCppAttrs[] = {"__str__", "shape", "dtype", "min", "max", "sum", "mean", "size", "ndim"};

struct HookSlot {
  std::mutex mu;
  std::shared_ptr<const PrintValueHook> hook;
};
HookSlot& hook_slot() {
  static HookSlot* s = new HookSlot;  // never destroyed: a Print may run during exit
  return *s;
}
}  // namespace

bool is_cpp_print_attr(const std::string& attr) {
  for (const char* a : kCppAttrs)
    if (attr == a) return true;
  return false;
}

void set_print_value_hook(PrintValueHook hook) {
  auto p = hook ? std::make_shared<const PrintValueHook>(std::move(hook)) : nullptr;
  std::lock_guard<std::mutex> lock(hook_slot().mu);
  hook_slot().hook = std::move(p);
}

bool print_value_with_hook(const PrintOp& op, const NDArray& value) {
  std::shared_ptr<const PrintValueHook> h;
  {
    std::lock_guard<std::mutex> lock(hook_slot().mu);
    h = hook_slot().hook;
  }
  return h && *h && (*h)(op, value);
}

PrintOp::PrintOp(std::string msg, std::vector<std::string> attributes)
    : message(std::move(msg)), attrs(std::move(attributes)) {
  for (const auto& a : attrs)
    if (a.empty()) fail<ValueError>("Print: an empty attribute name");
}

std::vector<TensorType> PrintOp::make_output_types(const std::vector<Var>& inputs) const {
  if (inputs.size() != 1) fail<TypeError>(name(), ": expected 1 input, got ", inputs.size());
  return {inputs[0]->type};
}

std::vector<ShapeVars> PrintOp::infer_shape(const Apply&, const std::vector<ShapeVars>& in) const { return {in[0]}; }

std::vector<Var> PrintOp::grad(const Apply&, const std::vector<Var>& output_grads) const { return {output_grads[0]}; }

std::vector<Var> PrintOp::rop(const Apply&, const std::vector<Var>& eval_points) const { return {eval_points[0]}; }

Var print_op(Var x, std::string message, std::vector<std::string> attrs) {
  for (const auto& a : attrs)
    if (!is_cpp_print_attr(a))
      fail<ValueError>("Print: unknown attribute '", a,
                       "'; expected __str__, shape, dtype, min, max, sum, mean, size or ndim");
  return apply_op1(std::make_shared<PrintOp>(std::move(message), std::move(attrs)), {std::move(x)});
}

}  // namespace hypatia
