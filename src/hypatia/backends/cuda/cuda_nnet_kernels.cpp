// CUDA kernels of a classifier's training step beyond products and elementwise work: softmax
// and log_softmax over rows, Alloc, Join, and advanced indexing by integer vectors on the leading axes
// (x[rows, labels] and its gradient, the scatter-add). Index arrays are read on the host
// (KernelTraits::host_inputs), checked there as the CPU checks them (negative indices count from
// the end; out of range is an IndexError naming the axis), and sent to the device in one copy.
#include <algorithm>
#include <bit>

#include "hypatia/backends/backend.h"
#include "hypatia/backends/cuda/cuda_api.h"
#include "hypatia/backends/cuda/cuda_kernel_util.h"
#include "hypatia/backends/cuda/cuda_memory.h"
#include "hypatia/backends/reference/nnet_common.h"
#include "hypatia/backends/shape_kernels_impl.h"
#include "hypatia/core/error.h"
#include "hypatia/ops/nnet.h"
#include "hypatia/ops/shape.h"
#include "hypatia/ops/subtensor.h"

namespace hypatia::cuda {
namespace {

int64_t ptr(const void* p) { return static_cast<int64_t>(reinterpret_cast<uintptr_t>(p)); }

bool f32_or_f64(DType dt) { return dt == DType::Float32 || dt == DType::Float64; }

// ---- softmax and log_softmax along the last axis of a matrix or vector

/// One block per row: the row's statistics (block_row_stats), then softmax = exp(x - max) / (1 +
/// rest) or log_softmax = (x - max) - log1p(rest), the CPU kernel's stable form. A row with a
/// NaN, a +inf or no finite logit is NaN throughout.
std::string softmax_source(DType dt, bool log) {
  const std::string T = cuda_type(dt);
  std::string s = "struct SmArgs { long long rows, cols, s0, s1; unsigned long long in, out; };\n";
  s += "extern \"C\" __global__ void hyp_softmax(const SmArgs a) {\n";
  s += "  __shared__ " + T + " sv[256];\n  __shared__ long long si[256];\n  __shared__ int sbad[256];\n";
  s += "  const int t = threadIdx.x;\n";
  s += "  for (long long r = blockIdx.x; r < a.rows; r += gridDim.x) {\n";
  s += "    const char* row = (const char*)a.in + r * a.s0;\n";
  s += "#define HYP_V(j) (*(const " + T + "*)(row + (j) * a.s1))\n";
  s += block_row_stats(dt, "HYP_V", "op_exp");
  s += "    " + T + "* out = (" + T + "*)a.out + r * a.cols;\n";
  s += "    for (long long j = t; j < a.cols; j += blockDim.x) {\n";
  s += "      const " + T + " d = HYP_V(j) - m;\n";
  s += std::string("      out[j] = nan_row ? hstd::numeric_limits<") + T +
       ">::quiet_NaN() : " + (log ? "d - op_log1p(rest)" : "op_exp(d) / (" + T + "(1) + rest)") + ";\n";
  s += "    }\n#undef HYP_V\n    __syncthreads();\n  }\n}\n";
  return s;
}

class SoftmaxKernel final : public Kernel {
 public:
  explicit SoftmaxKernel(const Apply& node) : op_(static_cast<const Softmax&>(*node.op)) {
    kernel_ = request_kernel(table_prefix() + softmax_source(node.inputs[0]->type.dtype, op_.log), "hyp_softmax");
  }
  void run(const KernelArgs& a) override {
    const NDArray& x = *a.in[0];
    NDArray& out = prepare_device_output(*a.out[0], x.shape(), x.dtype());
    const int64_t cols = x.ndim() == 0 ? 1 : x.shape(x.ndim() - 1);
    const int64_t rows = x.ndim() == 2 ? x.shape(0) : 1;
    if (rows == 0 || cols == 0) return;
    const int64_t s1 = x.ndim() == 0 ? 0 : x.strides()[x.ndim() - 1];
    const int64_t s0 = x.ndim() == 2 ? x.strides()[0] : 0;
    std::vector<int64_t> args = {rows, cols, s0, s1, ptr(x.raw()), ptr(out.raw())};
    launch(kernel_, static_cast<int>(std::min<int64_t>(rows, 65535)), args, op_.name().c_str());
  }

 private:
  const Softmax& op_;
  KernelRef kernel_;
};

bool softmax_accepts(const Apply& node) {
  const auto& op = static_cast<const Softmax&>(*node.op);
  const int nd = node.inputs[0]->type.ndim();
  return f32_or_f64(node.inputs[0]->type.dtype) && (nd == 1 || nd == 2) && op.axis == nd - 1;
}

// ---- Alloc

class AllocKernel final : public Kernel {
 public:
  explicit AllocKernel(const Apply& node) : value_bc_(node.inputs[0]->type.broadcastable) {}
  void run(const KernelArgs& a) override {
    const Shape shape = kernel_util::alloc_shape(a, value_bc_);
    const NDArray& v = *a.in[0];
    copy_into(prepare_device_output(*a.out[0], shape, v.dtype()), v.broadcast_to(shape));
  }

 private:
  std::vector<bool> value_bc_;
};

// ---- ARange: the range checked on the host (its three 0-d inputs are host inputs), the values
// written on the device as the CPU writes them

class ARangeKernel final : public Kernel {
 public:
  explicit ARangeKernel(const Apply& node) : op_(static_cast<const ARange&>(*node.op)) {
    kernel_ = request_kernel(arange_source(op_.dtype), "hyp_arange");
  }
  void run(const KernelArgs& a) override {
    const kernel_util::ArangePlan p = kernel_util::arange_plan(op_, a);
    NDArray& out = prepare_device_output(*a.out[0], Shape{p.n}, op_.dtype);
    if (p.n == 0) return;
    std::vector<int64_t> args = {
        p.n,           p.ints, p.start_i, p.step_i, std::bit_cast<int64_t>(p.start_d), std::bit_cast<int64_t>(p.step_d),
        ptr(out.raw())};
    launch(kernel_, grid_for(p.n), args, op_.name().c_str());
  }

 private:
  const ARange& op_;
  KernelRef kernel_;
};

// ---- Eye: the shape read on the host (its three 0-d inputs), each element written on the device

class EyeKernel final : public Kernel {
 public:
  explicit EyeKernel(const Apply& node) : op_(static_cast<const Eye&>(*node.op)) {
    kernel_ = request_kernel(eye_source(op_.dtype), "hyp_eye");
  }
  void run(const KernelArgs& a) override {
    const kernel_util::EyeShape e = kernel_util::eye_shape(op_, a);
    NDArray& out = prepare_device_output(*a.out[0], Shape{e.n, e.m}, op_.dtype);
    if (out.size() == 0) return;
    std::vector<int64_t> args = {e.n, e.m, e.k, ptr(out.raw())};
    launch(kernel_, grid_for(out.size()), args, op_.name().c_str());
  }

 private:
  const Eye& op_;
  KernelRef kernel_;
};

// ---- Tile: the output seen as (repetition, length) pairs of axes, written from the input
// broadcast along each repetition axis by the strided copy

class TileKernel final : public Kernel {
 public:
  explicit TileKernel(const Apply& node) : op_(static_cast<const Tile&>(*node.op)) {}
  void run(const KernelArgs& a) override {
    const NDArray& x = *a.in[0];
    int off = 0;
    const Shape shape = kernel_util::tile_output_shape(op_, x, &off);
    NDArray& out = prepare_device_output(*a.out[0], shape, x.dtype());
    if (out.size() == 0) return;
    Shape pairs;
    Strides out_st, x_st;
    for (int i = 0; i < shape.size(); ++i) {
      const int64_t len = i < off ? 1 : x.shape(i - off), st = out.strides()[i];
      pairs.push_back(op_.reps[i]);
      out_st.push_back(len * st);
      x_st.push_back(0);
      pairs.push_back(len);
      out_st.push_back(st);
      x_st.push_back(i < off ? 0 : x.strides()[i - off]);
    }
    NDArray dst = out.as_strided(pairs, out_st);
    copy_into(dst, x.as_strided(pairs, x_st));
  }

 private:
  const Tile& op_;
};

// ---- Repeat by one count (Theano's upsampling by x.repeat(2, axis)): each output element copied
// from input element (.., i / r, ..) along the axis; by a vector of counts (read on the host), from
// the input element whose copies cover i (a binary search of the counts' running sums, which
// travel in the launch's argument block: a recording replays them; past kRepeatInlineCounts
// entries they are copied to the device, and such a call is not recorded)

class RepeatKernel final : public Kernel {
 public:
  explicit RepeatKernel(const Apply& node)
      : op_(static_cast<const Repeat&>(*node.op)), by_vector_(node.inputs[1]->type.ndim() == 1) {
    kernel_ = request_kernel(repeat_source(itemsize(node.inputs[0]->type.dtype), by_vector_), "hyp_repeat");
  }
  void run(const KernelArgs& a) override {
    Shape shape;
    const std::vector<int64_t> counts = kernel_util::repeat_counts(op_, a, &shape);
    NDArray& out = prepare_device_output(*a.out[0], shape, a.in[0]->dtype());
    if (out.size() == 0) return;
    if (!by_vector_) {
      std::vector<int64_t> args = repeat_args(*a.in[0], out, op_.axis, counts.at(0));
      launch(kernel_, grid_for(out.size()), args, op_.name().c_str());
      return;
    }
    NDArray ends;
    if (counts.size() > static_cast<size_t>(kRepeatInlineCounts))
      ends = NDArray::from_vector<int64_t>(repeat_ends(counts)).to_device(Device::cuda());
    std::vector<int64_t> args = repeat_args(*a.in[0], out, op_.axis, counts, ends.valid() ? ends.raw() : nullptr);
    launch(kernel_, grid_for(out.size()), args, op_.name().c_str());
  }

 private:
  const Repeat& op_;
  bool by_vector_;
  KernelRef kernel_;
};

// ---- CheckLabels: the shapes checked on the host, the labels on the device; the output is the
// labels themselves (a view), as on the CPU

class CheckLabelsKernel final : public LabelCheckedKernel {
 public:
  explicit CheckLabelsKernel(const Apply& node)
      : LabelCheckedKernel(node, check_labels_source(node.inputs[1]->type.dtype), "hyp_check_labels") {}
  void run(const KernelArgs& a) override {
    const NDArray &coding = *a.in[0], &labels = *a.in[1];
    nnet_detail::check_label_shapes(op_.name().c_str(), coding, labels);
    *a.out[0] = labels;
    if (labels.size() == 0) return;
    std::vector<int64_t> args = {labels.shape(0), coding.shape(1), labels.strides()[0], ptr(labels.raw()),
                                 static_cast<int64_t>(check_.device())};
    launch(grid_for(labels.shape(0)), args);
  }
};

// ---- CrossentropyCategorical1Hot and its gradient (a cross-entropy whose coding is not a softmax
// the stability rewrite sees through, e.g. clipped probabilities): the labels checked on the
// device as CheckLabels checks them, the shapes on the host

class Crossentropy1HotKernel final : public LabelCheckedKernel {
 public:
  Crossentropy1HotKernel(const Apply& node, bool grad)
      : LabelCheckedKernel(node,
                           crossentropy_1hot_source(node.inputs[grad ? 1 : 0]->type.dtype,
                                                    node.inputs[grad ? 2 : 1]->type.dtype, grad),
                           "hyp_xent1hot"),
        grad_(grad) {}
  void run(const KernelArgs& a) override {
    const size_t first = grad_ ? 1 : 0;
    const NDArray &coding = *a.in[first], &labels = *a.in[first + 1];
    const char* who = grad_ ? "CrossentropyCategorical1HotGrad" : "CrossentropyCategorical1Hot";
    nnet_detail::check_label_shapes(who, coding, labels);
    const NDArray* g = grad_ ? a.in[0] : nullptr;
    if (g && (g->ndim() != 1 || g->shape(0) != coding.shape(0)))
      fail<ValueError>(who, ": expected g of shape (", coding.shape(0), ",), got ", g->describe());
    NDArray& out = prepare_device_output(*a.out[0], grad_ ? coding.shape() : Shape{coding.shape(0)}, coding.dtype());
    if (out.size() == 0) return;
    std::vector<int64_t> args = {coding.shape(0),
                                 coding.shape(1),
                                 coding.strides()[0],
                                 coding.strides()[1],
                                 labels.strides()[0],
                                 g ? g->strides()[0] : 0,
                                 ptr(coding.raw()),
                                 ptr(labels.raw()),
                                 g ? ptr(g->raw()) : 0,
                                 ptr(out.raw()),
                                 static_cast<int64_t>(check_.device())};
    launch(grid_for(out.size()), args);
  }

 private:
  bool grad_;
};

// ---- Join: each input copied into its slice of the output (the CPU's checks and messages)

class JoinKernel final : public Kernel {
 public:
  explicit JoinKernel(const Apply& node) : op_(static_cast<const Join&>(*node.op)) {}
  void run(const KernelArgs& a) override {
    DType dt;
    const Shape shape = kernel_util::join_output_shape(op_.name(), op_.axis, a, &dt);
    NDArray& out = prepare_device_output(*a.out[0], shape, dt);
    int64_t off = 0;
    for (NDArray* x : a.in) {
      const int64_t n = x->shape(op_.axis);
      if (n > 0 && x->size() > 0) {
        NDArray dst = out.slice(op_.axis, off, off + n, 1);
        copy_into(dst, *x);
      }
      off += n;
    }
  }

 private:
  const Join& op_;
};

/// Inputs of the output's dtype (no casts), a numeric one.
bool join_accepts(const Apply& node) {
  const DType dt = node.output_ptr(0)->type.dtype;
  if (dt != DType::Float32 && dt != DType::Float64 && dt != DType::Int32 && dt != DType::Int64) return false;
  for (const Var& v : node.inputs)
    if (v->type.dtype != dt) return false;
  return true;
}

// ---- advanced indexing by integer vectors on the leading axes

std::vector<DType> index_dtypes(const Apply& node, size_t first) {
  std::vector<DType> r;
  for (size_t i = first; i < node.inputs.size(); ++i) r.push_back(node.inputs[i]->type.dtype);
  return r;
}

/// The check block's words as IndexError: "index 12 is out of bounds for axis 0 with size 10", as
/// the CPU's check says it; the block is cleared before the kernel's next launch.
void raise_index_error(const Op& op, DeviceCheckBlock& b) {
  long long w[DeviceCheckBlock::kWords];
  if (!b.take_failure(w)) return;
  const long long axis = w[1], index = w[2], size = w[3];
  fail<IndexError>(op.name(), ": index ", index, " is out of bounds for axis ", axis, " with size ", size,
                   " (found on the device)");
}

class AdvancedSubtensorKernel final : public Kernel {
 public:
  explicit AdvancedSubtensorKernel(const Apply& node) : op_(*node.op) {
    kernel_ = request_kernel(index_source(node.inputs[0]->type.dtype, index_dtypes(node, 1), IndexKernel::Gather),
                             "hyp_index");
  }
  void run(const KernelArgs& a) override {
    const NDArray& x = *a.in[0];
    const IndexVectors g = index_vectors(op_, x, a.in, 1);
    Shape shape{g.L};
    for (int d = g.k; d < x.ndim(); ++d) shape.push_back(x.shape(d));
    NDArray& out = prepare_device_output(*a.out[0], shape, x.dtype());
    if (out.size() == 0) return;
    std::vector<int64_t> args = index_args(x, g, &out, check_.device());
    launch_checked(kernel_, grid_for(out.size()), args, op_.name().c_str(), check_);
  }
  void raise_device_errors() override { raise_index_error(op_, check_); }

 private:
  const Op& op_;
  KernelRef kernel_;
  DeviceCheckBlock check_;
};

class AdvancedIncSubtensorKernel final : public Kernel {
 public:
  explicit AdvancedIncSubtensorKernel(const Apply& node) : op_(static_cast<const IncSubtensor&>(*node.op)) {
    kernel_ = request_kernel(index_source(node.inputs[0]->type.dtype, index_dtypes(node, 2), IndexKernel::ScatterAdd),
                             "hyp_index");
  }
  void run(const KernelArgs& a) override {
    const NDArray& x = *a.in[0];
    const NDArray& y = *a.in[1];
    const IndexVectors g = index_vectors(op_, x, a.in, 2);
    NDArray* out = op_.inplace ? &prepare_device_inplace_output(*a.out[0], x, x.shape(), x.dtype(), op_, 0)
                               : &update_output(*a.out[0], x, false, true, true);
    // y broadcasts to the indexed region (L, x.shape[k:]) as numpy's right-aligned rule.
    Shape region{g.L};
    for (int d = g.k; d < x.ndim(); ++d) region.push_back(x.shape(d));
    if (y.ndim() > region.size())
      fail<ValueError>(op_.name(), ": cannot broadcast the values ", y.describe(), " to the indexed region ",
                       region.str());
    Shape ys;
    Strides yst;
    for (int d = 0; d < region.size(); ++d) {
      const int yd = d - (region.size() - y.ndim());
      const int64_t n = yd < 0 ? 1 : y.shape(yd);
      if (n != region[d] && n != 1)
        fail<ValueError>(op_.name(), ": cannot broadcast the values ", y.describe(), " to the indexed region ",
                         region.str());
      ys.push_back(region[d]);
      yst.push_back(yd < 0 || n == 1 ? 0 : y.strides()[yd]);
    }
    if (region.prod() == 0) return;
    const NDArray yb = y.as_strided(ys, yst);
    std::vector<int64_t> args = index_args(*out, g, &yb, check_.device());
    launch_checked(kernel_, grid_for(region.prod()), args, op_.name().c_str(), check_);
  }
  void raise_device_errors() override { raise_index_error(op_, check_); }

 private:
  const IncSubtensor& op_;
  KernelRef kernel_;
  DeviceCheckBlock check_;
};

std::vector<int> from(size_t first, size_t n) {
  std::vector<int> r;
  for (size_t i = first; i < n; ++i) r.push_back(static_cast<int>(i));
  return r;
}

}  // namespace

std::string block_row_stats(DType dt, const std::string& value, const std::string& exp) {
  const std::string T = cuda_type(dt), inf = "hstd::numeric_limits<" + T + ">::infinity()";
  // The first max and whether the row has a NaN: per thread, then a tree in shared memory.
  std::string s = "    " + T + " m = -" + inf + ";\n    long long mi = a.cols;\n    int bad = 0;\n";
  s += "    for (long long j = t; j < a.cols; j += blockDim.x) {\n";
  s += "      const " + T + " v = " + value + "(j);\n";
  s += "      if (v != v) bad = 1;\n      if (v > m || (mi == a.cols && v == m)) { m = v; mi = j; }\n    }\n";
  s += "    sv[t] = m; si[t] = mi; sbad[t] = bad;\n    __syncthreads();\n";
  s += "    for (int w = blockDim.x / 2; w > 0; w >>= 1) {\n      if (t < w) {\n";
  s += "        sbad[t] |= sbad[t + w];\n";
  s += "        if (sv[t + w] > sv[t] || (sv[t + w] == sv[t] && si[t + w] < si[t])) { sv[t] = sv[t + w]; si[t] = "
       "si[t + w]; }\n";
  s += "      }\n      __syncthreads();\n    }\n";
  s += "    m = sv[0]; mi = si[0];\n";
  s += "    const bool nan_row = sbad[0] || m == " + inf + " || m == -" + inf + ";\n";
  s += "    __syncthreads();\n";
  // rest: the sum of exp(v - m) over the elements but the max.
  s += "    " + T + " rest = 0;\n";
  s += "    for (long long j = t; j < a.cols; j += blockDim.x)\n";
  s += "      if (j != mi) rest += " + exp + "(" + value + "(j) - m);\n";
  s += "    sv[t] = rest;\n    __syncthreads();\n";
  s += "    for (int w = blockDim.x / 2; w > 0; w >>= 1) {\n      if (t < w) sv[t] += sv[t + w];\n"
       "      __syncthreads();\n    }\n";
  s += "    rest = sv[0];\n";
  return s;
}

LabelCheckedKernel::LabelCheckedKernel(const Apply& node, const std::string& source, const char* name)
    : op_(*node.op), kernel_(request_kernel(source, name)), labels_dtype_(node.inputs.back()->type.dtype) {}

void LabelCheckedKernel::launch(int grid, std::vector<int64_t>& args) {
  launch_checked(kernel_, grid, args, op_.name().c_str(), check_);
}

void LabelCheckedKernel::raise_device_errors() {
  long long w[DeviceCheckBlock::kWords];
  if (check_.take_failure(w)) nnet_detail::label_out_of_range(op_.name().c_str(), w[2], labels_dtype_, w[1], w[3]);
}

IndexVectors index_vectors(const Op& op, const NDArray& x, std::span<NDArray* const> in, size_t first) {
  IndexVectors g;
  g.k = static_cast<int>(in.size() - first);
  if (g.k > x.ndim()) fail<IndexError>(op.name(), ": too many indices for an array of shape ", x.shape().str());
  g.L = 1;
  for (int d = 0; d < g.k; ++d) {
    const int64_t n = in[first + d]->shape(0);
    if (n != 1 && g.L != 1 && n != g.L)
      fail<IndexError>(op.name(), ": shape mismatch: indexing arrays could not be broadcast together with shapes ",
                       in[first]->shape().str(), " ", in[first + d]->shape().str());
    if (n != 1) g.L = n;
    g.idx.push_back(in[first + d]);
  }
  for (int d = 0; d < g.k; ++d)
    if (in[first + d]->shape(0) == 0) g.L = 0;
  return g;
}

std::vector<int64_t> index_args(const NDArray& x, const IndexVectors& g, const NDArray* y, unsigned long long err) {
  std::vector<int64_t> rest_shape, xst, rst, yst, n, ist;
  int64_t nrest = 1;
  for (int d = g.k; d < x.ndim(); ++d) {
    rest_shape.push_back(x.shape(d));
    rst.push_back(x.strides()[d]);
    yst.push_back(y ? y->strides()[1 + d - g.k] : 0);
    nrest *= x.shape(d);
  }
  for (int d = 0; d < g.k; ++d) {
    xst.push_back(x.strides()[d]);
    n.push_back(x.shape(d));
    ist.push_back(g.idx[d]->shape(0) == 1 ? 0 : g.idx[d]->strides()[0]);
  }
  std::vector<int64_t> a = {g.L, nrest, static_cast<int64_t>(rest_shape.size())};
  append_dims(a, rest_shape, 1);
  append_dims(a, xst, 0);
  append_dims(a, rst, 0);
  a.push_back(y ? y->strides()[0] : 0);
  append_dims(a, yst, 0);
  append_dims(a, n, 0);
  append_dims(a, ist, 0);
  a.push_back(ptr(x.raw()));
  a.push_back(y ? ptr(y->raw()) : 0);
  a.push_back(static_cast<int64_t>(err));
  std::vector<int64_t> ip;
  for (const NDArray* i : g.idx) ip.push_back(ptr(i->raw()));
  append_dims(a, ip, 0);
  return a;
}

std::string arange_source(DType dt) {
  const std::string T = cuda_type(dt);
  std::string s =
      "struct ArArgs { long long n, ints, start_i, step_i; double start_d, step_d; unsigned long long out; };\n";
  s += grid_stride_head("hyp_arange", "ArArgs", "a.n");
  s += "    ((" + T + "*)a.out)[t] = a.ints ? (" + T +
       ")(long long)((unsigned long long)a.start_i + (unsigned long long)t * (unsigned long long)a.step_i) : (" + T +
       ")(a.start_d + (double)t * a.step_d);\n";
  s += "  }\n}\n";
  return s;
}

std::string read_index(DType dt) {
  return is_unsigned_int(dt) ? "      const long long v = raw > 0x7fffffffffffffffull ? -1 : (long long)raw;\n"
                             : "      const long long v = (long long)raw;\n";
}

std::string repeat_source(size_t itemsize, bool by_vector) {
  const char* T = itemsize == 1   ? "unsigned char"
                  : itemsize == 2 ? "unsigned short"
                  : itemsize == 4 ? "unsigned int"
                                  : "unsigned long long";
  const std::string D = std::to_string(kMaxDims);
  std::string s = "struct RpArgs { long long n, nd, axis, r, shape[" + D + "], ost[" + D + "], xst[" + D +
                  "]; unsigned long long x, out";
  // By a vector of counts: their running sums (ends[j]: the output index after input j's
  // copies), in the argument block when they fit, else in device memory at ends_at.
  if (by_vector) s += "; long long count, ends_at, ends[" + std::to_string(kRepeatInlineCounts) + "]";
  s += "; };\n";
  s += grid_stride_head("hyp_repeat", "RpArgs", "a.n");
  if (by_vector)
    s += "    const long long* ends = a.count <= " + std::to_string(kRepeatInlineCounts) +
         " ? a.ends : (const long long*)a.ends_at;\n";
  s += "    long long q = t, xoff = 0, ooff = 0;\n";
  s += "    for (int d = (int)a.nd - 1; d >= 0; --d) {\n      const long long c = q % a.shape[d];\n"
       "      q /= a.shape[d];\n      ooff += c * a.ost[d];\n";
  if (by_vector) {
    // The input index along the axis: the first j whose copies end after c.
    s += "      long long j = c;\n      if (d == a.axis) {\n        long long lo = 0, hi = a.count - 1;\n"
         "        while (lo < hi) {\n          const long long mid = (lo + hi) / 2;\n"
         "          if (ends[mid] > c) hi = mid; else lo = mid + 1;\n        }\n        j = lo;\n      }\n"
         "      xoff += j * a.xst[d];\n";
  } else {
    s += "      xoff += (d == a.axis ? c / a.r : c) * a.xst[d];\n";
  }
  s += "    }\n";
  s += std::string("    *(") + T + "*)((char*)a.out + ooff) = *(const " + T + "*)((const char*)a.x + xoff);\n  }\n}\n";
  return s;
}

std::vector<int64_t> repeat_args(const NDArray& x, const NDArray& out, int axis, int64_t r) {
  std::vector<int64_t> a = {out.size(), out.ndim(), axis, r};
  for (int d = 0; d < kMaxDims; ++d) a.push_back(d < out.ndim() ? out.shape(d) : 1);
  for (const NDArray* v : {&out, &x})
    for (int d = 0; d < kMaxDims; ++d) a.push_back(d < v->ndim() ? v->strides()[d] : 0);
  a.push_back(ptr(x.raw()));
  a.push_back(ptr(out.raw()));
  return a;
}

std::vector<int64_t> repeat_args(const NDArray& x, const NDArray& out, int axis, const std::vector<int64_t>& counts,
                                 const void* ends_at) {
  std::vector<int64_t> a = repeat_args(x, out, axis, 1);
  a.push_back(static_cast<int64_t>(counts.size()));
  a.push_back(ptr(ends_at));
  std::vector<int64_t> ends = repeat_ends(counts);
  if (ends.size() > static_cast<size_t>(kRepeatInlineCounts)) ends.clear();
  ends.resize(static_cast<size_t>(kRepeatInlineCounts), 0);
  a.insert(a.end(), ends.begin(), ends.end());
  return a;
}

std::vector<int64_t> repeat_ends(const std::vector<int64_t>& counts) {
  std::vector<int64_t> ends(counts.size());
  int64_t total = 0;
  for (size_t j = 0; j < counts.size(); ++j) ends[j] = total += counts[j];
  return ends;
}

std::string eye_source(DType dt) {
  const std::string T = cuda_type(dt);
  std::string s = "struct EyeArgs { long long n, m, k; unsigned long long out; };\n";
  s += grid_stride_head("hyp_eye", "EyeArgs", "a.n * a.m");
  s += "    ((" + T + "*)a.out)[t] = t % a.m - t / a.m == a.k ? (" + T + ")1 : (" + T + ")0;\n  }\n}\n";
  return s;
}

std::string crossentropy_1hot_source(DType dt, DType label_dt, bool grad) {
  const std::string T = cuda_type(dt), I = cuda_type(label_dt);
  std::string s =
      "struct XeArgs { long long n, k, cs0, cs1, ls, gs; unsigned long long coding, labels, g, out, err; };\n";
  s += kCheckFailed;
  s += grid_stride_head("hyp_xent1hot", "XeArgs", grad ? "a.n * a.k" : "a.n");
  s += grad ? "    const long long row = t / a.k, j = t % a.k;\n" : "    const long long row = t;\n";
  s += "    const " + I + " raw = *(const " + I + "*)((const char*)a.labels + row * a.ls);\n";
  s += read_index(label_dt);
  s += "    if (v < 0 || v >= a.k) {\n";
  s += grad ? "      if (j == 0) hyp_check_failed(a.err, row, (long long)raw, a.k);\n      ((" + T + "*)a.out)[t] = (" +
                  T + ")0;\n      continue;\n    }\n"
            : "      hyp_check_failed(a.err, row, (long long)raw, a.k);\n      ((" + T + "*)a.out)[t] = (" + T +
                  ")0;\n      continue;\n    }\n";
  s += "    const " + T + " c = *(const " + T + "*)((const char*)a.coding + row * a.cs0 + v * a.cs1);\n";
  if (grad)
    s += "    ((" + T + "*)a.out)[t] = j == v ? (" + T + ")(-*(const " + T +
         "*)((const char*)a.g + row * a.gs) / c) : (" + T + ")0;\n";
  else
    s += "    ((" + T + "*)a.out)[t] = (" + T + ")(-log((double)c));\n";
  s += "  }\n}\n";
  return s;
}

std::string check_labels_source(DType label_dt) {
  const std::string I = cuda_type(label_dt);
  std::string s = "struct ClArgs { long long n, classes, st; unsigned long long labels, err; };\n";
  s += kCheckFailed;
  s += grid_stride_head("hyp_check_labels", "ClArgs", "a.n");
  s += "    {\n      const " + I + " raw = *(const " + I + "*)((const char*)a.labels + t * a.st);\n";
  s += read_index(label_dt);
  s += "      if (v < 0 || v >= a.classes) hyp_check_failed(a.err, t, (long long)raw, a.classes);\n    }\n  }\n}\n";
  return s;
}

std::string index_source(DType dt, std::span<const DType> index_dtypes, IndexKernel which) {
  const std::string T = cuda_type(dt), D = std::to_string(kMaxDims);
  std::string s = "struct IxArgs {\n  long long L, nrest, nd_rest, rest_shape[" + D + "], xst[" + D + "], rst[" + D +
                  "], yst0, yst[" + D + "], n[" + D + "], ist[" + D + "];\n  unsigned long long x, y, err, ip[" + D +
                  "];\n};\n";
  s += kCheckFailed;
  s += grid_stride_head("hyp_index", "IxArgs", "a.L * a.nrest");
  s += "    const long long l = t / a.nrest;\n";
  s += "    long long off = 0;\n    bool ok = true;\n";
  // Each index read as its own dtype, negative ones counting from the end (numpy's rule).
  for (size_t d = 0; d < index_dtypes.size(); ++d) {
    const std::string I = cuda_type(index_dtypes[d]), k = std::to_string(d);
    s += "    {\n      const " + I + " raw = *(const " + I + "*)((const char*)a.ip[" + k + "] + l * a.ist[" + k +
         "]);\n";
    s += read_index(index_dtypes[d]);
    s += is_unsigned_int(index_dtypes[d]) ? "      const long long w = v;\n"
                                          : "      const long long w = v < 0 ? v + a.n[" + k + "] : v;\n";
    s += "      if (w < 0 || w >= a.n[" + k + "]) {\n";
    s += "        if (t % a.nrest == 0) hyp_check_failed(a.err, " + k + ", v, a.n[" + k +
         "]);\n        ok = false;\n      } else {\n        off += w * a.xst[" + k + "];\n      }\n    }\n";
  }
  s += "    long long r = t % a.nrest, yoff = l * a.yst0;\n";
  s += "    for (int d = (int)a.nd_rest - 1; d >= 0; --d) {\n      const long long c = r % a.rest_shape[d];\n"
       "      r /= a.rest_shape[d];\n      off += c * a.rst[d];\n      yoff += c * a.yst[d];\n    }\n";
  if (which == IndexKernel::ScatterAdd)
    s += "    if (ok) atomicAdd((" + T + "*)((char*)a.x + off), *(const " + T + "*)((const char*)a.y + yoff));\n";
  else
    s += "    *(" + T + "*)((char*)a.y + yoff) = ok ? *(const " + T + "*)((const char*)a.x + off) : (" + T + ")0;\n";
  s += "  }\n}\n";
  return s;
}

void register_cuda_nnet_kernels() {
  const std::string_view b = kCudaBackend;
  register_kernel(
      b, typeid(Softmax),
      [](const Apply& node) -> std::unique_ptr<Kernel> { return std::make_unique<SoftmaxKernel>(node); },
      KernelTraits{.accepts = softmax_accepts, .recordable = true});
  // Alloc: the value on the device (a constant's copy is made once), the shape entries on the host.
  register_kernel(
      b, typeid(Alloc),
      [](const Apply& node) -> std::unique_ptr<Kernel> { return std::make_unique<AllocKernel>(node); },
      KernelTraits{.accepts = [](const Apply& node) { return node.inputs[0]->type.dtype != DType::Float16; },
                   .host_inputs = from(1, 1 + kMaxNdim),
                   .recordable = true});
  // The cross-entropy of a coding the stability rewrite does not see through, and its gradient.
  auto xent_accepts = [](size_t first) {
    return [first](const Apply& node) {
      return f32_or_f64(node.inputs[first]->type.dtype) && is_integer(node.inputs[first + 1]->type.dtype) &&
             (first == 0 || node.inputs[0]->type.dtype == node.inputs[1]->type.dtype);
    };
  };
  register_kernel(
      b, typeid(CrossentropyCategorical1Hot),
      [](const Apply& node) -> std::unique_ptr<Kernel> {
        return std::make_unique<Crossentropy1HotKernel>(node, false);
      },
      KernelTraits{.accepts = xent_accepts(0), .recordable = true, .device_checks = true});
  register_kernel(
      b, typeid(CrossentropyCategorical1HotGrad),
      [](const Apply& node) -> std::unique_ptr<Kernel> { return std::make_unique<Crossentropy1HotKernel>(node, true); },
      KernelTraits{.accepts = xent_accepts(1), .recordable = true, .device_checks = true});
  register_kernel(
      b, typeid(CheckLabels),
      [](const Apply& node) -> std::unique_ptr<Kernel> { return std::make_unique<CheckLabelsKernel>(node); },
      KernelTraits{.accepts = [](const Apply& node) { return is_integer(node.inputs[1]->type.dtype); },
                   .recordable = true,
                   .device_checks = true});
  // Eye: n, m and k read on the host. Tile: a strided copy (at most 6 axes: 12 as pairs).
  register_kernel(
      b, typeid(Eye), [](const Apply& node) -> std::unique_ptr<Kernel> { return std::make_unique<EyeKernel>(node); },
      KernelTraits{
          .accepts = [](const Apply& node) { return static_cast<const Eye&>(*node.op).dtype != DType::Float16; },
          .host_inputs = {0, 1, 2},
          .recordable = true});
  register_kernel(
      b, typeid(Tile), [](const Apply& node) -> std::unique_ptr<Kernel> { return std::make_unique<TileKernel>(node); },
      KernelTraits{.accepts =
                       [](const Apply& node) {
                         return node.inputs[0]->type.dtype != DType::Float16 &&
                                2 * static_cast<const Tile&>(*node.op).reps.size() <= static_cast<size_t>(kMaxDims);
                       },
                   .recordable = true});
  // Repeat: one count for every element or a vector of counts (read on the host), up to 12 axes.
  register_kernel(
      b, typeid(Repeat),
      [](const Apply& node) -> std::unique_ptr<Kernel> { return std::make_unique<RepeatKernel>(node); },
      KernelTraits{.accepts = [](const Apply& node) { return node.inputs[0]->type.ndim() <= kMaxDims; },
                   .host_inputs = {1},
                   .recordable = true});
  // Split: views of the input (the reference kernel's), the sizes read on the host.
  register_kernel(
      b, typeid(Split),
      [](const Apply& node) -> std::unique_ptr<Kernel> { return get_backend(kReferenceBackend).make_kernel(node); },
      KernelTraits{.host_inputs = {1}, .recordable = true});
  // ARange: start, stop and step read on the host (a recording is keyed by their values).
  register_kernel(
      b, typeid(ARange),
      [](const Apply& node) -> std::unique_ptr<Kernel> { return std::make_unique<ARangeKernel>(node); },
      KernelTraits{
          .accepts = [](const Apply& node) { return static_cast<const ARange&>(*node.op).dtype != DType::Float16; },
          .host_inputs = {0, 1, 2},
          .recordable = true});
  register_kernel(
      b, typeid(Join), [](const Apply& node) -> std::unique_ptr<Kernel> { return std::make_unique<JoinKernel>(node); },
      KernelTraits{.accepts = join_accepts, .recordable = true});
  // Index vectors on the device, their values checked there (KernelTraits::device_checks).
  register_kernel(
      b, typeid(AdvancedSubtensor),
      [](const Apply& node) -> std::unique_ptr<Kernel> { return std::make_unique<AdvancedSubtensorKernel>(node); },
      KernelTraits{.accepts =
                       [](const Apply& node) {
                         const auto& op = static_cast<const AdvancedSubtensor&>(*node.op);
                         return node.inputs[0]->type.dtype != DType::Float16 &&
                                indexes_by_leading_vectors(node, op.spec, 1);
                       },
                   .recordable = true,
                   .device_checks = true});
  register_kernel(
      b, typeid(IncSubtensor),
      [](const Apply& node) -> std::unique_ptr<Kernel> { return std::make_unique<AdvancedIncSubtensorKernel>(node); },
      KernelTraits{.accepts =
                       [](const Apply& node) {
                         const auto& op = static_cast<const IncSubtensor&>(*node.op);
                         return op.advanced && !op.set_instead_of_inc && f32_or_f64(node.inputs[0]->type.dtype) &&
                                node.inputs[1]->type.dtype == node.inputs[0]->type.dtype &&
                                indexes_by_leading_vectors(node, op.spec, 2);
                       },
                   .recordable = true,
                   .device_checks = true});
}

}  // namespace hypatia::cuda
