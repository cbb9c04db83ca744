// CPU kernels of the subtensor family: x[int_array] on the first axis of a C-contiguous array
// (embedding lookups, take) copies whole rows with memcpy, split across threads when large.
#include <cstring>

#include "hypatia/backends/cpu/thread_pool.h"
#include "hypatia/backends/shape_kernels_impl.h"
#include "hypatia/backends/subtensor_engine.h"

namespace hypatia {

void register_subtensor_cpu_kernels();

namespace {

void advanced_subtensor_cpu(const AdvancedSubtensor& op, const KernelArgs& args) {
  const NDArray& x = *args.in[0];
  const bool rows = op.spec.size() == 1 && op.spec[0].kind == IndexEntry::Kind::IntArray && x.ndim() >= 1 &&
                    x.is_c_contiguous() && args.in[1]->ndim() == 1;
  if (!rows) {
    subtensor_engine::Resolved r = subtensor_engine::resolve(op.name(), op.spec, x, args.in.subspan(1));
    NDArray& out = prepare_output(*args.out[0], r.result_shape, x.dtype());
    subtensor_engine::gather(r, out);
    return;
  }
  const NDArray& ia = *args.in[1];
  if (!is_integer(ia.dtype())) fail<IndexError>(op.name(), ": index arrays must be integers, got ", ia.describe());
  const NDArray idx = ia.astype(DType::Int64);
  const int64_t n = idx.size(), len = x.shape(0);
  const int64_t* v = idx.data<int64_t>();
  for (int64_t i = 0; i < n; ++i)
    if (v[i] < -len || v[i] >= len)
      fail<IndexError>(op.name(), ": index ", v[i], " is out of bounds for axis 0 with size ", len);
  Shape shape = x.shape();
  shape[0] = n;
  NDArray& out = prepare_output(*args.out[0], shape, x.dtype());
  const size_t row = static_cast<size_t>(x.size() / std::max<int64_t>(len, 1)) * x.itemsize();
  if (row == 0 || n == 0) return;
  const std::byte* src = x.raw();
  std::byte* dst = out.raw();
  // Threads above the threshold counted in 8-byte words (a copy moves bytes, no arithmetic).
  const int64_t words = static_cast<int64_t>(n * static_cast<int64_t>(row) / 8);
  const int threads = parallel_worth(words) ? parallel_threads() : 1;
  parallel_ranges(n, parallel_task_count(words, threads), threads, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) {
      const int64_t j = v[i] < 0 ? v[i] + len : v[i];
      std::memcpy(dst + static_cast<size_t>(i) * row, src + static_cast<size_t>(j) * row, row);
    }
  });
}

}  // namespace

void register_subtensor_cpu_kernels() {
  register_simple_kernel<AdvancedSubtensor>(kCpuBackend, advanced_subtensor_cpu);
}

}  // namespace hypatia
