// Fused elementwise programs, built by the fusion rewrite (rewrite/fusion.cpp) and executed in one
// pass over memory: Composite (one output, Theano's Elemwise{Composite{...}}), MultiComposite
// (several outputs of one shape computed together) and CompositeReduce (a reduction of the
// program's result, accumulated tile by tile without materialising it).
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "hypatia/graph/graph.h"
#include "hypatia/ops/elemwise.h"
#include "hypatia/ops/reduce.h"

namespace hypatia {

/// One scalar step of a fused program: argument a < nin names input a, a = nin + j the result of
/// step j.
struct CompositeStep {
  ScalarOpKind kind;
  std::vector<int> args;
};

/// The program the composite ops share: `nin` inputs (all of dtype `dtype` and the same ndim,
/// broadcasting together like Elemwise) and `steps` evaluated in order. Value v < nin is input v,
/// value nin + j the result of step j.
struct CompositeProgram {
  using Step = CompositeStep;
  int nin;
  DType dtype;
  std::vector<Step> steps;

  /// Checks arities and argument ranges (ValueError naming `who`).
  CompositeProgram(int n_inputs, DType dt, std::vector<Step> s, const char* who);
  int nvalues() const { return nin + static_cast<int>(steps.size()); }
  /// The steps flattened as [kind, nargs, args...] for equality and hashing.
  std::vector<int> code() const;
  /// Value v as an expression: "tanh(add(mul(i0, i1), i2))".
  std::string expr(int v) const;
  /// Checks the inputs of a node of `op` (count, dtype, ndim; TypeError naming the op) and
  /// returns the broadcastable pattern of the elementwise result.
  std::vector<bool> check_inputs(const Op& op, const std::vector<Var>& inputs) const;
  /// The unfused Elemwise graph on `inputs`: every value (the inputs, then one per step).
  std::vector<Var> build(const std::vector<Var>& inputs) const;
};

/// The output is the last step's result.
class Composite : public OpWithProps<Composite>, public CompositeProgram {
 public:
  /// The input whose buffer the output overwrites (-1: none), set by the in-place rewrite.
  int inplace = -1;

  Composite(int n_inputs, DType dt, std::vector<Step> steps, int inplace_input = -1);
  auto props() const { return std::make_tuple(nin, dtype, code(), inplace); }
  /// "Elemwise{Composite{tanh(add(mul(i0, i1), i2))}}", with "[(0, i)]" appended when in place.
  std::string name() const override;
  std::vector<TensorType> make_output_types(const std::vector<Var>& inputs) const override;
  std::vector<ShapeVars> infer_shape(const Apply& node, const std::vector<ShapeVars>& in) const override;
  /// The unfused graph (grad and Rop go through it).
  std::optional<std::pair<std::vector<Var>, std::vector<Var>>> inner_graph(const Apply& node) const override;
  AliasMap destroy_map() const override {
    if (inplace < 0) return {};
    return {{inplace}};
  }
  bool checks_runtime_inputs() const override { return true; }
  /// The broadcast check of the kernel, and that an overwritten input has the result's shape.
  void check_runtime_inputs(const Apply& node, std::span<NDArray* const> in) const override;
};

/// Several results of one program (multi-output fusion), all of the elementwise result's type
/// and shape. Never in place: an output written early could clobber an input a later step reads
/// (the in-place rewrite handles Composite only).
class MultiComposite : public OpWithProps<MultiComposite>, public CompositeProgram {
 public:
  /// The value of each output: distinct step results (>= nin).
  std::vector<int> outputs;

  MultiComposite(int n_inputs, DType dt, std::vector<Step> steps, std::vector<int> outputs);
  auto props() const { return std::make_tuple(nin, dtype, code(), outputs); }
  /// "Elemwise{Composite{tanh(mul(i0, i1)), add(exp(mul(i0, i1)), i2)}}".
  std::string name() const override;
  std::vector<TensorType> make_output_types(const std::vector<Var>& inputs) const override;
  std::vector<ShapeVars> infer_shape(const Apply& node, const std::vector<ShapeVars>& in) const override;
  std::optional<std::pair<std::vector<Var>, std::vector<Var>>> inner_graph(const Apply& node) const override;
};

/// Reduction `kind` (Sum, Prod, Max or Min) over `axes` (sorted, unique) of the last step's
/// result, like Reduce(kind, axes, out_dtype) on top of the Composite, without materialising the
/// elementwise result. Sums and products accumulate in float64; `out_dtype` is `dtype` or, for
/// sums and products, float64.
class CompositeReduce : public OpWithProps<CompositeReduce>, public CompositeProgram {
 public:
  ReduceKind kind;
  std::vector<int> axes;
  DType out_dtype;

  CompositeReduce(int n_inputs, DType dt, std::vector<Step> steps, ReduceKind k, std::vector<int> axes, DType out);
  auto props() const { return std::make_tuple(nin, dtype, code(), kind, axes, out_dtype); }
  /// "Sum{axis=[0, 1], dtype=float32}{Composite{mul(i0, i1)}}".
  std::string name() const override;
  std::vector<TensorType> make_output_types(const std::vector<Var>& inputs) const override;
  std::vector<ShapeVars> infer_shape(const Apply& node, const std::vector<ShapeVars>& in) const override;
  std::optional<std::pair<std::vector<Var>, std::vector<Var>>> inner_graph(const Apply& node) const override;
};

/// The unfused graph a Composite, MultiComposite or CompositeReduce node computes, rebuilt on
/// fresh input variables of the node's input types: (inputs, outputs).
std::pair<std::vector<Var>, std::vector<Var>> fused_graph(const Apply& node);
/// fused_graph of a Composite node, with its one output.
std::pair<std::vector<Var>, Var> composite_graph(const Apply& node);

}  // namespace hypatia
