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
/// step j. A Cast step converts between the program's dtype and float16 (`cast_to` says which
/// way); other steps ignore `cast_to`.
struct CompositeStep {
  ScalarOpKind kind;
  std::vector<int> args;
  DType cast_to = DType::Float32;
  /// The scalar op's name; a Cast's with its target: "cast{float16}".
  std::string name() const;
};

/// The program the composite ops share: `nin` inputs (of the same ndim, broadcasting together
/// like Elemwise) and `steps` evaluated in order. Value v < nin is input v, value nin + j the
/// result of step j. Every value is of the compute dtype `dtype`, except where float16 is stored
/// (float16 storage, float32 arithmetic): float16 inputs (`in_dtypes`) and the results of Cast
/// steps to float16, which only Cast steps back to float32 read, or which are outputs.
struct CompositeProgram {
  using Step = CompositeStep;
  int nin;
  DType dtype;
  std::vector<Step> steps;
  /// Per input: `dtype`, or float16 when `dtype` is float32.
  std::vector<DType> in_dtypes;

  /// Checks arities, argument ranges and dtypes (ValueError naming `who`). `in_dtypes` empty:
  /// every input is of `dt`.
  CompositeProgram(int n_inputs, DType dt, std::vector<Step> s, const char* who, std::vector<DType> in_dtypes = {});
  int nvalues() const { return nin + static_cast<int>(steps.size()); }
  /// The dtype of value v.
  DType value_dtype(int v) const { return v < nin ? in_dtypes[v] : value_dtypes_[v - nin]; }
  /// The steps flattened as [kind, nargs, args... (, cast_to)], then the input dtypes when some
  /// differ from `dtype`: for equality and hashing.
  std::vector<int> code() const;
  /// Value v as an expression: "tanh(add(mul(i0, i1), i2))", casts as "cast{float16}(i0)".
  std::string expr(int v) const;
  /// Checks the inputs of a node of `op` (count, dtype, ndim; TypeError naming the op) and
  /// returns the broadcastable pattern of the elementwise result.
  std::vector<bool> check_inputs(const Op& op, const std::vector<Var>& inputs) const;
  /// The unfused Elemwise graph on `inputs`: every value (the inputs, then one per step).
  std::vector<Var> build(const std::vector<Var>& inputs) const;

 private:
  std::vector<DType> value_dtypes_;  // per step
  bool stores_float16_ = false;      // some input or step is float16 (code() then lists in_dtypes)
};

/// The output is the last step's result.
class Composite : public OpWithProps<Composite>, public CompositeProgram {
 public:
  /// The input whose buffer the output overwrites (-1: none), set by the in-place rewrite.
  int inplace = -1;

  Composite(int n_inputs, DType dt, std::vector<Step> steps, int inplace_input = -1, std::vector<DType> in_dtypes = {});
  /// `prog` overwriting input `inplace_input` (-1: none).
  Composite(const CompositeProgram& prog, int inplace_input);
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

/// Several results of one program (multi-output fusion), all of the elementwise result's
/// broadcastable pattern and shape (each of its value's dtype). Never in place: an output written early could clobber
/// an input a later step reads (the in-place rewrite handles Composite only).
class MultiComposite : public OpWithProps<MultiComposite>, public CompositeProgram {
 public:
  /// The value of each output: distinct step results (>= nin).
  std::vector<int> outputs;

  MultiComposite(int n_inputs, DType dt, std::vector<Step> steps, std::vector<int> outputs,
                 std::vector<DType> in_dtypes = {});
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
/// sums and products, float64. The last step's result is of `dtype` (float16 inputs are read
/// through Cast steps).
class CompositeReduce : public OpWithProps<CompositeReduce>, public CompositeProgram {
 public:
  ReduceKind kind;
  std::vector<int> axes;
  DType out_dtype;

  CompositeReduce(int n_inputs, DType dt, std::vector<Step> steps, ReduceKind k, std::vector<int> axes, DType out,
                  std::vector<DType> in_dtypes = {});
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
