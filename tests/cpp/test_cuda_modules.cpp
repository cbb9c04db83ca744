// The CUDA backend's module caches and their parallel build (backends/cuda/cuda_codegen.h:
// request_kernel, build_requested_kernels), run here without a GPU: NVRTC compiles for real, and
// a stand-in loader (cuda::set_module_loader) takes the place of the CUDA runtime's library
// loading. test_cuda.cpp runs the same caches on a GPU. With device memory stood in by host
// memory too (the emulated GPU's), whole functions compile for the CUDA backend: its placement,
// fusion, kernels and generated modules for every sample of the OpInfo table, in CI.
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <set>
#include <thread>

#include "backend_conformance.h"
#include "graph_fuzz.h"
#include "hypatia/ops/linalg.h"
#include "hypatia/ops/scan.h"
#include "hypatia/testing/emulated_gpu.h"
#include "test_cuda_util.h"

namespace hypatia {
namespace {

/// What the stand-in loader saw: the threads that loaded modules, and how many it loaded. With
/// `rendezvous` n > 1, a load waits (10 s at most) until n threads have loaded: a build on one
/// thread would wait out the time and show one thread.
struct LoaderLog {
  std::mutex mu;
  std::condition_variable cv;
  std::set<std::thread::id> threads;
  int loads = 0, rejected = 0;
  size_t rendezvous = 0;
};
LoaderLog& log() {
  static LoaderLog l;
  return l;
}

/// Accepts an ELF image (a cubin) and refuses anything else, as the runtime does a corrupt one.
bool stand_in_load(const std::vector<char>& cubin, cudaLibrary_t* lib) {
  LoaderLog& l = log();
  std::lock_guard<std::mutex> lock(l.mu);
  if (cubin.size() < 4 || std::memcmp(cubin.data(),
                                      "\x7f"
                                      "ELF",
                                      4) != 0) {
    ++l.rejected;
    return false;
  }
  l.threads.insert(std::this_thread::get_id());
  *lib = reinterpret_cast<cudaLibrary_t>(static_cast<uintptr_t>(++l.loads));
  l.cv.notify_all();
  std::unique_lock<std::mutex> wait(l.mu, std::adopt_lock);
  l.cv.wait_for(wait, std::chrono::seconds(10), [&] { return l.threads.size() >= l.rendezvous; });
  wait.release();
  return true;
}

/// A kernel handle that names its library and kernel: (library << 32) + a hash of the name.
cudaKernel_t stand_in_kernel(cudaLibrary_t lib, const char* name) {
  const auto h = static_cast<uint32_t>(std::hash<std::string>{}(name) | 1);
  return reinterpret_cast<cudaKernel_t>((reinterpret_cast<uintptr_t>(lib) << 32) + h);
}
uintptr_t library_of(cudaKernel_t k) { return reinterpret_cast<uintptr_t>(k) >> 32; }

/// The stand-in loader and a fresh cache folder for one test; both undone after it.
class StandInModules {
 public:
  StandInModules() {
    previous_ = cuda::set_module_loader({stand_in_load, stand_in_kernel, 90});
    dir_ = std::filesystem::temp_directory_path() /
           ("hypatia-modules-" + std::to_string(::getpid()) + "-" + std::to_string(++serial_));
    setenv("HYPATIA_CACHE_DIR", dir_.c_str(), 1);
    std::lock_guard<std::mutex> lock(log().mu);
    log().threads.clear();
    log().rendezvous = 0;
  }
  ~StandInModules() {
    cuda::set_module_loader(previous_);
    unsetenv("HYPATIA_CACHE_DIR");
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  const std::filesystem::path& dir() const { return dir_; }
  /// A small kernel `name` whose source no other test (or run of this one) has asked for.
  std::string source(const std::string& name, const std::string& body = "x[threadIdx.x] += 1.0f;") const {
    return "// " + dir_.string() + "\nextern \"C\" __global__ void " + name + "(float* x) { " + body + " }\n";
  }

 private:
  cuda::ModuleLoader previous_;
  std::filesystem::path dir_;
  static inline int serial_ = 0;
};

TEST(CudaModules, ModuleKeysDifferForEveryByteLengthAndArchitecture) {
  REQUIRE_NVRTC();
  // A source as long as a generated module's (the scalar-op table first): one byte changed
  // anywhere (every position in the last words, where the hash's tail is), a byte more or less
  // (zeros too), another architecture: each its own key, and the same key every time.
  std::string base;
  for (int i = 0; base.size() < 25000; ++i)
    base += "x[" + std::to_string(i) + "] = y[" + std::to_string(i % 7) + "];\n";
  std::set<std::string> keys;
  size_t n = 0;
  auto add = [&](const std::string& src, int arch) {
    ++n;
    keys.insert(cuda::module_key(src, arch));
  };
  add(base, 90);
  add(base, 80);
  add(base, 100);
  for (size_t at = 0; at < base.size(); at += at + 40 < base.size() ? 97 : 1)
    for (char c : {'#', '\0'}) {
      std::string v = base;
      if (v[at] == c) continue;
      v[at] = c;
      add(v, 90);
    }
  for (size_t len = base.size() - 17; len < base.size(); ++len) add(base.substr(0, len), 90);
  for (size_t zeros : {1, 2, 7, 8, 9}) add(base + std::string(zeros, '\0'), 90);
  add(base + " ", 90);
  add("", 90);
  add(std::string(1, '\0'), 90);
  add(std::string(8, '\0'), 90);
  EXPECT_EQ(keys.size(), n);
  EXPECT_EQ(cuda::module_key(base, 90), cuda::module_key(std::string(base), 90));
  EXPECT_EQ(cuda::module_key(base, 90).size(), 32u);
}

TEST(CudaModules, ABatchCompilesEachModuleOnceOnSeveralThreadsAndTheCachesServeItAfter) {
  REQUIRE_NVRTC();
  StandInModules m;
  // Four modules, the first with two kernels; one kernel asked for twice.
  const std::string two = m.source("k_a") + "extern \"C\" __global__ void k_b(float* x) { x[0] = 2.0f; }\n";
  const cuda::ModuleCacheStats s0 = cuda::module_cache_stats();
  std::vector<cuda::KernelRef> refs = {cuda::request_kernel(two, "k_a"),
                                       cuda::request_kernel(two, "k_b"),
                                       cuda::request_kernel(m.source("k_c"), "k_c"),
                                       cuda::request_kernel(m.source("k_d"), "k_d"),
                                       cuda::request_kernel(m.source("k_e"), "k_e"),
                                       cuda::request_kernel(m.source("k_e"), "k_e")};
  const cuda::ModuleCacheStats s1 = cuda::module_cache_stats();
  EXPECT_EQ(s1.compiles, s0.compiles);            // nothing built yet
  EXPECT_EQ(s1.memory_hits, s0.memory_hits + 2);  // k_b and the second k_e join a requested module
  const size_t threads = std::min<size_t>(cuda::compile_threads(), 2);
  {
    std::lock_guard<std::mutex> lock(log().mu);
    log().rendezvous = threads;  // each load waits for a second thread, where there can be one
  }
  cuda::build_requested_kernels();
  const cuda::ModuleCacheStats s2 = cuda::module_cache_stats();
  EXPECT_EQ(s2.compiles, s1.compiles + 4);
  EXPECT_EQ(s2.disk_writes, s1.disk_writes + 4);
  EXPECT_EQ(s2.disk_hits, s1.disk_hits);
  {
    std::lock_guard<std::mutex> lock(log().mu);
    EXPECT_GE(log().threads.size(), threads);
    log().rendezvous = 0;
  }
  // Every ref resolves to its own kernel, of its module's library.
  std::set<cudaKernel_t> distinct;
  for (const auto& r : refs) distinct.insert(r.get());
  EXPECT_EQ(distinct.size(), 5u);
  EXPECT_EQ(library_of(refs[0].get()), library_of(refs[1].get()));
  EXPECT_NE(refs[0].get(), refs[1].get());
  EXPECT_EQ(refs[4].get(), refs[5].get());
  EXPECT_EQ(cuda::module_cache_stats().compiles, s2.compiles);  // get() built nothing more
  // Asked again: a memory hit, resolved at once; from disk when the memory cache is passed by.
  const cuda::KernelRef again = cuda::request_kernel(m.source("k_c"), "k_c");
  EXPECT_EQ(cuda::module_cache_stats().memory_hits, s2.memory_hits + 1);
  EXPECT_EQ(again.get(), refs[2].get());
  cuda::get_kernel(m.source("k_d"), "k_d", /*memory_cache=*/false);
  const cuda::ModuleCacheStats s3 = cuda::module_cache_stats();
  EXPECT_EQ(s3.disk_hits, s2.disk_hits + 1);
  EXPECT_EQ(s3.compiles, s2.compiles);
  cuda::build_requested_kernels();  // nothing left to build
  EXPECT_EQ(cuda::module_cache_stats().compiles, s3.compiles);
}

TEST(CudaModules, ACompileErrorRaisesFromTheBatchAndTheOtherModulesStillBuild) {
  REQUIRE_NVRTC();
  StandInModules m;
  const std::string bad = m.source("k_bad", "x[threadIdx.x] = undeclared_name;");
  const cuda::KernelRef good = cuda::request_kernel(m.source("k_good"), "k_good");
  const cuda::KernelRef broken = cuda::request_kernel(bad, "k_bad");
  const cuda::ModuleCacheStats s0 = cuda::module_cache_stats();
  EXPECT_ERROR(InternalError, cuda::build_requested_kernels(), "undeclared_name");
  EXPECT_EQ(cuda::module_cache_stats().compiles, s0.compiles + 1);  // the good one
  EXPECT_NE(good.get(), nullptr);
  EXPECT_ERROR(InternalError, broken.get(), "NVRTC could not compile a generated kernel");
  // Not cached as broken: asked again, it is compiled again (and fails again).
  const cuda::KernelRef retry = cuda::request_kernel(bad, "k_bad");
  EXPECT_ERROR(InternalError, retry.get(), "undeclared_name");
}

TEST(CudaModules, ARefNeverBuiltInABatchBuildsItsModuleOnFirstUse) {
  REQUIRE_NVRTC();
  StandInModules m;
  const cuda::KernelRef ref = cuda::request_kernel(m.source("k_lazy"), "k_lazy");
  const int64_t compiles = cuda::module_cache_stats().compiles;
  EXPECT_NE(ref.get(), nullptr);
  EXPECT_EQ(cuda::module_cache_stats().compiles, compiles + 1);
  cuda::build_requested_kernels();  // already built: nothing to do
  EXPECT_EQ(cuda::module_cache_stats().compiles, compiles + 1);
  EXPECT_EQ(cuda::KernelRef().get(), nullptr);
}

TEST(CudaModules, ThreadsAskingForOneModuleAtOnceCompileItOnce) {
  REQUIRE_NVRTC();
  StandInModules m;
  const std::string src = m.source("k_shared");
  const int64_t compiles = cuda::module_cache_stats().compiles;
  std::vector<cudaKernel_t> got(4);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      const cuda::KernelRef ref = cuda::request_kernel(src, "k_shared");
      cuda::build_requested_kernels();
      got[t] = ref.get();
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(cuda::module_cache_stats().compiles, compiles + 1);
  for (cudaKernel_t k : got) EXPECT_EQ(k, got[0]);
}

TEST(CudaModules, ACorruptCacheEntryIsCompiledAgainAndReplaced) {
  REQUIRE_NVRTC();
  StandInModules m;
  const std::string src = m.source("k_entry");
  cuda::get_kernel(src, "k_entry");
  const auto dir = m.dir() / "cuda";
  std::vector<std::filesystem::path> entries;
  for (const auto& e : std::filesystem::directory_iterator(dir)) entries.push_back(e.path());
  ASSERT_EQ(entries.size(), 1u);
  // A whole entry whose module the loader refuses (its header intact, its cubin not an image).
  {
    std::fstream f(entries[0], std::ios::binary | std::ios::in | std::ios::out);
    f.seekp(16);
    f.write("garbage!", 8);
  }
  const cuda::ModuleCacheStats s0 = cuda::module_cache_stats();
  cuda::get_kernel(src, "k_entry", /*memory_cache=*/false);
  const cuda::ModuleCacheStats s1 = cuda::module_cache_stats();
  EXPECT_EQ(s1.disk_rejects, s0.disk_rejects + 1);
  EXPECT_EQ(s1.compiles, s0.compiles + 1);
  cuda::get_kernel(src, "k_entry", /*memory_cache=*/false);
  EXPECT_EQ(cuda::module_cache_stats().disk_hits, s1.disk_hits + 1);  // replaced
  // A truncated entry is no entry: compiled again.
  std::filesystem::resize_file(entries[0], 20);
  cuda::get_kernel(src, "k_entry", /*memory_cache=*/false);
  EXPECT_EQ(cuda::module_cache_stats().compiles, s1.compiles + 1);
}

/// What compiling for the CUDA backend without a GPU needs, for one test: the stand-in loader,
/// device arrays in host memory (constants placed on the device), and no DebugMode checks (refused
/// on a device backend).
struct CompilingWithoutAGpu {
  StandInModules modules;
  testing::EmulatedGpu memory;
  testing::DebugChecks no_debug{false};
};

TEST(CudaCompile, EveryOpInfoSampleAndGradientCompilesForTheCudaBackendWithoutAGpu) {
  REQUIRE_NVRTC();
  if (cuda::available()) GTEST_SKIP() << "a GPU is present: CudaRun.OpInfo* compile and run the table on it";
  // (Three minutes under the sanitizers, for code the Release suite runs and the sanitizers see
  // in the other CudaCompile tests.)
  if (testing::kSanitizerBuild) GTEST_SKIP() << "run by the Release suite";
  CompilingWithoutAGpu scope;
  // Compiled only: the same compile errors as the CPU's (none where the CPU compiles), placement
  // consistent with every kernel's traits (Program::finalize), every kernel made and every
  // generated module compiled by NVRTC.
  const cuda::ModuleCacheStats s0 = cuda::module_cache_stats();
  const testing::Conformance fwd = testing::compare_op_infos_with_cpu("cuda", /*run=*/false);
  EXPECT_EQ(fwd.failures, "");
  EXPECT_GT(fwd.compared, 3000);
  EXPECT_GT(fwd.on_device, 3000);
  const testing::Conformance grads = testing::compare_op_info_gradients_with_cpu("cuda", /*run=*/false);
  EXPECT_EQ(grads.failures, "");
  EXPECT_GT(grads.compared, 1000);
  EXPECT_GT(grads.on_device, 3000);
  const cuda::ModuleCacheStats s1 = cuda::module_cache_stats();
  EXPECT_GT(s1.compiles - s0.compiles, 50);
  std::printf(
      "OpInfo compiled for the CUDA backend: %d samples (%d nodes on it), %d gradients (%d nodes), %lld "
      "modules (NVRTC %.1f s)\n",
      fwd.compared, fwd.on_device, grads.compared, grads.on_device, static_cast<long long>(s1.compiles - s0.compiles),
      s1.compile_seconds - s0.compile_seconds);
}

TEST(CudaCompile, LinalgIsPlacedOnTheGpuWhereCusolverHasIt) {
  REQUIRE_NVRTC();
  if (cuda::available()) GTEST_SKIP() << "a GPU is present: CudaRun.CholeskySolveInverseDetAndEigh... runs them";
  CompilingWithoutAGpu scope;
  using testing::on;
  Var a = matrix("a", DType::Float64), b = matrix("b", DType::Float64);
  const cuda::ModuleCacheStats s0 = cuda::module_cache_stats();
  Function f = function({a, b},
                        {cholesky(a), solve(a, b), solve_triangular(a, b, true), matrix_inverse(a), det(a),
                         solve(a, b, SolveStructure::PositiveDefinite), expm(a), eigh(a)[0], eigvalsh(a, b), svd(a)[1],
                         svd(a, false, false)[0], pinv(a), qr(a)[0], qr(a, "complete")[1], qr(a, "r")[0],
                         qr(a, "raw")[0], lstsq(a, b, constant(NDArray::scalar(-1.0, DType::Float64)))[0], eig(a)[0]},
                        on("cuda"));
  const cuda::ModuleCacheStats s1 = cuda::module_cache_stats();
  // The helpers' module requested when the kernels were made: compiled by NVRTC, or found.
  EXPECT_GT(s1.compiles + s1.disk_hits + s1.memory_hits, s0.compiles + s0.disk_hits + s0.memory_hits);
  const auto nodes = f.toposort();
  const auto devices = f.node_devices();
  // (Where libcusolver cannot be opened, only the triangular solve, through cuBLAS, is on the GPU.)
  const bool solver = cuda::cusolver_loadable(nullptr), geev = cuda::cusolver_has_geev();
  int on_gpu = 0, on_host = 0;
  for (size_t i = 0; i < nodes.size(); ++i)
    if (const auto* l = dynamic_cast<const Linalg*>(nodes[i]->op.get())) {
      const bool triangular = l->kind == LinalgKind::Solve && l->attrs.structure == SolveStructure::Triangular;
      const bool gpu = (l->kind != LinalgKind::Eig || geev) && (solver || triangular);
      EXPECT_EQ(devices[i], gpu ? Device::cuda() : Device::host()) << l->name();
      (gpu ? on_gpu : on_host)++;
    }
  EXPECT_EQ(on_gpu, solver ? (geev ? 18 : 17) : 1);
  EXPECT_EQ(on_host, solver ? (geev ? 0 : 1) : 17);
}

TEST(CudaCompile, TheSeedsTheMlpStepAndAnRnnArePlacedForTheCudaBackendWithoutAGpu) {
  REQUIRE_NVRTC();
  if (cuda::available()) GTEST_SKIP() << "a GPU is present: CudaRun.* compile and run these on it";
  CompilingWithoutAGpu scope;
  using testing::on;
  using testing::transfers;
  // Seed 000: 4, 3, 2 and 0 transfers per call as the operands become shared variables.
  auto f32 = [](const Shape& sh, uint64_t seed) { return testing::seeded_array(sh, DType::Float32, seed); };
  Var m = matrix("m", DType::Float32), x = matrix("x", DType::Float32), b = matrix("b", DType::Float32);
  Var ms = shared(f32({8, 8}, 1), "ms"), xs = shared(f32({8, 8}, 2), "xs"), bs = shared(f32({8, 8}, 3), "bs");
  EXPECT_EQ(transfers(function({m, x, b}, {add(dot(m, x), b)}, on("cuda"))), 4);
  EXPECT_EQ(transfers(function({x, b}, {add(dot(ms, x), b)}, on("cuda"))), 3);
  EXPECT_EQ(transfers(function({b}, {add(dot(ms, xs), b)}, on("cuda"))), 2);
  EXPECT_EQ(transfers(function({}, {Out(device_from_host(add(dot(ms, xs), bs), Device::cuda()), true)}, on("cuda"))),
            0);
  // The MLP training step of bench_cuda (batch and labels in shared variables, the cost kept on
  // the device): every node on the GPU but the shape entry the mean divides by (the batch's
  // size), which the host reads; one transfer per call, that count (its cast and the division
  // run on the device).
  Var xb = shared(f32({16, 12}, 4), "xb");
  Var yb = shared(NDArray::zeros({16}, DType::Int64), "yb");
  const testing::Mlp net = testing::mlp(xb, yb, {12, 8, 8, 3}, [&](const Shape& sh, int layer, bool is_bias) {
    return f32(sh, (is_bias ? 20 : 10) + layer);
  });
  FunctionOptions o = on("cuda");
  o.updates = net.sgd(constant(0.01, DType::Float32));
  Function step = function({}, {Out(device_from_host(net.cost, Device::cuda()), true)}, o);
  const auto nodes = step.toposort();
  const auto devices = step.node_devices();
  int host_nodes = 0;
  for (size_t i = 0; i < nodes.size(); ++i) {
    const Apply& n = *nodes[i];
    if (n.op->moves_between_devices() || devices[i] == Device::cuda()) continue;
    ++host_nodes;
    EXPECT_TRUE(n.nout() == 1 && n.output_ptr(0)->type.ndim() == 0 && is_integer(n.output_ptr(0)->type.dtype))
        << n.op->name() << " runs on the host";
  }
  EXPECT_GE(host_nodes, 1);
  EXPECT_EQ(transfers(step), 1) << step.debugprint();
  // The loss and its gradient are one kernel each (the last layer's bias added in the first), and
  // no Alloc, scatter-add or label check of their own: 23 kernels on the device in all (5 dot, 3
  // Gemm, 4 Sum, 8 fused loops, the cast of the count, the loss and its gradient), and the count's upload.
  int device_kernels = 0, xent = 0;
  for (size_t i = 0; i < nodes.size(); ++i) {
    const std::string name = nodes[i]->op->name();
    EXPECT_TRUE(name != "Alloc" && name.find("AdvancedIncSubtensor") == std::string::npos && name != "CheckLabels")
        << name << " in the step";
    xent += name.rfind("CrossentropySoftmax1HotWithBias", 0) == 0;
    device_kernels += devices[i] == Device::cuda() && nodes[i]->op->view_map().empty();
  }
  EXPECT_EQ(xent, 2) << step.debugprint();
  EXPECT_EQ(device_kernels, 23) << step.debugprint();
  // Recorded as CUDA graphs: the host's shape arithmetic is scheduled first and the count's
  // transfer (a value computed from shapes, keyed by its bytes) is recorded with the device
  // work, so a call replays two runs: the step's computation, then the shared variables'
  // updates (the call checks them in between).
  const auto runs = step.recorded_runs();
  ASSERT_EQ(runs.size(), 2u) << step.debugprint();
  EXPECT_EQ(runs[0].first, static_cast<size_t>(host_nodes));
  EXPECT_EQ(runs[0].second, runs[1].first);
  EXPECT_EQ(runs[1].second, nodes.size());
  // A learning rate passed on each call may change on each: its transfer runs before the run,
  // which reads it in device memory (a recording keyed by it might never replay).
  Var lr = scalar("lr", DType::Float32);
  FunctionOptions o2 = on("cuda");
  o2.updates = net.sgd(lr);
  Function step2 = function({lr}, {Out(device_from_host(net.cost, Device::cuda()), true)}, o2);
  const auto nodes2 = step2.toposort();
  const auto runs2 = step2.recorded_runs();
  int lr_transfers = 0;
  for (size_t i = 0; i < nodes2.size(); ++i) {
    if (!dynamic_cast<const DeviceFromHost*>(nodes2[i]->op.get())) continue;
    const bool from_lr = nodes2[i]->inputs[0]->name == "lr";
    lr_transfers += from_lr;
    bool recorded = false;
    for (auto [b, e] : runs2) recorded = recorded || (b <= i && i < e);
    EXPECT_EQ(recorded, !from_lr) << i << ": " << nodes2[i]->op->name() << " of " << nodes2[i]->inputs[0]->str();
  }
  EXPECT_EQ(lr_transfers, 1);
  EXPECT_EQ(runs2.size(), 2u) << step2.debugprint();
  // A mean over rows alone (CudaRun.ACountComputedFromShapes... runs it): one run, the count's
  // upload in it, after the host's arithmetic.
  Var xm = shared(f32({8, 6}, 5), "xm");
  Var ym = exp(mul(mean(xm, std::vector<int>{0}), constant(3.0, DType::Float32)));
  Function rows = function({}, {Out(device_from_host(ym, Device::cuda()), true)}, on("cuda"));
  const auto rows_nodes = rows.toposort();
  const auto rows_devices = rows.node_devices();
  const auto rows_runs = rows.recorded_runs();
  ASSERT_EQ(rows_runs.size(), 1u) << rows.debugprint();
  for (size_t i = 0; i < rows_nodes.size(); ++i)
    EXPECT_EQ(i >= rows_runs[0].first, rows_nodes[i]->op->moves_between_devices() || rows_devices[i] == Device::cuda())
        << i << ": " << rows_nodes[i]->op->name();
  // An RNN: the scan runs on the device, its body compiled for it.
  Var W = shared(f32({6, 6}, 30), "W");
  Var seq = variable(TensorType(DType::Float32, {false, false}), "seq");
  Var h0 = variable(TensorType(DType::Float32, {false}), "h0");
  Var U = variable(TensorType(DType::Float32, {false, false}), "U");
  auto outs = scan([](const std::vector<Var>& a) { return std::vector<Var>{tanh(dot(a[2], a[1]) + dot(a[3], a[0]))}; },
                   {seq}, {h0}, {W, U});
  Function rnn = function({seq, h0, U}, {outs[0]}, on("cuda"));
  int scans = 0;
  for (const auto& n : rnn.toposort())
    if (n->op->name() == "Scan") {
      ++scans;
      EXPECT_EQ(get_backend("cuda").provider(*n)->name(), "cuda");
    }
  EXPECT_EQ(scans, 1);
}

TEST(CudaCompile, RandomGraphsCompileForTheCudaBackendWhereTheyCompileForTheCpu) {
  // The graph fuzzer's graphs (every op family, scan, ifelse, gradients, shared updates) compiled
  // for the CUDA backend without running: its rewrites, placement and kernels must take every
  // graph the CPU's take. HYPATIA_FUZZ_GRAPHS=N runs more.
  REQUIRE_NVRTC();
  if (cuda::available()) GTEST_SKIP() << "a GPU is present";
  CompilingWithoutAGpu scope;
  const char* env = std::getenv("HYPATIA_FUZZ_GRAPHS");
  const uint64_t n = env && *env ? std::strtoull(env, nullptr, 10) : (testing::kSanitizerBuild ? 10 : 40);
  int compiled = 0, failures = 0;
  for (uint64_t seed = 1; seed <= n && failures < 5; ++seed) {
    testing::FuzzSource src(seed);
    const testing::FuzzGraph g = testing::build_fuzz_graph(src);
    auto compile = [&](const std::string& backend) -> std::string {
      FunctionOptions o;
      o.backend = backend;
      o.on_unused_input = "ignore";
      o.updates = g.updates;
      try {
        function(std::vector<In>(g.inputs.begin(), g.inputs.end()),
                 std::vector<Out>(g.outputs.begin(), g.outputs.end()), o);
      } catch (const std::exception& e) {
        return e.what();
      }
      return "";
    };
    const std::string cpu = compile("cpu");
    if (!cpu.empty()) continue;  // (a graph the CPU refuses: the fuzzer's own test covers it)
    const std::string gpu = compile("cuda");
    if (gpu.empty()) {
      ++compiled;
    } else {
      ++failures;
      ADD_FAILURE() << "graph seed " << seed
                    << " compiles for the CPU but not for the CUDA backend: " << gpu.substr(0, 600) << "\n"
                    << g.describe();
    }
  }
  EXPECT_GT(compiled, static_cast<int>(n / 2));
}

}  // namespace
}  // namespace hypatia
