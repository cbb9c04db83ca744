// CPU kernels of the nnet family: softmax / log_softmax with SIMD exp (Highway, dynamic dispatch)
// on the thread pool above a size threshold. The input (made C-contiguous) is viewed as (outer, n, inner)
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

#include "hypatia/backends/cpu/simd_math-inl.h"

HWY_BEFORE_NAMESPACE();
namespace hypatia::nnet_detail::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;
namespace f32math = hypatia::HWY_NAMESPACE::f32math;
namespace f64math = hypatia::HWY_NAMESPACE::f64math;

/// exp(x - m) where x - m is computed exactly: s = x - m rounded, plus its rounding error err
/// (Knuth's TwoSum), and exp(s + err): err joins the exp's argument reduction where every lane's
/// result is normal, else exp(s) * (1 + err) to double precision. Rounding x - m
/// alone would cost up to |x - m| * 2^-p relative (64 ulp at x - m = -80). NaN where s is NaN
/// (a NaN input), so that the NaN reaches the sum and the whole row like in the reference (the
/// SIMD exp gives 0 for NaN); 0 where s is -inf.
template <class D, class V>
HWY_INLINE V ExpShifted(D d, V x, V m) {
  using T = hn::TFromD<D>;
  const V s = hn::Sub(x, m);
  const V bp = hn::Sub(s, x);  // -m as rounded into s
  const V err = hn::Add(hn::Sub(x, hn::Sub(s, bp)), hn::Sub(hn::Neg(m), bp));
  // The common case, every lane's result normal (s <= 0 always): err joins the exp's own
  // argument reduction, where it costs one addition.
  if constexpr (sizeof(T) == 4) {
    if (HWY_LIKELY(hn::AllTrue(d, hn::Ge(s, hn::Set(d, T(-87)))))) return f32math::ExpCore<true>(d, s, err);
  } else {
    if (HWY_LIKELY(hn::AllTrue(d, hn::Ge(s, hn::Set(d, T(-708)))))) return f64math::ExpNoTable(d, s, err);
  }
  // Subnormal or zero results, -inf, NaN.
  const V e = hn::Exp(d, s);
  const V corrected = hn::MulAdd(e, hn::IfThenElseZero(hn::IsFinite(s), err), e);
  return hn::IfThenElse(hn::IsNaN(s), s, corrected);
}

/// Adds e to the compensated sum (sum, comp) lane by lane, where every lane of sum starts at 1 and
/// every term is in [0, 1] (or NaN): then |sum| >= |e| always, and Dekker's Fast2Sum is exact
/// (sum + comp holds the exact total to about twice the precision). The starting 1 and the max's
/// own term, exactly 1 (exp(0)), are subtracted again at the end, exactly, which leaves rest, the
/// sum of the other terms, correct to its last bits (log_softmax needs log1p(rest), and rest may
/// be 1e-30).
template <class V>
HWY_INLINE void AddCompensated(V e, V& sum, V& comp) {
  const V t = hn::Add(sum, e);
  comp = hn::Add(comp, hn::Sub(e, hn::Sub(t, sum)));
  sum = t;
}

/// The r < Lanes(d) elements at p as a vector, the other lanes `fill`: through a buffer, so that
/// no load reaches past the end of the array (MaskedLoad may, on some targets).
template <class D, class T = hn::TFromD<D>>
HWY_INLINE hn::Vec<D> LoadTail(D d, const T* HWY_RESTRICT p, size_t r, T fill) {
  HWY_ALIGN T buf[hn::MaxLanes(d)];
  for (size_t j = 0; j < hn::Lanes(d); ++j) buf[j] = j < r ? p[j] : fill;
  return hn::Load(d, buf);
}

/// Stores the first r < Lanes(d) lanes of v at p.
template <class D, class T = hn::TFromD<D>>
HWY_INLINE void StoreTail(D d, hn::Vec<D> v, T* HWY_RESTRICT p, size_t r) {
  HWY_ALIGN T buf[hn::MaxLanes(d)];
  hn::Store(v, d, buf);
  for (size_t j = 0; j < r; ++j) p[j] = buf[j];
}

/// Stable softmax (or log_softmax) of one contiguous row of n > 0 elements:
///   softmax = exp(x - m) / (1 + rest),   log_softmax = (x - m) - log1p(rest),
/// with m the max, rest the sum of exp(x - m) over the other elements (so that nothing is added
/// to m before the subtraction, and nothing to 1 before the log). A row with a NaN, a +inf or no
/// finite element is NaN throughout (+inf - +inf). The last partial vector is padded with -inf
/// (which adds 0), so rows shorter than a vector run in SIMD too. With `stats`, also m and
/// log1p(rest) rounded to T (log_softmax's shift): stats[0], stats[1] (NaN for a NaN row).
template <class T>
void SoftmaxRowT(const T* HWY_RESTRICT x, T* HWY_RESTRICT y, size_t n, bool log, T* stats = nullptr) {
  const hn::ScalableTag<T> d;
  const size_t L = hn::Lanes(d);
  const T ninf = -std::numeric_limits<T>::infinity();
  const size_t body = n - n % L, r = n - body;
  auto vm = hn::Set(d, ninf);
  for (size_t i = 0; i < body; i += L) vm = hn::Max(vm, hn::LoadU(d, x + i));
  if (r) vm = hn::Max(vm, LoadTail(d, x + body, r, ninf));
  const auto vmax = hn::MaxOfLanes(d, vm);
  const T m = hn::GetLane(vmax);
  if (!std::isfinite(m)) {
    for (size_t i = 0; i < n; ++i) y[i] = std::numeric_limits<T>::quiet_NaN();
    if (stats) stats[0] = stats[1] = std::numeric_limits<T>::quiet_NaN();
    return;
  }
  // The lane that saw the max: its sum holds the max's term, exactly 1 (exp(0)).
  const intptr_t max_lane = hn::FindFirstTrue(d, hn::Eq(vm, vmax));
  auto sum = hn::Set(d, T(1)), comp = hn::Zero(d);
  for (size_t i = 0; i < body; i += L) {
    const auto e = ExpShifted(d, hn::LoadU(d, x + i), vmax);
    if (!log) hn::StoreU(e, d, y + i);
    AddCompensated(e, sum, comp);
  }
  if (r) {
    const auto e = ExpShifted(d, LoadTail(d, x + body, r, ninf), vmax);
    if (!log) StoreTail(d, e, y + body, r);
    AddCompensated(e, sum, comp);
  }
  const auto lane = hn::Eq(hn::Iota(d, 0), hn::Set(d, static_cast<T>(max_lane)));
  sum = hn::Sub(sum, hn::IfThenElse(lane, hn::Set(d, 2), hn::Set(d, 1)));
  const double rest = static_cast<double>(hn::GetLane(hn::SumOfLanes(d, sum))) +
                      static_cast<double>(hn::GetLane(hn::SumOfLanes(d, comp)));
  if (stats) {
    stats[0] = m;
    stats[1] = static_cast<T>(std::log1p(rest));
  }
  if (log) {
    const auto vshift = hn::Set(d, static_cast<T>(std::log1p(rest)));
    for (size_t i = 0; i < body; i += L) hn::StoreU(hn::Sub(hn::Sub(hn::LoadU(d, x + i), vmax), vshift), d, y + i);
    if (r) StoreTail(d, hn::Sub(hn::Sub(LoadTail(d, x + body, r, T(0)), vmax), vshift), y + body, r);
  } else {
    const auto vinv = hn::Set(d, static_cast<T>(1.0 / (1.0 + rest)));
    for (size_t i = 0; i < body; i += L) hn::StoreU(hn::Mul(hn::LoadU(d, y + i), vinv), d, y + i);
    if (r) StoreTail(d, hn::Mul(LoadTail(d, y + body, r, T(0)), vinv), y + body, r);
  }
}

/// Softmax along the rows of a block: x[k * inner + c] for k < n and c < w (w columns of a
/// row-major (n, inner) slab), column by column as SoftmaxRowT does a row. m, s and comp are
/// scratch of w elements rounded up to a whole vector (the last partial vector of columns reads
/// and writes x and y through LoadTail and StoreTail).
template <class T>
void SoftmaxColumnsT(const T* HWY_RESTRICT x, T* HWY_RESTRICT y, size_t n, size_t inner, size_t w, bool log,
                     T* HWY_RESTRICT m, T* HWY_RESTRICT s, T* HWY_RESTRICT comp) {
  const hn::ScalableTag<T> d;
  const size_t L = hn::Lanes(d);
  auto load = [&](const T* p, size_t c) { return c + L <= w ? hn::LoadU(d, p + c) : LoadTail(d, p + c, w - c, T(0)); };
  auto store = [&](hn::Vec<decltype(d)> v, T* p, size_t c) {
    if (c + L <= w)
      hn::StoreU(v, d, p + c);
    else
      StoreTail(d, v, p + c, w - c);
  };
  for (size_t c = 0; c < w; c += L) {
    auto vm = load(x, c);
    for (size_t k = 1; k < n; ++k) vm = hn::Max(vm, load(x + k * inner, c));
    // No finite max (+inf, or -inf throughout): a NaN m makes the whole column NaN below, as in
    // the row kernel.
    vm = hn::IfThenElse(hn::IsFinite(vm), vm, hn::Set(d, std::numeric_limits<T>::quiet_NaN()));
    hn::StoreU(vm, d, m + c);
    hn::StoreU(hn::Set(d, T(1)), d, s + c);
    hn::StoreU(hn::Zero(d), d, comp + c);
  }
  for (size_t k = 0; k < n; ++k) {
    const T* xk = x + k * inner;
    T* yk = y + k * inner;
    for (size_t c = 0; c < w; c += L) {
      const auto e = ExpShifted(d, load(xk, c), hn::LoadU(d, m + c));
      if (!log) store(e, yk, c);
      auto vs = hn::LoadU(d, s + c), vc = hn::LoadU(d, comp + c);
      AddCompensated(e, vs, vc);
      hn::StoreU(vs, d, s + c);
      hn::StoreU(vc, d, comp + c);
    }
  }
  // Turn s into the factor (softmax) or the shift (log_softmax) of each column: s started at 1 and
  // holds the max's term, exactly 1, and s - 2 is exact. A column with a NaN has a NaN sum: NaN throughout.
  for (size_t c = 0; c < w; ++c) {
    const double rest = (static_cast<double>(s[c]) - 2) + static_cast<double>(comp[c]);
    s[c] = static_cast<T>(log ? std::log1p(rest) : 1.0 / (1.0 + rest));
  }
  for (size_t k = 0; k < n; ++k) {
    const T* xk = x + k * inner;
    T* yk = y + k * inner;
    for (size_t c = 0; c < w; c += L) {
      const auto f = hn::LoadU(d, s + c);
      store(log ? hn::Sub(hn::Sub(load(xk, c), hn::LoadU(d, m + c)), f) : hn::Mul(load(yk, c), f), yk, c);
    }
  }
}

void SoftmaxRowF32(const float* x, float* y, size_t n, bool log, float* stats) { SoftmaxRowT(x, y, n, log, stats); }
void SoftmaxRowF64(const double* x, double* y, size_t n, bool log, double* stats) { SoftmaxRowT(x, y, n, log, stats); }
void SoftmaxColumnsF32(const float* x, float* y, size_t n, size_t inner, size_t w, bool log, float* m, float* s,
                       float* comp) {
  SoftmaxColumnsT(x, y, n, inner, w, log, m, s, comp);
}
void SoftmaxColumnsF64(const double* x, double* y, size_t n, size_t inner, size_t w, bool log, double* m, double* s,
                       double* comp) {
  SoftmaxColumnsT(x, y, n, inner, w, log, m, s, comp);
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
void softmax_row(const float* x, float* y, size_t n, bool log, float* stats = nullptr) {
  HWY_DYNAMIC_DISPATCH(SoftmaxRowF32)(x, y, n, log, stats);
}
void softmax_row(const double* x, double* y, size_t n, bool log, double* stats = nullptr) {
  HWY_DYNAMIC_DISPATCH(SoftmaxRowF64)(x, y, n, log, stats);
}
void softmax_columns(const float* x, float* y, size_t n, size_t inner, size_t w, bool log, float* m, float* s,
                     float* comp) {
  HWY_DYNAMIC_DISPATCH(SoftmaxColumnsF32)(x, y, n, inner, w, log, m, s, comp);
}
void softmax_columns(const double* x, double* y, size_t n, size_t inner, size_t w, bool log, double* m, double* s,
                     double* comp) {
  HWY_DYNAMIC_DISPATCH(SoftmaxColumnsF64)(x, y, n, inner, w, log, m, s, comp);
}

/// Columns per block in the column path: the block's m, s and comp stay in L1. A multiple of every
/// vector length, so that the scratch holds whole vectors.
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
      std::vector<T> m(kColumnBlock), s(kColumnBlock), comp(kColumnBlock);
      for (int64_t task = t0; task < t1; ++task) {
        const int64_t o = task / blocks, c0 = (task % blocks) * kColumnBlock;
        const int64_t w = std::min(kColumnBlock, inner - c0);
        const int64_t base = o * n * inner + c0;
        softmax_columns(xp + base, yp + base, static_cast<size_t>(n), static_cast<size_t>(inner),
                        static_cast<size_t>(w), op.log, m.data(), s.data(), comp.data());
      }
    });
  });
}

void crossentropy_softmax_cpu(const CrossentropySoftmax1HotWithBias& op, const KernelArgs& args, bool one_for_all) {
  const NDArray &x = *args.in[0], &b = *args.in[1], &labels = *args.in[2];
  const char* who = "CrossentropySoftmax1HotWithBias";
  check_labels(who, x, labels);
  check_xent_softmax_shapes(who, x, b, labels, one_for_all);
  const int64_t n = x.shape(0), k = x.shape(1);
  NDArray& nll = prepare_output(*args.out[0], {n}, x.dtype());
  NDArray& sm = prepare_output(*args.out[1], x.shape(), x.dtype());
  if (n == 0) return;
  if (k == 0) return;  // (no label passed the check: n is 0 too)
  const int64_t bs = b.shape(0) == 1 ? 0 : b.strides()[0];
  const int threads = parallel_worth(x.size()) ? parallel_threads() : 1;
  const int64_t tasks = parallel_task_count(x.size(), threads);
  dispatch_float(x.dtype(), op.name(), [&](auto t) {
    using T = decltype(t);
    T* nllp = nll.data<T>();
    T* smp = sm.data<T>();
    parallel_ranges(n, tasks, threads, [&](int64_t r0, int64_t r1) {
      // Per row: z = x + b (rounded to T, as the add it replaces), then the CPU's softmax row of
      // z, which also gives m and log_softmax's shift: nll = -((z[label] - m) - shift), the
      // log_softmax kernel's value at the label.
      std::vector<T> z(k);
      for (int64_t i = r0; i < r1; ++i) {
        for (int64_t j = 0; j < k; ++j)
          z[j] = static_cast<T>(*reinterpret_cast<const T*>(x.raw() + i * x.strides()[0] + j * x.strides()[1]) +
                                *reinterpret_cast<const T*>(b.raw() + j * bs));
        T stats[2];
        softmax_row(z.data(), smp + i * k, static_cast<size_t>(k), false, stats);
        nllp[i] = -((z[label_at(labels, i)] - stats[0]) - stats[1]);
      }
    });
  });
}

void crossentropy_softmax_dx_cpu(const CrossentropySoftmax1HotWithBiasDx& op, const KernelArgs& args,
                                 bool one_for_all) {
  const NDArray &dy = *args.in[0], &sm0 = *args.in[1], &labels = *args.in[2];
  const char* who = "CrossentropySoftmax1HotWithBiasDx";
  check_labels(who, sm0, labels);
  check_xent_dx_shapes(who, dy, sm0, labels, one_for_all);
  const int64_t n = sm0.shape(0), k = sm0.shape(1);
  NDArray& out = prepare_output(*args.out[0], sm0.shape(), sm0.dtype());
  if (out.size() == 0) return;
  const NDArray sm = sm0.ascontiguous();
  const int64_t ds = dy.shape(0) == 1 ? 0 : dy.strides()[0];
  const int threads = parallel_worth(out.size()) ? parallel_threads() : 1;
  const int64_t tasks = parallel_task_count(out.size(), threads);
  dispatch_float(sm.dtype(), op.name(), [&](auto t) {
    using T = decltype(t);
    const T* s = sm.data<T>();
    T* o = out.data<T>();
    parallel_ranges(n, tasks, threads, [&](int64_t r0, int64_t r1) {
      for (int64_t i = r0; i < r1; ++i) {
        const T d = *reinterpret_cast<const T*>(dy.raw() + i * ds);
        const T* si = s + i * k;
        T* oi = o + i * k;
        for (int64_t j = 0; j < k; ++j) oi[j] = d * si[j];
        const int64_t y = label_at(labels, i);
        oi[y] = d * static_cast<T>(si[y] - T(1));
      }
    });
  });
}

}  // namespace hypatia::nnet_detail
#endif  // HWY_ONCE
