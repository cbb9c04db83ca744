// Kernels of the gradient-machinery ops: the identities DisconnectedGrad and GradClip (views of
// their input) and MapIndex (runs a compiled inner function once per index and stacks the results).
#include <cstring>

#include "hypatia/backends/registry.h"
#include "hypatia/compile/function.h"
#include "hypatia/core/error.h"
#include "hypatia/grad/grad_ops.h"

namespace hypatia {
namespace {

template <class OpT>
void identity_view(const OpT&, const KernelArgs& a) {
  *a.out[0] = *a.in[0];
}

class MapIndexKernel final : public Kernel {
 public:
  explicit MapIndexKernel(const MapIndexOp& op) : op_(op) {
    std::vector<In> ins{In(op.index)};
    for (const auto& c : op.captured) ins.emplace_back(c);
    FunctionOptions fo;
    fo.on_unused_input = "ignore";
    fo.name = "MapIndex body";
    fn_ = std::make_unique<Function>(function(ins, {Out(op.body)}, fo));
    args_.resize(1 + op.captured.size());
    out_.resize(1);
  }
  void run(const KernelArgs& a) override {
    int64_t n = a.in[0]->get_flat_int(0);
    if (n < 0) fail<ValueError>("MapIndex: negative count ", n);
    for (size_t c = 1; c < a.in.size(); ++c) args_[c] = *a.in[c];
    NDArray* result = nullptr;
    for (int64_t i = 0; i < n; ++i) {
      args_[0] = NDArray::scalar(static_cast<double>(i), DType::Int64);
      fn_->call(args_, out_);
      const NDArray& row = out_[0];
      if (!result) {
        Shape s = row.shape();
        s.insert(0, n);
        result = &prepare_output(*a.out[0], s, op_.body->dtype());
      } else if (!(row.shape() == Shape(result->shape().begin() + 1, result->shape().end()))) {
        fail<ValueError>("MapIndex: step ", i, " produced shape ", row.shape().str(), "; earlier steps produced ",
                         Shape(result->shape().begin() + 1, result->shape().end()).str());
      }
      result->select(0, i).assign(row);
    }
    if (!result) {
      // n == 0: the row shape is unknown without running the body; use the type's ndim with zeros.
      Shape s;
      s.push_back(0);
      for (int d = 0; d < op_.body->ndim(); ++d) s.push_back(op_.body->type.broadcastable[d] ? 1 : 0);
      prepare_output(*a.out[0], s, op_.body->dtype());
    }
  }

 private:
  const MapIndexOp& op_;
  std::unique_ptr<Function> fn_;
  std::vector<NDArray> args_, out_;
};

}  // namespace

void register_grad_kernels() {
  for (std::string_view b : {kReferenceBackend, kCpuBackend}) {
    register_simple_kernel<DisconnectedGradOp>(b, identity_view<DisconnectedGradOp>);
    register_simple_kernel<GradClipOp>(b, identity_view<GradClipOp>);
    register_kernel(b, typeid(MapIndexOp), [](const Apply& node) -> std::unique_ptr<Kernel> {
      return std::make_unique<MapIndexKernel>(static_cast<const MapIndexOp&>(*node.op));
    });
  }
}

}  // namespace hypatia
