// MRG31k3p on the CUDA backend (ops/random.h: MRGUniform): a thread per stream, drawing elements
// s, s + n_streams, ... of the sample as the CPU kernels do, with the CPU's own step and
// conversion (backends/mrg_generate.h's shared part, compiled by NVRTC: cuda_codegen.h
// mrg_prefix), so a state gives the same bits on either device. The state is updated in place
// (the op's inplace form) or in a copy.
#include <string>

#include "hypatia/backends/cuda/cuda_api.h"
#include "hypatia/backends/cuda/cuda_kernel_util.h"
#include "hypatia/core/error.h"
#include "hypatia/ops/random.h"

namespace hypatia::cuda {

std::string mrg_source(DType dt) {
  const std::string T = cuda_type(dt);
  std::string s = mrg_prefix();
  s += "struct MrgArgs { long long streams, n; unsigned long long state, out; };\n";
  s += grid_stride_head("hyp_mrg", "MrgArgs", "a.streams", "s");
  s += "    int* p = (int*)a.state + s * 6;\n";
  s += "    int st[6];\n    for (int k = 0; k < 6; ++k) st[k] = p[k];\n";
  s += "    " + T + "* out = (" + T + "*)a.out;\n";
  s += "    for (long long i = s; i < a.n; i += a.streams) out[i] = hypatia::mrg::to_unit<" + T +
       ">(hypatia::mrg::next(st));\n";
  s += "    for (int k = 0; k < 6; ++k) p[k] = st[k];\n  }\n}\n";
  return s;
}

namespace {

class MrgKernel final : public Kernel {
 public:
  explicit MrgKernel(const Apply& node) : op_(static_cast<const MRGUniform&>(*node.op)) {
    kernel_ = get_kernel(mrg_source(op_.dtype), "hyp_mrg");
  }
  void run(const KernelArgs& a) override {
    const NDArray& rstate = *a.in[0];
    op_.check_inputs(a.in);  // the state's shape, the size's values (on the host)
    Shape shape;
    for (int i = 0; i < op_.ndim; ++i) shape.push_back(a.in[1]->get_flat_int(i));
    NDArray& state = op_.inplace
                         ? prepare_device_inplace_output(*a.out[0], rstate, rstate.shape(), DType::Int32, op_, 0)
                         : prepare_device_output(*a.out[0], rstate.shape(), DType::Int32);
    if (!op_.inplace) copy_into(state, rstate);
    NDArray work = state.is_c_contiguous() ? state : device_copy(state);
    NDArray& sample = prepare_device_output(*a.out[1], shape, op_.dtype);
    const int64_t streams = rstate.shape(0), n = sample.size();
    if (n > 0) {
      std::vector<int64_t> args = {streams, n, static_cast<int64_t>(reinterpret_cast<uintptr_t>(work.raw())),
                                   static_cast<int64_t>(reinterpret_cast<uintptr_t>(sample.raw()))};
      launch(kernel_, grid_for(streams), args, "CUDA mrg_uniform");
    }
    if (work.raw() != state.raw()) copy_into(state, work);
  }

 private:
  const MRGUniform& op_;
  cudaKernel_t kernel_ = nullptr;
};

}  // namespace

void register_cuda_random_kernels() {
  register_kernel(
      kCudaBackend, typeid(MRGUniform),
      [](const Apply& node) -> std::unique_ptr<Kernel> { return std::make_unique<MrgKernel>(node); },
      KernelTraits{.accepts =
                       [](const Apply& node) {
                         const DType dt = static_cast<const MRGUniform&>(*node.op).dtype;
                         return dt == DType::Float32 || dt == DType::Float64;
                       },
                   .host_inputs = {1},
                   .recordable = true});
}

}  // namespace hypatia::cuda
