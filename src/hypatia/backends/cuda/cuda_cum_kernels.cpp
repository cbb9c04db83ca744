// CumOp on the CUDA backend (cumsum / cumprod along an axis, forward or reversed), generated per
// input and output dtype. The input (made C-contiguous) is a set of lines (outer x inner) of n
// elements; each line is cut into m chunks so that lines x m threads keep the device busy:
//   m == 1 (enough lines): a thread per line runs the CPU's loop (accumulating in double for
//     floats, in wrapping 64-bit integers otherwise): bit for bit the CPU's;
//   m > 1: a thread per chunk sums it (hyp_cum_chunks without writing), a thread per line turns
//     the chunk sums into each chunk's starting value (hyp_cum_offsets), and a thread per chunk
//     runs the loop from there, writing (hyp_cum_chunks). Integers are still the CPU's bits (modular
//     arithmetic is associative); floats differ from the CPU's order by double roundings.
// Consecutive threads take consecutive inner positions: reads and writes coalesce when inner > 1.
#include <algorithm>

#include "hypatia/backends/cuda/cuda_api.h"
#include "hypatia/backends/cuda/cuda_kernel_util.h"
#include "hypatia/core/error.h"
#include "hypatia/ops/reduce.h"

namespace hypatia::cuda {

std::string cum_source(DType in, DType out, CumKernel which) {
  const bool is_float_in = in == DType::Float32 || in == DType::Float64;
  const std::string Acc = is_float_in ? "double" : "unsigned long long";
  std::string s =
      "struct CumArgs { long long outer, n, inner, chunk, m, mul, rev, write; unsigned long long x, y, part; };\n";
  if (which == CumKernel::Offsets)
    return s + grid_stride_head("hyp_cum_offsets", "CumArgs", "a.outer * a.inner") + "    " + Acc + "* p = (" + Acc +
           "*)a.part + t * a.m;\n    " + Acc + " run = a.mul ? 1 : 0;\n" +
           "    for (long long j = 0; j < a.m; ++j) {\n      const " + Acc +
           " v = p[j];\n      p[j] = run;\n      run = a.mul ? run * v : run + v;\n    }\n  }\n}\n";
  const std::string I = cuda_type(in), O = cuda_type(out);
  return s + grid_stride_head("hyp_cum_chunks", "CumArgs", "a.outer * a.m * a.inner") +
         "    const long long c = t % a.inner, j = (t / a.inner) % a.m, o = t / (a.inner * a.m);\n"
         "    const long long line = o * a.inner + c;\n    " +
         Acc + " acc = a.write && a.m > 1 ? ((const " + Acc + "*)a.part)[line * a.m + j] : (a.mul ? 1 : 0);\n" +
         "    const long long k1 = (j + 1) * a.chunk < a.n ? (j + 1) * a.chunk : a.n;\n"
         "#pragma unroll 1\n    for (long long k = j * a.chunk; k < k1; ++k) {\n"
         "      const long long at = (o * a.n + (a.rev ? a.n - 1 - k : k)) * a.inner + c;\n      const " +
         Acc + " v = (" + Acc + ")((const " + I + "*)a.x)[at];\n" +
         "      acc = a.mul ? acc * v : acc + v;\n"
         "      if (a.write) ((" +
         O + "*)a.y)[at] = (" + O + ")acc;\n    }\n" + "    if (!a.write) ((" + Acc +
         "*)a.part)[line * a.m + j] = acc;\n  }\n}\n";
}

CumPlan cum_plan(int64_t outer, int64_t n, int64_t inner) {
  constexpr int64_t kThreads = 16384, kMinChunk = 32;
  CumPlan p;
  const int64_t lines = outer * inner;
  if (lines >= kThreads || n <= kMinChunk) {
    p.m = 1;
  } else {
    const int64_t want = (kThreads + lines - 1) / lines;
    p.m = std::clamp<int64_t>(want, 1, (n + kMinChunk - 1) / kMinChunk);
  }
  p.chunk = (n + p.m - 1) / p.m;
  p.m = (n + p.chunk - 1) / p.chunk;  // (no empty chunk)
  return p;
}

namespace {

DType cum_out_dtype(const CumOp& op, DType in) {
  return reduce_default_dtype(op.is_mul ? ReduceKind::Prod : ReduceKind::Sum, in);
}

class CumKernelImpl final : public Kernel {
 public:
  explicit CumKernelImpl(const Apply& node) : op_(static_cast<const CumOp&>(*node.op)) {
    const DType in = node.inputs[0]->type.dtype, out = cum_out_dtype(op_, in);
    chunks_ = request_kernel(cum_source(in, out, CumKernel::Chunks), "hyp_cum_chunks");
    offsets_ = request_kernel(cum_source(in, out, CumKernel::Offsets), "hyp_cum_offsets");
  }
  void run(const KernelArgs& a) override {
    const NDArray& in = *a.in[0];
    const DType out_dt = cum_out_dtype(op_, in.dtype());
    if (op_.axis >= in.ndim())
      fail<ValueError>(op_.name(), ": axis ", op_.axis, " is out of range for ", in.describe());
    NDArray& out = prepare_device_output(*a.out[0], in.shape(), out_dt);
    if (in.size() == 0) return;
    const NDArray x = in.is_c_contiguous() ? in : device_copy(in);
    int64_t outer = 1, inner = 1;
    for (int d = 0; d < op_.axis; ++d) outer *= x.shape(d);
    for (int d = op_.axis + 1; d < x.ndim(); ++d) inner *= x.shape(d);
    const int64_t n = x.shape(op_.axis);
    const CumPlan p = cum_plan(outer, n, inner);
    NDArray part;
    if (p.m > 1) part = NDArray::empty({outer * inner * p.m}, DType::Float64, Device::cuda());  // 8-byte sums
    auto args = [&](bool write) {
      return std::vector<int64_t>{outer,
                                  n,
                                  inner,
                                  p.chunk,
                                  p.m,
                                  op_.is_mul ? 1 : 0,
                                  op_.reverse ? 1 : 0,
                                  write ? 1 : 0,
                                  static_cast<int64_t>(reinterpret_cast<uintptr_t>(x.raw())),
                                  static_cast<int64_t>(reinterpret_cast<uintptr_t>(out.raw())),
                                  p.m > 1 ? static_cast<int64_t>(reinterpret_cast<uintptr_t>(part.raw())) : 0};
    };
    const int64_t chunk_threads = outer * p.m * inner;
    if (p.m > 1) {
      std::vector<int64_t> sums = args(false);
      launch(chunks_, grid_for(chunk_threads), sums, "CUDA cumulative op (chunk sums)");
      launch(offsets_, grid_for(outer * inner), sums, "CUDA cumulative op (chunk offsets)");
    }
    std::vector<int64_t> write = args(true);
    launch(chunks_, grid_for(chunk_threads), write, "CUDA cumulative op");
  }

 private:
  const CumOp& op_;
  KernelRef chunks_, offsets_;
};

/// Every dtype but float16 (whose cumulative ops run on the CPU).
bool cum_accepts(const Apply& node) { return node.inputs[0]->type.dtype != DType::Float16; }

}  // namespace

void register_cuda_cum_kernels() {
  register_kernel(
      kCudaBackend, typeid(CumOp),
      [](const Apply& node) -> std::unique_ptr<Kernel> { return std::make_unique<CumKernelImpl>(node); },
      KernelTraits{.accepts = cum_accepts, .recordable = true});
}

}  // namespace hypatia::cuda
