// CUDA kernels of the cross-entropy of a softmax with integer labels (ops/nnet.h:
// CrossentropySoftmax1HotWithBias and its gradient CrossentropySoftmax1HotWithBiasDx): a
// classifier's loss and its gradient in one kernel each, where the unfused graph took a bias add,
// log_softmax, the row indices, the label check, the gather, and then two allocations, the
// scatter-add, a row sum and the softmax gradient. The labels are checked on the device
// (KernelTraits::device_checks), with the CPU's words; the shapes on the host.
#include <algorithm>
#include <string>

#include "hypatia/backends/backend.h"
#include "hypatia/backends/cuda/cuda_api.h"
#include "hypatia/backends/cuda/cuda_kernel_util.h"
#include "hypatia/backends/cuda/cuda_memory.h"
#include "hypatia/backends/reference/nnet_common.h"
#include "hypatia/core/error.h"
#include "hypatia/ops/nnet.h"

namespace hypatia::cuda {

std::string xent_softmax_source(DType dt, DType label_dt) {
  const std::string T = cuda_type(dt), I = cuda_type(label_dt);
  // (hstd: the NVRTC shim's limits and math, of the element type; the host harness's std.)
  const std::string EXP = "hstd::exp", LOG1P = "hstd::log1p";
  std::string s =
      "struct XsArgs { long long rows, cols, xs0, xs1, bs, ls; unsigned long long x, b, labels, nll, sm, err; };\n";
  s += kCheckFailed;
  s += "extern \"C\" __global__ void hyp_xent_softmax(const XsArgs a) {\n";
  s += "  __shared__ " + T + " sv[256];\n  __shared__ long long si[256];\n  __shared__ int sbad[256];\n";
  s += "  const int t = threadIdx.x;\n";
  s += "  for (long long r = blockIdx.x; r < a.rows; r += gridDim.x) {\n";
  s += "    const char* row = (const char*)a.x + r * a.xs0;\n";
  // z_j = x[r, j] + b[j], rounded to T as the add it replaces.
  s += "#define HYP_Z(j) ((" + T + ")(*(const " + T + "*)(row + (j) * a.xs1) + *(const " + T +
       "*)((const char*)a.b + (j) * a.bs)))\n";
  s += block_row_stats(dt, "HYP_Z", EXP);
  s += "    " + T + "* sm = (" + T + "*)a.sm + r * a.cols;\n";
  s += "    for (long long j = t; j < a.cols; j += blockDim.x)\n";
  s += "      sm[j] = nan_row ? hstd::numeric_limits<" + T + ">::quiet_NaN() : " + EXP + "(HYP_Z(j) - m) / (" + T +
       "(1) + rest);\n";
  // The label: checked (a bad row's nll is left 0), then nll = log1p(rest) - (z[label] - m).
  s += "    if (t == 0) {\n";
  s += "      const " + I + " raw = *(const " + I + "*)((const char*)a.labels + r * a.ls);\n";
  s += read_index(label_dt);
  s += "      " + T + "* nll = (" + T + "*)a.nll;\n";
  s += "      if (v < 0 || v >= a.cols) {\n        hyp_check_failed(a.err, r, (long long)raw, a.cols);\n        nll[r] "
       "= (" +
       T + ")0;\n";
  s += "      } else {\n        nll[r] = nan_row ? hstd::numeric_limits<" + T + ">::quiet_NaN() : " + LOG1P +
       "(rest) - (HYP_Z(v) - m);\n      }\n    }\n";
  s += "#undef HYP_Z\n";
  s += "    __syncthreads();\n  }\n}\n";
  return s;
}

std::string xent_softmax_dx_source(DType dt, DType label_dt) {
  const std::string T = cuda_type(dt), I = cuda_type(label_dt);
  std::string s = "struct XdArgs { long long n, k, ds, ss0, ss1, ls; unsigned long long dy, sm, labels, out, err; };\n";
  s += kCheckFailed;
  s += grid_stride_head("hyp_xent_softmax_dx", "XdArgs", "a.n * a.k");
  s += "    const long long row = t / a.k, j = t % a.k;\n";
  s += "    const " + I + " raw = *(const " + I + "*)((const char*)a.labels + row * a.ls);\n";
  s += read_index(label_dt);
  s += "    if (v < 0 || v >= a.k) {\n      if (j == 0) hyp_check_failed(a.err, row, (long long)raw, a.k);\n      ((" +
       T + "*)a.out)[t] = (" + T + ")0;\n      continue;\n    }\n";
  s += "    const " + T + " d = *(const " + T + "*)((const char*)a.dy + row * a.ds);\n";
  s += "    const " + T + " p = *(const " + T + "*)((const char*)a.sm + row * a.ss0 + j * a.ss1);\n";
  s += "    ((" + T + "*)a.out)[t] = d * (j == v ? (" + T + ")(p - (" + T + ")1) : p);\n  }\n}\n";
  return s;
}

namespace {

int64_t ptr(const void* p) { return static_cast<int64_t>(reinterpret_cast<uintptr_t>(p)); }

class XentSoftmaxKernel final : public LabelCheckedKernel {
 public:
  explicit XentSoftmaxKernel(const Apply& node)
      : LabelCheckedKernel(node,
                           std_prefix() + xent_softmax_source(node.inputs[0]->type.dtype, node.inputs[2]->type.dtype),
                           "hyp_xent_softmax"),
        one_for_all_(node.inputs[1]->type.broadcastable[0]) {}
  void run(const KernelArgs& a) override {
    const NDArray &x = *a.in[0], &b = *a.in[1], &labels = *a.in[2];
    nnet_detail::check_xent_softmax_shapes(op_.name().c_str(), x, b, labels, one_for_all_);
    const int64_t rows = x.shape(0), cols = x.shape(1);
    NDArray& nll = prepare_device_output(*a.out[0], Shape{rows}, x.dtype());
    NDArray& sm = prepare_device_output(*a.out[1], x.shape(), x.dtype());
    if (rows == 0) return;
    // (No classes: every label is out of range; the kernel says so for the first row.)
    std::vector<int64_t> args = {rows,
                                 cols,
                                 x.strides()[0],
                                 x.strides()[1],
                                 b.shape(0) == 1 ? 0 : b.strides()[0],
                                 labels.strides()[0],
                                 ptr(x.raw()),
                                 ptr(b.raw()),
                                 ptr(labels.raw()),
                                 ptr(nll.raw()),
                                 ptr(sm.raw()),
                                 static_cast<int64_t>(check_.device())};
    launch(static_cast<int>(std::min<int64_t>(rows, 65535)), args);
  }

 private:
  bool one_for_all_;  // (b, or dy, broadcastable: one element for all)
};

class XentSoftmaxDxKernel final : public LabelCheckedKernel {
 public:
  explicit XentSoftmaxDxKernel(const Apply& node)
      : LabelCheckedKernel(node, xent_softmax_dx_source(node.inputs[1]->type.dtype, node.inputs[2]->type.dtype),
                           "hyp_xent_softmax_dx"),
        one_for_all_(node.inputs[0]->type.broadcastable[0]) {}
  void run(const KernelArgs& a) override {
    const NDArray &dy = *a.in[0], &sm = *a.in[1], &labels = *a.in[2];
    nnet_detail::check_xent_dx_shapes(op_.name().c_str(), dy, sm, labels, one_for_all_);
    NDArray& out = prepare_device_output(*a.out[0], sm.shape(), sm.dtype());
    if (sm.shape(0) == 0) return;
    if (out.size() == 0) {  // (no classes: every label is out of range)
      nnet_detail::label_out_of_range(op_.name().c_str(), nnet_detail::label_at(labels.to_device(Device::host()), 0),
                                      labels.dtype(), 0, 0);
    }
    std::vector<int64_t> args = {sm.shape(0),
                                 sm.shape(1),
                                 dy.shape(0) == 1 ? 0 : dy.strides()[0],
                                 sm.strides()[0],
                                 sm.strides()[1],
                                 labels.strides()[0],
                                 ptr(dy.raw()),
                                 ptr(sm.raw()),
                                 ptr(labels.raw()),
                                 ptr(out.raw()),
                                 static_cast<int64_t>(check_.device())};
    launch(grid_for(out.size()), args);
  }

 private:
  bool one_for_all_;  // (b, or dy, broadcastable: one element for all)
};

bool f32_or_f64(DType dt) { return dt == DType::Float32 || dt == DType::Float64; }

}  // namespace

void register_cuda_xent_kernels() {
  register_kernel(kCudaBackend, typeid(CrossentropySoftmax1HotWithBias), kernel_factory<XentSoftmaxKernel>(),
                  KernelTraits{.accepts =
                                   [](const Apply& node) {
                                     return f32_or_f64(node.inputs[0]->type.dtype) &&
                                            is_integer(node.inputs[2]->type.dtype);
                                   },
                               .recordable = true,
                               .device_checks = true});
  register_kernel(kCudaBackend, typeid(CrossentropySoftmax1HotWithBiasDx), kernel_factory<XentSoftmaxDxKernel>(),
                  KernelTraits{.accepts =
                                   [](const Apply& node) {
                                     return f32_or_f64(node.inputs[1]->type.dtype) &&
                                            is_integer(node.inputs[2]->type.dtype);
                                   },
                               .recordable = true,
                               .device_checks = true});
}

}  // namespace hypatia::cuda
