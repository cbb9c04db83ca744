// The CUDA backend's recordings (backends/cuda/cuda_graphs.cpp, runtime/program_replay.cpp): a
// function's runs of kernels recorded as CUDA graphs on a repeated call and replayed after, on a
// GPU (skipped without one; the runtime's side runs in CI on a fake recording device:
// test_replay.cpp).
#include "hypatia/ops/transfer.h"
#include "test_cuda_util.h"

namespace hypatia {
namespace {

using testing::classifier_step;
using testing::on;
using testing::transfers;

using testing::seeded_array;

TEST(CudaRun, ATrainingLoopIsRecordedAsCudaGraphsAndReplayed) {
  REQUIRE_GPU();
  // Two copies of the step, one with graphs and one without: the same costs and parameters over
  // twelve calls whose batch changes values in the same host buffer.
  std::vector<Var> pa, pb;
  Function fa = classifier_step("cuda", pa), fb = classifier_step("cuda", pb);
  NDArray xv = seeded_array({8, 20}, DType::Float32, 5);
  NDArray yv = NDArray::empty({8}, DType::Int64);
  for (int i = 0; i < 8; ++i) yv.data<int64_t>()[i] = (i * 3) % 5;
  const cuda::GraphStats s0 = cuda::graph_stats();
  for (int step = 0; step < 12; ++step) {
    xv.data<float>()[step] += 0.5f;
    NDArray ca = fa({xv, yv})[0];
    NDArray cb;
    {
      testing::ScopedSetting<bool> off(config().cuda_graphs, false);
      cb = fb({xv, yv})[0];
    }
    EXPECT_ALLCLOSE(ca, cb, 1e-5, 1e-6) << "step " << step;
  }
  for (size_t i = 0; i < pa.size(); ++i) EXPECT_ALLCLOSE(get_value(pa[i]), get_value(pb[i]), 1e-4, 1e-6);
  const cuda::GraphStats s1 = cuda::graph_stats();
  EXPECT_GT(s1.recorded, s0.recorded);
  EXPECT_EQ(s1.failed, s0.failed) << s1.last_error;
  EXPECT_GE(s1.replays - s0.replays, 10) << fa.debugprint();
  // With cuda_graphs=False nothing is recorded.
  testing::ScopedSetting<bool> off(config().cuda_graphs, false);
  std::vector<Var> pc;
  Function fc = classifier_step("cuda", pc);
  for (int step = 0; step < 4; ++step) fc({xv, yv});
  EXPECT_EQ(cuda::graph_stats().recorded, s1.recorded);
}

TEST(CudaRun, AStepOverABatchAndLabelsOnTheDeviceMovesNothingAndReplaysWhole) {
  REQUIRE_GPU();
  // Seed 003's GPU variant: the batch and its labels in shared variables. The labels are checked
  // on the device (the fused cross-entropy and its gradient read them there), so nothing
  // crosses per call and the step replays as two recordings (before and after the check that
  // precedes the in-place updates).
  Var x = shared(seeded_array({8, 20}, DType::Float32, 5), "x");
  NDArray labels = NDArray::empty({8}, DType::Int64);
  for (int i = 0; i < 8; ++i) labels.data<int64_t>()[i] = (i * 3) % 5;
  Var y = shared(labels, "y");
  Var w0 = shared(seeded_array({20, 16}, DType::Float32, 1, -0.5, 0.5), "w0");
  Var w1 = shared(seeded_array({16, 5}, DType::Float32, 2, -0.5, 0.5), "w1");
  std::vector<Var> params = {w0, w1};
  Var cost = mean(categorical_crossentropy(softmax(dot(tanh(dot(x, w0)), w1)), y));
  std::vector<Var> g = grad(cost, params);
  FunctionOptions o = on("cuda");
  for (size_t i = 0; i < params.size(); ++i)
    o.updates.push_back({params[i], sub(params[i], mul(g[i], constant(0.1, DType::Float32)))});
  Function f = function({}, {Out(device_from_host(cost, Device::cuda()), true)}, o);
  EXPECT_EQ(transfers(f), 0) << f.debugprint();
  std::string on_cpu;
  for (const auto& n : f.toposort())
    if (get_backend("cuda").provider(*n)->name() != "cuda") on_cpu += n->op->name() + " ";
  EXPECT_EQ(on_cpu.find("CrossentropySoftmax1HotWithBias"), std::string::npos) << on_cpu;
  const cuda::GraphStats s0 = cuda::graph_stats();
  for (int i = 0; i < 10; ++i) f({});
  const cuda::GraphStats s1 = cuda::graph_stats();
  EXPECT_EQ(s1.failed, s0.failed) << s1.last_error;
  EXPECT_GE(s1.replays - s0.replays, 2 * 8) << f.debugprint();
  // A bad label found on the device fails the call with the CPU's message; nothing moves.
  const NDArray w0_before = get_value(w0);
  labels.data<int64_t>()[3] = 7;
  set_value(y, labels);
  EXPECT_ERROR(IndexError, f({}), "label 7 at row 3 is out of range for 5 classes");
  EXPECT_ALLCLOSE(get_value(w0), w0_before, 0.0, 0.0);
  // And the next good call goes on from there.
  labels.data<int64_t>()[3] = 4;
  set_value(y, labels);
  f({});
  EXPECT_GT(testing::compare_arrays(get_value(w0), w0_before, 0.0, 0.0).size(), 0u);
}

TEST(CudaRun, ACountComputedFromShapesIsUploadedInsideTheRecordingAndKeyedByItsValue) {
  REQUIRE_GPU();
  // mean over rows of a shared matrix: the host computes the row count from its shape, and its
  // GpuFromHost (hyp_upload: the bytes in the kernel's arguments) is recorded with the device
  // work. Changing the shape changes the count: another recording, never a stale value.
  Var x = shared(seeded_array({8, 6}, DType::Float32, 3), "x");
  Var y = mul(mean(x, std::vector<int>{0}), constant(3.0, DType::Float32));
  Function f = function({}, {Out(device_from_host(exp(y), Device::cuda()), true)}, on("cuda"));
  int uploads = 0;
  for (const auto& n : f.toposort()) uploads += dynamic_cast<const DeviceFromHost*>(n->op.get()) != nullptr;
  const auto runs = f.recorded_runs();
  ASSERT_EQ(runs.size(), 1u) << f.debugprint();
  FunctionOptions cpu;
  cpu.backend = "cpu";
  Var xc = matrix("x", DType::Float32);
  Function want = function({xc}, {exp(mul(mean(xc, std::vector<int>{0}), constant(3.0, DType::Float32)))}, cpu);
  const cuda::GraphStats s0 = cuda::graph_stats();
  for (int64_t rows : {8, 8, 8, 5, 5, 5, 8, 8, 1, 1, 1}) {
    const NDArray v = seeded_array({rows, 6}, DType::Float32, 10 + rows);
    set_value(x, v);
    EXPECT_ALLCLOSE(f({})[0].to_device(Device::host()), want({v})[0], 1e-5, 1e-6) << rows << " rows";
  }
  const cuda::GraphStats s1 = cuda::graph_stats();
  EXPECT_EQ(s1.failed, s0.failed) << s1.last_error;
  EXPECT_GE(s1.replays - s0.replays, 4) << f.debugprint();
  std::printf("mean over rows: %d GpuFromHost in the graph, %lld recordings, %lld replays\n", uploads,
              static_cast<long long>(s1.recorded - s0.recorded), static_cast<long long>(s1.replays - s0.replays));
}

TEST(CudaRun, DeviceResultsTheCallerKeepsAreNotOverwrittenByReplays) {
  REQUIRE_GPU();
  Var s = shared(NDArray::zeros({1000}, DType::Float32), "s");
  Var y = add(mul(exp(mul(s, constant(0.01, DType::Float32))), constant(2.0, DType::Float32)), sum(s));
  FunctionOptions o = on("cuda");
  o.updates = {{s, add(s, constant(1.0, DType::Float32))}};
  Function f = function({}, {Out(device_from_host(y, Device::cuda()), true)}, o);
  const cuda::GraphStats s0 = cuda::graph_stats();
  std::vector<NDArray> kept;
  for (int i = 0; i < 8; ++i) kept.push_back(f({})[0]);
  for (int i = 0; i < 8; ++i) {
    ASSERT_FALSE(kept[i].on_host());
    const NDArray h = kept[i].to_device(Device::host());
    const double want = 2 * std::exp(0.01 * i) + 1000.0 * i;
    EXPECT_NEAR(h.get_flat(0), want, 1e-4 * want + 1e-5) << "call " << i;
    EXPECT_NEAR(h.get_flat(999), want, 1e-4 * want + 1e-5) << "call " << i;
  }
  // Dropped results free their recordings: the loop then replays.
  kept.clear();
  for (int i = 8; i < 14; ++i) {
    const NDArray h = f({})[0].to_device(Device::host());
    const double want = 2 * std::exp(0.01 * i) + 1000.0 * i;
    EXPECT_NEAR(h.get_flat(500), want, 1e-4 * want + 1e-5) << "call " << i;
  }
  EXPECT_GE(cuda::graph_stats().replays - s0.replays, 4) << f.debugprint();
}

}  // namespace
}  // namespace hypatia
