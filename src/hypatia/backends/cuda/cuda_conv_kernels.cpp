// 2-d and 3-d convolutions on the CUDA backend (ops/conv.h): Conv2d, Conv3d and their gradient ops
// (GradInputs, GradWeights), float32 and float64, every border mode (asymmetric padding too),
// strides, dilations and groups, flipped (a convolution) or not (a correlation). Through cuDNN's
// N-d descriptors where libcudnn can be opened (dlopen, as cuBLAS) and Theano's dnn.enabled
// allows it; otherwise, for the asymmetric padding cuDNN does not take, and for a shape cuDNN has
// no float algorithm for, through im2col and cuBLAS (cuda_conv_gemm.cpp). Other dtypes run on the
// CPU backend with transfers.
//
// Products in float32 are computed in float32 (CUDNN_FMA_MATH: no TF32), as cuBLAS's are here.
// The algorithm is cuDNN's first heuristic choice (cudnnGet*Algorithm_v7) that computes in that
// math, or with Theano's dnn.conv.algo_fwd / algo_bwd_data / algo_bwd_filter = time_once the
// fastest such when timed by cuDNN on the node's buffers (cudnnFind*AlgorithmEx, with a workspace
// as large as the heuristics' largest, up to 512 MiB), chosen once per shape on the first call
// with it (never while a CUDA graph records) and kept by the kernel. Inputs are made C-contiguous
// first (cuDNN's packed NCHW, im2col's layout).
#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <tuple>

#include "hypatia/backends/cuda/cuda_api.h"
#include "hypatia/backends/cuda/cuda_kernel_util.h"
#include "hypatia/core/config.h"
#include "hypatia/core/error.h"
#include "hypatia/ops/conv.h"

namespace hypatia::cuda {
namespace {

/// One convolution as cuDNN sees it: batch n, channels c, filters o (of cg = c / g channels),
/// groups g, and per spatial axis (2 or 3: depth, rows, columns) the image, filter and output
/// sizes, the padding (each side), stride and dilation.
struct Geometry {
  int nsp = 2;
  int64_t n = 0, c = 0, o = 0, cg = 0, g = 1;
  std::array<int64_t, 3> in{}, k{}, out{}, pad{}, stride{}, dil{};
  bool flip = false;
  auto key(DType dt) const { return std::make_tuple(nsp, n, c, o, g, in, k, pad, static_cast<int>(dt)); }
};

Geometry geometry(const Conv2dParams& p, const Conv2dShape& s) {
  Geometry g{.nsp = 2, .n = s.n, .c = s.c, .o = s.o, .cg = s.cg, .g = s.g};
  g.in = {s.h, s.w, 0};
  g.k = {s.kh, s.kw, 0};
  g.out = {s.ho, s.wo, 0};
  g.pad = {s.ph, s.pw, 0};
  g.stride = {p.stride_h, p.stride_w, 0};
  g.dil = {p.dil_h, p.dil_w, 0};
  g.flip = p.flip;
  return g;
}

Geometry geometry(const Conv3dParams& p, const Conv3dShape& s) {
  const Conv2dShape& hw = s.hw;
  Geometry g{.nsp = 3, .n = hw.n, .c = hw.c, .o = hw.o, .cg = hw.cg, .g = hw.g};
  g.in = {s.d, hw.h, hw.w};
  g.k = {s.kd, hw.kh, hw.kw};
  g.out = {s.od, hw.ho, hw.wo};
  g.pad = {s.pd, hw.ph, hw.pw};
  g.stride = {p.stride_d, p.hw.stride_h, p.hw.stride_w};
  g.dil = {p.dil_d, p.hw.dil_h, p.hw.dil_w};
  g.flip = p.hw.flip;
  return g;
}

int64_t host_int(const NDArray& v) {
  v.require_host("a convolution's size input");
  return v.get_flat_int(0);
}

/// The node's shapes, checked by the op's own shape function (its messages), as a geometry;
/// the gradient ops' size inputs are read on the host. `symmetric`: whether the padding after the
/// last row and column is the padding before (cuDNN's kind).
Geometry conv_geometry(const Op& op, const KernelArgs& a, bool& symmetric) {
  const Shape& x0 = a.in[0]->shape();
  const Shape& x1 = a.in[1]->shape();
  const std::string who = op.name();
  const char* w = who.c_str();
  auto sym2 = [](const Conv2dShape& s) { return s.ph == s.ph_end && s.pw == s.pw_end; };
  if (const auto* c = dynamic_cast<const Conv2d*>(&op)) {
    const Conv2dShape s = conv2d_shape(w, c->p, x0, x1);
    symmetric = sym2(s);
    return geometry(c->p, s);
  }
  if (const auto* c = dynamic_cast<const Conv2dGradInputs*>(&op)) {
    const Conv2dShape s = conv2d_grad_inputs_shape(w, c->p, x0, x1, host_int(*a.in[2]), host_int(*a.in[3]));
    symmetric = sym2(s);
    return geometry(c->p, s);
  }
  if (const auto* c = dynamic_cast<const Conv2dGradWeights*>(&op)) {
    const Conv2dShape s = conv2d_grad_weights_shape(w, c->p, x0, x1, host_int(*a.in[2]), host_int(*a.in[3]));
    symmetric = sym2(s);
    return geometry(c->p, s);
  }
  if (const auto* c = dynamic_cast<const Conv3d*>(&op)) {
    const Conv3dShape s = conv3d_shape(w, c->p, x0, x1);
    symmetric = sym2(s.hw);
    return geometry(c->p, s);
  }
  if (const auto* c = dynamic_cast<const Conv3dGradInputs*>(&op)) {
    const Conv3dShape s =
        conv3d_grad_inputs_shape(w, c->p, x0, x1, host_int(*a.in[2]), host_int(*a.in[3]), host_int(*a.in[4]));
    symmetric = sym2(s.hw);
    return geometry(c->p, s);
  }
  const auto& c3 = static_cast<const Conv3dGradWeights&>(op);
  const Conv3dShape s =
      conv3d_grad_weights_shape(w, c3.p, x0, x1, host_int(*a.in[2]), host_int(*a.in[3]), host_int(*a.in[4]));
  symmetric = sym2(s.hw);
  return geometry(c3.p, s);
}

/// The geometry as the im2col path takes it (a 2-d convolution is a 3-d one of depth 1).
ConvGemmShape gemm_shape(const Geometry& s) {
  ConvGemmShape g{.n = s.n, .c = s.c, .o = s.o, .g = s.g, .flip = s.flip};
  const int skip = 3 - s.nsp;
  for (int i = 0; i < s.nsp; ++i) {
    g.in[skip + i] = s.in[i];
    g.k[skip + i] = s.k[i];
    g.out[skip + i] = s.out[i];
    g.pad[skip + i] = s.pad[i];
    g.stride[skip + i] = s.stride[i];
    g.dil[skip + i] = s.dil[i];
  }
  return g;
}

std::atomic<int64_t> g_cudnn_runs{0}, g_im2col_runs{0}, g_refused{0};
std::mutex g_refusal_mu;
std::string g_last_refusal;

/// Counts a shape cuDNN refused (it then runs through im2col), with why.
void count_refusal(const std::string& why) {
  ++g_refused;
  std::lock_guard<std::mutex> lock(g_refusal_mu);
  g_last_refusal = why;
}

}  // namespace

ConvStats conv_stats() {
  std::lock_guard<std::mutex> lock(g_refusal_mu);
  return ConvStats{g_cudnn_runs.load(), g_im2col_runs.load(), g_refused.load(), g_last_refusal};
}

}  // namespace hypatia::cuda

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
  X(cudnnSetTensorNdDescriptor)                    \
  X(cudnnDestroyTensorDescriptor)                  \
  X(cudnnCreateFilterDescriptor)                   \
  X(cudnnSetFilterNdDescriptor)                    \
  X(cudnnDestroyFilterDescriptor)                  \
  X(cudnnCreateConvolutionDescriptor)              \
  X(cudnnSetConvolutionNdDescriptor)               \
  X(cudnnSetConvolutionGroupCount)                 \
  X(cudnnSetConvolutionMathType)                   \
  X(cudnnDestroyConvolutionDescriptor)             \
  X(cudnnGetConvolutionForwardAlgorithm_v7)        \
  X(cudnnConvolutionForward)                       \
  X(cudnnGetConvolutionBackwardDataAlgorithm_v7)   \
  X(cudnnConvolutionBackwardData)                  \
  X(cudnnGetConvolutionBackwardFilterAlgorithm_v7) \
  X(cudnnConvolutionBackwardFilter)                \
  X(cudnnFindConvolutionForwardAlgorithmEx)        \
  X(cudnnFindConvolutionBackwardDataAlgorithmEx)   \
  X(cudnnFindConvolutionBackwardFilterAlgorithmEx)
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

/// A status by which cuDNN declines a shape or parameter (BAD_PARAM, NOT_SUPPORTED and their
/// sub-codes): the convolution runs through im2col instead.
class DnnRefusal final : public Error {
 public:
  using Error::Error;
};

void check_dnn(cudnnStatus_t s, const char* what) {
  if (s == CUDNN_STATUS_SUCCESS) [[likely]]
    return;
  if (s == CUDNN_STATUS_ALLOC_FAILED || s == CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED)
    fail<MemoryError>("cuDNN: ", what, " failed: out of memory");
  const int code = static_cast<int>(s);
  if ((code >= CUDNN_STATUS_BAD_PARAM && code < CUDNN_STATUS_BAD_PARAM + 1000) ||
      (code >= CUDNN_STATUS_NOT_SUPPORTED && code < CUDNN_STATUS_NOT_SUPPORTED + 1000))
    fail<DnnRefusal>("cuDNN: ", what, ": ", dnn().cudnnGetErrorString(s));
  fail<Error>("cuDNN: ", what, " failed: ", dnn().cudnnGetErrorString(s));
}

/// The handle bound to stream(): one for the queues' streams (its calls serialized: a handle is
/// not for concurrent use; bound to the caller's stream under the lock) and one for the recording
/// stream (one thread records at a time).
struct DnnHandle {
  cudnnHandle_t h;
  std::unique_lock<std::mutex> lock;
};
std::atomic<bool> g_main_made{false};

cudnnHandle_t make_handle(cudaStream_t s) {
  DeviceScope on_device;  // (a handle belongs to the device current when it is made)
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
  std::unique_lock<std::mutex> lock(mu);
  check_dnn(dnn().cudnnSetStream(main, stream()), "cudnnSetStream");
  return {main, std::move(lock)};
}

cudnnDataType_t dnn_type(DType dt) { return dt == DType::Float64 ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT; }

int as_int(int64_t v, const char* what) {
  if (v > INT32_MAX) fail<NotImplementedError>("cuDNN convolution: ", what, " ", v, " does not fit cuDNN's int sizes");
  return static_cast<int>(v);
}

/// The descriptors of one convolution: image x (n, c, spatial...), filters (o, cg, kernel...),
/// output y, all packed (C-contiguous).
class Descriptors {
 public:
  Descriptors(const Geometry& s, DType dt) {
    const Cudnn& d = dnn();
    check_dnn(d.cudnnCreateTensorDescriptor(&x), "cudnnCreateTensorDescriptor");
    check_dnn(d.cudnnCreateTensorDescriptor(&y), "cudnnCreateTensorDescriptor");
    check_dnn(d.cudnnCreateFilterDescriptor(&w), "cudnnCreateFilterDescriptor");
    check_dnn(d.cudnnCreateConvolutionDescriptor(&conv), "cudnnCreateConvolutionDescriptor");
    const cudnnDataType_t t = dnn_type(dt);
    const int nd = 2 + s.nsp;
    auto packed = [&](cudnnTensorDescriptor_t desc, int64_t n, int64_t c, const std::array<int64_t, 3>& sp) {
      int dims[5], strides[5];
      dims[0] = as_int(n, "batch");
      dims[1] = as_int(c, "channels");
      for (int i = 0; i < s.nsp; ++i) dims[2 + i] = as_int(sp[i], "spatial size");
      int64_t st = 1;
      for (int i = nd - 1; i >= 0; --i) {
        strides[i] = as_int(st, "image size");
        st *= dims[i];
      }
      check_dnn(d.cudnnSetTensorNdDescriptor(desc, t, nd, dims, strides), "cudnnSetTensorNdDescriptor");
    };
    packed(x, s.n, s.c, s.in);
    packed(y, s.n, s.o, s.out);
    int fdims[5] = {as_int(s.o, "filters"), as_int(s.cg, "channels")};
    int pad[3], stride[3], dil[3];
    for (int i = 0; i < s.nsp; ++i) {
      fdims[2 + i] = as_int(s.k[i], "filter size");
      pad[i] = as_int(s.pad[i], "padding");
      stride[i] = as_int(s.stride[i], "stride");
      dil[i] = as_int(s.dil[i], "dilation");
    }
    check_dnn(d.cudnnSetFilterNdDescriptor(w, t, CUDNN_TENSOR_NCHW, nd, fdims), "cudnnSetFilterNdDescriptor");
    check_dnn(d.cudnnSetConvolutionNdDescriptor(conv, s.nsp, pad, stride, dil,
                                                s.flip ? CUDNN_CONVOLUTION : CUDNN_CROSS_CORRELATION, t),
              "cudnnSetConvolutionNdDescriptor");
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

/// The most workspace a convolution takes (its heuristic choices and timed search).
constexpr size_t kMaxWorkspace = size_t{512} << 20;

/// The first of cuDNN's heuristic choices that computes in FMA math within kMaxWorkspace:
/// (algorithm, workspace bytes); algorithm -1 when there is none.
template <class Perf>
std::pair<int, size_t> pick(const Perf* perf, int n) {
  for (int i = 0; i < n; ++i)
    if (perf[i].status == CUDNN_STATUS_SUCCESS && perf[i].mathType != CUDNN_TENSOR_OP_MATH &&
        perf[i].mathType != CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION && perf[i].memory <= kMaxWorkspace)
      return {static_cast<int>(perf[i].algo), perf[i].memory};
  return {-1, 0};
}

/// One node's convolutions through cuDNN (2-d or 3-d): its descriptors and algorithm per shape
/// (kept), and the call.
class CudnnConv {
 public:
  explicit CudnnConv(ConvPass which) : which_(which) {}

  /// Writes `out` from the C-contiguous, non-empty A and B; false (nothing queued) when cuDNN
  /// declines the shape: a tensor beyond its legacy API's int element count, no algorithm in float
  /// arithmetic within kMaxWorkspace, a refusal (DnnRefusal), or no room for the workspace now.
  bool run(const Geometry& s, DType dt, const NDArray& A, const NDArray& B, NDArray& out) {
    for (const NDArray* t : {&A, &B, static_cast<const NDArray*>(&out)})
      if (t->size() > INT32_MAX) {
        count_refusal("a tensor of " + std::to_string(t->size()) + " elements (cuDNN's limit: 2^31 - 1)");
        return false;
      }
    Plan* plan = nullptr;
    try {
      plan = &plan_for(s, dt, A.raw(), B.raw(), out.raw());
    } catch (const DnnRefusal& e) {
      plans_[s.key(dt)].algo = -1;  // declined once, declined again: im2col from now on
      count_refusal(e.what());
      return false;
    }
    if (plan->algo < 0) return false;
    NDArray ws;
    try {
      if (plan->workspace > 0)
        ws = NDArray::empty({static_cast<int64_t>(plan->workspace)}, DType::UInt8, Device::cuda());
    } catch (const MemoryError&) {
      count_refusal("no room for a workspace of " + std::to_string(plan->workspace) + " bytes");
      return false;
    }
    try {
      call(*plan, dt, A, B, out, plan->workspace > 0 ? ws.raw() : nullptr);
    } catch (const DnnRefusal& e) {
      plan->algo = -1;  // this shape runs through im2col from now on
      count_refusal(e.what());
      return false;
    }
    return true;
  }

 private:
  struct Plan {
    std::unique_ptr<Descriptors> desc;
    int algo = 0;
    size_t workspace = 0;
  };

  void call(const Plan& plan, DType dt, const NDArray& A, const NDArray& B, NDArray& out, void* wsp) {
    const double one_d = 1, zero_d = 0;
    const float one_f = 1, zero_f = 0;
    const void* alpha = dt == DType::Float64 ? static_cast<const void*>(&one_d) : &one_f;
    const void* beta = dt == DType::Float64 ? static_cast<const void*>(&zero_d) : &zero_f;
    const Descriptors& d = *plan.desc;
    DnnHandle h = handle();
    if (which_ == ConvPass::Forward)
      check_dnn(dnn().cudnnConvolutionForward(h.h, alpha, d.x, A.raw(), d.w, B.raw(), d.conv,
                                              static_cast<cudnnConvolutionFwdAlgo_t>(plan.algo), wsp, plan.workspace,
                                              beta, d.y, out.raw()),
                "cudnnConvolutionForward");
    else if (which_ == ConvPass::Data)
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

  /// The largest workspace among the usable heuristic choices (the timed search's budget).
  template <class Perf>
  static size_t largest_workspace(const Perf* perf, int n) {
    constexpr size_t kCap = kMaxWorkspace;
    size_t m = 0;
    for (int i = 0; i < n; ++i)
      if (perf[i].status == CUDNN_STATUS_SUCCESS && perf[i].mathType != CUDNN_TENSOR_OP_MATH &&
          perf[i].mathType != CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION)
        m = std::max(m, perf[i].memory);
    return std::min(m, kCap);
  }

  /// Runs cuDNN's timed search `find(perf, &n, workspace, bytes)` with the heuristics' largest
  /// workspace and replaces `plan`'s choice by the fastest usable one; the heuristic choice stays
  /// when the workspace cannot be had or nothing usable was timed.
  template <class Perf, class Find>
  void time_candidates(Plan& plan, const Perf* heuristic, int n_heuristic, const char* what, Find&& find) {
    const size_t bytes = largest_workspace(heuristic, n_heuristic);
    NDArray ws;
    try {
      if (bytes > 0) ws = NDArray::empty({static_cast<int64_t>(bytes)}, DType::UInt8, Device::cuda());
    } catch (const MemoryError&) {
      return;
    }
    Perf perf[16];
    int n = 0;
    check_dnn(find(perf, &n, bytes > 0 ? ws.raw() : nullptr, bytes), what);
    for (int i = 0; i < n; ++i)
      if (perf[i].status == CUDNN_STATUS_SUCCESS && perf[i].mathType != CUDNN_TENSOR_OP_MATH &&
          perf[i].mathType != CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION) {
        plan.algo = static_cast<int>(perf[i].algo);
        plan.workspace = perf[i].memory;
        return;
      }
  }

  bool timed() const {
    const std::string& how = which_ == ConvPass::Forward ? config().dnn_conv_algo_fwd
                             : which_ == ConvPass::Data  ? config().dnn_conv_algo_bwd_data
                                                         : config().dnn_conv_algo_bwd_filter;
    return how.rfind("time", 0) == 0 && !recording();
  }

  Plan& plan_for(const Geometry& s, DType dt, const void* a, const void* b, void* out) {
    const auto key = s.key(dt);
    auto it = plans_.find(key);
    if (it != plans_.end()) return it->second;
    Plan plan;
    plan.desc = std::make_unique<Descriptors>(s, dt);
    const Descriptors& d = *plan.desc;
    DnnHandle h = handle();
    int n = 0;
    if (which_ == ConvPass::Forward) {
      cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
      check_dnn(dnn().cudnnGetConvolutionForwardAlgorithm_v7(h.h, d.x, d.w, d.conv, d.y,
                                                             CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &n, perf),
                "cudnnGetConvolutionForwardAlgorithm_v7");
      std::tie(plan.algo, plan.workspace) = pick(perf, n);
      if (plan.algo >= 0 && timed())
        time_candidates(plan, perf, n, "cudnnFindConvolutionForwardAlgorithmEx",
                        [&](auto* p, int* k, void* w, size_t sz) {
                          return dnn().cudnnFindConvolutionForwardAlgorithmEx(h.h, d.x, a, d.w, b, d.conv, d.y, out, 16,
                                                                              k, p, w, sz);
                        });
    } else if (which_ == ConvPass::Data) {
      cudnnConvolutionBwdDataAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
      check_dnn(dnn().cudnnGetConvolutionBackwardDataAlgorithm_v7(h.h, d.w, d.y, d.conv, d.x,
                                                                  CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &n, perf),
                "cudnnGetConvolutionBackwardDataAlgorithm_v7");
      std::tie(plan.algo, plan.workspace) = pick(perf, n);
      if (plan.algo >= 0 && timed())
        time_candidates(plan, perf, n, "cudnnFindConvolutionBackwardDataAlgorithmEx",
                        [&](auto* p, int* k, void* w, size_t sz) {
                          return dnn().cudnnFindConvolutionBackwardDataAlgorithmEx(h.h, d.w, a, d.y, b, d.conv, d.x,
                                                                                   out, 16, k, p, w, sz);
                        });
    } else {
      cudnnConvolutionBwdFilterAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
      check_dnn(dnn().cudnnGetConvolutionBackwardFilterAlgorithm_v7(h.h, d.x, d.y, d.conv, d.w,
                                                                    CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &n, perf),
                "cudnnGetConvolutionBackwardFilterAlgorithm_v7");
      std::tie(plan.algo, plan.workspace) = pick(perf, n);
      if (plan.algo >= 0 && timed())
        time_candidates(plan, perf, n, "cudnnFindConvolutionBackwardFilterAlgorithmEx",
                        [&](auto* p, int* k, void* w, size_t sz) {
                          return dnn().cudnnFindConvolutionBackwardFilterAlgorithmEx(h.h, d.x, a, d.y, b, d.conv, d.w,
                                                                                     out, 16, k, p, w, sz);
                        });
    }
    return plans_.emplace(key, std::move(plan)).first->second;
  }

  ConvPass which_;
  std::map<decltype(Geometry{}.key(DType::Float32)), Plan> plans_;
};

}  // namespace

bool cudnn_loadable(std::string* why) {
  if (why) *why = dnn().why;
  return dnn().why.empty();
}

void prepare_cudnn_recording() {
  if (g_main_made) recording_handle();
}

}  // namespace hypatia::cuda

#else  // no cudnn.h: the convolutions run through im2col and cuBLAS

namespace hypatia::cuda {
namespace {
/// (cuDNN's side, never made: cudnn_loadable is false.)
class CudnnConv {
 public:
  explicit CudnnConv(ConvPass) {}
  bool run(const Geometry&, DType, const NDArray&, const NDArray&, NDArray&) { return false; }
};
}  // namespace

bool cudnn_loadable(std::string* why) {
  if (why) *why = "Hypatia was built without cuDNN's headers";
  return false;
}
void prepare_cudnn_recording() {}
}  // namespace hypatia::cuda

#endif

namespace hypatia::cuda {
namespace {

/// One node's convolution: through cuDNN where it is used and has an algorithm for the shape,
/// else through im2col and cuBLAS (its kernels compiled on first use).
class ConvKernel final : public Kernel {
 public:
  ConvKernel(const Apply& node, ConvPass which) : op_(*node.op), which_(which) {
    const std::string& mode = config().dnn_enabled;
    std::string why;
    if (mode == "False") return;
    if (cudnn_loadable(&why))
      cudnn_ = std::make_unique<CudnnConv>(which);
    else if (mode == "True")
      fail<Error>(op_.name(), ": dnn.enabled=True, but cuDNN cannot be used: ", why,
                  " (dnn.enabled=auto runs convolutions through im2col and cuBLAS instead)");
  }

  void run(const KernelArgs& a) override {
    const NDArray& in0 = *a.in[0];
    const NDArray& in1 = *a.in[1];
    bool symmetric = true;
    const Geometry s = conv_geometry(op_, a, symmetric);
    for (int i = 0; i < s.nsp; ++i)
      if (s.pad[i] < 0) fail<InternalError>(op_.name(), ": negative padding");
    const DType dt = in0.dtype();
    Shape out_shape = which_ == ConvPass::Forward ? Shape{s.n, s.o}
                      : which_ == ConvPass::Data  ? Shape{s.n, s.c}
                                                  : Shape{s.o, s.cg};
    const std::array<int64_t, 3>& sp = which_ == ConvPass::Forward ? s.out : which_ == ConvPass::Data ? s.in : s.k;
    for (int i = 0; i < s.nsp; ++i) out_shape.push_back(sp[i]);
    NDArray& out = prepare_device_output(*a.out[0], out_shape, dt);
    if (out.size() == 0) return;
    const NDArray A = in0.is_c_contiguous() ? in0 : device_copy(in0);
    const NDArray B = in1.is_c_contiguous() ? in1 : device_copy(in1);
    if (A.size() == 0 || B.size() == 0) {  // an empty sum: zeros
      copy_into(out, NDArray::zeros({}, dt).to_device(Device::cuda()).broadcast_to(out_shape));
      return;
    }
    if (symmetric && cudnn_ && cudnn_->run(s, dt, A, B, out)) {
      ++g_cudnn_runs;
      return;
    }
    if (!gemm_) gemm_ = std::make_unique<CudaConvGemm>(dt);
    gemm_->run(which_, gemm_shape(s), A, B, out);
    ++g_im2col_runs;
  }

 private:
  const Op& op_;
  ConvPass which_;
  std::unique_ptr<CudnnConv> cudnn_;
  std::unique_ptr<CudaConvGemm> gemm_;
};

/// Float32 or float64 operands of one dtype (the others run on the CPU).
bool conv_accepts(const Apply& node) {
  const DType dt = node.inputs[0]->type.dtype;
  return (dt == DType::Float32 || dt == DType::Float64) && node.inputs[1]->type.dtype == dt;
}

}  // namespace

void register_cuda_conv_kernels() {
  auto add = [](std::type_index op, ConvPass which, std::vector<int> host) {
    register_kernel(
        kCudaBackend, op,
        [which](const Apply& node) -> std::unique_ptr<Kernel> { return std::make_unique<ConvKernel>(node, which); },
        KernelTraits{.accepts = conv_accepts, .host_inputs = std::move(host), .recordable = true});
  };
  add(typeid(Conv2d), ConvPass::Forward, {});
  add(typeid(Conv2dGradInputs), ConvPass::Data, {2, 3});
  add(typeid(Conv2dGradWeights), ConvPass::Filter, {2, 3});
  add(typeid(Conv3d), ConvPass::Forward, {});
  add(typeid(Conv3dGradInputs), ConvPass::Data, {2, 3, 4});
  add(typeid(Conv3dGradWeights), ConvPass::Filter, {2, 3, 4});
}

}  // namespace hypatia::cuda
