// MRG31k3p on the CUDA backend (ops/random.h: MRGUniform): a thread per stream, drawing elements
// s, s + n_streams, ... of the sample as the CPU kernels do, with the CPU's own step and
// conversion (backends/mrg_generate.h's shared part, compiled by NVRTC: cuda_codegen.h
// mrg_prefix), so a state gives the same bits on either device. The state is updated in place
// (the op's inplace form) or in a copy. MultinomialFromUniform and ChoiceFromUniform (Theano's
// GPU multinomial and choice): a thread per row runs the CPU kernel's loops for that row (its
// rounds in order, the cumulative sums in double, the renormalization without replacement in
// pvals' dtype), so the draws are the CPU's.
#include <string>
#include <typeindex>

#include "hypatia/backends/cuda/cuda_api.h"
#include "hypatia/backends/cuda/cuda_kernel_util.h"
#include "hypatia/backends/random_kernels.h"
#include "hypatia/core/error.h"
#include "hypatia/ops/random.h"

namespace hypatia::cuda {

std::string mrg_source(DType dt) {
  const std::string T = cuda_type(dt);
  std::string s = mrg_prefix();
  s += "struct MrgArgs { long long streams, n; unsigned long long state, out; };\n";
  s += grid_stride_head("hyp_mrg", "MrgArgs", "a.streams", "s");
  s += "    int* p = (int*)a.state + s * 6;\n";
  s += "    int st[6];\n    for (int k = 0; k < 6; ++k) st[k] = p[k];\n";
  s += "    " + T + "* out = (" + T + "*)a.out;\n";
  s += "    for (long long i = s; i < a.n; i += a.streams) out[i] = hypatia::mrg::to_unit<" + T +
       ">(hypatia::mrg::next(st));\n";
  s += "    for (int k = 0; k < 6; ++k) p[k] = st[k];\n  }\n}\n";
  return s;
}

std::string from_uniform_source(DType pvals, DType unis, DType out, FromUniform which) {
  const std::string P = cuda_type(pvals), U = cuda_type(unis), O = cuda_type(out);
  std::string s = "struct FuArgs { long long rows, outcomes, n; unsigned long long p, u, z; };\n";
  s += grid_stride_head("hyp_from_uniform", "FuArgs", "a.rows", "r");
  s += "    const long long K = a.outcomes;\n    " + O + "* z = (" + O + "*)a.z;\n    const " + U + "* u = (const " +
       U + "*)a.u;\n    " + P + "* row = (" + P + "*)a.p + r * K;\n";
  if (which == FromUniform::Multinomial) {
    s += "    " + O + "* zr = z + r * K;\n#pragma unroll 1\n    for (long long m = 0; m < K; ++m) zr[m] = 0;\n";
    s += "#pragma unroll 1\n    for (long long c = 0; c < a.n; ++c) {\n"
         "      const double x = (double)u[c * a.rows + r];\n      double cum = 0.0;\n"
         "#pragma unroll 1\n      for (long long m = 0; m < K; ++m) {\n"
         "        cum += (double)row[m];\n"
         "        if (cum > x) {\n          zr[m] = (" +
         O + ")(zr[m] + (" + O + ")1);\n          break;\n        }\n      }\n    }\n  }\n}\n";
    return s;
  }
  const bool replace = which == FromUniform::ChoiceWithReplacement;
  s += "#pragma unroll 1\n    for (long long c = 0; c < a.n; ++c) z[r * a.n + c] = (" + O + ")-1;\n";
  s += "#pragma unroll 1\n    for (long long c = 0; c < a.n; ++c) {\n"
       "      const double x = (double)u[c * a.rows + r];\n      double cum = 0.0;\n"
       "#pragma unroll 1\n      for (long long m = 0; m < K; ++m) {\n"
       "        cum += (double)row[m];\n"
       "        if (cum > x) {\n          z[r * a.n + c] = (" +
       O + ")m;\n";
  if (replace) {
    s += "          break;\n";
  } else {
    // Theano's renormalization (the CPU kernel's): the running sum restarts from the
    // probabilities before m (cum - p[m], in pvals' dtype), adds those from m on, and divides.
    s += "          if (c == a.n - 1) break;\n          " + P + " sum = (" + P +
         ")(cum - (double)row[m]);\n          row[m] = 0;\n"
         "          for (long long k = m; k < K; ++k) sum = sum + row[k];\n"
         "          for (long long k = 0; k < K; ++k) row[k] = row[k] / sum;\n          break;\n";
  }
  s += "        }\n      }\n    }\n  }\n}\n";
  return s;
}

namespace {

/// MultinomialFromUniform and ChoiceFromUniform: a thread per row.
class FromUniformKernel final : public Kernel {
 public:
  explicit FromUniformKernel(const Apply& node) : op_(*node.op) {
    const auto* choice = dynamic_cast<const ChoiceFromUniform*>(node.op.get());
    which_ = !choice           ? FromUniform::Multinomial
             : choice->replace ? FromUniform::ChoiceWithReplacement
                               : FromUniform::ChoiceWithoutReplacement;
    const DType odtype = choice ? choice->odtype : static_cast<const MultinomialFromUniform&>(*node.op).odtype;
    kernel_ =
        request_kernel(from_uniform_source(node.inputs[0]->type.dtype, node.inputs[1]->type.dtype, odtype, which_),
                       "hyp_from_uniform");
    odtype_ = odtype;
  }
  void run(const KernelArgs& a) override {
    const std::string who = op_.name();
    const FromUniformInputs in = check_from_uniform(who, a);
    if (which_ == FromUniform::ChoiceWithoutReplacement)
      check_choice_count(static_cast<const ChoiceFromUniform&>(op_), in);
    const NDArray& pv = *a.in[0];
    const NDArray& un = *a.in[1];
    NDArray& z = prepare_device_output(*a.out[0],
                                       which_ == FromUniform::Multinomial ? pv.shape() : Shape{in.rows, in.n}, odtype_);
    if (in.rows == 0) return;
    // Without replacement the rows are renormalized in place: in a copy.
    const NDArray p = which_ == FromUniform::ChoiceWithoutReplacement || !pv.is_c_contiguous() ? device_copy(pv) : pv;
    const NDArray u = un.is_c_contiguous() ? un : device_copy(un);
    std::vector<int64_t> args = {in.rows,
                                 in.outcomes,
                                 in.n,
                                 static_cast<int64_t>(reinterpret_cast<uintptr_t>(p.raw())),
                                 static_cast<int64_t>(reinterpret_cast<uintptr_t>(u.raw())),
                                 static_cast<int64_t>(reinterpret_cast<uintptr_t>(z.raw()))};
    launch(kernel_, grid_for(in.rows), args, "CUDA multinomial / choice from uniforms");
  }

 private:
  const Op& op_;
  FromUniform which_;
  DType odtype_;
  KernelRef kernel_;
};

bool from_uniform_accepts(const Apply& node) {
  auto f = [](DType d) { return d == DType::Float32 || d == DType::Float64; };
  return f(node.inputs[0]->type.dtype) && f(node.inputs[1]->type.dtype);
}

class MrgKernel final : public Kernel {
 public:
  explicit MrgKernel(const Apply& node) : op_(static_cast<const MRGUniform&>(*node.op)) {
    kernel_ = request_kernel(mrg_source(op_.dtype), "hyp_mrg");
  }
  void run(const KernelArgs& a) override {
    const NDArray& rstate = *a.in[0];
    op_.check_inputs(a.in);  // the state's shape, the size's values (on the host)
    Shape shape;
    for (int i = 0; i < op_.ndim; ++i) shape.push_back(a.in[1]->get_flat_int(i));
    NDArray& state = op_.inplace
                         ? prepare_device_inplace_output(*a.out[0], rstate, rstate.shape(), DType::Int32, op_, 0)
                         : prepare_device_output(*a.out[0], rstate.shape(), DType::Int32);
    if (!op_.inplace) copy_into(state, rstate);
    NDArray work = state.is_c_contiguous() ? state : device_copy(state);
    NDArray& sample = prepare_device_output(*a.out[1], shape, op_.dtype);
    const int64_t streams = rstate.shape(0), n = sample.size();
    if (n > 0) {
      std::vector<int64_t> args = {streams, n, static_cast<int64_t>(reinterpret_cast<uintptr_t>(work.raw())),
                                   static_cast<int64_t>(reinterpret_cast<uintptr_t>(sample.raw()))};
      launch(kernel_, grid_for(streams), args, "CUDA mrg_uniform");
    }
    if (work.raw() != state.raw()) copy_into(state, work);
  }

 private:
  const MRGUniform& op_;
  KernelRef kernel_;
};

}  // namespace

void register_cuda_random_kernels() {
  register_kernel(
      kCudaBackend, typeid(MRGUniform),
      [](const Apply& node) -> std::unique_ptr<Kernel> { return std::make_unique<MrgKernel>(node); },
      KernelTraits{.accepts =
                       [](const Apply& node) {
                         const DType dt = static_cast<const MRGUniform&>(*node.op).dtype;
                         return dt == DType::Float32 || dt == DType::Float64;
                       },
                   .host_inputs = {1},
                   .recordable = true});
  const KernelTraits from_uniform{.accepts = from_uniform_accepts, .host_inputs = {2}, .recordable = true};
  for (std::type_index t :
       {std::type_index(typeid(MultinomialFromUniform)), std::type_index(typeid(ChoiceFromUniform))})
    register_kernel(
        kCudaBackend, t,
        [](const Apply& node) -> std::unique_ptr<Kernel> { return std::make_unique<FromUniformKernel>(node); },
        from_uniform);
}

}  // namespace hypatia::cuda
