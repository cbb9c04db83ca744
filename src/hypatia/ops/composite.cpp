#include "hypatia/ops/composite.h"

#include <algorithm>
#include <functional>
#include <sstream>
#include <unordered_map>

#include "hypatia/core/error.h"
#include "hypatia/graph/fgraph.h"
#include "hypatia/ops/shape.h"

namespace hypatia {

CompositeProgram::CompositeProgram(int n_inputs, DType dt, std::vector<Step> s, const char* who)
    : nin(n_inputs), dtype(dt), steps(std::move(s)) {
  if (nin < 1) fail<ValueError>(who, ": needs at least one input, got ", nin);
  if (steps.empty()) fail<ValueError>(who, ": no steps");
  for (size_t j = 0; j < steps.size(); ++j) {
    if (static_cast<int>(steps[j].args.size()) != scalar_op_arity(steps[j].kind))
      fail<ValueError>(who, ": step ", j, " (", scalar_op_name(steps[j].kind), ") has ", steps[j].args.size(),
                       " arguments, expected ", scalar_op_arity(steps[j].kind));
    for (int a : steps[j].args)
      if (a < 0 || a >= nin + static_cast<int>(j))
        fail<ValueError>(who, ": step ", j, " reads argument ", a, " which is neither an input nor an earlier step");
  }
}

std::vector<int> CompositeProgram::code() const {
  std::vector<int> c;
  for (const Step& s : steps) {
    c.push_back(static_cast<int>(s.kind));
    c.push_back(static_cast<int>(s.args.size()));
    c.insert(c.end(), s.args.begin(), s.args.end());
  }
  return c;
}

std::string CompositeProgram::expr(int v) const {
  std::ostringstream os;
  std::function<void(int)> rec = [&](int a) {
    if (a < nin) {
      os << "i" << a;
      return;
    }
    const Step& s = steps[a - nin];
    os << scalar_op_name(s.kind) << "(";
    for (size_t k = 0; k < s.args.size(); ++k) {
      if (k) os << ", ";
      rec(s.args[k]);
    }
    os << ")";
  };
  rec(v);
  return os.str();
}

std::vector<bool> CompositeProgram::check_inputs(const Op& op, const std::vector<Var>& inputs) const {
  if (static_cast<int>(inputs.size()) != nin)
    fail<TypeError>(op.name(), ": expected ", nin, " inputs, got ", inputs.size());
  const int nd = inputs[0]->ndim();
  std::vector<bool> bc(nd, true);
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i]->dtype() != dtype || inputs[i]->ndim() != nd)
      fail<TypeError>(op.name(), ": input ", i, " is ", inputs[i]->type.str(), "; every input must be ",
                      dtype_name(dtype), " with ", nd, " dimensions");
    for (int d = 0; d < nd; ++d) bc[d] = bc[d] && inputs[i]->type.broadcastable[d];
  }
  return bc;
}

std::vector<Var> CompositeProgram::build(const std::vector<Var>& inputs) const {
  std::vector<Var> vals = inputs;
  for (const auto& s : steps) {
    std::vector<Var> args;
    for (int a : s.args) args.push_back(vals[a]);
    vals.push_back(elemwise(s.kind, args));
  }
  return vals;
}

namespace {

std::vector<Var> fresh_inputs(const Apply& node) {
  std::vector<Var> ins;
  for (const Var& v : node.inputs) ins.push_back(variable(v->type));
  return ins;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Composite

Composite::Composite(int n_inputs, DType dt, std::vector<Step> s, int inplace_input)
    : CompositeProgram(n_inputs, dt, std::move(s), "Composite"), inplace(inplace_input) {
  if (inplace < -1 || inplace >= nin) fail<ValueError>("Composite: in-place input ", inplace, " out of range");
}

std::string Composite::name() const {
  std::ostringstream os;
  os << "Elemwise{Composite{" << expr(nvalues() - 1) << "}}";
  if (inplace >= 0) os << "[(0, " << inplace << ")]";
  return os.str();
}

std::vector<TensorType> Composite::make_output_types(const std::vector<Var>& inputs) const {
  return {TensorType{dtype, check_inputs(*this, inputs)}};
}

std::vector<ShapeVars> Composite::infer_shape(const Apply& node, const std::vector<ShapeVars>& in) const {
  return {broadcast_infer_shape(node, in)};
}

std::optional<std::pair<std::vector<Var>, std::vector<Var>>> Composite::inner_graph(const Apply& node) const {
  return fused_graph(node);
}

// ---------------------------------------------------------------------------------------------
// MultiComposite

MultiComposite::MultiComposite(int n_inputs, DType dt, std::vector<Step> s, std::vector<int> outs)
    : CompositeProgram(n_inputs, dt, std::move(s), "MultiComposite"), outputs(std::move(outs)) {
  if (outputs.empty()) fail<ValueError>("MultiComposite: no outputs");
  for (size_t k = 0; k < outputs.size(); ++k) {
    if (outputs[k] < nin || outputs[k] >= nvalues())
      fail<ValueError>("MultiComposite: output ", k, " names value ", outputs[k], ", which is not a step");
    if (std::find(outputs.begin(), outputs.begin() + k, outputs[k]) != outputs.begin() + k)
      fail<ValueError>("MultiComposite: value ", outputs[k], " is output twice");
  }
}

std::string MultiComposite::name() const {
  std::ostringstream os;
  os << "Elemwise{Composite{";
  for (size_t k = 0; k < outputs.size(); ++k) os << (k ? ", " : "") << expr(outputs[k]);
  os << "}}";
  return os.str();
}

std::vector<TensorType> MultiComposite::make_output_types(const std::vector<Var>& inputs) const {
  TensorType t{dtype, check_inputs(*this, inputs)};
  return std::vector<TensorType>(outputs.size(), t);
}

std::vector<ShapeVars> MultiComposite::infer_shape(const Apply& node, const std::vector<ShapeVars>& in) const {
  return std::vector<ShapeVars>(outputs.size(), broadcast_infer_shape(node, in));
}

std::optional<std::pair<std::vector<Var>, std::vector<Var>>> MultiComposite::inner_graph(const Apply& node) const {
  return fused_graph(node);
}

// ---------------------------------------------------------------------------------------------
// CompositeReduce

CompositeReduce::CompositeReduce(int n_inputs, DType dt, std::vector<Step> s, ReduceKind k, std::vector<int> ax,
                                 DType out)
    : CompositeProgram(n_inputs, dt, std::move(s), "CompositeReduce"), kind(k), axes(std::move(ax)), out_dtype(out) {
  const bool sum_like = kind == ReduceKind::Sum || kind == ReduceKind::Prod;
  if (!sum_like && kind != ReduceKind::Max && kind != ReduceKind::Min)
    fail<ValueError>("CompositeReduce: reduction ", reduce_kind_name(kind), " is not supported (sum, prod, max, min)");
  if (dtype != DType::Float32 && dtype != DType::Float64)
    fail<ValueError>("CompositeReduce: dtype must be float32 or float64, got ", dtype_name(dtype));
  if (out_dtype != dtype && !(sum_like && out_dtype == DType::Float64))
    fail<ValueError>("CompositeReduce: output dtype ", dtype_name(out_dtype), " is not allowed for ",
                     reduce_kind_name(kind), " of ", dtype_name(dtype));
  for (size_t i = 0; i < axes.size(); ++i)
    if (axes[i] < 0 || (i > 0 && axes[i] <= axes[i - 1]))
      fail<ValueError>("CompositeReduce: axes must be sorted, unique and non-negative");
}

std::string CompositeReduce::name() const {
  std::ostringstream os;
  os << Reduce(kind, axes, out_dtype).name() << "{Composite{" << expr(nvalues() - 1) << "}}";
  return os.str();
}

std::vector<TensorType> CompositeReduce::make_output_types(const std::vector<Var>& inputs) const {
  std::vector<bool> bc = check_inputs(*this, inputs);
  if (!axes.empty() && axes.back() >= static_cast<int>(bc.size()))
    fail<TypeError>(name(), ": axis ", axes.back(), " out of range for inputs with ", bc.size(), " dimensions");
  std::vector<bool> out;
  for (int d = 0; d < static_cast<int>(bc.size()); ++d)
    if (!std::binary_search(axes.begin(), axes.end(), d)) out.push_back(bc[d]);
  return {TensorType{out_dtype, out}};
}

std::vector<ShapeVars> CompositeReduce::infer_shape(const Apply& node, const std::vector<ShapeVars>& in) const {
  ShapeVars s;
  const int nd = node.inputs[0]->ndim();
  for (int d = 0; d < nd; ++d) {
    if (std::binary_search(axes.begin(), axes.end(), d)) continue;
    Var len;
    for (size_t i = 0; i < node.inputs.size() && !len; ++i)
      if (!node.inputs[i]->type.broadcastable[d]) len = in[i][d];
    s.push_back(len ? len : int_constant(1));
  }
  return {s};
}

std::optional<std::pair<std::vector<Var>, std::vector<Var>>> CompositeReduce::inner_graph(const Apply& node) const {
  return fused_graph(node);
}

// ---------------------------------------------------------------------------------------------

std::pair<std::vector<Var>, std::vector<Var>> fused_graph(const Apply& node) {
  std::vector<Var> ins = fresh_inputs(node);
  if (const auto* c = dynamic_cast<const Composite*>(node.op.get())) return {ins, {c->build(ins).back()}};
  if (const auto* m = dynamic_cast<const MultiComposite*>(node.op.get())) {
    std::vector<Var> vals = m->build(ins), outs;
    for (int v : m->outputs) outs.push_back(vals[v]);
    return {ins, outs};
  }
  if (const auto* r = dynamic_cast<const CompositeReduce*>(node.op.get())) {
    Var x = r->build(ins).back();
    return {ins, {apply_op1(std::make_shared<Reduce>(r->kind, r->axes, r->out_dtype), {x})}};
  }
  fail<TypeError>("fused_graph: ", node.op->name(), " is not a composite op");
}

std::pair<std::vector<Var>, Var> composite_graph(const Apply& node) {
  auto [ins, outs] = fused_graph(node);
  return {ins, outs.at(0)};
}

void Composite::check_runtime_inputs(const Apply& node, std::span<NDArray* const> in) const {
  check_elemwise_inputs(*this, node, in, inplace);
}

}  // namespace hypatia
