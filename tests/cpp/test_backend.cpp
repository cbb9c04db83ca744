// The open backend interface (backends/backend.h), device-aware arrays (core/device.h) and the
// transfer ops (ops/transfer.h).
#include <cstdlib>
#include <cstring>
#include <thread>

#include "backend_conformance.h"
#include "hypatia/backends/backend.h"
#include "hypatia/ops/ifelse.h"
#include "hypatia/ops/scan.h"
#include "hypatia/ops/transfer.h"
#include "hypatia/runtime/program.h"
#include "hypatia/testing/emulated_gpu.h"
#include "test_util.h"

namespace hypatia {
namespace {

using testing::error_of;

TEST(Backends, BuiltInsAreRegisteredByName) {
  auto names = backend_names();
  EXPECT_NE(std::find(names.begin(), names.end(), "cpu"), names.end());
  EXPECT_NE(std::find(names.begin(), names.end(), "reference"), names.end());
  const Backend& cpu = get_backend("cpu");
  EXPECT_EQ(cpu.name(), "cpu");
  EXPECT_EQ(cpu.device_kind(), DeviceKind::Host);
  ASSERT_NE(cpu.fallback(), nullptr);
  EXPECT_EQ(cpu.fallback()->name(), "reference");
  EXPECT_EQ(get_backend("reference").fallback(), nullptr);
  EXPECT_EQ(get_backend("reference").default_mode(), "NONE");
  EXPECT_EQ(&default_backend(), &cpu);
}

TEST(Backends, UnknownNameListsTheRegisteredOnes) {
  EXPECT_ERROR(ValueError, get_backend("tpu"), "backend 'tpu' is not registered; the backends are 'cpu'");
  FunctionOptions o;
  o.backend = "tpu";
  Var x = vector("x");
  EXPECT_ERROR(ValueError, function({x}, {exp(x)}, o), "'reference'");
}

TEST(Backends, TheFallbackServesWhatABackendLacks) {
  // DimShuffle has a reference kernel only: the CPU backend's fallback provides it.
  Var x = matrix("x");
  Var y = dimshuffle(x, {1, 0});
  const Backend& cpu = get_backend("cpu");
  ASSERT_TRUE(cpu.supports(*y->owner));
  EXPECT_EQ(cpu.provider(*y->owner)->name(), "reference");
  Var e = exp(x);
  EXPECT_EQ(cpu.provider(*e->owner)->name(), "cpu");
}

/// A backend with no kernels and no fallback, registered once for the tests below.
const Backend& bare_backend() {
  static const Backend* b = [] {
    register_backend(std::make_unique<Backend>(Backend::Description{.name = "test_bare"}));
    return &get_backend("test_bare");
  }();
  return *b;
}

TEST(Backends, AMissingKernelIsACompileTimeErrorNamingOpAndBackend) {
  bare_backend();
  Var x = vector("x");
  FunctionOptions o;
  o.backend = "test_bare";
  o.mode = "NONE";
  const std::string msg = error_of<NotImplementedError>([&] { function({x}, {exp(x)}, o); });
  EXPECT_NE(msg.find("Elemwise{exp"), std::string::npos) << msg;
  EXPECT_NE(msg.find("no kernel on backend 'test_bare'"), std::string::npos) << msg;
  EXPECT_ERROR(ValueError, register_backend(std::make_unique<Backend>(Backend::Description{.name = "test_bare"})),
               "already registered");
}

TEST(Backends, ABackendWithAFallbackRunsGraphsAndItsOwnKernelsWin) {
  static bool registered = [] {
    register_backend(std::make_unique<Backend>(Backend::Description{.name = "test_fallback", .fallback = "cpu"}));
    return true;
  }();
  (void)registered;
  static int own_runs = 0;
  register_simple_kernel<Elemwise>(
      "test_fallback", +[](const Elemwise&, const KernelArgs& a) {
        ++own_runs;
        NDArray& out = prepare_output(*a.out[0], a.in[0]->shape(), a.in[0]->dtype());
        out.assign(*a.in[0]);  // an "identity" for every elementwise op: visibly this backend's
      });
  Var x = vector("x");
  FunctionOptions o;
  o.backend = "test_fallback";
  o.mode = "NONE";
  Function f = function({x}, {exp(dimshuffle(x, {0}))}, o);
  NDArray v = NDArray::from_vector<double>({1, 2, 3});
  NDArray r = f({v})[0];
  EXPECT_EQ(own_runs, 1);
  EXPECT_EQ(r.get_flat(2), 3.0);  // its Elemwise kernel ran; DimShuffle came from the chain
}

TEST(Backends, ABackendIsToldWhenAFunctionsKernelsAreMadeAndItsErrorRaisesFromFunction) {
  // The hook a device backend builds its kernels' code in (the CUDA backend's modules).
  static int made = 0;
  static bool fail = false;
  static std::thread::id on;
  static bool registered = [] {
    register_backend(
        std::make_unique<Backend>(Backend::Description{.name = "test_made", .fallback = "cpu", .kernels_made = [] {
                                                         ++made;
                                                         on = std::this_thread::get_id();
                                                         if (fail) hypatia::fail<Error>("a module failed to build");
                                                       }}));
    return true;
  }();
  (void)registered;
  Var x = vector("x");
  FunctionOptions o;
  o.backend = "test_made";
  Function f = function({x}, {exp(x) + x}, o);
  EXPECT_EQ(made, 1);
  EXPECT_EQ(on, std::this_thread::get_id());
  EXPECT_ALLCLOSE(f({NDArray::from_vector<double>({1, 2})})[0],
                  NDArray::from_vector<double>({1 + std::exp(1.0), 2 + std::exp(2.0)}));
  fail = true;
  EXPECT_ERROR(Error, function({x}, {exp(x) * x}, o), "a module failed to build");
  fail = false;
}

int count_ops(const Function& f, const std::string& what) {
  int n = 0;
  for (const auto& node : f.toposort()) n += node->op->name().find(what) != std::string::npos;
  return n;
}

TEST(Backends, RewritesFollowTheBackendsTarget) {
  // A backend that declares no fusable loops gets no fused nodes; the CPU backend fuses
  // exp(x) * 2 + 1 into one Composite. Both compute the same values.
  static bool registered = [] {
    register_backend(std::make_unique<Backend>(Backend::Description{.name = "test_nofuse", .fallback = "cpu"}));
    return true;
  }();
  (void)registered;
  Var x = vector("x");
  Var y = add(mul(exp(x), constant(2.0, DType::Float64)), constant(1.0, DType::Float64));
  FunctionOptions cpu, nofuse;
  cpu.mode = nofuse.mode = "FAST_RUN";
  nofuse.backend = "test_nofuse";
  Function fc = function({x}, {y}, cpu), fn = function({x}, {y}, nofuse);
  EXPECT_EQ(count_ops(fc, "Composite"), 1);
  EXPECT_EQ(count_ops(fn, "Composite"), 0);
  NDArray v = NDArray::from_vector<double>({0.5, -1, 2});
  EXPECT_ALLCLOSE(fc({v})[0], fn({v})[0]);
  // Constant folding runs the backend's kernels: the bare backend has none, so nothing folds
  // (and compiling then fails in place(), naming the op).
  bare_backend();
  FunctionOptions bare;
  bare.backend = "test_bare";
  bare.mode = "FAST_RUN";
  Var c = exp(constant(0.0, DType::Float64));
  EXPECT_ERROR(NotImplementedError, function({}, {c}, bare), "no kernel on backend 'test_bare'");
  EXPECT_EQ(function({}, {c}, cpu)({})[0].get_flat(0), 1.0);
}

// ------------------------------------------------------------------------------------------------
// Devices.

/// Copies through the emulated GPU's memory so far (testing/emulated_gpu.h): to the device, to
/// the host, on the device.
struct Copies {
  int64_t in, out, on;
};
Copies copies() {
  const auto c = hypatia::testing::emulated_gpu_copies();
  return {c.to_device, c.to_host, c.on_device};
}
using hypatia::testing::EmulatedGpu;

// HYPATIA_TEST_EMULATED_GPU=1 (with HYPATIA_FLAGS=device=cuda1: tests/cpp/CMakeLists.txt runs the
// Devices, Transfers and Placement tests so): the emulated GPU for the whole run, as the default
// device backend, so that the device the flag names is the one every function and array uses.
const bool kWholeRunOnTheEmulatedGpu = [] {
  if (std::getenv("HYPATIA_TEST_EMULATED_GPU")) hypatia::testing::install_emulated_gpu(/*as_default=*/true);
  return true;
}();

/// The GPU this process drives, as messages name it ("cuda:0"; "cuda:1" in the device=cuda1 run
/// of these tests: tests/cpp/CMakeLists.txt), and another one, which it refuses.
std::string gpu_name() { return Device::cuda().str(); }
Device other_gpu() { return Device::cuda(Device::cuda().index == 0 ? 1 : 0); }

TEST(Devices, NamesParseAndPrint) {
  // The process's GPU: the device flag's (cuda1 in that run), else cuda:0; fixed from now on.
  const Device gpu = Device::cuda();
  EXPECT_EQ(gpu.index, config().device == "cuda1" ? 1 : 0);
  EXPECT_EQ(Device::of(DeviceKind::Cuda), gpu);
  EXPECT_EQ(Device::of(DeviceKind::Host), Device::host());
  EXPECT_EQ(Device::parse("cpu"), Device::host());
  EXPECT_EQ(Device::parse("cuda"), gpu);
  EXPECT_EQ(Device::parse("cuda1"), Device::cuda(1));
  EXPECT_EQ(Device::parse("cuda:2").str(), "cuda:2");
  // Theano's old backend's names: device=gpu is the process's GPU, gpuN the N-th.
  EXPECT_EQ(Device::parse("gpu"), gpu);
  EXPECT_EQ(Device::parse("gpu0"), Device::cuda(0));
  EXPECT_EQ(Device::parse("gpu1"), Device::cuda(1));
  EXPECT_ERROR(ValueError, Device::parse("gpux"), "expected 'cpu', 'cuda', 'cudaN' or 'cuda:N'");
  EXPECT_ERROR(ValueError, Device::parse("tpu"), "not a device");
  EXPECT_ERROR(ValueError, Device::parse("cuda:-1"), "not a device");
  // The flag takes device names only (a typo would otherwise run on cuda:0).
  for (const char* bad : {"cudax", "cuda5000", "gpu-1", "tpu"})
    EXPECT_ERROR(ValueError, config().set("device", bad), "device must be cpu, cuda, cudaN or cuda:N");
  // One GPU per process: once one is in use, the device flag naming another is refused by name,
  // not run on this one; "cuda" alone still names the one in use.
  const Device other = other_gpu();
  testing::ScopedSetting<std::string> second(config().device, other.str());
  EXPECT_ERROR(NotImplementedError, default_backend(), "device " + other.str() + ": this process runs on " + gpu.str());
  Var v = vector("v", DType::Float64);
  EXPECT_ERROR(NotImplementedError, function({v}, {exp(v)}), "one GPU per process");
  EXPECT_ERROR(NotImplementedError, claim_device(other),
               "HYPATIA_FLAGS=device=cuda" + std::to_string(other.index) + ", or CUDA_VISIBLE_DEVICES");
  EXPECT_NO_THROW(claim_device(gpu));
  EXPECT_NO_THROW(claim_device(Device::host()));
  EXPECT_EQ(Device::parse("cuda"), gpu);
  EXPECT_EQ(driven_device_index(DeviceKind::Cuda), gpu.index);
  // Memory on another GPU is refused, not put on this one under its name.
  EmulatedGpu emulated;
  EXPECT_ERROR(NotImplementedError, NDArray::from_vector<float>({1, 2}).to_device(Device::cuda(2)),
               "HYPATIA_FLAGS=device=cuda2");
  EXPECT_EQ(NDArray::from_vector<float>({1, 2}).to_device(Device::parse("gpu")).device(), gpu);
}

TEST(Devices, ADeviceArrayComesFromItsAllocatorAndHostCodeRefusesIt) {
  EmulatedGpu gpu;
  NDArray h = NDArray::from_vector<float>({1, 2, 3, 4}, {2, 2});
  const int64_t in0 = copies().in, out0 = copies().out;
  NDArray d = h.to_device(Device::cuda());
  EXPECT_EQ(d.device(), Device::cuda());
  EXPECT_FALSE(d.on_host());
  EXPECT_EQ(copies().in, in0 + 1);
  EXPECT_ERROR(TypeError, d.get_flat(0), "is on " + gpu_name());
  EXPECT_ERROR(TypeError, d.fill(1.0), "fill");
  EXPECT_ERROR(TypeError, h.assign(d), "assign");
  EXPECT_NE(d.describe().find("on " + gpu_name()), std::string::npos);
  // Views stay on the device; the round trip gives the values back.
  EXPECT_EQ(d.transpose().device(), Device::cuda());
  NDArray back = d.to_device(Device::host());
  EXPECT_EQ(copies().out, out0 + 1);
  EXPECT_TRUE(back.on_host());
  EXPECT_ALLCLOSE(back, h);
  // A contiguous device array is copied on its device; a strided one cannot be read there.
  EXPECT_EQ(d.copy().device(), Device::cuda());
  EXPECT_ALLCLOSE(d.copy().to_device(Device::host()), h);
  EXPECT_ERROR(TypeError, d.transpose().copy(), "Transfer it to the host first");
  // A non-contiguous host array is made contiguous before the one copy.
  NDArray dt = h.transpose().to_device(Device::cuda());
  EXPECT_ALLCLOSE(dt.to_device(Device::host()), h.transpose().copy());
  // A strided view comes back through the bytes it spans; on its device it cannot be copied.
  EXPECT_ALLCLOSE(d.transpose().to_device(Device::host()), h.transpose().copy(), 0.0, 0.0);
  NDArray wide = NDArray::from_vector<float>({1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, {3, 4}).to_device(Device::cuda());
  EXPECT_ALLCLOSE(wide.slice(1, 3, 0, -2).to_device(Device::host()),
                  wide.to_device(Device::host()).slice(1, 3, 0, -2).copy(), 0.0, 0.0);
  EXPECT_ERROR(ValueError, d.transpose().to_device(Device::cuda()), "non-contiguous");
}

TEST(Devices, AFunctionOnTheHostRefusesDeviceArguments) {
  EmulatedGpu gpu;
  Var x = vector("x", DType::Float64);
  FunctionOptions o;
  o.backend = "cpu";  // (the default, but in the device=cuda1 run)
  Function f = function({x}, {exp(x)}, o);
  NDArray d = NDArray::from_vector<double>({1, 2}).to_device(Device::cuda());
  EXPECT_ERROR(TypeError, f({d}), "expected an array in cpu memory (backend 'cpu') but got one on " + gpu_name());
}

TEST(Transfers, RoundTripThroughTheDeviceAndGradients) {
  EmulatedGpu gpu;
  Var x = vector("x", DType::Float64);
  Var on_dev = device_from_host(x, Device::cuda());
  EXPECT_EQ(on_dev->owner->op->name(), "GpuFromHost<" + gpu_name() + ">");
  Var back = host_from_device(on_dev);
  EXPECT_EQ(back->owner->op->name(), "HostFromGpu");
  Var y = mul(back, back);
  FunctionOptions o;
  o.mode = "NONE";
  o.backend = "cpu";  // (the default, but in the device=cuda1 run)
  Function f = function({x}, {y, back}, o);
  const int64_t in0 = copies().in, out0 = copies().out;
  auto r = f({NDArray::from_vector<double>({1, 2, 3})});
  EXPECT_EQ(copies().in, in0 + 1);
  EXPECT_EQ(copies().out, out0 + 1);
  EXPECT_ALLCLOSE(r[0], NDArray::from_vector<double>({1, 4, 9}));
  EXPECT_TRUE(r[1].on_host());
  // The gradient of a transfer is the transfer back.
  Var g = grad(sum(y), std::vector<Var>{x})[0];
  Function fg = function({x}, {g}, o);
  EXPECT_ALLCLOSE(fg({NDArray::from_vector<double>({1, 2, 3})})[0], NDArray::from_vector<double>({2, 4, 6}));
  bool saw_transfer = false;
  for (const auto& n : fg.toposort()) saw_transfer |= n->op->moves_between_devices();
  EXPECT_TRUE(saw_transfer);
}

TEST(Transfers, AnInputThatOnlyTransfersReadAcceptsAnArrayAlreadyOnTheDevice) {
  EmulatedGpu gpu;
  Var x = vector("x", DType::Float64);
  FunctionOptions o;
  o.mode = "NONE";
  o.backend = "cpu";  // (the default, but in the device=cuda1 run)
  Var on_dev = device_from_host(x, Device::cuda());
  Function f = function({x}, {host_from_device(on_dev), on_dev}, o);
  NDArray h = NDArray::from_vector<double>({1, 2, 3});
  NDArray d = h.to_device(Device::cuda());
  const int64_t in0 = copies().in, on0 = copies().on;
  auto r = f({d});
  // No copy from the host: the transfer copies the argument on the device (a fresh buffer, which
  // device nodes may overwrite), and the caller's array is not the output.
  EXPECT_EQ(copies().in, in0);
  EXPECT_EQ(copies().on, on0 + 1);
  EXPECT_ALLCLOSE(r[0], h);
  EXPECT_EQ(r[1].device(), Device::cuda());
  EXPECT_NE(r[1].raw(), d.raw());
  // A host argument still works, with its one copy in.
  EXPECT_ALLCLOSE(f({h})[0], h);
  EXPECT_EQ(copies().in, in0 + 1);
  // Non-contiguous or of another dtype: refused by name, not converted on the host.
  NDArray m = NDArray::from_vector<double>({1, 2, 3, 4}, {2, 2}).to_device(Device::cuda());
  Var xm = matrix("xm", DType::Float64);
  Function fm = function({xm}, {host_from_device(device_from_host(xm, Device::cuda()))}, o);
  EXPECT_ERROR(TypeError, fm({m.transpose()}), "is accepted as it is (C-contiguous, of dtype float64)");
  EXPECT_ALLCLOSE(fm({m})[0], m.to_device(Device::host()));
  NDArray f32 = NDArray::from_vector<float>({1, 2}).to_device(Device::cuda());
  EXPECT_ERROR(TypeError, f({f32}), "cast it on the host");
  // An input a host node reads too, or that is an output itself, takes host arrays only.
  Function g = function({x}, {host_from_device(on_dev), exp(x)}, o);
  EXPECT_ERROR(TypeError, g({d}), "the function reads this input on the host: transfer it first");
  Function id = function({x}, {x, host_from_device(on_dev)}, o);
  EXPECT_ERROR(TypeError, id({d}), "reads this input on the host");
  // Another device than the transfers' (such memory is refused where it would be made; an array
  // labelled so by a C++ caller's wrap is refused by the call).
  EXPECT_ERROR(NotImplementedError, h.to_device(other_gpu()), "one GPU per process");
  const NDArray d0 = h.to_device(Device::cuda());
  const NDArray d1 = NDArray::wrap(d0.storage(), d0.raw(), d0.shape(), d0.strides(), d0.dtype(), other_gpu());
  EXPECT_ERROR(TypeError, f({d1}), "only an array on " + gpu_name() + " or the host is accepted");
}

TEST(Placement, DeviceNodesRunOnTheDeviceAndTransfersOnlyWhereValuesCross) {
  EmulatedGpu gpu;
  FunctionOptions o;
  o.backend = hypatia::testing::kEmulatedGpuBackend;  // every rewrite, then placement
  Var x = vector("x", DType::Float64);
  Function f = function({x}, {exp(x) * 2.0}, o);
  // GpuFromHost (host), the elementwise work (device), HostFromGpu (host).
  const auto nodes = f.toposort();
  const auto devices = f.node_devices();
  ASSERT_EQ(nodes.size(), devices.size());
  int transfers = 0, on_device = 0;
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (nodes[i]->op->moves_between_devices()) {
      ++transfers;
      EXPECT_EQ(devices[i], Device::host()) << nodes[i]->op->name();
    } else {
      ++on_device;
      EXPECT_EQ(devices[i], Device::cuda()) << nodes[i]->op->name();
    }
  }
  EXPECT_EQ(transfers, 2);
  EXPECT_GE(on_device, 1);
  const int64_t in0 = copies().in, out0 = copies().out;
  EXPECT_ALLCLOSE(f({NDArray::from_vector<double>({0, 1})})[0], NDArray::from_vector<double>({2, 2 * std::exp(1.0)}));
  EXPECT_EQ(copies().in, in0 + 1);
  EXPECT_EQ(copies().out, out0 + 1);
  // Seed 000's all-shared variant: y = y * m + b with every value shared and y an update moves
  // the variables to the device once and transfers nothing per call.
  Var m = shared(NDArray::from_vector<double>({2, 2}), "m"), b = shared(NDArray::from_vector<double>({1, 1}), "b");
  Var y = shared(NDArray::from_vector<double>({0, 0}), "y");
  FunctionOptions so = o;
  so.updates = {{y, y * m + b}};
  Function step = function({}, {}, so);
  EXPECT_EQ(get_value(y, false, true).device(), Device::cuda());
  const int64_t in1 = copies().in, out1 = copies().out;
  for (int i = 0; i < 3; ++i) step({});
  EXPECT_EQ(copies().in, in1);
  EXPECT_EQ(copies().out, out1);
  EXPECT_ALLCLOSE(get_value(y), NDArray::from_vector<double>({7, 7}));  // 0 -> 1 -> 3 -> 7
  // The user's transfer of a value the device computes anyway leaves the graph (Theano's
  // gpu_from_host(exp(x))), and the output stays on the device: nothing crosses.
  Function keep = function({}, {Out(device_from_host(exp(y), Device::cuda()), true)}, o);
  for (const auto& n : keep.toposort()) EXPECT_FALSE(n->op->moves_between_devices()) << n->op->name();
  const int64_t in2 = copies().in, out2 = copies().out;
  const NDArray kept = keep({})[0];
  EXPECT_EQ(kept.device(), Device::cuda());
  EXPECT_EQ(copies().in, in2);
  EXPECT_EQ(copies().out, out2);
  EXPECT_ALLCLOSE(kept.to_device(Device::host()), NDArray::from_vector<double>({std::exp(7.0), std::exp(7.0)}));
  // On the CPU backend every node runs on the host.
  FunctionOptions on_cpu;
  on_cpu.backend = "cpu";  // (the default, but in the device=cuda1 run)
  for (const Device& d : function({x}, {exp(x)}, on_cpu).node_devices()) EXPECT_EQ(d, Device::host());
  // The transfers placement inserts take the user line of the value's producer, else its reader's.
  Var xt = vector("xt", DType::Float64);
  Var e = exp(xt);
  e->owner->trace = "model.py:7";
  int traced = 0;
  for (const auto& n : function({xt}, {e}, o).toposort())
    if (n->op->moves_between_devices()) {
      EXPECT_EQ(n->trace, "model.py:7") << n->op->name();
      ++traced;
    }
  EXPECT_EQ(traced, 2);
}

TEST(Placement, ASharedVariableCreatedWithATargetStaysOnItsDevice) {
  EmulatedGpu gpu;
  FunctionOptions o;
  o.backend = hypatia::testing::kEmulatedGpuBackend;
  // target cpu: the device reads it through a transfer per call, and its update comes back.
  Var w = shared(NDArray::from_vector<double>({1, 2}), "w", false, {}, Device::host());
  Var m = shared(NDArray::from_vector<double>({3, 3}), "m");  // no target: moves when compiled
  FunctionOptions so = o;
  so.updates = {{w, exp(w) * m}};
  Function step = function({}, {}, so);
  EXPECT_EQ(get_value(w, false, true).device(), Device::host());
  EXPECT_EQ(get_value(m, false, true).device(), Device::cuda());
  int to_device = 0, to_host = 0;
  for (const auto& n : step.toposort()) {
    to_device += dynamic_cast<const DeviceFromHost*>(n->op.get()) != nullptr;
    to_host += dynamic_cast<const HostFromDevice*>(n->op.get()) != nullptr;
  }
  EXPECT_EQ(to_device, 1);
  EXPECT_EQ(to_host, 1);
  const int64_t in0 = copies().in, out0 = copies().out;
  step({});
  EXPECT_EQ(copies().in, in0 + 1);
  EXPECT_EQ(copies().out, out0 + 1);
  EXPECT_EQ(get_value(w, false, true).device(), Device::host());
  EXPECT_ALLCLOSE(get_value(w), NDArray::from_vector<double>({3 * std::exp(1.0), 3 * std::exp(2.0)}));
  // set_value of a device array copies it to the host, where the variable lives.
  set_value(w, NDArray::from_vector<double>({0, 0}).to_device(Device::cuda()));
  EXPECT_EQ(get_value(w, false, true).device(), Device::host());
  step({});
  EXPECT_ALLCLOSE(get_value(w), NDArray::from_vector<double>({3, 3}));
  // target cuda: on the device from the start (before any function), and a function that reads
  // it on the host brings it over per call without moving it.
  Var v = shared(NDArray::from_vector<double>({4, 5}), "v", false, {}, Device::cuda());
  EXPECT_TRUE(v->cell->fixed_device == Device::cuda());
  EXPECT_EQ(get_value(v, false, true).device(), Device::cuda());
  EXPECT_ALLCLOSE(function({}, {v * 2.0})({})[0], NDArray::from_vector<double>({8, 10}));
  EXPECT_EQ(get_value(v, false, true).device(), Device::cuda());
  EXPECT_ALLCLOSE(function({}, {exp(v)}, o)({})[0], NDArray::from_vector<double>({std::exp(4.0), std::exp(5.0)}));
  // Another GPU than the process's is refused by name.
  EXPECT_ERROR(NotImplementedError, shared(NDArray::from_vector<double>({1}), "u", false, {}, other_gpu()),
               "this process runs on " + gpu_name());
}

TEST(Placement, EachFunctionQueuesOnItsOwnQueueAndWaitsOnlyForTheOthersWorkOnWhatItUses) {
  // The emulated GPU gives each function a queue, as the CUDA backend does with
  // cuda_streams=function, and notes the waits between queues the calls need (there being nothing
  // to wait for on the host).
  using testing::take_emulated_gpu_queue_waits;
  using W = std::vector<std::pair<int, int>>;
  EmulatedGpu gpu;
  FunctionOptions o;
  o.backend = hypatia::testing::kEmulatedGpuBackend;
  Var x = shared(NDArray::from_vector<double>({1, 2, 3}), "x");
  Var y = shared(NDArray::from_vector<double>({0, 0}), "y");
  FunctionOptions up = o;
  up.updates = {{x, x + 1.0}};
  Function step = function({}, {}, up);
  Function read = function({}, {x * 2.0}, o);
  Function other = function({}, {exp(y)}, o);
  Var a = vector("a", DType::Float64);
  Function scale = function({a}, {a * 3.0}, o);
  take_emulated_gpu_queue_waits();
  step({});  // x was put on the device outside any call (queue 0): nothing to wait for
  step({});  // what its own queue wrote
  EXPECT_EQ(take_emulated_gpu_queue_waits(), W{});
  read({});  // what step's queue wrote: read's waits for it
  W w = take_emulated_gpu_queue_waits();
  ASSERT_EQ(w.size(), 1u);
  const auto [r, s] = w[0];
  EXPECT_NE(r, s);
  EXPECT_GT(r, 0);
  EXPECT_GT(s, 0);
  read({});
  EXPECT_EQ(take_emulated_gpu_queue_waits(), (W{{r, s}}));
  // step writes x again (in place, or its old buffer goes back to step's cache): after read's
  // queue has read it.
  step({});
  EXPECT_EQ(take_emulated_gpu_queue_waits(), (W{{s, r}}));
  step({});
  other({});  // shares nothing with them
  EXPECT_EQ(take_emulated_gpu_queue_waits(), W{});
  // A device argument step's queue wrote: waited for by the queue of the function it is passed to.
  NDArray xv = get_value(x, true, true);
  ASSERT_EQ(xv.device(), Device::cuda());
  EXPECT_ALLCLOSE(scale({xv})[0], NDArray::from_vector<double>({15, 18, 21}));
  w = take_emulated_gpu_queue_waits();
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0].second, s);
  EXPECT_ALLCLOSE(read({})[0], NDArray::from_vector<double>({10, 12, 14}));
  EXPECT_ALLCLOSE(get_value(x), NDArray::from_vector<double>({5, 6, 7}));
  // A function that keeps its buffers from call to call (gc off) writes its device result's
  // buffer again only after the queue of the function that read it.
  FunctionOptions keep = o;
  keep.allow_gc = false;
  Var v = vector("v", DType::Float64);
  Function make = function({v}, {Out(device_from_host(exp(v), Device::cuda()), true)}, keep);
  take_emulated_gpu_queue_waits();
  NDArray yd = make({NDArray::from_vector<double>({0, 0, 0})})[0];
  ASSERT_EQ(yd.device(), Device::cuda());
  EXPECT_ALLCLOSE(scale({yd})[0], NDArray::from_vector<double>({3, 3, 3}));
  w = take_emulated_gpu_queue_waits();
  ASSERT_EQ(w.size(), 1u);
  const auto [sc, mk] = w[0];
  EXPECT_NE(sc, mk);
  yd = NDArray();
  make({NDArray::from_vector<double>({0, 0, 0})});
  EXPECT_EQ(take_emulated_gpu_queue_waits(), (W{{mk, sc}}));
}

TEST(Placement, IndexArithmeticStaysOnTheHostAndOutOfPlace) {
  // The gradient of a mean divides by a count computed from shape entries (sub, int_div, neg,
  // maximum of 0-d integers): index arithmetic, which runs on the host (on the device each call
  // would copy a shape entry there and compute the count with four launches). The in-place pass
  // leaves integer scalars out of place: in place, each would order the shape's other readers
  // (device kernels) before it and split the device's work.
  EmulatedGpu gpu;
  FunctionOptions o;
  o.backend = hypatia::testing::kEmulatedGpuBackend;
  Var x = matrix("x", DType::Float32);
  Var y = vector("y", DType::Int64);
  Var w = shared(NDArray::from_vector<float>({0.5f, -1, 2, 0.25f, 1, -0.5f}).reshape({2, 3}), "w");
  Var cost = mean(categorical_crossentropy(softmax(dot(x, w)), y));
  Var g = grad(cost, std::vector<Var>{w})[0];
  Function f = function({x, y}, {cost, g}, o);
  const auto nodes = f.toposort();
  const auto devices = f.node_devices();
  int index_arithmetic = 0;
  for (size_t i = 0; i < nodes.size(); ++i) {
    const Apply& n = *nodes[i];
    if (!dynamic_cast<const Elemwise*>(n.op.get()) || n.output_ptr(0)->type.ndim() != 0 ||
        !is_integer(n.output_ptr(0)->type.dtype))
      continue;
    ++index_arithmetic;
    EXPECT_EQ(devices[i], Device::host()) << n.op->name();
    EXPECT_TRUE(n.op->destroy_map().empty()) << n.op->name();
  }
  EXPECT_GE(index_arithmetic, 3);
  // A node built in place by hand is index arithmetic all the same (placement runs after the
  // in-place pass and asks the op's types, not its form).
  Var a = scalar("a", DType::Int64), b = scalar("b", DType::Int64);
  Var d = sub(a, b);
  const auto& sub_op = static_cast<const Elemwise&>(*d->owner->op);
  Var in_place = apply_op1(std::make_shared<Elemwise>(sub_op.scalar, sub_op.cast_to, 0), {a, b});
  ASSERT_FALSE(in_place->owner->op->destroy_map().empty());
  EXPECT_TRUE(is_index_arithmetic(*in_place->owner));
  const NDArray xv = NDArray::from_vector<float>({1, 2, -1, 0.5f, 3, 1, 0, -2}).reshape({4, 2});
  const NDArray yv = NDArray::from_vector<int64_t>({0, 2, 1, 2});
  FunctionOptions cpu;
  Function fc = function({x, y}, {cost, g}, cpu);
  const auto got = f({xv, yv}), want = fc({xv, yv});
  EXPECT_ALLCLOSE(got[0], want[0], 1e-6);
  EXPECT_ALLCLOSE(got[1], want[1], 1e-6);
}

TEST(Placement, AStepReadingAValueOnTheOtherSideIsAnInternalErrorAtCompileTime) {
  // Program::finalize checks where each step's inputs are against where its kernel reads them: a
  // device kernel handed a host argument would meet a bad address on a GPU. A schedule built by
  // hand (placement never makes one): exp on the emulated GPU reading the host argument directly.
  EmulatedGpu gpu;
  Var x = vector("x", DType::Float64);
  Var e = exp(x);
  Program p;
  p.backend = &get_backend(hypatia::testing::kEmulatedGpuBackend);
  p.cell_kind = {CellKind::Input, CellKind::Intermediate};
  p.constants.resize(2);
  p.inputs.push_back(Program::InputSlot{.cell = 0, .type = x->type, .name = "x"});
  Program::Step st;
  st.node = e->owner->shared_from_this();
  st.in = {0};
  st.out = {1};
  p.steps.push_back(st);
  EXPECT_ERROR(InternalError, p.finalize(),
               "placement left input 0 (an argument) in cpu memory, but the kernel that runs it (backend "
               "'emulated_gpu') reads it in " +
                   gpu_name() + " memory");
}

/// The device of the first node of `op_name` in f's schedule.
Device device_of(const Function& f, const std::string& op_name) {
  const auto nodes = f.toposort();
  const auto devices = f.node_devices();
  for (size_t i = 0; i < nodes.size(); ++i)
    if (nodes[i]->op->name().rfind(op_name, 0) == 0) return devices[i];
  ADD_FAILURE() << "no " << op_name << " node";
  return Device::host();
}

TEST(Placement, AScanWhoseBodyTheDeviceRunsLoopsThereAndMovesNothingPerStep) {
  EmulatedGpu gpu;
  FunctionOptions o;
  o.backend = hypatia::testing::kEmulatedGpuBackend;
  FunctionOptions cpu;
  cpu.backend = "cpu";
  // An RNN with a shared recurrent matrix (kept on the device), a sequence, an initial state and
  // an input matrix passed per call, a traced state and a nit-sot.
  const int H = 4, I = 3;
  Var W = shared(testing::random_array({H, H}, DType::Float64, -0.5, 0.5, 1), "W");
  Var xs = matrix("xs", DType::Float64), h0 = vector("h0", DType::Float64), U = matrix("U", DType::Float64);
  auto outs = scan(
      [](const std::vector<Var>& a) {  // x_t, h_{t-1}, W, U
        return std::vector<Var>{tanh(dot(a[2], a[1]) + dot(a[3], a[0])), sum(a[1])};
      },
      {xs}, {h0, nullptr}, {W, U});
  // The gradient (ScanGrad: back-propagation through the steps) loops on the device too.
  std::vector<Var> g = grad(sum(outs[0]) + sum(outs[1]), std::vector<Var>{U, h0, xs, W});
  Function fg = function({xs, h0, U}, {outs[0], outs[1], g[0], g[1], g[2], g[3]}, o);
  Function fc = function({xs, h0, U}, {outs[0], outs[1], g[0], g[1], g[2], g[3]}, cpu);
  EXPECT_EQ(device_of(fg, "Scan"), Device::cuda());
  EXPECT_EQ(device_of(fg, "ScanGrad"), Device::cuda());
  const NDArray hv = testing::random_array({H}, DType::Float64, -1, 1, 2),
                Uv = testing::random_array({H, I}, DType::Float64, -1, 1, 3);
  for (int64_t T : {3, 12}) {
    SCOPED_TRACE("steps " + std::to_string(T));
    const NDArray xv = testing::random_array({T, I}, DType::Float64, -1, 1, 4);
    const Copies c0 = copies();
    const auto got = fg({xv, hv, Uv});
    const Copies c1 = copies();
    // In: the three arguments, and three shape entries the gradient's device nodes read (the
    // stand-in reads every input on the device); out: the six outputs. The step count (max(len(xs),
    // 0)) is index arithmetic, on the host: nothing comes back for it. The same for any number of steps.
    EXPECT_EQ(c1.in - c0.in, 6);
    EXPECT_EQ(c1.out - c0.out, 6);
    const auto want = fc({xv, hv, Uv});
    for (int k = 0; k < 6; ++k) EXPECT_ALLCLOSE(got[k], want[k], 1e-12, 1e-12) << "output " << k;
  }
  // An until loop on the device: the condition is the one value read back per step.
  Var x0 = scalar("x0", DType::Float64);
  ScanInfo info;
  info.state_taps = {{-1}};
  info.state_traced = {true};
  info.until = true;
  Var prev = scalar("prev", DType::Float64);
  Var nxt = prev * 2.0;
  auto doubled = scan_node(info, {prev}, {nxt, gt(nxt, constant(100.0, DType::Float64))}, int_constant(1000), {},
                           {expand_dims(x0, 0)}, {});
  Function fu = function({x0}, {doubled[0]}, o);
  EXPECT_EQ(device_of(fu, "Scan"), Device::cuda());
  EXPECT_ALLCLOSE(fu({NDArray::scalar(3.0, DType::Float64)})[0], NDArray::from_vector<double>({6, 12, 24, 48, 96, 192}),
                  0, 0);
  // A body with a node the device does not run (jacobian's MapIndex, which runs an inner
  // function) keeps the scan on the host, and its body with it: still nothing crosses per step.
  Var y0 = vector("y0", DType::Float64);
  auto host_loop =
      scan([](const std::vector<Var>& a) { return std::vector<Var>{dot(jacobian(tanh(a[0]), a[0]), a[0]) + 0.5}; }, {},
           {y0}, {}, int_constant(7));
  Function fl = function({y0}, {host_loop[0]}, o);
  EXPECT_EQ(device_of(fl, "Scan"), Device::host());
  const Copies l0 = copies();
  const NDArray lv = fl({NDArray::from_vector<double>({-3, 1})})[0];
  const Copies l1 = copies();
  EXPECT_LE(l1.in - l0.in + l1.out - l0.out, 2);
  EXPECT_ALLCLOSE(lv, function({y0}, {host_loop[0]}, cpu)({NDArray::from_vector<double>({-3, 1})})[0], 0, 0);
  // A lazy ifelse in the body runs on the device: only its condition comes back, once per step.
  auto branchy = scan(
      [](const std::vector<Var>& a) {
        return std::vector<Var>{ifelse(gt(sum(a[0]), constant(0.0, DType::Float64)), a[0] * 0.5, a[0] + 1.0)};
      },
      {}, {y0}, {}, int_constant(7));
  Function fb = function({y0}, {branchy[0]}, o);
  EXPECT_EQ(device_of(fb, "Scan"), Device::cuda());
  const Copies b0 = copies();
  const NDArray bv = fb({NDArray::from_vector<double>({-3, 1})})[0];
  const Copies b1 = copies();
  EXPECT_EQ(b1.out - b0.out, 1 + 7);  // the result, and each step's condition
  EXPECT_ALLCLOSE(bv, function({y0}, {branchy[0]}, cpu)({NDArray::from_vector<double>({-3, 1})})[0], 0, 0);
}

TEST(Placement, ALazyIfElseOnTheDeviceRunsOnlyTheTakenBranchAndBringsBackItsCondition) {
  EmulatedGpu gpu;
  FunctionOptions o;
  o.backend = hypatia::testing::kEmulatedGpuBackend;
  Var x = vector("x", DType::Float64);
  // The condition is computed on the device; the else branch fails if it runs (an index out of
  // range): only the taken one may.
  Var taken = exp(x) * 2.0;
  Var failing = subtensor(x, 5) + x;
  Function f = function({x}, {ifelse(gt(sum(x), constant(0.0, DType::Float64)), taken, failing)}, o);
  EXPECT_EQ(device_of(f, "IfElse"), Device::cuda());
  const NDArray xv = NDArray::from_vector<double>({0.5, 1.0});
  const Copies c0 = copies();
  const NDArray r = f({xv})[0];
  const Copies c1 = copies();
  EXPECT_ALLCLOSE(r, NDArray::from_vector<double>({2 * std::exp(0.5), 2 * std::exp(1.0)}), 1e-15, 0);
  EXPECT_EQ(c1.in - c0.in, 1);    // x
  EXPECT_EQ(c1.out - c0.out, 2);  // the condition, the result
  EXPECT_ERROR(IndexError, f({NDArray::from_vector<double>({-0.5, -1.0})}), "index 5 is out of bounds");
}

TEST(DeviceChecks, AnIndexOutOfRangeFoundOnTheDeviceFailsTheCallBeforeAnySharedVariableChanges) {
  // The emulated GPU indexes as the CUDA backend does: the label vector is read on the device, a
  // label out of range is found there, and the call fails once its other steps have run, before
  // the update of W (a Gemm written in place) and the shared step counter run.
  EmulatedGpu gpu;
  FunctionOptions o;
  o.backend = hypatia::testing::kEmulatedGpuBackend;
  Var x = matrix("x", DType::Float64);
  Var labels = vector("labels", DType::Int64);
  Var w = shared(NDArray::from_vector<double>({0.5, -1, 2, 0.25, 1, -0.5}).reshape({2, 3}), "W");
  Var steps = shared(NDArray::scalar(0.0, DType::Float64), "steps");
  Var logp = log_softmax(dot(x, w));
  Var picked = subtensor(
      logp, {Index(arange(constant(0.0, DType::Int64), shape_i(x, 0), constant(1.0, DType::Int64), DType::Int64)),
             Index(labels)});
  picked->owner->trace = "train.py:12";
  Var cost = -mean(picked);
  o.updates = {{w, w - grad(cost, w) * 0.1}, {steps, steps + 1.0}};
  Function step = function({x, labels}, {cost}, o);
  int checked_nodes = 0;
  for (const auto& n : step.toposort())
    if (n->op->name().find("Advanced") != std::string::npos) ++checked_nodes;
  EXPECT_EQ(checked_nodes, 2);  // the gather and the scatter-add of its gradient
  const NDArray xv = NDArray::from_vector<double>({1, 2, -1, 0.5}).reshape({2, 2});
  const NDArray w0 = get_value(w).copy();
  const std::string msg = error_of<IndexError>([&] { step({xv, NDArray::from_vector<int64_t>({1, 3})}); });
  EXPECT_NE(msg.find("AdvancedSubtensor"), std::string::npos) << msg;
  EXPECT_NE(msg.find("index 3 is out of bounds for axis 1 with size 3"), std::string::npos) << msg;
  EXPECT_NE(msg.find("train.py:12"), std::string::npos) << msg;
  EXPECT_ALLCLOSE(get_value(w), w0, 0.0, 0.0);
  EXPECT_EQ(get_value(steps).get_flat(0), 0.0);
  // The error is not kept: the next call with good labels runs and updates, as the CPU does.
  FunctionOptions c = o;
  c.backend = "cpu";
  Var wc = shared(w0.copy(), "Wc");
  Var logpc = log_softmax(dot(x, wc));
  Var costc = -mean(subtensor(
      logpc, {Index(arange(constant(0.0, DType::Int64), shape_i(x, 0), constant(1.0, DType::Int64), DType::Int64)),
              Index(labels)}));
  c.updates = {{wc, wc - grad(costc, wc) * 0.1}};
  Function ref = function({x, labels}, {costc}, c);
  const NDArray good = NDArray::from_vector<int64_t>({2, -3});
  EXPECT_ALLCLOSE(step({xv, good})[0], ref({xv, good})[0]);
  EXPECT_ALLCLOSE(get_value(w), get_value(wc));
  EXPECT_EQ(get_value(steps).get_flat(0), 1.0);
  // A negative label below -n is out of range too, and named as given.
  EXPECT_ERROR(IndexError, step({xv, NDArray::from_vector<int64_t>({-4, 0})}),
               "index -4 is out of bounds for axis 1 with size 3");
  EXPECT_EQ(get_value(steps).get_flat(0), 1.0);
}

TEST(DeviceChecks, AnIndexOutOfRangeInAScanBodyFailsTheCallAsOnTheCpu) {
  // A scan over rows of an index matrix, gathering rows of x in its body: the gather runs on the
  // device and checks its indices there; each step of the loop raises its own failure (the next
  // step's launch would clear it), with the CPU's message.
  EmulatedGpu gpu;
  FunctionOptions o;
  o.backend = hypatia::testing::kEmulatedGpuBackend;
  Var x = matrix("x", DType::Float64);
  Var idx = matrix("idx", DType::Int64);
  auto outs = scan(
      [](const std::vector<Var>& a) {  // row_t, acc_{t-1}, x
        return std::vector<Var>{a[1] + sum(subtensor(a[2], {Index(a[0])}))};
      },
      {idx}, {constant(0.0, DType::Float64)}, {x});
  Function f = function({x, idx}, {outs[0]}, o);
  FunctionOptions cpu;
  cpu.backend = "cpu";
  Function fc = function({x, idx}, {outs[0]}, cpu);
  const NDArray xv = NDArray::from_vector<double>({0, 1, 2, 3, 4, 5}).reshape({2, 3});
  const NDArray good = NDArray::from_vector<int64_t>({0, 1, 1, 1}).reshape({2, 2});
  EXPECT_ALLCLOSE(f({xv, good})[0], fc({xv, good})[0]);
  for (const NDArray& bad : {NDArray::from_vector<int64_t>({0, 5, 1, 1}).reshape({2, 2}),
                             NDArray::from_vector<int64_t>({0, 1, 1, -3}).reshape({2, 2})}) {
    const std::string want = error_of<IndexError>([&] { fc({xv, bad}); });
    ASSERT_FALSE(want.empty());
    const std::string got = error_of<IndexError>([&] { f({xv, bad}); });
    const std::string bound = bad.get_flat(1) == 5 ? "index 5 is out of bounds" : "index -3 is out of bounds";
    EXPECT_NE(got.find(bound), std::string::npos) << got << "\nthe CPU: " << want;
    EXPECT_NE(want.find(bound), std::string::npos) << want;
  }
  EXPECT_ALLCLOSE(f({xv, good})[0], fc({xv, good})[0]);
}

TEST(Placement, EveryOpInfoSampleOnTheEmulatedGpuMatchesTheCpu) {
  // Every op the CPU has runs on the emulated GPU: placement and its transfers for all of them.
  EmulatedGpu gpu;
  const hypatia::testing::Conformance r =
      hypatia::testing::compare_op_infos_with_cpu(hypatia::testing::kEmulatedGpuBackend);
  std::printf("OpInfo on the emulated GPU: %d samples compared, %d nodes on the device\n", r.compared, r.on_device);
  EXPECT_GT(r.compared, 1000);
  EXPECT_GT(r.on_device, 1000);
  EXPECT_EQ(r.failures, "");
}

TEST(Placement, EveryOpInfoGradientOnTheEmulatedGpuMatchesTheCpu) {
  EmulatedGpu gpu;
  const hypatia::testing::Conformance r =
      hypatia::testing::compare_op_info_gradients_with_cpu(hypatia::testing::kEmulatedGpuBackend);
  std::printf("OpInfo gradients on the emulated GPU: %d samples compared, %d nodes on the device\n", r.compared,
              r.on_device);
  EXPECT_GT(r.compared, 100);
  EXPECT_GT(r.on_device, 1000);
  EXPECT_EQ(r.failures, "");
}

TEST(Transfers, AHostKernelReadingADeviceArrayIsAClearError) {
  EmulatedGpu gpu;
  Var x = vector("x", DType::Float64);
  FunctionOptions o;
  o.mode = "NONE";
  o.backend = "cpu";  // (the default, but in the device=cuda1 run)
  Function f = function({x}, {exp(device_from_host(x, Device::cuda()))}, o);
  EXPECT_ERROR(TypeError, f({NDArray::from_vector<double>({1, 2})}), "input 0 is on " + gpu_name());
}

}  // namespace
}  // namespace hypatia
