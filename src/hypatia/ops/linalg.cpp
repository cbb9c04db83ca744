// Linalg: types, shapes, gradients, and the builders of nlinalg and slinalg (kernels:
// backends/linalg_kernels.cpp). The gradients are graphs of other ops (Solve, tril, dot, ...),
// so they have gradients themselves and run on every backend that has those ops.
#include "hypatia/ops/linalg.h"

#include <cmath>
#include <sstream>

#include "hypatia/core/error.h"
#include "hypatia/ops/blas.h"
#include "hypatia/ops/elemwise.h"
#include "hypatia/ops/reduce.h"
#include "hypatia/ops/shape.h"
#include "hypatia/ops/subtensor.h"

namespace hypatia {
namespace {

const char* structure_name(SolveStructure s) {
  switch (s) {
    case SolveStructure::General:
      return "general";
    case SolveStructure::Symmetric:
      return "symmetric";
    case SolveStructure::PositiveDefinite:
      return "positive_definite";
    case SolveStructure::Triangular:
      return "triangular";
  }
  return "?";
}

const char* qr_mode_name(QrMode m) {
  switch (m) {
    case QrMode::Reduced:
      return "reduced";
    case QrMode::Complete:
      return "complete";
    case QrMode::R:
      return "r";
    case QrMode::Raw:
      return "raw";
  }
  return "?";
}

TensorType mat_type(DType dt) { return TensorType(dt, {false, false}); }
TensorType vec_type(DType dt) { return TensorType(dt, {false}); }

/// x as a float32/float64 array (numpy's linalg results: float16 -> float32, integers and bool
/// -> float64).
Var as_linalg_float(Var x) {
  const DType dt = x->dtype();
  if (dt == DType::Float32 || dt == DType::Float64) return x;
  return cast(x, dt == DType::Float16 ? DType::Float32 : DType::Float64);
}

void check_matrix(const std::string& who, const Var& v, const char* what) {
  if (v->ndim() != 2)
    fail<TypeError>(who, ": expected ", what, " to be a matrix (2 dimensions), got ", v->type.str(), " (", v->ndim(),
                    " dimensions)");
  if (v->dtype() != DType::Float32 && v->dtype() != DType::Float64)
    fail<TypeError>(who, ": expected ", what, " of dtype float32 or float64, got ", v->type.str(),
                    " (the builder functions convert other dtypes)");
}

Var T2(Var x) { return transpose(x); }
Var like(double v, const Var& x) { return constant(v, x->dtype()); }

/// A lower (upper) triangle mask of the last two axes of x: element (i, j) is kept where
/// j - i <= k (lower) or j - i >= k (upper).
Var triangle(Var a, int64_t k, bool lower) {
  if (a->ndim() < 2) fail<TypeError>(lower ? "tril" : "triu", ": expected at least 2 dimensions, got ", a->type.str());
  const int nd = a->ndim();
  Var rows = arange(int_constant(0), shape_i(a, nd - 2), int_constant(1), DType::Int64);
  Var cols = arange(int_constant(0), shape_i(a, nd - 1), int_constant(1), DType::Int64);
  Var diff = sub(dimshuffle(cols, {-1, 0}), dimshuffle(rows, {0, -1}));  // j - i
  Var keep = lower ? le(diff, int_constant(k)) : ge(diff, int_constant(k));
  return switch_(keep, a, zeros_like(a));
}

/// The gradient of a function of a symmetric matrix whose kernel reads only one triangle: the
/// full-matrix gradient g folded onto that triangle (an off-diagonal element stands for both).
Var fold_to_triangle(Var g, bool lower) { return lower ? add(tril(g), T2(triu(g, 1))) : add(triu(g), T2(tril(g, -1))); }

/// Whether g is the zeros that grad() passes for an output the cost does not use (zeros_like: an
/// Alloc of the constant 0), so that its term can be left out.
bool is_unused_grad(const Var& g) {
  if (!g) return true;
  if (!g->owner || !dynamic_cast<const Alloc*>(g->owner->op.get())) return false;
  const Var& value = g->owner->inputs[0];
  return value->is_constant() && value->data.size() == 1 && value->data.get_flat(0) == 0;
}

/// v diag(d) v^T.
Var v_diag_vt(Var v, Var d) { return dot(mul(v, dimshuffle(d, {-1, 0})), T2(v)); }

}  // namespace

// ---------------------------------------------------------------------------------------------
// Linalg

std::string Linalg::name() const {
  std::ostringstream os;
  const char* tri = attrs.lower ? "lower" : "upper";
  switch (kind) {
    case LinalgKind::Inverse:
      return "MatrixInverse";
    case LinalgKind::Det:
      return "Det";
    case LinalgKind::Eig:
      return "Eig";
    case LinalgKind::Eigh:
      return std::string("Eigh{") + tri + "}";
    case LinalgKind::Svd:
      os << "SVD{full_matrices=" << (attrs.full_matrices ? "True" : "False")
         << ", compute_uv=" << (attrs.compute_uv ? "True" : "False") << "}";
      return os.str();
    case LinalgKind::Qr:
      return std::string("QRFull{") + qr_mode_name(attrs.qr_mode) + "}";
    case LinalgKind::Lstsq:
      return "Lstsq";
    case LinalgKind::Pinv:
      os << "MatrixPinv{rcond=" << attrs.rcond << "}";
      return os.str();
    case LinalgKind::Cholesky:
      return std::string("Cholesky{") + tri + (attrs.nan_on_error ? ", on_error=nan" : "") + "}";
    case LinalgKind::Solve:
      if (attrs.structure == SolveStructure::Triangular)
        return std::string("SolveTriangular{") + tri + (attrs.trans ? ", trans" : "") +
               (attrs.unit_diagonal ? ", unit_diagonal" : "") + "}";
      if (attrs.structure == SolveStructure::General) return "Solve{general}";
      return std::string("Solve{") + structure_name(attrs.structure) + ", " + tri + "}";
    case LinalgKind::Expm:
      return "Expm";
  }
  return "Linalg";
}

std::vector<TensorType> Linalg::make_output_types(const std::vector<Var>& inputs) const {
  const std::string who = name();
  const size_t want = kind == LinalgKind::Solve ? 2 : kind == LinalgKind::Lstsq ? 3 : kind == LinalgKind::Eigh ? 0 : 1;
  if (kind == LinalgKind::Eigh) {
    if (inputs.size() != 1 && inputs.size() != 2)
      fail<TypeError>(who, ": expected 1 input (A) or 2 (A, B), got ", inputs.size());
  } else if (inputs.size() != want) {
    fail<TypeError>(who, ": expected ", want, " inputs, got ", inputs.size());
  }
  const Var& a = inputs[0];
  check_matrix(who, a, "A");
  const DType dt = a->dtype();
  for (size_t i = 1; i < inputs.size(); ++i) {
    if (kind == LinalgKind::Lstsq && i == 2) {
      if (inputs[2]->ndim() != 0 || !is_float(inputs[2]->dtype()))
        fail<TypeError>(who, ": expected rcond to be a float scalar, got ", inputs[2]->type.str());
      continue;
    }
    const Var& b = inputs[i];
    if (b->dtype() != dt) fail<TypeError>(who, ": expected B of A's dtype ", dtype_name(dt), ", got ", b->type.str());
    if (kind == LinalgKind::Eigh) {
      check_matrix(who, b, "B");
    } else if (b->ndim() != 1 && b->ndim() != 2) {
      fail<TypeError>(who, ": expected b to be a vector or a matrix, got ", b->type.str());
    }
  }
  switch (kind) {
    case LinalgKind::Inverse:
    case LinalgKind::Pinv:
    case LinalgKind::Cholesky:
    case LinalgKind::Expm:
      return {mat_type(dt)};
    case LinalgKind::Det:
      return {TensorType(dt, {})};
    case LinalgKind::Eig:
    case LinalgKind::Eigh:
      return {vec_type(dt), mat_type(dt)};
    case LinalgKind::Svd:
      if (!attrs.compute_uv) return {vec_type(dt)};
      return {mat_type(dt), vec_type(dt), mat_type(dt)};
    case LinalgKind::Qr:
      if (attrs.qr_mode == QrMode::R) return {mat_type(dt)};
      if (attrs.qr_mode == QrMode::Raw) return {mat_type(dt), vec_type(dt)};
      return {mat_type(dt), mat_type(dt)};
    case LinalgKind::Lstsq:
      return {TensorType(dt, std::vector<bool>(inputs[1]->ndim(), false)), vec_type(dt), TensorType(DType::Int64, {}),
              vec_type(dt)};
    case LinalgKind::Solve:
      return {TensorType(dt, std::vector<bool>(inputs[1]->ndim(), false))};
  }
  return {};
}

std::vector<ShapeVars> Linalg::infer_shape(const Apply& node, const std::vector<ShapeVars>& in) const {
  const Var m = in[0][0], n = in[0][1];
  const Var k = minimum(m, n);
  switch (kind) {
    case LinalgKind::Inverse:
    case LinalgKind::Cholesky:
    case LinalgKind::Expm:
      return {in[0]};
    case LinalgKind::Det:
      return {ShapeVars{}};
    case LinalgKind::Eig:
    case LinalgKind::Eigh:
      return {{m}, {m, m}};
    case LinalgKind::Pinv:
      return {{n, m}};
    case LinalgKind::Svd:
      if (!attrs.compute_uv) return {{k}};
      if (attrs.full_matrices) return {{m, m}, {k}, {n, n}};
      return {{m, k}, {k}, {k, n}};
    case LinalgKind::Qr:
      switch (attrs.qr_mode) {
        case QrMode::Reduced:
          return {{m, k}, {k, n}};
        case QrMode::Complete:
          return {{m, m}, {m, n}};
        case QrMode::R:
          return {{k, n}};
        case QrMode::Raw:
          return {{n, m}, {k}};
      }
      return {};
    case LinalgKind::Lstsq:
      return {};  // the residuals' length depends on the rank
    case LinalgKind::Solve:
      return {in[1]};
  }
  return {};
}

std::vector<std::vector<bool>> Linalg::connection_pattern(const Apply& node) const {
  std::vector<std::vector<bool>> p(node.inputs.size(), std::vector<bool>(node.nout(), true));
  if (kind == LinalgKind::Lstsq)
    for (auto& row : p) row[2] = false;  // the rank is piecewise constant
  return p;
}

std::vector<Var> Linalg::grad(const Apply& node, const std::vector<Var>& output_grads) const {
  const Var& a = node.inputs[0];
  Apply& self = const_cast<Apply&>(node);
  const bool lower = attrs.lower;
  auto undefined = [&](const std::string& why) {
    std::vector<Var> gs;
    for (size_t i = 0; i < node.inputs.size(); ++i)
      gs.push_back(grad_undefined(*this, static_cast<int>(i), node.inputs[i]->type, why));
    return gs;
  };
  switch (kind) {
    case LinalgKind::Inverse: {
      // d(A^-1) = -A^-1 dA A^-1, so gA = -X^T g X^T.
      Var xt = T2(self.output(0));
      return {neg(dot(dot(xt, output_grads[0]), xt))};
    }
    case LinalgKind::Det: {
      // d det(A) = det(A) tr(A^-1 dA), so gA = g det(A) A^-T.
      return {mul(mul(output_grads[0], self.output(0)), T2(matrix_inverse(a)))};
    }
    case LinalgKind::Eigh: {
      Var w = self.output(0), v = self.output(1);
      const Var gw = is_unused_grad(output_grads[0]) ? nullptr : output_grads[0];
      const Var gv = is_unused_grad(output_grads[1]) ? nullptr : output_grads[1];
      if (node.inputs.size() == 2) {
        // Generalized A v = w B v with v^T B v = I: dw_i = v_i^T (dA - w_i dB) v_i.
        if (gv) return undefined("the gradient of the generalized problem's eigenvectors is not implemented");
        if (!gw) return {nullptr, nullptr};
        Var ga = fold_to_triangle(v_diag_vt(v, gw), lower);
        Var gb = fold_to_triangle(neg(v_diag_vt(v, mul(gw, w))), lower);
        return {ga, gb};
      }
      // A = V diag(w) V^T: gA = V (diag(gw) + F o (V^T gV)) V^T, F[i,j] = 1 / (w_j - w_i) off the
      // diagonal and 0 on it; then folded onto the triangle the kernel reads.
      Var g;
      if (gw) g = v_diag_vt(v, gw);
      if (gv) {
        Var n = shape_i(v, 0);
        Var eye_n = eye(n, n, int_constant(0), a->dtype());
        Var diff = sub(dimshuffle(w, {-1, 0}), dimshuffle(w, {0, -1}));  // w_j - w_i
        Var f = true_div(sub(like(1, a), eye_n), add(diff, eye_n));
        Var term = dot(dot(v, mul(f, dot(T2(v), gv))), T2(v));
        g = g ? add(g, term) : term;
      }
      if (!g) return {nullptr};
      return {fold_to_triangle(g, lower)};
    }
    case LinalgKind::Cholesky: {
      // Murray (2016), as PyTensor: with L lower, phi = tril(L^T gL) with its diagonal halved,
      // S = L^-T phi L^-1, gA = tril(S + S^T) - diag(diag(S)) (triu for the upper factor).
      Var l = self.output(0), gl = output_grads[0];
      if (!lower) {
        l = T2(l);
        gl = T2(gl);
      }
      Var phi = tril(dot(T2(l), gl));
      phi = sub(phi, alloc_diag(mul(extract_diag(phi), like(0.5, phi))));
      Var lt = T2(l);
      Var s = solve_triangular(lt, T2(solve_triangular(lt, T2(phi), false)), false);
      Var sym = add(s, T2(s));
      Var g = sub(lower ? tril(sym) : triu(sym), alloc_diag(extract_diag(s)));
      // on_error='nan': a failed factor (NaN) gives a gradient of NaN everywhere (PyTensor's rule),
      // not the finite zeros of the untouched triangle.
      if (attrs.nan_on_error) g = switch_(any(isnan(self.output(0))), like(std::nan(""), g), g);
      return {g};
    }
    case LinalgKind::Solve: {
      // op(A) x = b: gb = op(A)^-T g, gA_op = -gb x^T; gA = gA_op (or its transpose for trans).
      Var x = self.output(0), g = output_grads[0];
      const Var& b = node.inputs[1];
      Var gb;
      if (attrs.structure == SolveStructure::Triangular)
        gb = solve_triangular(a, g, lower, !attrs.trans, attrs.unit_diagonal);
      else if (attrs.structure == SolveStructure::General)
        gb = solve(T2(a), g, SolveStructure::General);
      else
        gb = solve(a, g, attrs.structure, lower);  // symmetric: A^T = A
      Var ga = b->ndim() == 1 ? neg(outer(gb, x)) : neg(dot(gb, T2(x)));
      if (attrs.trans) ga = T2(ga);
      switch (attrs.structure) {
        case SolveStructure::General:
          break;
        case SolveStructure::Symmetric:
        case SolveStructure::PositiveDefinite:
          ga = fold_to_triangle(ga, lower);
          break;
        case SolveStructure::Triangular:
          ga = lower ? tril(ga) : triu(ga);
          if (attrs.unit_diagonal) ga = sub(ga, alloc_diag(extract_diag(ga)));
          break;
      }
      return {ga, gb};
    }
    case LinalgKind::Expm: {
      // The adjoint of the Frechet derivative: gA = L(A^T, g), the upper right block of
      // expm([[A^T, g], [0, A^T]]).
      Var at = T2(a);
      Var n = shape_i(a, 0);
      Var top = concatenate({at, output_grads[0]}, 1);
      Var bottom = concatenate({zeros({n, n}, a->dtype()), at}, 1);
      Var big = expm(concatenate({top, bottom}, 0));
      return {subtensor(big, {sl(std::nullopt, n), sl(n, std::nullopt)})};
    }
    case LinalgKind::Eig:
      return undefined("the gradient of eig is not implemented (for a symmetric matrix, eigh has one)");
    case LinalgKind::Svd:
      return undefined("the gradient of svd is not implemented");
    case LinalgKind::Qr:
      return undefined("the gradient of qr is not implemented");
    case LinalgKind::Lstsq:
      return undefined("the gradient of lstsq is not implemented");
    case LinalgKind::Pinv:
      return undefined("the gradient of pinv is not implemented");
  }
  return undefined("the gradient of this linalg op is not implemented");
}

// ---------------------------------------------------------------------------------------------
// Builders

namespace {
Var apply1(LinalgKind k, std::vector<Var> in, LinalgAttrs attrs = {}) {
  return apply_op1(std::make_shared<Linalg>(k, attrs), std::move(in));
}
std::vector<Var> applyn(LinalgKind k, std::vector<Var> in, LinalgAttrs attrs = {}) {
  return apply_op(std::make_shared<Linalg>(k, attrs), std::move(in));
}
/// a and b as floats of one dtype (the promoted one).
std::pair<Var, Var> common_float(Var a, Var b) {
  a = as_linalg_float(a);
  b = as_linalg_float(b);
  if (a->dtype() != b->dtype()) {
    const DType dt = (a->dtype() == DType::Float64 || b->dtype() == DType::Float64) ? DType::Float64 : DType::Float32;
    if (a->dtype() != dt) a = cast(a, dt);
    if (b->dtype() != dt) b = cast(b, dt);
  }
  return {a, b};
}
}  // namespace

Var matrix_inverse(Var a) { return apply1(LinalgKind::Inverse, {as_linalg_float(a)}); }
Var det(Var a) { return apply1(LinalgKind::Det, {as_linalg_float(a)}); }
std::vector<Var> eig(Var a) { return applyn(LinalgKind::Eig, {as_linalg_float(a)}); }
std::vector<Var> eigh(Var a, bool lower) { return applyn(LinalgKind::Eigh, {as_linalg_float(a)}, {.lower = lower}); }
std::vector<Var> svd(Var a, bool full_matrices, bool compute_uv) {
  return applyn(LinalgKind::Svd, {as_linalg_float(a)}, {.full_matrices = full_matrices, .compute_uv = compute_uv});
}
std::vector<Var> qr(Var a, const std::string& mode) {
  QrMode m;
  if (mode == "reduced")
    m = QrMode::Reduced;
  else if (mode == "complete")
    m = QrMode::Complete;
  else if (mode == "r")
    m = QrMode::R;
  else if (mode == "raw")
    m = QrMode::Raw;
  else
    fail<ValueError>("qr: expected mode 'reduced', 'complete', 'r' or 'raw', got '", mode, "'");
  return applyn(LinalgKind::Qr, {as_linalg_float(a)}, {.qr_mode = m});
}
std::vector<Var> lstsq(Var a, Var b, Var rcond) {
  auto [fa, fb] = common_float(a, b);
  return applyn(LinalgKind::Lstsq, {fa, fb, as_linalg_float(rcond)});
}
Var pinv(Var a, double rcond) { return apply1(LinalgKind::Pinv, {as_linalg_float(a)}, {.rcond = rcond}); }
Var cholesky(Var a, bool lower, const std::string& on_error) {
  if (on_error != "raise" && on_error != "nan")
    fail<ValueError>("cholesky: on_error must be 'raise' or 'nan', got '", on_error, "'");
  return apply1(LinalgKind::Cholesky, {as_linalg_float(a)}, {.lower = lower, .nan_on_error = on_error == "nan"});
}
Var solve(Var a, Var b, SolveStructure structure, bool lower) {
  auto [fa, fb] = common_float(a, b);
  return apply1(LinalgKind::Solve, {fa, fb}, {.lower = lower, .structure = structure});
}
Var solve_triangular(Var a, Var b, bool lower, bool trans, bool unit_diagonal) {
  auto [fa, fb] = common_float(a, b);
  return apply1(
      LinalgKind::Solve, {fa, fb},
      {.lower = lower, .structure = SolveStructure::Triangular, .trans = trans, .unit_diagonal = unit_diagonal});
}
Var eigvalsh(Var a, Var b, bool lower) {
  if (!b) return eigh(a, lower)[0];
  auto [fa, fb] = common_float(a, b);
  return applyn(LinalgKind::Eigh, {fa, fb}, {.lower = lower})[0];
}
Var expm(Var a) { return apply1(LinalgKind::Expm, {as_linalg_float(a)}); }

Var trace(Var a) {
  if (a->ndim() != 2) fail<TypeError>("trace: expected a matrix, got ", a->type.str());
  return sum(extract_diag(a));
}

Var extract_diag(Var a, int64_t offset, int axis1, int axis2) {
  const int nd = a->ndim();
  if (nd < 2) fail<ValueError>("extract_diag: expected at least 2 dimensions, got ", a->type.str());
  axis1 = normalize_axis(axis1, nd, "extract_diag");
  axis2 = normalize_axis(axis2, nd, "extract_diag");
  if (axis1 == axis2) fail<ValueError>("extract_diag: axis1 and axis2 cannot be the same (", axis1, ")");
  // Move the two axes last (axis1 then axis2), then gather (i + r0, i + c0) for i < n.
  std::vector<int> perm;
  for (int d = 0; d < nd; ++d)
    if (d != axis1 && d != axis2) perm.push_back(d);
  perm.push_back(axis1);
  perm.push_back(axis2);
  Var t = transpose(a, perm);
  const int64_t r0 = offset < 0 ? -offset : 0, c0 = offset > 0 ? offset : 0;
  Var n = maximum(minimum(sub(shape_i(t, nd - 2), int_constant(r0)), sub(shape_i(t, nd - 1), int_constant(c0))),
                  int_constant(0));
  Var i = arange(int_constant(0), n, int_constant(1), DType::Int64);
  std::vector<Index> idx(nd - 2, all());
  idx.emplace_back(r0 ? add(i, int_constant(r0)) : i);
  idx.emplace_back(c0 ? add(i, int_constant(c0)) : i);
  return subtensor(t, idx);
}

Var alloc_diag(Var v, int64_t offset) {
  if (v->ndim() != 1) fail<TypeError>("alloc_diag: expected a vector, got ", v->type.str());
  const int64_t k = offset < 0 ? -offset : offset;
  Var n = add(shape_i(v, 0), int_constant(k));
  Var z = zeros({n, n}, v->dtype());
  Var i = arange(int_constant(0), shape_i(v, 0), int_constant(1), DType::Int64);
  Var rows = offset < 0 ? add(i, int_constant(k)) : i;
  Var cols = offset > 0 ? add(i, int_constant(k)) : i;
  return set_subtensor(subtensor(z, {Index(rows), Index(cols)}), v);
}

Var diag(Var a, int64_t k) {
  if (a->ndim() == 1) return alloc_diag(a, k);
  if (a->ndim() == 2) return extract_diag(a, k);
  fail<ValueError>("diag: expected a vector or a matrix, got ", a->type.str());
}

Var tril(Var a, int64_t k) { return triangle(a, k, true); }
Var triu(Var a, int64_t k) { return triangle(a, k, false); }

Var matrix_power(Var a, int64_t n) {
  if (a->ndim() != 2) fail<TypeError>("matrix_power: expected a matrix, got ", a->type.str());
  if (n == 0) {
    Var s = shape_i(a, 0);
    return eye(s, s, int_constant(0), a->dtype());
  }
  if (n < 0) {
    a = matrix_inverse(a);
    n = -n;
  }
  Var result, base = a;
  while (n > 0) {
    if (n & 1) result = result ? dot(result, base) : base;
    n >>= 1;
    if (n) base = dot(base, base);
  }
  return result;
}

Var norm(Var x, const std::string& ord) {
  x = as_linalg_float(x);
  if (x->ndim() == 1) {
    if (ord.empty() || ord == "2") return sqrt(sum(sqr(abs(x))));
    if (ord == "inf") return max(abs(x));
    if (ord == "-inf") return min(abs(x));
    if (ord == "0") return sum(cast(neq(x, like(0, x)), x->dtype()));
    char* end = nullptr;
    const double p = std::strtod(ord.c_str(), &end);
    if (end == ord.c_str() || *end != '\0')
      fail<ValueError>("norm: invalid order '", ord, "' for a vector (a number, 'inf' or '-inf')");
    if (p == 1) return sum(abs(x));
    return pow(sum(pow(abs(x), like(p, x))), like(1.0 / p, x));
  }
  if (x->ndim() == 2) {
    if (ord.empty() || ord == "fro") return sqrt(sum(sqr(abs(x))));
    if (ord == "nuc") return sum(svd(x, false, false)[0]);
    if (ord == "inf") return max(sum(abs(x), std::vector<int>{1}));
    if (ord == "-inf") return min(sum(abs(x), std::vector<int>{1}));
    if (ord == "1") return max(sum(abs(x), std::vector<int>{0}));
    if (ord == "-1") return min(sum(abs(x), std::vector<int>{0}));
    if (ord == "2") return max(svd(x, false, false)[0]);
    if (ord == "-2") return min(svd(x, false, false)[0]);
    fail<ValueError>("norm: invalid order '", ord, "' for a matrix ('fro', 'nuc', 'inf', '-inf', 1, -1, 2, -2)");
  }
  fail<ValueError>("norm: expected a vector or a matrix, got ", x->type.str());
}

Var tensorinv(Var a, int ind) {
  if (ind <= 0 || ind >= a->ndim()) fail<ValueError>("tensorinv: expected 0 < ind < ndim (", a->ndim(), "), got ", ind);
  // inv of a reshaped to (prod(shape[:ind]), prod(shape[ind:])), reshaped to shape[ind:] + shape[:ind].
  std::vector<Var> first, rest;
  for (int d = 0; d < a->ndim(); ++d) (d < ind ? first : rest).push_back(shape_i(a, d));
  auto product = [](const std::vector<Var>& v) {
    Var p = v[0];
    for (size_t i = 1; i < v.size(); ++i) p = mul(p, v[i]);
    return p;
  };
  Var inv = matrix_inverse(reshape(a, make_vector({product(first), product(rest)}), 2));
  std::vector<Var> out_shape = rest;
  out_shape.insert(out_shape.end(), first.begin(), first.end());
  return reshape(inv, make_vector(out_shape), a->ndim());
}

Var tensorsolve(Var a, Var b) {
  // a has shape b.shape + Q; solve the (prod(b.shape), prod(Q)) system; x has shape Q.
  const int bn = b->ndim(), an = a->ndim();
  if (an <= bn)
    fail<ValueError>("tensorsolve: expected a with more dimensions than b, got ", a->type.str(), " and ",
                     b->type.str());
  std::vector<Var> q;
  Var prod_q = int_constant(1);
  for (int d = bn; d < an; ++d) {
    q.push_back(shape_i(a, d));
    prod_q = mul(prod_q, shape_i(a, d));
  }
  Var a2 = reshape(a, make_vector({int_constant(-1), prod_q}), 2);
  Var x = solve(a2, flatten(b, 1));
  return reshape(x, make_vector(q), static_cast<int>(q.size()));
}

Var kron(Var a, Var b) {
  if (a->ndim() < 1 || b->ndim() < 1 || a->ndim() > 2 || b->ndim() > 2)
    fail<TypeError>("kron: expected vectors or matrices, got ", a->type.str(), " and ", b->type.str());
  if (a->ndim() == 1 && b->ndim() == 1) return flatten(outer(a, b), 1);
  Var a2 = a->ndim() == 2 ? a : dimshuffle(a, {-1, 0});
  Var b2 = b->ndim() == 2 ? b : dimshuffle(b, {-1, 0});
  // out[i*p + k, j*q + l] = a[i, j] b[k, l]: (m, 1, n, 1) * (1, p, 1, q) reshaped to (m p, n q).
  Var prod = mul(dimshuffle(a2, {0, -1, 1, -1}), dimshuffle(b2, {-1, 0, -1, 1}));
  return reshape(prod, make_vector({mul(shape_i(a2, 0), shape_i(b2, 0)), mul(shape_i(a2, 1), shape_i(b2, 1))}), 2);
}

}  // namespace hypatia
