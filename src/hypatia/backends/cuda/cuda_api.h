// The CUDA backend's access to the GPU (internal to backends/cuda): whether a device is usable,
// errors turned into exceptions, the stream kernels run on, and NVRTC and cuBLAS, which are
// loaded when first needed (dlopen), so that a build with the toolkit loads and runs on a machine
// without them or without a GPU (CI): the backend is then unavailable, and says why.
//
// The CUDA runtime is opened at first use too (cudart_stubs.cpp: a statically linked runtime
// made libhypatia.so unloadable by dlopen, its thread-local storage being initial-exec).
#pragma once
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <nvrtc.h>

#include <mutex>
#include <string>

#include "hypatia/backends/device_queues.h"

namespace hypatia::cuda {

/// Whether the CUDA runtime (libcudart, opened at first use: cudart_stubs.cpp) is loaded; `why`
/// receives the reason when not.
bool runtime_loaded(std::string* why);
/// Whether a CUDA device is present and usable (checked once).
bool available();
/// Why not, when !available() ("no CUDA driver", "no CUDA device", ...).
const std::string& unavailable_reason();
/// Throws hypatia::Error "CUDA: <what> failed: <cuda's message>" unless `e` is cudaSuccess; an
/// allocation failure is a MemoryError.
void check(cudaError_t e, const char* what);
/// Throws NotImplementedError naming `who` and the reason unless available().
void require_available(const char* who);
/// The compute capability of the device this process drives (Device::cuda(): cuda:0, or the one
/// the device flag or the first use names) as 90 for 9.0, and its multiprocessors.
int arch();
int sm_count();
/// The backend's work goes to the device this process drives, which the CUDA runtime takes from
/// the calling thread's current context: where the machine shows more than one device, every
/// entry into the backend (a call: its CallQueues; the device memory functions; the allocator's
/// raw functions; module loads; the libraries' handles; a recording's release) makes the driven
/// device's primary context current and gives the thread its own context back after, exactly
/// (none, where it had none: no context is made on another GPU; a driver-API context such as
/// PyCUDA's, on any device).
struct ContextSwitch {
  bool switched = false;
  void* before = nullptr;  // the thread's context (CUcontext) before the switch
};
/// The driver's current-context functions (cuCtxGetCurrent, cuCtxSetCurrent; 0 is success).
struct ContextOps {
  int (*get)(void** ctx) = nullptr;
  int (*set)(void* ctx) = nullptr;
};
/// Makes `ours` current unless it is; what restore_context gives back. (The logic of
/// enter_device, over the functions given: the tests give stand-ins.)
ContextSwitch switch_context(const ContextOps& ops, void* ours) noexcept;
void restore_context(const ContextOps& ops, ContextSwitch s) noexcept;
/// switch_context and restore_context with the driver's functions and the driven device's
/// primary context; nothing where the machine shows one device.
ContextSwitch enter_device() noexcept;
void leave_device(ContextSwitch s) noexcept;
class DeviceScope {
 public:
  DeviceScope() noexcept : before_(enter_device()) {}
  ~DeviceScope() { leave_device(before_); }
  DeviceScope(const DeviceScope&) = delete;
  DeviceScope& operator=(const DeviceScope&) = delete;

 private:
  ContextSwitch before_;
};
/// Queues of device work: streams, numbered. Work outside function calls goes to queue 0. With
/// HYPATIA_FLAGS=cuda_streams=function (the default, read when the backend starts) each function
/// is given one of the queues 1..kQueues-1 (round robin: functions beyond those share them), each
/// a blocking stream, and queue 0 is CUDA's legacy default stream, which waits for the work
/// queued before on every blocking stream and is waited for by the work queued after (so work
/// outside calls needs no bookkeeping); with cuda_streams=one every queue is queue 0, one
/// non-blocking stream for the process.
constexpr int kQueues = 16;
static_assert(kQueues <= kMaxQueues);
/// Whether functions get queues of their own (cuda_streams=function).
bool queues_per_function();
/// The queue of a new function (0 with cuda_streams=one).
int assign_queue();
/// Queue q's stream (legacy default: null).
cudaStream_t queue_stream(int q);
/// Makes queue `into`'s later work wait, on the device, for q's work queued so far (false when
/// CUDA refused: the device is lost; it throws nothing, for the allocator's deleters).
bool wait_queue(int into, int q) noexcept;
/// The stream every kernel, copy and cuBLAS call of the calling thread is queued on: its queue's
/// (work on one queue is ordered, and a buffer freed by the host may be reused by the next work
/// queued there: cuda_memory.h). While the calling thread records (set_recording), the recording
/// stream instead.
cudaStream_t stream();
/// The stream recordings capture from (cuda_graphs.cpp; made on first use; its work never runs:
/// the recorded graph is launched on stream()).
cudaStream_t recording_stream();
/// Makes stream() and cublas_handle() the recording ones on the calling thread (or not).
void set_recording(bool on);
/// Whether the calling thread records.
bool recording();
/// Held by the thread that records, from the capture's start to its end (cuda_graphs.cpp). What
/// may not happen while any stream captures (a wait for the whole device, freeing device memory)
/// takes it first, so it waits for the capture instead of breaking it.
std::mutex& capture_mutex();
/// What the backend's Recorder did in this process (cuda_graphs.cpp): graphs made, recordings
/// that failed (the steps ran instead) and the last failure's CUDA error, and replays.
struct GraphStats {
  int64_t recorded = 0, failed = 0, replays = 0;
  std::string last_error;
};
GraphStats graph_stats();
/// Counts a recording that a call refused to be part of (a host transfer), with `why`.
void recording_refused(const char* why);
/// Waits for the calling thread's stream (a host transfer's end; HYPATIA_FLAGS=cuda_sync=True after
/// every kernel).
void synchronize();
/// Waits for every queue (what any call queued so far).
void synchronize_queues();
/// After a kernel launch: its launch error, and with cuda_sync=True its execution error.
void after_launch(const char* what);
/// Launches `k` on stream() with one block size and its parameters (checked as after_launch).
void launch(cudaKernel_t k, int grid, int block, void** params, const char* what);

/// NVRTC's functions, from libnvrtc (throws NotImplementedError when it cannot be loaded).
struct Nvrtc {
  decltype(&nvrtcCreateProgram) create;
  decltype(&nvrtcCompileProgram) compile;
  decltype(&nvrtcGetProgramLogSize) log_size;
  decltype(&nvrtcGetProgramLog) log;
  decltype(&nvrtcGetCUBINSize) cubin_size;
  decltype(&nvrtcGetCUBIN) cubin;
  decltype(&nvrtcDestroyProgram) destroy;
  decltype(&nvrtcGetErrorString) error_string;
  decltype(&nvrtcVersion) version;
};
const Nvrtc& nvrtc();
/// Whether libnvrtc can be loaded (it needs no GPU).
bool nvrtc_loadable();

/// cuBLAS's functions, from libcublas, and queue 0's handle.
struct Cublas {
  decltype(&cublasCreate_v2) create;
  decltype(&cublasSetStream_v2) set_stream;
  decltype(&cublasSetMathMode) set_math_mode;
  decltype(&cublasSetPointerMode_v2) set_pointer_mode;
  decltype(&cublasSgemm_v2) sgemm;  // (Gemv and Ger are gemms with a side of 1)
  decltype(&cublasDgemm_v2) dgemm;
  decltype(&cublasSgemmStridedBatched) sgemm_strided_batched;  // (BatchedDot)
  decltype(&cublasDgemmStridedBatched) dgemm_strided_batched;
  decltype(&cublasStrsm_v2) strsm;  // (triangular solves: Linalg's Solve)
  decltype(&cublasDtrsm_v2) dtrsm;
  cublasHandle_t handle = nullptr;
};
const Cublas& cublas();
/// The cuBLAS handle bound to stream(): the calling thread's queue's (one per queue, made when
/// first needed), the recording one while this thread records.
cublasHandle_t cublas_handle();
/// Makes the recording cuBLAS handle now if cuBLAS is in use (a recorder calls it before it
/// starts capturing: creating a handle while capturing could break the capture).
void prepare_cublas_recording();
/// Throws hypatia::Error naming `what` unless `s` is CUBLAS_STATUS_SUCCESS.
void check_cublas(cublasStatus_t s, const char* what);

}  // namespace hypatia::cuda
