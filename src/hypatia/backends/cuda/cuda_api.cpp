#include "hypatia/backends/cuda/cuda_api.h"

#include <dlfcn.h>

#include <atomic>
#include <cstdlib>
#include <initializer_list>
#include <string>

#include "hypatia/core/config.h"
#include "hypatia/core/device.h"
#include "hypatia/core/error.h"

namespace hypatia::cuda {
namespace {

struct State {
  bool ok = false;
  std::string why;
  /// The device this process drives (core/device.h).
  int device = 0;
  int arch = 0, sms = 0;
  bool per_function = false;
  /// The queues' streams (queue 0's: the legacy default stream, null, when per_function; else the
  /// one stream) and events (wait_queue's, under g_order_mu).
  cudaStream_t streams[kQueues] = {};
  cudaEvent_t events[kQueues] = {};
};
std::mutex g_order_mu;
/// Where the machine shows more than one device: the driver's context functions and the driven
/// device's primary context, which each entry into the backend makes current (DeviceScope); null
/// otherwise. Outside State, which a deleter run at exit may outlive.
ContextOps g_context_ops;
std::atomic<void*> g_primary{nullptr};

/// cuCtxGetCurrent and cuCtxSetCurrent from libcuda (which libcudart has loaded); false if not.
bool load_context_ops(ContextOps& ops) {
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  if (!lib) lib = dlopen("libcuda.so.1", RTLD_NOW);
  if (!lib) return false;
  ops.get = reinterpret_cast<int (*)(void**)>(dlsym(lib, "cuCtxGetCurrent"));
  ops.set = reinterpret_cast<int (*)(void*)>(dlsym(lib, "cuCtxSetCurrent"));
  return ops.get && ops.set;
}

/// Makes the queues' streams and events (false, with the error in `e`, when one fails).
bool make_queues(State& st, cudaError_t& e) {
  st.per_function = config().cuda_streams == "function";
  const int n = st.per_function ? kQueues : 1;
  for (int q = 0; q < n; ++q) {
    if (q > 0 || !st.per_function)
      if ((e = cudaStreamCreateWithFlags(&st.streams[q],
                                         st.per_function ? cudaStreamDefault : cudaStreamNonBlocking)) != cudaSuccess)
        return false;
    if ((e = cudaEventCreateWithFlags(&st.events[q], cudaEventDisableTiming)) != cudaSuccess) return false;
  }
  return true;
}

State& state() {
  static State s = [] {
    State st;
    if (!runtime_loaded(&st.why)) return st;
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) {
      st.why = std::string("no usable CUDA driver or device (") + cudaGetErrorString(e) + ")";
      cudaGetLastError();
      return st;
    }
    if (n == 0) {
      st.why = "no CUDA device";
      return st;
    }
    st.device = driven_device_index(DeviceKind::Cuda);
    const std::string name = Device::cuda(st.device).str();
    if (st.device >= n) {
      const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
      st.why = "this process runs on " + name + " (the device flag, or its first use), but this machine shows " +
               std::to_string(n) + " CUDA device" +
               (n == 1 ? " (cuda:0)" : "s (cuda:0 to cuda:" + std::to_string(n - 1) + ")") +
               (visible ? std::string("; CUDA_VISIBLE_DEVICES=") + visible : std::string());
      return st;
    }
    // The queues' streams are made on the driven device. Where the machine shows others, the
    // calling thread's context is given back after, as by a DeviceScope.
    ContextOps ops;
    void* before = nullptr;
    if (n > 1 && (!load_context_ops(ops) || ops.get(&before) != 0)) {
      st.why = "the CUDA driver's cuCtxGetCurrent/cuCtxSetCurrent could not be used (libcuda.so.1)";
      return st;
    }
    cudaDeviceProp p{};
    void* primary = nullptr;
    if ((e = cudaGetDeviceProperties(&p, st.device)) != cudaSuccess || (e = cudaSetDevice(st.device)) != cudaSuccess ||
        !make_queues(st, e) || (n > 1 && ops.get(&primary) != 0)) {
      st.why = "CUDA device " + name + " could not be initialised (" + cudaGetErrorString(e) + ")";
      if (n > 1) ops.set(before);
      cudaGetLastError();
      return st;
    }
    if (n > 1) {
      ops.set(before);
      cudaGetLastError();
      g_context_ops = ops;
      g_primary.store(primary, std::memory_order_release);
    }
    st.arch = p.major * 10 + p.minor;
    st.sms = p.multiProcessorCount;
    st.ok = true;
    return st;
  }();
  return s;
}

/// Opens the first of `names` that loads and runs `bind_all(lib)` once; returns "" or why not
/// (the library missing, a symbol missing, the device refusing).
template <class F>
std::string load_library(std::initializer_list<const char*> names, F&& bind_all) {
  std::string tried;
  for (const char* n : names) {
    if (void* lib = dlopen(n, RTLD_NOW | RTLD_LOCAL)) {
      try {
        bind_all(lib);
      } catch (const Error& e) {
        return e.what();
      }
      return "";
    }
    tried += std::string(tried.empty() ? "" : ", ") + n;
  }
  return "could not load " + tried + " (put the CUDA toolkit's lib64 on LD_LIBRARY_PATH)";
}

template <class F>
void bind(void* lib, F& f, const char* sym) {
  f = reinterpret_cast<F>(dlsym(lib, sym));
  if (!f) fail<NotImplementedError>("CUDA backend: the library has no symbol ", sym, " (an older CUDA?)");
}

thread_local bool t_recording = false;
std::atomic<bool> g_cublas_loaded{false};
std::atomic<int> g_next_queue{0};

}  // namespace

bool available() { return state().ok; }

ContextSwitch switch_context(const ContextOps& ops, void* ours) noexcept {
  void* cur = nullptr;
  // (A refusal: the next call on the device reports it.)
  if (ops.get(&cur) != 0 || cur == ours || ops.set(ours) != 0) return {};
  return {true, cur};
}

void restore_context(const ContextOps& ops, ContextSwitch s) noexcept {
  if (s.switched) ops.set(s.before);
}

ContextSwitch enter_device() noexcept {
  // (Before the backend started, nothing of it is on any device.)
  void* primary = g_primary.load(std::memory_order_acquire);
  if (!primary) [[likely]]
    return {};
  return switch_context(g_context_ops, primary);
}

void leave_device(ContextSwitch s) noexcept { restore_context(g_context_ops, s); }

const std::string& unavailable_reason() { return state().why; }
int arch() { return state().arch; }
int sm_count() { return state().sms; }
bool queues_per_function() { return state().per_function; }

int assign_queue() {
  if (!state().per_function) return 0;
  return 1 + g_next_queue.fetch_add(1, std::memory_order_relaxed) % (kQueues - 1);
}

cudaStream_t queue_stream(int q) { return state().streams[q]; }

bool wait_queue(int into, int q) noexcept {
  State& st = state();
  // (One event per queue: recorded and waited for under the lock, so no other record comes
  // between; a wait takes the record made before it, whatever is recorded later.)
  std::lock_guard<std::mutex> lock(g_order_mu);
  if (cudaEventRecord(st.events[q], st.streams[q]) == cudaSuccess &&
      cudaStreamWaitEvent(st.streams[into], st.events[q], 0) == cudaSuccess)
    return true;
  cudaGetLastError();
  return false;
}

cudaStream_t stream() { return t_recording ? recording_stream() : state().streams[current_queue()]; }

cudaStream_t recording_stream() {
  static const cudaStream_t s = [] {
    DeviceScope on_device;
    cudaStream_t r = nullptr;
    check(cudaStreamCreateWithFlags(&r, cudaStreamNonBlocking), "cudaStreamCreateWithFlags (recording stream)");
    return r;
  }();
  return s;
}

void set_recording(bool on) { t_recording = on; }

std::mutex& capture_mutex() {
  static auto* m = new std::mutex();  // never destroyed (arrays freed at exit may still free memory)
  return *m;
}
bool recording() { return t_recording; }

void check(cudaError_t e, const char* what) {
  if (e == cudaSuccess) [[likely]]
    return;
  cudaGetLastError();  // clears a non-sticky error
  if (e == cudaErrorMemoryAllocation) fail<MemoryError>("CUDA: ", what, " failed: out of device memory");
  fail<Error>("CUDA: ", what, " failed: ", cudaGetErrorName(e), " (", cudaGetErrorString(e), ")");
}

void require_available(const char* who) {
  if (!available()) fail<NotImplementedError>(who, ": the CUDA backend cannot run here: ", unavailable_reason());
}

void synchronize() {
  const cudaStream_t s = stream();
  if (s != nullptr) {
    check(cudaStreamSynchronize(s), "cudaStreamSynchronize");
    return;
  }
  // The legacy default stream: an event recorded there (after, say, a copy queued there) has
  // passed once all of its work has run.
  thread_local cudaEvent_t e = [] {
    cudaEvent_t r = nullptr;
    check(cudaEventCreateWithFlags(&r, cudaEventDisableTiming), "cudaEventCreate (waiting for the default stream)");
    return r;
  }();
  check(cudaEventRecord(e, nullptr), "cudaEventRecord (waiting for the default stream)");
  check(cudaEventSynchronize(e), "cudaEventSynchronize (the default stream)");
}

void synchronize_queues() {
  State& st = state();
  for (int q = 0; q < (st.per_function ? kQueues : 1); ++q)
    check(cudaStreamSynchronize(st.streams[q]), "cudaStreamSynchronize");
}

void after_launch(const char* what) {
  check(cudaPeekAtLastError(), what);
  if (config().cuda_sync) {
    cudaError_t e = cudaStreamSynchronize(stream());
    if (e != cudaSuccess) fail<Error>("CUDA: ", what, " failed while running: ", cudaGetErrorString(e));
  }
}

void launch(cudaKernel_t k, int grid, int block, void** params, const char* what) {
  check(cudaLaunchKernel(reinterpret_cast<const void*>(k), dim3(grid), dim3(block), params, 0, stream()), what);
  after_launch(what);
}

bool nvrtc_loadable() {
  try {
    nvrtc();
    return true;
  } catch (const Error&) {
    return false;
  }
}

const Nvrtc& nvrtc() {
  static Nvrtc n{};
  static const std::string error = load_library({"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"}, [](void* lib) {
    bind(lib, n.create, "nvrtcCreateProgram");
    bind(lib, n.compile, "nvrtcCompileProgram");
    bind(lib, n.log_size, "nvrtcGetProgramLogSize");
    bind(lib, n.log, "nvrtcGetProgramLog");
    bind(lib, n.cubin_size, "nvrtcGetCUBINSize");
    bind(lib, n.cubin, "nvrtcGetCUBIN");
    bind(lib, n.destroy, "nvrtcDestroyProgram");
    bind(lib, n.error_string, "nvrtcGetErrorString");
    bind(lib, n.version, "nvrtcVersion");
  });
  if (!error.empty()) fail<NotImplementedError>("CUDA backend: ", error);
  return n;
}

void check_cublas(cublasStatus_t s, const char* what) {
  if (s == CUBLAS_STATUS_SUCCESS) [[likely]]
    return;
  if (s == CUBLAS_STATUS_ALLOC_FAILED) fail<MemoryError>("cuBLAS: ", what, " failed: out of device memory");
  fail<Error>("cuBLAS: ", what, " failed with status ", static_cast<int>(s));
}

namespace {

cublasHandle_t make_cublas_handle(const Cublas& c, cudaStream_t s) {
  DeviceScope on_device;  // (a handle belongs to the device current when it is made)
  cublasHandle_t h = nullptr;
  check_cublas(c.create(&h), "cublasCreate");
  check_cublas(c.set_stream(h, s), "cublasSetStream");
  // float32 products in float32 (no TF32), as the CPU computes them.
  check_cublas(c.set_math_mode(h, CUBLAS_PEDANTIC_MATH), "cublasSetMathMode");
  check_cublas(c.set_pointer_mode(h, CUBLAS_POINTER_MODE_HOST), "cublasSetPointerMode");
  return h;
}

}  // namespace

const Cublas& cublas() {
  static Cublas c{};
  static const std::string error = load_library({"libcublas.so.13", "libcublas.so.12", "libcublas.so"}, [](void* lib) {
    bind(lib, c.create, "cublasCreate_v2");
    bind(lib, c.set_stream, "cublasSetStream_v2");
    bind(lib, c.set_math_mode, "cublasSetMathMode");
    bind(lib, c.set_pointer_mode, "cublasSetPointerMode_v2");
    bind(lib, c.sgemm, "cublasSgemm_v2");
    bind(lib, c.dgemm, "cublasDgemm_v2");
    bind(lib, c.sgemm_strided_batched, "cublasSgemmStridedBatched");
    bind(lib, c.dgemm_strided_batched, "cublasDgemmStridedBatched");
    bind(lib, c.strsm, "cublasStrsm_v2");
    bind(lib, c.dtrsm, "cublasDtrsm_v2");
    require_available("cuBLAS");
    c.handle = make_cublas_handle(c, state().streams[0]);
  });
  if (!error.empty()) fail<NotImplementedError>("CUDA backend: ", error);
  g_cublas_loaded.store(true, std::memory_order_relaxed);
  return c;
}

namespace {

/// The handle recordings capture cuBLAS calls with: a handle of its own, bound to the recording
/// stream, so that the main handle's stream never changes under another thread.
cublasHandle_t recording_cublas(const Cublas& c) {
  static const cublasHandle_t h = make_cublas_handle(c, recording_stream());
  return h;
}

/// The handles of queues 1.. (queue 0's is Cublas::handle), made when first used: a handle's
/// stream never changes, so threads on one queue may share it.
std::atomic<cublasHandle_t> g_queue_cublas[kQueues];
std::mutex g_queue_cublas_mu;

}  // namespace

cublasHandle_t cublas_handle() {
  const Cublas& c = cublas();
  if (t_recording) return recording_cublas(c);
  const int q = current_queue();
  if (q == 0) return c.handle;
  if (cublasHandle_t h = g_queue_cublas[q].load(std::memory_order_acquire)) [[likely]]
    return h;
  std::lock_guard<std::mutex> lock(g_queue_cublas_mu);
  if (!g_queue_cublas[q].load(std::memory_order_relaxed))
    g_queue_cublas[q].store(make_cublas_handle(c, state().streams[q]), std::memory_order_release);
  return g_queue_cublas[q].load(std::memory_order_relaxed);
}

void prepare_cublas_recording() {
  if (g_cublas_loaded.load(std::memory_order_relaxed)) recording_cublas(cublas());
}

}  // namespace hypatia::cuda
