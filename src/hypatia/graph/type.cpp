#include "hypatia/graph/type.h"

#include <sstream>

namespace hypatia {

std::string TensorType::str() const {
  std::ostringstream os;
  os << "TensorType(" << dtype_name(dtype) << ", ";
  const auto& b = broadcastable;
  if (b.empty())
    os << "scalar";
  else if (b.size() == 1)
    os << (b[0] ? "(True,)" : "vector");
  else if (b.size() == 2 && !b[0] && !b[1])
    os << "matrix";
  else if (b.size() == 2 && b[0] && !b[1])
    os << "row";
  else if (b.size() == 2 && !b[0] && b[1])
    os << "col";
  else {
    bool any = false;
    for (bool x : b) any |= x;
    if (!any)
      os << b.size() << "D";
    else {
      os << "(";
      for (size_t i = 0; i < b.size(); ++i) os << (i ? ", " : "") << (b[i] ? "True" : "False");
      os << ")";
    }
  }
  os << ")";
  return os.str();
}

std::string TensorType::check_value(const NDArray& v) const {
  std::ostringstream os;
  if (v.dtype() != dtype) {
    os << "expected dtype " << dtype_name(dtype) << ", got " << dtype_name(v.dtype());
    return os.str();
  }
  if (v.ndim() != ndim()) {
    os << "expected " << ndim() << " dimensions, got an array of shape " << v.shape().str();
    return os.str();
  }
  for (int i = 0; i < ndim(); ++i)
    if (broadcastable[i] && v.shape(i) != 1) {
      os << "dimension " << i << " is broadcastable (must have length 1) but the array has shape " << v.shape().str();
      return os.str();
    }
  return "";
}

TensorType TensorType::of_value(const NDArray& v) {
  std::vector<bool> bc(v.ndim());
  for (int i = 0; i < v.ndim(); ++i) bc[i] = v.shape(i) == 1;
  return {v.dtype(), bc};
}

TensorType scalar_type(DType dt) { return {dt, {}}; }
TensorType vector_type(DType dt) { return {dt, {false}}; }
TensorType row_type(DType dt) { return {dt, {true, false}}; }
TensorType col_type(DType dt) { return {dt, {false, true}}; }
TensorType matrix_type(DType dt) { return {dt, {false, false}}; }
TensorType tensor3_type(DType dt) { return {dt, {false, false, false}}; }
TensorType tensor4_type(DType dt) { return {dt, {false, false, false, false}}; }
TensorType tensor_type(DType dt, int ndim) { return {dt, std::vector<bool>(ndim, false)}; }

}  // namespace hypatia
