// 2-d convolutions on the CUDA backend through cuDNN (ops/conv.h): Conv2d, Conv2dGradInputs and
// Conv2dGradWeights, float32 and float64, every border mode with symmetric padding, strides,
// dilations and groups, flipped (a convolution) or not (a correlation). libcudnn is opened at
// first use (dlopen, as cuBLAS); where it cannot be, or for what cuDNN does not take (asymmetric
// padding, other dtypes), the nodes run on the CPU backend with transfers (the fallback).
//
// Products in float32 are computed in float32 (CUDNN_FMA_MATH: no TF32), as cuBLAS's are here.
// The algorithm is cuDNN's first heuristic choice (cudnnGet*Algorithm_v7) that computes in that
// math and whose workspace can be allocated, chosen once per shape and kept by the kernel. Inputs
// are made C-contiguous first (cuDNN's packed NCHW).
#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <tuple>

#include "hypatia/backends/cuda/cuda_api.h"
#include "hypatia/backends/cuda/cuda_kernel_util.h"
#include "hypatia/core/error.h"
#include "hypatia/ops/conv.h"

#if __has_include(<cudnn.h>)
#include <cudnn.h>
#include <dlfcn.h>

namespace hypatia::cuda {
namespace {

/// cuDNN's functions, from libcudnn, and its handles.
struct Cudnn {
#define HYP_DNN_LIST(X)                            \
  X(cudnnCreate)                                   \
  X(cudnnSetStream)                                \
  X(cudnnGetErrorString)                           \
  X(cudnnCreateTensorDescriptor)                   \
  X(cudnnSetTensor4dDescriptorEx)                  \
  X(cudnnDestroyTensorDescriptor)                  \
  X(cudnnCreateFilterDescriptor)                   \
  X(cudnnSetFilter4dDescriptor)                    \
  X(cudnnDestroyFilterDescriptor)                  \
  X(cudnnCreateConvolutionDescriptor)              \
  X(cudnnSetConvolution2dDescriptor)               \
  X(cudnnSetConvolutionGroupCount)                 \
  X(cudnnSetConvolutionMathType)                   \
  X(cudnnDestroyConvolutionDescriptor)             \
  X(cudnnGetConvolutionForwardAlgorithm_v7)        \
  X(cudnnConvolutionForward)                       \
  X(cudnnGetConvolutionBackwardDataAlgorithm_v7)   \
  X(cudnnConvolutionBackwardData)                  \
  X(cudnnGetConvolutionBackwardFilterAlgorithm_v7) \
  X(cudnnConvolutionBackwardFilter)
#define HYP_DNN_FN(name) decltype(&::name) name = nullptr;
  HYP_DNN_LIST(HYP_DNN_FN)
#undef HYP_DNN_FN
  std::string why;  // empty when loaded
};

const Cudnn& dnn() {
  static const Cudnn d = [] {
    Cudnn x;
    void* lib = nullptr;
    for (const char* n : {"libcudnn.so.9", "libcudnn.so"})
      if ((lib = dlopen(n, RTLD_NOW | RTLD_LOCAL))) break;
    if (!lib) {
      x.why = "libcudnn.so.9 could not be loaded (put cuDNN's lib folder on LD_LIBRARY_PATH)";
      return x;
    }
#define HYP_DNN_BIND(name)                                         \
  x.name = reinterpret_cast<decltype(&::name)>(dlsym(lib, #name)); \
  if (!x.name && x.why.empty()) x.why = "libcudnn has no " #name;
    HYP_DNN_LIST(HYP_DNN_BIND)
#undef HYP_DNN_BIND
    return x;
  }();
  return d;
}

void check_dnn(cudnnStatus_t s, const char* what) {
  if (s == CUDNN_STATUS_SUCCESS) [[likely]]
    return;
  if (s == CUDNN_STATUS_ALLOC_FAILED) fail<MemoryError>("cuDNN: ", what, " failed: out of device memory");
  fail<Error>("cuDNN: ", what, " failed: ", dnn().cudnnGetErrorString(s));
}

/// The handle bound to stream(): one for the kernels' stream (its calls serialized: a handle is
/// not for concurrent use) and one for the recording stream (one thread records at a time).
struct DnnHandle {
  cudnnHandle_t h;
  std::unique_lock<std::mutex> lock;
};
std::atomic<bool> g_main_made{false};

cudnnHandle_t make_handle(cudaStream_t s) {
  cudnnHandle_t h = nullptr;
  check_dnn(dnn().cudnnCreate(&h), "cudnnCreate");
  check_dnn(dnn().cudnnSetStream(h, s), "cudnnSetStream");
  return h;
}

cudnnHandle_t recording_handle() {
  static const cudnnHandle_t rec = make_handle(recording_stream());
  return rec;
}

DnnHandle handle() {
  static std::mutex mu;
  if (recording()) return {recording_handle(), {}};
  static const cudnnHandle_t main = [] {
    cudnnHandle_t h = make_handle(stream());
    g_main_made = true;
    return h;
  }();
  return {main, std::unique_lock<std::mutex>(mu)};
}

cudnnDataType_t dnn_type(DType dt) { return dt == DType::Float64 ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT; }

int as_int(int64_t v, const char* what) {
  if (v > INT32_MAX) fail<NotImplementedError>("cuDNN convolution: ", what, " ", v, " does not fit cuDNN's int sizes");
  return static_cast<int>(v);
}

/// The descriptors of one convolution: image x (n, c, h, w), filters (o, cg, kh, kw), output y.
class Descriptors {
 public:
  Descriptors(const Conv2dParams& p, const Conv2dShape& s, DType dt) {
    const Cudnn& d = dnn();
    check_dnn(d.cudnnCreateTensorDescriptor(&x), "cudnnCreateTensorDescriptor");
    check_dnn(d.cudnnCreateTensorDescriptor(&y), "cudnnCreateTensorDescriptor");
    check_dnn(d.cudnnCreateFilterDescriptor(&w), "cudnnCreateFilterDescriptor");
    check_dnn(d.cudnnCreateConvolutionDescriptor(&conv), "cudnnCreateConvolutionDescriptor");
    const cudnnDataType_t t = dnn_type(dt);
    auto packed = [&](cudnnTensorDescriptor_t desc, int64_t n, int64_t c, int64_t h, int64_t wd) {
      check_dnn(d.cudnnSetTensor4dDescriptorEx(desc, t, as_int(n, "batch"), as_int(c, "channels"), as_int(h, "rows"),
                                               as_int(wd, "columns"), as_int(c * h * wd, "image size"),
                                               as_int(h * wd, "channel size"), as_int(wd, "row size"), 1),
                "cudnnSetTensor4dDescriptorEx");
    };
    packed(x, s.n, s.c, s.h, s.w);
    packed(y, s.n, s.o, s.ho, s.wo);
    check_dnn(d.cudnnSetFilter4dDescriptor(w, t, CUDNN_TENSOR_NCHW, as_int(s.o, "filters"), as_int(s.cg, "channels"),
                                           as_int(s.kh, "filter rows"), as_int(s.kw, "filter columns")),
              "cudnnSetFilter4dDescriptor");
    check_dnn(d.cudnnSetConvolution2dDescriptor(conv, as_int(s.ph, "padding"), as_int(s.pw, "padding"),
                                                as_int(p.stride_h, "stride"), as_int(p.stride_w, "stride"),
                                                as_int(p.dil_h, "dilation"), as_int(p.dil_w, "dilation"),
                                                p.flip ? CUDNN_CONVOLUTION : CUDNN_CROSS_CORRELATION, t),
              "cudnnSetConvolution2dDescriptor");
    check_dnn(d.cudnnSetConvolutionGroupCount(conv, as_int(s.g, "groups")), "cudnnSetConvolutionGroupCount");
    check_dnn(d.cudnnSetConvolutionMathType(conv, CUDNN_FMA_MATH), "cudnnSetConvolutionMathType");
  }
  ~Descriptors() {
    const Cudnn& d = dnn();
    d.cudnnDestroyTensorDescriptor(x);
    d.cudnnDestroyTensorDescriptor(y);
    d.cudnnDestroyFilterDescriptor(w);
    d.cudnnDestroyConvolutionDescriptor(conv);
  }
  Descriptors(const Descriptors&) = delete;
  Descriptors& operator=(const Descriptors&) = delete;

  cudnnTensorDescriptor_t x = nullptr, y = nullptr;
  cudnnFilterDescriptor_t w = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;
};

/// The first of cuDNN's heuristic choices that computes in FMA math: (algorithm, workspace bytes).
template <class Perf>
std::pair<int, size_t> pick(const Perf* perf, int n, const char* what) {
  for (int i = 0; i < n; ++i)
    if (perf[i].status == CUDNN_STATUS_SUCCESS && perf[i].mathType != CUDNN_TENSOR_OP_MATH &&
        perf[i].mathType != CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION)
      return {static_cast<int>(perf[i].algo), perf[i].memory};
  fail<NotImplementedError>("cuDNN: no ", what, " algorithm for this convolution in float arithmetic");
}

enum class Which { Forward, Data, Filter };

/// One node's convolution: its descriptors and algorithm per shape (kept), and the call.
class ConvKernel final : public Kernel {
 public:
  ConvKernel(const Apply& node, Which which) : op_(*node.op), which_(which) {
    if (which == Which::Forward) p_ = static_cast<const Conv2d&>(*node.op).p;
    if (which == Which::Data) p_ = static_cast<const Conv2dGradInputs&>(*node.op).p;
    if (which == Which::Filter) p_ = static_cast<const Conv2dGradWeights&>(*node.op).p;
  }

  void run(const KernelArgs& a) override {
    const NDArray& in0 = *a.in[0];
    const NDArray& in1 = *a.in[1];
    const std::string who = op_.name();
    Conv2dShape s{};
    if (which_ == Which::Forward)
      s = conv2d_shape(who.c_str(), p_, in0.shape(), in1.shape());
    else if (which_ == Which::Data)
      s = conv2d_grad_inputs_shape(who.c_str(), p_, in0.shape(), in1.shape(), host_int(*a.in[2]), host_int(*a.in[3]));
    else
      s = conv2d_grad_weights_shape(who.c_str(), p_, in0.shape(), in1.shape(), host_int(*a.in[2]), host_int(*a.in[3]));
    if (s.ph != s.ph_end || s.pw != s.pw_end)
      fail<InternalError>(who, ": cuDNN takes symmetric padding only (the node should have run on the CPU)");
    const DType dt = in0.dtype();
    const Shape out_shape = which_ == Which::Forward ? Shape{s.n, s.o, s.ho, s.wo}
                            : which_ == Which::Data  ? Shape{s.n, s.c, s.h, s.w}
                                                     : Shape{s.o, s.cg, s.kh, s.kw};
    NDArray& out = prepare_device_output(*a.out[0], out_shape, dt);
    if (out.size() == 0) return;
    const NDArray A = in0.is_c_contiguous() ? in0 : device_copy(in0);
    const NDArray B = in1.is_c_contiguous() ? in1 : device_copy(in1);
    if (A.size() == 0 || B.size() == 0) {  // an empty sum: zeros
      copy_into(out, NDArray::zeros({}, dt).to_device(Device::cuda(0)).broadcast_to(out_shape));
      return;
    }
    Plan& plan = plan_for(s, dt);
    NDArray ws;
    if (plan.workspace > 0) ws = NDArray::empty({static_cast<int64_t>(plan.workspace)}, DType::UInt8, Device::cuda(0));
    const double one_d = 1, zero_d = 0;
    const float one_f = 1, zero_f = 0;
    const void* alpha = dt == DType::Float64 ? static_cast<const void*>(&one_d) : &one_f;
    const void* beta = dt == DType::Float64 ? static_cast<const void*>(&zero_d) : &zero_f;
    const Descriptors& d = *plan.desc;
    void* wsp = plan.workspace > 0 ? ws.raw() : nullptr;
    DnnHandle h = handle();
    if (which_ == Which::Forward)
      check_dnn(dnn().cudnnConvolutionForward(h.h, alpha, d.x, A.raw(), d.w, B.raw(), d.conv,
                                              static_cast<cudnnConvolutionFwdAlgo_t>(plan.algo), wsp, plan.workspace,
                                              beta, d.y, out.raw()),
                "cudnnConvolutionForward");
    else if (which_ == Which::Data)
      check_dnn(dnn().cudnnConvolutionBackwardData(h.h, alpha, d.w, A.raw(), d.y, B.raw(), d.conv,
                                                   static_cast<cudnnConvolutionBwdDataAlgo_t>(plan.algo), wsp,
                                                   plan.workspace, beta, d.x, out.raw()),
                "cudnnConvolutionBackwardData");
    else
      check_dnn(dnn().cudnnConvolutionBackwardFilter(h.h, alpha, d.x, A.raw(), d.y, B.raw(), d.conv,
                                                     static_cast<cudnnConvolutionBwdFilterAlgo_t>(plan.algo), wsp,
                                                     plan.workspace, beta, d.w, out.raw()),
                "cudnnConvolutionBackwardFilter");
    after_launch("cuDNN convolution");
  }

 private:
  struct Plan {
    std::unique_ptr<Descriptors> desc;
    int algo = 0;
    size_t workspace = 0;
  };

  static int64_t host_int(const NDArray& v) {
    v.require_host("cuDNN convolution's size input");
    return v.get_flat_int(0);
  }

  Plan& plan_for(const Conv2dShape& s, DType dt) {
    const auto key = std::make_tuple(s.n, s.c, s.h, s.w, s.o, s.kh, s.kw, s.ph, s.pw, static_cast<int>(dt));
    auto it = plans_.find(key);
    if (it != plans_.end()) return it->second;
    Plan plan;
    plan.desc = std::make_unique<Descriptors>(p_, s, dt);
    const Descriptors& d = *plan.desc;
    DnnHandle h = handle();
    int n = 0;
    if (which_ == Which::Forward) {
      cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
      check_dnn(dnn().cudnnGetConvolutionForwardAlgorithm_v7(h.h, d.x, d.w, d.conv, d.y,
                                                             CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &n, perf),
                "cudnnGetConvolutionForwardAlgorithm_v7");
      std::tie(plan.algo, plan.workspace) = pick(perf, n, "forward");
    } else if (which_ == Which::Data) {
      cudnnConvolutionBwdDataAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
      check_dnn(dnn().cudnnGetConvolutionBackwardDataAlgorithm_v7(h.h, d.w, d.y, d.conv, d.x,
                                                                  CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &n, perf),
                "cudnnGetConvolutionBackwardDataAlgorithm_v7");
      std::tie(plan.algo, plan.workspace) = pick(perf, n, "backward data");
    } else {
      cudnnConvolutionBwdFilterAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
      check_dnn(dnn().cudnnGetConvolutionBackwardFilterAlgorithm_v7(h.h, d.x, d.y, d.conv, d.w,
                                                                    CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &n, perf),
                "cudnnGetConvolutionBackwardFilterAlgorithm_v7");
      std::tie(plan.algo, plan.workspace) = pick(perf, n, "backward filter");
    }
    return plans_.emplace(key, std::move(plan)).first->second;
  }

  const Op& op_;
  Which which_;
  Conv2dParams p_;
  std::map<std::tuple<int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int>, Plan>
      plans_;
};

/// Float32 or float64 operands of one dtype, padding cuDNN can take (symmetric), and libcudnn
/// loadable: otherwise the node runs on the CPU.
bool conv_accepts(const Apply& node, const Conv2dParams& p) {
  const DType dt = node.inputs[0]->type.dtype;
  if ((dt != DType::Float32 && dt != DType::Float64) || node.inputs[1]->type.dtype != dt) return false;
  if (p.border == "pad" && (p.end_h() != p.pad_h || p.end_w() != p.pad_w)) return false;
  return dnn().why.empty();
}

}  // namespace

bool cudnn_loadable(std::string* why) {
  if (why) *why = dnn().why;
  return dnn().why.empty();
}

void prepare_cudnn_recording() {
  if (g_main_made) recording_handle();
}

void register_cuda_conv_kernels() {
  auto add = [](std::type_index op, Which which, auto params_of, std::vector<int> host) {
    register_kernel(
        kCudaBackend, op,
        [which](const Apply& node) -> std::unique_ptr<Kernel> { return std::make_unique<ConvKernel>(node, which); },
        KernelTraits{.accepts = [params_of](const Apply& node) { return conv_accepts(node, params_of(node)); },
                     .host_inputs = std::move(host),
                     .recordable = true});
  };
  add(typeid(Conv2d), Which::Forward, [](const Apply& n) { return static_cast<const Conv2d&>(*n.op).p; }, {});
  add(typeid(Conv2dGradInputs), Which::Data,
      [](const Apply& n) { return static_cast<const Conv2dGradInputs&>(*n.op).p; }, {2, 3});
  add(typeid(Conv2dGradWeights), Which::Filter,
      [](const Apply& n) { return static_cast<const Conv2dGradWeights&>(*n.op).p; }, {2, 3});
}

}  // namespace hypatia::cuda

#else  // no cudnn.h: the convolutions run on the CPU backend

namespace hypatia::cuda {
bool cudnn_loadable(std::string* why) {
  if (why) *why = "Hypatia was built without cuDNN's headers";
  return false;
}
void register_cuda_conv_kernels() {}
void prepare_cudnn_recording() {}
}  // namespace hypatia::cuda

#endif
