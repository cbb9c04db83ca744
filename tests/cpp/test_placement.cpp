// The placement pass (compile/placement.h) on the emulated GPU (testing/emulated_gpu.h): which
// nodes run on the device, where transfers go, each function's queue, scan and ifelse bodies on
// the device, and the checks a kernel makes on the device (KernelTraits::device_checks).
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
  // The gradient of a mean over a slice divides by a count computed from shape entries (sub,
  // int_div, neg, maximum of 0-d integers): index arithmetic, which runs on the host (on the device each call
  // would copy a shape entry there and compute the count with four launches). The in-place pass
  // leaves integer scalars out of place: in place, each would order the shape's other readers
  // (device kernels) before it and split the device's work.
  EmulatedGpu gpu;
  FunctionOptions o;
  o.backend = hypatia::testing::kEmulatedGpuBackend;
  Var x = matrix("x", DType::Float32);
  Var y = vector("y", DType::Int64);
  Var w = shared(NDArray::from_vector<float>({0.5f, -1, 2, 0.25f, 1, -0.5f}).reshape({2, 3}), "w");
  Var cost = mean(subtensor(categorical_crossentropy(softmax(dot(x, w)), y), {sl(1)}));
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

}  // namespace
}  // namespace hypatia
