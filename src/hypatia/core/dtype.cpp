#include "hypatia/core/dtype.h"

#include <array>

#include "hypatia/core/error.h"

namespace hypatia {
namespace {
constexpr std::array<std::string_view, kNumDTypes> kNames = {
    "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float32", "float64", "float16"};

int bits(DType dt) { return static_cast<int>(itemsize(dt)) * 8; }

DType signed_of_bits(int b) {
  switch (b) {
    case 8:
      return DType::Int8;
    case 16:
      return DType::Int16;
    case 32:
      return DType::Int32;
    default:
      return DType::Int64;
  }
}
}  // namespace

std::string_view dtype_name(DType dt) { return kNames[static_cast<int>(dt)]; }

DType dtype_from_name(std::string_view name) {
  for (int i = 0; i < kNumDTypes; ++i)
    if (kNames[i] == name) return static_cast<DType>(i);
  if (name == "floatX") fail<TypeError>("dtype 'floatX' must be resolved through config first");
  fail<TypeError>("unknown dtype '", name,
                  "'; expected one of bool, int8..int64, uint8..uint64, float16, float32, float64");
}

DType promote_types(DType a, DType b) {
  if (a == b) return a;
  if (is_bool(a)) return b;
  if (is_bool(b)) return a;
  if (is_float(a) || is_float(b)) {
    if (is_float(a) && is_float(b)) return bits(a) >= bits(b) ? a : b;
    DType f = is_float(a) ? a : b;
    DType i = is_float(a) ? b : a;
    // numpy: float16 holds int8 and uint8 exactly, float32 int8/16 and uint8/16; wider ints need
    // float64.
    if (f == DType::Float16 && bits(i) <= 8) return DType::Float16;
    if (f != DType::Float64 && bits(i) <= 16) return DType::Float32;
    return DType::Float64;
  }
  bool sa = is_signed_int(a), sb = is_signed_int(b);
  if (sa == sb) return bits(a) >= bits(b) ? a : b;
  DType s = sa ? a : b;
  DType u = sa ? b : a;
  if (bits(s) > bits(u)) return s;
  if (bits(u) == 64) return DType::Float64;
  return signed_of_bits(bits(u) * 2);
}

void fail_storage_dtype(DType dt) {
  fail<TypeError>(dtype_name(dt), " is a storage dtype: kernels compute in float32 and this one was given ",
                  dtype_name(dt), " data (the storage-dtype lowering of function() should have cast it)");
}

bool can_cast_safely(DType from, DType to) { return promote_types(from, to) == to; }

DType float_upcast(DType dt) {
  if (is_float(dt)) return dt;
  if (is_bool(dt)) return DType::Float32;  // numpy: np.exp(bool) -> float16; we have no float16
  return bits(dt) <= 16 ? DType::Float32 : DType::Float64;
}

}  // namespace hypatia
