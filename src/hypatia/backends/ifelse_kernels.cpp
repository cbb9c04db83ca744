// The IfElse kernel: lazy (Kernel::run_lazy). It reads the condition, asks for the taken branch's
// values only, and makes each output a view of one. A reference kernel; the CPU backend runs it
// through its fallback (there is nothing to vectorize), a device backend as its own
// (ifelse_kernels.h).
#include "hypatia/backends/ifelse_kernels.h"

#include <string>

#include "hypatia/core/error.h"
#include "hypatia/ops/ifelse.h"

namespace hypatia {
namespace {

class IfElseKernel final : public Kernel {
 public:
  explicit IfElseKernel(const IfElse& op) : n_(op.n_outs), name_(op.name()) {}

  void run(const KernelArgs&) override { throw InternalError(name_ + " runs lazily (run_lazy)"); }

  std::vector<int> run_lazy(const KernelArgs& a, std::span<const bool> ready) override {
    const NDArray& c = *a.in[0];
    if (c.size() != 1) fail<ValueError>(name_, ": the condition must hold one value, got ", c.describe());
    const double v = c.get_flat(0);
    const int first = v != 0 ? 1 : 1 + n_;  // NaN != 0: true, as bool(nan) in numpy
    std::vector<int> need;
    for (int i = 0; i < n_; ++i)
      if (!ready[first + i]) need.push_back(first + i);
    if (!need.empty()) return need;
    for (int i = 0; i < n_; ++i) *a.out[i] = *a.in[first + i];
    return {};
  }

 private:
  int n_;
  std::string name_;
};

}  // namespace

std::unique_ptr<Kernel> make_ifelse_kernel(const IfElse& op) { return std::make_unique<IfElseKernel>(op); }

void register_ifelse_kernels() {
  register_kernel(kReferenceBackend, typeid(IfElse),
                  [](const Apply& node) { return make_ifelse_kernel(static_cast<const IfElse&>(*node.op)); });
}

}  // namespace hypatia
