// Kernels of the gradient-machinery ops: the identities DisconnectedGrad and GradClip (views of
// their input) and MapIndex (runs its body, a sub-program, once per index and stacks the results).
#include <cstring>

#include "hypatia/backends/registry.h"
#include "hypatia/core/error.h"
#include "hypatia/grad/grad_ops.h"

namespace hypatia {
namespace {

template <class OpT>
void identity_view(const OpT&, const KernelArgs& a) {
  *a.out[0] = *a.in[0];
}

/// Runs its node's body (a sub-program compiled with the function) once per index. The index
/// is a 0-d int64 array written in place before each run, and the body's output buffer is
/// reused from run to run: a body of fixed shape allocates nothing per step.
class MapIndexKernel final : public Kernel {
 public:
  explicit MapIndexKernel(const MapIndexOp& op) : op_(op) {
    args_.resize(1 + op.captured.size());
    out_.resize(1);
  }
  void bind_inner(std::vector<std::shared_ptr<InnerProgram>> programs) override {
    if (programs.size() != 1) throw InternalError("MapIndex: expected one inner program");
    body_ = std::move(programs[0]);
  }
  void run(const KernelArgs& a) override {
    if (!body_) fail<NotImplementedError>("MapIndex: its body is compiled only within a function");
    const int64_t n = a.in[0]->get_flat_int(0);
    if (n < 0) fail<ValueError>("MapIndex: negative count ", n);
    for (size_t c = 1; c < a.in.size(); ++c) args_[c] = *a.in[c];
    NDArray* result = nullptr;
    for (int64_t i = 0; i < n; ++i) {
      // A fresh index array when the body kept a reference to the last one (an output that is
      // the index itself), else the same one rewritten.
      if (!index_.valid() || !index_.unique()) index_ = NDArray::scalar_int64(0);
      index_.data<int64_t>()[0] = i;
      args_[0] = index_;
      body_->run(args_, out_);
      args_[0] = NDArray();
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
    for (size_t c = 1; c < args_.size(); ++c) args_[c] = NDArray();
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
  std::shared_ptr<InnerProgram> body_;
  NDArray index_;
  std::vector<NDArray> args_, out_;
};

}  // namespace

void register_grad_kernels() {
  for (std::string_view b : {kReferenceBackend, kCpuBackend}) {
    register_simple_kernel<DisconnectedGradOp>(b, identity_view<DisconnectedGradOp>);
    register_simple_kernel<GradClipOp>(b, identity_view<GradClipOp>);
    register_simple_kernel<GradScaleOp>(b, identity_view<GradScaleOp>);
    register_kernel(b, typeid(MapIndexOp), [](const Apply& node) -> std::unique_ptr<Kernel> {
      return std::make_unique<MapIndexKernel>(static_cast<const MapIndexOp&>(*node.op));
    });
  }
}

}  // namespace hypatia
