#include "hypatia/ops/composite.h"

#include <functional>
#include <sstream>

#include "hypatia/core/error.h"
#include "hypatia/ops/shape.h"

namespace hypatia {

Composite::Composite(int n_inputs, DType dt, std::vector<Step> s, int inplace_input)
    : nin(n_inputs), dtype(dt), steps(std::move(s)), inplace(inplace_input) {
  if (inplace < -1 || inplace >= nin) fail<ValueError>("Composite: in-place input ", inplace, " out of range");
  if (steps.empty()) fail<ValueError>("Composite: no steps");
  for (size_t j = 0; j < steps.size(); ++j) {
    if (static_cast<int>(steps[j].args.size()) != scalar_op_arity(steps[j].kind))
      fail<ValueError>("Composite: step ", j, " (", scalar_op_name(steps[j].kind), ") has ", steps[j].args.size(),
                       " arguments, expected ", scalar_op_arity(steps[j].kind));
    for (int a : steps[j].args)
      if (a < 0 || a >= nin + static_cast<int>(j))
        fail<ValueError>("Composite: step ", j, " reads argument ", a,
                         " which is neither an input nor an earlier step");
  }
}

std::vector<int> Composite::code() const {
  std::vector<int> c;
  for (const Step& s : steps) {
    c.push_back(static_cast<int>(s.kind));
    c.push_back(static_cast<int>(s.args.size()));
    c.insert(c.end(), s.args.begin(), s.args.end());
  }
  return c;
}

std::string Composite::name() const {
  std::ostringstream os;
  std::function<void(int)> expr = [&](int a) {
    if (a < nin) {
      os << "i" << a;
      return;
    }
    const Step& s = steps[a - nin];
    os << scalar_op_name(s.kind) << "(";
    for (size_t k = 0; k < s.args.size(); ++k) {
      if (k) os << ", ";
      expr(s.args[k]);
    }
    os << ")";
  };
  os << "Elemwise{Composite{";
  expr(nin + static_cast<int>(steps.size()) - 1);
  os << "}}";
  if (inplace >= 0) os << "[(0, " << inplace << ")]";
  return os.str();
}

std::vector<TensorType> Composite::make_output_types(const std::vector<Var>& inputs) const {
  if (static_cast<int>(inputs.size()) != nin)
    fail<TypeError>(name(), ": expected ", nin, " inputs, got ", inputs.size());
  const int nd = inputs[0]->ndim();
  std::vector<bool> bc(nd, true);
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i]->dtype() != dtype || inputs[i]->ndim() != nd)
      fail<TypeError>(name(), ": input ", i, " is ", inputs[i]->type.str(), "; every input must be ", dtype_name(dtype),
                      " with ", nd, " dimensions");
    for (int d = 0; d < nd; ++d) bc[d] = bc[d] && inputs[i]->type.broadcastable[d];
  }
  return {TensorType{dtype, bc}};
}

std::vector<ShapeVars> Composite::infer_shape(const Apply& node, const std::vector<ShapeVars>& in) const {
  return {broadcast_infer_shape(node, in)};
}

std::pair<std::vector<Var>, Var> composite_graph(const Apply& node) {
  const auto& op = static_cast<const Composite&>(*node.op);
  std::vector<Var> vals;
  for (const Var& v : node.inputs) vals.push_back(variable(v->type));
  std::vector<Var> ins = vals;
  for (const auto& s : op.steps) {
    std::vector<Var> args;
    for (int a : s.args) args.push_back(vals[a]);
    vals.push_back(elemwise(s.kind, args));
  }
  return {ins, vals.back()};
}

}  // namespace hypatia
