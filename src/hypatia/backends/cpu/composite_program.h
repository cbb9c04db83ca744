// A fused elementwise program (ops/composite.h) compiled for the CPU: the Elemwise inner loop of
// every step (SIMD where it has one), evaluated on tiles of up to kTile elements so that the
// intermediate results stay in L1. Shared by the Composite, MultiComposite and CompositeReduce
// kernels.
#pragma once
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "hypatia/backends/cpu/elemwise_inner.h"
#include "hypatia/backends/cpu/elemwise_simd.h"
#include "hypatia/core/error.h"
#include "hypatia/ops/composite.h"

namespace hypatia {

class TileProgram {
 public:
  static constexpr int kTile = 1024;
  static constexpr int kMaxSteps = 16;
  static constexpr int kMaxInputs = 8;
  static constexpr int kMaxOutputs = 4;
  /// Scratch for the step results of one tile (typed as double so that it holds either dtype).
  using Buffers = std::array<std::array<double, kTile>, kMaxSteps>;

  /// `outputs`: the values written to the caller's output pointers (distinct steps); the other
  /// steps go to the scratch buffers.
  TileProgram(const std::string& who, const CompositeProgram& prog, std::vector<int> outputs)
      : prog_(prog), item_(static_cast<int64_t>(itemsize(prog.dtype))) {
    HYP_ASSERT(prog.nin <= kMaxInputs && static_cast<int>(prog.steps.size()) <= kMaxSteps &&
                   static_cast<int>(outputs.size()) <= kMaxOutputs,
               who, ": too many inputs, steps or outputs for the CPU kernel");
    out_of_.assign(prog.steps.size(), -1);
    for (size_t k = 0; k < outputs.size(); ++k) out_of_[outputs[k] - prog.nin] = static_cast<int>(k);
    for (const auto& s : prog.steps) {
      auto [fn, writes] = elemwise_inner_fn(Elemwise(s.kind), prog.dtype);
      HYP_ASSERT(fn != nullptr && writes == prog.dtype, who, ": step ", scalar_op_name(s.kind), " has no ",
                 dtype_name(prog.dtype), " loop");
      fns_.push_back(fn);
      simd_.push_back(simd_supports(s.kind, prog.dtype));
    }
  }

  int nin() const { return prog_.nin; }
  DType dtype() const { return prog_.dtype; }

  /// Evaluates m <= kTile elements: input k at in[k] (byte stride is[k]), output k at out[k]
  /// (byte stride os[k]). The result of a step that is not an output is left in buf.
  void eval(const std::byte* const* in, const int64_t* is, std::byte* const* out, const int64_t* os, int64_t m,
            Buffers& buf) const {
    const int nin = prog_.nin;
    const int nsteps = static_cast<int>(prog_.steps.size());
    for (int j = 0; j < nsteps; ++j) {
      const auto& step = prog_.steps[j];
      std::array<const std::byte*, 3> ptr{};
      std::array<int64_t, 3> str{};
      for (size_t k = 0; k < step.args.size(); ++k) {
        const int a = step.args[k];
        if (a < nin) {
          ptr[k] = in[a];
          str[k] = is[a];
        } else if (const int o = out_of_[a - nin]; o >= 0) {
          ptr[k] = out[o];
          str[k] = os[o];
        } else {
          ptr[k] = reinterpret_cast<const std::byte*>(buf[a - nin].data());
          str[k] = item_;
        }
      }
      const int o = out_of_[j];
      std::byte* dst = o >= 0 ? out[o] : reinterpret_cast<std::byte*>(buf[j].data());
      fns_[j](dst, o >= 0 ? os[o] : item_, ptr.data(), str.data(), m, simd_[j]);
    }
  }

  /// The scratch buffer of the last step (when it is not an output).
  template <class T>
  static const T* last(const Buffers& buf, int nsteps) {
    return reinterpret_cast<const T*>(buf[nsteps - 1].data());
  }

 private:
  const CompositeProgram& prog_;
  int64_t item_;
  std::vector<int> out_of_;  // per step: its output index, or -1
  std::vector<InnerFn> fns_;
  std::vector<bool> simd_;
};

}  // namespace hypatia
