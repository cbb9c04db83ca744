// Composite: a fused chain or tree of elementwise scalar ops (Theano's Elemwise{Composite{...}}),
// built by the fusion rewrite and executed in one pass over memory.
#pragma once
#include <string>
#include <vector>

#include "hypatia/graph/graph.h"
#include "hypatia/ops/elemwise.h"

namespace hypatia {

/// Inputs (all of dtype `dtype` and the same ndim) broadcast together like Elemwise. `steps`
/// are evaluated in order; an argument index below the number of inputs names an input, index
/// nin + j the result of step j. The output is the last step's result.
class Composite : public OpWithProps<Composite> {
 public:
  struct Step {
    ScalarOpKind kind;
    std::vector<int> args;
  };
  int nin;
  DType dtype;
  std::vector<Step> steps;
  /// The input whose buffer the output overwrites (-1: none), set by the in-place rewrite.
  int inplace = -1;

  Composite(int n_inputs, DType dt, std::vector<Step> steps, int inplace_input = -1);
  /// The steps flattened as [kind, nargs, args...] for equality and hashing.
  std::vector<int> code() const;
  auto props() const { return std::make_tuple(nin, dtype, code(), inplace); }
  /// "Elemwise{Composite{tanh(add(mul(i0, i1), i2))}}", with "[(0, i)]" appended when in place.
  std::string name() const override;
  std::vector<TensorType> make_output_types(const std::vector<Var>& inputs) const override;
  std::vector<ShapeVars> infer_shape(const Apply& node, const std::vector<ShapeVars>& in) const override;
  AliasMap destroy_map() const override {
    if (inplace < 0) return {};
    return {{inplace}};
  }
};

/// The elementwise graph a Composite computes, rebuilt on fresh input variables of the node's
/// input types: (inputs, output).
std::pair<std::vector<Var>, Var> composite_graph(const Apply& node);

}  // namespace hypatia
