// CPU kernels of the nnet family: softmax / log_softmax rows with SIMD exp (Highway, dynamic
// dispatch) and OpenMP over rows above a size threshold.
#include <cmath>
#include <limits>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "hypatia/backends/cpu/nnet_cpu.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
// Must come after foreach_target.h.
#include <hwy/contrib/math/math-inl.h>
#include <hwy/highway.h>

HWY_BEFORE_NAMESPACE();
namespace hypatia::nnet_detail::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

/// Stable softmax (or log_softmax) of one contiguous row of n > 0 elements.
template <class T>
void SoftmaxRowT(const T* HWY_RESTRICT x, T* HWY_RESTRICT y, size_t n, bool log) {
  const hn::ScalableTag<T> d;
  const size_t L = hn::Lanes(d);
  size_t i = 0;
  T m = x[0];
  if (n >= L) {
    auto vm = hn::LoadU(d, x);
    for (i = L; i + L <= n; i += L) vm = hn::Max(vm, hn::LoadU(d, x + i));
    m = hn::GetLane(hn::MaxOfLanes(d, vm));
  }
  for (; i < n; ++i) m = x[i] > m ? x[i] : m;
  // A NaN anywhere makes the whole row NaN (as the reference does).
  const auto vmax = hn::Set(d, m);
  auto vs = hn::Zero(d);
  double s = 0;
  for (i = 0; i + L <= n; i += L) {
    auto e = hn::Exp(d, hn::Sub(hn::LoadU(d, x + i), vmax));
    if (!log) hn::StoreU(e, d, y + i);
    vs = hn::Add(vs, e);
  }
  s = static_cast<double>(hn::GetLane(hn::SumOfLanes(d, vs)));
  for (; i < n; ++i) {
    T e = std::exp(x[i] - m);
    if (!log) y[i] = e;
    s += static_cast<double>(e);
  }
  for (size_t k = 0; k < n; ++k)
    if (x[k] != x[k]) s = std::numeric_limits<double>::quiet_NaN();
  if (log) {
    const T shift = static_cast<T>(static_cast<double>(m) + std::log(s));
    const auto vshift = hn::Set(d, shift);
    for (i = 0; i + L <= n; i += L) hn::StoreU(hn::Sub(hn::LoadU(d, x + i), vshift), d, y + i);
    for (; i < n; ++i) y[i] = x[i] - shift;
  } else {
    const T inv = static_cast<T>(1.0 / s);
    const auto vinv = hn::Set(d, inv);
    for (i = 0; i + L <= n; i += L) hn::StoreU(hn::Mul(hn::LoadU(d, y + i), vinv), d, y + i);
    for (; i < n; ++i) y[i] *= inv;
  }
}

void SoftmaxRowF32(const float* x, float* y, size_t n, bool log) { SoftmaxRowT(x, y, n, log); }
void SoftmaxRowF64(const double* x, double* y, size_t n, bool log) { SoftmaxRowT(x, y, n, log); }

}  // namespace hypatia::nnet_detail::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include <omp.h>

#include <vector>

#include "hypatia/backends/reference/nnet_common.h"
#include "hypatia/core/config.h"

namespace hypatia::nnet_detail {

HWY_EXPORT(SoftmaxRowF32);
HWY_EXPORT(SoftmaxRowF64);

namespace {
void softmax_row(const float* x, float* y, size_t n, bool log) { HWY_DYNAMIC_DISPATCH(SoftmaxRowF32)(x, y, n, log); }
void softmax_row(const double* x, double* y, size_t n, bool log) { HWY_DYNAMIC_DISPATCH(SoftmaxRowF64)(x, y, n, log); }
}  // namespace

void softmax_cpu(const Softmax& op, const KernelArgs& args) {
  const NDArray& x0 = *args.in[0];
  NDArray& out = prepare_output(*args.out[0], x0.shape(), x0.dtype());
  if (x0.size() == 0) return;
  // Rows along the axis, contiguous: the input itself when the axis is last and the array
  // C-contiguous, else a copy with the axis moved last (written back through a view).
  const int nd = x0.ndim();
  const bool direct = op.axis == nd - 1 && x0.is_c_contiguous();
  std::vector<int> perm;
  for (int d = 0; d < nd; ++d)
    if (d != op.axis) perm.push_back(d);
  perm.push_back(op.axis);
  NDArray x = direct ? x0 : x0.transpose(perm).copy();
  NDArray y = direct ? out : NDArray::empty(x.shape(), x.dtype());
  const int64_t n = x0.shape(op.axis);
  const int64_t rows = x.size() / n;
  const int threads = x.size() >= config().openmp_elemwise_minsize
                          ? (config().num_threads > 0 ? config().num_threads : omp_get_max_threads())
                          : 1;
  dispatch_float(x.dtype(), op.name(), [&](auto t) {
    using T = decltype(t);
    const T* xp = x.data<T>();
    T* yp = y.data<T>();
#pragma omp parallel for num_threads(threads) schedule(static) if (threads > 1)
    for (int64_t r = 0; r < rows; ++r) softmax_row(xp + r * n, yp + r * n, static_cast<size_t>(n), op.log);
  });
  if (!direct) out.transpose(perm).assign(y);
}

}  // namespace hypatia::nnet_detail
#endif  // HWY_ONCE
