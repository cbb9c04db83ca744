// Pooling on the CUDA backend (ops/pool.h): Pool, MaxPoolGrad, AveragePoolGrad and the second-order
// DownsampleFactorMaxGradGrad over the last 2 or 3 axes, every mode and border rule of the CPU
// kernels (backends/pool_kernels.cpp), generated per dtype and mode. The forward kernel and the
// second-order one have a thread per output element; the gradients a thread per input element, which gathers from the
// windows that hold it in the CPU's window order (no atomics: the same sums, in the same order, as the CPU's loops).
// Windows follow the CPU's rule: window k of an axis starts at k * stride - pad, ends at min(start + ws, size + pad),
// and takes the real elements in [max(start, 0), min(end, size)); average_inc_pad divides by end - start.
#include <string>

#include "hypatia/backends/cuda/cuda_api.h"
#include "hypatia/backends/cuda/cuda_kernel_util.h"
#include "hypatia/backends/pool_geometry.h"
#include "hypatia/core/error.h"
#include "hypatia/ops/pool.h"

namespace hypatia::cuda {

std::string pool_source(DType dt, const std::string& mode, PoolKernel which) {
  const std::string T = cuda_type(dt);
  std::string s =
      "struct PoolArgs { long long slices, in[3], out[3], ws[3], st[3], pad[3]; unsigned long long x, m, gz, y; };\n";
  // The window of index k along axis a: [lo, hi) within the image, and end - start.
  s += "__device__ inline void window(const PoolArgs& a, int ax, long long k, long long& lo, long long& hi, "
       "long long& inc) {\n";
  s += "  const long long start = k * a.st[ax] - a.pad[ax];\n";
  s += "  long long end = start + a.ws[ax];\n  if (end > a.in[ax] + a.pad[ax]) end = a.in[ax] + a.pad[ax];\n";
  s += "  lo = start < 0 ? 0 : start;\n  hi = end < a.in[ax] ? end : a.in[ax];\n  inc = end - start;\n}\n";
  const bool inc_pad = mode == "average_inc_pad", sum = mode == "sum", max = mode == "max";
  const std::string count =
      inc_pad ? "(i0 * i1 * i2)" : "((h0 - l0) * (h1 - l1) * (h2 - l2))";  // the divisor of an average
  s += "extern \"C\" __global__ void hyp_pool(const PoolArgs a) {\n";
  s += "  const long long in_size = a.in[0] * a.in[1] * a.in[2], out_size = a.out[0] * a.out[1] * a.out[2];\n";
  s += "  const long long step = (long long)gridDim.x * blockDim.x;\n";
  // The real elements (d, h, w) of the window (l0..h0, l1..h1, l2..h2), in the CPU's order.
  const std::string window_loops =
      "    for (long long d = l0; d < h0; ++d)\n      for (long long h = l1; h < h1; ++h)\n"
      "        for (long long w = l2; w < h2; ++w) {\n";
  if (which == PoolKernel::Forward || which == PoolKernel::MaxGradGrad) {
    s += "  for (long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x; t < a.slices * out_size; t += "
         "step) {\n";
    s += "    const long long sl = t / out_size, o = t % out_size;\n";
    s += "    const long long k2 = o % a.out[2], k1 = (o / a.out[2]) % a.out[1], k0 = o / (a.out[1] * a.out[2]);\n";
    s += "    long long l0, h0, i0, l1, h1, i1, l2, h2, i2;\n";
    s += "    window(a, 0, k0, l0, h0, i0);\n    window(a, 1, k1, l1, h1, i1);\n    window(a, 2, k2, l2, h2, i2);\n";
    s += "    const " + T + "* xs = (const " + T + "*)a.x + sl * in_size;\n";
    if (which == PoolKernel::MaxGradGrad) {
      // ggx (in gz) at the window's max: the last element equal to it, in the CPU's order.
      s += "    const " + T + "* gs = (const " + T + "*)a.gz + sl * in_size;\n";
      s += "    const " + T + " m = ((const " + T + "*)a.m)[t];\n    " + T + " r = 0;\n";
      s += window_loops;
      s += "          const long long i = (d * a.in[1] + h) * a.in[2] + w;\n";
      s += "          if (xs[i] == m) r = gs[i];\n        }\n";
      s += "    ((" + T + "*)a.y)[t] = r;\n  }\n}\n";
      return s;
    }
    if (max)
      s += "    " + T + " m = -hstd::numeric_limits<" + T + ">::infinity();\n    bool nan = false;\n";
    else
      s += "    double acc = 0;\n";
    s += window_loops;
    s += "          const " + T + " v = xs[(d * a.in[1] + h) * a.in[2] + w];\n";
    s += max ? "          if (v != v) nan = true;\n          if (v > m) m = v;\n" : "          acc += (double)v;\n";
    s += "        }\n";
    if (max)
      s += "    ((" + T + "*)a.y)[t] = nan ? hstd::numeric_limits<" + T + ">::quiet_NaN() : m;\n";
    else
      s += "    ((" + T + "*)a.y)[t] = (" + T + ")(" + (sum ? "acc" : "acc / (double)" + count) + ");\n";
    s += "  }\n}\n";
    return s;
  }
  // Gradients: each input element sums over the windows that hold it, in the CPU's order.
  s += "  for (long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x; t < a.slices * in_size; t += step) "
       "{\n";
  s += "    const long long sl = t / in_size, i = t % in_size;\n";
  s += "    const long long c[3] = {i / (a.in[1] * a.in[2]), (i / a.in[2]) % a.in[1], i % a.in[2]};\n";
  s += "    long long kmin[3], kmax[3];\n";
  s += "    for (int ax = 0; ax < 3; ++ax) {\n";
  s += "      const long long num = c[ax] + a.pad[ax] - a.ws[ax] + 1;\n";
  s += "      kmin[ax] = num <= 0 ? 0 : (num + a.st[ax] - 1) / a.st[ax];\n";
  s += "      kmax[ax] = (c[ax] + a.pad[ax]) / a.st[ax];\n";
  s += "      if (kmax[ax] > a.out[ax] - 1) kmax[ax] = a.out[ax] - 1;\n    }\n";
  s += "    " + T + " acc = 0;\n";
  if (which == PoolKernel::MaxGrad) s += "    const " + T + " xv = ((const " + T + "*)a.x)[t];\n";
  s += "    for (long long k0 = kmin[0]; k0 <= kmax[0]; ++k0)\n      for (long long k1 = kmin[1]; k1 <= kmax[1]; "
       "++k1)\n";
  s += "        for (long long k2 = kmin[2]; k2 <= kmax[2]; ++k2) {\n";
  s += "          const long long o = sl * out_size + (k0 * a.out[1] + k1) * a.out[2] + k2;\n";
  s += "          const " + T + " g = ((const " + T + "*)a.gz)[o];\n";
  if (which == PoolKernel::MaxGrad) {
    s += "          if (xv == ((const " + T + "*)a.m)[o]) acc += g;\n";
  } else if (sum) {
    s += "          acc += g;\n";
  } else {
    s += "          long long l0, h0, i0, l1, h1, i1, l2, h2, i2;\n";
    s += "          window(a, 0, k0, l0, h0, i0);\n          window(a, 1, k1, l1, h1, i1);\n";
    s += "          window(a, 2, k2, l2, h2, i2);\n";
    s += "          acc += (" + T + ")(g / (" + T + ")" + count + ");\n";
  }
  s += "        }\n";
  s += "    ((" + T + "*)a.y)[t] = acc;\n  }\n}\n";
  return s;
}

namespace {

class PoolKernelBase : public Kernel {
 protected:
  PoolKernelBase(const Apply& node, const PoolParams& p, PoolKernel which) : p_(p) {
    kernel_ = request_kernel(table_prefix() + pool_source(node.inputs[0]->type.dtype, p.mode, which), "hyp_pool");
  }
  /// Launches over n elements with x, the pooled max m, gz and the output y.
  void launch_pool(const pool_geometry::Geometry& g, int64_t n, const NDArray* x, const NDArray* m, const NDArray* gz,
                   NDArray& y, const char* what) {
    if (n == 0) return;
    std::vector<int64_t> args = {g.slices};
    for (const auto* v : {&g.in, &g.out, &g.ws, &g.st, &g.pad}) args.insert(args.end(), v->begin(), v->end());
    for (const NDArray* a : {x, m, gz, static_cast<const NDArray*>(&y)})
      args.push_back(a ? static_cast<int64_t>(reinterpret_cast<uintptr_t>(a->raw())) : 0);
    launch(kernel_, grid_for(n), args, what);
  }
  /// A C-contiguous form of a device input.
  static NDArray contiguous(const NDArray& a) { return a.is_c_contiguous() ? a : device_copy(a); }

  PoolParams p_;
  KernelRef kernel_;
};

class PoolForwardKernel final : public PoolKernelBase {
 public:
  explicit PoolForwardKernel(const Apply& node)
      : PoolKernelBase(node, static_cast<const Pool&>(*node.op).p, PoolKernel::Forward),
        op_(static_cast<const Pool&>(*node.op)) {}
  void run(const KernelArgs& a) override {
    if (a.in[0]->ndim() < p_.nd)
      fail<ValueError>(op_.name(), ": expected at least ", p_.nd, " dimensions, got ", a.in[0]->describe());
    const NDArray x = contiguous(*a.in[0]);
    const pool_geometry::Geometry g = pool_geometry::geometry(p_, x.shape());
    const Shape pooled = pool_geometry::pooled_shape(p_, x.shape(), g);
    NDArray& y = prepare_device_output(*a.out[0], pooled, x.dtype());
    launch_pool(g, y.size(), &x, nullptr, nullptr, y, "CUDA pool");
  }

 private:
  const Pool& op_;
};

class MaxPoolGradKernel final : public PoolKernelBase {
 public:
  explicit MaxPoolGradKernel(const Apply& node)
      : PoolKernelBase(node, static_cast<const MaxPoolGrad&>(*node.op).p, PoolKernel::MaxGrad),
        op_(static_cast<const MaxPoolGrad&>(*node.op)) {}
  void run(const KernelArgs& a) override {
    const NDArray x = contiguous(*a.in[0]), m = contiguous(*a.in[1]), gz = contiguous(*a.in[2]);
    const pool_geometry::Geometry g = pool_geometry::geometry(p_, x.shape());
    const Shape pooled = pool_geometry::pooled_shape(p_, x.shape(), g);
    if (!(m.shape() == pooled) || !(gz.shape() == pooled))
      fail<ValueError>(op_.name(), ": maxout ", m.shape().str(), " and gz ", gz.shape().str(),
                       " must have the pooled shape ", pooled.str(), " of x ", x.shape().str());
    NDArray& y = prepare_device_output(*a.out[0], x.shape(), x.dtype());
    launch_pool(g, y.size(), &x, &m, &gz, y, "CUDA max pool gradient");
  }

 private:
  const MaxPoolGrad& op_;
};

class AveragePoolGradKernel final : public PoolKernelBase {
 public:
  explicit AveragePoolGradKernel(const Apply& node)
      : PoolKernelBase(node, static_cast<const AveragePoolGrad&>(*node.op).p, PoolKernel::AverageGrad),
        op_(static_cast<const AveragePoolGrad&>(*node.op)) {}
  void run(const KernelArgs& a) override {
    const NDArray& x = *a.in[0];  // its shape only
    const NDArray gz = contiguous(*a.in[1]);
    const pool_geometry::Geometry g = pool_geometry::geometry(p_, x.shape());
    const Shape pooled = pool_geometry::pooled_shape(p_, x.shape(), g);
    if (!(gz.shape() == pooled))
      fail<ValueError>(op_.name(), ": gz ", gz.shape().str(), " must have the pooled shape ", pooled.str(), " of x ",
                       x.shape().str());
    NDArray& y = prepare_device_output(*a.out[0], x.shape(), x.dtype());
    launch_pool(g, y.size(), nullptr, nullptr, &gz, y, "CUDA average pool gradient");
  }

 private:
  const AveragePoolGrad& op_;
};

class MaxPoolGradGradKernel final : public PoolKernelBase {
 public:
  explicit MaxPoolGradGradKernel(const Apply& node)
      : PoolKernelBase(node, static_cast<const DownsampleFactorMaxGradGrad&>(*node.op).p, PoolKernel::MaxGradGrad),
        op_(static_cast<const DownsampleFactorMaxGradGrad&>(*node.op)) {}
  void run(const KernelArgs& a) override {
    const NDArray x = contiguous(*a.in[0]), m = contiguous(*a.in[1]), gg = contiguous(*a.in[2]);
    const pool_geometry::Geometry g = pool_geometry::geometry(p_, x.shape());
    const Shape pooled = pool_geometry::pooled_shape(p_, x.shape(), g);
    if (!(m.shape() == pooled) || !(gg.shape() == x.shape()))
      fail<ValueError>(op_.name(), ": maxout ", m.shape().str(), " must have the pooled shape ", pooled.str(),
                       " and ggx ", gg.shape().str(), " the shape of x ", x.shape().str());
    NDArray& y = prepare_device_output(*a.out[0], pooled, x.dtype());
    launch_pool(g, y.size(), &x, &m, &gg, y, "CUDA max pool second-order gradient");
  }

 private:
  const DownsampleFactorMaxGradGrad& op_;
};

/// Float dtypes (the others pool on the CPU).
bool pool_accepts(const Apply& node) {
  const DType dt = node.inputs[0]->type.dtype;
  return dt == DType::Float32 || dt == DType::Float64;
}

}  // namespace

void register_cuda_pool_kernels() {
  const KernelTraits traits{.accepts = pool_accepts, .recordable = true};
  register_kernel(kCudaBackend, typeid(Pool), kernel_factory<PoolForwardKernel>(), traits);
  register_kernel(kCudaBackend, typeid(MaxPoolGrad), kernel_factory<MaxPoolGradKernel>(), traits);
  register_kernel(kCudaBackend, typeid(AveragePoolGrad), kernel_factory<AveragePoolGradKernel>(), traits);
  register_kernel(kCudaBackend, typeid(DownsampleFactorMaxGradGrad), kernel_factory<MaxPoolGradGradKernel>(), traits);
}

}  // namespace hypatia::cuda
