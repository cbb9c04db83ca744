// Run-time compiled kernels of the CUDA backend (internal to backends/cuda).
//
// Elementwise and fused kernels are generated as CUDA C++ from the same scalar-op table the CPU
// uses: each row's Fn text of ops/scalar_ops.def, scalar_math from ops/scalar_functors.h and
// core/half.h, compiled by NVRTC behind a small `std` shim (nvrtc_std.cuh) with `std::` renamed.
// No functor is written twice. The sources become kernels through cuda_modules.h (NVRTC and the
// module caches).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "hypatia/core/dtype.h"

namespace hypatia {
struct CompositeProgram;
enum class ScalarOpKind : uint8_t;
enum class ReduceKind : uint8_t;
}  // namespace hypatia

namespace hypatia::cuda {

/// `prefix` followed by the number: the generators' names ("v3", "x0"). (gcc 12 warns, wrongly,
/// of overlapping memcpy in `"v" + std::to_string(i)`.)
std::string numbered(const char* prefix, long long i);

/// The text every generated module starts with: the shim, core/half.h, scalar_math and one
/// device function per row of the table, `op_<name>` (op_add, op_tanh, op_switch, ...).
const std::string& table_prefix();
/// The NVRTC shim alone (nvrtc_std.cuh: hstd's limits, bit_cast and math overloads), for kernels
/// that call no row of the table.
const char* std_prefix();
/// The text MRG31k3p's generator kernels start with: the shim and backends/mrg_generate.h's
/// shared part (hypatia::mrg::next and to_unit), the code the CPU kernels run.
std::string mrg_prefix();
/// The CUDA C++ type that stores `dt` ("float", "long long", "bool", "hypatia::half").
const char* cuda_type(DType dt);

/// An elementwise loop to generate: inputs x0.. of their storage dtypes, the `body` (statements
/// that read x0.. and define values), and one expression per output, converted to the output's
/// dtype (scalar_math::convert) when stored.
struct ElemSpec {
  std::vector<DType> in;
  std::string body;
  std::vector<std::string> out_expr;
  std::vector<DType> out;
};

/// The head of a generated kernel: `extern "C" __global__ void <name>(const <args> a) {` and a
/// grid-stride loop of `var` over [0, count); the caller writes the body and closes the loop and
/// the kernel ("  }\n}\n").
std::string grid_stride_head(const std::string& name, const std::string& args, const std::string& count,
                             const char* var = "t");

/// The spec of Elemwise{k} on inputs of `in` dtypes writing `out` (compute dtype as the CPU's).
ElemSpec elemwise_spec(ScalarOpKind k, const std::vector<DType>& in, DType out);
/// The spec of a fused program writing the values `outputs` (a Composite: its last step).
ElemSpec composite_spec(const CompositeProgram& prog, const std::vector<int>& outputs);
/// Whether a step of kind `k` computing in `compute` can be generated (every row but Cast, whose
/// steps convert to and from float16 only; the result must be of the compute dtype).
bool generatable(ScalarOpKind k, DType compute);

/// Which kernels of an elementwise spec a module holds.
enum class ElemKernels : uint8_t { Both, Contiguous, Strided };
/// The source of a module with the kernels `which` for `spec`: `<name>_c` (the output and every
/// input C-contiguous or a broadcast scalar) and `<name>_s` (any strides, broadcasting by
/// stride 0). Each takes one ElemArgs (below) by value. Where elem_vector_width(spec) is above 1,
/// `<name>_c` has a vector loop first, taken when the launch's argument block has nd (unused by
/// the contiguous kernel otherwise) set to that width: each thread then reads and writes that many
/// consecutive elements of each operand as one aligned vector (up to 16 bytes of the widest dtype), a
/// broadcast scalar once; the elements past the last whole vector go through the scalar loop.
/// (`vector`: the width, where not elem_vector_width(spec); 1: no vector loop, the kernel as before
/// it existed, for comparisons.)
std::string elementwise_source(const ElemSpec& spec, const std::string& name, ElemKernels which = ElemKernels::Both,
                               int vector = 0);
/// The elements per thread of the contiguous kernel's vector loop: 16 bytes of the widest operand
/// dtype, at most 8 (float64 2, float32 4, float16 8; bytes and bools 8, in 8-byte vectors), halved while V times the
/// body's statements and operands exceeds kElemVectorWork (a long fused body: 1, no vector loop).
int elem_vector_width(const ElemSpec& spec);
inline constexpr int kElemVectorWork = 40;

/// The source of a kernel `name` reducing the spec's one value (of dtype spec.out[0]) with `kind`
/// (Sum, Prod, Max, Min, All, Any) into `out`: one block per output element, its threads over the
/// reduced elements, then a tree in shared memory. Sums and products accumulate in float64 for
/// floats and in wrapping 64-bit integers otherwise (as the CPU). Arguments: n_out, n_red,
/// nd_out, nd_red, out_shape[kMaxDims], red_shape[kMaxDims], then the input pointers, each
/// input's byte strides over the kept dims, each input's over the reduced dims, and the output
/// pointer (C-contiguous).
std::string reduce_source(ReduceKind kind, const ElemSpec& spec, DType out, const std::string& name);

/// The kernels' argument block, all 8-byte fields (the generated struct has the same layout):
/// n, nd, shape[kMaxDims], then per output its pointer and byte strides, per input likewise.
/// The contiguous kernel reads only n, the pointers, and stride[0] of each input (0: a scalar
/// read by every element, 1: contiguous).
inline constexpr int kMaxDims = 12;
/// Appends `v` to an argument block as one of its fixed arrays: kMaxDims entries, `fill` after
/// v's own (v has at most kMaxDims).
void append_dims(std::vector<int64_t>& args, const std::vector<int64_t>& v, int64_t fill);
std::vector<int64_t> elem_args(int64_t n, const std::vector<int64_t>& shape, const std::vector<void*>& outs,
                               const std::vector<std::vector<int64_t>>& out_strides,
                               const std::vector<const void*>& ins,
                               const std::vector<std::vector<int64_t>>& in_strides);

}  // namespace hypatia::cuda
