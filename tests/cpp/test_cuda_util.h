// What the CUDA backend's tests share (test_cuda*.cpp): the skips without NVRTC
// or a GPU, function options per backend, node counts, seeded random arrays, a classifier's step.
#pragma once
#include <random>
#include <string>
#include <vector>

#include "hypatia/backends/backend.h"
#include "hypatia/backends/cuda/cuda_api.h"
#include "hypatia/backends/cuda/cuda_codegen.h"
#include "hypatia/backends/cuda/cuda_kernel_util.h"
#include "hypatia/backends/cuda/cuda_memory.h"
#include "test_util.h"

namespace hypatia::testing {

#define REQUIRE_NVRTC() \
  if (!cuda::nvrtc_loadable()) GTEST_SKIP() << "libnvrtc cannot be loaded here"
#define REQUIRE_GPU()                                                                    \
  if (!cuda::available()) GTEST_SKIP() << "no GPU: " << cuda::unavailable_reason();      \
  cuda::register_cuda_memory(); /* a test of the stand-in device may have replaced it */ \
  ::hypatia::testing::DebugChecks no_debug_(false)

inline FunctionOptions on(std::string backend, std::string mode = "FAST_RUN") {
  FunctionOptions o;
  o.backend = std::move(backend);
  o.mode = std::move(mode);
  return o;
}

inline Function fn(const std::vector<Var>& ins, std::vector<Out> outs, const FunctionOptions& o) {
  return function(std::vector<In>(ins.begin(), ins.end()), std::move(outs), o);
}

inline int count_ops(const Function& f, const std::string& needle) {
  int n = 0;
  for (const auto& node : f.toposort()) n += node->op->name().find(needle) != std::string::npos;
  return n;
}
inline int transfers(const Function& f) { return count_ops(f, "GpuFromHost") + count_ops(f, "HostFromGpu"); }

/// Uniform values in [lo, hi) from seed, in dtype dt.
inline NDArray seeded_array(const Shape& shape, DType dt, uint64_t seed, double lo = -2, double hi = 2) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(lo, hi);
  NDArray a = NDArray::empty(shape, DType::Float64);
  for (int64_t i = 0; i < a.size(); ++i) a.data<double>()[i] = u(rng);
  return a.astype(dt);
}

/// The provider of every node of `op` in f's graph is the CUDA backend.
inline bool all_on_gpu(const Function& f, const std::string& op) {
  for (const auto& n : f.toposort())
    if (n->op->name().find(op) != std::string::npos && get_backend("cuda").provider(*n)->name() != "cuda") return false;
  return true;
}

/// A 20-16-5 tanh classifier's SGD step (softmax cross-entropy on labels, rate 0.1) on `backend`:
/// inputs x (float32 matrix) and y (int64 labels), output the cost; its parameters in `params`.
inline Function classifier_step(const std::string& backend, std::vector<Var>& params) {
  Var x = matrix("x", DType::Float32);
  Var y = vector("y", DType::Int64);
  const Mlp net = mlp(x, y, {20, 16, 5}, [](const Shape& sh, int layer, bool is_bias) {
    return is_bias ? NDArray::zeros(sh, DType::Float32) : seeded_array(sh, DType::Float32, 1 + layer, -0.5, 0.5);
  });
  params = net.params;
  FunctionOptions o = on(backend);
  o.updates = net.sgd(constant(0.1, DType::Float32));
  return function({x, y}, {net.cost}, o);
}

}  // namespace hypatia::testing
