// Test values (Theano's compute_test_value): with config().compute_test_value set to "raise",
// "warn" or "ignore", every node apply_op builds computes its outputs' test values from its
// inputs' (constants' data, shared variables' values, Variable::test_value of the others), so a
// shape or type error surfaces where the node is built.
#include <iostream>

#include "hypatia/backends/registry.h"
#include "hypatia/core/config.h"
#include "hypatia/core/error.h"
#include "hypatia/core/messages.h"

namespace hypatia {
namespace {

NDArray value_of(const Variable& v) {
  if (v.is_constant()) return v.data;
  if (v.is_shared()) return v.cell->load();
  return v.test_value;
}

void compute_test_values(Apply& node) {
  const std::string& mode = config().compute_test_value;
  if (mode == "off") return;
  std::vector<NDArray> in(node.inputs.size()), out(node.nout());
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    in[i] = value_of(*node.inputs[i]);
    if (in[i].valid()) continue;
    if (mode == "ignore") return;
    std::string msg = detail::concat(node.op->name(), ": input ", i, " (", node.inputs[i]->str(),
                                     ") has no test value, so the node's cannot be computed (compute_test_value='",
                                     mode, "'); give the input one (x.tag.test_value = ...)");
    if (mode == "warn") {
      warn(msg);
      return;
    }
    throw ValueError(msg);
  }
  std::vector<NDArray*> in_ptrs, out_ptrs;
  for (NDArray& a : in) in_ptrs.push_back(&a);
  for (NDArray& a : out) out_ptrs.push_back(&a);
  make_kernel(kCpuBackend, node)->run(KernelArgs{in_ptrs, out_ptrs});
  for (int o = 0; o < node.nout(); ++o) {
    Variable& v = *node.output_ptr(o);
    if (auto err = v.type.check_value(out[o]); !err.empty())
      throw InternalError(node.op->name() + ": test value of output " + std::to_string(o) + ": " + err);
    v.test_value = std::move(out[o]);
  }
}

[[maybe_unused]] const bool installed = [] {
  set_node_hook(&compute_test_values);
  return true;
}();

}  // namespace
}  // namespace hypatia
