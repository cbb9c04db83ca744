// The built-in backends and the one explicit list of kernel families. A family registers its
// reference and CPU kernels.
#include "hypatia/backends/backend.h"
#include "hypatia/backends/cpu/composite_program.h"
#include "hypatia/backends/cpu/elemwise_inner.h"
#include "hypatia/backends/cpu/gemm_provider.h"

namespace hypatia {
namespace {

/// float16 arrays are stored as binary16 and computed in float32 (Theano's and numpy's rule).
constexpr rewrite::StorageDType kFloat16InFloat32{DType::Float16, DType::Float32};

void register_builtin_backends() {
  openblas_single_threaded();  // before any kernel (LAPACK included) runs
  // The test oracle: naive kernels, graphs run as written, nothing fused.
  register_backend(std::make_unique<Backend>(Backend::Description{.name = std::string(kReferenceBackend),
                                                                  .device = DeviceKind::Host,
                                                                  .default_mode = "NONE",
                                                                  .storage_dtypes = {kFloat16InFloat32}}));
  // The CPU: SIMD loops, the thread pool, BLAS; ops without a CPU kernel run their reference one.
  register_backend(std::make_unique<Backend>(Backend::Description{
      .name = std::string(kCpuBackend),
      .device = DeviceKind::Host,
      .fallback = std::string(kReferenceBackend),
      .checked_against = std::string(kReferenceBackend),
      .fusable =
          [](const Elemwise& op, DType compute) {
            // The tile programs load, round and store float16 themselves (float32 programs).
            if (op.scalar == ScalarOpKind::Cast)
              return compute == DType::Float32 && (op.cast_to == DType::Float16 || op.cast_to == DType::Float32);
            auto [fn, writes] = elemwise_inner_fn(op, compute);
            return fn != nullptr && writes == compute;
          },
      .max_fusion_inputs = TileProgram::kMaxInputs,
      .max_fusion_outputs = TileProgram::kMaxOutputs,
      .default_for_device = true,
      .storage_dtypes = {kFloat16InFloat32}}));
}

}  // namespace

void register_elemwise_kernels();
void register_shape_kernels();
void register_subtensor_kernels();
void register_reduce_kernels();
void register_nnet_kernels();
void register_conv_kernels();
void register_pool_kernels();
void register_blas_kernels();
void register_grad_kernels();
void register_composite_kernels();
void register_print_kernels();
void register_check_kernels();
void register_transfer_kernels();
void register_sort_kernels();
void register_linalg_kernels();
void register_ifelse_kernels();
void register_random_kernels();
void register_scan_kernels();
#ifdef HYPATIA_WITH_CUDA
void register_cuda_backend();
#endif

void register_all_kernels() {
  register_builtin_backends();
  register_elemwise_kernels();
  register_shape_kernels();
  register_subtensor_kernels();
  register_reduce_kernels();
  register_nnet_kernels();
  register_conv_kernels();
  register_pool_kernels();
  register_blas_kernels();
  register_grad_kernels();
  register_composite_kernels();
  register_print_kernels();
  register_check_kernels();
  register_transfer_kernels();
  register_sort_kernels();
  register_linalg_kernels();
  register_ifelse_kernels();
  register_random_kernels();
  register_scan_kernels();
#ifdef HYPATIA_WITH_CUDA
  // After the CPU kernels: it falls back to them, and borrows the reference views.
  register_cuda_backend();
#endif
}

}  // namespace hypatia
