// The CUDA backend's Recorder (backends/backend.h): CUDA graphs by stream capture.
//
// begin() captures from a stream of its own (recording_stream), never the one kernels run on,
// so that work other threads queue meanwhile runs as usual and is not captured; the capturing
// thread's stream() and cuBLAS handle point at it (cuda_api.h: set_recording). Capture is
// relaxed (the kernels' first-use allocations call cudaMalloc) and one thread records at a time
// (another's begin() says not now). Every allocation made while recording is kept by the
// recording (cuda_memory.h: set_allocation_sink), so no buffer a replay writes goes back to the
// cache while the recording lives. Replays launch the instantiated graph on stream(): ordered
// after the work queued before, as the steps' own launches would be.
#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "hypatia/backends/backend.h"
#include "hypatia/backends/cuda/cuda_api.h"
#include "hypatia/backends/cuda/cuda_kernel_util.h"
#include "hypatia/backends/cuda/cuda_memory.h"
#include "hypatia/core/config.h"

namespace hypatia::cuda {
namespace {

std::atomic<int64_t> g_recorded{0}, g_failed{0}, g_replays{0};
std::mutex g_error_mu;
std::string g_last_error;  // the last failure's CUDA error (GraphStats)

void count_failure(const std::string& why) {
  ++g_failed;
  std::lock_guard<std::mutex> lock(g_error_mu);
  g_last_error = why;
}
void count_failure(cudaError_t e) {
  count_failure(e == cudaSuccess ? std::string("no graph was captured") : std::string(cudaGetErrorName(e)));
}

class CudaRecording final : public Recording {
 public:
  CudaRecording(cudaGraphExec_t exec, std::vector<std::shared_ptr<void>> buffers)
      : exec_(exec), buffers_(std::move(buffers)) {}
  ~CudaRecording() override {
    // A launch still queued finishes first (the executable is freed when it completes); the
    // buffers return to the cache of the queue they were allocated on, the function's, where its
    // replays were queued (a nested call's replays on another queue are ordered with it:
    // CallQueues::enter).
    DeviceScope on_device;  // (dropped outside calls too)
    if (cudaGraphExecDestroy(exec_) != cudaSuccess) cudaGetLastError();
  }
  void replay() override {
    check(cudaGraphLaunch(exec_, stream()), "cudaGraphLaunch (a replay of recorded kernels)");
    after_launch("a replay of recorded kernels (CUDA graph)");
    ++g_replays;
  }

 private:
  cudaGraphExec_t exec_;
  std::vector<std::shared_ptr<void>> buffers_;
};

class CudaRecorder final : public Recorder {
 public:
  bool enabled() const override { return config().cuda_graphs && !config().cuda_sync; }

  bool begin() override {
    if (!enabled() || !available()) return false;
    std::mutex& mu = capture_mutex();
    if (!mu.try_lock()) return false;
    cudaStream_t s = nullptr;
    try {
      s = recording_stream();
      // The libraries' recording handles, made before capturing (not while).
      prepare_cublas_recording();
      prepare_cudnn_recording();
    } catch (const Error&) {
      mu.unlock();
      return false;
    }
    if (cudaStreamBeginCapture(s, cudaStreamCaptureModeRelaxed) != cudaSuccess) {
      cudaGetLastError();
      mu.unlock();
      return false;
    }
    buffers_.clear();
    set_allocation_sink(&buffers_);
    set_recording(true);
    return true;
  }

  std::unique_ptr<Recording> end(bool keep) override {
    set_recording(false);
    set_allocation_sink(nullptr);
    cudaGraph_t graph = nullptr;
    cudaError_t e = cudaStreamEndCapture(recording_stream(), &graph);
    std::vector<std::shared_ptr<void>> buffers;
    buffers.swap(buffers_);
    capture_mutex().unlock();
    if (e != cudaSuccess || !graph || !keep) {
      // A capture a call broke (a synchronisation, say) counts as failed, also when the steps
      // threw; a user's error thrown before any CUDA call leaves a valid capture, dropped.
      if (e != cudaSuccess || keep) count_failure(e);
      if (e != cudaSuccess) cudaGetLastError();
      if (graph) cudaGraphDestroy(graph);
      return nullptr;
    }
    cudaGraphExec_t exec = nullptr;
    e = cudaGraphInstantiate(&exec, graph, 0);
    cudaGraphDestroy(graph);
    if (e != cudaSuccess) {
      count_failure(e);
      cudaGetLastError();
      return nullptr;
    }
    ++g_recorded;
    return std::make_unique<CudaRecording>(exec, std::move(buffers));
  }

 private:
  // (capture_mutex() is held from begin() to end(), by the recording thread)
  std::vector<std::shared_ptr<void>> buffers_;
};

}  // namespace

std::shared_ptr<Recorder> make_cuda_recorder() { return std::make_shared<CudaRecorder>(); }

void recording_refused(const char* why) { count_failure(std::string(why)); }

GraphStats graph_stats() {
  std::lock_guard<std::mutex> lock(g_error_mu);
  return GraphStats{g_recorded.load(), g_failed.load(), g_replays.load(), g_last_error};
}

}  // namespace hypatia::cuda
