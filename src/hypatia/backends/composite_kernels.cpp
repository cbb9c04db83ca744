// Kernels of the fused ops (ops/composite.h). The reference kernel of every one of them runs the
// reference kernels of its unfused graph over whole arrays. The CPU kernels of Composite and
// MultiComposite run every step tile by tile (backends/cpu/composite_program.h) so that
// intermediates stay in L1 and memory is read and written once; CompositeReduce's CPU kernel is in
// composite_reduce_kernels.cpp.
#include <algorithm>
#include <array>
#include <unordered_map>

#include "hypatia/backends/cpu/composite_program.h"
#include "hypatia/backends/cpu/parallel_loop.h"
#include "hypatia/backends/registry.h"
#include "hypatia/core/error.h"
#include "hypatia/graph/fgraph.h"
#include "hypatia/ops/composite.h"

namespace hypatia {

void register_composite_reduce_cpu_kernel();

namespace {

/// Runs the unfused graph with reference kernels (the oracle of every fused op).
class FusedReferenceKernel final : public Kernel {
 public:
  explicit FusedReferenceKernel(const Apply& node) {
    if (const auto* c = dynamic_cast<const Composite*>(node.op.get())) inplace_ = c->inplace;
    auto [ins, outs] = fused_graph(node);
    ins_ = ins;
    outs_ = outs;
    for (const auto& n : toposort(outs)) {
      nodes_.push_back(n);
      kernels_.push_back(make_kernel(kReferenceBackend, *n));
    }
  }
  void run(const KernelArgs& args) override {
    std::unordered_map<const Variable*, NDArray> vals;
    for (size_t i = 0; i < ins_.size(); ++i) vals[ins_[i].get()] = *args.in[i];
    for (size_t t = 0; t < nodes_.size(); ++t) {
      std::vector<NDArray*> in, out;
      for (const auto& v : nodes_[t]->inputs) in.push_back(&vals.at(v.get()));
      for (int k = 0; k < nodes_[t]->nout(); ++k) out.push_back(&vals[nodes_[t]->output_ptr(k)]);
      kernels_[t]->run(KernelArgs{in, out});
    }
    for (size_t k = 0; k < outs_.size(); ++k) {
      if (k == 0 && inplace_ >= 0) {
        args.in[inplace_]->assign(vals.at(outs_[0].get()));
        *args.out[0] = *args.in[inplace_];
      } else {
        *args.out[k] = vals.at(outs_[k].get());
      }
    }
  }

 private:
  int inplace_ = -1;
  std::vector<Var> ins_, outs_;
  std::vector<std::shared_ptr<Apply>> nodes_;
  std::vector<std::unique_ptr<Kernel>> kernels_;
};

constexpr int kMaxOperands = TileProgram::kMaxOutputs + TileProgram::kMaxInputs;

/// Composite (outputs {last step}, maybe in place) and MultiComposite: one broadcasting strided
/// loop over the outputs and inputs, on the thread pool above the threshold, each run cut into
/// tiles.
class CompositeCpuKernel final : public Kernel {
 public:
  CompositeCpuKernel(const Apply& node, const CompositeProgram& prog, std::vector<int> outputs, int inplace)
      : op_(*node.op),
        prog_(node.op->name(), prog, outputs, TileProgram::scalar_inputs(node)),
        nout_(static_cast<int>(outputs.size())),
        inplace_(inplace),
        bc_(node) {
    for (int v : outputs) out_dt_.push_back(prog.value_dtype(v));
    for (const CompositeStep& st : prog.steps) cost_ += scalar_op_cost(st.kind);
    cost_ = std::max<int64_t>(cost_, 1);
  }

  void run(const KernelArgs& args) override {
    const Shape shape = elemwise_broadcast_shape(op_, args.in, bc_);
    std::array<Strides, kMaxOperands> strides{};
    std::array<std::byte*, kMaxOperands> base{};
    // The outputs laid out as the inputs agree to (prepare_output_following); every output the
    // same way, so that one loop walks all of them in memory order.
    const std::span<const NDArray* const> like(args.in.data(), static_cast<size_t>(prog_.nin()));
    for (int k = 0; k < nout_; ++k) {
      NDArray& out = k == 0 && inplace_ >= 0
                         ? prepare_inplace_output(*args.out[0], *args.in[inplace_], shape, out_dt_[0], op_, inplace_)
                         : prepare_output_following(*args.out[k], shape, out_dt_[k], like);
      strides[k] = out.strides();
      base[k] = out.raw();
    }
    for (int i = 0; i < prog_.nin(); ++i) {
      const NDArray& a = *args.in[i];
      Strides& s = strides[nout_ + i];
      s = a.strides();
      for (int d = 0; d < shape.size(); ++d)
        if (a.shape(d) != shape[d]) s[d] = 0;
      base[nout_ + i] = a.raw();
    }
    const int operands = nout_ + prog_.nin();
    if (operands <= 3) return run_m<3>(shape, strides, base);
    if (operands <= 5) return run_m<5>(shape, strides, base);
    if (operands <= 9) return run_m<9>(shape, strides, base);
    return run_m<kMaxOperands>(shape, strides, base);
  }

  bool has_scalar_path() const override { return true; }
  // What run() does for 0-d operands: one element, every stride 0 (a 0-d loop's inner stride).
  void run_scalars(const std::byte* const* in, std::byte* const* out) override {
    static constexpr std::array<int64_t, kMaxOperands> kZero{};
    prog_.eval(in, kZero.data(), out, kZero.data(), 1, TileProgram::scratch());
  }

 private:
  template <int M>
  void run_m(Shape shape, std::array<Strides, kMaxOperands> strides,
             const std::array<std::byte*, kMaxOperands>& base) const {
    // The axes in the first output's memory order (its elements are independent).
    sort_axes_by_first(shape, strides, nout_ + prog_.nin());
    std::array<const Strides*, M> sp;
    std::array<std::byte*, M> b;
    for (int k = 0; k < M; ++k) {
      sp[k] = &strides[k];
      b[k] = base[k];
    }
    const int nout = nout_, nin = prog_.nin();
    const TileProgram& prog = prog_;
    run_strided_parallel<M>(
        StridedLoop<M>(shape, sp), b, shape.prod(),
        [&prog, nout, nin](const std::array<std::byte*, M>& p, const std::array<int64_t, M>& s, int64_t n) {
          TileProgram::Buffers& buf = TileProgram::scratch();
          std::array<const std::byte*, TileProgram::kMaxInputs> in{};
          std::array<std::byte*, TileProgram::kMaxOutputs> out{};
          for (int64_t off = 0; off < n; off += TileProgram::kTile) {
            for (int k = 0; k < nout; ++k) out[k] = p[k] + off * s[k];
            for (int i = 0; i < nin; ++i) in[i] = p[nout + i] + off * s[nout + i];
            prog.eval(in.data(), s.data() + nout, out.data(), s.data(), std::min<int64_t>(TileProgram::kTile, n - off),
                      buf);
          }
        },
        cost_);
  }

  const Op& op_;
  TileProgram prog_;
  int nout_;
  int inplace_;
  BroadcastPattern bc_;
  std::vector<DType> out_dt_;  // per output: its value's dtype (float16 where stored as float16)
  int64_t cost_ = 0;           // the steps' scalar_op_cost summed: the threading threshold's weight
};

}  // namespace

void register_composite_kernels() {
  auto reference = [](const Apply& node) -> std::unique_ptr<Kernel> {
    return std::make_unique<FusedReferenceKernel>(node);
  };
  register_kernel(kReferenceBackend, typeid(Composite), reference);
  register_kernel(kReferenceBackend, typeid(MultiComposite), reference);
  register_kernel(kReferenceBackend, typeid(CompositeReduce), reference);
  register_kernel(kCpuBackend, typeid(Composite), [](const Apply& node) -> std::unique_ptr<Kernel> {
    const auto& c = static_cast<const Composite&>(*node.op);
    return std::make_unique<CompositeCpuKernel>(node, c, std::vector<int>{c.nvalues() - 1}, c.inplace);
  });
  register_kernel(kCpuBackend, typeid(MultiComposite), [](const Apply& node) -> std::unique_ptr<Kernel> {
    const auto& c = static_cast<const MultiComposite&>(*node.op);
    return std::make_unique<CompositeCpuKernel>(node, c, c.outputs, -1);
  });
  register_composite_reduce_cpu_kernel();
}

}  // namespace hypatia
