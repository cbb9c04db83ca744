#include "hypatia/graph/constructors.h"

#include "hypatia/core/config.h"

namespace hypatia {
namespace {
Var make(std::string name, std::optional<DType> dt, std::vector<bool> bc) {
  return variable(TensorType(dt.value_or(config().floatX), std::move(bc)), std::move(name));
}
}  // namespace

Var scalar(std::string name, std::optional<DType> dt) { return make(std::move(name), dt, {}); }
Var vector(std::string name, std::optional<DType> dt) { return make(std::move(name), dt, {false}); }
Var row(std::string name, std::optional<DType> dt) { return make(std::move(name), dt, {true, false}); }
Var col(std::string name, std::optional<DType> dt) { return make(std::move(name), dt, {false, true}); }
Var matrix(std::string name, std::optional<DType> dt) { return make(std::move(name), dt, {false, false}); }
Var tensor3(std::string name, std::optional<DType> dt) {
  return make(std::move(name), dt, std::vector<bool>(3, false));
}
Var tensor4(std::string name, std::optional<DType> dt) {
  return make(std::move(name), dt, std::vector<bool>(4, false));
}
Var tensor(DType dtype, std::vector<bool> broadcastable, std::string name) {
  return variable(TensorType(dtype, std::move(broadcastable)), std::move(name));
}

#define HYPATIA_DEFINE_PREFIXED(prefix, dt)                                      \
  Var prefix##scalar(std::string name) { return scalar(std::move(name), dt); }   \
  Var prefix##vector(std::string name) { return vector(std::move(name), dt); }   \
  Var prefix##row(std::string name) { return row(std::move(name), dt); }         \
  Var prefix##col(std::string name) { return col(std::move(name), dt); }         \
  Var prefix##matrix(std::string name) { return matrix(std::move(name), dt); }   \
  Var prefix##tensor3(std::string name) { return tensor3(std::move(name), dt); } \
  Var prefix##tensor4(std::string name) { return tensor4(std::move(name), dt); }
HYPATIA_DEFINE_PREFIXED(b, DType::Int8)
HYPATIA_DEFINE_PREFIXED(w, DType::Int16)
HYPATIA_DEFINE_PREFIXED(i, DType::Int32)
HYPATIA_DEFINE_PREFIXED(l, DType::Int64)
HYPATIA_DEFINE_PREFIXED(f, DType::Float32)
HYPATIA_DEFINE_PREFIXED(d, DType::Float64)
#undef HYPATIA_DEFINE_PREFIXED

}  // namespace hypatia
