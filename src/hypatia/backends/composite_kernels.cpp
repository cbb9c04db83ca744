// Kernels of the fused Composite op: the reference kernel runs the reference Elemwise kernel of
// each step over whole arrays; the CPU kernel runs all steps tile by tile (1024 elements) so that
// intermediates stay in L1 and memory is read and written once.
#include <algorithm>
#include <array>
#include <unordered_map>

#include "hypatia/backends/cpu/elemwise_inner.h"
#include "hypatia/backends/cpu/elemwise_simd.h"
#include "hypatia/backends/cpu/parallel_loop.h"
#include "hypatia/backends/registry.h"
#include "hypatia/core/error.h"
#include "hypatia/graph/fgraph.h"
#include "hypatia/ops/composite.h"

namespace hypatia {
namespace {

class CompositeReferenceKernel final : public Kernel {
 public:
  explicit CompositeReferenceKernel(const Apply& node) : inplace_(static_cast<const Composite&>(*node.op).inplace) {
    auto [ins, out] = composite_graph(node);
    ins_ = ins;
    out_ = out;
    for (const auto& n : toposort({out})) {
      nodes_.push_back(n);
      kernels_.push_back(make_kernel(Backend::Reference, *n));
    }
  }
  void run(const KernelArgs& args) override {
    std::unordered_map<const Variable*, NDArray> vals;
    for (size_t i = 0; i < ins_.size(); ++i) vals[ins_[i].get()] = *args.in[i];
    for (size_t t = 0; t < nodes_.size(); ++t) {
      std::vector<NDArray*> in, out;
      for (const auto& v : nodes_[t]->inputs) in.push_back(&vals.at(v.get()));
      out.push_back(&vals[nodes_[t]->output_ptr(0)]);
      kernels_[t]->run(KernelArgs{in, out});
    }
    if (inplace_ >= 0) {
      args.in[inplace_]->assign(vals.at(out_.get()));
      *args.out[0] = *args.in[inplace_];
    } else {
      *args.out[0] = vals.at(out_.get());
    }
  }

 private:
  int inplace_;
  std::vector<Var> ins_;
  Var out_;
  std::vector<std::shared_ptr<Apply>> nodes_;
  std::vector<std::unique_ptr<Kernel>> kernels_;
};

constexpr int kTile = 1024;
constexpr int kMaxSteps = 16;
constexpr int kMaxInputs = 8;

class CompositeCpuKernel final : public Kernel {
 public:
  explicit CompositeCpuKernel(const Apply& node) : op_(static_cast<const Composite&>(*node.op)) {
    HYP_ASSERT(op_.nin <= kMaxInputs && static_cast<int>(op_.steps.size()) <= kMaxSteps, op_.name(),
               ": too many inputs or steps for the CPU kernel");
    for (const Var& v : node.inputs) bc_.push_back(v->type.broadcastable);
    for (const auto& s : op_.steps) {
      auto [fn, writes] = elemwise_inner_fn(Elemwise(s.kind), op_.dtype);
      HYP_ASSERT(fn != nullptr && writes == op_.dtype, op_.name(), ": step ", scalar_op_name(s.kind), " has no ",
                 dtype_name(op_.dtype), " loop");
      fns_.push_back(fn);
      simd_.push_back(simd_supports(s.kind, op_.dtype));
    }
  }

  void run(const KernelArgs& args) override {
    const Shape shape = elemwise_broadcast_shape(op_, args.in, bc_);
    NDArray& out = op_.inplace >= 0
                       ? prepare_inplace_output(*args.out[0], *args.in[op_.inplace], shape, op_.dtype, op_, op_.inplace)
                       : prepare_output(*args.out[0], shape, op_.dtype);
    std::array<const NDArray*, kMaxInputs> in{};
    for (int i = 0; i < op_.nin; ++i) in[i] = args.in[i];
    const BroadcastOperands<kMaxInputs + 1> ops(out, std::span<const NDArray* const>(in.data(), op_.nin));
    switch (op_.nin) {
      case 1:
        return run_m<2>(shape, ops);
      case 2:
        return run_m<3>(shape, ops);
      case 3:
        return run_m<4>(shape, ops);
      case 4:
        return run_m<5>(shape, ops);
      case 5:
        return run_m<6>(shape, ops);
      case 6:
        return run_m<7>(shape, ops);
      case 7:
        return run_m<8>(shape, ops);
      default:
        return run_m<9>(shape, ops);
    }
  }

 private:
  template <int M>
  void run_m(const Shape& shape, const BroadcastOperands<kMaxInputs + 1>& ops) const {
    ops.run_parallel<M>(shape, [this](const std::array<std::byte*, M>& p, const std::array<int64_t, M>& s, int64_t n) {
      tiles<M>(p, s, n);
    });
  }

  template <int M>
  void tiles(const std::array<std::byte*, M>& p, const std::array<int64_t, M>& s, int64_t n) const {
    alignas(64) std::array<std::array<double, kTile>, kMaxSteps> buf;
    const int nin = op_.nin;
    const int nsteps = static_cast<int>(op_.steps.size());
    const int64_t item = static_cast<int64_t>(itemsize(op_.dtype));
    for (int64_t off = 0; off < n; off += kTile) {
      const int64_t m = std::min<int64_t>(kTile, n - off);
      for (int j = 0; j < nsteps; ++j) {
        const auto& step = op_.steps[j];
        std::array<const std::byte*, 3> ptr{};
        std::array<int64_t, 3> str{};
        for (size_t k = 0; k < step.args.size(); ++k) {
          const int a = step.args[k];
          if (a < nin) {
            ptr[k] = p[a + 1] + off * s[a + 1];
            str[k] = s[a + 1];
          } else {
            ptr[k] = reinterpret_cast<const std::byte*>(buf[a - nin].data());
            str[k] = item;
          }
        }
        std::byte* dst = j + 1 == nsteps ? p[0] + off * s[0] : reinterpret_cast<std::byte*>(buf[j].data());
        const int64_t dstr = j + 1 == nsteps ? s[0] : item;
        fns_[j](dst, dstr, ptr.data(), str.data(), m, simd_[j]);
      }
    }
  }

  const Composite& op_;
  std::vector<std::vector<bool>> bc_;
  std::vector<InnerFn> fns_;
  std::vector<bool> simd_;
};

}  // namespace

void register_composite_kernels() {
  register_kernel(Backend::Reference, typeid(Composite), [](const Apply& node) -> std::unique_ptr<Kernel> {
    return std::make_unique<CompositeReferenceKernel>(node);
  });
  register_kernel(Backend::Cpu, typeid(Composite), [](const Apply& node) -> std::unique_ptr<Kernel> {
    return std::make_unique<CompositeCpuKernel>(node);
  });
}

}  // namespace hypatia
