// Element types and numpy's promotion rules.
#pragma once
#include <complex>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "hypatia/core/half.h"

namespace hypatia {

/// The element types a tensor can hold (numpy names).
enum class DType : uint8_t {
  Bool,
  Int8,
  Int16,
  Int32,
  Int64,
  UInt8,
  UInt16,
  UInt32,
  UInt64,
  Float32,
  Float64,
  /// A storage dtype: kernels compute in float32 (see core/half.h).
  Float16,
};
inline constexpr int kNumDTypes = 12;

/// Size of one element in bytes.
/// Bytes per element.
inline size_t itemsize(DType dt) {
  constexpr uint8_t kSizes[] = {1, 1, 2, 4, 8, 1, 2, 4, 8, 4, 8, 2};
  return kSizes[static_cast<int>(dt)];
}
/// numpy's name: "float32", "int64", "bool" ...
std::string_view dtype_name(DType dt);
/// Parses a numpy dtype name; throws TypeError on an unknown name.
DType dtype_from_name(std::string_view name);

inline bool is_bool(DType dt) { return dt == DType::Bool; }
inline bool is_float(DType dt) { return dt == DType::Float32 || dt == DType::Float64 || dt == DType::Float16; }
inline bool is_signed_int(DType dt) { return dt >= DType::Int8 && dt <= DType::Int64; }
inline bool is_unsigned_int(DType dt) { return dt >= DType::UInt8 && dt <= DType::UInt64; }
/// Integer, signed or unsigned (not bool).
inline bool is_integer(DType dt) { return is_signed_int(dt) || is_unsigned_int(dt); }

/// numpy.promote_types for two array dtypes.
DType promote_types(DType a, DType b);
/// numpy.can_cast(from, to, 'safe'): every value of `from` is representable in `to`.
bool can_cast_safely(DType from, DType to);
/// The float type an integer promotes to for true division, sqrt, exp...: float32 stays,
/// int8/16/uint8/16 -> float32, wider ints and bool -> float64 (numpy/Theano rule).
DType float_upcast(DType dt);

template <class T>
constexpr DType dtype_of() {
  if constexpr (std::is_same_v<T, bool>)
    return DType::Bool;
  else if constexpr (std::is_same_v<T, int8_t>)
    return DType::Int8;
  else if constexpr (std::is_same_v<T, int16_t>)
    return DType::Int16;
  else if constexpr (std::is_same_v<T, int32_t>)
    return DType::Int32;
  else if constexpr (std::is_same_v<T, int64_t>)
    return DType::Int64;
  else if constexpr (std::is_same_v<T, uint8_t>)
    return DType::UInt8;
  else if constexpr (std::is_same_v<T, uint16_t>)
    return DType::UInt16;
  else if constexpr (std::is_same_v<T, uint32_t>)
    return DType::UInt32;
  else if constexpr (std::is_same_v<T, uint64_t>)
    return DType::UInt64;
  else if constexpr (std::is_same_v<T, float>)
    return DType::Float32;
  else if constexpr (std::is_same_v<T, double>)
    return DType::Float64;
  else if constexpr (std::is_same_v<T, half>)
    return DType::Float16;
  else
    static_assert(sizeof(T) == 0, "unsupported element type");
}

[[noreturn]] void fail_storage_dtype(DType dt);

namespace detail {
/// The one dtype switch behind dispatch_dtype (WithStorage false: float16 throws) and
/// dispatch_storage_dtype (true: T = half).
template <bool WithStorage, class F>
decltype(auto) dispatch_dtype_impl(DType dt, F&& f) {
  switch (dt) {
    case DType::Bool:
      return f(bool{});
    case DType::Int8:
      return f(int8_t{});
    case DType::Int16:
      return f(int16_t{});
    case DType::Int32:
      return f(int32_t{});
    case DType::Int64:
      return f(int64_t{});
    case DType::UInt8:
      return f(uint8_t{});
    case DType::UInt16:
      return f(uint16_t{});
    case DType::UInt32:
      return f(uint32_t{});
    case DType::UInt64:
      return f(uint64_t{});
    case DType::Float32:
      return f(float{});
    case DType::Float64:
      return f(double{});
    case DType::Float16:
      if constexpr (WithStorage)
        return f(half{});
      else
        fail_storage_dtype(dt);
  }
  __builtin_unreachable();
}
}  // namespace detail

/// Calls f(T{}) with T the C++ type of `dt`, for the dtypes kernels compute in: a storage-only
/// dtype (float16) throws (the storage-dtype lowering gives kernels float32 instead).
template <class F>
decltype(auto) dispatch_dtype(DType dt, F&& f) {
  return detail::dispatch_dtype_impl<false>(dt, std::forward<F>(f));
}

/// dispatch_dtype with the storage dtypes too (T = half for float16): for code that moves,
/// converts or reads single elements (copies, casts, fills, printing), not arithmetic.
template <class F>
decltype(auto) dispatch_storage_dtype(DType dt, F&& f) {
  return detail::dispatch_dtype_impl<true>(dt, std::forward<F>(f));
}

}  // namespace hypatia
