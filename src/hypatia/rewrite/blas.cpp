// BLAS rewrites (phase blas, after specialize: constants are folded and c * dot is in its
// canonical form): dot(a, b) + c, alpha * dot(a, b) + c, c - dot(a, b) -> one Gemm (matrices), one
// Gemv (a matrix times a vector) or one Ger (c + alpha * outer(x, y)). A local rule on Elemwise add
// and sub nodes of a float32 or float64 matrix or vector. Guarantees: the replacement has the
// exact type of what it replaces and the same values up to BLAS's rounding; it fires only where z,
// the dot and alpha * dot all have the output's exact type (nothing broadcast) and the dot is read
// once, so no value is computed twice. Transposed operands need no rewrite: the kernels pass a
// transposed view to BLAS as a Trans flag, without a copy.
#include "hypatia/ops/blas.h"

#include "hypatia/ops/shape.h"
#include "hypatia/rewrite/passes.h"
#include "hypatia/rewrite/rewrite_util.h"

namespace hypatia::rewrite {
namespace {

struct ScaledDot {
  Var x, y;
  double alpha = 1;
};

/// v = dot(x, y) or c * dot(x, y) (c a scalar constant), matrix x matrix, one dtype, and the dot
/// read only by this expression. Both v and the dot have exactly type `out` (dtype and
/// broadcastable pattern): Gemm and Gemv compute the product at its own shape, so a product that
/// the expression broadcasts (a (1, 1) dot against a matrix, a length-1 column against a wider z,
/// a dot or a constant c of a larger shape) cannot be one.
std::optional<ScaledDot> scaled_dot(FunctionGraph& fg, const Var& v, const TensorType& out) {
  const DType dt = out.dtype;
  if (!(v->type == out)) return std::nullopt;
  Var d = v;
  double alpha = 1;
  if (elemwise_of(v, ScalarOpKind::Mul)) {
    const auto& in = v->owner->inputs;
    if (fg.clients(v.get()).size() != 1) return std::nullopt;
    for (int k = 0; k < 2; ++k)
      if (auto c = scalar_constant(in[k]); c && in[1 - k]->owner && typeid(*in[1 - k]->owner->op) == typeid(Dot)) {
        alpha = *c;
        d = in[1 - k];
        break;
      }
  }
  if (!d->owner || typeid(*d->owner->op) != typeid(Dot) || fg.clients(d.get()).size() != 1 || !(d->type == out))
    return std::nullopt;
  const Var& x = d->owner->inputs[0];
  const Var& y = d->owner->inputs[1];
  if (x->ndim() != 2 || (y->ndim() != 2 && y->ndim() != 1) || x->dtype() != dt || y->dtype() != dt || d->dtype() != dt)
    return std::nullopt;
  return ScaledDot{x, y, alpha};
}

/// The vector v when m is v as a column (DimShuffle{0,x}) or, with row, as a row (DimShuffle{x,0}).
Var vector_as(const Var& m, bool row) {
  if (!m->owner || typeid(*m->owner->op) != typeid(DimShuffle)) return nullptr;
  const auto& ds = static_cast<const DimShuffle&>(*m->owner->op);
  const std::vector<int> want = row ? std::vector<int>{-1, 0} : std::vector<int>{0, -1};
  const Var& v = m->owner->inputs[0];
  return v->ndim() == 1 && ds.pattern == want ? v : nullptr;
}

std::optional<std::vector<Var>> dot_to_gemm(FunctionGraph& fg, Apply& n) {
  const Elemwise* e = elemwise_op(&n);
  if (!e || (e->scalar != ScalarOpKind::Add && e->scalar != ScalarOpKind::Sub)) return std::nullopt;
  const TensorType& out = n.output_ptr(0)->type;
  if ((out.ndim() != 2 && out.ndim() != 1) || (out.dtype != DType::Float32 && out.dtype != DType::Float64))
    return std::nullopt;
  auto scalar = [&](double v) { return constant(NDArray::scalar(v, out.dtype)); };
  for (int k = 0; k < 2; ++k) {
    if (e->scalar == ScalarOpKind::Sub && k == 0) continue;  // z - dot only (dot - z stays)
    const Var& z = n.inputs[1 - k];
    if (!(z->type == out)) continue;  // z must have the full shape (no broadcasting)
    auto sd = scaled_dot(fg, n.inputs[k], out);
    if (!sd) continue;
    const double alpha = e->scalar == ScalarOpKind::Sub ? -sd->alpha : sd->alpha;
    if (sd->y->ndim() != out.ndim()) continue;  // matrix.vector gives a vector, matrix.matrix a matrix
    Var r;
    if (out.ndim() == 1)
      r = gemv(z, scalar(alpha), sd->x, sd->y, scalar(1.0));
    else if (Var u = vector_as(sd->x, false), v = vector_as(sd->y, true); u && v)
      r = ger(z, scalar(alpha), u, v);
    else
      r = gemm(z, scalar(alpha), sd->x, sd->y, scalar(1.0));
    return one(as_type(r, out));
  }
  return std::nullopt;
}

}  // namespace

std::vector<LocalRewrite> blas_rules() { return {{"local_dot_to_gemm", {typeid(Elemwise)}, dot_to_gemm}}; }

}  // namespace hypatia::rewrite
