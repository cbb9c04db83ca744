// What the device, transfer and placement tests (test_backend.cpp, test_placement.cpp) share: the
// emulated GPU's copy counters, and the device this process drives.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <string>

#include "hypatia/core/device.h"
#include "hypatia/testing/emulated_gpu.h"

namespace hypatia::testing {

/// Copies through the emulated GPU's memory so far (testing/emulated_gpu.h): to the device, to
/// the host, on the device.
struct Copies {
  int64_t in, out, on;
};
inline Copies copies() {
  const auto c = emulated_gpu_copies();
  return {c.to_device, c.to_host, c.on_device};
}

// HYPATIA_TEST_EMULATED_GPU=1 (with HYPATIA_FLAGS=device=cuda1: tests/cpp/CMakeLists.txt runs the
// Devices, Transfers and Placement tests so): the emulated GPU for the whole run, as the default
// device backend, so that the device the flag names is the one every function and array uses.
inline const bool kWholeRunOnTheEmulatedGpu = [] {
  if (std::getenv("HYPATIA_TEST_EMULATED_GPU")) install_emulated_gpu(/*as_default=*/true);
  return true;
}();

/// The GPU this process drives, as messages name it ("cuda:0"; "cuda:1" in the device=cuda1 run
/// of these tests: tests/cpp/CMakeLists.txt), and another one, which it refuses.
inline std::string gpu_name() { return Device::cuda().str(); }
inline Device other_gpu() { return Device::cuda(Device::cuda().index == 0 ? 1 : 0); }

}  // namespace hypatia::testing
