// The CUDA backend's generated pooling and MRG kernels compiled for the host and run against the
// CPU kernels (tests/cpp/cuda_host/write_kernels.cpp writes them at build time): one host thread
// plays the whole grid (gridDim = blockDim = 1, so each grid-stride loop covers every element), the
// arguments are the ones the backend's launch builds. Bit for bit: the kernels sum in the CPU's
// order. This tests their arithmetic and indexing where no GPU is; test_cuda.cpp runs them on one.
#include <cmath>

#include "hypatia/hypatia.h"
#include "hypatia/ops/pool.h"
#include "hypatia/ops/random.h"
#include "hypatia/testing/opinfo.h"
#include "test_util.h"

// What the generated code expects of CUDA: the thread coordinates, __device__ (empty here), and
// the math builtins the NVRTC shim (backends/cuda/nvrtc_std.cuh) forwards to.
struct HostDim3 {
  unsigned x;
};
inline HostDim3 blockIdx{0}, threadIdx{0}, gridDim{1}, blockDim{1};
using std::isinf;
using std::isnan;

struct HostPoolKernel {
  hypatia::DType dt;
  const char* mode;
  int which;  // cuda::PoolKernel: 0 forward, 1 max gradient, 2 average gradient
  void (*run)(const void* args);
};

#define __device__
#include "cuda_host_kernels.inc"
#undef __device__

namespace hypatia {
namespace {

/// The backends' PoolArgs and MrgArgs (cuda_pool_kernels.cpp, cuda_random_kernels.cpp).
struct PoolArgs {
  long long slices, in[3], out[3], ws[3], st[3], pad[3];
  unsigned long long x, m, gz, y;
};
struct MrgArgs {
  long long streams, n;
  unsigned long long state, out;
};

unsigned long long ptr(const NDArray& a) { return reinterpret_cast<unsigned long long>(a.raw()); }

/// The launch arguments the CUDA backend builds for x (pool_geometry in cuda_pool_kernels.cpp).
PoolArgs pool_args(const PoolParams& p, const Shape& x) {
  PoolArgs a{};
  a.slices = 1;
  for (int i = 0; i < 3; ++i) a.in[i] = a.out[i] = a.ws[i] = a.st[i] = 1;
  const int lead = x.size() - p.nd;
  for (int d = 0; d < lead; ++d) a.slices *= x[d];
  for (int d = 0; d < p.nd; ++d) {
    const int ax = 3 - p.nd + d;
    a.in[ax] = x[lead + d];
    a.out[ax] = a.in[ax] == 0 ? 0 : p.out_size(d, a.in[ax]);
    a.ws[ax] = p.ws[d];
    a.st[ax] = p.stride[d];
    a.pad[ax] = p.pad[d];
  }
  return a;
}

void (*pool_kernel(DType dt, const std::string& mode, int which))(const void*) {
  for (const HostPoolKernel& k : kHostPoolKernels)
    if (k.dt == dt && k.mode == mode && k.which == which) return k.run;
  return nullptr;
}

TEST(CudaKernelsOnHost, PoolingAndItsGradientsAreTheCpusBitForBit) {
  struct Case {
    int nd;
    std::array<int64_t, 3> ws, st, pad;
    bool ignore_border;
    Shape x;
  };
  const std::vector<Case> cases = {
      {2, {2, 2, 1}, {2, 2, 1}, {0, 0, 0}, true, {2, 3, 9, 10}},    // the usual 2x2 / 2
      {2, {3, 3, 1}, {2, 2, 1}, {1, 1, 0}, true, {2, 2, 11, 9}},    // overlapping, padded
      {2, {3, 2, 1}, {1, 2, 1}, {0, 0, 0}, false, {3, 7, 9}},       // partial windows kept
      {2, {2, 2, 1}, {3, 3, 1}, {0, 0, 0}, false, {2, 2, 10, 11}},  // gaps between windows
      {2, {3, 3, 1}, {1, 1, 1}, {2, 2, 0}, true, {1, 1, 6, 5}},     // padding as wide as the window - 1
      {3, {2, 2, 2}, {1, 2, 2}, {0, 1, 1}, true, {2, 2, 5, 6, 7}},  // pool_3d
  };
  uint64_t seed = 1;
  int checked = 0;
  for (DType dt : {DType::Float32, DType::Float64})
    for (const char* mode : {"max", "sum", "average_inc_pad", "average_exc_pad"})
      for (const Case& c : cases) {
        PoolParams p;
        p.nd = c.nd;
        p.ws = c.ws;
        p.stride = c.st;
        p.pad = c.pad;
        p.ignore_border = c.ignore_border;
        p.mode = mode;
        SCOPED_TRACE(p.str() + " " + c.x.str() + " " + std::string(dtype_name(dt)));
        Var x = tensor(dt, std::vector<bool>(static_cast<size_t>(c.x.size()), false), "x");
        Var y = pool(x, p);
        const NDArray xv = testing::random_array(c.x, dt, -2, 2, seed++);
        FunctionOptions cpu;
        cpu.backend = "cpu";
        const NDArray want_y = function({x}, {y}, cpu)({xv})[0];
        const NDArray r = testing::random_array(want_y.shape(), dt, -1, 1, seed++);
        Var gx = grad(sum(mul(y, constant(r))), std::vector<Var>{x})[0];
        const NDArray want_g = function({x}, {gx}, cpu)({xv})[0];

        NDArray got_y = NDArray::zeros(want_y.shape(), dt), got_g = NDArray::zeros(xv.shape(), dt);
        PoolArgs a = pool_args(p, xv.shape());
        a.x = ptr(xv);
        a.y = ptr(got_y);
        pool_kernel(dt, mode, 0)(&a);
        const bool max = std::string(mode) == "max";
        PoolArgs b = pool_args(p, xv.shape());
        b.x = max ? ptr(xv) : 0;
        b.m = max ? ptr(want_y) : 0;
        b.gz = ptr(r);
        b.y = ptr(got_g);
        pool_kernel(dt, mode, max ? 1 : 2)(&b);
        EXPECT_ALLCLOSE(got_y, want_y, 0.0, 0.0);
        EXPECT_ALLCLOSE(got_g, want_g, 0.0, 0.0);
        ++checked;
      }
  EXPECT_EQ(checked, 48);
}

TEST(CudaKernelsOnHost, MrgStreamsAreTheCpusBitForBit) {
  for (int64_t streams : {1, 37, 256})
    for (DType dt : {DType::Float32, DType::Float64}) {
      SCOPED_TRACE(std::to_string(streams) + " streams, " + std::string(dtype_name(dt)));
      NDArray state0 = NDArray::empty({streams, 6}, DType::Int32);
      for (int64_t i = 0; i < state0.size(); ++i)
        state0.data<int32_t>()[i] = static_cast<int32_t>(12345 + 7919 * i % 1000003);
      Var st = shared(state0, "rstate");
      Var size = constant(NDArray::from_vector(std::vector<int64_t>{5, 41}));
      auto [next_state, sample] = mrg_uniform(st, size, dt, 2);
      FunctionOptions cpu;
      cpu.backend = "cpu";
      cpu.updates = {{st, next_state}};
      Function f = function({}, {sample}, cpu);
      NDArray state = state0.copy();
      for (int call = 0; call < 3; ++call) {
        const NDArray want = f({})[0];
        NDArray got = NDArray::empty({5, 41}, dt);
        MrgArgs a{streams, 205, ptr(state), ptr(got)};
        (dt == DType::Float32 ? mrg32::run : mrg64::run)(&a);
        EXPECT_ALLCLOSE(got, want, 0.0, 0.0) << "call " << call;
        EXPECT_ALLCLOSE(state, get_value(st), 0.0, 0.0) << "call " << call;
      }
    }
}

}  // namespace
}  // namespace hypatia
