// The elementwise modules the host harness compiles (cuda_host/write_kernels.cpp) and
// test_cuda_on_host.cpp runs: one per family of operand dtypes, so that each vector width of the
// contiguous kernel's vector loop (cuda_codegen.h: elem_vector_width) and a broadcast scalar,
// two outputs and float16 storage go through it.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "hypatia/backends/cuda/cuda_codegen.h"
#include "hypatia/ops/composite.h"
#include "hypatia/ops/elemwise.h"

namespace hypatia::testing {

inline std::vector<std::pair<std::string, cuda::ElemSpec>> host_elem_cases() {
  using S = CompositeStep;
  // float16 x, float32 y, z: tanh(cast{float32}(x) * y + z), then cast{float16} of it too.
  const CompositeProgram fused(
      3, DType::Float32,
      {S{ScalarOpKind::Cast, {0}, DType::Float32}, S{ScalarOpKind::Mul, {3, 1}}, S{ScalarOpKind::Add, {4, 2}},
       S{ScalarOpKind::Tanh, {5}}, S{ScalarOpKind::Cast, {6}, DType::Float16}},
      "host case", {DType::Float16, DType::Float32, DType::Float32});
  return {
      {"exp float32", cuda::elemwise_spec(ScalarOpKind::Exp, {DType::Float32}, DType::Float32)},
      {"add float32", cuda::elemwise_spec(ScalarOpKind::Add, {DType::Float32, DType::Float32}, DType::Float32)},
      {"mul float64", cuda::elemwise_spec(ScalarOpKind::Mul, {DType::Float64, DType::Float64}, DType::Float64)},
      {"lt float32", cuda::elemwise_spec(ScalarOpKind::Lt, {DType::Float32, DType::Float32}, DType::Bool)},
      {"add uint8", cuda::elemwise_spec(ScalarOpKind::Add, {DType::UInt8, DType::UInt8}, DType::UInt8)},
      {"copy float16", cuda::ElemSpec{{DType::Float16}, "", {"x0"}, {DType::Float16}}},
      {"switch float32",
       cuda::elemwise_spec(ScalarOpKind::Switch, {DType::Bool, DType::Float32, DType::Float32}, DType::Float32)},
      {"sub int64", cuda::elemwise_spec(ScalarOpKind::Sub, {DType::Int64, DType::Int64}, DType::Int64)},
      {"fused float16", cuda::composite_spec(fused, {7, 6})},
  };
}

}  // namespace hypatia::testing
