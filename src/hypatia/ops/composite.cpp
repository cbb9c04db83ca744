#include "hypatia/ops/composite.h"

#include <algorithm>
#include <functional>
#include <sstream>
#include <unordered_map>

#include "hypatia/core/error.h"
#include "hypatia/graph/fgraph.h"
#include "hypatia/ops/shape.h"

namespace hypatia {

CompositeProgram::CompositeProgram(int n_inputs, DType dt, std::vector<Step> s, const char* who,
                                   std::vector<DType> in_dts)
    : nin(n_inputs), dtype(dt), steps(std::move(s)), in_dtypes(std::move(in_dts)) {
  if (nin < 1) fail<ValueError>(who, ": needs at least one input, got ", nin);
  if (steps.empty()) fail<ValueError>(who, ": no steps");
  if (in_dtypes.empty()) in_dtypes.assign(nin, dtype);
  if (static_cast<int>(in_dtypes.size()) != nin)
    fail<ValueError>(who, ": ", in_dtypes.size(), " input dtypes for ", nin, " inputs");
  // float16 is a storage dtype of float32 programs: loaded, rounded to and stored by Cast steps.
  auto storable = [&](DType d) { return d == dtype || (dtype == DType::Float32 && d == DType::Float16); };
  for (int i = 0; i < nin; ++i) {
    if (!storable(in_dtypes[i]))
      fail<ValueError>(who, ": input ", i, " is ", dtype_name(in_dtypes[i]), "; a ", dtype_name(dtype),
                       " program reads ", dtype_name(dtype), dtype == DType::Float32 ? " or float16" : "");
    stores_float16_ = stores_float16_ || in_dtypes[i] != dtype;
  }
  value_dtypes_.reserve(steps.size());
  for (size_t j = 0; j < steps.size(); ++j) {
    const Step& st = steps[j];
    if (static_cast<int>(st.args.size()) != scalar_op_arity(st.kind))
      fail<ValueError>(who, ": step ", j, " (", scalar_op_name(st.kind), ") has ", st.args.size(),
                       " arguments, expected ", scalar_op_arity(st.kind));
    for (int a : st.args)
      if (a < 0 || a >= nin + static_cast<int>(j))
        fail<ValueError>(who, ": step ", j, " reads argument ", a, " which is neither an input nor an earlier step");
    if (st.kind == ScalarOpKind::Cast) {
      const DType from = value_dtype(st.args[0]);
      if (!storable(st.cast_to) || !storable(from) || from == st.cast_to)
        fail<ValueError>(who, ": step ", j, " casts ", dtype_name(from), " to ", dtype_name(st.cast_to), "; a ",
                         dtype_name(dtype), " program casts only between ", dtype_name(dtype), " and float16");
      value_dtypes_.push_back(st.cast_to);
      stores_float16_ = true;
      continue;
    }
    for (int a : st.args)
      if (value_dtype(a) != dtype)
        fail<ValueError>(who, ": step ", j, " (", scalar_op_name(st.kind), ") reads ", dtype_name(value_dtype(a)),
                         " value ", a, "; only Cast steps read float16");
    value_dtypes_.push_back(dtype);
  }
}

std::string CompositeStep::name() const {
  std::string n(scalar_op_name(kind));
  if (kind == ScalarOpKind::Cast) {
    n += '{';
    n += dtype_name(cast_to);
    n += '}';
  }
  return n;
}

std::vector<int> CompositeProgram::code() const {
  std::vector<int> c;
  for (const Step& s : steps) {
    c.push_back(static_cast<int>(s.kind));
    c.push_back(static_cast<int>(s.args.size()));
    c.insert(c.end(), s.args.begin(), s.args.end());
    if (s.kind == ScalarOpKind::Cast) c.push_back(static_cast<int>(s.cast_to));
  }
  if (stores_float16_)
    for (DType d : in_dtypes) c.push_back(static_cast<int>(d));
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
    os << s.name() << "(";
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
    if (inputs[i]->dtype() != in_dtypes[i] || inputs[i]->ndim() != nd)
      fail<TypeError>(op.name(), ": input ", i, " is ", inputs[i]->type.str(), "; expected ", dtype_name(in_dtypes[i]),
                      " with ", nd, " dimensions");
    for (int d = 0; d < nd; ++d) bc[d] = bc[d] && inputs[i]->type.broadcastable[d];
  }
  return bc;
}

std::vector<Var> CompositeProgram::build(const std::vector<Var>& inputs) const {
  std::vector<Var> vals = inputs;
  for (const auto& s : steps) {
    std::vector<Var> args;
    for (int a : s.args) args.push_back(vals[a]);
    vals.push_back(s.kind == ScalarOpKind::Cast ? cast(args[0], s.cast_to) : elemwise(s.kind, args));
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

Composite::Composite(int n_inputs, DType dt, std::vector<Step> s, int inplace_input, std::vector<DType> in_dts)
    : CompositeProgram(n_inputs, dt, std::move(s), "Composite", std::move(in_dts)), inplace(inplace_input) {
  if (inplace < -1 || inplace >= nin) fail<ValueError>("Composite: in-place input ", inplace, " out of range");
}

Composite::Composite(const CompositeProgram& prog, int inplace_input) : CompositeProgram(prog), inplace(inplace_input) {
  if (inplace < -1 || inplace >= nin) fail<ValueError>("Composite: in-place input ", inplace, " out of range");
}

std::string Composite::name() const {
  std::ostringstream os;
  os << "Elemwise{Composite{" << expr(nvalues() - 1) << "}}";
  if (inplace >= 0) os << "[(0, " << inplace << ")]";
  return os.str();
}

std::vector<TensorType> Composite::make_output_types(const std::vector<Var>& inputs) const {
  return {TensorType{value_dtype(nvalues() - 1), check_inputs(*this, inputs)}};
}

std::vector<ShapeVars> Composite::infer_shape(const Apply& node, const std::vector<ShapeVars>& in) const {
  return {broadcast_infer_shape(node, in)};
}

std::optional<std::pair<std::vector<Var>, std::vector<Var>>> Composite::inner_graph(const Apply& node) const {
  return fused_graph(node);
}

// ---------------------------------------------------------------------------------------------
// MultiComposite

MultiComposite::MultiComposite(int n_inputs, DType dt, std::vector<Step> s, std::vector<int> outs,
                               std::vector<DType> in_dts)
    : CompositeProgram(n_inputs, dt, std::move(s), "MultiComposite", std::move(in_dts)), outputs(std::move(outs)) {
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
  const std::vector<bool> bc = check_inputs(*this, inputs);
  std::vector<TensorType> r;
  for (int v : outputs) r.push_back(TensorType{value_dtype(v), bc});
  return r;
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
                                 DType out, std::vector<DType> in_dts)
    : CompositeProgram(n_inputs, dt, std::move(s), "CompositeReduce", std::move(in_dts)),
      kind(k),
      axes(std::move(ax)),
      out_dtype(out) {
  const bool sum_like = kind == ReduceKind::Sum || kind == ReduceKind::Prod;
  if (!sum_like && kind != ReduceKind::Max && kind != ReduceKind::Min)
    fail<ValueError>("CompositeReduce: reduction ", reduce_kind_name(kind), " is not supported (sum, prod, max, min)");
  if (dtype != DType::Float32 && dtype != DType::Float64)
    fail<ValueError>("CompositeReduce: dtype must be float32 or float64, got ", dtype_name(dtype));
  if (value_dtype(nvalues() - 1) != dtype)
    fail<ValueError>("CompositeReduce: the reduced value is ", dtype_name(value_dtype(nvalues() - 1)), ", not ",
                     dtype_name(dtype));
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
