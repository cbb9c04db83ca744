// DimShuffle, Shape, Shape_i, MakeVector, Alloc and their builders.
#include "hypatia/ops/shape.h"

#include <algorithm>
#include <sstream>

#include "hypatia/core/error.h"
#include "hypatia/ops/elemwise.h"
#include "hypatia/ops/reduce.h"
#include "hypatia/ops/shape_util.h"

namespace hypatia {

namespace detail {

std::optional<int64_t> constant_int(const Var& v) {
  if (!v || !v->is_constant() || v->ndim() != 0 || !(is_integer(v->dtype()) || is_bool(v->dtype())))
    return std::nullopt;
  return v->data.get_flat_int(0);
}

std::string bc_str(const std::vector<bool>& bc) {
  std::ostringstream os;
  os << "(";
  for (size_t i = 0; i < bc.size(); ++i) os << (i ? ", " : "") << (bc[i] ? "True" : "False");
  if (bc.size() == 1) os << ",";
  os << ")";
  return os.str();
}

Var as_int64(Var v) { return v->dtype() == DType::Int64 ? v : cast(v, DType::Int64); }

void check_int_scalar(const std::string& op, const Var& v, const char* role) {
  if (!v) fail<TypeError>(op, ": ", role, " is null");
  if (v->ndim() != 0 || !is_integer(v->dtype()))
    fail<TypeError>(op, ": ", role, " must be a 0-d integer, got ", v->type.str());
}

}  // namespace detail

using detail::bc_str;
using detail::constant_int;

// ---------------------------------------------------------------------------------------------
// DimShuffle

DimShuffle::DimShuffle(std::vector<bool> input_bc, std::vector<int> pat)
    : input_broadcastable(std::move(input_bc)), pattern(std::move(pat)) {
  const int nd = static_cast<int>(input_broadcastable.size());
  std::vector<bool> used(nd, false);
  for (int p : pattern) {
    if (p < -1 || p >= nd) fail<ValueError>("DimShuffle: pattern entry ", p, " is not an axis of a ", nd, "-d input");
    if (p >= 0) {
      if (used[p]) fail<ValueError>("DimShuffle: axis ", p, " appears twice in the pattern");
      used[p] = true;
    }
  }
  for (int i = 0; i < nd; ++i)
    if (!used[i] && !input_broadcastable[i])
      fail<ValueError>("DimShuffle: cannot drop input axis ", i, ": it is not broadcastable (input broadcastable ",
                       bc_str(input_broadcastable), ")");
}

std::string DimShuffle::name() const {
  std::ostringstream os;
  os << "DimShuffle{";
  for (size_t i = 0; i < pattern.size(); ++i) {
    if (i) os << ",";
    if (pattern[i] < 0)
      os << "x";
    else
      os << pattern[i];
  }
  os << "}";
  return os.str();
}

std::vector<TensorType> DimShuffle::make_output_types(const std::vector<Var>& inputs) const {
  if (inputs.size() != 1) fail<TypeError>(name(), ": expected 1 input, got ", inputs.size());
  const TensorType& t = inputs[0]->type;
  if (t.ndim() != static_cast<int>(input_broadcastable.size()))
    fail<TypeError>(name(), ": expected an input of ", input_broadcastable.size(), " dimensions (broadcastable ",
                    bc_str(input_broadcastable), "), got ", t.str());
  std::vector<bool> used(t.ndim(), false);
  std::vector<bool> bc;
  for (int p : pattern) {
    if (p < 0) {
      bc.push_back(true);
    } else {
      used[p] = true;
      bc.push_back(t.broadcastable[p]);
    }
  }
  for (int i = 0; i < t.ndim(); ++i)
    if (!used[i] && !t.broadcastable[i])
      fail<TypeError>(name(), ": input axis ", i, " is dropped but is not broadcastable in the input type ", t.str());
  return {TensorType(t.dtype, bc)};
}

std::vector<ShapeVars> DimShuffle::infer_shape(const Apply&, const std::vector<ShapeVars>& in) const {
  ShapeVars s;
  for (int p : pattern) s.push_back(p < 0 ? int_constant(1) : in[0][p]);
  return {s};
}

namespace {
// DimShuffle that also drops axes that are length 1 at run time but not broadcastable in v's
// type (it sums them out first): gradients and R_op eval points may lack the broadcastable flags.
Var dimshuffle_lenient(Var v, const std::vector<int>& pattern) {
  const int nd = v->ndim();
  std::vector<bool> used(nd, false);
  for (int p : pattern)
    if (p >= 0) used[p] = true;
  std::vector<int> drop;
  for (int i = 0; i < nd; ++i)
    if (!used[i] && !v->type.broadcastable[i]) drop.push_back(i);
  if (drop.empty()) return dimshuffle(v, pattern);
  Var s = sum(v, drop, false);
  if (s->dtype() != v->dtype()) s = cast(s, v->dtype());
  std::vector<int> remap(nd, -1);
  int k = 0;
  for (int i = 0; i < nd; ++i)
    if (std::find(drop.begin(), drop.end(), i) == drop.end()) remap[i] = k++;
  std::vector<int> pat;
  for (int p : pattern) pat.push_back(p < 0 ? -1 : remap[p]);
  return dimshuffle(s, pat);
}
}  // namespace

std::vector<Var> DimShuffle::grad(const Apply& node, const std::vector<Var>& output_grads) const {
  const Var& gz = output_grads[0];
  const Var& x = node.inputs[0];
  if (!gz) return {nullptr};
  // Inverse permutation: input axis i comes from output axis pos[i]; dropped axes come back as 'x'.
  std::vector<int> grad_pattern(x->ndim(), -1);
  for (size_t o = 0; o < pattern.size(); ++o)
    if (pattern[o] >= 0) grad_pattern[pattern[o]] = static_cast<int>(o);
  Var g = dimshuffle_lenient(gz, grad_pattern);
  if (g->dtype() != x->dtype() && is_float(x->dtype())) g = cast(g, x->dtype());
  return {g};
}

std::vector<Var> DimShuffle::rop(const Apply& node, const std::vector<Var>& eval_points) const {
  if (!eval_points[0]) return {nullptr};
  return {dimshuffle_lenient(eval_points[0], pattern)};
}

Var dimshuffle(Var x, std::vector<int> pattern) {
  if (!x) fail<TypeError>("dimshuffle: input is null");
  return apply_op1(std::make_shared<DimShuffle>(x->type.broadcastable, std::move(pattern)), {x});
}

Var transpose(Var x, std::vector<int> perm) {
  if (!x) fail<TypeError>("transpose: input is null");
  const int nd = x->ndim();
  if (perm.empty())
    for (int i = nd - 1; i >= 0; --i) perm.push_back(i);
  if (static_cast<int>(perm.size()) != nd)
    fail<ValueError>("transpose: axes of length ", perm.size(), " do not match an input of ", nd, " dimensions");
  std::vector<bool> seen(nd, false);
  for (int& p : perm) {
    p = normalize_axis(p, nd, "transpose");
    if (seen[p]) fail<ValueError>("transpose: repeated axis ", p, " in the permutation");
    seen[p] = true;
  }
  return dimshuffle(x, perm);
}

// ---------------------------------------------------------------------------------------------
// Rebroadcast and friends

std::string Rebroadcast::name() const {
  std::string s = "Rebroadcast{";
  for (size_t i = 0; i < flags.size(); ++i) {
    if (i) s += ",";
    s += flags[i] < 0 ? "?" : std::to_string(flags[i]);
  }
  return s + "}";
}

std::vector<TensorType> Rebroadcast::make_output_types(const std::vector<Var>& inputs) const {
  if (inputs.size() != 1) fail<TypeError>(name(), ": expected 1 input, got ", inputs.size());
  const TensorType& t = inputs[0]->type;
  if (t.ndim() != static_cast<int>(flags.size()))
    fail<TypeError>(name(), ": expected an input of ", flags.size(), " dimensions, got ", t.str());
  TensorType r = t;
  for (int i = 0; i < t.ndim(); ++i)
    if (flags[i] >= 0) r.broadcastable[i] = flags[i] == 1;
  return {r};
}

std::vector<ShapeVars> Rebroadcast::infer_shape(const Apply&, const std::vector<ShapeVars>& in) const {
  ShapeVars s = in[0];
  for (size_t i = 0; i < flags.size(); ++i)
    if (flags[i] == 1) s[i] = int_constant(1);
  return {s};
}

std::vector<Var> Rebroadcast::grad(const Apply& node, const std::vector<Var>& output_grads) const {
  if (!output_grads[0]) return {nullptr};
  return {patternbroadcast(output_grads[0], node.inputs[0]->type.broadcastable)};
}

std::vector<Var> Rebroadcast::rop(const Apply& node, const std::vector<Var>& eval_points) const {
  if (!eval_points[0]) return {nullptr};
  return {patternbroadcast(eval_points[0], node.output_ptr(0)->type.broadcastable)};
}

Var patternbroadcast(Var x, const std::vector<bool>& bc) {
  if (!x) fail<TypeError>("patternbroadcast: input is null");
  if (static_cast<int>(bc.size()) != x->ndim())
    fail<TypeError>("Rebroadcast: pattern ", bc_str(bc), " does not match an input of type ", x->type.str());
  std::vector<int> flags(bc.size(), -1);
  bool any = false;
  for (size_t i = 0; i < bc.size(); ++i)
    if (bc[i] != x->type.broadcastable[i]) {
      flags[i] = bc[i] ? 1 : 0;
      any = true;
    }
  if (!any) return x;
  return apply_op1(std::make_shared<Rebroadcast>(flags), {x});
}

Var addbroadcast(Var x, const std::vector<int>& axes) {
  if (!x) fail<TypeError>("addbroadcast: input is null");
  std::vector<bool> bc = x->type.broadcastable;
  for (int a : axes) bc[normalize_axis(a, x->ndim(), "addbroadcast")] = true;
  return patternbroadcast(x, bc);
}

Var unbroadcast(Var x, const std::vector<int>& axes) {
  if (!x) fail<TypeError>("unbroadcast: input is null");
  std::vector<bool> bc = x->type.broadcastable;
  for (int a : axes) bc[normalize_axis(a, x->ndim(), "unbroadcast")] = false;
  return patternbroadcast(x, bc);
}

Var squeeze(Var x) {
  if (!x) fail<TypeError>("squeeze: input is null");
  std::vector<int> pat;
  for (int i = 0; i < x->ndim(); ++i)
    if (!x->type.broadcastable[i]) pat.push_back(i);
  if (static_cast<int>(pat.size()) == x->ndim()) return x;
  return dimshuffle(x, pat);
}

Var expand_dims(Var x, int axis) {
  if (!x) fail<TypeError>("expand_dims: input is null");
  const int ax = normalize_axis(axis, x->ndim() + 1, "expand_dims");
  std::vector<int> pat;
  for (int i = 0; i < x->ndim(); ++i) pat.push_back(i);
  pat.insert(pat.begin() + ax, -1);
  return dimshuffle(x, pat);
}

Var swapaxes(Var x, int a, int b) {
  if (!x) fail<TypeError>("swapaxes: input is null");
  const int nd = x->ndim();
  a = normalize_axis(a, nd, "swapaxes");
  b = normalize_axis(b, nd, "swapaxes");
  std::vector<int> perm;
  for (int i = 0; i < nd; ++i) perm.push_back(i);
  std::swap(perm[a], perm[b]);
  return dimshuffle(x, perm);
}

// ---------------------------------------------------------------------------------------------
// Shape, Shape_i, MakeVector

std::vector<TensorType> ShapeOp::make_output_types(const std::vector<Var>& inputs) const {
  if (inputs.size() != 1) fail<TypeError>(name(), ": expected 1 input, got ", inputs.size());
  return {TensorType(DType::Int64, {false})};
}

std::vector<ShapeVars> ShapeOp::infer_shape(const Apply& node, const std::vector<ShapeVars>&) const {
  return {{int_constant(node.inputs[0]->ndim())}};
}

std::vector<Var> ShapeOp::grad(const Apply&, const std::vector<Var>&) const { return {nullptr}; }

std::vector<std::vector<bool>> ShapeOp::connection_pattern(const Apply&) const { return {{false}}; }

std::string ShapeI::name() const { return "Shape_i{" + std::to_string(i) + "}"; }

std::vector<TensorType> ShapeI::make_output_types(const std::vector<Var>& inputs) const {
  if (inputs.size() != 1) fail<TypeError>(name(), ": expected 1 input, got ", inputs.size());
  if (i < 0 || i >= inputs[0]->ndim())
    fail<TypeError>(name(), ": axis ", i, " is out of range for an input of type ", inputs[0]->type.str());
  return {scalar_type(DType::Int64)};
}

std::vector<ShapeVars> ShapeI::infer_shape(const Apply&, const std::vector<ShapeVars>&) const { return {{}}; }

std::vector<Var> ShapeI::grad(const Apply&, const std::vector<Var>&) const { return {nullptr}; }

std::vector<std::vector<bool>> ShapeI::connection_pattern(const Apply&) const { return {{false}}; }

std::vector<TensorType> MakeVector::make_output_types(const std::vector<Var>& inputs) const {
  for (size_t k = 0; k < inputs.size(); ++k)
    if (inputs[k]->ndim() != 0 || !(is_integer(inputs[k]->dtype()) || is_bool(inputs[k]->dtype())))
      fail<TypeError>(name(), ": input ", k, " must be a 0-d integer, got ", inputs[k]->type.str());
  return {TensorType(DType::Int64, {inputs.size() == 1})};
}

std::vector<ShapeVars> MakeVector::infer_shape(const Apply& node, const std::vector<ShapeVars>&) const {
  return {{int_constant(static_cast<int64_t>(node.inputs.size()))}};
}

std::vector<Var> MakeVector::grad(const Apply& node, const std::vector<Var>&) const {
  return std::vector<Var>(node.inputs.size(), nullptr);
}

std::vector<std::vector<bool>> MakeVector::connection_pattern(const Apply& node) const {
  return std::vector<std::vector<bool>>(node.inputs.size(), std::vector<bool>{false});
}

Var shape(Var x) {
  if (!x) fail<TypeError>("shape: input is null");
  return apply_op1(std::make_shared<ShapeOp>(), {x});
}

Var shape_i(Var x, int i) {
  if (!x) fail<TypeError>("shape_i: input is null");
  // The shape of a constant is known.
  if (x->is_constant() && i >= 0 && i < x->ndim()) return int_constant(x->data.shape(i));
  return apply_op1(std::make_shared<ShapeI>(i), {x});
}

ShapeVars shape_vars(const Var& x) {
  ShapeVars s;
  for (int i = 0; i < x->ndim(); ++i) s.push_back(x->type.broadcastable[i] ? int_constant(1) : shape_i(x, i));
  return s;
}

Var make_vector(const std::vector<Var>& scalars) { return apply_op1(std::make_shared<MakeVector>(), scalars); }

Var int_constant(int64_t v) { return constant(NDArray::scalar_int64(v)); }

// ---------------------------------------------------------------------------------------------
// Alloc

std::vector<TensorType> Alloc::make_output_types(const std::vector<Var>& inputs) const {
  if (inputs.empty()) fail<TypeError>(name(), ": expected a value and shape inputs, got no input");
  const Var& v = inputs[0];
  const int nd = static_cast<int>(inputs.size()) - 1;
  if (v->ndim() > nd)
    fail<TypeError>(name(), ": the value has ", v->ndim(), " dimensions (", v->type.str(), ") but only ", nd,
                    " shape entries were given");
  std::vector<bool> bc(nd);
  for (int i = 0; i < nd; ++i) {
    detail::check_int_scalar(name(), inputs[i + 1], "each shape entry");
    bc[i] = constant_int(inputs[i + 1]) == 1;
  }
  return {TensorType(v->dtype(), bc)};
}

std::vector<ShapeVars> Alloc::infer_shape(const Apply& node, const std::vector<ShapeVars>&) const {
  ShapeVars s;
  for (size_t i = 1; i < node.inputs.size(); ++i) s.push_back(detail::as_int64(node.inputs[i]));
  return {s};
}

std::vector<Var> Alloc::grad(const Apply& node, const std::vector<Var>& output_grads) const {
  std::vector<Var> g(node.inputs.size(), nullptr);
  if (output_grads[0]) g[0] = sum_to_type(output_grads[0], node.inputs[0]->type);
  return g;
}

std::vector<Var> Alloc::rop(const Apply& node, const std::vector<Var>& eval_points) const {
  if (!eval_points[0]) return {nullptr};
  std::vector<Var> in = node.inputs;
  in[0] = eval_points[0];
  return {apply_op1(std::make_shared<Alloc>(), in)};
}

std::vector<std::vector<bool>> Alloc::connection_pattern(const Apply& node) const {
  std::vector<std::vector<bool>> c(node.inputs.size(), std::vector<bool>{false});
  c[0][0] = true;
  return c;
}

Var alloc(Var value, const ShapeVars& shape) {
  if (!value) fail<TypeError>("alloc: value is null");
  std::vector<Var> in{value};
  for (const Var& s : shape) {
    detail::check_int_scalar("Alloc", s, "each shape entry");
    in.push_back(detail::as_int64(s));
  }
  return apply_op1(std::make_shared<Alloc>(), in);
}

Var zeros(const ShapeVars& shape, DType dt) { return alloc(constant(0.0, dt), shape); }

Var ones(const ShapeVars& shape, DType dt) { return alloc(constant(1.0, dt), shape); }

Var zeros_like(Var x, std::optional<DType> dt) { return zeros(shape_vars(x), dt.value_or(x->dtype())); }

Var ones_like(Var x, std::optional<DType> dt) { return ones(shape_vars(x), dt.value_or(x->dtype())); }

Var fill(Var model, Var value) {
  if (!model || !value) fail<TypeError>("fill: input is null");
  const int nd = std::max(model->ndim(), value->ndim());
  const int mo = nd - model->ndim(), vo = nd - value->ndim();
  ShapeVars s;
  for (int i = 0; i < nd; ++i) {
    const bool m_has = i >= mo, v_has = i >= vo;
    const bool m_bc = !m_has || model->type.broadcastable[i - mo];
    const bool v_bc = !v_has || value->type.broadcastable[i - vo];
    if (!m_bc)
      s.push_back(shape_i(model, i - mo));
    else if (!v_bc)
      s.push_back(shape_i(value, i - vo));
    else
      s.push_back(int_constant(1));
  }
  return alloc(value, s);
}

Var sum_to_type(Var g, const TensorType& target) {
  const int lead = g->ndim() - target.ndim();
  if (lead < 0)
    fail<TypeError>("sum_to_type: gradient of type ", g->type.str(), " has fewer dimensions than ", target.str());
  std::vector<int> axes;
  for (int i = 0; i < lead; ++i) axes.push_back(i);
  std::vector<int> pattern;
  int kept = 0;
  for (int i = 0; i < target.ndim(); ++i) {
    if (target.broadcastable[i] && !g->type.broadcastable[lead + i]) {
      axes.push_back(lead + i);
      pattern.push_back(-1);
    } else {
      pattern.push_back(kept++);
    }
  }
  Var r = g;
  if (!axes.empty()) {
    r = sum(g, axes, false);
    if (r->dtype() != g->dtype()) r = cast(r, g->dtype());
    bool identity = static_cast<int>(pattern.size()) == r->ndim();
    for (size_t i = 0; identity && i < pattern.size(); ++i) identity = pattern[i] == static_cast<int>(i);
    if (!identity) r = dimshuffle(r, pattern);
  }
  if (r->dtype() != target.dtype && is_float(target.dtype)) r = cast(r, target.dtype);
  return patternbroadcast(r, target.broadcastable);
}

}  // namespace hypatia
