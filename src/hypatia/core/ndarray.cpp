#include "hypatia/core/ndarray.h"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <new>
#include <numeric>
#include <sstream>

#include "hypatia/core/allocator.h"
#include "hypatia/core/strided_loop.h"

namespace hypatia {

void Dims::too_many_dims() { fail<ValueError>("arrays may have at most ", kMaxNdim, " dimensions"); }
void Dims::insert(int pos, int64_t x) {
  push_back(0);
  for (int i = n_ - 1; i > pos; --i) v_[i] = v_[i - 1];
  v_[pos] = x;
}
void Dims::erase(int pos) {
  for (int i = pos; i + 1 < n_; ++i) v_[i] = v_[i + 1];
  --n_;
}
std::string Dims::str() const {
  std::ostringstream os;
  os << "(";
  for (int i = 0; i < n_; ++i) os << (i ? ", " : "") << v_[i];
  if (n_ == 1) os << ",";
  os << ")";
  return os.str();
}

namespace {

/// The element count of `shape` when its byte count (itemsize bytes per element) fits in int64;
/// -1 for a negative dimension, -2 for an overflow. Only the byte count needs a check: itemsize
/// >= 1, so the element count is at most it.
inline int64_t shape_size_or_error(const Shape& shape, size_t itemsize) {
  int64_t elements = 1, bytes = static_cast<int64_t>(std::max<size_t>(itemsize, 1));
  bool empty = false;
  for (int64_t d : shape) {
    if (d <= 0) {
      if (d < 0) return -1;
      empty = true;
      continue;
    }
    if (__builtin_mul_overflow(bytes, d, &bytes)) return -2;
    elements *= d;
  }
  return empty ? 0 : elements;
}

[[noreturn, gnu::noinline, gnu::cold]] void fail_shape_size(std::string_view who, const Shape& shape, DType dtype,
                                                            int64_t why) {
  if (why == -1)
    fail<ValueError>(who, ": negative dimension in shape ", shape.str(), " (dtype ", dtype_name(dtype), ")");
  fail<ValueError>(who, ": an array of shape ", shape.str(), " and dtype ", dtype_name(dtype),
                   " is too big: its size in bytes (", hypatia::itemsize(dtype),
                   " per element) does not fit in int64 (at most 9223372036854775807 bytes)");
}

}  // namespace

std::optional<int64_t> checked_shape_size(const Shape& shape, size_t itemsize) {
  const int64_t n = shape_size_or_error(shape, itemsize);
  if (n < 0) return std::nullopt;
  return n;
}

int64_t check_shape_size(std::string_view who, const Shape& shape, DType dtype) {
  const int64_t n = shape_size_or_error(shape, hypatia::itemsize(dtype));
  if (n < 0) [[unlikely]]
    fail_shape_size(who, shape, dtype, n);
  return n;
}

int normalize_axis(int axis, int ndim, const char* who) {
  if (axis < -ndim || axis >= std::max(ndim, 0) || (ndim == 0))
    fail<IndexError>(who, ": axis ", axis, " is out of bounds for an array of dimension ", ndim);
  return axis < 0 ? axis + ndim : axis;
}

namespace {

struct alignas(64) SmallBuffer {
  std::byte bytes[64];
};

struct BufferDeleter {
  size_t capacity;
  void operator()(void* q) const { host_free(q, capacity); }
};

// "8.00 TiB", as numpy's MemoryError says it.
std::string human_bytes(size_t bytes) {
  static const char* units[] = {"bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024 && u < 6) {
    v /= 1024;
    ++u;
  }
  std::ostringstream os;
  os.setf(std::ios::fixed);
  os.precision(u == 0 ? 0 : 2);
  os << v << " " << units[u];
  return os.str();
}
}  // namespace

NDArray NDArray::empty(const Shape& shape, DType dtype) {
  // The size check comes first: an overflowing product would wrap to a small (or zero) buffer.
  const int64_t count = check_shape_size("NDArray", shape, dtype);
  NDArray a;
  const size_t bytes = static_cast<size_t>(count) * hypatia::itemsize(dtype);
  if (bytes <= sizeof(SmallBuffer)) {
    // One allocation holds the control block and the data.
    auto b = std::allocate_shared<SmallBuffer>(HostCacheAllocator<SmallBuffer>{});
    a.data_ = b->bytes;
    a.storage_ = std::move(b);
    a.shape_ = shape;
    a.strides_ = c_strides(shape, hypatia::itemsize(dtype));
    a.dtype_ = dtype;
    return a;
  }
  size_t capacity = 0;
  void* p = host_alloc(bytes, &capacity);
  if (!p)
    fail<MemoryError>("NDArray: unable to allocate ", bytes, " bytes (", human_bytes(bytes), ") for an array of shape ",
                      shape.str(), " and dtype ", dtype_name(dtype));
  // The shared_ptr control block comes from the same per-thread cache as the data, so that a
  // repeated call allocates nothing from malloc.
  a.storage_ = std::shared_ptr<void>(p, BufferDeleter{capacity}, HostCacheAllocator<char>{});
  a.data_ = static_cast<std::byte*>(p);
  a.shape_ = shape;
  a.strides_ = c_strides(shape, hypatia::itemsize(dtype));
  a.dtype_ = dtype;
  return a;
}

NDArray NDArray::empty(const Shape& shape, DType dtype, Device device) {
  if (device.is_host()) return empty(shape, dtype);
  const int64_t count = check_shape_size("NDArray", shape, dtype);
  const size_t bytes = static_cast<size_t>(count) * hypatia::itemsize(dtype);
  std::shared_ptr<void> buf = device_memory(device).allocate(bytes);
  if (!buf)
    fail<MemoryError>("NDArray: unable to allocate ", bytes, " bytes (", human_bytes(bytes), ") on ", device.str(),
                      " for an array of shape ", shape.str(), " and dtype ", dtype_name(dtype));
  NDArray a;
  a.data_ = static_cast<std::byte*>(buf.get());
  a.storage_ = std::move(buf);
  a.shape_ = shape;
  a.strides_ = c_strides(shape, hypatia::itemsize(dtype));
  a.dtype_ = dtype;
  a.device_ = device;
  return a;
}

void NDArray::not_on_host(std::string_view who) const {
  fail<TypeError>(who, ": the array (", describe(), ") is on ", device_.str(),
                  "; this operation reads host memory. Transfer it to the host first (to_device(Device::host()), "
                  "or a HostFromDevice node in the graph).");
}

NDArray NDArray::to_device(Device device) const {
  if (device_.is_host() && device.is_host()) return copy();
  if (!device_.is_host() && !device.is_host() && !(device_ == device))
    return to_device(Device::host()).to_device(device);
  if (device_.is_host()) {
    // Host -> device: a C-contiguous host copy (unless already one), then one transfer.
    const NDArray src = is_c_contiguous() ? *this : copy();
    NDArray r = empty(shape_, dtype_, device);
    if (r.nbytes() > 0) device_memory(device).copy_from_host(r.raw(), src.raw(), r.nbytes());
    return r;
  }
  // From a device: contiguous device arrays transfer in one piece. A strided view comes to the
  // host through the bytes it spans (a device backend makes its own views contiguous on the
  // device first, which moves less); to another place on a device it is refused.
  if (!is_c_contiguous()) {
    if (device.is_host() && size() == 0) return empty(shape_, dtype_);
    if (!device.is_host())
      fail<ValueError>("to_device: a non-contiguous array (", describe(), ") on ", device_.str(),
                       " cannot be transferred; make it contiguous on its device first");
    int64_t lo = 0, hi = 0;  // byte offsets from data_ of the first element and past the last one
    for (int d = 0; d < ndim(); ++d) {
      const int64_t span = (shape_[d] - 1) * strides_[d];
      (span < 0 ? lo : hi) += span;
    }
    hi += static_cast<int64_t>(itemsize());
    NDArray bytes = empty({hi - lo}, DType::UInt8);
    device_memory(device_).copy_to_host(bytes.raw(), data_ + lo, static_cast<size_t>(hi - lo));
    return wrap(bytes.storage(), bytes.raw() - lo, shape_, strides_, dtype_).copy();
  }
  if (device == device_) {
    const DeviceMemory& m = device_memory(device_);
    if (!m.copy_on_device) return to_device(Device::host()).to_device(device);
    NDArray r = empty(shape_, dtype_, device);
    if (r.nbytes() > 0) m.copy_on_device(r.raw(), raw(), r.nbytes());
    return r;
  }
  NDArray r = empty(shape_, dtype_);
  if (r.nbytes() > 0) device_memory(device_).copy_to_host(r.raw(), raw(), r.nbytes());
  return r;
}

NDArray NDArray::zeros(const Shape& shape, DType dtype) {
  NDArray a = empty(shape, dtype);
  std::memset(a.data_, 0, a.nbytes());
  return a;
}

NDArray NDArray::full(const Shape& shape, DType dtype, double value) {
  NDArray a = empty(shape, dtype);
  a.fill(value);
  return a;
}

NDArray NDArray::scalar(double value, DType dtype) { return full(Shape{}, dtype, value); }

NDArray NDArray::scalar_int64(int64_t value) {
  NDArray a = empty(Shape{}, DType::Int64);
  *a.data<int64_t>() = value;
  return a;
}

NDArray NDArray::wrap(std::shared_ptr<void> owner, void* data, const Shape& shape, const Strides& strides, DType dtype,
                      Device device) {
  HYP_ASSERT(shape.size() == strides.size());
  NDArray a;
  a.device_ = device;
  a.storage_ = std::move(owner);
  a.data_ = static_cast<std::byte*>(data);
  a.shape_ = shape;
  a.strides_ = strides;
  a.dtype_ = dtype;
  return a;
}

double NDArray::get_flat(int64_t i) const {
  require_host("get_flat");
  std::byte* p = data_;
  for (int d = ndim() - 1; d >= 0; --d) {
    int64_t n = shape_[d];
    p += (i % n) * strides_[d];
    i /= n;
  }
  return dispatch_storage_dtype(dtype_, [&](auto t) -> double {
    using T = decltype(t);
    return static_cast<double>(*reinterpret_cast<const T*>(p));
  });
}

namespace {

/// [lo, hi) of the bytes an array's elements occupy (lo == hi for an empty array).
std::pair<const std::byte*, const std::byte*> byte_extent(const NDArray& a) {
  const std::byte* lo = a.raw();
  const std::byte* hi = a.raw();
  for (int d = 0; d < a.ndim(); ++d) {
    if (a.shape(d) == 0) return {a.raw(), a.raw()};
    const int64_t span = (a.shape(d) - 1) * a.strides()[d];
    (span < 0 ? lo : hi) += span;
  }
  return {lo, hi + a.itemsize()};
}

}  // namespace

bool NDArray::may_share_memory(const NDArray& o) const {
  if (!valid() || !o.valid()) return false;
  auto [a0, a1] = byte_extent(*this);
  auto [b0, b1] = byte_extent(o);
  return a0 < a1 && b0 < b1 && a0 < b1 && b0 < a1;
}

bool NDArray::has_internal_overlap() const {
  // Dimensions of length > 1 by increasing |stride|: each stride must step past everything the
  // smaller dimensions cover.
  std::array<std::pair<int64_t, int64_t>, kMaxNdim> dims{};  // (|stride|, length)
  int n = 0;
  for (int d = 0; d < ndim(); ++d) {
    if (shape_[d] == 0) return false;
    if (shape_[d] > 1) dims[n++] = {strides_[d] < 0 ? -strides_[d] : strides_[d], shape_[d]};
  }
  std::sort(dims.begin(), dims.begin() + n);
  int64_t covered = static_cast<int64_t>(itemsize());
  for (int k = 0; k < n; ++k) {
    const auto [stride, len] = dims[k];
    if (stride < covered) return true;
    covered = stride * (len - 1) + covered;
  }
  return false;
}

int64_t NDArray::get_flat_int(int64_t i) const {
  require_host("get_flat_int");
  std::byte* p = data_;
  for (int d = ndim() - 1; d >= 0; --d) {
    int64_t n = shape_[d];
    p += (i % n) * strides_[d];
    i /= n;
  }
  return dispatch_storage_dtype(dtype_, [&](auto t) -> int64_t {
    using T = decltype(t);
    constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
    if constexpr (std::is_same_v<T, half>) {
      const float v = reinterpret_cast<const half*>(p)->to_float();
      return std::isnan(v) ? 0 : static_cast<int64_t>(v);  // |v| < 65520 or infinite
    } else if constexpr (std::is_floating_point_v<T>) {
      const T v = *reinterpret_cast<const T*>(p);
      if (std::isnan(v)) return 0;
      // 2**63 is the first double past INT64_MAX; the cast of anything beyond is undefined.
      if (v >= 9223372036854775808.0) return kMax;
      if (v < -9223372036854775808.0) return std::numeric_limits<int64_t>::min();
      return static_cast<int64_t>(v);
    } else if constexpr (std::is_same_v<T, uint64_t>) {
      const T v = *reinterpret_cast<const T*>(p);
      return v > static_cast<uint64_t>(kMax) ? kMax : static_cast<int64_t>(v);
    } else {
      return static_cast<int64_t>(*reinterpret_cast<const T*>(p));
    }
  });
}

bool NDArray::is_c_contiguous_nd() const {
  int64_t acc = static_cast<int64_t>(itemsize());
  for (int i = ndim() - 1; i >= 0; --i) {
    if (shape_[i] == 0) return true;
    if (shape_[i] != 1 && strides_[i] != acc) return false;
    acc *= shape_[i];
  }
  return true;
}

bool NDArray::is_f_contiguous() const {
  int64_t acc = static_cast<int64_t>(itemsize());
  for (int i = 0; i < ndim(); ++i) {
    if (shape_[i] == 0) return true;
    if (shape_[i] != 1 && strides_[i] != acc) return false;
    acc *= shape_[i];
  }
  return true;
}

NDArray NDArray::transpose(std::span<const int> perm) const {
  if (static_cast<int>(perm.size()) != ndim())
    fail<ValueError>("transpose: permutation of length ", perm.size(), " for an array of dimension ", ndim());
  NDArray r = *this;
  std::array<bool, kMaxNdim> seen{};
  for (int i = 0; i < ndim(); ++i) {
    int p = perm[i];
    if (p < 0 || p >= ndim() || seen[p]) fail<ValueError>("transpose: invalid permutation");
    seen[p] = true;
    r.shape_[i] = shape_[p];
    r.strides_[i] = strides_[p];
  }
  return r;
}

NDArray NDArray::transpose() const {
  std::array<int, kMaxNdim> perm{};
  for (int i = 0; i < ndim(); ++i) perm[i] = ndim() - 1 - i;
  return transpose(std::span<const int>(perm.data(), ndim()));
}

NDArray NDArray::slice(int axis, int64_t start, int64_t stop, int64_t step) const {
  HYP_ASSERT(step != 0);
  NDArray r = *this;
  step = clamp_slice_step(step);
  // ceil((stop - start) / step) as (d - 1) / s + 1: d + s - 1 overflows for a huge step.
  int64_t n = 0;
  if (step > 0 && stop > start) n = (stop - start - 1) / step + 1;
  if (step < 0 && stop < start) n = (start - stop - 1) / -step + 1;
  if (n > 0) r.data_ += start * strides_[axis];
  r.shape_[axis] = n;
  // With two or more elements, stride * step spans two elements of this array, so it fits; with
  // one or none the stride is never used, and a huge step would overflow it.
  r.strides_[axis] = n > 1 ? strides_[axis] * step : strides_[axis];
  return r;
}

NDArray NDArray::select(int axis, int64_t i) const {
  NDArray r = *this;
  r.data_ += i * strides_[axis];
  r.shape_.erase(axis);
  r.strides_.erase(axis);
  return r;
}

NDArray NDArray::as_strided(const Shape& shape, const Strides& strides) const {
  NDArray r = *this;
  r.shape_ = shape;
  r.strides_ = strides;
  return r;
}

NDArray NDArray::reshape(const Shape& shape) const {
  if (check_shape_size("reshape", shape, dtype_) != size())
    fail<ValueError>("reshape: cannot reshape an array of size ", size(), " with shape ", shape_.str(), " into shape ",
                     shape.str());
  if (is_c_contiguous()) return as_strided(shape, c_strides(shape, itemsize()));
  return copy().as_strided(shape, c_strides(shape, itemsize()));
}

NDArray NDArray::broadcast_to(const Shape& shape) const {
  if (shape.size() < ndim())
    fail<ValueError>("broadcast_to: cannot broadcast shape ", shape_.str(), " to ", shape.str());
  Strides st;
  st.resize(shape.size());
  int off = shape.size() - ndim();
  for (int i = 0; i < shape.size(); ++i) {
    if (i < off) {
      st[i] = 0;
      continue;
    }
    int64_t d = shape_[i - off];
    if (d == shape[i])
      st[i] = strides_[i - off];
    else if (d == 1)
      st[i] = 0;
    else
      fail<ValueError>("broadcast_to: cannot broadcast shape ", shape_.str(), " to ", shape.str());
  }
  check_shape_size("broadcast_to", shape, dtype_);
  return as_strided(shape, st);
}

void NDArray::assign(const NDArray& src) const {
  require_host("assign");
  if (!writeable_) fail<ValueError>("assign: the destination is read-only (", describe(), ")");
  src.require_host("assign");
  if (!(src.shape() == shape_))
    fail<ValueError>("assign: source shape ", src.shape().str(), " differs from destination ", shape_.str());
  StridedLoop<2> loop(shape_, {&strides_, &src.strides_});
  dispatch_storage_dtype(dtype_, [&](auto td) {
    using D = decltype(td);
    dispatch_storage_dtype(src.dtype_, [&](auto ts) {
      using S = decltype(ts);
      loop.run({data_, src.data_}, [](const std::array<std::byte*, 2>& p, const std::array<int64_t, 2>& s, int64_t n) {
        std::byte* d = p[0];
        const std::byte* q = p[1];
        if (std::is_same_v<D, S> && s[0] == sizeof(D) && s[1] == sizeof(D)) {
          std::memmove(d, q, static_cast<size_t>(n) * sizeof(D));
          return;
        }
        for (int64_t i = 0; i < n; ++i, d += s[0], q += s[1])
          *reinterpret_cast<D*>(d) = static_cast<D>(*reinterpret_cast<const S*>(q));
      });
    });
  });
}

void NDArray::fill(double value) const {
  require_host("fill");
  if (!writeable_) fail<ValueError>("fill: the array is read-only (", describe(), ")");
  dispatch_storage_dtype(dtype_, [&](auto t) {
    using T = decltype(t);
    T v = static_cast<T>(value);
    StridedLoop<1> loop(shape_, {&strides_});
    loop.run({data_}, [v](const std::array<std::byte*, 1>& p, const std::array<int64_t, 1>& s, int64_t n) {
      std::byte* d = p[0];
      for (int64_t i = 0; i < n; ++i, d += s[0]) *reinterpret_cast<T*>(d) = v;
    });
  });
}

NDArray NDArray::copy() const {
  // A contiguous device array is copied on its device; element access is for host arrays.
  if (!device_.is_host() && is_c_contiguous()) return to_device(device_);
  require_host("copy");
  NDArray r = empty(shape_, dtype_);
  r.assign(*this);
  return r;
}

NDArray NDArray::astype(DType dtype) const {
  require_host("astype");
  NDArray r = empty(shape_, dtype);
  r.assign(*this);
  return r;
}

std::string NDArray::str() const {
  if (!device_.is_host()) {
    // describe() names the device; no element is read.
    std::string s(1, '<');
    s.append(describe());
    s.push_back('>');
    return s;
  }
  std::ostringstream os;
  os << "array(";
  const bool elide = size() > 1000;
  // prefix is the C-order flat index of the elements printed so far along dims [0, d).
  std::function<void(int, int64_t)> rec = [&](int d, int64_t prefix) {
    if (d == ndim()) {
      if (dtype_ == DType::Bool)
        os << (get_flat(prefix) != 0 ? "True" : "False");
      else if (is_integer(dtype_))
        os << get_flat_int(prefix);  // exact past 2**53
      else
        os << get_flat(prefix);
      return;
    }
    os << "[";
    for (int64_t i = 0; i < shape_[d]; ++i) {
      if (elide && shape_[d] > 6 && i == 3) {
        os << "..., ";
        i = shape_[d] - 3;
      }
      if (i) os << ", ";
      rec(d + 1, prefix * shape_[d] + i);
    }
    os << "]";
  };
  if (valid()) rec(0, 0);
  os << ", dtype=" << dtype_name(dtype_) << ")";
  return os.str();
}

std::string NDArray::describe() const {
  std::ostringstream os;
  os << dtype_name(dtype_) << " shape " << shape_.str() << " strides " << strides_.str();
  if (!device_.is_host()) os << " on " << device_.str();
  return os.str();
}

}  // namespace hypatia
