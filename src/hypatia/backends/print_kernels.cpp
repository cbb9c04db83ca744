// The Print op's kernel (the same on every backend): prints, then passes the input through. A
// front end's hook prints the value when it has one (Python: numpy's formatting on sys.stdout);
// else the lines go to the Output message channel.
#include <sstream>
#include <string>

#include "hypatia/backends/registry.h"
#include "hypatia/core/error.h"
#include "hypatia/core/messages.h"
#include "hypatia/ops/print.h"

namespace hypatia {
namespace {

/// One attribute of x as the C++ printer shows it (reductions over every element, in double).
std::string attr_text(const PrintOp& op, const NDArray& x, const std::string& a) {
  if (a == "__str__") return x.str();
  if (a == "shape") return x.shape().str();
  if (a == "dtype") return std::string(dtype_name(x.dtype()));
  if (a == "size") return std::to_string(x.size());
  if (a == "ndim") return std::to_string(x.ndim());
  if (a == "min" || a == "max" || a == "sum" || a == "mean") {
    if (x.size() == 0 && a != "sum") fail<ValueError>(op.name(), ": ", a, " of an empty array (", x.describe(), ")");
    double acc = a == "min" || a == "max" ? x.get_flat(0) : 0.0;
    for (int64_t i = 0; i < x.size(); ++i) {
      const double v = x.get_flat(i);
      if (a == "min")
        acc = v < acc || v != v ? v : acc;
      else if (a == "max")
        acc = v > acc || v != v ? v : acc;
      else
        acc += v;
    }
    if (a == "mean") acc /= static_cast<double>(x.size());
    std::ostringstream os;
    os.precision(17);
    os << acc;
    return os.str();
  }
  fail<ValueError>(op.name(), ": attribute '", a,
                   "' is printed from Python only (numpy formats it); C++ prints __str__, shape, dtype, min, max, sum, "
                   "mean, size and ndim");
}

class PrintKernel final : public Kernel {
 public:
  explicit PrintKernel(const Apply& node) : op_(static_cast<const PrintOp&>(*node.op)) {}
  void run(const KernelArgs& args) override {
    const NDArray& x = *args.in[0];
    if (!print_value_with_hook(op_, x)) {
      std::string text;
      for (const auto& a : op_.attrs) text += op_.message + " " + a + " = " + attr_text(op_, x, a) + "\n";
      emit_message(MessageChannel::Output, text);
    }
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
