// The Print op's kernel (the same on every backend): prints, then passes the input through.
#include <cstdio>

#include "hypatia/backends/registry.h"
#include "hypatia/ops/print.h"

namespace hypatia {
namespace {

class PrintKernel final : public Kernel {
 public:
  explicit PrintKernel(const Apply& node) : op_(static_cast<const PrintOp&>(*node.op)) {}
  void run(const KernelArgs& args) override {
    const NDArray& x = *args.in[0];
    for (const auto& a : op_.attrs) {
      std::string v = a == "shape" ? x.shape().str() : a == "dtype" ? std::string(dtype_name(x.dtype())) : x.str();
      std::printf("%s %s = %s\n", op_.message.c_str(), a.c_str(), v.c_str());
    }
    std::fflush(stdout);
    *args.out[0] = x;
  }

 private:
  const PrintOp& op_;
};

}  // namespace

void register_print_kernels() {
  for (std::string_view b : {kReferenceBackend, kCpuBackend})
    register_kernel(b, typeid(PrintOp),
                    [](const Apply& node) -> std::unique_ptr<Kernel> { return std::make_unique<PrintKernel>(node); });
}

}  // namespace hypatia
