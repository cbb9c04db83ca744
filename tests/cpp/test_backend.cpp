// The open backend interface (backends/backend.h), device-aware arrays (core/device.h) and the
// transfer ops (ops/transfer.h). (Placement and the device's checks: test_placement.cpp.)
#include <cstdlib>
#include <cstring>
#include <thread>

#include "backend_conformance.h"
#include "device_test_util.h"
#include "hypatia/backends/backend.h"
#include "hypatia/ops/ifelse.h"
#include "hypatia/ops/scan.h"
#include "hypatia/ops/transfer.h"
#include "hypatia/runtime/program.h"
#include "hypatia/testing/emulated_gpu.h"
#include "test_util.h"

namespace hypatia {
namespace {

using testing::copies;
using testing::Copies;
using testing::EmulatedGpu;
using testing::error_of;
using testing::gpu_name;
using testing::other_gpu;

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
