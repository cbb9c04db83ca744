// The CUDA kernel generator (backends/cuda/cuda_codegen.h): every generated module compiles with
// NVRTC, which needs no GPU, so these run in CI. (Their results on the host: test_cuda_on_host.cpp;
// on a GPU: test_cuda.cpp.)
#include <cstring>
#include <string>
#include <vector>

#include "cuda_host/elem_cases.h"
#include "hypatia/backends/cuda/cuda_codegen.h"
#include "hypatia/backends/cuda/cuda_kernel_util.h"
#include "hypatia/backends/cuda/cuda_modules.h"
#include "hypatia/ops/composite.h"
#include "hypatia/ops/reduce.h"
#include "test_cuda_util.h"

namespace hypatia {
namespace {

using cuda::numbered;
using testing::error_of;

TEST(CudaCodegen, EveryScalarRowCompilesForEveryDtypeItSupports) {
  REQUIRE_NVRTC();
  // One module: every (row, dtype) elementwise loop, each in a namespace of its own, the casts
  // between every pair of dtypes, and the reductions.
  const std::vector<DType> dtypes = {DType::Bool,   DType::Int8,    DType::Int16,  DType::Int32,
                                     DType::Int64,  DType::UInt8,   DType::UInt16, DType::UInt32,
                                     DType::UInt64, DType::Float32, DType::Float64};
  std::string src = cuda::table_prefix();
  int n = 0;
  auto add = [&](const cuda::ElemSpec& spec) {
    src += numbered("namespace m", n) + " {\n" + cuda::elementwise_source(spec, numbered("k", n)) + "}\n";
    ++n;
  };
  for (int k = 0; k < kNumScalarOps; ++k) {
    const auto kind = static_cast<ScalarOpKind>(k);
    if (kind == ScalarOpKind::Cast) continue;
    for (DType dt : dtypes) {
      const int arity = scalar_op_arity(kind);
      std::vector<DType> in(arity, dt);
      if (scalar_op_info(kind).rule == ScalarDTypeRule::Select) in[0] = DType::Bool;
      DType out;
      try {
        out = elemwise_output_dtype(kind, in);
      } catch (const Error&) {
        continue;  // not defined on this dtype (bitwise ops on floats, neg of bool, ...)
      }
      add(cuda::elemwise_spec(kind, in, out));
    }
  }
  for (DType from : dtypes)
    for (DType to : dtypes) add(cuda::elemwise_spec(ScalarOpKind::Cast, {from}, to));
  add(cuda::elemwise_spec(ScalarOpKind::Cast, {DType::Float16}, DType::Float32));
  add(cuda::elemwise_spec(ScalarOpKind::Cast, {DType::Float32}, DType::Float16));
  for (ReduceKind k :
       {ReduceKind::Sum, ReduceKind::Prod, ReduceKind::Max, ReduceKind::Min, ReduceKind::All, ReduceKind::Any})
    for (DType dt : dtypes)
      src += cuda::reduce_source(k, cuda::ElemSpec{{dt}, "", {"x0"}, {dt}}, reduce_default_dtype(k, dt),
                                 numbered("r", n++));
  // The front end checks every instantiation (code generation for ~1,700 kernels would take
  // minutes; the GPU tests compile what they run).
  EXPECT_NO_THROW(cuda::check_source(src)) << n << " loops";
  // A deliberate error is reported with NVRTC's log and the generated code.
  const std::string msg = error_of<InternalError>([&] { cuda::check_source(src + "int broken = ;\n"); });
  EXPECT_NE(msg.find("NVRTC could not compile a generated kernel"), std::string::npos) << msg.substr(0, 300);
}

TEST(CudaCodegen, PoolingKernelsCompileForEveryModeAndDtype) {
  REQUIRE_NVRTC();
  std::string src = cuda::table_prefix();
  int n = 0;
  for (DType dt : {DType::Float32, DType::Float64})
    for (const char* mode : {"max", "sum", "average_inc_pad", "average_exc_pad"})
      for (cuda::PoolKernel k : {cuda::PoolKernel::Forward, cuda::PoolKernel::MaxGrad, cuda::PoolKernel::AverageGrad,
                                 cuda::PoolKernel::MaxGradGrad}) {
        const bool max_only = k == cuda::PoolKernel::MaxGrad || k == cuda::PoolKernel::MaxGradGrad;
        if (max_only != (std::string(mode) == "max") && k != cuda::PoolKernel::Forward) continue;
        // One module: each kernel renamed, its argument struct and helper too.
        std::string one = cuda::pool_source(dt, mode, k);
        const std::string tag = numbered("_", n++);
        for (const char* name : {"hyp_pool", "PoolArgs", "window"}) {
          for (size_t at = one.find(name); at != std::string::npos; at = one.find(name, at + 1))
            one.insert(at + std::strlen(name), tag);
        }
        src += one;
      }
  cuda::check_source(src);
  EXPECT_EQ(n, 18);
}

TEST(CudaCodegen, SortKernelsCompileForEveryDtypeTheySort) {
  REQUIRE_NVRTC();
  for (int d = 0; d < kNumDTypes; ++d) {
    const DType dt = static_cast<DType>(d);
    if (dt == DType::Float16) continue;  // sorted on the CPU
    EXPECT_NO_THROW(cuda::check_source(cuda::table_prefix() + cuda::sort_source(dt))) << dtype_name(dt);
  }
}

TEST(CudaCodegen, IndexingLabelShapeAndArgReduceKernelsCompileForEveryDtypeTheyTake) {
  REQUIRE_NVRTC();
  // (as the kernels compile them: without the table prefix, which they do not need)
  int compiled = 0;
  for (int d = 0; d < kNumDTypes; ++d) {
    const DType dt = static_cast<DType>(d);
    if (dt == DType::Float16) continue;  // these nodes run on the CPU
    EXPECT_NO_THROW(cuda::check_source(cuda::arange_source(dt))) << dtype_name(dt);
    const DType cum_out = reduce_default_dtype(ReduceKind::Sum, dt);
    for (auto k : {cuda::CumKernel::Chunks, cuda::CumKernel::Offsets})
      EXPECT_NO_THROW(cuda::check_source(cuda::cum_source(dt, cum_out, k))) << dtype_name(dt);
    EXPECT_NO_THROW(cuda::check_source(cuda::eye_source(dt))) << dtype_name(dt);
    if (dt == DType::Float32 || dt == DType::Float64) {
      EXPECT_NO_THROW(cuda::check_source(cuda::linalg_source(dt))) << dtype_name(dt);
    }
    for (bool is_max : {true, false})
      EXPECT_NO_THROW(cuda::check_source(cuda::arg_reduce_source(dt, is_max))) << dtype_name(dt);
    if (is_integer(dt)) {
      EXPECT_NO_THROW(cuda::check_source(cuda::check_labels_source(dt))) << dtype_name(dt);
      for (DType f : {DType::Float32, DType::Float64})
        for (bool g : {false, true})
          EXPECT_NO_THROW(cuda::check_source(cuda::crossentropy_1hot_source(f, dt, g))) << dtype_name(dt);
      const std::vector<DType> idx = {dt, DType::Int64};
      EXPECT_NO_THROW(cuda::check_source(cuda::index_source(DType::Float32, idx, cuda::IndexKernel::ScatterAdd)))
          << dtype_name(dt);
    }
    const std::vector<DType> idx = {DType::Int32};
    EXPECT_NO_THROW(cuda::check_source(cuda::index_source(dt, idx, cuda::IndexKernel::Gather))) << dtype_name(dt);
    ++compiled;
  }
  EXPECT_EQ(compiled, kNumDTypes - 1);
  for (size_t size : {1, 2, 4, 8})
    for (bool by_vector : {false, true})
      EXPECT_NO_THROW(cuda::check_source(cuda::repeat_source(size, by_vector))) << size;
  const std::vector<DType> f64 = {DType::UInt64};
  EXPECT_NO_THROW(cuda::check_source(cuda::index_source(DType::Float64, f64, cuda::IndexKernel::ScatterAdd)));
  for (DType dt : {DType::Float32, DType::Float64})
    for (auto k : {cuda::FromUniform::Multinomial, cuda::FromUniform::ChoiceWithReplacement,
                   cuda::FromUniform::ChoiceWithoutReplacement})
      for (DType o : {DType::Int64, DType::Int32, DType::Float64})
        EXPECT_NO_THROW(cuda::check_source(cuda::from_uniform_source(dt, dt, o, k))) << dtype_name(dt);
  for (DType dt : {DType::Float32, DType::Float64})
    for (auto k : {cuda::ConvGemmKernel::Im2col, cuda::ConvGemmKernel::Col2im, cuda::ConvGemmKernel::Swap01})
      EXPECT_NO_THROW(cuda::check_source(cuda::conv_gemm_source(dt, k))) << dtype_name(dt);
}

TEST(CudaCodegen, TheMrgGeneratorCompilesFromTheCpuKernelsText) {
  REQUIRE_NVRTC();
  for (DType dt : {DType::Float32, DType::Float64}) cuda::check_source(cuda::mrg_source(dt));
  // The step is the CPU's own (backends/mrg_generate.h between its markers), not a second copy.
  const std::string src = cuda::mrg_source(DType::Float32);
  EXPECT_NE(src.find("inline int32_t next(int32_t* x)"), std::string::npos);
  EXPECT_NE(src.find("MULT2 = 21069"), std::string::npos);
}

TEST(CudaCodegen, AFusedProgramWithFloat16StorageCompiles) {
  REQUIRE_NVRTC();
  using S = CompositeStep;
  // float16 x, float32 y: cast{float32}(x) * y + 1 -> tanh -> cast{float16}.
  CompositeProgram prog(
      3, DType::Float32,
      {S{ScalarOpKind::Cast, {0}, DType::Float32}, S{ScalarOpKind::Mul, {3, 1}}, S{ScalarOpKind::Add, {4, 2}},
       S{ScalarOpKind::Tanh, {5}}, S{ScalarOpKind::Cast, {6}, DType::Float16}},
      "test", {DType::Float16, DType::Float32, DType::Float32});
  const cuda::ElemSpec spec = cuda::composite_spec(prog, {7, 6});
  EXPECT_EQ(spec.out, (std::vector<DType>{DType::Float16, DType::Float32}));
  const std::string src = cuda::elementwise_source(spec, "fused");
  EXPECT_NE(src.find("op_tanh(v5)"), std::string::npos) << src;
  EXPECT_NE(src.find("convert<hypatia::half>(v6)"), std::string::npos) << src;
  EXPECT_NO_THROW(cuda::compile_cubin(cuda::table_prefix() + src, 90));
}

TEST(CudaCodegen, TheVectorLoopsOfEveryOperandFamilyCompileToCode) {
  REQUIRE_NVRTC();
  // Compiled to a cubin (not a syntax check): the vector types of bool, bytes, float16, float32,
  // 64-bit values, a broadcast-capable select and the fused float16 chain (the host harness's
  // cases, which run there).
  std::string src = cuda::table_prefix();
  int n = 0;
  for (const auto& [label, spec] : hypatia::testing::host_elem_cases()) {
    EXPECT_GT(cuda::elem_vector_width(spec), 1) << label;
    src += numbered("namespace m", n) + " {\n" +
           cuda::elementwise_source(spec, numbered("k", n), cuda::ElemKernels::Contiguous) + "}\n";
    ++n;
  }
  EXPECT_NO_THROW(cuda::compile_cubin(src, 90));
}

}  // namespace
}  // namespace hypatia
