// Reference kernels of the convolution family: one loop over every (image, output channel,
// output pixel, input channel of the group, filter tap) that lands inside the image, in double.
// Slow and plain on purpose: the oracle the CPU kernels are tested against.

#include "hypatia/backends/reference/conv_common.h"
#include "hypatia/core/error.h"

namespace hypatia::conv_detail {

int64_t size_arg(const NDArray& a, const std::string& who, const char* what) {
  if (a.ndim() != 0 || !is_integer(a.dtype()))
    fail<TypeError>(who, ": expected ", what, " as an integer scalar, got ", a.describe());
  return a.get_flat_int(0);
}

namespace {

/// Calls f(img_index, kern_index, top_index) for every term of the convolution sum (flat C-order
/// indices into the image, the filters as stored, and the output).
template <class F>
void for_each_term(const Conv2dParams& p, const Conv2dShape& s, F&& f) {
  const int64_t og = s.o / s.g;
  for (int64_t n = 0; n < s.n; ++n)
    for (int64_t o = 0; o < s.o; ++o) {
      const int64_t g = o / og;
      for (int64_t y = 0; y < s.ho; ++y)
        for (int64_t x = 0; x < s.wo; ++x) {
          const int64_t t = ((n * s.o + o) * s.ho + y) * s.wo + x;
          for (int64_t cc = 0; cc < s.cg; ++cc) {
            const int64_t c = g * s.cg + cc;
            for (int64_t i = 0; i < s.kh; ++i) {
              const int64_t iy = y * p.stride_h - s.ph + i * p.dil_h;
              if (iy < 0 || iy >= s.h) continue;
              for (int64_t j = 0; j < s.kw; ++j) {
                const int64_t ix = x * p.stride_w - s.pw + j * p.dil_w;
                if (ix < 0 || ix >= s.w) continue;
                const int64_t ki = p.flip ? s.kh - 1 - i : i, kj = p.flip ? s.kw - 1 - j : j;
                f(((n * s.c + c) * s.h + iy) * s.w + ix, ((o * s.cg + cc) * s.kh + ki) * s.kw + kj, t);
              }
            }
          }
        }
    }
}

/// A contiguous float64 copy of a (read as the sum's operand).
NDArray doubles(const NDArray& a) { return a.astype(DType::Float64).ascontiguous(); }

/// out = the sum `terms` enumerates (a for_each_term, 2-d or 3-d, with the op's parameters and
/// shape), in float64: add(a, b, r, ii, ki, ti) adds one term of a and b (contiguous doubles)
/// into r (shaped like out), rounded to out's dtype at the end.
template <class Terms, class Add>
void accumulate(NDArray& out, const NDArray& a, const NDArray& b, const Terms& terms, Add&& add) {
  const NDArray x = doubles(a), y = doubles(b);
  NDArray r = NDArray::zeros(out.shape(), DType::Float64);
  const double *xp = x.data<double>(), *yp = y.data<double>();
  double* rp = r.data<double>();
  terms([&](int64_t ii, int64_t ki, int64_t ti) { add(xp, yp, rp, ii, ki, ti); });
  out.assign(r);
}

}  // namespace

void conv2d_reference(const Conv2d& op, const KernelArgs& a) {
  const NDArray &img = *a.in[0], &kern = *a.in[1];
  const Conv2dShape s = conv2d_shape(op.name().c_str(), op.p, img.shape(), kern.shape());
  NDArray& out = prepare_output(*a.out[0], {s.n, s.o, s.ho, s.wo}, img.dtype());
  accumulate(
      out, img, kern, [&](auto&& f) { for_each_term(op.p, s, f); },
      [](const double* x, const double* k, double* r, int64_t ii, int64_t ki, int64_t ti) { r[ti] += x[ii] * k[ki]; });
}

void conv2d_grad_inputs_reference(const Conv2dGradInputs& op, const KernelArgs& a) {
  const NDArray &kern = *a.in[0], &top = *a.in[1];
  const std::string who = op.name();
  const Conv2dShape s =
      conv2d_grad_inputs_shape(who.c_str(), op.p, kern.shape(), top.shape(), size_arg(*a.in[2], who, "the image rows"),
                               size_arg(*a.in[3], who, "the image columns"));
  NDArray& out = prepare_output(*a.out[0], {s.n, s.c, s.h, s.w}, top.dtype());
  accumulate(
      out, kern, top, [&](auto&& f) { for_each_term(op.p, s, f); },
      [](const double* k, const double* t, double* r, int64_t ii, int64_t ki, int64_t ti) { r[ii] += t[ti] * k[ki]; });
}

void conv2d_grad_weights_reference(const Conv2dGradWeights& op, const KernelArgs& a) {
  const NDArray &img = *a.in[0], &top = *a.in[1];
  const std::string who = op.name();
  const Conv2dShape s =
      conv2d_grad_weights_shape(who.c_str(), op.p, img.shape(), top.shape(), size_arg(*a.in[2], who, "the filter rows"),
                                size_arg(*a.in[3], who, "the filter columns"));
  NDArray& out = prepare_output(*a.out[0], {s.o, s.cg, s.kh, s.kw}, img.dtype());
  accumulate(
      out, img, top, [&](auto&& f) { for_each_term(op.p, s, f); },
      [](const double* x, const double* t, double* r, int64_t ii, int64_t ki, int64_t ti) { r[ki] += t[ti] * x[ii]; });
}

// ---- 3-d

namespace {

template <class F>
void for_each_term(const Conv3dParams& p3, const Conv3dShape& s3, F&& f) {
  const Conv2dParams& p = p3.hw;
  const Conv2dShape& s = s3.hw;
  const int64_t og = s.o / s.g;
  for (int64_t n = 0; n < s.n; ++n)
    for (int64_t o = 0; o < s.o; ++o) {
      const int64_t g = o / og;
      for (int64_t z = 0; z < s3.od; ++z)
        for (int64_t y = 0; y < s.ho; ++y)
          for (int64_t x = 0; x < s.wo; ++x) {
            const int64_t t = (((n * s.o + o) * s3.od + z) * s.ho + y) * s.wo + x;
            for (int64_t cc = 0; cc < s.cg; ++cc) {
              const int64_t c = g * s.cg + cc;
              for (int64_t q = 0; q < s3.kd; ++q) {
                const int64_t iz = z * p3.stride_d - s3.pd + q * p3.dil_d;
                if (iz < 0 || iz >= s3.d) continue;
                for (int64_t i = 0; i < s.kh; ++i) {
                  const int64_t iy = y * p.stride_h - s.ph + i * p.dil_h;
                  if (iy < 0 || iy >= s.h) continue;
                  for (int64_t j = 0; j < s.kw; ++j) {
                    const int64_t ix = x * p.stride_w - s.pw + j * p.dil_w;
                    if (ix < 0 || ix >= s.w) continue;
                    const int64_t kq = p.flip ? s3.kd - 1 - q : q, ki = p.flip ? s.kh - 1 - i : i,
                                  kj = p.flip ? s.kw - 1 - j : j;
                    f((((n * s.c + c) * s3.d + iz) * s.h + iy) * s.w + ix,
                      (((o * s.cg + cc) * s3.kd + kq) * s.kh + ki) * s.kw + kj, t);
                  }
                }
              }
            }
          }
    }
}

}  // namespace

void conv3d_reference(const Conv3d& op, const KernelArgs& a) {
  const NDArray &img = *a.in[0], &kern = *a.in[1];
  const Conv3dShape s = conv3d_shape(op.name().c_str(), op.p, img.shape(), kern.shape());
  NDArray& out = prepare_output(*a.out[0], {s.hw.n, s.hw.o, s.od, s.hw.ho, s.hw.wo}, img.dtype());
  accumulate(
      out, img, kern, [&](auto&& f) { for_each_term(op.p, s, f); },
      [](const double* x, const double* k, double* r, int64_t ii, int64_t ki, int64_t ti) { r[ti] += x[ii] * k[ki]; });
}

void conv3d_grad_inputs_reference(const Conv3dGradInputs& op, const KernelArgs& a) {
  const NDArray &kern = *a.in[0], &top = *a.in[1];
  const std::string who = op.name();
  const Conv3dShape s =
      conv3d_grad_inputs_shape(who.c_str(), op.p, kern.shape(), top.shape(), size_arg(*a.in[2], who, "the image depth"),
                               size_arg(*a.in[3], who, "the image rows"), size_arg(*a.in[4], who, "the image columns"));
  NDArray& out = prepare_output(*a.out[0], {s.hw.n, s.hw.c, s.d, s.hw.h, s.hw.w}, top.dtype());
  accumulate(
      out, kern, top, [&](auto&& f) { for_each_term(op.p, s, f); },
      [](const double* k, const double* t, double* r, int64_t ii, int64_t ki, int64_t ti) { r[ii] += t[ti] * k[ki]; });
}

void conv3d_grad_weights_reference(const Conv3dGradWeights& op, const KernelArgs& a) {
  const NDArray &img = *a.in[0], &top = *a.in[1];
  const std::string who = op.name();
  const Conv3dShape s = conv3d_grad_weights_shape(
      who.c_str(), op.p, img.shape(), top.shape(), size_arg(*a.in[2], who, "the filter depth"),
      size_arg(*a.in[3], who, "the filter rows"), size_arg(*a.in[4], who, "the filter columns"));
  NDArray& out = prepare_output(*a.out[0], {s.hw.o, s.hw.cg, s.kd, s.hw.kh, s.hw.kw}, img.dtype());
  accumulate(
      out, img, top, [&](auto&& f) { for_each_term(op.p, s, f); },
      [](const double* x, const double* t, double* r, int64_t ii, int64_t ki, int64_t ti) { r[ki] += t[ti] * x[ii]; });
}

}  // namespace hypatia::conv_detail
