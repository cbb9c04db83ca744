// Issue 13's GPU benchmarks through Hypatia's CUDA backend, each beside a baseline measured in the
// same run on the same GPU: a raw cuBLAS loop, a device-to-device copy, bare transfers, a bare
// launch of one generated kernel. Wall-clock times of whole loops ending in a synchronisation;
// the best of 5 repetitions. PyTorch and JAX are timed by bench/cuda/anchors.py in the same
// device session (bench/cuda/device_check.sh runs both).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <random>
#include <string>
#include <thread>

#include "hypatia/backends/cuda/cuda_api.h"
#include "hypatia/backends/cuda/cuda_codegen.h"
#include "hypatia/backends/cuda/cuda_kernel_util.h"
#include "hypatia/backends/cuda/cuda_memory.h"
#include "hypatia/backends/cuda/cuda_modules.h"
#include "hypatia/hypatia.h"

namespace hypatia {
namespace {

using Clock = std::chrono::steady_clock;

NDArray random_f32(const Shape& shape, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(-1, 1);
  NDArray a = NDArray::empty(shape, DType::Float32);
  for (int64_t i = 0; i < a.size(); ++i) a.data<float>()[i] = u(rng);
  return a;
}

/// Best of `reps` runs of `body` (which ends with a synchronisation), in milliseconds.
double best_ms(int reps, const std::function<void()>& body) {
  body();  // warm-up: compiles, allocates
  double best = 1e300;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = Clock::now();
    body();
    cuda::synchronize_queues();  // (every function's stream: cuda_streams=function)
    best = std::min(best, std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
  }
  return best;
}

void row(const char* what, double ms, const char* base, double base_ms, const char* note = "") {
  std::printf("%-62s %10.3f ms   %-34s %10.3f ms   %6.2fx %s\n", what, ms, base, base_ms, ms / base_ms, note);
}

FunctionOptions cuda_opts() {
  FunctionOptions o;
  o.backend = "cuda";
  return o;
}

int transfers(const Function& f) {
  int n = 0;
  for (const auto& node : f.toposort()) n += node->op->moves_between_devices();
  return n;
}

void seed000() {
  constexpr int64_t kN = 1000;
  constexpr int kIters = 500;
  NDArray m0 = random_f32({kN, kN}, 1), x0 = random_f32({kN, kN}, 2), b0 = random_f32({kN, kN}, 3);
  // The raw loop: y = b (copy), then sgemm with beta = 1, on device arrays.
  NDArray md = m0.to_device(Device::cuda()), xd = x0.to_device(Device::cuda()), bd = b0.to_device(Device::cuda());
  NDArray yd = bd.copy();
  const cuda::Cublas& cb = cuda::cublas();
  const double raw = best_ms(5, [&] {
    for (int i = 0; i < kIters; ++i) {
      yd = bd.copy();
      const float one = 1;
      cuda::check_cublas(cb.sgemm(cb.handle, CUBLAS_OP_N, CUBLAS_OP_N, kN, kN, kN, &one, xd.data<float>(), kN,
                                  md.data<float>(), kN, &one, yd.data<float>(), kN),
                         "sgemm");
    }
  });
  Var m = matrix("m", DType::Float32), x = matrix("x", DType::Float32), b = matrix("b", DType::Float32);
  Function f3 = function({m, x, b}, {add(dot(m, x), b)}, cuda_opts());
  Var ms = shared(m0, "ms");
  Function f2 = function({x, b}, {add(dot(ms, x), b)}, cuda_opts());
  Var xs = shared(x0, "xs");
  Function f1 = function({b}, {add(dot(ms, xs), b)}, cuda_opts());
  Var bs = shared(b0, "bs"), ys = shared(b0, "ys");
  FunctionOptions o0 = cuda_opts();
  o0.updates = {{ys, add(dot(ms, xs), bs)}};
  Function f0 = function({}, {}, o0);
  std::vector<NDArray> outs(1);
  const double t3 = best_ms(3, [&] {
    for (int i = 0; i < kIters; ++i) outs = f3({m0, x0, b0});
  });
  const double t2 = best_ms(3, [&] {
    for (int i = 0; i < kIters; ++i) outs = f2({x0, b0});
  });
  const double t1 = best_ms(3, [&] {
    for (int i = 0; i < kIters; ++i) outs = f1({b0});
  });
  std::vector<NDArray> none;
  const double t0 = best_ms(5, [&] {
    for (int i = 0; i < kIters; ++i) f0.call({}, none);
  });
  std::printf("\nseed 000: y = m x + b, 1000^3 float32, %d calls (transfers per call in brackets)\n", kIters);
  char what[128];
  std::snprintf(what, sizeof what, "all inputs from the host [%d]", transfers(f3));
  row(what, t3, "raw cuBLAS loop (copy b; sgemm)", raw);
  std::snprintf(what, sizeof what, "m shared [%d]", transfers(f2));
  row(what, t2, "raw cuBLAS loop", raw);
  std::snprintf(what, sizeof what, "m, x shared [%d]", transfers(f1));
  row(what, t1, "raw cuBLAS loop", raw);
  std::snprintf(what, sizeof what, "all shared, y an update [%d]", transfers(f0));
  row(what, t0, "raw cuBLAS loop", raw, "(goal <= 1.05x)");
}

void seed001() {
  constexpr int64_t kN = 230400;
  constexpr int kCalls = 1000;
  Var x = shared(random_f32({kN}, 4), "x");
  Function dev = function({}, {Out(device_from_host(exp(x), Device::cuda()), true)}, cuda_opts());
  Function host = function({}, {exp(x)}, cuda_opts());
  std::vector<NDArray> none, out(1);
  const double td = best_ms(5, [&] {
    for (int i = 0; i < kCalls; ++i) dev.call(none, out);
  });
  const double th = best_ms(5, [&] {
    for (int i = 0; i < kCalls; ++i) host.call(none, out);
  });
  // The bare copy cost: the same bytes brought back 1000 times.
  NDArray src = random_f32({kN}, 5).to_device(Device::cuda());
  NDArray back;
  const double copies = best_ms(5, [&] {
    for (int i = 0; i < kCalls; ++i) back = src.to_device(Device::host());
  });
  std::printf("\nseed 001: exp of %lld float32, %d calls\n", static_cast<long long>(kN), kCalls);
  row("device result (Out(gpu_from_host(exp(x)), borrow=True))", td, "goal", 5.0, "(goal <= 5 ms)");
  row("host result", th, "bare device->host copies", copies, "(goal <= 1.1x)");
}

void fused_chain() {
  constexpr int64_t kN = int64_t{64} << 20;
  Var a = shared(random_f32({kN}, 6), "a"), b = shared(random_f32({kN}, 7), "b"), c = shared(random_f32({kN}, 8), "c");
  Var y = neg(log(add(mul(exp(mul(a, b)), c), constant(1.0, DType::Float32))));
  Function f = function({}, {Out(device_from_host(y, Device::cuda()), true)}, cuda_opts());
  std::vector<NDArray> none, out(1);
  const double t = best_ms(10, [&] { f.call(none, out); });
  NDArray src = get_value(a, true, true), dst;
  const double copy = best_ms(10, [&] { dst = src.copy(); });
  const double bytes_chain = 4.0 * kN * 4, bytes_copy = 2.0 * kN * 4;
  std::printf("\nfused six-op chain -log(exp(a*b)*c+1), 64M float32 (%d kernels)\n", [&] {
    int n = 0;
    for (const auto& node : f.toposort()) n += node->op->name().find("Composite") != std::string::npos;
    return n;
  }());
  std::printf("  chain %.3f ms = %.0f GB/s; device copy %.3f ms = %.0f GB/s; bandwidth ratio %.2fx (goal <= 1.2x)\n", t,
              bytes_chain / t / 1e6, copy, bytes_copy / copy / 1e6, (bytes_copy / copy) / (bytes_chain / t));
}

/// The contiguous kernel's vector loop (V elements per thread, one vector load or store per
/// operand) against the kernel without it (generated with width 1: the kernel before the vector
/// loop existed), over 64M elements: exp of float32 (V = 4) and a float16 copy (V = 8).
void vector_loop() {
  constexpr int64_t kN = int64_t{64} << 20;
  std::printf("\nthe contiguous kernel's vector loop against its scalar loop, 64M elements\n");
  for (const auto& [label, spec] :
       {std::pair{"exp float32", cuda::elemwise_spec(ScalarOpKind::Exp, {DType::Float32}, DType::Float32)},
        std::pair{"copy float16", cuda::ElemSpec{{DType::Float16}, "", {"x0"}, {DType::Float16}}}}) {
    cudaKernel_t k = cuda::get_kernel(cuda::table_prefix() + cuda::elementwise_source(spec, "vec"), "vec_c");
    cudaKernel_t scalar_k = cuda::get_kernel(
        cuda::table_prefix() + cuda::elementwise_source(spec, "novec", cuda::ElemKernels::Contiguous, 1), "novec_c");
    const DType dt = spec.in[0];
    NDArray in = random_f32({kN}, 12).astype(dt).to_device(Device::cuda()),
            o = NDArray::empty({kN}, dt, Device::cuda());
    NDArray* outs[] = {&o};
    NDArray* ins[] = {&in};
    const int V = cuda::elem_vector_width(spec);
    auto time = [&](bool vector) {
      std::vector<int64_t> args;
      cuda::contiguous_elem_args(args, Shape{kN}, outs, ins, V);
      if (!vector) args[1] = 0;
      return best_ms(10, [&] {
        cuda::launch(vector ? k : scalar_k, cuda::grid_for(vector ? kN / V : kN), args, "vector loop bench");
        cuda::synchronize();
      });
    };
    const double tv = time(true), ts = time(false);
    const double bytes = 2.0 * kN * static_cast<double>(itemsize(dt));
    std::printf("  %s: vector loop (V = %d) %.3f ms = %.0f GB/s; without it %.3f ms = %.0f GB/s; ratio %.2fx\n", label,
                V, tv, bytes / tv / 1e6, ts, bytes / ts / 1e6, ts / tv);
  }
}

void per_call() {
  Var x = shared(random_f32({1}, 9), "x1");
  Function f = function({}, {Out(device_from_host(exp(x), Device::cuda()), true)}, cuda_opts());
  std::vector<NDArray> none, out(1);
  constexpr int kCalls = 20000;
  const double t = best_ms(5, [&] {
    for (int i = 0; i < kCalls; ++i) f.call(none, out);
  });
  // A bare launch of the same generated kernel.
  cuda::ElemSpec spec = cuda::elemwise_spec(ScalarOpKind::Exp, {DType::Float32}, DType::Float32);
  cudaKernel_t k = cuda::get_kernel(cuda::table_prefix() + cuda::elementwise_source(spec, "bare"), "bare_c");
  NDArray in = random_f32({1}, 10).to_device(Device::cuda()), o = NDArray::empty({1}, DType::Float32, Device::cuda());
  std::vector<int64_t> args = cuda::elem_args(1, {}, {o.raw()}, {{}}, {in.raw()}, {{1}});
  const double raw = best_ms(5, [&] {
    for (int i = 0; i < kCalls; ++i) {
      void* p[] = {args.data()};
      cuda::launch(k, 1, 256, p, "bare");
    }
  });
  std::printf("\nper call, one-op function exp(x) of 1 element, device result, %d calls\n", kCalls);
  row("Function::call from C++ (per call, us)", t * 1000 / kCalls, "bare kernel launch (us)", raw * 1000 / kCalls);
}

/// Two functions with nothing in common (each a 512x512 product into its own shared variable: 16
/// of cuBLAS's tiles, a few of the GPU's SMs), called 300 times each: by one thread in turn,
/// and by two threads at once, each calling its own. With cuda_streams=function (each function
/// a stream of its own) the two threads' kernels can run side by side on the device; with
/// cuda_streams=one they queue on one stream (bench_cuda streams, under each setting).
void two_threads() {
  constexpr int kN = 512, kCalls = 300;
  std::vector<Function> fs;
  for (int i = 0; i < 2; ++i) {
    Var w = shared(random_f32({kN, kN}, 40 + i), "w" + std::to_string(i));
    FunctionOptions o = cuda_opts();
    o.updates = {{w, w + dot(w, w) * 1e-6f}};
    fs.push_back(function({}, {}, o));
  }
  std::vector<NDArray> none;
  const double one_thread = best_ms(5, [&] {
    for (int i = 0; i < kCalls; ++i)
      for (Function& f : fs) f(none);
  });
  const double two = best_ms(5, [&] {
    std::thread t([&] {
      for (int i = 0; i < kCalls; ++i) fs[1](none);
    });
    for (int i = 0; i < kCalls; ++i) fs[0](none);
    t.join();
  });
  std::printf("\ntwo functions (a 512x512 product each), %d calls each, cuda_streams=%s\n", kCalls,
              config().cuda_streams.c_str());
  row("two threads, one function each", two, "one thread calling both in turn", one_thread);
}

/// The counts of nodes on the GPU and on the CPU, and the CPU ones' names.
std::string placement_summary(const Function& f) {
  int gpu = 0, cpu = 0;
  std::string on_cpu;
  for (const auto& node : f.toposort()) {
    if (node->op->moves_between_devices()) continue;
    const bool on_gpu = get_backend("cuda").provider(*node)->name() == "cuda";
    (on_gpu ? gpu : cpu)++;
    if (!on_gpu) on_cpu += " " + node->op->name();
  }
  return std::to_string(gpu) + " nodes on the GPU, " + std::to_string(cpu) + " on the CPU" +
         (on_cpu.empty() ? "" : ":" + on_cpu) + ", " + std::to_string(transfers(f)) + " transfers";
}

/// The 784-500-500-10 MLP training step of anchors.py (tanh, softmax cross-entropy, SGD 0.01),
/// batch 256: with the batch in a shared variable (on the device, as torch's and JAX's) and the
/// labels passed per step, the cost kept on the device; with the labels in a shared variable too
/// (checked on the device: nothing crosses, one wait per step); and with the batch passed from
/// the host.
void mlp() {
  constexpr int kBatch = 256;
  NDArray xs = random_f32({kBatch, 784}, 30);
  NDArray ys = NDArray::empty({kBatch}, DType::Int64);
  for (int i = 0; i < kBatch; ++i) ys.data<int64_t>()[i] = (i * 7) % 10;
  for (int variant : {0, 1, 2}) {
    const bool batch_shared = variant < 2, labels_shared = variant == 1;
    Var x = batch_shared ? shared(xs, "xb") : matrix("x", DType::Float32);
    Var yv = labels_shared ? shared(ys, "yb") : vector("y", DType::Int64);
    const testing::Mlp net = testing::mlp(x, yv, {784, 500, 500, 10}, [](const Shape& sh, int layer, bool is_bias) {
      return is_bias ? NDArray::zeros(sh, DType::Float32) : random_f32(sh, 20 + layer);
    });
    Var cost = net.cost;
    FunctionOptions o = cuda_opts();
    o.updates = net.sgd(constant(0.01, DType::Float32));
    std::vector<In> ins;
    std::vector<NDArray> args;
    if (!labels_shared) {
      ins.push_back(In(yv));
      args.push_back(ys);
    }
    if (!batch_shared) {
      ins.push_back(In(x));
      args.push_back(xs);
    }
    Function f = function(ins, {Out(device_from_host(cost, Device::cuda()), true)}, o);
    std::vector<NDArray> out(1);
    constexpr int kSteps = 200;
    const cuda::GraphStats g0 = cuda::graph_stats();
    const double t = best_ms(3, [&] {
      for (int i = 0; i < kSteps; ++i) f.call(args, out);
    });
    const cuda::GraphStats g1 = cuda::graph_stats();
    // The same function with every kernel launched from the host (HYPATIA_FLAGS=cuda_graphs=False).
    config().cuda_graphs = false;
    const double t_launched = best_ms(3, [&] {
      for (int i = 0; i < kSteps; ++i) f.call(args, out);
    });
    config().cuda_graphs = true;
    std::printf("\nMLP 784-500-500-10 training step, batch %d, batch %s: %.3f ms per step (%s)\n", kBatch,
                labels_shared  ? "and labels in shared variables"
                : batch_shared ? "in a shared variable, labels passed"
                               : "and labels passed from the host",
                t / kSteps, placement_summary(f).c_str());
    std::printf(
        "  CUDA graphs: %lld recorded, %lld failed%s, %.1f replays per step (%zu runs planned); %.3f ms per "
        "step with every kernel launched from the host (%.2fx)\n",
        static_cast<long long>(g1.recorded - g0.recorded), static_cast<long long>(g1.failed - g0.failed),
        g1.last_error.empty() ? "" : (" (last: " + g1.last_error + ")").c_str(),
        static_cast<double>(g1.replays - g0.replays) / (4.0 * kSteps), f.recorded_runs().size(), t_launched / kSteps,
        t_launched / t);
  }
}

NDArray scaled_f32(const Shape& shape, uint64_t seed) {
  NDArray a = random_f32(shape, seed);
  double fan_in = 1;
  for (int d = 1; d < shape.size(); ++d) fan_in *= static_cast<double>(shape[d]);
  const float k = static_cast<float>(std::sqrt(3.0 / fan_in));
  for (int64_t i = 0; i < a.size(); ++i) a.data<float>()[i] *= k;
  return a;
}

/// anchors.py's LeNet (batch 128: conv 5x5 pad 2, tanh, 2x2 max pool, conv 5x5, tanh, pool, three
/// dense layers, softmax cross-entropy) forward, and forward + backward (the ten gradients kept on
/// the device, as torch.autograd.grad gives them); and the ResNet 3x3 layer (32x64x56x56, 64
/// filters, pad 1) forward, and forward + backward (the gradient of 0.5 sum(out^2), whose output
/// gradient is out: anchors.py's grad(out, [act, kern], out)). `dnn`: Theano's dnn.enabled
/// ("auto": through cuDNN; "False": through im2col and cuBLAS).
void convolutions(const std::string& dnn) {
  const std::string saved = config().dnn_enabled;
  config().dnn_enabled = dnn;
  const char* path = dnn == "False" ? "im2col + cuBLAS" : "cuDNN";
  NDArray digits = random_f32({128, 1, 28, 28}, 40);
  for (int64_t i = 0; i < digits.size(); ++i) digits.data<float>()[i] = 0.5f * (digits.data<float>()[i] + 1);
  NDArray labels = NDArray::empty({128}, DType::Int64);
  for (int i = 0; i < 128; ++i) labels.data<int64_t>()[i] = (i * 7) % 10;
  Var x = shared(digits, "digits");
  Var y = vector("labels", DType::Int64);
  std::vector<Var> ps = {
      shared(scaled_f32({6, 1, 5, 5}, 41), "c1"),  shared(NDArray::zeros({6}, DType::Float32), "cb1"),
      shared(scaled_f32({16, 6, 5, 5}, 42), "c2"), shared(NDArray::zeros({16}, DType::Float32), "cb2"),
      shared(scaled_f32({400, 120}, 43), "d1"),    shared(NDArray::zeros({120}, DType::Float32), "db1"),
      shared(scaled_f32({120, 84}, 44), "d2"),     shared(NDArray::zeros({84}, DType::Float32), "db2"),
      shared(scaled_f32({84, 10}, 45), "d3"),      shared(NDArray::zeros({10}, DType::Float32), "db3")};
  PoolParams pool2;
  pool2.ws = {2, 2, 1};
  pool2.stride = {2, 2, 1};
  pool2.ignore_border = true;
  auto conv_block = [&](Var h, Var k, Var b, const std::string& border) {
    Conv2dParams cp;
    cp.border = border;
    cp.flip = false;  // torch's conv2d is a correlation
    return pool(tanh(add(conv2d(h, k, cp), dimshuffle(b, {-1, 0, -1, -1}))), pool2);
  };
  Var h = conv_block(x, ps[0], ps[1], "half");
  h = flatten(conv_block(h, ps[2], ps[3], "valid"), 2);
  h = tanh(add(dot(h, ps[4]), ps[5]));
  h = tanh(add(dot(h, ps[6]), ps[7]));
  Var loss = mean(categorical_crossentropy(softmax(add(dot(h, ps[8]), ps[9])), y));
  Function fwd = function({y}, {Out(device_from_host(loss, Device::cuda()), true)}, cuda_opts());
  std::vector<Out> gouts;
  for (const Var& g : grad(loss, ps)) gouts.push_back(Out(device_from_host(g, Device::cuda()), true));
  Function fb = function({y}, gouts, cuda_opts());
  std::vector<NDArray> args = {labels}, o1(1), o10(ps.size());
  constexpr int kCalls = 100;
  const double tf = best_ms(5, [&] {
    for (int i = 0; i < kCalls; ++i) fwd.call(args, o1);
  });
  const double tfb = best_ms(5, [&] {
    for (int i = 0; i < kCalls; ++i) fb.call(args, o10);
  });
  std::printf("\nLeNet batch 128, %s (%s)\n", path, placement_summary(fb).c_str());
  std::printf("  forward %.3f ms per call; forward+backward %.3f ms per call\n", tf / kCalls, tfb / kCalls);

  Var act = shared(random_f32({32, 64, 56, 56}, 46), "act");
  Var kern = shared(scaled_f32({64, 64, 3, 3}, 47), "kern");
  Conv2dParams cp;
  cp.border = "half";
  cp.flip = false;
  Var out = conv2d(act, kern, cp);
  Function rf = function({}, {Out(device_from_host(out, Device::cuda()), true)}, cuda_opts());
  std::vector<Var> rg = grad(mul(sum(mul(out, out)), constant(0.5, DType::Float32)), {act, kern});
  Function rfb = function(
      {}, {Out(device_from_host(rg[0], Device::cuda()), true), Out(device_from_host(rg[1], Device::cuda()), true)},
      cuda_opts());
  std::vector<NDArray> none, r1(1), r2(2);
  constexpr int kRes = 50;
  const double rt = best_ms(5, [&] {
    for (int i = 0; i < kRes; ++i) rf.call(none, r1);
  });
  const double rtb = best_ms(5, [&] {
    for (int i = 0; i < kRes; ++i) rfb.call(none, r2);
  });
  const double flops = 2.0 * 32 * 64 * 56 * 56 * 64 * 9;
  std::printf("\nResNet 3x3 layer 32x64x56x56, 64 filters, %s (%s)\n", path, placement_summary(rfb).c_str());
  std::printf("  forward %.3f ms per call (%.1f TFLOP/s); forward+backward %.3f ms per call (%.1f TFLOP/s)\n",
              rt / kRes, flops / (rt / kRes) / 1e9, rtb / kRes, 3 * flops / (rtb / kRes) / 1e9);
  config().dnn_enabled = saved;
}

}  // namespace
}  // namespace hypatia

int main(int argc, char** argv) {
  using namespace hypatia;
  if (!cuda::available()) {
    std::printf("no GPU: %s\n", cuda::unavailable_reason().c_str());
    return 0;
  }
  std::printf("Hypatia CUDA backend benchmarks (sm_%d, %d SMs)\n", cuda::arch(), cuda::sm_count());
  // The raw baselines (cuBLAS, bare launches, copies) call CUDA outside any function's call: they
  // run on the GPU the process drives (HYPATIA_FLAGS=device=cudaN), as the functions do.
  const cuda::DeviceScope on_the_driven_gpu;
  if (argc > 1 && std::string(argv[1]) == "streams") {  // only the two threads' benchmark
    two_threads();
    return 0;
  }
  const auto t0 = std::chrono::steady_clock::now();
  per_call();
  seed001();
  seed000();
  fused_chain();
  vector_loop();
  mlp();
  two_threads();
  std::string why;
  if (cuda::cudnn_loadable(&why))
    convolutions("auto");
  else
    std::printf("\nconvolutions through cuDNN: not run (%s)\n", why.c_str());
  convolutions("False");
  const auto st = cuda::module_cache_stats();
  const auto al = cuda::device_allocator().stats();
  std::printf(
      "\nkernel modules: %lld compiled (%.2f s), %lld from disk, %lld from memory; allocator: %lld cudaMalloc, "
      "%lld reuses, peak %.1f MB; total %.1f s\n",
      static_cast<long long>(st.compiles), st.compile_seconds, static_cast<long long>(st.disk_hits),
      static_cast<long long>(st.memory_hits), static_cast<long long>(al.raw_allocs), static_cast<long long>(al.reuses),
      al.peak / 1e6, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  return 0;
}
