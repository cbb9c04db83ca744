// CPU kernels of the convolution family: Caffe's im2col / col2im around the GEMM provider
// (cpu_matmul: OpenBLAS or oneDNN, whichever measured faster), images split over the thread
// pool (each task its own column buffer; a GEMM inside a task runs on that task's thread, a lone
// image's GEMM is cut into panels by cpu_matmul itself).
//
// Per image n and group g, with K = C/g * kh * kw and the filters flipped once per call when
// the op convolves (Kf: (O, K)):
//   forward        out[n, g] (O/g, Ho*Wo) = Kf[g] (O/g, K) . col (K, Ho*Wo)
//   grad weights   dKf[g] (O/g, K) += top[n, g] (O/g, Ho*Wo) . col^T
//   grad inputs    col = Kf[g]^T (K, O/g) . top[n, g];  col2im adds col into dimg[n, g]
// A 1x1 filter of stride 1 without padding needs no im2col: the image is the column matrix.
#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>
#include <mutex>
#include <utility>
#include <vector>

#include "hypatia/backends/cpu/blas_matmul.h"
#include "hypatia/backends/cpu/conv_onednn.h"
#include "hypatia/backends/cpu/thread_pool.h"
#include "hypatia/backends/reference/conv_common.h"
#include "hypatia/backends/reference/nnet_common.h"
#include "hypatia/core/config.h"
#include "hypatia/core/error.h"

namespace hypatia::conv_detail {
namespace {

/// Multiply-adds below which one thread does the whole call (as blas_cpu.cpp's GEMM tasks).
constexpr int64_t kTaskWork = int64_t{1} << 21;

struct Strides4 {
  int64_t n, c, h, w;
};
Strides4 element_strides(const NDArray& a) {
  const int64_t isz = static_cast<int64_t>(itemsize(a.dtype()));
  return {a.strides()[0] / isz, a.strides()[1] / isz, a.strides()[2] / isz, a.strides()[3] / isz};
}

/// Output columns x in [lo, hi) whose input column x * stride - pad + j * dil lies in [0, w).
std::pair<int64_t, int64_t> valid_range(int64_t out, int64_t in, int64_t stride, int64_t pad, int64_t off) {
  // x * stride >= pad - off  and  x * stride <= in - 1 + pad - off
  const int64_t a = pad - off, b = in - 1 + pad - off;
  int64_t lo = a <= 0 ? 0 : (a + stride - 1) / stride;
  int64_t hi = b < 0 ? 0 : b / stride + 1;
  lo = std::min(lo, out);
  hi = std::clamp(hi, lo, out);
  return {lo, hi};
}

/// The columns of image n, group g: col[(c * kh + i) * kw + j][y * Wo + x] = the input pixel that
/// filter tap (i, j) of channel c meets at output pixel (y, x), 0 in the padding.
template <class T>
void im2col(const T* img, const Strides4& st, const Conv2dParams& p, const Conv2dShape& s, int64_t n, int64_t g,
            T* col) {
  const int64_t hw = s.ho * s.wo;
  for (int64_t cc = 0; cc < s.cg; ++cc) {
    const T* base = img + n * st.n + (g * s.cg + cc) * st.c;
    for (int64_t i = 0; i < s.kh; ++i)
      for (int64_t j = 0; j < s.kw; ++j) {
        T* row = col + ((cc * s.kh + i) * s.kw + j) * hw;
        const auto [x0, x1] = valid_range(s.wo, s.w, p.stride_w, s.pw, j * p.dil_w);
        for (int64_t y = 0; y < s.ho; ++y) {
          T* r = row + y * s.wo;
          const int64_t iy = y * p.stride_h - s.ph + i * p.dil_h;
          if (iy < 0 || iy >= s.h || x0 >= x1) {
            std::fill(r, r + s.wo, T(0));
            continue;
          }
          std::fill(r, r + x0, T(0));
          std::fill(r + x1, r + s.wo, T(0));
          const T* src = base + iy * st.h + (x0 * p.stride_w - s.pw + j * p.dil_w) * st.w;
          if (p.stride_w == 1 && st.w == 1) {
            std::memcpy(r + x0, src, static_cast<size_t>(x1 - x0) * sizeof(T));
          } else {
            const int64_t step = p.stride_w * st.w;
            for (int64_t x = x0; x < x1; ++x, src += step) r[x] = *src;
          }
        }
      }
  }
}

/// The adjoint of im2col: adds every column entry into the image pixel it came from (the image's
/// element strides `st`, its rows contiguous).
template <class T>
void col2im_add(const T* col, const Conv2dParams& p, const Conv2dShape& s, int64_t n, int64_t g, T* img,
                const Strides4& st) {
  const int64_t hw = s.ho * s.wo;
  for (int64_t cc = 0; cc < s.cg; ++cc) {
    T* base = img + n * st.n + (g * s.cg + cc) * st.c;
    for (int64_t i = 0; i < s.kh; ++i)
      for (int64_t j = 0; j < s.kw; ++j) {
        const T* row = col + ((cc * s.kh + i) * s.kw + j) * hw;
        const auto [x0, x1] = valid_range(s.wo, s.w, p.stride_w, s.pw, j * p.dil_w);
        if (x0 >= x1) continue;
        for (int64_t y = 0; y < s.ho; ++y) {
          const int64_t iy = y * p.stride_h - s.ph + i * p.dil_h;
          if (iy < 0 || iy >= s.h) continue;
          const T* __restrict r = row + y * s.wo + x0;  // col and img never overlap
          T* __restrict dst = base + iy * st.h + (x0 * p.stride_w - s.pw + j * p.dil_w);
          if (p.stride_w == 1) {  // the common case, vectorized
            for (int64_t x = 0; x < x1 - x0; ++x) dst[x] += r[x];
          } else {
            for (int64_t x = 0; x < x1 - x0; ++x) dst[x * p.stride_w] += r[x];
          }
        }
      }
  }
}

/// The filters as an (O, K) matrix in correlation order: flipped in both spatial axes when the op
/// convolves (any layout in, C-contiguous out).
template <class T>
NDArray filters_matrix(const NDArray& kern, const Conv2dParams& p, const Conv2dShape& s) {
  NDArray m = NDArray::empty({s.o, s.cg * s.kh * s.kw}, kern.dtype());
  const Strides4 st = element_strides(kern);
  const T* k = kern.data<T>();
  T* d = m.data<T>();
  for (int64_t o = 0; o < s.o; ++o)
    for (int64_t cc = 0; cc < s.cg; ++cc)
      for (int64_t i = 0; i < s.kh; ++i)
        for (int64_t j = 0; j < s.kw; ++j) {
          const int64_t ki = p.flip ? s.kh - 1 - i : i, kj = p.flip ? s.kw - 1 - j : j;
          *d++ = k[o * st.n + cc * st.c + ki * st.h + kj * st.w];
        }
  return m;
}

/// Whether image columns are the image itself: a 1x1 filter, stride 1, no padding.
bool pointwise(const Conv2dParams& p, const Conv2dShape& s) {
  return s.kh == 1 && s.kw == 1 && p.stride_h == 1 && p.stride_w == 1 && s.ph == 0 && s.pw == 0 && s.ph_end == 0 &&
         s.pw_end == 0;
}

/// Tasks over the batch: 1 (the caller alone) below kTaskWork multiply-adds, else one per
/// thread up to one per image.
int64_t batch_tasks(const Conv2dShape& s, int threads) {
  const int64_t work = s.n * s.o * s.cg * s.kh * s.kw * s.ho * s.wo;
  return work < kTaskWork || threads <= 1 ? 1 : std::min<int64_t>(s.n, threads);
}

/// Runs body(n0, n1) over ranges of the batch: on the pool when the call is large enough.
template <class Body>
void over_batch(const Conv2dShape& s, const Body& body) {
  const int threads = parallel_threads();
  const int64_t tasks = batch_tasks(s, threads);
  if (tasks <= 1) return body(int64_t{0}, s.n);
  parallel_ranges(s.n, tasks, threads, body);
}

/// The column matrix (K, Ho*Wo) of image n, group g: a view of the image itself when `direct`
/// (pointwise filters on a C-contiguous image), else im2col into `col`.
template <class T>
NDArray columns(const NDArray& img, const Strides4& st, const Conv2dParams& p, const Conv2dShape& s, bool direct,
                int64_t n, int64_t g, const NDArray& col) {
  if (direct) return img.select(0, n).reshape({s.c, s.ho * s.wo}).slice(0, g * s.cg, (g + 1) * s.cg, 1);
  im2col(img.data<T>(), st, p, s, n, g, col.data<T>());
  return col;
}

template <class T>
void forward(const Conv2d& op, const NDArray& img, const NDArray& kern, NDArray& out, const Conv2dShape& s) {
  const Conv2dParams& p = op.p;
  const int64_t og = s.o / s.g, k = s.cg * s.kh * s.kw, hw = s.ho * s.wo;
  const NDArray kf = filters_matrix<T>(kern, p, s);
  const bool direct = pointwise(p, s) && img.is_c_contiguous();
  const Strides4 st = element_strides(img);
  over_batch(s, [&](int64_t n0, int64_t n1) {
    NDArray col = direct ? NDArray() : NDArray::empty({k, hw}, img.dtype());
    for (int64_t n = n0; n < n1; ++n) {
      const NDArray on = out.select(0, n).reshape({s.o, hw});
      for (int64_t g = 0; g < s.g; ++g)
        cpu_matmul(kf.slice(0, g * og, (g + 1) * og, 1), columns<T>(img, st, p, s, direct, n, g, col),
                   on.slice(0, g * og, (g + 1) * og, 1), 1.0, 0.0);
    }
  });
}

template <class T>
void grad_weights(const Conv2dGradWeights& op, const NDArray& img, const NDArray& top0, NDArray& out,
                  const Conv2dShape& s) {
  const Conv2dParams& p = op.p;
  const int64_t og = s.o / s.g, k = s.cg * s.kh * s.kw, hw = s.ho * s.wo;
  const NDArray top = top0.ascontiguous();
  const bool direct = pointwise(p, s) && img.is_c_contiguous();
  const Strides4 st = element_strides(img);
  // One (O, K) partial sum per task, added in task order (the same result for the same split).
  const int threads = parallel_threads();
  const int64_t tasks = batch_tasks(s, threads);
  std::vector<NDArray> part(static_cast<size_t>(tasks));
  auto body = [&](int64_t t) {
    const auto [n0, n1] = task_range(s.n, tasks, t);
    NDArray acc = NDArray::zeros({s.o, k}, img.dtype());
    NDArray col = direct ? NDArray() : NDArray::empty({k, hw}, img.dtype());
    for (int64_t n = n0; n < n1; ++n) {
      const NDArray tn = top.select(0, n).reshape({s.o, hw});
      for (int64_t g = 0; g < s.g; ++g)
        cpu_matmul(tn.slice(0, g * og, (g + 1) * og, 1), columns<T>(img, st, p, s, direct, n, g, col).transpose(),
                   acc.slice(0, g * og, (g + 1) * og, 1), 1.0, 1.0);
    }
    part[static_cast<size_t>(t)] = acc;
  };
  if (tasks <= 1)
    body(0);
  else
    parallel_for(tasks, threads, body);
  T* sum = part[0].data<T>();
  for (size_t t = 1; t < part.size(); ++t) {
    const T* q = part[t].data<T>();
    for (int64_t i = 0; i < s.o * k; ++i) sum[i] += q[i];
  }
  // Back from correlation order (flipped taps) to the filters' layout.
  T* d = out.data<T>();
  for (int64_t o = 0; o < s.o; ++o)
    for (int64_t cc = 0; cc < s.cg; ++cc)
      for (int64_t i = 0; i < s.kh; ++i)
        for (int64_t j = 0; j < s.kw; ++j) {
          const int64_t ki = p.flip ? s.kh - 1 - i : i, kj = p.flip ? s.kw - 1 - j : j;
          d[((o * s.cg + cc) * s.kh + ki) * s.kw + kj] = *sum++;
        }
}

template <class T>
void grad_inputs(const Conv2dGradInputs& op, const NDArray& kern, const NDArray& top0, NDArray& out,
                 const Conv2dShape& s) {
  const Conv2dParams& p = op.p;
  const int64_t og = s.o / s.g, k = s.cg * s.kh * s.kw, hw = s.ho * s.wo;
  const NDArray kf = filters_matrix<T>(kern, p, s);
  const NDArray top = top0.ascontiguous();
  const bool direct = pointwise(p, s);
  if (!direct) out.fill(0.0);
  over_batch(s, [&](int64_t n0, int64_t n1) {
    NDArray col = direct ? NDArray() : NDArray::empty({k, hw}, top.dtype());
    for (int64_t n = n0; n < n1; ++n) {
      const NDArray tn = top.select(0, n).reshape({s.o, hw});
      for (int64_t g = 0; g < s.g; ++g) {
        const NDArray kg = kf.slice(0, g * og, (g + 1) * og, 1).transpose();
        const NDArray tg = tn.slice(0, g * og, (g + 1) * og, 1);
        if (direct) {
          cpu_matmul(kg, tg, out.select(0, n).reshape({s.c, hw}).slice(0, g * s.cg, (g + 1) * s.cg, 1), 1.0, 0.0);
        } else {
          cpu_matmul(kg, tg, col, 1.0, 0.0);
          col2im_add(col.data<T>(), p, s, n, g, out.data<T>(), element_strides(out));
        }
      }
    }
  });
}

// ---- 3-d: a 2-d im2col per (output depth, filter depth tap), accumulated by GEMMs. With
// K2 = C/g * kh * kw and Kf[t] the (O, K2) filters of depth tap t (flipped when convolving):
//   forward        out[n, g, z] (O/g, Ho*Wo) += Kf[t][g] . col(img[n, :, iz])     iz = z sd - pd + t dd
//   grad weights   dKf[t][g] += top[n, g, z] . col(img[n, :, iz])^T
//   grad inputs    col = Kf[t][g]^T . top[n, g, z]; col2im adds col into dimg[n, :, iz]

struct Strides5 {
  int64_t n, c, d, h, w;
};
Strides5 element_strides5(const NDArray& a) {
  const int64_t isz = static_cast<int64_t>(itemsize(a.dtype()));
  const auto& st = a.strides();
  return {st[0] / isz, st[1] / isz, st[2] / isz, st[3] / isz, st[4] / isz};
}

/// The depth tap t's filters (flipped along the depth when convolving) as (O, K2) matrices.
template <class T>
std::vector<NDArray> filters_by_depth(const NDArray& kern, const Conv3dParams& p, const Conv3dShape& s) {
  std::vector<NDArray> kf;
  for (int64_t t = 0; t < s.kd; ++t)
    kf.push_back(filters_matrix<T>(kern.select(2, p.hw.flip ? s.kd - 1 - t : t), p.hw, s.hw));
  return kf;
}

/// The (O, Ho*Wo) output plane z of image n of a C-contiguous (N, O, D, H, W) array, as a view.
NDArray plane(const NDArray& a, const Conv3dShape& s, int64_t n, int64_t z) {
  const int64_t isz = static_cast<int64_t>(itemsize(a.dtype()));
  const Strides5 st = element_strides5(a);
  const NDArray v = a.select(0, n).select(1, z);
  return v.as_strided({a.shape(1), s.hw.ho * s.hw.wo}, {st.c * isz, st.w * isz});
}

/// Runs body(n0, n1) over ranges of the batch, on the pool when the call is large enough.
template <class Body>
void over_batch3(const Conv3dShape& s, const Body& body) {
  const Conv2dShape& q = s.hw;
  const int threads = parallel_threads();
  const int64_t work = q.n * q.o * q.cg * s.kd * q.kh * q.kw * s.od * q.ho * q.wo;
  const int64_t tasks = work < kTaskWork || threads <= 1 ? 1 : std::min<int64_t>(q.n, threads);
  if (tasks <= 1) return body(int64_t{0}, q.n);
  parallel_ranges(q.n, tasks, threads, body);
}

/// The input depth that output depth z meets through tap t (-1 when in the padding).
int64_t input_depth(const Conv3dParams& p, const Conv3dShape& s, int64_t z, int64_t t) {
  const int64_t iz = z * p.stride_d - s.pd + t * p.dil_d;
  return iz < 0 || iz >= s.d ? -1 : iz;
}

template <class T>
void forward3(const Conv3dParams& p, const NDArray& img, const NDArray& kern, NDArray& out, const Conv3dShape& s) {
  const Conv2dShape& q = s.hw;
  const int64_t og = q.o / q.g, k2 = q.cg * q.kh * q.kw, hw = q.ho * q.wo;
  const std::vector<NDArray> kf = filters_by_depth<T>(kern, p, s);
  const Strides5 st = element_strides5(img);
  const Strides4 st4{st.n, st.c, st.h, st.w};
  out.fill(0.0);
  over_batch3(s, [&](int64_t n0, int64_t n1) {
    NDArray col = NDArray::empty({k2, hw}, img.dtype());
    for (int64_t n = n0; n < n1; ++n)
      for (int64_t z = 0; z < s.od; ++z) {
        const NDArray on = plane(out, s, n, z);
        for (int64_t t = 0; t < s.kd; ++t) {
          const int64_t iz = input_depth(p, s, z, t);
          if (iz < 0) continue;
          for (int64_t g = 0; g < q.g; ++g) {
            im2col(img.data<T>() + iz * st.d, st4, p.hw, q, n, g, col.data<T>());
            cpu_matmul(kf[t].slice(0, g * og, (g + 1) * og, 1), col, on.slice(0, g * og, (g + 1) * og, 1), 1.0, 1.0);
          }
        }
      }
  });
}

template <class T>
void grad_weights3(const Conv3dParams& p, const NDArray& img, const NDArray& top0, NDArray& out, const Conv3dShape& s) {
  const Conv2dShape& q = s.hw;
  const int64_t og = q.o / q.g, k2 = q.cg * q.kh * q.kw, hw = q.ho * q.wo;
  const NDArray top = top0.ascontiguous();
  const Strides5 st = element_strides5(img);
  const Strides4 st4{st.n, st.c, st.h, st.w};
  const int threads = parallel_threads();
  const int64_t work = q.n * q.o * q.cg * s.kd * q.kh * q.kw * s.od * q.ho * q.wo;
  const int64_t tasks = work < kTaskWork || threads <= 1 ? 1 : std::min<int64_t>(q.n, threads);
  // Per task: one (kd, O, K2) partial sum, added in task order.
  std::vector<NDArray> part(static_cast<size_t>(tasks));
  auto body = [&](int64_t task) {
    const auto [n0, n1] = task_range(q.n, tasks, task);
    NDArray acc = NDArray::zeros({s.kd, q.o, k2}, img.dtype());
    NDArray col = NDArray::empty({k2, hw}, img.dtype());
    for (int64_t n = n0; n < n1; ++n)
      for (int64_t z = 0; z < s.od; ++z) {
        const NDArray tz = plane(top, s, n, z);
        for (int64_t t = 0; t < s.kd; ++t) {
          const int64_t iz = input_depth(p, s, z, t);
          if (iz < 0) continue;
          const NDArray at = acc.select(0, t);
          for (int64_t g = 0; g < q.g; ++g) {
            im2col(img.data<T>() + iz * st.d, st4, p.hw, q, n, g, col.data<T>());
            cpu_matmul(tz.slice(0, g * og, (g + 1) * og, 1), col.transpose(), at.slice(0, g * og, (g + 1) * og, 1), 1.0,
                       1.0);
          }
        }
      }
    part[static_cast<size_t>(task)] = acc;
  };
  if (tasks <= 1)
    body(0);
  else
    parallel_for(tasks, threads, body);
  T* sum = part[0].data<T>();
  for (size_t i = 1; i < part.size(); ++i) {
    const T* r = part[i].data<T>();
    for (int64_t e = 0; e < s.kd * q.o * k2; ++e) sum[e] += r[e];
  }
  // Back to the filters' layout (O, C/g, kd, kh, kw), undoing the flips.
  T* d = out.data<T>();
  const bool flip = p.hw.flip;
  for (int64_t t = 0; t < s.kd; ++t)
    for (int64_t o = 0; o < q.o; ++o)
      for (int64_t cc = 0; cc < q.cg; ++cc)
        for (int64_t i = 0; i < q.kh; ++i)
          for (int64_t j = 0; j < q.kw; ++j) {
            const int64_t kt = flip ? s.kd - 1 - t : t, ki = flip ? q.kh - 1 - i : i, kj = flip ? q.kw - 1 - j : j;
            d[(((o * q.cg + cc) * s.kd + kt) * q.kh + ki) * q.kw + kj] = *sum++;
          }
}

template <class T>
void grad_inputs3(const Conv3dParams& p, const NDArray& kern, const NDArray& top0, NDArray& out, const Conv3dShape& s) {
  const Conv2dShape& q = s.hw;
  const int64_t og = q.o / q.g, k2 = q.cg * q.kh * q.kw, hw = q.ho * q.wo;
  const std::vector<NDArray> kf = filters_by_depth<T>(kern, p, s);
  const NDArray top = top0.ascontiguous();
  const Strides5 st = element_strides5(out);
  const Strides4 st4{st.n, st.c, st.h, st.w};
  out.fill(0.0);
  over_batch3(s, [&](int64_t n0, int64_t n1) {
    NDArray col = NDArray::empty({k2, hw}, top.dtype());
    for (int64_t n = n0; n < n1; ++n)
      for (int64_t z = 0; z < s.od; ++z) {
        const NDArray tz = plane(top, s, n, z);
        for (int64_t t = 0; t < s.kd; ++t) {
          const int64_t iz = input_depth(p, s, z, t);
          if (iz < 0) continue;
          for (int64_t g = 0; g < q.g; ++g) {
            cpu_matmul(kf[t].slice(0, g * og, (g + 1) * og, 1).transpose(), tz.slice(0, g * og, (g + 1) * og, 1), col,
                       1.0, 0.0);
            col2im_add(col.data<T>(), p.hw, q, n, g, out.data<T>() + iz * st.d, st4);
          }
        }
      }
  });
}

}  // namespace

void conv3d_cpu(const Conv3d& op, const KernelArgs& a) {
  const NDArray &img = *a.in[0], &kern = *a.in[1];
  const std::string who = op.name();
  const Conv3dShape s = conv3d_shape(who.c_str(), op.p, img.shape(), kern.shape());
  NDArray& out = prepare_output(*a.out[0], {s.hw.n, s.hw.o, s.od, s.hw.ho, s.hw.wo}, img.dtype());
  nnet_detail::dispatch_float(img.dtype(), who, [&](auto t) { forward3<decltype(t)>(op.p, img, kern, out, s); });
}

void conv3d_grad_weights_cpu(const Conv3dGradWeights& op, const KernelArgs& a) {
  const NDArray &img = *a.in[0], &top = *a.in[1];
  const std::string who = op.name();
  const Conv3dShape s = conv3d_grad_weights_shape(
      who.c_str(), op.p, img.shape(), top.shape(), size_arg(*a.in[2], who, "the filter depth"),
      size_arg(*a.in[3], who, "the filter rows"), size_arg(*a.in[4], who, "the filter columns"));
  NDArray& out = prepare_output(*a.out[0], {s.hw.o, s.hw.cg, s.kd, s.hw.kh, s.hw.kw}, img.dtype());
  nnet_detail::dispatch_float(img.dtype(), who, [&](auto t) { grad_weights3<decltype(t)>(op.p, img, top, out, s); });
}

void conv3d_grad_inputs_cpu(const Conv3dGradInputs& op, const KernelArgs& a) {
  const NDArray &kern = *a.in[0], &top = *a.in[1];
  const std::string who = op.name();
  const Conv3dShape s =
      conv3d_grad_inputs_shape(who.c_str(), op.p, kern.shape(), top.shape(), size_arg(*a.in[2], who, "the image depth"),
                               size_arg(*a.in[3], who, "the image rows"), size_arg(*a.in[4], who, "the image columns"));
  NDArray& out = prepare_output(*a.out[0], {s.hw.n, s.hw.c, s.d, s.hw.h, s.hw.w}, top.dtype());
  nnet_detail::dispatch_float(top.dtype(), who, [&](auto t) { grad_inputs3<decltype(t)>(op.p, kern, top, out, s); });
}

namespace {

/// Runs the convolution with oneDNN or im2col (config().conv; "auto": both timed at the first
/// call of each shape and kind, the faster kept for the process). `im2col` writes `out`;
/// onednn_conv2d returns false where it has no implementation.
template <class Im2col>
void choose_and_run(OnednnConv kind, const Conv2dParams& p, const Conv2dShape& s, const NDArray& in,
                    const NDArray& kern, NDArray& out, const Im2col& im2col) {
  const std::string& mode = config().conv;
  if (mode == "im2col" || in.dtype() != DType::Float32) return im2col();
  if (mode == "onednn") {
    if (!onednn_conv2d(kind, p, s, in, kern, out)) im2col();
    return;
  }
  const std::pair<ConvKey, int> key{conv_key(kind, p, s, s.n), parallel_threads()};
  static std::mutex mu;
  static std::map<std::pair<ConvKey, int>, bool> use_onednn;
  {
    std::lock_guard<std::mutex> lock(mu);
    auto it = use_onednn.find(key);
    if (it != use_onednn.end()) {
      if (!it->second || !onednn_conv2d(kind, p, s, in, kern, out)) im2col();
      return;
    }
  }
  // First call of this shape: run both (oneDNN's first run includes its JIT; its second is timed).
  using clock = std::chrono::steady_clock;
  NDArray trial = NDArray::empty(out.shape(), out.dtype());
  bool ok = onednn_conv2d(kind, p, s, in, kern, trial);
  double t_dnnl = 1e300;
  if (ok) {
    const auto t0 = clock::now();
    ok = onednn_conv2d(kind, p, s, in, kern, trial);
    t_dnnl = std::chrono::duration<double>(clock::now() - t0).count();
  }
  const auto t1 = clock::now();
  im2col();
  const double t_im2col = std::chrono::duration<double>(clock::now() - t1).count();
  const bool pick = ok && t_dnnl < t_im2col;
  if (pick) out.assign(trial);
  std::lock_guard<std::mutex> lock(mu);
  use_onednn.emplace(key, pick);
}

}  // namespace

void conv2d_cpu(const Conv2d& op, const KernelArgs& a) {
  const NDArray &img = *a.in[0], &kern = *a.in[1];
  const std::string who = op.name();
  const Conv2dShape s = conv2d_shape(who.c_str(), op.p, img.shape(), kern.shape());
  NDArray& out = prepare_output(*a.out[0], {s.n, s.o, s.ho, s.wo}, img.dtype());
  choose_and_run(OnednnConv::Forward, op.p, s, img, kern, out, [&] {
    nnet_detail::dispatch_float(img.dtype(), who, [&](auto t) { forward<decltype(t)>(op, img, kern, out, s); });
  });
}

void conv2d_grad_weights_cpu(const Conv2dGradWeights& op, const KernelArgs& a) {
  const NDArray &img = *a.in[0], &top = *a.in[1];
  const std::string who = op.name();
  const Conv2dShape s =
      conv2d_grad_weights_shape(who.c_str(), op.p, img.shape(), top.shape(), size_arg(*a.in[2], who, "the filter rows"),
                                size_arg(*a.in[3], who, "the filter columns"));
  NDArray& out = prepare_output(*a.out[0], {s.o, s.cg, s.kh, s.kw}, img.dtype());
  nnet_detail::dispatch_float(img.dtype(), who, [&](auto t) { grad_weights<decltype(t)>(op, img, top, out, s); });
}

void conv2d_grad_inputs_cpu(const Conv2dGradInputs& op, const KernelArgs& a) {
  const NDArray &kern = *a.in[0], &top = *a.in[1];
  const std::string who = op.name();
  const Conv2dShape s =
      conv2d_grad_inputs_shape(who.c_str(), op.p, kern.shape(), top.shape(), size_arg(*a.in[2], who, "the image rows"),
                               size_arg(*a.in[3], who, "the image columns"));
  NDArray& out = prepare_output(*a.out[0], {s.n, s.c, s.h, s.w}, top.dtype());
  choose_and_run(OnednnConv::BackwardData, op.p, s, top, kern, out, [&] {
    nnet_detail::dispatch_float(top.dtype(), who, [&](auto t) { grad_inputs<decltype(t)>(op, kern, top, out, s); });
  });
}

}  // namespace hypatia::conv_detail
