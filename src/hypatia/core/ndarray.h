// NDArray: a refcounted buffer viewed through a dtype, shape, byte strides and offset.
#pragma once
#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "hypatia/core/checked.h"
#include "hypatia/core/device.h"
#include "hypatia/core/dtype.h"
#include "hypatia/core/error.h"

namespace hypatia {

/// Most dimensions an array may have.
inline constexpr int kMaxNdim = 12;

/// A fixed-capacity list of up to kMaxNdim int64 values (shapes, strides): copying it never allocates.
/// Only the used entries are initialised and copied (an NDArray holds two Dims, and the per-call
/// path copies arrays several times: copying all 12 entries and zeroing them on construction
/// cost more than the rest of a small array copy).
class Dims {
 public:
  Dims() = default;
  Dims(const Dims& o) : n_(o.n_) { copy_entries(o); }
  Dims& operator=(const Dims& o) {
    n_ = o.n_;
    copy_entries(o);
    return *this;
  }
  Dims(std::initializer_list<int64_t> v) { assign(v.begin(), v.end()); }
  explicit Dims(std::span<const int64_t> v) { assign(v.begin(), v.end()); }
  template <class It>
  Dims(It b, It e) {
    assign(b, e);
  }

  int size() const { return n_; }
  bool empty() const { return n_ == 0; }
  int64_t operator[](int i) const { return v_[i]; }
  int64_t& operator[](int i) { return v_[i]; }
  const int64_t* begin() const { return v_.data(); }
  const int64_t* end() const { return v_.data() + n_; }
  int64_t* begin() { return v_.data(); }
  int64_t* end() { return v_.data() + n_; }
  int64_t back() const { return v_[n_ - 1]; }
  void push_back(int64_t x) {
    if (n_ >= kMaxNdim) too_many_dims();
    v_[n_++] = x;
  }
  void insert(int pos, int64_t x);
  void erase(int pos);
  void resize(int n, int64_t fill = 0) {
    if (n > kMaxNdim) too_many_dims();
    for (int i = n_; i < n; ++i) v_[i] = fill;
    n_ = n;
  }
  std::vector<int64_t> vec() const { return {begin(), end()}; }
  /// Product of the entries (1 for none). Unchecked: for the shape of an existing array, whose
  /// size fits (see checked_shape_size); a shape computed from user values is checked first.
  int64_t prod() const {
    int64_t p = 1;
    for (int i = 0; i < n_; ++i) p *= v_[i];
    return p;
  }
  bool operator==(const Dims& o) const {
    // A plain loop: std::equal becomes a call of memcmp, a tenth of a small call's time.
    if (n_ != o.n_) return false;
    for (int i = 0; i < n_; ++i)
      if (v_[i] != o.v_[i]) return false;
    return true;
  }
  /// "(2, 3)" like numpy.
  std::string str() const;

 private:
  [[noreturn]] static void too_many_dims();
  template <class It>
  void assign(It b, It e) {
    n_ = 0;
    for (; b != e; ++b) push_back(static_cast<int64_t>(*b));
  }
  // The first four entries always (two 16-byte moves, whatever n_: entries past n_ are never
  // read, and memcpy may copy indeterminate bytes), the rest one by one. A plain loop over n_
  // entries becomes a call of memcpy, which costs more than the copy.
  // (gcc 12, inlining this into vector growth paths, warns about offsets the vector never reaches.)
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Warray-bounds"
#pragma GCC diagnostic ignored "-Wstringop-overflow"
#endif
  void copy_entries(const Dims& o) {
    std::memcpy(v_.data(), o.v_.data(), 4 * sizeof(int64_t));
    for (int i = 4; i < n_; ++i) v_[i] = o.v_[i];
  }
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
  // Entries at n_ and past are never read (resize fills the ones it exposes).
  std::array<int64_t, kMaxNdim> v_;
  int n_ = 0;
};
using Shape = Dims;
using Strides = Dims;

/// The element count of `shape` when every dim is >= 0 and the array fits: the product of its
/// non-zero dims times itemsize fits in int64 (numpy's rule; a shape with a zero dim is held to it
/// too, so that strides computed from it fit); nullopt otherwise.
std::optional<int64_t> checked_shape_size(const Shape& shape, size_t itemsize);
/// checked_shape_size, or a ValueError whose message starts with `who` and names the shape and
/// dtype (a negative dim, or a size in bytes past int64).
int64_t check_shape_size(std::string_view who, const Shape& shape, DType dtype);

/// C-order (row-major) byte strides for a shape (one that passed checked_shape_size).
inline Strides c_strides(const Shape& shape, size_t itemsize) {
  Strides s;
  s.resize(shape.size());
  int64_t acc = static_cast<int64_t>(itemsize);
  for (int i = shape.size() - 1; i >= 0; --i) {
    s[i] = acc;
    acc *= std::max<int64_t>(shape[i], 1);
  }
  return s;
}

/// An n-dimensional array. Copies share the buffer (like numpy views); use copy() for a deep copy.
class NDArray {
 public:
  /// An empty 0-element float64 vector-less placeholder (ndim 0, no buffer); valid() is false.
  NDArray() = default;

  /// Uninitialized C-contiguous array (64-byte aligned buffer). A shape that does not fit
  /// (check_shape_size) throws ValueError; a buffer the machine cannot give throws MemoryError
  /// naming the bytes asked for.
  static NDArray empty(const Shape& shape, DType dtype);
  /// Uninitialized C-contiguous array on `device`, from its allocator (MemoryError naming the
  /// device and the bytes when it has none left).
  static NDArray empty(const Shape& shape, DType dtype, Device device);
  static NDArray zeros(const Shape& shape, DType dtype);
  /// Every element set to `value` converted to dtype.
  static NDArray full(const Shape& shape, DType dtype, double value);
  /// A 0-d array holding `value` converted to dtype.
  static NDArray scalar(double value, DType dtype);
  /// A 0-d int64 array holding `value` exactly (scalar() goes through a double).
  static NDArray scalar_int64(int64_t value);
  /// Copies `values` (length = shape.prod()) into a new array of T's dtype.
  template <class T>
  static NDArray from_vector(const std::vector<T>& values, const Shape& shape);
  template <class T>
  static NDArray from_vector(const std::vector<T>& values) {
    return from_vector(values, Shape{static_cast<int64_t>(values.size())});
  }
  /// Wraps external memory without copying; `owner` keeps it alive.
  static NDArray wrap(std::shared_ptr<void> owner, void* data, const Shape& shape, const Strides& strides, DType dtype,
                      Device device = Device::host());

  bool valid() const { return static_cast<bool>(storage_); }
  /// Drops the reference to the buffer (the array becomes invalid) without touching shape/strides.
  void reset() {
    storage_.reset();
    data_ = nullptr;
  }
  DType dtype() const { return dtype_; }
  /// Where the buffer lives. Element access (data(), get_flat, copy, assign, str, ...) is for
  /// host arrays; on another device it throws TypeError (require_host).
  Device device() const { return device_; }
  bool on_host() const { return device_.is_host(); }
  /// Throws TypeError naming `who`, the device and what to do, unless the array is on the host.
  void require_host(std::string_view who) const {
    if (!device_.is_host()) not_on_host(who);
  }
  int ndim() const { return shape_.size(); }
  const Shape& shape() const { return shape_; }
  const Strides& strides() const { return strides_; }
  int64_t shape(int axis) const { return shape_[axis]; }
  int64_t size() const { return shape_.prod(); }
  size_t itemsize() const { return hypatia::itemsize(dtype_); }
  size_t nbytes() const { return static_cast<size_t>(size()) * itemsize(); }
  /// Byte offset of element 0 from the start of the buffer.
  int64_t offset() const { return static_cast<int64_t>(data_ - static_cast<std::byte*>(storage_.get())); }

  std::byte* raw() const { return data_; }
  template <class T>
  T* data() const {
    return reinterpret_cast<T*>(data_);
  }
  /// The element at a multi-index (no bounds checks beyond ndim); for tests and slow paths.
  template <class T>
  T& at(std::initializer_list<int64_t> idx) const;
  /// Element `i` in C order, converted to double (any layout); for tests and printing.
  double get_flat(int64_t i) const;
  /// Element `i` in C order as an int64: exact for integer dtypes (a uint64 past INT64_MAX
  /// saturates), floats truncated toward zero and saturated (NaN gives 0). get_flat's double
  /// loses integers past 2**53.
  int64_t get_flat_int(int64_t i) const;

  bool is_c_contiguous() const {
    // 0-d and 1-d inline: the common case of every small call's checks.
    if (ndim() == 0) return true;
    if (ndim() == 1) return shape_[0] <= 1 || strides_[0] == static_cast<int64_t>(itemsize());
    return is_c_contiguous_nd();
  }
  bool is_f_contiguous() const;
  /// Whether the buffer is referenced by this array only (so a kernel may reuse it).
  bool unique() const { return storage_.use_count() == 1; }
  long use_count() const { return storage_.use_count(); }
  /// Whether two arrays may share memory (same buffer).
  bool shares_buffer(const NDArray& o) const { return storage_ && storage_ == o.storage_; }
  /// Whether the memory that the two arrays' elements occupy may overlap (their byte ranges
  /// intersect), whatever owns it: two wrappings of one numpy array have different owners.
  bool may_share_memory(const NDArray& o) const;
  /// Whether two elements of this array occupy the same memory (a zero stride on a dimension
  /// longer than one, or strides that make rows overlap); conservative: true when unsure. Such an
  /// array cannot be written elementwise.
  bool has_internal_overlap() const;
  /// Whether kernels may write into this array's memory: false for borrowed read-only memory (a
  /// read-only numpy array, an mmap, a bytes object). Views inherit it; copies are writeable.
  bool writeable() const { return writeable_; }
  /// Marks this array (and the views made from it afterwards) writeable or read-only.
  void set_writeable(bool w) { writeable_ = w; }
  /// Whether a kernel may overwrite this array's elements in place: writeable, with no internal
  /// overlap.
  bool can_write_in_place() const { return writeable_ && !has_internal_overlap(); }
  const std::shared_ptr<void>& storage() const { return storage_; }

  // Views (share the buffer).
  NDArray transpose(std::span<const int> perm) const;
  NDArray transpose() const;  // reverses the axes
  /// Basic slice along one axis; start/stop already normalized (slice_indices), step != 0 (any
  /// int64: the length is computed without overflow).
  NDArray slice(int axis, int64_t start, int64_t stop, int64_t step) const;
  /// Drops `axis` by selecting index i (normalized).
  NDArray select(int axis, int64_t i) const;
  /// View with a new shape and strides over the same element 0 (caller guarantees validity).
  NDArray as_strided(const Shape& shape, const Strides& strides) const;
  /// Reshape (same size; the shape is checked): a view when the layout allows, else a C-contiguous copy.
  NDArray reshape(const Shape& shape) const;
  /// Broadcast view to `shape` (numpy rules, 0 strides); throws ValueError if incompatible or too large.
  NDArray broadcast_to(const Shape& shape) const;

  // Copies.
  NDArray copy() const;  // C-contiguous deep copy (host arrays)
  /// A C-contiguous copy on `device` (host <-> device through the device's copy functions; a
  /// host array asked for the host is copied too).
  NDArray to_device(Device device) const;
  NDArray ascontiguous() const { return is_c_contiguous() ? *this : copy(); }
  NDArray astype(DType dtype) const;
  /// Copies src's elements into this array (same shape; any layouts; converts dtype); ValueError
  /// when this handle is read-only (writeable() false), as for fill.
  void assign(const NDArray& src) const;
  void fill(double value) const;

  /// numpy-like text: "array([1., 2.], dtype=float32)".
  std::string str() const;
  /// "float32 (2, 3) strides (12, 4)" for error messages.
  std::string describe() const;

 private:
  bool is_c_contiguous_nd() const;

  std::shared_ptr<void> storage_;
  std::byte* data_ = nullptr;
  Shape shape_;
  Strides strides_;
  DType dtype_ = DType::Float64;
  bool writeable_ = true;
  Device device_;

  [[noreturn]] void not_on_host(std::string_view who) const;
};

template <class T>
NDArray NDArray::from_vector(const std::vector<T>& values, const Shape& shape) {
  NDArray a = empty(shape, dtype_of<T>());
  if (static_cast<int64_t>(values.size()) != a.size())
    fail<ValueError>("NDArray::from_vector: ", values.size(), " values cannot fill shape ", shape.str());
  std::copy(values.begin(), values.end(), a.data<T>());
  return a;
}

template <class T>
T& NDArray::at(std::initializer_list<int64_t> idx) const {
  HYP_ASSERT(static_cast<int>(idx.size()) == ndim(), "at() needs ", ndim(), " indices");
  std::byte* p = data_;
  int k = 0;
  for (int64_t i : idx) p += i * strides_[k++];
  return *reinterpret_cast<T*>(p);
}

/// Normalizes a possibly negative axis against ndim; throws IndexError naming `who`.
int normalize_axis(int axis, int ndim, const char* who);

}  // namespace hypatia
