// The CUDA backend's modules (internal to backends/cuda): a generated source compiled by NVRTC
// for the driven device, cached in memory by its source and on disk by a hash of source, GPU
// architecture and NVRTC version (written to a temporary file and renamed into place, so that
// readers never see half a file; no lock; an entry that fails to load is compiled again and
// replaced). A function's modules are built together when its kernels are made, NVRTC running on
// several threads at once (request_kernel, build_requested_kernels).
#pragma once

#include <cuda_runtime_api.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace hypatia::cuda {

/// NVRTC's cubin for `source` and `arch` (90 = sm_90). Throws hypatia::Error with NVRTC's log on a
/// compile error (an internal error: the generator wrote bad code). Needs no GPU.
std::vector<char> compile_cubin(const std::string& source, int arch);
/// NVRTC's front end only (no code generated, -fdevice-syntax-only): whether `source` is valid
/// CUDA C++ (throws as compile_cubin otherwise). For tests of the generator, which need no GPU.
void check_source(const std::string& source);
/// The kernel `name` of the module compiled from `source` for the driven device (memory cache, then disk
/// cache, then NVRTC), built now on the calling thread. `memory_cache` false: the module is loaded
/// again from disk (tests).
cudaKernel_t get_kernel(const std::string& source, const std::string& name, bool memory_cache = true);

struct ModuleJob;
/// A kernel whose module may not be built yet (request_kernel). A function's modules are built
/// together when its kernels are all made (build_requested_kernels: NVRTC on several threads),
/// or, at the latest, by the first get() (on the calling thread).
class KernelRef {
 public:
  KernelRef() = default;
  /// The kernel (null for a default-constructed ref); builds its module if no one has yet, and
  /// throws the module's error (an NVRTC compile error, a module that cannot be loaded).
  cudaKernel_t get() const {
    if (!s_) return nullptr;
    if (cudaKernel_t k = s_->kernel.load(std::memory_order_acquire)) return k;
    return resolve();
  }
  operator cudaKernel_t() const { return get(); }  // NOLINT: launches take the kernel as it is

 private:
  friend KernelRef request_kernel(const std::string& source, const std::string& name);
  struct State {
    std::shared_ptr<ModuleJob> job;
    std::string name;
    std::atomic<cudaKernel_t> kernel{nullptr};
  };
  cudaKernel_t resolve() const;
  std::shared_ptr<State> s_;
};

/// The kernel `name` of the module of `source`, as get_kernel, without building the module now:
/// found in the memory cache it is resolved at once; otherwise its module joins the calling
/// thread's requests (one per module, whichever threads and refs ask for it).
KernelRef request_kernel(const std::string& source, const std::string& name);
/// Builds the modules the calling thread requested (read from the disk cache, or compiled by
/// NVRTC on up to compile_threads() threads at once), and throws the first one's error. The
/// CUDA backend calls it when a function's kernels are made (Backend::Description::kernels_made):
/// a function's cold compile pays NVRTC's time once per module divided among the cores, its
/// errors raise from function(), and no module is loaded during a call.
void build_requested_kernels();
/// The threads build_requested_kernels compiles on: the CPUs this process may run on, at most 8.
int compile_threads();

/// How modules become kernels: the CUDA runtime's library loading (the default), or stand-ins,
/// for tests and benchmarks of the caches and of the parallel build on a machine without a GPU.
struct ModuleLoader {
  bool (*load)(const std::vector<char>& cubin, cudaLibrary_t* lib) = nullptr;
  cudaKernel_t (*kernel)(cudaLibrary_t lib, const char* name) = nullptr;
  int arch = 0;  // the architecture the stand-ins compile for (the default asks the driven device)
};
/// Replaces the loader (a default-constructed one: the CUDA runtime's); returns the previous one.
ModuleLoader set_module_loader(ModuleLoader loader);
/// A module's cache key (memory and disk): 128 bits of a hash of the architecture, NVRTC's version
/// and the source, in hex.
std::string module_key(const std::string& source, int arch);

/// Counters of the module caches (tests and the profiler).
/// Each request is one memory hit (the module loaded or being built), disk hit or compile.
struct ModuleCacheStats {
  int64_t memory_hits = 0, disk_hits = 0, compiles = 0, disk_writes = 0, disk_rejects = 0;
  double compile_seconds = 0;  // summed over the modules (several compile at once)
};
ModuleCacheStats module_cache_stats();
/// Where compiled modules are kept: $HYPATIA_CACHE_DIR, else $XDG_CACHE_HOME/hypatia, else
/// ~/.cache/hypatia; modules in its subfolder cuda/.
std::string module_cache_dir();

}  // namespace hypatia::cuda
