// A stand-in GPU for tests on machines without one (CI): host memory behind the CUDA device kind,
// with the copies between it and the host counted, and a device backend, "emulated_gpu", whose
// kernels are the CPU's run on that memory. Placement, the transfers it inserts, device arrays,
// shared variables kept on the device, device arguments and outputs, and the Python views of
// them then work as with a GPU, and tests can count what crossed; no GPU code runs.
//
// While installed it replaces the CUDA backend's memory functions (every Device of the Cuda
// kind, whatever its index); remove() gives them back. Arrays made meanwhile must not be used
// by the real backend afterwards (they are host memory).
#pragma once
#include <cstdint>
#include <cstdlib>
#include <utility>
#include <vector>

namespace hypatia::testing {

inline constexpr const char* kEmulatedGpuBackend = "emulated_gpu";

struct EmulatedGpuCopies {
  int64_t to_device = 0, to_host = 0, on_device = 0;
};

/// Installs the stand-in (idempotent) / gives the Cuda kind its earlier memory functions back.
/// `as_default`: the emulated backend is also the one device=cuda selects (HYPATIA_FLAGS), so
/// that programs and whole test suites written for a GPU run on it unchanged.
void install_emulated_gpu(bool as_default = false);
void remove_emulated_gpu();
/// Copies through the stand-in's memory functions since the process started.
EmulatedGpuCopies emulated_gpu_copies();
/// The waits between queues (backends/device_queues.h) the stand-in's functions needed since the
/// last take: (queue that waits, queue waited for), in order. Each function gets a queue of its
/// own (1 to 15, round robin), as with the CUDA backend's cuda_streams=function.
std::vector<std::pair<int, int>> take_emulated_gpu_queue_waits();

/// install_emulated_gpu() for a scope (a test); left installed where the whole run uses it
/// (HYPATIA_TEST_EMULATED_GPU set: installed as the default at the start).
class EmulatedGpu {
 public:
  EmulatedGpu() : whole_run_(std::getenv("HYPATIA_TEST_EMULATED_GPU") != nullptr) { install_emulated_gpu(); }
  ~EmulatedGpu() {
    if (!whole_run_) remove_emulated_gpu();
  }
  EmulatedGpu(const EmulatedGpu&) = delete;
  EmulatedGpu& operator=(const EmulatedGpu&) = delete;

 private:
  bool whole_run_;
};

}  // namespace hypatia::testing
