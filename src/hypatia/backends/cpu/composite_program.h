// A fused elementwise program (ops/composite.h) compiled for the CPU: the Elemwise inner loop of
// every step (SIMD where it has one), evaluated on tiles of up to kTile elements so that the
// intermediate results stay in L1. Shared by the Composite, MultiComposite and CompositeReduce
// kernels.
//
// Scalar steps (a float value plus, minus or times a one-element input, and negation) are not
// passes of their own: they fold into the SIMD loop of a neighbouring step as an affine map
// ((v + c0) * c1) + c2 applied to its argument (pre) or its result (post), in the order and
// rounding of the unfused steps. tanh(exp(x * 0.5 + 0.25) - 1.5) * 2 runs as two passes over the
// tile, not six, and the pass that reads memory is the exp, whose arithmetic hides the loads.
//
// float16 (float32 programs only): a Cast of a float16 input loads it into a float32 tile (F16C);
// a Cast to float16 rounds the tile to float16 values kept in float32 (when steps read it back)
// and/or stores float16 to the output; a Cast back to float32 of such a value is no pass at all
// (it reads the rounded tile). Rounding and storing take a folded scalar map before them.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "hypatia/backends/cpu/elemwise_inner.h"
#include "hypatia/ops/composite.h"

namespace hypatia {

class TileProgram {
 public:
  static constexpr int kTile = 4096;
  static constexpr int kMaxSteps = 16;
  static constexpr int kMaxInputs = 8;
  static constexpr int kMaxOutputs = 4;
  /// Scratch for the step results of one tile (typed as double so that it holds either dtype),
  /// plus one for strided operands of folded steps. kMaxSteps bounds the steps that need a
  /// buffer: a float16 value cast back to float32 reads its rounding's. 4096-element tiles: 1024
  /// spent a tenth of the time of a two-pass float32 program in per-tile dispatch; the input, the
  /// stored step and the output tile of such a program still fit in L1.
  using Buffers = std::array<std::array<double, kTile>, kMaxSteps + 1>;
  /// This thread's scratch (557 KB, too much for a stack), allocated on first use.
  static Buffers& scratch();

  /// `outputs`: the values written to the caller's output pointers (distinct steps); with none,
  /// the last value is left in a buffer (result()). `scalar_inputs[k]`: input k always has one
  /// element (every dim broadcastable), so steps combining it with a value may fold.
  TileProgram(const std::string& who, const CompositeProgram& prog, const std::vector<int>& outputs,
              const std::vector<bool>& scalar_inputs);

  /// Per input of `node`: whether its type makes it one element (every dim broadcastable).
  static std::vector<bool> scalar_inputs(const Apply& node);

  int nin() const { return prog_.nin; }
  DType dtype() const { return prog_.dtype; }
  /// How many passes over a tile one evaluation makes (for tests).
  int passes() const { return static_cast<int>(exec_.size()); }

  /// Evaluates m <= kTile elements: input k at in[k] (byte stride is[k]), output k at out[k]
  /// (byte stride os[k]). Values that are not outputs are left in buf. (Non-temporal stores for
  /// large outputs measured slower, 13.5 against 11.0 ms on the 16M chain: not used.)
  void eval(const std::byte* const* in, const int64_t* is, std::byte* const* out, const int64_t* os, int64_t m,
            Buffers& buf) const;

  /// The last value, when the program has no outputs.
  template <class T>
  const T* result(const Buffers& buf) const {
    return reinterpret_cast<const T*>(buf[slot_[alias_[prog_.nvalues() - 1]]].data());
  }

 private:
  /// A constant of an affine map: input `input` (negated when `neg`), or with no input the
  /// identity (-0 for an addend, 1 for the factor; -1 when `neg`).
  struct Slot {
    int input = -1;
    bool neg = false;
    bool set() const { return input >= 0 || neg; }
  };
  /// ((v + c[0]) * c[1]) + c[2]; `stage`: how far along the three slots steps have been placed.
  struct Affine {
    std::array<Slot, 3> c{};
    int stage = 0;
    bool identity() const { return !c[0].set() && !c[1].set() && !c[2].set(); }
    /// Appends step `kind` with scalar input `s` (first operand when `s_first`); false when the
    /// result is not of the form above.
    bool compose(ScalarOpKind kind, int s, bool s_first);
  };
  /// What a pass does with float16: nothing, load a float16 input (Widen), round to float16
  /// values kept as float32 in the destination's buffer (Round), store float16 to the
  /// destination's output (Narrow).
  enum class Half : uint8_t { None, Widen, Round, Narrow };
  /// One pass over the tile: op `kind` on `args` (values that are stored), with `pre` applied to
  /// a unary op's argument and `post` to the result, writing value `dest`.
  struct Exec {
    ScalarOpKind kind;
    std::vector<int> args;
    Affine pre, post;
    int dest;
    InnerFn fn;
    bool simd;
    Half half = Half::None;
  };

  /// Whether an exec of `kind` with `nargs` arguments can apply a pre (unary) or post map.
  bool folds(ScalarOpKind kind, int nargs) const;
  /// Whether step `s` can take its (unary) argument's map as a pre map.
  bool takes_pre(const CompositeStep& s) const;
  void plan(const std::string& who, const std::vector<int>& outputs, const std::vector<bool>& scalar_inputs);
  /// The passes of a Cast step writing value v from `arg` (`pre` applied to it), which `readers`
  /// steps read.
  void plan_cast(const std::string& who, int v, int arg, const Affine& pre, int readers, std::vector<int>& exec_of);
  void add_exec(const std::string& who, ScalarOpKind kind, std::vector<int> args, const Affine& pre, int dest);
  void run_half(const Exec& e, const std::byte* src, int64_t ss, std::byte* dst, int64_t ds, const std::byte* const* in,
                int64_t m, Buffers& buf) const;
  void run_exec(const Exec& e, std::array<const std::byte*, 3>& ptr, std::array<int64_t, 3>& str, std::byte* dst,
                int64_t ds, const std::byte* const* in, int64_t m, Buffers& buf) const;
  /// The three constants of `a` read from the tile's scalar inputs.
  void constants(const Affine& a, const std::byte* const* in, double* c) const;

  const CompositeProgram& prog_;
  int64_t item_;
  std::vector<int> out_of_;     // per value: its output index, or -1
  std::vector<int> alias_;      // per value: the value whose tile it reads (a widened float16 step: its rounding)
  std::vector<int> slot_;       // per step value with a tile of its own: its buffer (at most kMaxSteps)
  std::vector<int> where_out_;  // out_of_, without the float16 outputs (steps read those from buffers)
  std::vector<Exec> exec_;
};

}  // namespace hypatia
