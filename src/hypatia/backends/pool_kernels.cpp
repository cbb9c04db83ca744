// Kernels of the pooling family: direct loops over the windows of each pooled slice (the
// leading axes flattened), slices split over the thread pool on the CPU backend. The reference
// backend runs the same loops on one thread; the independent oracle is the numpy reference of
// tests/python/test_pool.py and the hand-computed values of tests/cpp/test_pool.cpp.
#include <algorithm>
#include <limits>
#include <vector>

#include "hypatia/backends/cpu/thread_pool.h"
#include "hypatia/backends/pool_geometry.h"
#include "hypatia/backends/registry.h"
#include "hypatia/core/error.h"
#include "hypatia/ops/pool.h"

namespace hypatia {
namespace {

using pool_geometry::Geometry;
using pool_geometry::geometry;
using pool_geometry::pooled_shape;

/// One window: [lo, hi) per axis within the image, and its size for the averages.
struct Window {
  std::array<int64_t, 3> lo, hi;
  int64_t count;
};

/// The windows along each axis, computed once per call: [lo, hi) within the image and the
/// window's extent within the padded image (average_inc_pad's divisor).
struct AxisWindows {
  std::array<std::vector<int64_t>, 3> lo, hi, inc;
  bool inc_pad;
  AxisWindows(const Geometry& g, const PoolParams& p) : inc_pad(p.mode == "average_inc_pad") {
    for (int a = 0; a < 3; ++a)
      for (int64_t k = 0; k < g.out[a]; ++k) {
        const int64_t start = k * g.st[a] - g.pad[a];
        const int64_t end = std::min(start + g.ws[a], g.in[a] + g.pad[a]);
        lo[a].push_back(std::max<int64_t>(start, 0));
        hi[a].push_back(std::min(end, g.in[a]));
        inc[a].push_back(end - start);
      }
  }
  Window at(int64_t kd, int64_t kh, int64_t kw) const {
    Window w{{lo[0][kd], lo[1][kh], lo[2][kw]}, {hi[0][kd], hi[1][kh], hi[2][kw]}, 1};
    w.count = inc_pad ? inc[0][kd] * inc[1][kh] * inc[2][kw]
                      : (w.hi[0] - w.lo[0]) * (w.hi[1] - w.lo[1]) * (w.hi[2] - w.lo[2]);
    return w;
  }
};

/// Calls f(slice, out_index, window) for every window of slices [s0, s1).
template <class F>
void for_windows(const Geometry& g, const AxisWindows& aw, int64_t s0, int64_t s1, F&& f) {
  for (int64_t s = s0; s < s1; ++s) {
    int64_t o = 0;
    for (int64_t kd = 0; kd < g.out[0]; ++kd)
      for (int64_t kh = 0; kh < g.out[1]; ++kh)
        for (int64_t kw = 0; kw < g.out[2]; ++kw, ++o) f(s, o, aw.at(kd, kh, kw));
  }
}

/// Calls e(flat index within the slice) for every element of window w.
template <class E>
void for_elements(const Geometry& g, const Window& w, E&& e) {
  for (int64_t d = w.lo[0]; d < w.hi[0]; ++d)
    for (int64_t h = w.lo[1]; h < w.hi[1]; ++h) {
      const int64_t row = (d * g.in[1] + h) * g.in[2];
      for (int64_t x = w.lo[2]; x < w.hi[2]; ++x) e(row + x);
    }
}

/// Runs body(s0, s1) over the slices: on the pool (threaded) or on the caller alone.
template <class Body>
void over_slices(const Geometry& g, bool threaded, const Body& body) {
  const int64_t work = g.slices * std::max(g.in_size(), g.out_size());
  const int threads = threaded && parallel_worth(work) ? parallel_threads() : 1;
  if (threads <= 1) return body(int64_t{0}, g.slices);
  parallel_ranges(g.slices, parallel_task_count(work, threads), threads, body);
}

/// The start of a max: -inf for floating types (a window of -inf pools to -inf), else the lowest value.
template <class T>
constexpr T lowest_value() {
  if constexpr (std::numeric_limits<T>::has_infinity) return -std::numeric_limits<T>::infinity();
  return std::numeric_limits<T>::lowest();
}

/// numpy's maximum: NaN when either is NaN, in a form the compiler vectorizes (compare, blend).
template <class T>
inline T nan_max(T a, T b) {
  return (a > b || a != a) ? a : b;  // NOLINT(misc-redundant-expression): a != a is the NaN test
}

/// out[k] = max of t[k * S - pad + j], j < ws, for the windows k in [k0, k1) that lie wholly inside
/// the row; S is the stride when it is known at compile time (1 or 2), else 0 and `st` is used.
template <int S, class T>
void max_full_windows(const T* t, T* out, int64_t k0, int64_t k1, int64_t st, int64_t pad, int64_t ws) {
  const int64_t stride = S > 0 ? S : st;
  const T* base = t - pad;
  for (int64_t k = k0; k < k1; ++k) out[k] = base[k * stride];
  for (int64_t j = 1; j < ws; ++j) {
    const T* b = base + j;
    for (int64_t k = k0; k < k1; ++k) out[k] = nan_max(out[k], b[k * stride]);
  }
}

/// Max pooling of slices [s0, s1) as two separable passes per output row: the rows of the window
/// combined element by element (vectorized), then each window of that combined row. Same values as
/// the window-by-window loop (max is exact and NaN wins in both), at close to memory speed.
template <class T>
void max_pool_rows(const Geometry& g, const AxisWindows& aw, const T* xp, T* op, int64_t s0, int64_t s1) {
  const int64_t W = g.in[2], OW = g.out[2];
  std::vector<T> row(static_cast<size_t>(W));
  // The windows wholly inside a row: k * st - pad >= 0 and k * st - pad + ws <= W.
  int64_t k0 = 0, k1 = OW;
  while (k0 < OW && k0 * g.st[2] - g.pad[2] < 0) ++k0;
  while (k1 > k0 && (k1 - 1) * g.st[2] - g.pad[2] + g.ws[2] > W) --k1;
  for (int64_t s = s0; s < s1; ++s) {
    const T* xs = xp + s * g.in_size();
    T* os = op + s * g.out_size();
    for (int64_t kd = 0; kd < g.out[0]; ++kd)
      for (int64_t kh = 0; kh < g.out[1]; ++kh, os += OW) {
        const T* t = nullptr;  // the window's rows combined
        int n = 0;
        for (int64_t d = aw.lo[0][kd]; d < aw.hi[0][kd]; ++d)
          for (int64_t h = aw.lo[1][kh]; h < aw.hi[1][kh]; ++h) {
            const T* src = xs + (d * g.in[1] + h) * W;
            if (n == 0) {
              t = src;
            } else {
              T* r = row.data();
              for (int64_t x = 0; x < W; ++x) r[x] = nan_max(t[x], src[x]);
              t = r;
            }
            ++n;
          }
        if (n == 0) {  // a window wholly in the padding (not reachable with pad < ws; kept exact)
          std::fill(os, os + OW, lowest_value<T>());
          continue;
        }
        if (g.st[2] == 2)
          max_full_windows<2>(t, os, k0, k1, 2, g.pad[2], g.ws[2]);
        else if (g.st[2] == 1)
          max_full_windows<1>(t, os, k0, k1, 1, g.pad[2], g.ws[2]);
        else
          max_full_windows<0>(t, os, k0, k1, g.st[2], g.pad[2], g.ws[2]);
        const auto edge = [&](int64_t k) {  // a window cut by the border or the padding
          T m = lowest_value<T>();
          for (int64_t x = aw.lo[2][k]; x < aw.hi[2][k]; ++x) m = nan_max(m, t[x]);
          os[k] = m;
        };
        for (int64_t k = 0; k < k0; ++k) edge(k);
        for (int64_t k = k1; k < OW; ++k) edge(k);
      }
  }
}

template <bool Threaded>
void pool_kernel(const Pool& op, const KernelArgs& a) {
  const NDArray x = a.in[0]->ascontiguous();
  const Geometry g = geometry(op.p, x.shape());
  const AxisWindows aw(g, op.p);
  NDArray& out = prepare_output(*a.out[0], pooled_shape(op.p, x.shape(), g), x.dtype());
  const bool is_max = op.p.mode == "max", is_sum = op.p.mode == "sum";
  dispatch_dtype(x.dtype(), [&](auto t) {
    using T = decltype(t);
    if constexpr (std::is_same_v<T, bool>) {
      fail<TypeError>(op.name(), ": expected a numeric array, got ", x.describe());
    } else {
      const T* xp = x.data<T>();
      T* op_ = out.data<T>();
      if (Threaded && is_max) {  // the CPU's separable form; the reference keeps the window loop
        over_slices(g, true, [&](int64_t s0, int64_t s1) { max_pool_rows(g, aw, xp, op_, s0, s1); });
        return;
      }
      over_slices(g, Threaded, [&](int64_t s0, int64_t s1) {
        for_windows(g, aw, s0, s1, [&](int64_t s, int64_t o, const Window& w) {
          const T* xs = xp + s * g.in_size();
          if (is_max) {
            T m = lowest_value<T>();
            bool nan = false;
            for_elements(g, w, [&](int64_t i) {
              if (xs[i] != xs[i]) nan = true;
              if (xs[i] > m) m = xs[i];
            });
            if constexpr (std::is_floating_point_v<T>)
              if (nan) m = std::numeric_limits<T>::quiet_NaN();
            op_[s * g.out_size() + o] = m;
          } else {
            double sum = 0;
            for_elements(g, w, [&](int64_t i) { sum += static_cast<double>(xs[i]); });
            op_[s * g.out_size() + o] = static_cast<T>(is_sum ? sum : sum / static_cast<double>(w.count));
          }
        });
      });
    }
  });
}

template <bool Threaded>
void max_pool_grad_kernel(const MaxPoolGrad& op, const KernelArgs& a) {
  const NDArray x = a.in[0]->ascontiguous(), mx = a.in[1]->ascontiguous(), gz = a.in[2]->ascontiguous();
  const Geometry g = geometry(op.p, x.shape());
  const AxisWindows aw(g, op.p);
  const Shape os = pooled_shape(op.p, x.shape(), g);
  if (!(mx.shape() == os) || !(gz.shape() == os))
    fail<ValueError>(op.name(), ": maxout ", mx.shape().str(), " and gz ", gz.shape().str(),
                     " must have the pooled shape ", os.str(), " of x ", x.shape().str());
  NDArray& out = prepare_output(*a.out[0], x.shape(), x.dtype());
  const bool disjoint = Threaded && g.st[0] >= g.ws[0] && g.st[1] >= g.ws[1] && g.st[2] >= g.ws[2];
  if (!disjoint) out.fill(0.0);
  dispatch_dtype(x.dtype(), [&](auto t) {
    using T = decltype(t);
    if constexpr (!std::is_same_v<T, bool>) {
      const T *xp = x.data<T>(), *mp = mx.data<T>(), *gp = gz.data<T>();
      T* r = out.data<T>();
      if (disjoint) {  // the CPU's row form; the reference keeps the window loop
        over_slices(g, true, [&](int64_t s0, int64_t s1) { max_pool_grad_disjoint(g, aw, xp, mp, gp, r, s0, s1); });
        return;
      }
      over_slices(g, Threaded, [&](int64_t s0, int64_t s1) {
        for_windows(g, aw, s0, s1, [&](int64_t s, int64_t o, const Window& w) {
          const T m = mp[s * g.out_size() + o], gv = gp[s * g.out_size() + o];
          const T* xs = xp + s * g.in_size();
          T* rs = r + s * g.in_size();
          for_elements(g, w, [&](int64_t i) {
            if (xs[i] == m) rs[i] += gv;
          });
        });
      });
    }
  });
}

/// The gradient of max pooling when no two windows overlap (stride >= window on every axis, the
/// usual 2x2 / 2 case): each element of x lies in at most one window, so each output row is written
/// once, as x == max ? gz : 0 against the window's max and gz spread along the row (vectorized),
/// with no zero fill first and no accumulation. Same values as the window loop.
template <class T>
void max_pool_grad_disjoint(const Geometry& g, const AxisWindows& aw, const T* xp, const T* mp, const T* gp, T* r,
                            int64_t s0, int64_t s1) {
  const int64_t W = g.in[2], OW = g.out[2];
  std::array<std::vector<int64_t>, 3> owner;  // the window holding each index of an axis, or -1
  for (int a = 0; a < 3; ++a) {
    owner[a].assign(static_cast<size_t>(g.in[a]), -1);
    for (int64_t k = 0; k < g.out[a]; ++k)
      for (int64_t i = aw.lo[a][k]; i < aw.hi[a][k]; ++i) owner[a][static_cast<size_t>(i)] = k;
  }
  std::vector<T> mrow(static_cast<size_t>(W)), grow(static_cast<size_t>(W));
  for (int64_t s = s0; s < s1; ++s) {
    const T* xs = xp + s * g.in_size();
    T* rs = r + s * g.in_size();
    int64_t built = -1;  // the output row (kd, kh) spread into mrow / grow
    for (int64_t d = 0; d < g.in[0]; ++d)
      for (int64_t h = 0; h < g.in[1]; ++h) {
        const int64_t at = (d * g.in[1] + h) * W;
        const int64_t kd = owner[0][static_cast<size_t>(d)], kh = owner[1][static_cast<size_t>(h)];
        if (kd < 0 || kh < 0) {
          std::fill(rs + at, rs + at + W, T(0));
          continue;
        }
        const int64_t orow = kd * g.out[1] + kh;
        if (orow != built) {
          const T *m = mp + s * g.out_size() + orow * OW, *gz = gp + s * g.out_size() + orow * OW;
          for (int64_t x = 0; x < W; ++x) {
            const int64_t k = owner[2][static_cast<size_t>(x)];
            mrow[static_cast<size_t>(x)] = k < 0 ? T(0) : m[k];
            grow[static_cast<size_t>(x)] = k < 0 ? T(0) : gz[k];
          }
          built = orow;
        }
        const T* __restrict xr = xs + at, * __restrict mr = mrow.data(), * __restrict gr = grow.data();
        T* __restrict out = rs + at;
        for (int64_t x = 0; x < W; ++x) {
          const T gv = gr[x];  // read unconditionally, so the select vectorizes
          out[x] = xr[x] == mr[x] ? gv : T(0);
        }
      }
  }
}

template <bool Threaded>
void average_pool_grad_kernel(const AveragePoolGrad& op, const KernelArgs& a) {
  const NDArray& x = *a.in[0];
  const NDArray gz = a.in[1]->ascontiguous();
  const Geometry g = geometry(op.p, x.shape());
  const AxisWindows aw(g, op.p);
  const Shape os = pooled_shape(op.p, x.shape(), g);
  if (!(gz.shape() == os))
    fail<ValueError>(op.name(), ": gz ", gz.shape().str(), " must have the pooled shape ", os.str(), " of x ",
                     x.shape().str());
  NDArray& out = prepare_output(*a.out[0], x.shape(), x.dtype());
  out.fill(0.0);
  const bool sum = op.p.mode == "sum";
  dispatch_dtype(x.dtype(), [&](auto t) {
    using T = decltype(t);
    if constexpr (!std::is_same_v<T, bool>) {
      const T* gp = gz.data<T>();
      T* r = out.data<T>();
      over_slices(g, Threaded, [&](int64_t s0, int64_t s1) {
        for_windows(g, aw, s0, s1, [&](int64_t s, int64_t o, const Window& w) {
          const T v =
              sum ? gp[s * g.out_size() + o] : static_cast<T>(gp[s * g.out_size() + o] / static_cast<T>(w.count));
          T* rs = r + s * g.in_size();
          for_elements(g, w, [&](int64_t i) { rs[i] += v; });
        });
      });
    }
  });
}

template <bool Threaded>
void max_pool_grad_grad_kernel(const DownsampleFactorMaxGradGrad& op, const KernelArgs& a) {
  const NDArray x = a.in[0]->ascontiguous(), mx = a.in[1]->ascontiguous(), gg = a.in[2]->ascontiguous();
  const Geometry g = geometry(op.p, x.shape());
  const AxisWindows aw(g, op.p);
  const Shape os = pooled_shape(op.p, x.shape(), g);
  if (!(mx.shape() == os) || !(gg.shape() == x.shape()))
    fail<ValueError>(op.name(), ": maxout ", mx.shape().str(), " must have the pooled shape ", os.str(), " and ggx ",
                     gg.shape().str(), " the shape of x ", x.shape().str());
  NDArray& out = prepare_output(*a.out[0], os, x.dtype());
  out.fill(0.0);
  dispatch_dtype(x.dtype(), [&](auto t) {
    using T = decltype(t);
    if constexpr (!std::is_same_v<T, bool>) {
      const T *xp = x.data<T>(), *mp = mx.data<T>(), *gp = gg.data<T>();
      T* r = out.data<T>();
      over_slices(g, Threaded, [&](int64_t s0, int64_t s1) {
        for_windows(g, aw, s0, s1, [&](int64_t s, int64_t o, const Window& w) {
          const T m = mp[s * g.out_size() + o];
          const T *xs = xp + s * g.in_size(), *gs = gp + s * g.in_size();
          for_elements(g, w, [&](int64_t i) {
            if (xs[i] == m) r[s * g.out_size() + o] = gs[i];
          });
        });
      });
    }
  });
}

}  // namespace

void register_pool_kernels() {
  register_simple_kernel<Pool>(kReferenceBackend, &pool_kernel<false>);
  register_simple_kernel<MaxPoolGrad>(kReferenceBackend, &max_pool_grad_kernel<false>);
  register_simple_kernel<AveragePoolGrad>(kReferenceBackend, &average_pool_grad_kernel<false>);
  register_simple_kernel<DownsampleFactorMaxGradGrad>(kReferenceBackend, &max_pool_grad_grad_kernel<false>);
  register_simple_kernel<Pool>(kCpuBackend, &pool_kernel<true>);
  register_simple_kernel<MaxPoolGrad>(kCpuBackend, &max_pool_grad_kernel<true>);
  register_simple_kernel<AveragePoolGrad>(kCpuBackend, &average_pool_grad_kernel<true>);
  register_simple_kernel<DownsampleFactorMaxGradGrad>(kCpuBackend, &max_pool_grad_grad_kernel<true>);
}

}  // namespace hypatia
