// The open backend interface (backends/backend.h), device-aware arrays (core/device.h) and the
// transfer ops (ops/transfer.h).
#include <cstring>

#include "hypatia/backends/backend.h"
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

/// A stand-in device for the tests: host memory behind the Cuda kind, with copies counted.
struct FakeDevice {
  int copies_in = 0, copies_out = 0;
  void install() {
    DeviceMemory m;
    m.allocate = [](size_t bytes) -> std::shared_ptr<void> {
      return std::shared_ptr<void>(std::malloc(bytes ? bytes : 1), std::free);
    };
    m.copy_from_host = [this](void* d, const void* s, size_t n) {
      ++copies_in;
      std::memcpy(d, s, n);
    };
    m.copy_to_host = [this](void* d, const void* s, size_t n) {
      ++copies_out;
      std::memcpy(d, s, n);
    };
    register_device_memory(DeviceKind::Cuda, std::move(m));
  }
};
FakeDevice& fake_device() {
  // The backends register first (the CUDA backend, where built, registers the real memory of the
  // Cuda kind); the stand-in then takes its place for the test that asked for it.
  (void)backend_names();
  static FakeDevice d;
  d.install();
  return d;
}

TEST(Devices, NamesParseAndPrint) {
  EXPECT_EQ(Device::parse("cpu"), Device::host());
  EXPECT_EQ(Device::parse("cuda"), Device::cuda(0));
  EXPECT_EQ(Device::parse("cuda1"), Device::cuda(1));
  EXPECT_EQ(Device::parse("cuda:2").str(), "cuda:2");
  EXPECT_ERROR(ValueError, Device::parse("gpu0"), "expected 'cpu', 'cuda', 'cudaN' or 'cuda:N'");
  EXPECT_ERROR(ValueError, Device::parse("cuda:-1"), "not a device");
}

TEST(Devices, ADeviceArrayComesFromItsAllocatorAndHostCodeRefusesIt) {
  FakeDevice& dev = fake_device();
  NDArray h = NDArray::from_vector<float>({1, 2, 3, 4}, {2, 2});
  const int in0 = dev.copies_in, out0 = dev.copies_out;
  NDArray d = h.to_device(Device::cuda(0));
  EXPECT_EQ(d.device(), Device::cuda(0));
  EXPECT_FALSE(d.on_host());
  EXPECT_EQ(dev.copies_in, in0 + 1);
  EXPECT_ERROR(TypeError, d.get_flat(0), "is on cuda:0");
  EXPECT_ERROR(TypeError, d.fill(1.0), "fill");
  EXPECT_ERROR(TypeError, h.assign(d), "assign");
  EXPECT_NE(d.describe().find("on cuda:0"), std::string::npos);
  // Views stay on the device; the round trip gives the values back.
  EXPECT_EQ(d.transpose().device(), Device::cuda(0));
  NDArray back = d.to_device(Device::host());
  EXPECT_EQ(dev.copies_out, out0 + 1);
  EXPECT_TRUE(back.on_host());
  EXPECT_ALLCLOSE(back, h);
  // A contiguous device array is copied on its device; a strided one cannot be read there.
  EXPECT_EQ(d.copy().device(), Device::cuda(0));
  EXPECT_ALLCLOSE(d.copy().to_device(Device::host()), h);
  EXPECT_ERROR(TypeError, d.transpose().copy(), "Transfer it to the host first");
  // A non-contiguous host array is made contiguous before the one copy.
  NDArray dt = h.transpose().to_device(Device::cuda(0));
  EXPECT_ALLCLOSE(dt.to_device(Device::host()), h.transpose().copy());
  EXPECT_ERROR(ValueError, d.transpose().to_device(Device::host()), "non-contiguous");
}

TEST(Devices, AFunctionOnTheHostRefusesDeviceArguments) {
  fake_device();
  Var x = vector("x", DType::Float64);
  Function f = function({x}, {exp(x)});
  NDArray d = NDArray::from_vector<double>({1, 2}).to_device(Device::cuda(0));
  EXPECT_ERROR(TypeError, f({d}), "expected an array in cpu memory (backend 'cpu') but got one on cuda:0");
}

TEST(Transfers, RoundTripThroughTheDeviceAndGradients) {
  FakeDevice& dev = fake_device();
  Var x = vector("x", DType::Float64);
  Var on_dev = device_from_host(x, Device::cuda(0));
  EXPECT_EQ(on_dev->owner->op->name(), "GpuFromHost<cuda:0>");
  Var back = host_from_device(on_dev);
  EXPECT_EQ(back->owner->op->name(), "HostFromGpu");
  Var y = mul(back, back);
  FunctionOptions o;
  o.mode = "NONE";
  Function f = function({x}, {y, back}, o);
  const int in0 = dev.copies_in, out0 = dev.copies_out;
  auto r = f({NDArray::from_vector<double>({1, 2, 3})});
  EXPECT_EQ(dev.copies_in, in0 + 1);
  EXPECT_EQ(dev.copies_out, out0 + 1);
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

TEST(Transfers, AHostKernelReadingADeviceArrayIsAClearError) {
  fake_device();
  Var x = vector("x", DType::Float64);
  FunctionOptions o;
  o.mode = "NONE";
  Function f = function({x}, {exp(device_from_host(x, Device::cuda(0)))}, o);
  EXPECT_ERROR(TypeError, f({NDArray::from_vector<double>({1, 2})}), "input 0 is on cuda:0");
}

}  // namespace
}  // namespace hypatia
