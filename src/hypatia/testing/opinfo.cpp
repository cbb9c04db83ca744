#include "hypatia/testing/opinfo.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <sstream>

namespace hypatia::testing {

std::vector<OpInfo>& op_infos() {
  static std::vector<OpInfo> infos;
  return infos;
}

NDArray random_array(const Shape& shape, DType dt, double lo, double hi, uint64_t seed) {
  std::mt19937_64 rng(seed * 7919 + 17);
  std::uniform_real_distribution<double> u(lo, hi);
  NDArray a = NDArray::empty(shape, dt);
  dispatch_storage_dtype(dt, [&](auto t) {
    using T = decltype(t);
    T* p = a.data<T>();
    for (int64_t i = 0; i < a.size(); ++i) {
      double v = u(rng);
      if constexpr (std::is_same_v<T, bool>)
        p[i] = v > (lo + hi) / 2;
      else if constexpr (std::is_integral_v<T>)
        p[i] = static_cast<T>(std::floor(v));
      else
        p[i] = static_cast<T>(v);
    }
  });
  return a;
}

NDArray random_strided(const Shape& shape, DType dt, double lo, double hi, uint64_t seed) {
  NDArray dense = random_array(shape, dt, lo, hi, seed);
  if (shape.size() == 0) return dense;
  Shape big = shape;
  big[big.size() - 1] = std::max<int64_t>(1, shape.back() * 2);
  NDArray buf = NDArray::zeros(big, dt);
  NDArray view = buf.slice(shape.size() - 1, 0, shape.back() * 2, 2);
  if (shape[0] > 1) view = view.slice(0, shape[0] - 1, -1, -1);
  // Fill the view so that it reads the same values as `dense` in logical order.
  NDArray src = dense;
  if (shape[0] > 1) src = dense.slice(0, shape[0] - 1, -1, -1);
  view.assign(src);
  return shape[0] > 1 ? view.slice(0, shape[0] - 1, -1, -1) : view;
}

NDArray make_array(const std::vector<double>& values, const Shape& shape, DType dt) {
  NDArray a = NDArray::from_vector(values, shape);
  return a.astype(dt);
}

double default_rtol(DType dt) {
  return dt == DType::Float16 ? 1e-3 : dt == DType::Float32 ? 1e-4 : dt == DType::Float64 ? 1e-7 : 0;
}
double default_atol(DType dt) {
  return dt == DType::Float16 ? 1e-3 : dt == DType::Float32 ? 1e-5 : dt == DType::Float64 ? 1e-10 : 0;
}

std::string compare_arrays(const NDArray& a, const NDArray& b, double rtol, double atol) {
  std::ostringstream os;
  if (!a.valid() || !b.valid()) return "an array is empty (invalid)";
  if (!(a.shape() == b.shape())) {
    os << "shape " << a.shape().str() << " != " << b.shape().str();
    return os.str();
  }
  for (int64_t i = 0; i < a.size(); ++i) {
    double x = a.get_flat(i), y = b.get_flat(i);
    if (std::isnan(x) && std::isnan(y)) continue;
    if (std::isinf(x) || std::isinf(y)) {
      if (x == y) continue;
    } else if (std::abs(x - y) <= atol + rtol * std::abs(y)) {
      continue;
    }
    os << "element " << i << ": " << x << " vs " << y << " (rtol " << rtol << ", atol " << atol << "); a "
       << a.describe() << ", b " << b.describe();
    return os.str();
  }
  return "";
}

}  // namespace hypatia::testing
