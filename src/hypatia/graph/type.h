// TensorType: dtype + ndim + broadcastable pattern.
#pragma once
#include <string>
#include <vector>

#include "hypatia/core/dtype.h"
#include "hypatia/core/ndarray.h"

namespace hypatia {

/// The static type of a symbolic tensor. A broadcastable dim always has length 1.
struct TensorType {
  DType dtype = DType::Float64;
  std::vector<bool> broadcastable;

  TensorType() = default;
  TensorType(DType dt, std::vector<bool> bc) : dtype(dt), broadcastable(std::move(bc)) {}
  int ndim() const { return static_cast<int>(broadcastable.size()); }
  bool operator==(const TensorType& o) const = default;
  /// Theano's spelling: "TensorType(float32, matrix)", "TensorType(float64, row)", "TensorType(int64, 3D)".
  std::string str() const;
  /// Empty when `v` is a valid value of this type, else what is wrong (dtype, ndim, or a
  /// broadcastable dim whose length is not 1).
  std::string check_value(const NDArray& v) const;
  /// Type of a constant holding `v`: broadcastable where a dim has length 1.
  static TensorType of_value(const NDArray& v);
};

TensorType scalar_type(DType dt);
TensorType vector_type(DType dt);
TensorType row_type(DType dt);
TensorType col_type(DType dt);
TensorType matrix_type(DType dt);
TensorType tensor3_type(DType dt);
TensorType tensor4_type(DType dt);
/// A type with ndim dims, none broadcastable.
TensorType tensor_type(DType dt, int ndim);

}  // namespace hypatia
