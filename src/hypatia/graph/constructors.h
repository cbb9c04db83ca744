// Theano's symbolic-variable constructors: scalar .. tensor4 (dtype floatX unless given) and their
// dtype-prefixed forms: b (int8), w (int16), i (int32), l (int64), f (float32), d (float64).
#pragma once
#include <optional>
#include <string>

#include "hypatia/graph/graph.h"

namespace hypatia {

Var scalar(std::string name = "", std::optional<DType> dtype = std::nullopt);
Var vector(std::string name = "", std::optional<DType> dtype = std::nullopt);
Var row(std::string name = "", std::optional<DType> dtype = std::nullopt);
Var col(std::string name = "", std::optional<DType> dtype = std::nullopt);
Var matrix(std::string name = "", std::optional<DType> dtype = std::nullopt);
Var tensor3(std::string name = "", std::optional<DType> dtype = std::nullopt);
Var tensor4(std::string name = "", std::optional<DType> dtype = std::nullopt);
/// A variable of any rank and broadcastable pattern (Theano's TensorType(dtype, broadcastable)()).
Var tensor(DType dtype, std::vector<bool> broadcastable, std::string name = "");

#define HYPATIA_DECLARE_PREFIXED(prefix)      \
  Var prefix##scalar(std::string name = "");  \
  Var prefix##vector(std::string name = "");  \
  Var prefix##row(std::string name = "");     \
  Var prefix##col(std::string name = "");     \
  Var prefix##matrix(std::string name = "");  \
  Var prefix##tensor3(std::string name = ""); \
  Var prefix##tensor4(std::string name = "");
HYPATIA_DECLARE_PREFIXED(b)
HYPATIA_DECLARE_PREFIXED(w)
HYPATIA_DECLARE_PREFIXED(i)
HYPATIA_DECLARE_PREFIXED(l)
HYPATIA_DECLARE_PREFIXED(f)
HYPATIA_DECLARE_PREFIXED(d)
#undef HYPATIA_DECLARE_PREFIXED

}  // namespace hypatia
