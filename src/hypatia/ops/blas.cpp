// Linear algebra ops: types, shapes, gradients and the builder functions.
#include "hypatia/ops/blas.h"

#include <algorithm>
#include <memory>
#include <numeric>

#include "hypatia/core/error.h"
#include "hypatia/ops/elemwise.h"
#include "hypatia/ops/reduce.h"
#include "hypatia/ops/shape.h"

namespace hypatia {
namespace {

std::string types_str(const std::vector<Var>& inputs) {
  std::string s;
  for (size_t i = 0; i < inputs.size(); ++i) s += (i ? ", " : "") + inputs[i]->type.str();
  return s;
}

void check_arity(const Op& op, const std::vector<Var>& inputs, size_t n) {
  if (inputs.size() != n)
    fail<TypeError>(op.name(), ": expected ", n, " inputs, got ", inputs.size(), " (", types_str(inputs), ")");
}

void check_ndim(const Op& op, const Var& v, int ndim, const char* what) {
  if (v->ndim() != ndim) fail<TypeError>(op.name(), ": expected ", what, " with ndim ", ndim, ", got ", v->type.str());
}

// The gradient of a differentiable input has the input's type (dtype and broadcastable pattern);
// integer inputs get none.
Var fit_grad(Var g, const Var& like) {
  if (!g || !is_float(like->dtype())) return nullptr;
  if (g->dtype() != like->dtype()) g = cast(g, like->dtype());
  return patternbroadcast(g, like->type.broadcastable);
}

// a + b where either may be null (a zero).
Var add_opt(const Var& a, const Var& b) {
  if (!a) return b;
  if (!b) return a;
  return add(a, b);
}

// A forward-mode result cast to the dtype of the node's output.
Var fit_rop(Var r, const Apply& node) {
  const DType dt = node.output_ptr(0)->type.dtype;
  if (r && r->dtype() != dt) r = cast(r, dt);
  return r;
}

// Checks the scalar coefficients of Gemm/Gemv/Ger against the matrix dtype.
void check_coeff(const Op& op, const Var& c, DType dt, const char* what) {
  if (c->ndim() != 0) fail<TypeError>(op.name(), ": expected a 0-d ", what, ", got ", c->type.str());
  if (is_bool(c->dtype()) || (!is_float(dt) && is_float(c->dtype())))
    fail<TypeError>(op.name(), ": ", what, " of dtype ", dtype_name(c->dtype()), " does not fit a ", dtype_name(dt),
                    " product");
}

void check_same_dtype(const Op& op, const std::vector<Var>& vs) {
  for (const Var& v : vs)
    if (v->dtype() != vs[0]->dtype())
      fail<TypeError>(op.name(), ": expected operands of one dtype, got ", types_str(vs));
  if (is_bool(vs[0]->dtype())) fail<TypeError>(op.name(), ": bool operands are not supported (", types_str(vs), ")");
}

Var prod_of(const ShapeVars& s, const std::vector<int>& axes) {
  Var p;
  for (int a : axes) p = p ? mul(p, s[a]) : s[a];
  return p ? p : int_constant(1);
}

ShapeVars pick(const ShapeVars& s, const std::vector<int>& axes) {
  ShapeVars r;
  for (int a : axes) r.push_back(s[a]);
  return r;
}

bool is_identity(const std::vector<int>& perm) {
  for (int i = 0; i < static_cast<int>(perm.size()); ++i)
    if (perm[i] != i) return false;
  return true;
}

Var transpose_if(const Var& x, const std::vector<int>& perm) { return is_identity(perm) ? x : transpose(x, perm); }

Var apply_dot(Var a, Var b) { return apply_op1(std::make_shared<Dot>(), {std::move(a), std::move(b)}); }
Var apply_batched_dot(Var a, Var b) { return apply_op1(std::make_shared<BatchedDot>(), {std::move(a), std::move(b)}); }

}  // namespace

// ------------------------------------------------------------------------------------------------
// Dot

std::vector<TensorType> Dot::make_output_types(const std::vector<Var>& inputs) const {
  check_arity(*this, inputs, 2);
  const Var &x = inputs[0], &y = inputs[1];
  if (x->ndim() < 1 || x->ndim() > 2 || y->ndim() < 1 || y->ndim() > 2)
    fail<TypeError>(name(), ": expected vectors or matrices, got ", types_str(inputs));
  std::vector<bool> bc;
  if (x->ndim() == 2) bc.push_back(x->type.broadcastable[0]);
  if (y->ndim() == 2) bc.push_back(y->type.broadcastable[1]);
  return {TensorType(promote_types(x->dtype(), y->dtype()), bc)};
}

std::vector<ShapeVars> Dot::infer_shape(const Apply& node, const std::vector<ShapeVars>& in) const {
  ShapeVars s;
  if (in[0].size() == 2) s.push_back(in[0][0]);
  if (in[1].size() == 2) s.push_back(in[1][1]);
  return {s};
}

std::vector<Var> Dot::grad(const Apply& node, const std::vector<Var>& output_grads) const {
  const Var &x = node.inputs[0], &y = node.inputs[1], &g = output_grads[0];
  if (!g) return {nullptr, nullptr};
  Var gx, gy;
  const int xd = x->ndim(), yd = y->ndim();
  if (xd == 1 && yd == 1) {
    gx = mul(g, y);
    gy = mul(g, x);
  } else if (xd == 1 && yd == 2) {
    gx = dot(g, transpose(y));
    gy = outer(x, g);
  } else if (xd == 2 && yd == 1) {
    gx = outer(g, y);
    gy = dot(transpose(x), g);
  } else {
    gx = dot(g, transpose(y));
    gy = dot(transpose(x), g);
  }
  return {fit_grad(gx, x), fit_grad(gy, y)};
}

std::vector<Var> Dot::rop(const Apply& node, const std::vector<Var>& eval_points) const {
  const Var &x = node.inputs[0], &y = node.inputs[1];
  Var r = add_opt(eval_points[0] ? dot(eval_points[0], y) : nullptr, eval_points[1] ? dot(x, eval_points[1]) : nullptr);
  return {fit_rop(r, node)};
}

// ------------------------------------------------------------------------------------------------
// Gemm

std::string Gemm::name() const { return inplace ? "Gemm{inplace}" : "Gemm{no_inplace}"; }

std::vector<TensorType> Gemm::make_output_types(const std::vector<Var>& inputs) const {
  check_arity(*this, inputs, 5);
  check_ndim(*this, inputs[0], 2, "z");
  check_ndim(*this, inputs[2], 2, "x");
  check_ndim(*this, inputs[3], 2, "y");
  check_same_dtype(*this, {inputs[0], inputs[2], inputs[3]});
  check_coeff(*this, inputs[1], inputs[0]->dtype(), "alpha");
  check_coeff(*this, inputs[4], inputs[0]->dtype(), "beta");
  return {inputs[0]->type};
}

std::vector<ShapeVars> Gemm::infer_shape(const Apply& node, const std::vector<ShapeVars>& in) const { return {in[0]}; }

std::vector<Var> Gemm::grad(const Apply& node, const std::vector<Var>& output_grads) const {
  const Var &z = node.inputs[0], &a = node.inputs[1], &x = node.inputs[2], &y = node.inputs[3], &b = node.inputs[4];
  const Var& g = output_grads[0];
  if (!g) return {nullptr, nullptr, nullptr, nullptr, nullptr};
  return {fit_grad(mul(b, g), z), fit_grad(sum(mul(g, dot(x, y))), a), fit_grad(mul(a, dot(g, transpose(y))), x),
          fit_grad(mul(a, dot(transpose(x), g)), y), fit_grad(sum(mul(g, z)), b)};
}

std::vector<Var> Gemm::rop(const Apply& node, const std::vector<Var>& e) const {
  const Var &z = node.inputs[0], &a = node.inputs[1], &x = node.inputs[2], &y = node.inputs[3], &b = node.inputs[4];
  Var r = e[0] ? mul(b, e[0]) : nullptr;
  r = add_opt(r, e[4] ? mul(e[4], z) : nullptr);
  Var d = add_opt(e[2] ? dot(e[2], y) : nullptr, e[3] ? dot(x, e[3]) : nullptr);
  r = add_opt(r, d ? mul(a, d) : nullptr);
  r = add_opt(r, e[1] ? mul(e[1], dot(x, y)) : nullptr);
  return {fit_rop(r, node)};
}

AliasMap Gemm::destroy_map() const { return inplace ? AliasMap{{0}} : AliasMap{}; }
void Gemm::check_runtime_inputs(const Apply&, std::span<NDArray* const> in) const {
  check_gemm_shapes(*this, *in[0], *in[2], *in[3]);
}
void check_gemm_shapes(const Op& op, const NDArray& z, const NDArray& x, const NDArray& y) {
  if (x.shape(1) != y.shape(0) || z.shape(0) != x.shape(0) || z.shape(1) != y.shape(1))
    fail<ValueError>(op.name(), ": shapes do not fit z ", z.shape().str(), " = x ", x.shape().str(), " · y ",
                     y.shape().str());
}

// ------------------------------------------------------------------------------------------------
// Gemv

std::string Gemv::name() const { return inplace ? "Gemv{inplace}" : "Gemv{no_inplace}"; }

std::vector<TensorType> Gemv::make_output_types(const std::vector<Var>& inputs) const {
  check_arity(*this, inputs, 5);
  check_ndim(*this, inputs[0], 1, "z");
  check_ndim(*this, inputs[2], 2, "A");
  check_ndim(*this, inputs[3], 1, "x");
  check_same_dtype(*this, {inputs[0], inputs[2], inputs[3]});
  check_coeff(*this, inputs[1], inputs[0]->dtype(), "alpha");
  check_coeff(*this, inputs[4], inputs[0]->dtype(), "beta");
  return {inputs[0]->type};
}

std::vector<ShapeVars> Gemv::infer_shape(const Apply& node, const std::vector<ShapeVars>& in) const { return {in[0]}; }

std::vector<Var> Gemv::grad(const Apply& node, const std::vector<Var>& output_grads) const {
  const Var &z = node.inputs[0], &a = node.inputs[1], &A = node.inputs[2], &x = node.inputs[3], &b = node.inputs[4];
  const Var& g = output_grads[0];
  if (!g) return {nullptr, nullptr, nullptr, nullptr, nullptr};
  return {fit_grad(mul(b, g), z), fit_grad(sum(mul(g, dot(A, x))), a), fit_grad(mul(a, outer(g, x)), A),
          fit_grad(mul(a, dot(transpose(A), g)), x), fit_grad(sum(mul(g, z)), b)};
}

std::vector<Var> Gemv::rop(const Apply& node, const std::vector<Var>& e) const {
  const Var &z = node.inputs[0], &a = node.inputs[1], &A = node.inputs[2], &x = node.inputs[3], &b = node.inputs[4];
  Var r = e[0] ? mul(b, e[0]) : nullptr;
  r = add_opt(r, e[4] ? mul(e[4], z) : nullptr);
  Var d = add_opt(e[2] ? dot(e[2], x) : nullptr, e[3] ? dot(A, e[3]) : nullptr);
  r = add_opt(r, d ? mul(a, d) : nullptr);
  r = add_opt(r, e[1] ? mul(e[1], dot(A, x)) : nullptr);
  return {fit_rop(r, node)};
}

AliasMap Gemv::destroy_map() const { return inplace ? AliasMap{{0}} : AliasMap{}; }
void Gemv::check_runtime_inputs(const Apply&, std::span<NDArray* const> in) const {
  check_gemv_shapes(*this, *in[0], *in[2], *in[3]);
}
void check_gemv_shapes(const Op& op, const NDArray& z, const NDArray& A, const NDArray& x) {
  if (A.shape(1) != x.shape(0) || z.shape(0) != A.shape(0))
    fail<ValueError>(op.name(), ": shapes do not fit z ", z.shape().str(), " = A ", A.shape().str(), " · x ",
                     x.shape().str());
}

// ------------------------------------------------------------------------------------------------
// Ger

std::string Ger::name() const { return inplace ? "Ger{destructive}" : "Ger{non-destructive}"; }

std::vector<TensorType> Ger::make_output_types(const std::vector<Var>& inputs) const {
  check_arity(*this, inputs, 4);
  check_ndim(*this, inputs[0], 2, "A");
  check_ndim(*this, inputs[2], 1, "x");
  check_ndim(*this, inputs[3], 1, "y");
  check_same_dtype(*this, {inputs[0], inputs[2], inputs[3]});
  check_coeff(*this, inputs[1], inputs[0]->dtype(), "alpha");
  return {inputs[0]->type};
}

std::vector<ShapeVars> Ger::infer_shape(const Apply& node, const std::vector<ShapeVars>& in) const { return {in[0]}; }

std::vector<Var> Ger::grad(const Apply& node, const std::vector<Var>& output_grads) const {
  const Var &A = node.inputs[0], &a = node.inputs[1], &x = node.inputs[2], &y = node.inputs[3];
  const Var& g = output_grads[0];
  if (!g) return {nullptr, nullptr, nullptr, nullptr};
  return {fit_grad(g, A), fit_grad(sum(mul(g, outer(x, y))), a), fit_grad(mul(a, dot(g, y)), x),
          fit_grad(mul(a, dot(transpose(g), x)), y)};
}

std::vector<Var> Ger::rop(const Apply& node, const std::vector<Var>& e) const {
  const Var &a = node.inputs[1], &x = node.inputs[2], &y = node.inputs[3];
  Var r = e[0];
  Var d = add_opt(e[2] ? outer(e[2], y) : nullptr, e[3] ? outer(x, e[3]) : nullptr);
  r = add_opt(r, d ? mul(a, d) : nullptr);
  r = add_opt(r, e[1] ? mul(e[1], outer(x, y)) : nullptr);
  return {fit_rop(r, node)};
}

AliasMap Ger::destroy_map() const { return inplace ? AliasMap{{0}} : AliasMap{}; }
void Ger::check_runtime_inputs(const Apply&, std::span<NDArray* const> in) const {
  check_ger_shapes(*this, *in[0], *in[2], *in[3]);
}
void check_ger_shapes(const Op& op, const NDArray& A, const NDArray& x, const NDArray& y) {
  if (A.shape(0) != x.shape(0) || A.shape(1) != y.shape(0))
    fail<ValueError>(op.name(), ": shapes do not fit A ", A.shape().str(), " += outer(x ", x.shape().str(), ", y ",
                     y.shape().str(), ")");
}

// ------------------------------------------------------------------------------------------------
// BatchedDot

std::vector<TensorType> BatchedDot::make_output_types(const std::vector<Var>& inputs) const {
  check_arity(*this, inputs, 2);
  const Var &x = inputs[0], &y = inputs[1];
  if (x->ndim() < 2 || x->ndim() > 3 || y->ndim() < 2 || y->ndim() > 3)
    fail<TypeError>(name(), ": expected 2-d or 3-d operands with a leading batch axis, got ", types_str(inputs));
  const auto &xb = x->type.broadcastable, &yb = y->type.broadcastable;
  std::vector<bool> bc{xb[0] && yb[0]};
  if (x->ndim() == 3) bc.push_back(xb[1]);
  if (y->ndim() == 3) bc.push_back(yb[2]);
  return {TensorType(promote_types(x->dtype(), y->dtype()), bc)};
}

std::vector<ShapeVars> BatchedDot::infer_shape(const Apply& node, const std::vector<ShapeVars>& in) const {
  ShapeVars s{in[0][0]};
  if (in[0].size() == 3) s.push_back(in[0][1]);
  if (in[1].size() == 3) s.push_back(in[1][2]);
  return {s};
}

std::vector<Var> BatchedDot::grad(const Apply& node, const std::vector<Var>& output_grads) const {
  const Var &x = node.inputs[0], &y = node.inputs[1], &g = output_grads[0];
  if (!g) return {nullptr, nullptr};
  const int xd = x->ndim(), yd = y->ndim();
  Var gx, gy;
  if (xd == 2 && yd == 2) {  // g: (B,)
    Var gc = dimshuffle(g, {0, -1});
    gx = mul(gc, y);
    gy = mul(gc, x);
  } else if (xd == 3 && yd == 2) {  // x (B,M,K), y (B,K), g (B,M)
    gx = mul(dimshuffle(g, {0, 1, -1}), dimshuffle(y, {0, -1, 1}));
    gy = batched_dot(dimshuffle(x, {0, 2, 1}), g);
  } else if (xd == 2 && yd == 3) {  // x (B,K), y (B,K,N), g (B,N)
    gx = batched_dot(g, dimshuffle(y, {0, 2, 1}));
    gy = mul(dimshuffle(x, {0, 1, -1}), dimshuffle(g, {0, -1, 1}));
  } else {
    gx = batched_dot(g, dimshuffle(y, {0, 2, 1}));
    gy = batched_dot(dimshuffle(x, {0, 2, 1}), g);
  }
  return {fit_grad(gx, x), fit_grad(gy, y)};
}

std::vector<Var> BatchedDot::rop(const Apply& node, const std::vector<Var>& e) const {
  const Var &x = node.inputs[0], &y = node.inputs[1];
  Var r = add_opt(e[0] ? batched_dot(e[0], y) : nullptr, e[1] ? batched_dot(x, e[1]) : nullptr);
  return {fit_rop(r, node)};
}

// ------------------------------------------------------------------------------------------------
// Builders

Var dot(Var a, Var b) {
  if (a->ndim() == 0 || b->ndim() == 0) return mul(a, b);
  if (a->ndim() <= 2 && b->ndim() <= 2) return apply_dot(std::move(a), std::move(b));
  const int an = a->ndim(), bn = b->ndim();
  return tensordot(std::move(a), std::move(b), {an - 1}, {bn == 1 ? 0 : bn - 2});
}

Var gemm(Var z, Var alpha, Var x, Var y, Var beta) {
  return apply_op1(std::make_shared<Gemm>(false),
                   {std::move(z), std::move(alpha), std::move(x), std::move(y), std::move(beta)});
}

Var gemv(Var z, Var alpha, Var A, Var x, Var beta) {
  return apply_op1(std::make_shared<Gemv>(false),
                   {std::move(z), std::move(alpha), std::move(A), std::move(x), std::move(beta)});
}

Var ger(Var A, Var alpha, Var x, Var y) {
  return apply_op1(std::make_shared<Ger>(false), {std::move(A), std::move(alpha), std::move(x), std::move(y)});
}

Var outer(Var x, Var y) {
  if (x->ndim() != 1) x = flatten(x, 1);
  if (y->ndim() != 1) y = flatten(y, 1);
  return apply_dot(dimshuffle(x, {0, -1}), dimshuffle(y, {-1, 0}));
}

Var tensordot(Var a, Var b, int axes) {
  if (axes < 0 || axes > a->ndim() || axes > b->ndim())
    fail<ValueError>("tensordot: axes=", axes, " must be between 0 and the ndim of both operands (", a->type.str(),
                     ", ", b->type.str(), ")");
  std::vector<int> aa, ba;
  for (int i = 0; i < axes; ++i) {
    aa.push_back(a->ndim() - axes + i);
    ba.push_back(i);
  }
  return tensordot(std::move(a), std::move(b), aa, ba);
}

Var tensordot(Var a, Var b, const std::vector<int>& a_axes_in, const std::vector<int>& b_axes_in) {
  if (a_axes_in.size() != b_axes_in.size())
    fail<ValueError>("tensordot: the axis lists have different lengths (", a_axes_in.size(), " and ", b_axes_in.size(),
                     ")");
  const int an = a->ndim(), bn = b->ndim();
  auto normalize = [](const std::vector<int>& axes, int ndim) {
    std::vector<int> r;
    for (int ax : axes) r.push_back(normalize_axis(ax, ndim, "tensordot"));
    std::vector<int> s = r;
    std::sort(s.begin(), s.end());
    if (std::adjacent_find(s.begin(), s.end()) != s.end())
      fail<ValueError>("tensordot: repeated axis in the axis list");
    return r;
  };
  const std::vector<int> a_axes = normalize(a_axes_in, an), b_axes = normalize(b_axes_in, bn);
  auto free_axes = [](const std::vector<int>& summed, int ndim) {
    std::vector<int> r;
    for (int i = 0; i < ndim; ++i)
      if (std::find(summed.begin(), summed.end(), i) == summed.end()) r.push_back(i);
    return r;
  };
  const std::vector<int> a_free = free_axes(a_axes, an), b_free = free_axes(b_axes, bn);
  if (a_axes.empty()) {  // an outer product
    std::vector<int> pa(an), pb(bn);
    std::iota(pa.begin(), pa.end(), 0);
    std::iota(pb.begin(), pb.end(), 0);
    pa.insert(pa.end(), bn, -1);
    pb.insert(pb.begin(), an, -1);
    return mul(dimshuffle(a, pa), dimshuffle(b, pb));
  }
  std::vector<int> perm_a = a_free, perm_b = b_axes;
  perm_a.insert(perm_a.end(), a_axes.begin(), a_axes.end());
  perm_b.insert(perm_b.end(), b_free.begin(), b_free.end());
  if (a_axes.size() == 1 && a_free.size() <= 1 && b_free.size() <= 1)
    return apply_dot(transpose_if(a, perm_a), transpose_if(b, perm_b));
  const ShapeVars sa = shape_vars(a), sb = shape_vars(b);
  // Free axes become one matrix axis each side; a side with none becomes a vector.
  Var a2 = a_free.empty()
               ? reshape(transpose_if(a, perm_a), make_vector({prod_of(sa, a_axes)}), 1)
               : reshape(transpose_if(a, perm_a), make_vector({prod_of(sa, a_free), prod_of(sa, a_axes)}), 2);
  Var b2 = b_free.empty()
               ? reshape(transpose_if(b, perm_b), make_vector({prod_of(sb, b_axes)}), 1)
               : reshape(transpose_if(b, perm_b), make_vector({prod_of(sb, b_axes), prod_of(sb, b_free)}), 2);
  Var out = apply_dot(a2, b2);
  if (a_free.size() <= 1 && b_free.size() <= 1) return out;
  ShapeVars final_shape = pick(sa, a_free);
  for (const Var& s : pick(sb, b_free)) final_shape.push_back(s);
  return reshape(out, make_vector(final_shape), static_cast<int>(final_shape.size()));
}

Var batched_dot(Var a, Var b) {
  const int an = a->ndim(), bn = b->ndim();
  if (an == 0 || bn == 0)
    fail<TypeError>("batched_dot: expected operands with a leading batch axis, got ", a->type.str(), " and ",
                    b->type.str());
  if (an == 1) {
    std::vector<int> p{0};
    p.insert(p.end(), bn - 1, -1);
    return mul(dimshuffle(a, p), b);
  }
  if (bn == 1) {
    std::vector<int> p{0};
    p.insert(p.end(), an - 1, -1);
    return mul(a, dimshuffle(b, p));
  }
  if (an <= 3 && bn <= 3) return apply_batched_dot(std::move(a), std::move(b));
  // Higher ndim: a's last axis against b's axis max(1, bn - 2), folded to BatchedDot's 3-d form.
  const int bax = std::max(1, bn - 2);
  std::vector<int> a_free, b_free;
  for (int i = 1; i < an - 1; ++i) a_free.push_back(i);
  for (int i = 1; i < bn; ++i)
    if (i != bax) b_free.push_back(i);
  std::vector<int> perm_a{0}, perm_b{0, bax};
  perm_a.insert(perm_a.end(), a_free.begin(), a_free.end());
  perm_a.push_back(an - 1);
  perm_b.insert(perm_b.end(), b_free.begin(), b_free.end());
  const ShapeVars sa = shape_vars(a), sb = shape_vars(b);
  Var a3 = reshape(transpose_if(a, perm_a), make_vector({sa[0], prod_of(sa, a_free), sa[an - 1]}), 3);
  Var b3 = b_free.empty() ? transpose_if(b, perm_b)
                          : reshape(transpose_if(b, perm_b), make_vector({sb[0], sb[bax], prod_of(sb, b_free)}), 3);
  Var out = apply_batched_dot(a3, b3);
  ShapeVars final_shape{sa[0]};
  for (const Var& s : pick(sa, a_free)) final_shape.push_back(s);
  for (const Var& s : pick(sb, b_free)) final_shape.push_back(s);
  return reshape(out, make_vector(final_shape), static_cast<int>(final_shape.size()));
}

}  // namespace hypatia
