// Kernels of the check family (ops/checks.h), the same on every host backend: read the
// conditions or lengths on the host, raise AssertionError when one fails, and pass the value
// through as a view (no copy, no device work: the CUDA backend registers them too, with the
// conditions and lengths as host inputs).
#include <cstdint>
#include <cstring>
#include <limits>
#include <sstream>
#include <string>

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

// A 0-d integer length as the user gave it: whether it fits int64, its value and its text (a
// uint64 past int64 printed as itself, never wrapped).
struct Length {
  bool fits;
  int64_t value;
  std::string text;
};
Length length_of(const NDArray& a) {
  if (a.dtype() == DType::UInt64) {
    uint64_t u = 0;
    std::memcpy(&u, a.raw(), sizeof u);
    return {u <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max()), static_cast<int64_t>(u),
            std::to_string(u)};
  }
  const int64_t v = a.get_flat_int(0);
  return {true, v, std::to_string(v)};
}

void specify_shape_kernel(const SpecifyShape& op, const KernelArgs& args) {
  const NDArray& x = *args.in[0];
  const int nd = static_cast<int>(op.given.size());
  if (x.ndim() != nd) fail<AssertionError>("SpecifyShape: expected a value of ", nd, " dims, got ", x.describe());
  bool ok = true;
  for (int a = 0; a < nd; ++a) {
    const int k = op.input_of_axis(a);
    if (k < 0) continue;
    const Length l = length_of(*args.in[k]);
    if (!l.fits || l.value != x.shape(a)) ok = false;
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
        want << length_of(*args.in[k]).text;
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
