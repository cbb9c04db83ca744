// The CUDA backend: its registration and its kernels. Elementwise and fused programs are
// generated from the scalar-op table and compiled by NVRTC (cuda_codegen.h), reductions by the
// same generator, products go to cuBLAS (cuda_blas_kernels.cpp), views (DimShuffle, Rebroadcast, basic Subtensor,
// Reshape of contiguous data) are the reference kernels' own (they touch no element); softmax,
// Alloc and advanced indexing are in cuda_nnet_kernels.cpp. Ops without a kernel here run on the
// CPU backend, its fallback: the placement step of function() moves values across with
// transfers (compile/placement.cpp).
#include <algorithm>
#include <cstring>
#include <mutex>
#include <unordered_map>

#include "hypatia/backends/backend.h"
#include "hypatia/backends/cuda/cuda_api.h"
#include "hypatia/backends/cuda/cuda_codegen.h"
#include "hypatia/backends/cuda/cuda_kernel_util.h"
#include "hypatia/backends/cuda/cuda_memory.h"
#include "hypatia/backends/cuda/cuda_modules.h"
#include "hypatia/backends/reference/reduce_common.h"
#include "hypatia/core/error.h"
#include "hypatia/ops/checks.h"
#include "hypatia/ops/composite.h"
#include "hypatia/ops/elemwise.h"
#include "hypatia/ops/reduce.h"
#include "hypatia/ops/shape.h"
#include "hypatia/ops/subtensor.h"
#include "hypatia/ops/transfer.h"

namespace hypatia {

namespace cuda {

int grid_for(int64_t n) {
  const int64_t blocks = (n + kBlock - 1) / kBlock;
  const int64_t cap = static_cast<int64_t>(std::max(sm_count(), 1)) * 32;
  return static_cast<int>(std::max<int64_t>(1, std::min(blocks, cap)));
}

void launch(cudaKernel_t k, int grid, std::vector<int64_t>& args, const char* what) {
  void* params[] = {args.data()};
  cuda::launch(k, grid, kBlock, params, what);
}

void launch_checked(cudaKernel_t k, int grid, std::vector<int64_t>& args, const char* what, DeviceCheckBlock& check) {
  check.clear();
  launch(k, grid, args, what);
  check.fetch();
}

NDArray& prepare_device_output(NDArray& cell, const Shape& shape, DType dtype) {
  if (cell.valid() && !cell.on_host() && cell.unique() && cell.writeable() && cell.dtype() == dtype &&
      cell.shape() == shape && cell.is_c_contiguous() && cell.offset() == 0)
    return cell;
  cell = NDArray::empty(shape, dtype, Device::cuda());
  return cell;
}

// ---- elementwise launches

ElemModule::ElemModule(const ElemSpec& spec, const std::string& label)
    : what(label),
      vector(elem_vector_width(spec)),
      strided_source_(table_prefix() + elementwise_source(spec, "hyp_elem", ElemKernels::Strided)) {
  contiguous =
      request_kernel(table_prefix() + elementwise_source(spec, "hyp_elem", ElemKernels::Contiguous), "hyp_elem_c");
}

void contiguous_elem_args(std::vector<int64_t>& args, const Shape& shape, std::span<NDArray* const> outs,
                          std::span<NDArray* const> ins, int vector) {
  const size_t no = outs.size(), ni = ins.size();
  args.assign(2 + kMaxDims + (no + ni) * (1 + kMaxDims), 0);
  args[0] = shape.prod();
  size_t p = 2 + kMaxDims;
  for (NDArray* o : outs) args[p++] = static_cast<int64_t>(reinterpret_cast<uintptr_t>(o->raw()));
  p += no * kMaxDims;
  for (const NDArray* x : ins) args[p++] = static_cast<int64_t>(reinterpret_cast<uintptr_t>(x->raw()));
  for (size_t j = 0; j < ni; ++j) args[p + j * kMaxDims] = ins[j]->shape() == shape ? 1 : 0;
  // The vector loop when every operand read or written whole starts on a vector's boundary
  // (buffers do: 256 bytes; a view may not).
  bool aligned = vector > 1;
  auto on_boundary = [&](const NDArray& x) {
    return reinterpret_cast<uintptr_t>(x.raw()) % (static_cast<uintptr_t>(vector) * itemsize(x.dtype())) == 0;
  };
  for (NDArray* o : outs) aligned = aligned && on_boundary(*o);
  for (const NDArray* x : ins) aligned = aligned && (x->shape() != shape || on_boundary(*x));
  args[1] = aligned ? vector : 0;
}

cudaKernel_t ElemModule::strided() const {
  cudaKernel_t k = strided_->load(std::memory_order_acquire);
  if (!k) {
    k = get_kernel(strided_source_, "hyp_elem_s");  // (two threads at once: the caches give both one kernel)
    strided_->store(k, std::memory_order_release);
  }
  return k;
}

void ElemModule::run(const Shape& shape, std::span<NDArray* const> outs, std::span<NDArray* const> ins) const {
  const int64_t n = shape.prod();
  if (n == 0) return;
  const int nd = shape.size();
  bool contiguous_case = true;
  for (NDArray* o : outs) contiguous_case = contiguous_case && o->is_c_contiguous();
  for (const NDArray* x : ins)
    contiguous_case = contiguous_case && ((x->shape() == shape && x->is_c_contiguous()) || x->size() == 1);
  if (contiguous_case) {
    // The per-call path: the argument block is written in place into a buffer of this thread
    // (the launch copies it), no allocation after the first call.
    static thread_local std::vector<int64_t> args;
    contiguous_elem_args(args, shape, outs, ins, vector);
    launch(contiguous, grid_for(args[1] > 1 ? (n + args[1] - 1) / args[1] : n), args, what.c_str());
    return;
  }
  std::vector<void*> op;
  std::vector<const void*> ip;
  for (NDArray* o : outs) op.push_back(o->raw());
  for (const NDArray* x : ins) ip.push_back(x->raw());
  // Strides per operand (0 where an input broadcasts), dims of length 1 dropped and dims merged
  // where every operand is contiguous across them.
  std::vector<std::vector<int64_t>> st(outs.size() + ins.size());
  for (size_t k = 0; k < outs.size(); ++k) st[k].assign(outs[k]->strides().begin(), outs[k]->strides().end());
  for (size_t j = 0; j < ins.size(); ++j) {
    const NDArray& x = *ins[j];
    auto& s = st[outs.size() + j];
    for (int d = 0; d < nd; ++d) s.push_back(x.shape(d) == shape[d] ? x.strides()[d] : 0);
  }
  std::vector<int64_t> cs;
  std::vector<std::vector<int64_t>> cst(st.size());
  for (int d = 0; d < nd; ++d) {
    if (shape[d] == 1) continue;
    bool merge = !cs.empty();
    for (size_t o = 0; o < st.size() && merge; ++o) merge = cst[o].back() == st[o][d] * shape[d];
    if (merge) {
      cs.back() *= shape[d];
      for (size_t o = 0; o < st.size(); ++o) cst[o].back() = st[o][d];
    } else {
      cs.push_back(shape[d]);
      for (size_t o = 0; o < st.size(); ++o) cst[o].push_back(st[o][d]);
    }
  }
  if (cs.size() > static_cast<size_t>(kMaxDims)) fail<InternalError>(what, ": too many dimensions");
  std::vector<std::vector<int64_t>> ost(cst.begin(), cst.begin() + static_cast<std::ptrdiff_t>(outs.size()));
  std::vector<std::vector<int64_t>> ist(cst.begin() + static_cast<std::ptrdiff_t>(outs.size()), cst.end());
  std::vector<int64_t> args = elem_args(n, cs, op, ost, ip, ist);
  launch(strided(), grid_for(n), args, what.c_str());
}

/// The identity loop of a dtype (device copies: contiguity, in-place targets that cannot be
/// written).
const ElemModule& copy_module(DType dt) {
  static std::mutex mu;
  static std::unordered_map<int, ElemModule> mods;
  std::lock_guard<std::mutex> lock(mu);
  auto it = mods.find(static_cast<int>(dt));
  if (it == mods.end())
    it = mods.emplace(static_cast<int>(dt), ElemModule(ElemSpec{{dt}, "", {"x0"}, {dt}}, "CUDA copy")).first;
  return it->second;
}

/// A C-contiguous device copy of `x`.
void copy_into(NDArray& dst, const NDArray& src) {
  // (An identity copy of src's dtype: another dtype's buffer would be written with the wrong
  // element size. Kernels cast first: a kernel that did not is a bug, caught here.)
  if (dst.dtype() != src.dtype() || dst.shape() != src.shape())
    fail<InternalError>("CUDA backend: a device copy into ", dst.describe(), " from ", src.describe(),
                        " (the same dtype and shape are expected)");
  NDArray s = src;
  NDArray* o[] = {&dst};
  NDArray* i[] = {&s};
  copy_module(src.dtype()).run(src.shape(), o, i);
}

NDArray device_copy(const NDArray& x) {
  NDArray out = NDArray::empty(x.shape(), x.dtype(), Device::cuda());
  copy_into(out, x);
  return out;
}

NDArray& update_output(NDArray& cell, const NDArray& target, bool in_place, bool layout_ok, bool keep_values) {
  if (in_place && layout_ok && target.can_write_in_place()) {
    cell = target;
    return cell;
  }
  prepare_device_output(cell, target.shape(), target.dtype());
  if (keep_values) copy_into(cell, target);
  return cell;
}

NDArray& prepare_device_inplace_output(NDArray& cell, const NDArray& target, const Shape& shape, DType dtype,
                                       const Op& op, int input) {
  if (!(target.shape() == shape) || target.dtype() != dtype)
    fail<ValueError>(op.name(), ": the overwritten input ", input, " is ", target.describe(), " but the output is ",
                     dtype_name(dtype), " ", shape.str());
  cell = target.can_write_in_place() ? target : device_copy(target);
  return cell;
}

namespace {

/// Elemwise, Composite and MultiComposite: one generated loop.
class ElemKernel final : public Kernel {
 public:
  ElemKernel(const Apply& node, const ElemSpec& spec, int inplace)
      : op_(*node.op), pattern_(node), inplace_(inplace), module_(spec, node.op->name()) {
    for (int o = 0; o < node.nout(); ++o) out_dtypes_.push_back(node.output_ptr(o)->type.dtype);
  }
  void run(const KernelArgs& a) override {
    const Shape shape = elemwise_broadcast_shape(op_, a.in, pattern_);
    for (size_t k = 0; k < a.out.size(); ++k) {
      if (k == 0 && inplace_ >= 0)
        prepare_device_inplace_output(*a.out[0], *a.in[inplace_], shape, out_dtypes_[0], op_, inplace_);
      else
        prepare_device_output(*a.out[k], shape, out_dtypes_[k]);
    }
    module_.run(shape, a.out, a.in);
  }

 private:
  const Op& op_;
  BroadcastPattern pattern_;
  int inplace_;
  ElemModule module_;
  std::vector<DType> out_dtypes_;
};

std::vector<DType> input_dtypes(const Apply& node) {
  std::vector<DType> r;
  for (const Var& v : node.inputs) r.push_back(v->type.dtype);
  return r;
}

bool elemwise_accepts(const Apply& node) {
  const auto& op = static_cast<const Elemwise&>(*node.op);
  const DType out = node.output_ptr(0)->type.dtype;
  if (op.scalar == ScalarOpKind::Cast) return true;  // any dtype to any, float16 included
  for (const Var& v : node.inputs)
    if (v->type.dtype == DType::Float16) return false;
  return out != DType::Float16;
}

// ---- reductions

/// Reduce and CompositeReduce: a reduction of one generated value per element (the input
/// itself, or a fused program of several broadcasting inputs) over some axes.
class ReduceKernel final : public Kernel {
 public:
  ReduceKernel(const Apply& node, ReduceKind kind, std::vector<int> axes, const ElemSpec& spec, DType out)
      : op_(*node.op), kind_(kind), axes_(std::move(axes)), out_(out), pattern_(node) {
    kernel_ = request_kernel(table_prefix() + reduce_source(kind, spec, out, "hyp_reduce"), "hyp_reduce");
  }
  void run(const KernelArgs& a) override {
    // The elementwise shape (a Reduce's input's own), then each input's strides split into the
    // kept and the reduced dims (0 where it broadcasts).
    const Shape full = a.in.size() == 1 ? a.in[0]->shape() : elemwise_broadcast_shape(op_, a.in, pattern_);
    std::vector<bool> red(full.size(), false);
    for (int ax : axes_) {
      if (ax < 0 || ax >= full.size())
        fail<ValueError>(op_.name(), ": axis ", ax, " is out of range for an input of ", full.size(), " dimensions");
      red[ax] = true;
    }
    Shape out_shape;
    std::vector<int64_t> oshape, rshape;
    int64_t n_red = 1;
    for (int d = 0; d < full.size(); ++d) {
      if (red[d]) {
        rshape.push_back(full[d]);
        n_red *= full[d];
      } else {
        out_shape.push_back(full[d]);
        oshape.push_back(full[d]);
      }
    }
    const int64_t n_out = out_shape.prod();
    if (n_red == 0 && n_out > 0 && (kind_ == ReduceKind::Max || kind_ == ReduceKind::Min))
      fail<ValueError>(op_.name(), ": zero-size array to reduction operation ",
                       kind_ == ReduceKind::Max ? "maximum" : "minimum", " which has no identity (input ",
                       a.in[0]->describe(), ")");
    NDArray& out = prepare_device_output(*a.out[0], out_shape, out_);
    if (n_out == 0) return;
    std::vector<int64_t> args = {n_out, n_red, static_cast<int64_t>(oshape.size()),
                                 static_cast<int64_t>(rshape.size())};
    append_dims(args, oshape, 1);
    append_dims(args, rshape, 1);
    for (NDArray* x : a.in) args.push_back(static_cast<int64_t>(reinterpret_cast<uintptr_t>(x->raw())));
    for (bool reduced : {false, true})
      for (NDArray* x : a.in) {
        std::vector<int64_t> st;
        for (int d = 0; d < full.size(); ++d)
          if (red[d] == reduced) st.push_back(x->shape(d) == full[d] ? x->strides()[d] : 0);
        append_dims(args, st, 0);
      }
    args.push_back(static_cast<int64_t>(reinterpret_cast<uintptr_t>(out.raw())));
    launch(kernel_, static_cast<int>(std::min<int64_t>(n_out, 65535)), args, op_.name().c_str());
  }

 private:
  const Op& op_;
  ReduceKind kind_;
  std::vector<int> axes_;
  DType out_;
  BroadcastPattern pattern_;
  KernelRef kernel_;
};

/// ArgReduce (argmax, argmin): a block per output over the reduced axes (the one axis, or all of
/// them in C order), the CPU's rule in every merge: the first NaN wins, else the first extreme.
class ArgReduceKernel final : public Kernel {
 public:
  explicit ArgReduceKernel(const Apply& node) : op_(static_cast<const ArgReduce&>(*node.op)) {
    kernel_ = request_kernel(arg_reduce_source(node.inputs[0]->type.dtype, op_.is_max), "hyp_argreduce");
  }
  void run(const KernelArgs& a) override {
    const NDArray& x = *a.in[0];
    reduce_detail::check_arg_reduce_input(op_, x);
    std::vector<int64_t> oshape, ost, rshape, rst;
    for (int d = 0; d < x.ndim(); ++d) {
      const bool reduced = !op_.axis || *op_.axis == d;
      (reduced ? rshape : oshape).push_back(x.shape(d));
      (reduced ? rst : ost).push_back(x.strides()[d]);
    }
    const Shape out_shape(oshape);
    NDArray& out = prepare_device_output(*a.out[0], out_shape, DType::Int64);
    const int64_t n_out = out_shape.prod();
    if (n_out == 0) return;
    std::vector<int64_t> args =
        arg_reduce_args(n_out, Shape(rshape).prod(), oshape, ost, rshape, rst, x.raw(), out.raw());
    launch(kernel_, static_cast<int>(std::min<int64_t>(n_out, 65535)), args, op_.name().c_str());
  }

 private:
  const ArgReduce& op_;
  KernelRef kernel_;
};

bool reduce_accepts(const Apply& node) {
  const auto& op = static_cast<const Reduce&>(*node.op);
  if (op.kind == ReduceKind::ProdWithoutZeros) return false;
  const DType in = node.inputs[0]->type.dtype;
  return in != DType::Float16 && node.output_ptr(0)->type.dtype != DType::Float16;
}

// ---- views and transfers

/// The reference backend's kernel of the node (views: DimShuffle, Rebroadcast).
KernelFactory reference_kernel() {
  return [](const Apply& node) { return get_backend(kReferenceBackend).make_kernel(node); };
}

class ReshapeKernel final : public Kernel {
 public:
  explicit ReshapeKernel(const Apply& node) : view_(get_backend(kReferenceBackend).make_kernel(node)) {}
  void run(const KernelArgs& a) override {
    // The reference kernel makes a view of a contiguous array; anything else is copied first.
    if (a.in[0]->is_c_contiguous()) return view_->run(a);
    NDArray c = device_copy(*a.in[0]);
    NDArray* in[] = {&c, a.in[1]};
    view_->run(KernelArgs{in, a.out});
  }

 private:
  std::unique_ptr<Kernel> view_;
};

// ---- DeviceFromHost: a copy to the device; at most kMaxRecordedHostBytes go in the argument
// block of a kernel that writes them (a recording holds its arguments, where a copy would read
// host memory again when replayed: the runtime keys a recording by such a value)

class DeviceFromHostKernel final : public Kernel {
 public:
  explicit DeviceFromHostKernel(const Apply& node) : op_(static_cast<const DeviceFromHost&>(*node.op)) {
    upload_ = request_kernel(upload_source(), "hyp_upload");
  }
  void run(const KernelArgs& a) override {
    const NDArray& x = *a.in[0];
    // An argument already on the device (a function input that only transfers read) is copied on
    // the device: the output is a fresh buffer, which device nodes may overwrite in place, and the
    // caller's array stays as it was. (Placement removes the user's transfer of a value the device
    // computes: no such node runs.)
    if (!x.on_host()) {
      *a.out[0] = device_copy(x);
      return;
    }
    if (x.nbytes() > kMaxRecordedHostBytes || !x.is_c_contiguous()) {
      *a.out[0] = x.to_device(op_.device);
      return;
    }
    NDArray& out = prepare_device_output(*a.out[0], x.shape(), x.dtype());
    if (out.nbytes() == 0) return;
    std::vector<int64_t> args = upload_args(out.raw(), x.raw(), x.nbytes());
    launch(upload_, grid_for(static_cast<int64_t>(x.nbytes())), args, "GpuFromHost");
  }

 private:
  const DeviceFromHost& op_;
  KernelRef upload_;
};

void host_from_device_kernel(const HostFromDevice&, const KernelArgs& a) {
  // Always a fresh host array (the op has no view_map): a host input is copied.
  if (a.in[0]->on_host()) {
    *a.out[0] = a.in[0]->copy();
    return;
  }
  const NDArray& x = a.in[0]->is_c_contiguous() ? *a.in[0] : device_copy(*a.in[0]);
  *a.out[0] = x.to_device(Device::host());
}

}  // namespace

std::string arg_reduce_source(DType dt, bool is_max) {
  const std::string T = cuda_type(dt), D = std::to_string(kMaxDims);
  const bool fp = is_float(dt);
  std::string s = "struct AgArgs {\n  long long n_out, n, nd_out, nd_red, out_shape[" + D + "], out_st[" + D +
                  "], red_shape[" + D + "], red_st[" + D + "];\n  unsigned long long x, out;\n};\n";
  // Whether (v, i) comes before (b, j): a NaN before anything but an earlier NaN, then the
  // extreme, then the smaller index (the CPU's first occurrence).
  s += "__device__ bool hyp_before(" + T + " v, long long i, " + T + " b, long long j) {\n";
  if (fp) s += "  if (b != b) return v != v && i < j;\n  if (v != v) return true;\n";
  s += std::string("  return v ") + (is_max ? ">" : "<") + " b || (v == b && i < j);\n}\n";
  s += "extern \"C\" __global__ void hyp_argreduce(const AgArgs a) {\n";
  s += "  __shared__ " + T + " sv[256];\n  __shared__ long long si[256];\n  const int t = threadIdx.x;\n";
  s += "  for (long long o = blockIdx.x; o < a.n_out; o += gridDim.x) {\n";
  s += "    long long base = 0, r = o;\n";
  s += "    for (int d = (int)a.nd_out - 1; d >= 0; --d) {\n      base += (r % a.out_shape[d]) * a.out_st[d];\n"
       "      r /= a.out_shape[d];\n    }\n";
  s += "    " + T + " bv = (" + T + ")0;\n    long long bi = -1;\n";
  s += "    for (long long i = t; i < a.n; i += blockDim.x) {\n      long long off = base, q = i;\n";
  s += "      for (int d = (int)a.nd_red - 1; d >= 0; --d) {\n        off += (q % a.red_shape[d]) * a.red_st[d];\n"
       "        q /= a.red_shape[d];\n      }\n";
  s += "      const " + T + " v = *(const " + T + "*)((const char*)a.x + off);\n";
  s += "      if (bi < 0 || hyp_before(v, i, bv, bi)) { bv = v; bi = i; }\n    }\n";
  s += "    sv[t] = bv;\n    si[t] = bi;\n    __syncthreads();\n";
  s += "    for (int w = blockDim.x / 2; w > 0; w >>= 1) {\n";
  s += "      if (t < w && si[t + w] >= 0 && (si[t] < 0 || hyp_before(sv[t + w], si[t + w], sv[t], si[t]))) {\n";
  s += "        sv[t] = sv[t + w];\n        si[t] = si[t + w];\n      }\n      __syncthreads();\n    }\n";
  s += "    if (t == 0) ((long long*)a.out)[o] = si[0];\n    __syncthreads();\n  }\n}\n";
  return s;
}

std::string upload_source() {
  std::string s = "struct UploadArgs { unsigned long long out; long long n, words[" +
                  std::to_string(kMaxRecordedHostBytes / 8) + "]; };\n";
  s += grid_stride_head("hyp_upload", "UploadArgs", "a.n");
  s += "    ((unsigned char*)a.out)[t] = ((const unsigned char*)a.words)[t];\n  }\n}\n";
  return s;
}

std::vector<int64_t> upload_args(void* dst, const void* src, size_t n) {
  static_assert(kMaxRecordedHostBytes % 8 == 0);
  if (n > kMaxRecordedHostBytes) fail<InternalError>("upload_args: ", n, " bytes, more than the kernel takes");
  std::vector<int64_t> args(2 + kMaxRecordedHostBytes / 8, 0);
  args[0] = static_cast<int64_t>(reinterpret_cast<uintptr_t>(dst));
  args[1] = static_cast<int64_t>(n);
  if (n > 0) std::memcpy(args.data() + 2, src, n);
  return args;
}

std::vector<int64_t> arg_reduce_args(int64_t n_out, int64_t n, const std::vector<int64_t>& out_shape,
                                     const std::vector<int64_t>& out_strides, const std::vector<int64_t>& red_shape,
                                     const std::vector<int64_t>& red_strides, const void* x, void* out) {
  std::vector<int64_t> args = {n_out, n, static_cast<int64_t>(out_shape.size()),
                               static_cast<int64_t>(red_shape.size())};
  append_dims(args, out_shape, 1);
  append_dims(args, out_strides, 0);
  append_dims(args, red_shape, 1);
  append_dims(args, red_strides, 0);
  args.push_back(static_cast<int64_t>(reinterpret_cast<uintptr_t>(x)));
  args.push_back(static_cast<int64_t>(reinterpret_cast<uintptr_t>(out)));
  return args;
}

}  // namespace cuda

namespace cuda {
void register_cuda_nnet_kernels();
void register_cuda_xent_kernels();
void register_cuda_pool_kernels();
void register_cuda_sort_kernels();
void register_cuda_conv_kernels();
void register_cuda_loop_kernels();
void register_cuda_cum_kernels();
void register_cuda_random_kernels();
void register_cuda_linalg_kernels();
void register_cuda_blas_kernels();
std::shared_ptr<Recorder> make_cuda_recorder();
}  // namespace cuda

void register_cuda_backend() {
  using namespace cuda;
  register_cuda_memory();
  register_backend(std::make_unique<Backend>(Backend::Description{
      .name = std::string(kCudaBackend),
      .device = DeviceKind::Cuda,
      .fallback = std::string(kCpuBackend),
      .default_mode = "",
      .fusable =
          [](const Elemwise& op, DType compute) {
            if (op.scalar == ScalarOpKind::Cast)
              return compute == DType::Float32 && (op.cast_to == DType::Float16 || op.cast_to == DType::Float32);
            return generatable(op.scalar, compute);
          },
      .max_fusion_inputs = 16,
      .max_fusion_outputs = 8,
      .default_for_device = true,
      .storage_dtypes = {rewrite::StorageDType{DType::Float16, DType::Float32}},
      .recorder = make_cuda_recorder(),
      .index_arithmetic_on_host = true,
      .kernels_made = build_requested_kernels,
      .queues = make_cuda_queues()}));
  const std::string_view b = kCudaBackend;
  register_kernel(
      b, typeid(Elemwise),
      [](const Apply& node) -> std::unique_ptr<Kernel> {
        const auto& op = static_cast<const Elemwise&>(*node.op);
        return std::make_unique<ElemKernel>(
            node, elemwise_spec(op.scalar, input_dtypes(node), node.output_ptr(0)->type.dtype), op.inplace);
      },
      KernelTraits{.accepts = elemwise_accepts, .recordable = true});
  register_kernel(
      b, typeid(Composite),
      [](const Apply& node) -> std::unique_ptr<Kernel> {
        const auto& op = static_cast<const Composite&>(*node.op);
        return std::make_unique<ElemKernel>(node, composite_spec(op, {op.nvalues() - 1}), op.inplace);
      },
      KernelTraits{.recordable = true});
  register_kernel(
      b, typeid(MultiComposite),
      [](const Apply& node) -> std::unique_ptr<Kernel> {
        const auto& op = static_cast<const MultiComposite&>(*node.op);
        return std::make_unique<ElemKernel>(node, composite_spec(op, op.outputs), -1);
      },
      KernelTraits{.recordable = true});
  register_kernel(
      b, typeid(Reduce),
      [](const Apply& node) -> std::unique_ptr<Kernel> {
        const auto& op = static_cast<const Reduce&>(*node.op);
        const DType in = node.inputs[0]->type.dtype;
        return std::make_unique<ReduceKernel>(node, op.kind, op.axes, ElemSpec{{in}, "", {"x0"}, {in}}, op.dtype);
      },
      KernelTraits{.accepts = reduce_accepts, .recordable = true});
  register_kernel(
      b, typeid(CompositeReduce),
      [](const Apply& node) -> std::unique_ptr<Kernel> {
        const auto& op = static_cast<const CompositeReduce&>(*node.op);
        return std::make_unique<ReduceKernel>(node, op.kind, op.axes, composite_spec(op, {op.nvalues() - 1}),
                                              op.out_dtype);
      },
      KernelTraits{.recordable = true});
  // Every kernel below but the transfers to the host only queues device work (its host inputs are keyed by
  // value when recorded): KernelTraits::recordable.
  register_kernel(b, typeid(ArgReduce), kernel_factory<ArgReduceKernel>(),
                  KernelTraits{.accepts =
                                   [](const Apply& node) {
                                     return node.inputs[0]->type.dtype != DType::Float16 &&
                                            node.inputs[0]->type.ndim() <= kMaxDims;
                                   },
                               .recordable = true});
  // Basic indexing is a view (the index scalars are read on the host).
  std::vector<int> index_scalars;
  for (int i = 1; i <= 3 * kMaxNdim; ++i) index_scalars.push_back(i);
  register_kernel(b, typeid(Subtensor), reference_kernel(),
                  KernelTraits{.host_inputs = index_scalars, .recordable = true});
  register_kernel(b, typeid(DimShuffle), reference_kernel(), KernelTraits{.recordable = true});
  register_kernel(b, typeid(Rebroadcast), reference_kernel(), KernelTraits{.recordable = true});
  register_kernel(b, typeid(Reshape), kernel_factory<ReshapeKernel>(),
                  KernelTraits{.host_inputs = {1}, .recordable = true});
  // Assert's conditions and SpecifyShape's lengths are read on the host; the value passes through.
  const auto checked_on_host = [](const Apply& node) {
    std::vector<int> r;
    for (int i = 1; i < static_cast<int>(node.inputs.size()); ++i) r.push_back(i);
    return r;
  };
  register_kernel(b, typeid(Assert), reference_kernel(),
                  KernelTraits{.host_inputs_of = checked_on_host, .recordable = true});
  register_kernel(b, typeid(SpecifyShape), reference_kernel(),
                  KernelTraits{.host_inputs_of = checked_on_host, .recordable = true});
  // A transfer's host value is read on the host (its bytes in the kernel's arguments, or copied).
  register_kernel(b, typeid(DeviceFromHost), kernel_factory<DeviceFromHostKernel>(),
                  KernelTraits{.host_inputs = {0}, .recordable = true});
  register_simple_kernel<HostFromDevice>(b, host_from_device_kernel);
  register_cuda_blas_kernels();
  register_cuda_nnet_kernels();
  register_cuda_xent_kernels();
  register_cuda_pool_kernels();
  register_cuda_sort_kernels();
  register_cuda_conv_kernels();
  register_cuda_loop_kernels();
  register_cuda_cum_kernels();
  register_cuda_random_kernels();
  register_cuda_linalg_kernels();
}

}  // namespace hypatia
