// Kernels of the check family (ops/checks.h), the same on every host backend: read the
// conditions or lengths on the host, raise AssertionError when one fails, and pass the value
// through as a view (no copy, no device work: the CUDA backend registers them too, with the
// conditions and lengths as host inputs).
#include <sstream>

#include "hypatia/backends/registry.h"
#include "hypatia/core/error.h"
#include "hypatia/ops/checks.h"

namespace hypatia {
namespace {

void assert_kernel(const Assert& op, const KernelArgs& args) {
  const size_t n = args.in.size() - 1;
  for (size_t i = 0; i < n; ++i) {
    const NDArray& c = *args.in[i + 1];
    // NaN counts as true, as numpy's bool(nan) does.
    if (c.get_flat(0) == 0.0)
      fail<AssertionError>(op.msg, " (Assert: condition ", i, n > 1 ? " of " + std::to_string(n) : std::string(),
                           " is false; the value checked: ", args.in[0]->describe(), ")");
  }
  *args.out[0] = *args.in[0];
}

void specify_shape_kernel(const SpecifyShape& op, const KernelArgs& args) {
  const NDArray& x = *args.in[0];
  const int nd = static_cast<int>(op.given.size());
  if (x.ndim() != nd) fail<AssertionError>("SpecifyShape: expected a value of ", nd, " dims, got ", x.describe());
  bool ok = true;
  for (int a = 0; a < nd; ++a) {
    const int k = op.input_of_axis(a);
    if (k >= 0 && args.in[k]->get_flat_int(0) != x.shape(a)) ok = false;
  }
  if (!ok) {
    std::ostringstream want;
    want << "(";
    for (int a = 0; a < nd; ++a) {
      const int k = op.input_of_axis(a);
      if (a) want << ", ";
      if (k < 0)
        want << "?";
      else
        want << args.in[k]->get_flat_int(0);
    }
    want << (nd == 1 ? ",)" : ")");
    fail<AssertionError>("SpecifyShape: expected shape ", want.str(), ", got shape ", x.shape().str(), " (",
                         x.describe(), ")");
  }
  *args.out[0] = x;
}

}  // namespace

void register_check_kernels() {
  register_simple_kernel<Assert>(kReferenceBackend, assert_kernel);
  register_simple_kernel<SpecifyShape>(kReferenceBackend, specify_shape_kernel);
}

}  // namespace hypatia
