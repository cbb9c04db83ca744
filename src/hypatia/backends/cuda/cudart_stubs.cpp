// The CUDA runtime functions the backend calls, forwarded to libcudart opened at first use.
//
// Linking the runtime statically put its initial-exec thread-local storage into libhypatia.so,
// which then could not be loaded by dlopen (Python's import: "cannot allocate memory in static
// TLS block"); linking it dynamically would make libhypatia need the toolkit on every machine.
// So libhypatia defines the few runtime functions it uses itself, hidden (not exported: a program
// that links the real runtime is not interposed), each calling the function of the same name in
// libcudart.so, opened on first use. Where it cannot be opened, each returns
// cudaErrorInsufficientDriver and the backend reports why (cuda_api.h: available()).
#pragma GCC visibility push(hidden)
#include <cuda_runtime_api.h>
#pragma GCC visibility pop

#include <dlfcn.h>

#include <string>

namespace hypatia::cuda {

namespace {

struct Runtime {
  void* lib = nullptr;
  std::string why;
#define HYP_RT_FN(name) decltype(&::name) name = nullptr;
// clang-format off (one entry per line; clang-format reflows a macro list differently on each pass)
#define HYP_RT_LIST(X)         \
  X(cudaGetDeviceCount)        \
  X(cudaGetDeviceProperties)   \
  X(cudaSetDevice)             \
  X(cudaStreamCreateWithFlags) \
  X(cudaStreamSynchronize)     \
  X(cudaDeviceSynchronize)     \
  X(cudaGetErrorName)          \
  X(cudaGetErrorString)        \
  X(cudaGetLastError)          \
  X(cudaPeekAtLastError)       \
  X(cudaLaunchKernel)          \
  X(cudaMalloc)                \
  X(cudaFree)                  \
  X(cudaMemGetInfo)            \
  X(cudaMemcpyAsync)           \
  X(cudaMemsetAsync)           \
  X(cudaHostAlloc)             \
  X(cudaEventCreateWithFlags)  \
  X(cudaEventRecord)           \
  X(cudaEventSynchronize)      \
  X(cudaStreamWaitEvent)       \
  X(cudaLibraryLoadData)       \
  X(cudaLibraryGetKernel)      \
  X(cudaStreamBeginCapture)    \
  X(cudaStreamEndCapture)      \
  X(cudaGraphInstantiate)      \
  X(cudaGraphLaunch)           \
  X(cudaGraphDestroy)          \
  X(cudaGraphExecDestroy)
  // clang-format on
  HYP_RT_LIST(HYP_RT_FN)
#undef HYP_RT_FN
};

const Runtime& rt() {
  static const Runtime r = [] {
    Runtime x;
    // The runtime of the major version these headers declare (another's structures, such as
    // cudaDeviceProp, are laid out otherwise): libcudart.so.<major>, or libcudart.so if it is that.
    constexpr int kMajor = CUDART_VERSION / 1000;
    const std::string versioned = "libcudart.so." + std::to_string(kMajor);
    std::string found_other;
    for (const std::string& n : {versioned, std::string("libcudart.so")}) {
      if (!(x.lib = dlopen(n.c_str(), RTLD_NOW | RTLD_LOCAL))) continue;
      using Version = cudaError_t (*)(int*);
      const auto version = reinterpret_cast<Version>(dlsym(x.lib, "cudaRuntimeGetVersion"));
      int v = 0;
      if (version && version(&v) == cudaSuccess && v / 1000 == kMajor) break;
      found_other = n + " is CUDA " + std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10);
      dlclose(x.lib);
      x.lib = nullptr;
    }
    if (!x.lib) {
      x.why = "libcudart of CUDA " + std::to_string(kMajor) + " could not be loaded (tried " + versioned +
              " and libcudart.so" + (found_other.empty() ? "" : "; " + found_other) +
              "; put the CUDA toolkit's lib64 on LD_LIBRARY_PATH)";
      return x;
    }
#define HYP_RT_BIND(name)                                            \
  x.name = reinterpret_cast<decltype(&::name)>(dlsym(x.lib, #name)); \
  if (!x.name && x.why.empty()) x.why = "libcudart has no " #name " (an older CUDA?)";
    HYP_RT_LIST(HYP_RT_BIND)
#undef HYP_RT_BIND
    return x;
  }();
  return r;
}

}  // namespace

/// Whether libcudart is loaded with every function the backend calls; `why` says what is missing.
bool runtime_loaded(std::string* why) {
  const Runtime& r = rt();
  if (why) *why = r.why;
  return r.why.empty();
}

}  // namespace hypatia::cuda

using hypatia::cuda::rt;

#define HYP_FORWARD(name, params, args)                                     \
  extern "C" cudaError_t CUDARTAPI name params {                            \
    return rt().why.empty() ? rt().name args : cudaErrorInsufficientDriver; \
  }

HYP_FORWARD(cudaGetDeviceCount, (int* count), (count))
HYP_FORWARD(cudaGetDeviceProperties, (cudaDeviceProp * prop, int device), (prop, device))
HYP_FORWARD(cudaSetDevice, (int device), (device))
HYP_FORWARD(cudaStreamCreateWithFlags, (cudaStream_t * s, unsigned int flags), (s, flags))
HYP_FORWARD(cudaStreamSynchronize, (cudaStream_t s), (s))
HYP_FORWARD(cudaDeviceSynchronize, (), ())
HYP_FORWARD(cudaGetLastError, (), ())
HYP_FORWARD(cudaPeekAtLastError, (), ())
HYP_FORWARD(cudaLaunchKernel, (const void* f, dim3 g, dim3 b, void** args, size_t shm, cudaStream_t s),
            (f, g, b, args, shm, s))
HYP_FORWARD(cudaMalloc, (void** p, size_t n), (p, n))
HYP_FORWARD(cudaFree, (void* p), (p))
HYP_FORWARD(cudaMemGetInfo, (size_t * f, size_t* t), (f, t))
HYP_FORWARD(cudaMemcpyAsync, (void* d, const void* s, size_t n, cudaMemcpyKind k, cudaStream_t st), (d, s, n, k, st))
HYP_FORWARD(cudaMemsetAsync, (void* d, int v, size_t n, cudaStream_t st), (d, v, n, st))
HYP_FORWARD(cudaHostAlloc, (void** p, size_t n, unsigned int flags), (p, n, flags))
HYP_FORWARD(cudaEventCreateWithFlags, (cudaEvent_t * e, unsigned int flags), (e, flags))
HYP_FORWARD(cudaEventRecord, (cudaEvent_t e, cudaStream_t s), (e, s))
HYP_FORWARD(cudaEventSynchronize, (cudaEvent_t e), (e))
HYP_FORWARD(cudaStreamWaitEvent, (cudaStream_t s, cudaEvent_t e, unsigned int flags), (s, e, flags))
HYP_FORWARD(cudaLibraryLoadData,
            (cudaLibrary_t * lib, const void* code, cudaJitOption* jo, void** jv, unsigned int nj,
             cudaLibraryOption* lo, void** lv, unsigned int nl),
            (lib, code, jo, jv, nj, lo, lv, nl))
HYP_FORWARD(cudaLibraryGetKernel, (cudaKernel_t * k, cudaLibrary_t lib, const char* name), (k, lib, name))
HYP_FORWARD(cudaStreamBeginCapture, (cudaStream_t s, cudaStreamCaptureMode mode), (s, mode))
HYP_FORWARD(cudaStreamEndCapture, (cudaStream_t s, cudaGraph_t* g), (s, g))
HYP_FORWARD(cudaGraphInstantiate, (cudaGraphExec_t * e, cudaGraph_t g, unsigned long long flags), (e, g, flags))
HYP_FORWARD(cudaGraphLaunch, (cudaGraphExec_t e, cudaStream_t s), (e, s))
HYP_FORWARD(cudaGraphDestroy, (cudaGraph_t g), (g))
HYP_FORWARD(cudaGraphExecDestroy, (cudaGraphExec_t e), (e))

extern "C" const char* CUDARTAPI cudaGetErrorName(cudaError_t e) {
  return rt().why.empty() ? rt().cudaGetErrorName(e) : "cudaErrorInsufficientDriver";
}
extern "C" const char* CUDARTAPI cudaGetErrorString(cudaError_t e) {
  return rt().why.empty() ? rt().cudaGetErrorString(e) : "the CUDA runtime library (libcudart) could not be loaded";
}
