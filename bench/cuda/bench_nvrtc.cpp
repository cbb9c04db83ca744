// The cold compile of a function's CUDA modules (issue 13: "slow compilation" is one of Theano's
// pains): NVRTC on each module one after another, as the backend compiled them before, against
// the backend's batch (request_kernel for each, then build_requested_kernels: NVRTC on up to
// compile_threads() threads at once). Needs no GPU: NVRTC compiles for real and a stand-in
// loader takes the CUDA runtime's place (cuda::set_module_loader), so it runs here and on the
// device machine alike. Each round compiles new sources (a salt) into a fresh cache folder.
// Then the warm compile of a whole function (the MLP step) on the CUDA backend against the CPU's,
// and the cost of a module's cache key.
//
//   build/bench/bench_nvrtc [rounds]
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "hypatia/backends/cuda/cuda_api.h"
#include "hypatia/backends/cuda/cuda_codegen.h"
#include "hypatia/backends/cuda/cuda_modules.h"
#include "hypatia/hypatia.h"
#include "hypatia/ops/elemwise.h"
#include "hypatia/testing/emulated_gpu.h"

namespace {

using namespace hypatia;

bool stand_in_load(const std::vector<char>&, cudaLibrary_t* lib) {
  static uintptr_t n = 0;
  *lib = reinterpret_cast<cudaLibrary_t>(++n);
  return true;
}
cudaKernel_t stand_in_kernel(cudaLibrary_t lib, const char*) { return reinterpret_cast<cudaKernel_t>(lib); }

/// Fourteen elementwise modules as the backend generates them (the table prefix and a contiguous
/// kernel each), about an MLP training step's count; `salt` makes each round's sources new.
std::vector<std::string> modules(const std::string& salt) {
  using K = ScalarOpKind;
  const std::vector<std::pair<K, int>> rows = {
      {K::Add, 2}, {K::Sub, 2}, {K::Mul, 2},     {K::TrueDiv, 2}, {K::Tanh, 1},    {K::Exp, 1}, {K::Log, 1},
      {K::Neg, 1}, {K::Sqr, 1}, {K::Maximum, 2}, {K::Minimum, 2}, {K::Sigmoid, 1}, {K::Abs, 1}, {K::Sqrt, 1}};
  std::vector<std::string> out;
  for (const auto& [k, arity] : rows)
    out.push_back(
        "// " + salt + "\n" + cuda::table_prefix() +
        cuda::elementwise_source(
            cuda::elemwise_spec(k, std::vector<DType>(static_cast<size_t>(arity), DType::Float32), DType::Float32),
            "hyp_elem", cuda::ElemKernels::Contiguous));
  return out;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

/// The module key's hash before 2026-11-27: FNV-1a byte by byte (the baseline of the key's cost).
uint64_t fnv1a(const std::string& s) {
  uint64_t h = 14695981039346656037ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

/// function() of the MLP training step (784-500-500-10, batch 256, everything in shared
/// variables) on `backend`, the graph built first (not timed); ms.
double mlp_compile_ms(const std::string& backend) {
  auto values = [](const Shape& shape) { return NDArray::full(shape, DType::Float32, 0.01); };
  const testing::Mlp net =
      testing::mlp(shared(values({256, 784}), "xb"), shared(NDArray::zeros({256}, DType::Int64), "yb"),
                   {784, 500, 500, 10}, [&](const Shape& sh, int, bool) { return values(sh); });
  FunctionOptions o;
  o.backend = backend;
  o.updates = net.sgd(constant(0.01, DType::Float32));
  const auto t0 = std::chrono::steady_clock::now();
  Function f = function({}, {net.cost}, o);
  return 1e3 * seconds_since(t0);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  if (!cuda::nvrtc_loadable()) {
    std::printf("bench_nvrtc: libnvrtc cannot be loaded here\n");
    return 0;
  }
  const int rounds = argc > 1 ? std::max(1, std::atoi(argv[1])) : 3;
  cuda::set_module_loader({stand_in_load, stand_in_kernel, 90});
  const std::string dir =
      (std::filesystem::temp_directory_path() / ("hypatia-bench-nvrtc-" + std::to_string(getpid())));
  setenv("HYPATIA_CACHE_DIR", dir.c_str(), 1);
  double best_serial = 1e9, best_batch = 1e9;
  size_t n = 0;
  for (int r = 0; r < rounds; ++r) {
    // One by one (the backend before the batch): each get_kernel compiles its module now.
    std::vector<std::string> src = modules("serial " + std::to_string(r) + " " + std::to_string(getpid()));
    n = src.size();
    auto t0 = std::chrono::steady_clock::now();
    for (const std::string& s : src) cuda::get_kernel(s, "hyp_elem_c");
    const double serial = seconds_since(t0);
    // The batch: what a function's compile does now.
    src = modules("batch " + std::to_string(r) + " " + std::to_string(getpid()));
    t0 = std::chrono::steady_clock::now();
    std::vector<cuda::KernelRef> refs;
    for (const std::string& s : src) refs.push_back(cuda::request_kernel(s, "hyp_elem_c"));
    cuda::build_requested_kernels();
    for (const auto& k : refs) (void)k.get();
    const double batch = seconds_since(t0);
    std::printf("round %d: one by one %.1f ms, batch %.1f ms\n", r, 1e3 * serial, 1e3 * batch);
    best_serial = std::min(best_serial, serial);
    best_batch = std::min(best_batch, batch);
  }
  // Warm: the modules are in the memory cache (the compile of a function whose kernels a process
  // has built before), so function() costs what the backend does on the host. Shared variables
  // live in the emulated GPU's host memory (its moves are memory copies here).
  testing::install_emulated_gpu();
  std::vector<double> cpu_ms, cuda_ms;
  mlp_compile_ms("cuda");  // builds the modules
  for (int i = 0; i < 21; ++i) {
    cpu_ms.push_back(mlp_compile_ms("cpu"));
    cuda_ms.push_back(mlp_compile_ms("cuda"));
  }
  std::printf(
      "warm compile of the MLP step (function(), median of 21): CUDA backend %.2f ms, CPU backend %.2f ms "
      "(%.2fx)\n",
      median(cuda_ms), median(cpu_ms), median(cuda_ms) / median(cpu_ms));
  const std::string big = modules("key")[0];
  std::vector<double> key_us, fnv_us;
  volatile uint64_t sink = 0;
  for (int i = 0; i < 201; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    sink = sink + cuda::module_key(big, 90).size();
    key_us.push_back(1e6 * seconds_since(t0));
    t0 = std::chrono::steady_clock::now();
    sink = sink + fnv1a(big);
    fnv_us.push_back(1e6 * seconds_since(t0));
  }
  std::printf(
      "module key of a %zu-byte module source (median of 201): %.1f us; FNV-1a byte by byte (the key "
      "before) %.1f us (%.1fx)\n",
      big.size(), median(key_us), median(fnv_us), median(fnv_us) / median(key_us));
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  std::printf(
      "cold compile of %zu elementwise modules (NVRTC, sm_90, best of %d): one by one %.1f ms, "
      "batch on %d threads %.1f ms: %.2fx faster (%d CPUs here)\n",
      n, rounds, 1e3 * best_serial, cuda::compile_threads(), 1e3 * best_batch, best_serial / best_batch,
      static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN)));
}
