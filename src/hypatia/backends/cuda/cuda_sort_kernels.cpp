// SortOp and ArgSortOp on the CUDA backend (ops/sort.h): numpy's stable order with NaN last, as the
// CPU's kernels (backends/reference/sort_ref.cpp). Each line along the axis is sorted by a bitonic
// network (sort_network.h) over (value, index) keys, the index breaking ties so that the result
// is the stable one; a line is padded to a power of two with keys greater than every real one.
// Three generated kernels, each a grid-stride loop with no shared memory or synchronisation
// (their arithmetic also runs on the host in CI: tests/cpp/test_cuda_on_host.cpp): init copies
// the lines into scratch keys, pass runs one step of the network, final writes the sorted values
// or the indices back in the input's layout. log2(P)(log2(P)+1)/2 passes for lines of padded
// length P: one launch each (a CUDA graph replays them as one).
#include "hypatia/backends/cuda/cuda_api.h"
#include "hypatia/backends/cuda/cuda_kernel_util.h"
#include "hypatia/backends/cuda/sort_network.h"
#include "hypatia/core/error.h"
#include "hypatia/ops/sort.h"

namespace hypatia::cuda {

std::string sort_source(DType dt) {
  const std::string T = cuda_type(dt);
  const bool fl = is_float(dt);
  // Lines: the contiguous input viewed as (outer, n, inner); line r = o * inner + i.
  std::string s =
      "struct SortArgs { long long rows, n, inner, p, k, j, indices; unsigned long long x, val, idx, out; };\n";
  s += "__device__ inline long long sort_at(const SortArgs& a, long long r, long long q) {\n";
  s += "  return ((r / a.inner) * a.n + q) * a.inner + r % a.inner;\n}\n";
  // Whether key (u, iu) sorts before (v, iv): NaN last, ties by index, padding (index >= n) last.
  s +=
      "__device__ inline bool sort_before(const SortArgs& a, " + T + " u, long long iu, " + T + " v, long long iv) {\n";
  s += "  if (iu >= a.n || iv >= a.n) return iu < iv;\n";
  s += std::string("  const bool lt = u < v") + (fl ? " || (v != v && u == u)" : "") + ";\n";
  s += std::string("  const bool gt = v < u") + (fl ? " || (u != u && v == v)" : "") + ";\n";
  s += "  return lt || (!gt && iu < iv);\n}\n";
  s += grid_stride_head("hyp_sort_init", "SortArgs", "a.rows * a.p");
  s += "    const long long r = t / a.p, q = t % a.p;\n";
  s += "    if (q < a.n) ((" + T + "*)a.val)[t] = ((const " + T + "*)a.x)[sort_at(a, r, q)];\n";
  s += "    ((long long*)a.idx)[t] = q;\n  }\n}\n";
  s += grid_stride_head("hyp_sort_pass", "SortArgs", "a.rows * (a.p / 2)");
  s += "    " + T + "* val = (" + T + "*)a.val;\n    long long* idx = (long long*)a.idx;\n";
  s += "    const long long r = t / (a.p / 2), q = t % (a.p / 2);\n";
  s += "    const long long i = 2 * a.j * (q / a.j) + q % a.j, l = i + a.j;\n";
  s += "    const long long bi = r * a.p + i, bl = r * a.p + l;\n";
  s += "    const bool ascending = (i & a.k) == 0;\n";
  s += "    const " + T + " vi = val[bi], vl = val[bl];\n    const long long ii = idx[bi], il = idx[bl];\n";
  s += "    const bool swap = ascending ? sort_before(a, vl, il, vi, ii) : sort_before(a, vi, ii, vl, il);\n";
  s += "    if (swap) { val[bi] = vl; val[bl] = vi; idx[bi] = il; idx[bl] = ii; }\n  }\n}\n";
  s += grid_stride_head("hyp_sort_final", "SortArgs", "a.rows * a.n");
  s += "    const long long r = t / a.n, q = t % a.n, from = r * a.p + q, to = sort_at(a, r, q);\n";
  s += "    if (a.indices) ((long long*)a.out)[to] = ((const long long*)a.idx)[from];\n";
  s += "    else ((" + T + "*)a.out)[to] = ((const " + T + "*)a.val)[from];\n  }\n}\n";
  return s;
}

namespace {

class SortKernel final : public Kernel {
 public:
  SortKernel(const Apply& node, int axis, bool indices) : axis_(axis), indices_(indices) {
    const std::string src = table_prefix() + sort_source(node.inputs[0]->type.dtype);
    init_ = request_kernel(src, "hyp_sort_init");
    pass_ = request_kernel(src, "hyp_sort_pass");
    final_ = request_kernel(src, "hyp_sort_final");
  }
  void run(const KernelArgs& a) override {
    const NDArray& in = *a.in[0];
    const DType dt = in.dtype();
    NDArray& out = prepare_device_output(*a.out[0], in.shape(), indices_ ? DType::Int64 : dt);
    if (in.size() == 0) return;
    const NDArray x = in.is_c_contiguous() ? in : device_copy(in);
    const int64_t n = x.shape(axis_), p = sort_network::padded(n), rows = x.size() / n;
    int64_t inner = 1;
    for (int d = axis_ + 1; d < x.ndim(); ++d) inner *= x.shape(d);
    const NDArray val = NDArray::empty({rows * p}, dt, Device::cuda());
    const NDArray idx = NDArray::empty({rows * p}, DType::Int64, Device::cuda());
    auto args = [&](int64_t k, int64_t j) {
      return std::vector<int64_t>{rows,
                                  n,
                                  inner,
                                  p,
                                  k,
                                  j,
                                  indices_ ? 1 : 0,
                                  static_cast<int64_t>(reinterpret_cast<uintptr_t>(x.raw())),
                                  static_cast<int64_t>(reinterpret_cast<uintptr_t>(val.raw())),
                                  static_cast<int64_t>(reinterpret_cast<uintptr_t>(idx.raw())),
                                  static_cast<int64_t>(reinterpret_cast<uintptr_t>(out.raw()))};
    };
    std::vector<int64_t> v = args(0, 0);
    launch(init_, grid_for(rows * p), v, "CUDA sort (init)");
    sort_network::for_each_pass(p, [&](int64_t k, int64_t j) {
      std::vector<int64_t> pv = args(k, j);
      launch(pass_, grid_for(rows * p / 2), pv, "CUDA sort (network)");
    });
    launch(final_, grid_for(rows * n), v, "CUDA sort (final)");
  }

 private:
  int axis_;
  bool indices_;
  KernelRef init_, pass_, final_;
};

/// Every dtype but float16, which sorts on the CPU.
bool sort_accepts(const Apply& node) { return node.inputs[0]->type.dtype != DType::Float16; }

}  // namespace

void register_cuda_sort_kernels() {
  const KernelTraits traits{.accepts = sort_accepts, .recordable = true};
  register_kernel(
      kCudaBackend, typeid(SortOp),
      [](const Apply& node) -> std::unique_ptr<Kernel> {
        return std::make_unique<SortKernel>(node, static_cast<const SortOp&>(*node.op).axis, false);
      },
      traits);
  register_kernel(
      kCudaBackend, typeid(ArgSortOp),
      [](const Apply& node) -> std::unique_ptr<Kernel> {
        return std::make_unique<SortKernel>(node, static_cast<const ArgSortOp&>(*node.op).axis, true);
      },
      traits);
}

}  // namespace hypatia::cuda
