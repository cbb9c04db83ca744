// Reference kernels of the nnet family: naive loops in double or long double precision (the test
// oracle).
#include <algorithm>
#include <cmath>
#include <vector>

#include "hypatia/backends/reference/nnet_common.h"

namespace hypatia::nnet_detail {

int64_t label_at(const NDArray& labels, int64_t i) {
  return dispatch_dtype(labels.dtype(), [&](auto t) -> int64_t {
    using L = decltype(t);
    return static_cast<int64_t>(*reinterpret_cast<const L*>(labels.raw() + i * labels.strides()[0]));
  });
}

void check_label_shapes(const char* who, const NDArray& coding, const NDArray& labels) {
  if (coding.ndim() != 2 || labels.ndim() != 1 || coding.shape(0) != labels.shape(0))
    fail<ValueError>(who, ": expected coding_dist of shape (n, n_classes) and labels of shape (n,), got coding_dist ",
                     coding.describe(), " and labels ", labels.describe());
}

void label_out_of_range(const char* who, int64_t label, DType label_dtype, int64_t row, int64_t classes) {
  if (label_dtype == DType::UInt64 && label < 0)
    fail<IndexError>(who, ": label ", static_cast<uint64_t>(label), " at row ", row, " is out of range for ", classes,
                     " classes (expected 0 <= label < ", classes, ")");
  fail<IndexError>(who, ": label ", label, " at row ", row, " is out of range for ", classes,
                   " classes (expected 0 <= label < ", classes, ")");
}

void check_labels(const char* who, const NDArray& coding, const NDArray& labels) {
  check_label_shapes(who, coding, labels);
  const int64_t k = coding.shape(1);
  for (int64_t i = 0; i < labels.shape(0); ++i) {
    int64_t y = label_at(labels, i);
    if (y < 0 || y >= k) label_out_of_range(who, y, labels.dtype(), i, k);
  }
}

namespace {

/// Softmax's statistics of a row of n values: its max m (NaN skipped) and where it first is, whether
/// the row is defined (no NaN, m finite: a NaN, a +inf or no finite element makes the row NaN),
/// and rest, the sum of exp(v - m) over the elements but the max, so that log1p(rest) keeps what
/// log(1 + rest) would round away. In long double (64-bit mantissa on x86), v - m is exact for
/// float and double inputs that are not too far apart, and results are rounded once at the end:
/// the oracle the CPU kernels are checked against.
struct RowStats {
  long double m = -INFINITY;
  int64_t at = -1;
  bool defined = false;
  long double rest = 0;
};
RowStats row_stats(const long double* v, int64_t n) {
  RowStats s;
  bool nan = false;
  for (int64_t i = 0; i < n; ++i) {
    if (std::isnan(v[i])) {
      nan = true;
    } else if (s.at < 0 || v[i] > s.m) {
      s.m = v[i];
      s.at = i;
    }
  }
  s.defined = !nan && std::isfinite(s.m);
  for (int64_t i = 0; i < n; ++i)
    if (i != s.at) s.rest += std::exp(v[i] - s.m);
  return s;
}

}  // namespace

void softmax_reference(const Softmax& op, const KernelArgs& args) {
  const NDArray& x = *args.in[0];
  NDArray& out = prepare_output(*args.out[0], x.shape(), x.dtype());
  const int64_t n = x.shape(op.axis);
  if (x.size() == 0) return;
  const int64_t rows = x.size() / n;
  // Walk the rows in C order over the other axes.
  std::vector<int> other;
  for (int d = 0; d < x.ndim(); ++d)
    if (d != op.axis) other.push_back(d);
  dispatch_float(x.dtype(), op.name(), [&](auto t) {
    using T = decltype(t);
    std::vector<long double> v(n);
    for (int64_t r = 0; r < rows; ++r) {
      int64_t rem = r, xoff = 0, ooff = 0;
      for (int k = static_cast<int>(other.size()) - 1; k >= 0; --k) {
        int d = other[k];
        xoff += (rem % x.shape(d)) * x.strides()[d];
        ooff += (rem % x.shape(d)) * out.strides()[d];
        rem /= x.shape(d);
      }
      for (int64_t i = 0; i < n; ++i) v[i] = *reinterpret_cast<const T*>(x.raw() + xoff + i * x.strides()[op.axis]);
      const RowStats st = row_stats(v.data(), n);
      const long double shift = std::log1p(st.rest), inv = 1.0L / (1.0L + st.rest);
      for (int64_t i = 0; i < n; ++i) {
        long double y = op.log ? (v[i] - st.m) - shift : std::exp(v[i] - st.m) * inv;
        if (!st.defined) y = NAN;
        *reinterpret_cast<T*>(out.raw() + ooff + i * out.strides()[op.axis]) = static_cast<T>(y);
      }
    }
  });
}

void check_xent_softmax_shapes(const char* who, const NDArray& x, const NDArray& b, const NDArray& labels,
                               bool one_for_all) {
  check_label_shapes(who, x, labels);
  if (b.ndim() != 1 || (b.shape(0) != x.shape(1) && !(one_for_all && b.shape(0) == 1)))
    fail<ValueError>(who, ": expected b of shape (", x.shape(1), ",) (one per class)", one_for_all ? " or (1,)" : "",
                     ", got ", b.describe(), " with x ", x.describe());
}

void check_xent_dx_shapes(const char* who, const NDArray& dy, const NDArray& sm, const NDArray& labels,
                          bool one_for_all) {
  check_label_shapes(who, sm, labels);
  if (dy.ndim() != 1 || (dy.shape(0) != sm.shape(0) && !(one_for_all && dy.shape(0) == 1)))
    fail<ValueError>(who, ": expected dy of shape (", sm.shape(0), ",) (one per row)", one_for_all ? " or (1,)" : "",
                     ", got ", dy.describe(), " with sm ", sm.describe());
}

void crossentropy_softmax_reference(const CrossentropySoftmax1HotWithBias& op, const KernelArgs& args,
                                    bool one_for_all) {
  const NDArray &x = *args.in[0], &b = *args.in[1], &labels = *args.in[2];
  const char* who = "CrossentropySoftmax1HotWithBias";
  check_xent_softmax_shapes(who, x, b, labels, one_for_all);
  const int64_t n = x.shape(0), k = x.shape(1);
  NDArray& nll = prepare_output(*args.out[0], {n}, x.dtype());
  NDArray& sm = prepare_output(*args.out[1], x.shape(), x.dtype());
  for (int64_t i = 0; i < n; ++i) {  // (every label first: an error leaves no output half written)
    const int64_t y = label_at(labels, i);
    if (y < 0 || y >= k) label_out_of_range(who, y, labels.dtype(), i, k);
  }
  if (n == 0 || k == 0) return;
  const int64_t bs = b.shape(0) == 1 ? 0 : b.strides()[0];
  dispatch_float(x.dtype(), op.name(), [&](auto t) {
    using T = decltype(t);
    std::vector<long double> z(k);
    for (int64_t i = 0; i < n; ++i) {
      // Softmax's reference on z = x + b (the sum rounded to T, as an Elemwise add would).
      for (int64_t j = 0; j < k; ++j)
        z[j] = static_cast<T>(*reinterpret_cast<const T*>(x.raw() + i * x.strides()[0] + j * x.strides()[1]) +
                              *reinterpret_cast<const T*>(b.raw() + j * bs));
      const RowStats st = row_stats(z.data(), k);
      const long double shift = std::log1p(st.rest), inv = 1.0L / (1.0L + st.rest);
      for (int64_t j = 0; j < k; ++j)
        sm.data<T>()[i * k + j] = static_cast<T>(st.defined ? std::exp(z[j] - st.m) * inv : NAN);
      const int64_t y = label_at(labels, i);
      nll.data<T>()[i] = static_cast<T>(st.defined ? shift - (z[y] - st.m) : NAN);
    }
  });
}

void crossentropy_softmax_dx_reference(const CrossentropySoftmax1HotWithBiasDx& op, const KernelArgs& args,
                                       bool one_for_all) {
  const NDArray &dy = *args.in[0], &sm = *args.in[1], &labels = *args.in[2];
  const char* who = "CrossentropySoftmax1HotWithBiasDx";
  check_labels(who, sm, labels);
  check_xent_dx_shapes(who, dy, sm, labels, one_for_all);
  const int64_t n = sm.shape(0), k = sm.shape(1);
  NDArray& out = prepare_output(*args.out[0], sm.shape(), sm.dtype());
  const int64_t ds = dy.shape(0) == 1 ? 0 : dy.strides()[0];
  dispatch_float(sm.dtype(), op.name(), [&](auto t) {
    using T = decltype(t);
    for (int64_t i = 0; i < n; ++i) {
      const T d = *reinterpret_cast<const T*>(dy.raw() + i * ds);
      const int64_t y = label_at(labels, i);
      for (int64_t j = 0; j < k; ++j) {
        const T s = *reinterpret_cast<const T*>(sm.raw() + i * sm.strides()[0] + j * sm.strides()[1]);
        out.data<T>()[i * k + j] = d * (j == y ? static_cast<T>(s - T(1)) : s);
      }
    }
  });
}

void check_labels_kernel(const CheckLabels& op, const KernelArgs& args) {
  check_labels(op.name().c_str(), *args.in[0], *args.in[1]);
  *args.out[0] = *args.in[1];
}

void crossentropy_1hot_reference(const CrossentropyCategorical1Hot& op, const KernelArgs& args) {
  const NDArray& coding = *args.in[0];
  const NDArray& labels = *args.in[1];
  check_labels("CrossentropyCategorical1Hot", coding, labels);
  NDArray& out = prepare_output(*args.out[0], {coding.shape(0)}, coding.dtype());
  dispatch_float(coding.dtype(), op.name(), [&](auto t) {
    using T = decltype(t);
    for (int64_t i = 0; i < coding.shape(0); ++i) {
      int64_t y = label_at(labels, i);
      T c = *reinterpret_cast<const T*>(coding.raw() + i * coding.strides()[0] + y * coding.strides()[1]);
      out.data<T>()[i] = static_cast<T>(-std::log(static_cast<double>(c)));
    }
  });
}

void crossentropy_1hot_grad_reference(const CrossentropyCategorical1HotGrad& op, const KernelArgs& args) {
  const NDArray& g = *args.in[0];
  const NDArray& coding = *args.in[1];
  const NDArray& labels = *args.in[2];
  check_labels("CrossentropyCategorical1HotGrad", coding, labels);
  if (g.ndim() != 1 || g.shape(0) != coding.shape(0))
    fail<ValueError>("CrossentropyCategorical1HotGrad: expected g of shape (", coding.shape(0), ",), got ",
                     g.describe());
  NDArray& out = prepare_output(*args.out[0], coding.shape(), coding.dtype());
  out.fill(0);
  dispatch_float(coding.dtype(), op.name(), [&](auto t) {
    using T = decltype(t);
    for (int64_t i = 0; i < coding.shape(0); ++i) {
      int64_t y = label_at(labels, i);
      T c = *reinterpret_cast<const T*>(coding.raw() + i * coding.strides()[0] + y * coding.strides()[1]);
      T gi = *reinterpret_cast<const T*>(g.raw() + i * g.strides()[0]);
      out.data<T>()[i * coding.shape(1) + y] = static_cast<T>(-gi / c);
    }
  });
}

}  // namespace hypatia::nnet_detail
