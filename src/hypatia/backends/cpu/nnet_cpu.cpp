// CPU kernels of the nnet family: softmax / log_softmax with SIMD exp (Highway, dynamic dispatch)
// and OpenMP above a size threshold. The input (made C-contiguous) is viewed as (outer, n, inner)
// with n the softmax axis: inner == 1 runs along contiguous rows, else along blocks of columns
// whose loads stay contiguous.
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

/// exp(v - m), or NaN where v - m is NaN (a NaN input, or an all -inf row), so that the NaN reaches
/// the sum and the whole row like in the reference (the SIMD exp does not propagate NaN).
template <class D, class V>
HWY_INLINE V ExpShifted(D d, V v, V m) {
  const V diff = hn::Sub(v, m);
  return hn::IfThenElse(hn::IsNaN(diff), diff, hn::Exp(d, diff));
}

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
  const auto vmax = hn::Set(d, m);
  auto vs = hn::Zero(d);
  for (i = 0; i + L <= n; i += L) {
    auto e = ExpShifted(d, hn::LoadU(d, x + i), vmax);
    if (!log) hn::StoreU(e, d, y + i);
    vs = hn::Add(vs, e);
  }
  double s = static_cast<double>(hn::GetLane(hn::SumOfLanes(d, vs)));
  for (; i < n; ++i) {
    T e = std::exp(x[i] - m);
    if (!log) y[i] = e;
    s += static_cast<double>(e);
  }
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

/// Softmax along the rows of a block: x[k * inner + c] for k < n and c < w (w columns of a
/// row-major (n, inner) slab). m and s are scratch of w elements.
template <class T>
void SoftmaxColumnsT(const T* HWY_RESTRICT x, T* HWY_RESTRICT y, size_t n, size_t inner, size_t w, bool log,
                     T* HWY_RESTRICT m, T* HWY_RESTRICT s) {
  const hn::ScalableTag<T> d;
  const size_t L = hn::Lanes(d);
  size_t c = 0;
  for (; c + L <= w; c += L) {
    auto vm = hn::LoadU(d, x + c);
    for (size_t k = 1; k < n; ++k) vm = hn::Max(vm, hn::LoadU(d, x + k * inner + c));
    hn::StoreU(vm, d, m + c);
  }
  for (; c < w; ++c) {
    T mc = x[c];
    for (size_t k = 1; k < n; ++k) mc = x[k * inner + c] > mc ? x[k * inner + c] : mc;
    m[c] = mc;
  }
  for (c = 0; c < w; ++c) s[c] = 0;
  for (size_t k = 0; k < n; ++k) {
    const T* xk = x + k * inner;
    T* yk = y + k * inner;
    for (c = 0; c + L <= w; c += L) {
      auto e = ExpShifted(d, hn::LoadU(d, xk + c), hn::LoadU(d, m + c));
      if (!log) hn::StoreU(e, d, yk + c);
      hn::StoreU(hn::Add(hn::LoadU(d, s + c), e), d, s + c);
    }
    for (; c < w; ++c) {
      T e = std::exp(xk[c] - m[c]);
      if (!log) yk[c] = e;
      s[c] += e;
    }
  }
  // Turn s into the factor (softmax) or the shift (log_softmax) for each column.
  for (c = 0; c < w; ++c) s[c] = log ? m[c] + std::log(s[c]) : T(1) / s[c];
  for (size_t k = 0; k < n; ++k) {
    const T* xk = x + k * inner;
    T* yk = y + k * inner;
    for (c = 0; c + L <= w; c += L) {
      auto f = hn::LoadU(d, s + c);
      hn::StoreU(log ? hn::Sub(hn::LoadU(d, xk + c), f) : hn::Mul(hn::LoadU(d, yk + c), f), d, yk + c);
    }
    for (; c < w; ++c) yk[c] = log ? xk[c] - s[c] : yk[c] * s[c];
  }
}

void SoftmaxRowF32(const float* x, float* y, size_t n, bool log) { SoftmaxRowT(x, y, n, log); }
void SoftmaxRowF64(const double* x, double* y, size_t n, bool log) { SoftmaxRowT(x, y, n, log); }
void SoftmaxColumnsF32(const float* x, float* y, size_t n, size_t inner, size_t w, bool log, float* m, float* s) {
  SoftmaxColumnsT(x, y, n, inner, w, log, m, s);
}
void SoftmaxColumnsF64(const double* x, double* y, size_t n, size_t inner, size_t w, bool log, double* m, double* s) {
  SoftmaxColumnsT(x, y, n, inner, w, log, m, s);
}

}  // namespace hypatia::nnet_detail::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include <algorithm>
#include <vector>

#include "hypatia/backends/cpu/thread_pool.h"
#include "hypatia/backends/reference/nnet_common.h"

namespace hypatia::nnet_detail {

HWY_EXPORT(SoftmaxRowF32);
HWY_EXPORT(SoftmaxRowF64);
HWY_EXPORT(SoftmaxColumnsF32);
HWY_EXPORT(SoftmaxColumnsF64);

namespace {
void softmax_row(const float* x, float* y, size_t n, bool log) { HWY_DYNAMIC_DISPATCH(SoftmaxRowF32)(x, y, n, log); }
void softmax_row(const double* x, double* y, size_t n, bool log) { HWY_DYNAMIC_DISPATCH(SoftmaxRowF64)(x, y, n, log); }
void softmax_columns(const float* x, float* y, size_t n, size_t inner, size_t w, bool log, float* m, float* s) {
  HWY_DYNAMIC_DISPATCH(SoftmaxColumnsF32)(x, y, n, inner, w, log, m, s);
}
void softmax_columns(const double* x, double* y, size_t n, size_t inner, size_t w, bool log, double* m, double* s) {
  HWY_DYNAMIC_DISPATCH(SoftmaxColumnsF64)(x, y, n, inner, w, log, m, s);
}

/// Columns per block in the column path: the block's m and s stay in L1.
constexpr int64_t kColumnBlock = 512;
}  // namespace

void softmax_cpu(const Softmax& op, const KernelArgs& args) {
  const NDArray& x0 = *args.in[0];
  NDArray& out = prepare_output(*args.out[0], x0.shape(), x0.dtype());
  if (x0.size() == 0) return;
  NDArray x = x0.ascontiguous();
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < op.axis; ++d) outer *= x.shape(d);
  for (int d = op.axis + 1; d < x.ndim(); ++d) inner *= x.shape(d);
  const int64_t n = x.shape(op.axis);
  const int threads = parallel_worth(x.size()) ? parallel_threads() : 1;
  const int64_t tasks = parallel_task_count(x.size(), threads);
  dispatch_float(x.dtype(), op.name(), [&](auto t) {
    using T = decltype(t);
    const T* xp = x.data<T>();
    T* yp = out.data<T>();
    if (inner == 1) {
      parallel_ranges(outer, tasks, threads, [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r) softmax_row(xp + r * n, yp + r * n, static_cast<size_t>(n), op.log);
      });
      return;
    }
    const int64_t blocks = (inner + kColumnBlock - 1) / kColumnBlock;
    parallel_ranges(outer * blocks, tasks, threads, [&](int64_t t0, int64_t t1) {
      std::vector<T> m(kColumnBlock), s(kColumnBlock);
      for (int64_t task = t0; task < t1; ++task) {
        const int64_t o = task / blocks, c0 = (task % blocks) * kColumnBlock;
        const int64_t w = std::min(kColumnBlock, inner - c0);
        const int64_t base = o * n * inner + c0;
        softmax_columns(xp + base, yp + base, static_cast<size_t>(n), static_cast<size_t>(inner),
                        static_cast<size_t>(w), op.log, m.data(), s.data());
      }
    });
  });
}

}  // namespace hypatia::nnet_detail
#endif  // HWY_ONCE
