// Helpers the CUDA backend's kernel files share (internal to backends/cuda): launches, device
// outputs, the generated elementwise loop of a spec, device copies.
#pragma once
#include <cuda_runtime_api.h>

#include <array>
#include <atomic>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "hypatia/backends/cuda/cuda_codegen.h"
#include "hypatia/backends/cuda/cuda_memory.h"
#include "hypatia/backends/cuda/cuda_modules.h"
#include "hypatia/backends/registry.h"
#include "hypatia/core/ndarray.h"

namespace hypatia {

class Linalg;

inline constexpr std::string_view kCudaBackend = "cuda";

namespace cuda {

/// Threads per block of the generated kernels (their shared-memory trees assume it).
inline constexpr int kBlock = 256;
/// Blocks for a grid-stride loop over n elements (at most 32 per multiprocessor).
int grid_for(int64_t n);
/// Launches `k` with kBlock threads and one argument block (its bytes: `args`).
void launch(cudaKernel_t k, int grid, std::vector<int64_t>& args, const char* what);
/// Launches a kernel that checks its inputs on the device: its check block cleared before the
/// kernel and fetched after it (KernelTraits::device_checks).
void launch_checked(cudaKernel_t k, int grid, std::vector<int64_t>& args, const char* what, DeviceCheckBlock& check);
/// A kernel of the node's op that checks integer labels on the device (CheckLabels and the
/// cross-entropies): its module's kernel, its check block, and the CPU's IndexError for the first
/// label out of range (words: row, label, classes), named by the op.
class LabelCheckedKernel : public Kernel {
 public:
  void raise_device_errors() override;

 protected:
  LabelCheckedKernel(const Apply& node, const std::string& source, const char* name);
  /// launch_checked of the kernel on `grid` blocks.
  void launch(int grid, std::vector<int64_t>& args);
  const Op& op_;
  KernelRef kernel_;
  DeviceCheckBlock check_;
  DType labels_dtype_;  // (the labels are the node's last input; the kernel writes a label's bits)
};
/// The device function such kernels call, hyp_check_failed(err, a, b, c): the first failed check
/// wins the flag of the block at `err` and writes its three words (the host reads them after the
/// call has waited for the device).
inline constexpr const char* kCheckFailed =
    "__device__ void hyp_check_failed(unsigned long long err, long long a, long long b, long long c) {\n"
    "  long long* w = (long long*)err;\n"
    "  if (atomicCAS((unsigned long long*)w, 0ull, 1ull) == 0ull) { w[1] = a; w[2] = b; w[3] = c; }\n}\n";
/// The factory of kernel class K (constructed from the node).
template <class K>
KernelFactory kernel_factory() {
  return [](const Apply& node) -> std::unique_ptr<Kernel> { return std::make_unique<K>(node); };
}
/// Makes `cell` a C-contiguous device array of `shape` and `dtype`, reusing its buffer when it is
/// one already and nothing else holds it.
NDArray& prepare_device_output(NDArray& cell, const Shape& shape, DType dtype);

/// The two generated kernels of an elementwise spec (compiled, or found in the module caches):
/// the contiguous one requested when the module is made (built with the function's other
/// modules), the strided one, which takes NVRTC about twice as long (its index arithmetic), when
/// an operand first needs it (most graphs never do).
struct ElemModule {
  KernelRef contiguous;
  std::string what;
  /// The contiguous kernel's vector width (elem_vector_width; 1: no vector loop).
  int vector = 1;

  ElemModule() = default;
  ElemModule(const ElemSpec& spec, const std::string& label);
  /// Runs the loop over `shape` (every output of that shape; inputs of its ndim, broadcasting
  /// where a dim is 1): the contiguous kernel when every operand allows, else the strided one.
  void run(const Shape& shape, std::span<NDArray* const> outs, std::span<NDArray* const> ins) const;
  /// The strided kernel, compiled (or found in the caches) on first use; thread-safe.
  cudaKernel_t strided() const;

 private:
  std::string strided_source_;
  std::shared_ptr<std::atomic<cudaKernel_t>> strided_ = std::make_shared<std::atomic<cudaKernel_t>>(nullptr);
};

/// The argument block of an elementwise module's contiguous kernel (ElemModule::run, where every
/// output and input of `shape` is C-contiguous and the other inputs are single elements): the
/// vector loop is asked for (nd = `vector`) when every operand read or written whole is aligned to
/// its vector, else nd is 0.
void contiguous_elem_args(std::vector<int64_t>& args, const Shape& shape, std::span<NDArray* const> outs,
                          std::span<NDArray* const> ins, int vector);

/// The identity loop of a dtype (device copies).
const ElemModule& copy_module(DType dt);
/// A C-contiguous device copy of the device array `x` (any strides).
NDArray device_copy(const NDArray& x);
/// Copies the device array `src` into `dst` (same dtype and shape, else an InternalError; any
/// strides on either side).
void copy_into(NDArray& dst, const NDArray& src);
/// The output of a node that updates `target` (Gemm's z, Ger's A, an increment's x): the target
/// itself when the node is in place and the target can be written there (`layout_ok` too), else
/// a fresh C-contiguous array, holding a copy of the target when `keep_values`.
NDArray& update_output(NDArray& cell, const NDArray& target, bool in_place, bool layout_ok, bool keep_values);
/// The output cell of a node overwriting its input `input` (`target`): the target itself, or a
/// device copy when it cannot be written in place; ValueError naming `op` on a shape or dtype
/// mismatch (prepare_inplace_output's device form).
NDArray& prepare_device_inplace_output(NDArray& cell, const NDArray& target, const Shape& shape, DType dtype,
                                       const Op& op, int input);

/// The generated pooling kernels (cuda_pool_kernels.cpp): the forward pass and the two gradients,
/// for a dtype and a PoolParams mode (max, sum, average_inc_pad, average_exc_pad).
enum class PoolKernel { Forward, MaxGrad, AverageGrad, MaxGradGrad };
std::string pool_source(DType dt, const std::string& mode, PoolKernel which);
/// MRG31k3p's generator kernel for samples of dtype dt (cuda_random_kernels.cpp).
std::string mrg_source(DType dt);
/// MultinomialFromUniform's and ChoiceFromUniform's kernel (cuda_random_kernels.cpp:
/// hyp_from_uniform, a thread per row), for pvals, unis and output dtypes. Arguments: rows,
/// outcomes, n, then the C-contiguous pvals (renormalized in place without replacement), unis
/// and the output.
enum class FromUniform { Multinomial, ChoiceWithReplacement, ChoiceWithoutReplacement };
std::string from_uniform_source(DType pvals, DType unis, DType out, FromUniform which);
/// SortOp's and ArgSortOp's kernels for a dtype (cuda_sort_kernels.cpp): hyp_sort_init,
/// hyp_sort_pass (one step of sort_network.h's network) and hyp_sort_final.
std::string sort_source(DType dt);
/// ArgReduce's kernel (cuda_kernels.cpp: hyp_argreduce), a block per output, and its argument
/// block: the kept dims' shape and strides (outputs in C order), the reduced ones' (combined in C
/// order: index i of the output counts there), x and the int64 output.
std::string arg_reduce_source(DType dt, bool is_max);
std::vector<int64_t> arg_reduce_args(int64_t n_out, int64_t n, const std::vector<int64_t>& out_shape,
                                     const std::vector<int64_t>& out_strides, const std::vector<int64_t>& red_shape,
                                     const std::vector<int64_t>& red_strides, const void* x, void* out);
/// CrossentropyCategorical1Hot (grad false: out[i] = -log(coding[i, y_i])) or its gradient (out =
/// zeros but -g[i] / coding[i, y_i] at (i, y_i)) (cuda_nnet_kernels.cpp: hyp_xent1hot), the labels
/// checked as check_labels_source does (a bad row is left 0). Arguments: n, k, coding's strides,
/// the labels' and g's stride, then coding, labels, g, out and the check block.
std::string crossentropy_1hot_source(DType dt, DType label_dt, bool grad);
/// The statements of a block-per-row kernel (cuda_nnet_kernels.cpp: softmax's, the fused
/// cross-entropy's) that compute its row's statistics in the kernel's shared sv, si and sbad (256
/// each) with thread t: `m`, its first max of `value`(j) over j < a.cols, and `mi` where it is;
/// `nan_row` (a NaN, a +inf or no finite value); `rest`, the sum of `exp`(value(j) - m) over the
/// other elements. The kernel's own pass then writes exp(v - m) / (1 + rest) or v - m - log1p(rest).
std::string block_row_stats(DType dt, const std::string& value, const std::string& exp);
/// CrossentropySoftmax1HotWithBias (cuda_xent_kernels.cpp: hyp_xent_softmax, a block per row as
/// Softmax's): z = x + b, sm = softmax(z), nll = log1p(rest) - (z[label] - m), the label checked
/// (a bad row's nll left 0). Arguments: rows, cols, x's strides, b's stride (0: one for all), the
/// labels' stride, then x, b, labels, nll, sm and the check block.
std::string xent_softmax_source(DType dt, DType label_dt);
/// CrossentropySoftmax1HotWithBiasDx (hyp_xent_softmax_dx): out = dy[i] * (sm - one_hot), the
/// labels checked (a bad row left 0). Arguments: n, k, dy's stride (0: one for all), sm's
/// strides, the labels' stride, then dy, sm, labels, out and the check block.
std::string xent_softmax_dx_source(DType dt, DType label_dt);
/// How a generated kernel reads an index of dtype `dt` from `raw` as long long v (a uint64 above
/// 2^63 is out of range, not negative).
std::string read_index(DType dt);
/// CheckLabels' check of the labels (cuda_nnet_kernels.cpp: hyp_check_labels): each in [0, classes),
/// the first failure written to the check block (flag, row, label, classes).
std::string check_labels_source(DType label_dt);
/// Repeat by one count r along `axis` (cuda_nnet_kernels.cpp: hyp_repeat): output element (.., i,
/// ..) is input element (.., i / r, ..), copied as `itemsize` bytes (every dtype); its arguments.
/// `by_vector`: per input element along the axis its own count (the vector form of the arguments).
inline constexpr int kRepeatInlineCounts = 448;
std::string repeat_source(size_t itemsize, bool by_vector = false);
std::vector<int64_t> repeat_args(const NDArray& x, const NDArray& out, int axis, int64_t r);
/// The vector form: the counts' running sums in the block when they fit (kRepeatInlineCounts),
/// else at `ends_at` in device memory (repeat_ends of the counts).
std::vector<int64_t> repeat_args(const NDArray& x, const NDArray& out, int axis, const std::vector<int64_t>& counts,
                                 const void* ends_at);
/// ends[j] = counts[0] + ... + counts[j].
std::vector<int64_t> repeat_ends(const std::vector<int64_t>& counts);
/// CumOp's kernels (cuda_cum_kernels.cpp) for input dtype `in` and output `out`: hyp_cum_chunks
/// (a thread per chunk of a line: its sum, or with `write` its outputs from the chunk's starting
/// value) and hyp_cum_offsets (a thread per line: chunk sums to starting values, in place).
/// Arguments: outer, n, inner, chunk, m, mul, rev, write, then x, y and the chunk sums.
enum class CumKernel { Chunks, Offsets };
std::string cum_source(DType in, DType out, CumKernel which);
/// How the lines (outer x inner, n elements each) are cut: m chunks of `chunk` elements each
/// (the last shorter); m == 1 when there are lines enough for the device.
struct CumPlan {
  int64_t m = 1, chunk = 1;
};
CumPlan cum_plan(int64_t outer, int64_t n, int64_t inner);
/// A copy to the device of at most kMaxRecordedHostBytes from its argument block
/// (cuda_kernels.cpp: hyp_upload): a transfer a recording can hold.
std::string upload_source();
/// hyp_upload's argument block: the destination, the byte count and the bytes of `src` (n <=
/// kMaxRecordedHostBytes).
std::vector<int64_t> upload_args(void* dst, const void* src, size_t n);
/// The helper kernels of Linalg on the GPU (cuda_linalg_kernels.cpp), for a dtype: hyp_la_info
/// (cuSOLVER's devInfo into a check block), hyp_la_tri (a factor's other triangle zeroed, or NaN
/// throughout after a failure), hyp_la_sym (a triangle mirrored), hyp_la_diag (the first zero
/// on a diagonal) and hyp_la_det (the determinant from getrf's factors and pivots), on
/// column-major n x n matrices; Qr's R, Pinv's and Lstsq's scaling, rank and residuals, Expm's
/// double-precision helpers, the finite check before an SVD and Eig's complex-eigenvalue check.
std::string linalg_source(DType dt);
/// Whether libcusolver can be opened (cuda_linalg_kernels.cpp: without it Linalg's Cholesky,
/// Solve, Inverse and Det run on the CPU; a triangular Solve needs only cuBLAS); `why` receives
/// the reason when not.
bool cusolver_loadable(std::string* why);
/// Whether it has Xgeev (CUDA 12.6 and later: Eig on the GPU).
bool cusolver_has_geev();
/// Whether a Linalg call on inputs of these shapes has a matrix (an input, or Svd's and Qr's
/// square factors in full) of more elements than cuSOLVER's 32-bit interface counts (its sizes,
/// leading dimensions and workspace lengths are ints): the CUDA backend runs such a call on the
/// CPU's kernel, on host copies (Eig's Xgeev counts in 64 bits, and keeps the rule).
bool beyond_cusolver_counts(const Linalg& op, std::span<const Shape> inputs);
/// Eye's values (cuda_nnet_kernels.cpp: hyp_eye): ones where column - row == k.
std::string eye_source(DType dt);
/// ARange's values (cuda_nnet_kernels.cpp: hyp_arange), as kernel_util::arange_run writes them.
std::string arange_source(DType dt);
/// Advanced indexing on the leading axes by integer vectors (cuda_nnet_kernels.cpp: hyp_index):
/// the gather (out[l, rest] = x[i0[l], .., rest]) or the scatter-add of its gradient (x[i0[l], ..,
/// rest] += y[l, rest], atomically: repeated indices accumulate); each index
/// vector of its own dtype (`index_dtypes`, one per indexed axis), read on the device: negative
/// indices count from the end, one out of range is left out (the gather writes 0) and the first
/// such is written to the check block (DeviceCheckBlock: flag, axis, index, size).
enum class IndexKernel { Gather, ScatterAdd };
std::string index_source(DType dt, std::span<const DType> index_dtypes, IndexKernel which);
/// The index vectors of an indexing node (inputs `first`.. of `in`) as hyp_index reads them: their
/// common length L (numpy's broadcast of lengths: equal or 1; IndexError naming `op` otherwise,
/// and for more vectors than x has axes) and the vectors (their values are checked by the kernel).
struct IndexVectors {
  int64_t L = 0;
  int k = 0;
  std::vector<const NDArray*> idx;
};
IndexVectors index_vectors(const Op& op, const NDArray& x, std::span<NDArray* const> in, size_t first);
/// hyp_index's argument block for x indexed by `v`: `y` the gather's output, or the scatter's
/// values broadcast to (L, x.shape[k:]); `err` the check block's device words.
std::vector<int64_t> index_args(const NDArray& x, const IndexVectors& v, const NDArray* y, unsigned long long err);
/// A convolution for the im2col path (cuda_conv_gemm.cpp): batch n, channels c, filters o, groups
/// g, and per spatial axis (depth, rows, columns; a 2-d one has depth 1) the image, filter and
/// output sizes, the padding before the first element, stride and dilation; `flip` convolves.
struct ConvGemmShape {
  int64_t n = 0, c = 0, o = 0, g = 1;
  std::array<int64_t, 3> in{1, 1, 1}, k{1, 1, 1}, out{1, 1, 1}, pad{}, stride{1, 1, 1}, dil{1, 1, 1};
  bool flip = false;
};
/// The three passes: the forward convolution (in0 the image, in1 the filters), the input
/// gradient (in0 the filters, in1 the output gradient) and the filter gradient (in0 the image,
/// in1 the output gradient), every operand C-contiguous.
enum class ConvPass { Forward, Data, Filter };
/// The generated kernels of the im2col path, one module each (hyp_im2col, hyp_col2im: their
/// argument block is the image geometry, the chunk's image count nb, flip, the columns' batch and
/// row strides, the image and the columns; hyp_swap01: a, b, c, src, dst).
enum class ConvGemmKernel { Im2col, Col2im, Swap01 };
std::string conv_gemm_source(DType dt, ConvGemmKernel which);
/// A row-major strided-batched product: C_b (m x n) = op(A_b) op(B_b) + beta C_b for b < batch,
/// op(A) = A^T when ta (A then stored k x m), consecutive matrices `sa`, `sb`, `sc` elements apart.
struct StridedGemm {
  bool ta = false, tb = false;
  int64_t m = 0, n = 0, k = 0;
  const void* A = nullptr;
  int64_t lda = 0, sa = 0;
  const void* B = nullptr;
  int64_t ldb = 0, sb = 0;
  double beta = 0;
  void* C = nullptr;
  int64_t ldc = 0, sc = 0, batch = 1;
};
/// What conv_gemm_run asks of a device: launching a kernel of the module over `n` elements with
/// its argument block, and a product.
class ConvGemmDevice {
 public:
  virtual ~ConvGemmDevice() = default;
  virtual void launch(ConvGemmKernel which, int64_t n, std::vector<int64_t>& args) = 0;
  virtual void gemm(const StridedGemm& g) = 0;
};
/// The batch cut into chunks of `chunk` images whose column buffer (`col_elems`) and the weight
/// gradient's transposed output gradient (`tmp_elems`) fit `budget_bytes` (at least one image);
/// `direct`: the image is its own column matrix (no buffer). NotImplementedError for sizes beyond
/// cuBLAS's int.
struct ConvGemmWork {
  int64_t chunk = 1, col_elems = 0, tmp_elems = 0;
  bool direct = false;
};
ConvGemmWork conv_gemm_work(ConvPass pass, const ConvGemmShape& s, int64_t budget_bytes, size_t itemsize);
/// Runs one pass through `dev` on buffers of `itemsize`-byte elements (the device's or, in tests,
/// the host's): `col` and `tmp` as large as `w` says.
void conv_gemm_run(ConvPass pass, const ConvGemmShape& s, const ConvGemmWork& w, const void* in0, const void* in1,
                   void* out, void* col, void* tmp, size_t itemsize, ConvGemmDevice& dev);
/// The im2col path on the GPU for float32 or float64: its kernels compiled once, then each run
/// chunks the batch (128 MiB of columns) and queues the kernels and cuBLAS calls on stream().
class CudaConvGemm {
 public:
  explicit CudaConvGemm(DType dt);
  ~CudaConvGemm();
  void run(ConvPass pass, const ConvGemmShape& s, const NDArray& in0, const NDArray& in1, NDArray& out);

 private:
  std::unique_ptr<ConvGemmDevice> dev_;
  DType dt_;
};
/// Whether libcudnn can be opened (cuda_conv_kernels.cpp: the 2-d convolutions run through it);
/// `why` receives the reason when not.
bool cudnn_loadable(std::string* why);
/// Makes the recording cuDNN handle now if convolutions have run (before a capture starts).
void prepare_cudnn_recording();
/// Convolution passes run through cuDNN and through im2col since the process started, and the
/// shapes cuDNN refused (its legacy API's int sizes, a status of BAD_PARAM or NOT_SUPPORTED, or a
/// workspace the device has no room for: those run through im2col), with the last refusal.
struct ConvStats {
  int64_t cudnn = 0, im2col = 0, refused = 0;
  std::string last_refusal;
};
ConvStats conv_stats();

}  // namespace cuda
}  // namespace hypatia
