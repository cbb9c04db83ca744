// The CUDA backend (backends/cuda, compile/placement): built wherever CMake finds the toolkit.
// (The kernel generator: test_cuda_codegen.cpp; the caching allocator: test_cuda_allocator.cpp;
// convolutions, pooling, random numbers and Join: test_cuda_nn.cpp; CUDA graphs:
// test_cuda_graphs.cpp.)
// Without a GPU only the parts that need none run here (the kernel generator through NVRTC, the
// caching allocator on host stand-ins, the clear refusal); the rest skip, and run on a GPU
// machine (DEVELOPERS.md: bench/cuda/device_check.sh).
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>

#include "backend_conformance.h"
#include "hypatia/backends/backend.h"
#include "hypatia/backends/cuda/cuda_api.h"
#include "hypatia/backends/cuda/cuda_codegen.h"
#include "hypatia/backends/cuda/cuda_kernel_util.h"
#include "hypatia/backends/cuda/cuda_memory.h"
#include "hypatia/backends/cuda/cuda_modules.h"
#include "hypatia/ops/composite.h"
#include "hypatia/ops/linalg.h"
#include "hypatia/ops/reduce.h"
#include "hypatia/ops/transfer.h"
#include "test_cuda_util.h"

namespace hypatia {
namespace {

using cuda::numbered;
using testing::classifier_step;
using testing::count_ops;
using testing::DebugChecks;
using testing::error_of;
using testing::fn;
using testing::on;
using testing::transfers;

using testing::seeded_array;

// ------------------------------------------------------------------------------------------------
// Without a GPU.

TEST(CudaBackend, IsRegisteredWithTheCpuAsFallback) {
  const Backend* b = find_backend("cuda");
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->device_kind(), DeviceKind::Cuda);
  ASSERT_NE(b->fallback(), nullptr);
  EXPECT_EQ(b->fallback()->name(), "cpu");
}

TEST(CudaBackend, DebugModeIsRefusedClearly) {
  Var x = vector("x", DType::Float32);
  EXPECT_ERROR(NotImplementedError, function({x}, {exp(x)}, on("cuda", "DebugMode")),
               "DebugMode is not available on backend 'cuda'");
}

/// A thread's current context, as the driver's stand-in keeps it (cuCtxGetCurrent/SetCurrent).
thread_local void* t_context = nullptr;
bool g_context_refused = false;

TEST(CudaBackend, AnEntryMakesTheDrivenContextCurrentAndGivesTheThreadItsOwnBack) {
  // DeviceScope's logic (the switch happens only where the machine shows several GPUs, which no
  // lent machine does): over stand-ins for the driver's context functions.
  const cuda::ContextOps ops{[](void** c) {
                               *c = t_context;
                               return g_context_refused ? 1 : 0;
                             },
                             [](void* c) {
                               t_context = c;
                               return 0;
                             }};
  int ours_, users_;
  void *ours = &ours_, *users = &users_;
  // A thread with no context gets none back (nothing is made on another GPU by the restore).
  t_context = nullptr;
  cuda::ContextSwitch s = cuda::switch_context(ops, ours);
  EXPECT_TRUE(s.switched);
  EXPECT_EQ(t_context, ours);
  // Nested: already current, nothing to give back.
  cuda::ContextSwitch inner = cuda::switch_context(ops, ours);
  EXPECT_FALSE(inner.switched);
  cuda::restore_context(ops, inner);
  EXPECT_EQ(t_context, ours);
  cuda::restore_context(ops, s);
  EXPECT_EQ(t_context, nullptr);
  // A user's own context (another GPU's, or a driver-API one such as PyCUDA's) comes back as it was.
  t_context = users;
  s = cuda::switch_context(ops, ours);
  EXPECT_EQ(t_context, ours);
  cuda::restore_context(ops, s);
  EXPECT_EQ(t_context, users);
  // The driver refusing: nothing changed, nothing given back.
  g_context_refused = true;
  s = cuda::switch_context(ops, ours);
  g_context_refused = false;
  EXPECT_FALSE(s.switched);
  EXPECT_EQ(t_context, users);
  // With one GPU (or none: CI) an entry changes nothing.
  const cuda::ContextSwitch none = cuda::enter_device();
  EXPECT_FALSE(none.switched);
  cuda::leave_device(none);
}

TEST(CudaBackend, WithoutAGpuCompilingSaysWhy) {
  if (cuda::available()) GTEST_SKIP() << "a GPU is present";
  Var x = vector("x", DType::Float32);
  EXPECT_ERROR(NotImplementedError, function({x}, {exp(x)}, on("cuda")), "the CUDA backend cannot run here");
}

// ------------------------------------------------------------------------------------------------
// On a GPU.

TEST(CudaRun, ElementwiseRowsMatchTheCpu) {
  REQUIRE_GPU();
  int checked = 0;
  for (DType dt : {DType::Float32, DType::Float64})
    for (int k = 0; k < kNumScalarOps; ++k) {
      const auto kind = static_cast<ScalarOpKind>(k);
      const ScalarOpInfo& info = scalar_op_info(kind);
      if (kind == ScalarOpKind::Cast || info.rule == ScalarDTypeRule::Bitwise) continue;
      std::vector<Var> in;
      std::vector<NDArray> vals;
      for (int i = 0; i < info.arity; ++i) {
        const bool cond = info.rule == ScalarDTypeRule::Select && i == 0;
        in.push_back(matrix(numbered("x", i), cond ? DType::Bool : dt));
        vals.push_back(cond ? seeded_array({7, 33}, DType::Float64, 99).astype(DType::Bool)
                            : seeded_array({7, 33}, dt, 1000 + i, 0.1, 3));
      }
      Var y = elemwise(kind, in);
      Function fc = fn(in, {y}, on("cpu", "NONE"));
      Function fg = fn(in, {y}, on("cuda", "NONE"));
      EXPECT_EQ(count_ops(fg, "GpuFromHost"), info.arity) << info.name;
      const NDArray want = fc(vals)[0], got = fg(vals)[0];
      ASSERT_TRUE(got.on_host());
      const double rtol = dt == DType::Float32 ? 2e-6 : 1e-13;
      EXPECT_EQ(testing::compare_arrays(got, want, rtol, 1e-30), "") << info.name << " " << dtype_name(dt);
      ++checked;
    }
  EXPECT_GT(checked, 80);
}

TEST(CudaRun, BroadcastingStridedAndEmptyOperands) {
  REQUIRE_GPU();
  Var x = matrix("x", DType::Float32), r = row("r", DType::Float32), s = scalar("s", DType::Float32);
  Var y = add(mul(x, r), s);
  Function fc = function({x, r, s}, {y}, on("cpu", "NONE")), fg = function({x, r, s}, {y}, on("cuda", "NONE"));
  NDArray big = seeded_array({9, 12}, DType::Float32, 3);
  for (const NDArray& xv : {seeded_array({5, 6}, DType::Float32, 1), big.transpose().slice(0, 1, 6, 1),
                            NDArray::empty({0, 6}, DType::Float32)}) {
    const std::vector<NDArray> v = {xv, seeded_array({1, xv.shape(1)}, DType::Float32, 2),
                                    NDArray::scalar(0.5, DType::Float32)};
    EXPECT_ALLCLOSE(fg(v)[0], fc(v)[0]);
  }
  // A shape mismatch is the CPU's message.
  EXPECT_ERROR(ValueError,
               fg({seeded_array({5, 6}, DType::Float32, 1), seeded_array({1, 4}, DType::Float32, 2),
                   NDArray::scalar(0.5, DType::Float32)}),
               "shape");
}

TEST(CudaRun, FusedChainsAreOneKernelWithTransfersAtTheEdges) {
  REQUIRE_GPU();
  Var a = vector("a", DType::Float32), b = vector("b", DType::Float32), c = vector("c", DType::Float32);
  Var y = neg(log(add(mul(exp(mul(a, b)), c), constant(1.0, DType::Float32))));
  Function fc = function({a, b, c}, {y}, on("cpu")), fg = function({a, b, c}, {y}, on("cuda"));
  EXPECT_EQ(count_ops(fg, "Composite"), 1);
  EXPECT_EQ(count_ops(fg, "GpuFromHost"), 3);
  EXPECT_EQ(count_ops(fg, "HostFromGpu"), 1);
  const std::vector<NDArray> v = {seeded_array({100003}, DType::Float32, 1), seeded_array({100003}, DType::Float32, 2),
                                  seeded_array({100003}, DType::Float32, 3, 0.1, 2)};
  EXPECT_ALLCLOSE(fg(v)[0], fc(v)[0], 1e-5, 1e-6);
  EXPECT_NE(fg.debugprint().find("GpuFromHost"), std::string::npos);
}

TEST(CudaRun, ReductionsMatchTheCpu) {
  REQUIRE_GPU();
  Var x = tensor3("x", DType::Float32);
  for (ReduceKind k : {ReduceKind::Sum, ReduceKind::Prod, ReduceKind::Max, ReduceKind::Min})
    for (std::vector<int> axes : {std::vector<int>{0}, {1}, {2}, {0, 2}, {0, 1, 2}}) {
      Var y = apply_op1(std::make_shared<Reduce>(k, axes, DType::Float32), {x});
      Function fc = function({x}, {y}, on("cpu", "NONE")), fg = function({x}, {y}, on("cuda", "NONE"));
      const NDArray v = seeded_array({4, 5, 6}, DType::Float32, 7, 0.5, 1.5);
      EXPECT_ALLCLOSE(fg({v})[0], fc({v})[0], 1e-5, 1e-6) << reduce_kind_name(k) << " " << axes.size();
      EXPECT_ALLCLOSE(fg({v.transpose()})[0], fc({v.transpose()})[0], 1e-5, 1e-6);
    }
  Var m = matrix("m", DType::Float32);
  Function fmax = function({m}, {max(m, std::vector<int>{0})}, on("cuda", "NONE"));
  EXPECT_ERROR(ValueError, fmax({NDArray::empty({0, 3}, DType::Float32)}), "zero-size array");
}

TEST(CudaRun, ProductsMatchTheCpu) {
  REQUIRE_GPU();
  for (DType dt : {DType::Float32, DType::Float64}) {
    Var a = matrix("a", dt), b = matrix("b", dt), v = vector("v", dt);
    for (const auto& [ys, name] : std::vector<std::pair<std::vector<Var>, std::string>>{
             {{dot(a, b)}, "mm"}, {{dot(a, v)}, "mv"}, {{dot(v, b)}, "vm"}, {{dot(v, v)}, "vv"}}) {
      std::vector<Var> ins = {a, b, v};
      FunctionOptions oc = on("cpu"), og = on("cuda");
      oc.on_unused_input = og.on_unused_input = "ignore";
      Function fc = fn(ins, {ys.begin(), ys.end()}, oc), fg = fn(ins, {ys.begin(), ys.end()}, og);
      for (bool transposed : {false, true}) {
        NDArray av = seeded_array({6, 6}, dt, 1), bv = seeded_array({6, 6}, dt, 2), vv = seeded_array({6}, dt, 3);
        if (transposed) av = av.transpose();
        EXPECT_ALLCLOSE(fg({av, bv, vv})[0], fc({av, bv, vv})[0], dt == DType::Float32 ? 1e-5 : 1e-12) << name;
      }
    }
  }
}

TEST(CudaRun, SharedVariablesLiveOnTheDeviceAndALoopTransfersNothing) {
  REQUIRE_GPU();
  // Seed 000's all-shared variant: y = m x + b with m, x, b shared, y kept as an update.
  NDArray m0 = seeded_array({64, 64}, DType::Float32, 1), x0 = seeded_array({64, 64}, DType::Float32, 2),
          b0 = seeded_array({64, 64}, DType::Float32, 3);
  Var m = shared(m0, "m"), x = shared(x0, "x"), b = shared(b0, "b"), yv = shared(b0, "y");
  FunctionOptions o = on("cuda");
  o.updates = {{yv, add(dot(m, x), b)}};
  Function f = function({}, {}, o);
  EXPECT_EQ(transfers(f), 0) << f.debugprint();
  EXPECT_FALSE(get_value(m, true, true).on_host());
  for (int i = 0; i < 3; ++i) f({});
  NDArray want = NDArray::empty({64, 64}, DType::Float32);
  Var hm = matrix("hm", DType::Float32), hx = matrix("hx", DType::Float32), hb = matrix("hb", DType::Float32);
  Function fc = function({hm, hx, hb}, {add(dot(hm, hx), hb)}, on("cpu"));
  EXPECT_ALLCLOSE(get_value(yv), fc({m0, x0, b0})[0], 1e-5);
  EXPECT_TRUE(get_value(yv).on_host());
  // set_value keeps the variable on the device.
  set_value(m, NDArray::zeros({64, 64}, DType::Float32));
  EXPECT_FALSE(get_value(m, true, true).on_host());
  f({});
  EXPECT_ALLCLOSE(get_value(yv), b0);
}

TEST(CudaRun, FunctionsOnStreamsOfTheirOwnSeeEachOthersWritesInOrder) {
  REQUIRE_GPU();
  // step adds 1 to x (4M floats) through a 2048^3 product that comes to exactly 1 (m = 1/2048
  // everywhere: m m = m, summed 2048), so that its kernels take a while; `read` (another function:
  // another stream with cuda_streams=function) must see every step before it, never part of one.
  constexpr int64_t kN = 2048;
  NDArray m0 = NDArray::empty({kN, kN}, DType::Float32);
  for (int64_t i = 0; i < m0.size(); ++i) m0.data<float>()[i] = 1.0f / kN;
  Var m = shared(m0, "m"), x = shared(NDArray::zeros({4 << 20}, DType::Float32), "x");
  FunctionOptions so = on("cuda");
  so.updates = {{x, x + sum(dot(m, m)) / static_cast<double>(kN)}};
  Function step = function({}, {}, so);
  Function read = function({}, {max(x), min(x)}, on("cuda"));
  Var a = vector("a", DType::Float32);
  Function plus = function({a}, {Out(device_from_host(a + 1.0, Device::cuda()), true)}, on("cuda"));
  for (int i = 1; i <= 20; ++i) {
    step({});
    std::vector<NDArray> r = read({});
    ASSERT_EQ(r[0].data<float>()[0], static_cast<float>(i)) << "call " << i;
    ASSERT_EQ(r[1].data<float>()[0], static_cast<float>(i)) << "call " << i;
    // A device result of another function passed on while step's next write is queued: read after
    // the write before it, not the one after.
    NDArray xd = get_value(x, true, true);
    step({});
    std::vector<NDArray> p = plus({xd});
    ASSERT_FALSE(p[0].on_host());
    ++i;
    EXPECT_EQ(p[0].to_device(Device::host()).data<float>()[12345], static_cast<float>(i));
  }
  // Two threads at once: step on one, read on the other; every read sees whole steps, in order.
  std::vector<float> seen;
  std::thread t([&] {
    for (int i = 0; i < 20; ++i) step({});
  });
  for (int i = 0; i < 40; ++i) {
    std::vector<NDArray> r = read({});
    EXPECT_EQ(r[0].data<float>()[0], r[1].data<float>()[0]) << "a read saw part of a step";
    seen.push_back(r[0].data<float>()[0]);
  }
  t.join();
  EXPECT_TRUE(std::is_sorted(seen.begin(), seen.end()));
  EXPECT_EQ(get_value(x).data<float>()[0], 40.0f);
}

TEST(CudaRun, TransferCountsOfSeed000) {
  REQUIRE_GPU();
  // 3, 2, 1 and 0 transfers per call as more of the operands become shared variables.
  NDArray mv = seeded_array({8, 8}, DType::Float32, 1), xv = seeded_array({8, 8}, DType::Float32, 2),
          bv = seeded_array({8, 8}, DType::Float32, 3);
  Var m = matrix("m", DType::Float32), x = matrix("x", DType::Float32), b = matrix("b", DType::Float32);
  Function f3 = function({m, x, b}, {add(dot(m, x), b)}, on("cuda"));
  Var ms = shared(mv, "ms");
  Function f2 = function({x, b}, {add(dot(ms, x), b)}, on("cuda"));
  Var xs = shared(xv, "xs");
  Function f1 = function({b}, {add(dot(ms, xs), b)}, on("cuda"));
  // Variant 4 keeps the result on the device: the output is the user's device_from_host.
  Var bs = shared(bv, "bs");
  Function f0 = function({}, {Out(device_from_host(add(dot(ms, xs), bs), Device::cuda()), true)}, on("cuda"));
  EXPECT_EQ(transfers(f3), 4);  // three in, one out
  EXPECT_EQ(transfers(f2), 3);
  EXPECT_EQ(transfers(f1), 2);
  EXPECT_EQ(transfers(f0), 0);  // the user's own transfer of a device value leaves the graph
  // Where the nodes run: the transfers count as the host's (the CUDA backend's kernels copy).
  const auto nodes = f3.toposort();
  const auto devices = f3.node_devices();
  int on_gpu = 0;
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (nodes[i]->op->moves_between_devices()) {
      EXPECT_EQ(devices[i], Device::host()) << nodes[i]->op->name();
    }
    on_gpu += devices[i] == Device::cuda();
  }
  EXPECT_GE(on_gpu, 1);
  const NDArray want = f3({mv, xv, bv})[0];
  EXPECT_ALLCLOSE(f2({xv, bv})[0], want, 1e-5);
  EXPECT_ALLCLOSE(f1({bv})[0], want, 1e-5);
  const NDArray d = f0({})[0];
  EXPECT_FALSE(d.on_host());
  EXPECT_ALLCLOSE(d.to_device(Device::host()), want, 1e-5);
}

/// Kernels asked of the module caches so far (each request is a memory hit, a disk hit or a
/// compile).
int64_t kernel_requests() {
  const auto s = cuda::module_cache_stats();
  return s.memory_hits + s.disk_hits + s.compiles;
}

TEST(CudaRun, TheStridedKernelIsMadeOnlyWhenAnOperandNeedsIt) {
  REQUIRE_GPU();
  Var x = matrix("x", DType::Float32), r = row("r", DType::Float32);
  const NDArray xv = seeded_array({5, 7}, DType::Float32, 1), rv = seeded_array({1, 7}, DType::Float32, 2);
  // Contiguous operands: the function asks for one kernel (the contiguous one), its calls none.
  const int64_t q0 = kernel_requests();
  Function same = fn({x}, {exp(x) * x}, on("cuda"));
  EXPECT_EQ(kernel_requests(), q0 + 1);
  EXPECT_ALLCLOSE(same({xv})[0], fn({x}, {exp(x) * x}, on("cpu"))({xv})[0], 1e-6);
  EXPECT_EQ(kernel_requests(), q0 + 1);
  // A broadcast row reads with strides: the strided kernel is made at the first such call, once.
  Function bcast = fn({x, r}, {exp(x) * r}, on("cuda"));
  const int64_t q1 = kernel_requests();
  const NDArray want = fn({x, r}, {exp(x) * r}, on("cpu"))({xv, rv})[0];
  EXPECT_ALLCLOSE(bcast({xv, rv})[0], want, 1e-6);
  EXPECT_EQ(kernel_requests(), q1 + 1);
  EXPECT_ALLCLOSE(bcast({xv, rv})[0], want, 1e-6);
  EXPECT_EQ(kernel_requests(), q1 + 1);
}

TEST(CudaRun, ADeviceArgumentIsCopiedOnTheDeviceAndLeftAsItWas) {
  REQUIRE_GPU();
  Var x = vector("x", DType::Float32);
  Var y = add(mul(x, constant(2.0, DType::Float32)), constant(1.0, DType::Float32));  // in place on the device
  Function fg = fn({x}, {y}, on("cuda")), fc = fn({x}, {y}, on("cpu"));
  const NDArray h = seeded_array({1000}, DType::Float32, 5);
  const NDArray d = h.to_device(Device::cuda());
  EXPECT_ALLCLOSE(fg({d})[0], fc({h})[0], 1e-6);
  EXPECT_ALLCLOSE(fg({d})[0], fc({h})[0], 1e-6);
  EXPECT_ALLCLOSE(d.to_device(Device::host()), h, 0.0, 0.0);  // the caller's array, unchanged
  EXPECT_ALLCLOSE(fg({h})[0], fc({h})[0], 1e-6);
}

TEST(CudaRun, AFailedCallChangesNoSharedVariable) {
  REQUIRE_GPU();
  Var w = shared(seeded_array({4, 4}, DType::Float32, 1), "w");
  Var v = matrix("v", DType::Float32);
  FunctionOptions o = on("cuda");
  o.updates = {{w, add(w, v)}};
  Function f = function({v}, {}, o);
  const NDArray before = get_value(w);
  EXPECT_ERROR(ValueError, f({seeded_array({4, 5}, DType::Float32, 2)}), "shape");
  EXPECT_ALLCLOSE(get_value(w), before);
  // Out of device memory: the message names the bytes; the variable is unchanged.
  // Out of device memory: an outer product of two 2^20 vectors is 2^40 float32 (4 TiB), which
  // no GPU has. The message names the bytes; the variable is unchanged.
  Var u = shared(seeded_array({1 << 20, 1}, DType::Float32, 3), "u");
  Var uv = shared(seeded_array({1, 1 << 20}, DType::Float32, 4), "uv");
  FunctionOptions o2 = on("cuda");
  o2.updates = {{w, add(w, sum(dot(u, uv)))}};
  Function g = function({}, {}, o2);
  const std::string msg = error_of<MemoryError>([&] { g({}); });
  EXPECT_NE(msg.find("4398046511104 bytes requested"), std::string::npos) << msg;
  EXPECT_ALLCLOSE(get_value(w), before);
  // The device's own allocator names what was asked, what is free and what is cached.
  const std::string dmsg =
      error_of<MemoryError>([&] { NDArray::empty({int64_t{1} << 40}, DType::Float32, Device::cuda()); });
  EXPECT_NE(dmsg.find("4398046511104 bytes requested"), std::string::npos) << dmsg;
  EXPECT_NE(dmsg.find("bytes free on the device"), std::string::npos) << dmsg;
}

TEST(CudaRun, ModulesAreCachedOnDiskAndACorruptEntryIsRebuilt) {
  REQUIRE_GPU();
  const std::string dir = std::filesystem::temp_directory_path() / (numbered("hypatia_cuda_cache_", getpid()));
  setenv("HYPATIA_CACHE_DIR", dir.c_str(), 1);
  // A kernel no other test generates (a constant of its own in the source).
  const std::string name = numbered("probe_", getpid());
  const std::string src =
      cuda::table_prefix() + "extern \"C\" __global__ void " + name + "(float* p) { if (p) p[0] = 42.0f; }\n";
  const auto s0 = cuda::module_cache_stats();
  cuda::get_kernel(src, name);
  const auto s1 = cuda::module_cache_stats();
  EXPECT_EQ(s1.compiles, s0.compiles + 1);
  EXPECT_EQ(s1.disk_writes, s0.disk_writes + 1);
  cuda::get_kernel(src, name);
  EXPECT_EQ(cuda::module_cache_stats().memory_hits, s1.memory_hits + 1);
  cuda::get_kernel(src, name, /*memory_cache=*/false);
  const auto s2 = cuda::module_cache_stats();
  EXPECT_EQ(s2.disk_hits, s1.disk_hits + 1);
  EXPECT_EQ(s2.compiles, s1.compiles);
  int entries = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir + "/cuda")) {
    ++entries;
    std::ofstream(e.path(), std::ios::binary | std::ios::trunc) << "HYPCUB1";  // a truncated entry
  }
  EXPECT_EQ(entries, 1);
  cuda::get_kernel(src, name, /*memory_cache=*/false);
  const auto s3 = cuda::module_cache_stats();
  EXPECT_EQ(s3.compiles, s2.compiles + 1);  // not loaded from the broken entry: compiled again
  EXPECT_EQ(s3.disk_writes, s2.disk_writes + 1);
  cuda::get_kernel(src, name, /*memory_cache=*/false);
  EXPECT_EQ(cuda::module_cache_stats().disk_hits, s3.disk_hits + 1);  // and replaced
  unsetenv("HYPATIA_CACHE_DIR");
  std::filesystem::remove_all(dir);
}

TEST(CudaRun, AClassifierTrainingStepRunsOnTheGpuAndMatchesTheCpu) {
  REQUIRE_GPU();
  // Products, fused elementwise, the fused cross-entropy of the softmax and its gradient all on
  // the GPU (the labels are checked there).
  std::vector<Var> pc, pg;
  Function fc = classifier_step("cpu", pc), fg = classifier_step("cuda", pg);
  std::string on_cpu;
  for (const auto& n : fg.toposort())
    if (!n->op->moves_between_devices() && get_backend("cuda").provider(*n)->name() != "cuda")
      on_cpu += n->op->name() + " ";
  for (const char* host_op : {"Softmax", "Alloc", "AdvancedSubtensor", "AdvancedIncSubtensor", "dot", "Gemm",
                              "CheckLabels", "ARange", "CrossentropySoftmax1HotWithBias"})
    EXPECT_EQ(on_cpu.find(host_op), std::string::npos) << on_cpu;
  NDArray xv = seeded_array({8, 20}, DType::Float32, 5);
  NDArray yv = NDArray::empty({8}, DType::Int64);
  for (int i = 0; i < 8; ++i) yv.data<int64_t>()[i] = (i * 3) % 5;
  for (int step = 0; step < 3; ++step) EXPECT_ALLCLOSE(fg({xv, yv})[0], fc({xv, yv})[0], 1e-5, 1e-6);
  for (size_t i = 0; i < pc.size(); ++i) EXPECT_ALLCLOSE(get_value(pg[i]), get_value(pc[i]), 1e-4, 1e-6);
  // A label out of range is the CPU's IndexError, and the parameters do not move.
  const NDArray before = get_value(pg[0]);
  yv.data<int64_t>()[3] = 7;
  EXPECT_ERROR(IndexError, fg({xv, yv}), "7");
  EXPECT_ALLCLOSE(get_value(pg[0]), before);
}

TEST(CudaRun, TheCrossentropyOfClippedProbabilitiesRunsOnTheGpu) {
  REQUIRE_GPU();
  // Keras-era Theano code clips the probabilities before the cross-entropy: the stability rewrite
  // does not see through the clip, so CrossentropyCategorical1Hot and its gradient run (on the GPU).
  Var x = matrix("x", DType::Float32);
  Var y = vector("y", DType::Int64);
  Var w = shared(seeded_array({6, 4}, DType::Float32, 3, -0.5, 0.5), "w");
  Var p = clip(softmax(dot(x, w)), constant(1e-6, DType::Float32), constant(1 - 1e-6, DType::Float32));
  Var cost = mean(categorical_crossentropy(p, y));
  auto step = [&](const std::string& backend) {
    FunctionOptions o = on(backend);
    return function({x, y}, {cost, grad(cost, w)}, o);
  };
  Function fc = step("cpu"), fg = step("cuda");
  int on_gpu = 0;
  for (const auto& n : fg.toposort())
    if (n->op->name().find("Crossentropy") != std::string::npos) {
      EXPECT_EQ(get_backend("cuda").provider(*n)->name(), "cuda") << n->op->name();
      ++on_gpu;
    }
  EXPECT_EQ(on_gpu, 2) << fg.debugprint();
  const NDArray xv = seeded_array({5, 6}, DType::Float32, 7), yv = NDArray::from_vector<int64_t>({0, 3, 1, 2, 3});
  const auto want = fc({xv, yv}), got = fg({xv, yv});
  for (size_t k = 0; k < want.size(); ++k) EXPECT_ALLCLOSE(got[k], want[k], 1e-5, 1e-6) << k;
  EXPECT_ERROR(IndexError, fg({xv, NDArray::from_vector<int64_t>({0, 3, 4, 2, 3})}),
               "label 4 at row 2 is out of range for 4 classes");
}

TEST(CudaRun, AdvancedIndexingGathersAndScatterAdds) {
  REQUIRE_GPU();
  Var x = matrix("x", DType::Float32), i = vector("i", DType::Int64), j = vector("j", DType::Int64);
  Var v = vector("v", DType::Float32);
  Var gath = subtensor(x, {Index(i), Index(j)});
  Var inc = inc_subtensor(subtensor(x, {Index(i), Index(j)}), v);
  Var rows = subtensor(x, {Index(i)});
  std::vector<Var> ins = {x, i, j, v};
  FunctionOptions oc = on("cpu"), og = on("cuda");
  oc.on_unused_input = og.on_unused_input = "ignore";
  Function fc = fn(ins, {gath, inc, rows}, oc), fg = fn(ins, {gath, inc, rows}, og);
  NDArray xv = seeded_array({6, 7}, DType::Float32, 1);
  NDArray iv = NDArray::from_vector<int64_t>({0, -1, 2, 2, 5}), jv = NDArray::from_vector<int64_t>({1, 3, 6, 6, 0});
  NDArray vv = seeded_array({5}, DType::Float32, 2);
  const auto want = fc({xv, iv, jv, vv}), got = fg({xv, iv, jv, vv});
  for (size_t k = 0; k < want.size(); ++k) EXPECT_ALLCLOSE(got[k], want[k], 1e-6) << k;
  EXPECT_ERROR(IndexError, fg({xv, NDArray::from_vector<int64_t>({0, 6, 1, 1, 1}), jv, vv}),
               "index 6 is out of bounds for axis 0 with size 6");
}

TEST(CudaRun, ArgmaxArgminAndBatchedDotRunOnTheGpuAndMatchTheCpu) {
  REQUIRE_GPU();
  Var x = tensor3("x", DType::Float32), y = tensor3("y", DType::Float32), v = matrix("v", DType::Float32);
  // A transposed batch operand (a view cuBLAS reads transposed) and a 2-d one (rows).
  std::vector<Out> outs = {
      argmax(x, 2),     argmin(x, 0), argmax(x), batched_dot(x, y), batched_dot(x, dimshuffle(y, {0, 2, 1})),
      batched_dot(v, y)};
  FunctionOptions oc = on("cpu"), og = on("cuda");
  Function fc = fn({x, y, v}, outs, oc), fg = fn({x, y, v}, outs, og);
  for (const auto& n : fg.toposort()) {
    const std::string name = n->op->name();
    if (name.find("Arg") != std::string::npos || name.find("BatchedDot") != std::string::npos) {
      EXPECT_EQ(get_backend("cuda").provider(*n)->name(), "cuda") << name;
    }
  }
  NDArray xv = seeded_array({4, 6, 6}, DType::Float32, 3), yv = seeded_array({4, 6, 6}, DType::Float32, 4);
  NDArray vv = seeded_array({4, 6}, DType::Float32, 5);
  xv.data<float>()[7] = NAN;                         // the first NaN wins, as on the CPU
  xv.data<float>()[3] = xv.data<float>()[5] = 9.0f;  // a tie: the first wins
  const auto want = fc({xv, yv, vv}), got = fg({xv, yv, vv});
  for (size_t k = 0; k < 3; ++k) EXPECT_ALLCLOSE(got[k], want[k], 0.0, 0.0) << k;
  NDArray xf = seeded_array({4, 6, 6}, DType::Float32, 3);
  const auto want2 = fc({xf, yv, vv}), got2 = fg({xf, yv, vv});
  for (size_t k = 3; k < outs.size(); ++k) EXPECT_ALLCLOSE(got2[k], want2[k], 1e-5, 1e-6) << k;
  EXPECT_ERROR(ValueError, fg({xf, seeded_array({3, 6, 6}, DType::Float32, 4), vv}), "batch sizes must match");
}

TEST(CudaRun, SplitTileEyeAndRepeatRunOnTheGpuAndMatchTheCpu) {
  REQUIRE_GPU();
  Var x = matrix("x", DType::Float32), n = scalar("n", DType::Int64);
  const std::vector<Var> parts = split(x, std::vector<int64_t>{1, 3, 2}, 1);
  NDArray long_counts = NDArray::empty({500}, DType::Int64);
  for (int64_t i = 0; i < 500; ++i) long_counts.data<int64_t>()[i] = i % 3;
  std::vector<Out> outs = {parts[0], parts[1], parts[2], tile(x, {2, 1, 3}), tile(transpose(x), {2, 2}),
                           eye(n, constant(7.0, DType::Int64), constant(-1.0, DType::Int64), DType::Float32),
                           repeat(repeat(x, 2, 0), 3, 1),
                           // by a vector of counts: short (in the launch's arguments), and long
                           repeat(x, constant(NDArray::from_vector<int64_t>({0, 2, 1, 3, 1, 0})), 1),
                           repeat(repeat(x, 100, 0), constant(long_counts), 0)};
  FunctionOptions oc = on("cpu"), og = on("cuda");
  Function fc = fn({x, n}, outs, oc), fg = fn({x, n}, outs, og);
  for (const auto& node : fg.toposort()) {
    const std::string name = node->op->name();
    if (name.find("Split") != std::string::npos || name.find("Tile") != std::string::npos ||
        name.find("Eye") != std::string::npos || name.find("Repeat") != std::string::npos) {
      EXPECT_EQ(get_backend("cuda").provider(*node)->name(), "cuda") << name;
    }
  }
  const NDArray xv = seeded_array({5, 6}, DType::Float32, 9), nv = NDArray::scalar_int64(4);
  const auto want = fc({xv, nv}), got = fg({xv, nv});
  for (size_t k = 0; k < want.size(); ++k) EXPECT_ALLCLOSE(got[k], want[k], 0.0, 0.0) << k;
  EXPECT_ERROR(ValueError, fg({xv, NDArray::scalar_int64(-1)}), "negative dimensions");
}

TEST(CudaRun, OpInfoTableMatchesTheCpu) {
  REQUIRE_GPU();
  const testing::Conformance r = testing::compare_op_infos_with_cpu("cuda");
  std::printf("OpInfo on CUDA: %d samples compared, %d nodes on the GPU\n", r.compared, r.on_device);
  EXPECT_EQ(r.failures, "");
}

TEST(CudaRun, OpInfoGradientsMatchTheCpu) {
  REQUIRE_GPU();
  const testing::Conformance r = testing::compare_op_info_gradients_with_cpu("cuda");
  std::printf("OpInfo gradients on CUDA: %d samples compared\n", r.compared);
  EXPECT_GT(r.compared, 100);
  EXPECT_EQ(r.failures, "");
}

}  // namespace
}  // namespace hypatia
