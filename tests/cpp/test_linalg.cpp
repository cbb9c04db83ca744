// Linear algebra (ops/linalg.h): OpInfo entries for every Linalg kind (both backends, shapes,
// gradients by finite differences where the op has one), identities that pin the values
// (A A^-1 = I, L L^T = A, U diag(s) Vt = A, Q R = A, V diag(w) V^T = A, expm of a diagonal, a known
// determinant), the composed helpers (diag, trace, tril, kron, matrix_power, norm, tensorinv,
// tensorsolve), the errors, and the rewrites that replace inv(A) b by solve(A, b).
#include <cmath>

#include "test_util.h"

namespace hypatia {
namespace {
using testing::make_array;
using testing::OpSample;
using testing::random_array;

/// n x n: a random matrix plus `shift` on the diagonal (well conditioned for shift ~ n).
NDArray shifted(int64_t n, DType dt, double shift, uint64_t seed) {
  NDArray r = random_array({n, n}, dt, -1, 1, seed);
  std::vector<double> v(n * n);
  for (int64_t i = 0; i < n * n; ++i) v[i] = r.get_flat(i) + (i / n == i % n ? shift : 0);
  return make_array(v, {n, n}, dt);
}
/// A symmetric matrix (M + M^T) / 2 + shift I.
NDArray symmetric(int64_t n, DType dt, double shift, uint64_t seed) {
  NDArray r = random_array({n, n}, dt, -1, 1, seed);
  std::vector<double> v(n * n);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j)
      v[i * n + j] = (r.get_flat(i * n + j) + r.get_flat(j * n + i)) / 2 + (i == j ? shift : 0);
  return make_array(v, {n, n}, dt);
}
/// A transposed (F-ordered) view of `a`'s transpose: same values, non-contiguous.
NDArray fortran(const NDArray& a) { return a.transpose().copy().transpose(); }

std::vector<OpSample> square_samples(DType dt) {
  return {{"4x4", {shifted(4, dt, 4, 1)}},
          {"F-ordered 3x3", {fortran(shifted(3, dt, 3, 2))}},
          {"1x1", {shifted(1, dt, 2, 3)}},
          {"0x0", {NDArray::zeros({0, 0}, dt)}}};
}
std::vector<OpSample> sym_samples(DType dt) {
  // Eigenvalues well apart (a diagonal of 1..n plus a small symmetric part).
  NDArray s = symmetric(4, dt, 0, 4);
  std::vector<double> v(16);
  for (int i = 0; i < 16; ++i) v[i] = 0.1 * s.get_flat(i) + (i / 4 == i % 4 ? i / 4 + 1 : 0);
  return {{"4x4 symmetric", {make_array(v, {4, 4}, dt)}}, {"0x0", {NDArray::zeros({0, 0}, dt)}}};
}
std::vector<OpSample> spd_samples(DType dt) {
  return {{"4x4 positive definite", {symmetric(4, dt, 4, 5)}}, {"F-ordered 3x3", {fortran(symmetric(3, dt, 3, 6))}}};
}
std::vector<OpSample> rect_samples(DType dt) {
  return {{"5x3", {random_array({5, 3}, dt, -1, 1, 7)}},
          {"3x5", {random_array({3, 5}, dt, -1, 1, 8)}},
          {"F-ordered 4x4", {fortran(shifted(4, dt, 1, 9))}}};
}
std::vector<OpSample> solve_samples(DType dt) {
  return {{"4x4, b (4,)", {shifted(4, dt, 4, 10), random_array({4}, dt, -1, 1, 11)}},
          {"4x4, b (4,2)", {shifted(4, dt, 4, 12), random_array({4, 2}, dt, -1, 1, 13)}},
          {"F-ordered A, strided b", {fortran(shifted(3, dt, 3, 14)), testing::random_strided({3, 2}, dt, -1, 1, 15)}}};
}
std::vector<OpSample> spd_solve_samples(DType dt) {
  return {{"4x4, b (4,2)", {symmetric(4, dt, 4, 16), random_array({4, 2}, dt, -1, 1, 17)}},
          {"3x3, b (3,)", {symmetric(3, dt, 3, 18), random_array({3}, dt, -1, 1, 19)}}};
}
std::vector<OpSample> expm_samples(DType dt) {
  NDArray tiny = random_array({3, 3}, dt, -0.004, 0.004, 20);  // 1-norm < 0.015: Pade degree 3
  return {{"norm ~1 (degree 7-9)", {random_array({3, 3}, dt, -0.5, 0.5, 21)}},
          {"norm ~8 (scaling and squaring)", {random_array({3, 3}, dt, -3, 3, 22)}},
          {"tiny", {tiny}},
          {"0x0", {NDArray::zeros({0, 0}, dt)}}};
}

HYP_OPINFO({.name = "matrix_inverse",
            .build = [](const std::vector<Var>& v) { return matrix_inverse(v[0]); },
            .samples = square_samples,
            .dtypes = testing::kFloatTypes});
HYP_OPINFO({.name = "det",
            .build = [](const std::vector<Var>& v) { return det(v[0]); },
            .samples = square_samples,
            .dtypes = testing::kFloatTypes});
HYP_OPINFO({.name = "eigh_values",
            .build = [](const std::vector<Var>& v) { return eigh(v[0])[0]; },
            .samples = sym_samples,
            .dtypes = testing::kFloatTypes});
// Squared, so that the test does not depend on each eigenvector's sign.
HYP_OPINFO({.name = "eigh_vectors_upper",
            .build = [](const std::vector<Var>& v) { return sqr(eigh(v[0], false)[1]); },
            .samples = sym_samples,
            .dtypes = testing::kFloatTypes});
HYP_OPINFO({.name = "eigvalsh_generalized",
            .build = [](const std::vector<Var>& v) { return eigvalsh(v[0], v[1]); },
            .samples = [](DType dt) -> std::vector<OpSample> {
              return {{"4x4, B positive definite", {symmetric(4, dt, 0, 23), symmetric(4, dt, 4, 24)}}};
            },
            .dtypes = testing::kFloatTypes});
HYP_OPINFO({.name = "eig_values",
            .build = [](const std::vector<Var>& v) { return eig(v[0])[0]; },
            .samples = sym_samples,
            .dtypes = testing::kFloatTypes,
            .differentiable = false});
HYP_OPINFO({.name = "svd_values",
            .build = [](const std::vector<Var>& v) { return svd(v[0], false, false)[0]; },
            .samples = rect_samples,
            .dtypes = testing::kFloatTypes,
            .differentiable = false});
HYP_OPINFO({.name = "svd_full",
            .build = [](const std::vector<Var>& v) { return abs(svd(v[0])[0]); },
            .samples = rect_samples,
            .dtypes = testing::kFloatTypes,
            .differentiable = false});
HYP_OPINFO({.name = "qr_r",
            .build = [](const std::vector<Var>& v) { return abs(qr(v[0], "r")[0]); },
            .samples = rect_samples,
            .dtypes = testing::kFloatTypes,
            .differentiable = false});
HYP_OPINFO({.name = "qr_complete_q",
            .build = [](const std::vector<Var>& v) { return abs(qr(v[0], "complete")[0]); },
            .samples = rect_samples,
            .dtypes = testing::kFloatTypes,
            .differentiable = false});
HYP_OPINFO({.name = "pinv",
            .build = [](const std::vector<Var>& v) { return pinv(v[0]); },
            .samples = rect_samples,
            .dtypes = testing::kFloatTypes,
            .differentiable = false});
HYP_OPINFO({.name = "lstsq_x",
            .build = [](const std::vector<Var>& v) { return lstsq(v[0], v[1], constant(-1.0, DType::Float64))[0]; },
            .samples = [](DType dt) -> std::vector<OpSample> {
              return {{"5x3, b (5,2)", {random_array({5, 3}, dt, -1, 1, 25), random_array({5, 2}, dt, -1, 1, 26)}},
                      {"3x5, b (3,)", {random_array({3, 5}, dt, -1, 1, 27), random_array({3}, dt, -1, 1, 28)}}};
            },
            .dtypes = testing::kFloatTypes,
            .differentiable = false});
HYP_OPINFO({.name = "cholesky_lower",
            .build = [](const std::vector<Var>& v) { return cholesky(v[0]); },
            .samples = spd_samples,
            .dtypes = testing::kFloatTypes});
HYP_OPINFO({.name = "cholesky_upper",
            .build = [](const std::vector<Var>& v) { return cholesky(v[0], false); },
            .samples = spd_samples,
            .dtypes = testing::kFloatTypes});
HYP_OPINFO({.name = "solve_general",
            .build = [](const std::vector<Var>& v) { return solve(v[0], v[1]); },
            .samples = solve_samples,
            .dtypes = testing::kFloatTypes});
HYP_OPINFO({.name = "solve_symmetric_upper",
            .build = [](const std::vector<Var>& v) { return solve(v[0], v[1], SolveStructure::Symmetric, false); },
            .samples = spd_solve_samples,
            .dtypes = testing::kFloatTypes});
HYP_OPINFO({.name = "solve_positive_definite",
            .build = [](const std::vector<Var>& v) { return solve(v[0], v[1], SolveStructure::PositiveDefinite); },
            .samples = spd_solve_samples,
            .dtypes = testing::kFloatTypes});
HYP_OPINFO({.name = "solve_triangular_lower",
            .build = [](const std::vector<Var>& v) { return solve_triangular(v[0], v[1], true); },
            .samples = solve_samples,
            .dtypes = testing::kFloatTypes});
HYP_OPINFO({.name = "solve_triangular_upper_trans_unit",
            .build = [](const std::vector<Var>& v) { return solve_triangular(v[0], v[1], false, true, true); },
            .samples = solve_samples,
            .dtypes = testing::kFloatTypes});
HYP_OPINFO({.name = "expm",
            .build = [](const std::vector<Var>& v) { return expm(v[0]); },
            .samples = expm_samples,
            .dtypes = testing::kFloatTypes});

// ------------------------------------------------------------------------------------------------
// Values

NDArray run1(const std::vector<Var>& ins, Var out, const std::vector<NDArray>& args) {
  std::vector<In> in(ins.begin(), ins.end());
  Function f = function(in, {out});
  return f(args)[0];
}

TEST(Linalg, IdentitiesPinTheValues) {
  Var a = variable(TensorType(DType::Float64, {false, false}), "a");
  const NDArray av = shifted(5, DType::Float64, 2, 30);
  const NDArray sv = symmetric(5, DType::Float64, 6, 31);
  const NDArray eye5 = run1({}, eye(5, DType::Float64), {});
  EXPECT_ALLCLOSE(run1({a}, dot(a, matrix_inverse(a)), {av}), eye5, 1e-10, 1e-10);
  Var l = cholesky(a);
  EXPECT_ALLCLOSE(run1({a}, dot(l, transpose(l)), {sv}), sv, 1e-10, 1e-10);
  EXPECT_ALLCLOSE(run1({a}, tril(l), {sv}), run1({a}, l, {sv}));
  Var u = cholesky(a, false);
  EXPECT_ALLCLOSE(run1({a}, dot(transpose(u), u), {sv}), sv, 1e-10, 1e-10);
  auto usv = svd(a, false);
  EXPECT_ALLCLOSE(run1({a}, dot(mul(usv[0], usv[1]), usv[2]), {av}), av, 1e-10, 1e-10);
  auto q_r = qr(a);
  EXPECT_ALLCLOSE(run1({a}, dot(q_r[0], q_r[1]), {av}), av, 1e-10, 1e-10);
  auto wv = eigh(a);
  EXPECT_ALLCLOSE(run1({a}, dot(mul(wv[1], wv[0]), transpose(wv[1])), {sv}), sv, 1e-10, 1e-10);
  // A x = b for every structure.
  Var b = variable(TensorType(DType::Float64, {false, false}), "b");
  const NDArray bv = random_array({5, 3}, DType::Float64, -1, 1, 32);
  for (auto st : {SolveStructure::General, SolveStructure::Symmetric, SolveStructure::PositiveDefinite})
    EXPECT_ALLCLOSE(run1({a, b}, dot(a, solve(a, b, st)), {sv, bv}), bv, 1e-10, 1e-10);
  // Triangular: only the named triangle is read.
  EXPECT_ALLCLOSE(run1({a, b}, dot(tril(a), solve_triangular(a, b, true)), {av, bv}), bv, 1e-10, 1e-10);
  EXPECT_ALLCLOSE(run1({a, b}, dot(transpose(triu(a)), solve_triangular(a, b, false, true)), {av, bv}), bv, 1e-10,
                  1e-10);
  // det of a known matrix; expm of a diagonal and of a nilpotent matrix.
  EXPECT_NEAR(run1({a}, det(a), {make_array({2, 1, 0, 1, 3, 1, 0, 1, 4}, {3, 3}, DType::Float64)}).get_flat(0), 18,
              1e-12);
  EXPECT_ALLCLOSE(run1({a}, expm(a), {make_array({1, 0, 0, -2}, {2, 2}, DType::Float64)}),
                  make_array({std::exp(1.0), 0, 0, std::exp(-2.0)}, {2, 2}, DType::Float64), 1e-14, 0);
  EXPECT_ALLCLOSE(run1({a}, expm(a), {make_array({0, 30, 0, 0}, {2, 2}, DType::Float64)}),
                  make_array({1, 30, 0, 1}, {2, 2}, DType::Float64), 1e-14, 0);
  // A large norm: expm(t [[0, 1], [-1, 0]]) is the rotation by t.
  EXPECT_ALLCLOSE(run1({a}, expm(a), {make_array({0, 40, -40, 0}, {2, 2}, DType::Float64)}),
                  make_array({std::cos(40.0), std::sin(40.0), -std::sin(40.0), std::cos(40.0)}, {2, 2}, DType::Float64),
                  1e-9, 1e-9);
}

TEST(Linalg, ComposedHelpers) {
  Var a = variable(TensorType(DType::Float64, {false, false}), "a");
  Var v = variable(TensorType(DType::Float64, {false}), "v");
  const NDArray m = make_array({1, 2, 3, 4, 5, 6}, {2, 3}, DType::Float64);
  EXPECT_ALLCLOSE(run1({a}, extract_diag(a), {m}), make_array({1, 5}, {2}, DType::Float64));
  EXPECT_ALLCLOSE(run1({a}, extract_diag(a, 1), {m}), make_array({2, 6}, {2}, DType::Float64));
  EXPECT_ALLCLOSE(run1({a}, extract_diag(a, -1), {m}), make_array({4}, {1}, DType::Float64));
  EXPECT_ALLCLOSE(run1({a}, extract_diag(a, 5), {m}), make_array({}, {0}, DType::Float64));
  EXPECT_ALLCLOSE(run1({v}, alloc_diag(v, 1), {make_array({7, 8}, {2}, DType::Float64)}),
                  make_array({0, 7, 0, 0, 0, 8, 0, 0, 0}, {3, 3}, DType::Float64));
  EXPECT_ALLCLOSE(run1({a}, tril(a), {m}), make_array({1, 0, 0, 4, 5, 0}, {2, 3}, DType::Float64));
  EXPECT_ALLCLOSE(run1({a}, triu(a, 1), {m}), make_array({0, 2, 3, 0, 0, 6}, {2, 3}, DType::Float64));
  EXPECT_ALLCLOSE(run1({a}, tril(a, -1), {m}), make_array({0, 0, 0, 4, 0, 0}, {2, 3}, DType::Float64));
  EXPECT_NEAR(run1({a}, trace(a), {make_array({1, 2, 3, 4}, {2, 2}, DType::Float64)}).get_flat(0), 5, 0);
  Var b = variable(TensorType(DType::Float64, {false, false}), "b");
  EXPECT_ALLCLOSE(
      run1({a, b}, kron(a, b),
           {make_array({1, 2}, {1, 2}, DType::Float64), make_array({1, 10, 100, 1000}, {2, 2}, DType::Float64)}),
      make_array({1, 10, 2, 20, 100, 1000, 200, 2000}, {2, 4}, DType::Float64));
  const NDArray sq = make_array({1, 1, 0, 1}, {2, 2}, DType::Float64);
  EXPECT_ALLCLOSE(run1({a}, matrix_power(a, 5), {sq}), make_array({1, 5, 0, 1}, {2, 2}, DType::Float64));
  EXPECT_ALLCLOSE(run1({a}, matrix_power(a, -3), {sq}), make_array({1, -3, 0, 1}, {2, 2}, DType::Float64));
  EXPECT_ALLCLOSE(run1({a}, matrix_power(a, 0), {sq}), make_array({1, 0, 0, 1}, {2, 2}, DType::Float64));
  const NDArray n = make_array({3, -4, 0, 0}, {2, 2}, DType::Float64);
  EXPECT_NEAR(run1({a}, norm(a), {n}).get_flat(0), 5, 1e-12);
  EXPECT_NEAR(run1({a}, norm(a, "1"), {n}).get_flat(0), 4, 1e-12);
  EXPECT_NEAR(run1({a}, norm(a, "inf"), {n}).get_flat(0), 7, 1e-12);
  EXPECT_NEAR(run1({a}, norm(a, "2"), {n}).get_flat(0), 5, 1e-12);
  EXPECT_NEAR(run1({a}, norm(a, "nuc"), {n}).get_flat(0), 5, 1e-12);
  EXPECT_NEAR(run1({v}, norm(v, "3"), {make_array({3, -4}, {2}, DType::Float64)}).get_flat(0), std::cbrt(27.0 + 64.0),
              1e-12);
  EXPECT_NEAR(run1({v}, norm(v, "0"), {make_array({3, 0, 1}, {3}, DType::Float64)}).get_flat(0), 2, 0);
  // tensorinv: an (4, 6) -> (2, 2, 3, 2) round trip.
  Var t4 = variable(TensorType(DType::Float64, {false, false, false, false}), "t4");
  const NDArray big = shifted(6, DType::Float64, 6, 33).reshape({2, 3, 3, 2});
  Var ti = tensorinv(t4, 2);
  EXPECT_ALLCLOSE(run1({t4}, tensordot(ti, t4, 2), {big}),
                  run1({}, eye(3 * 2, DType::Float64), {}).reshape({3, 2, 3, 2}), 1e-10, 1e-10);
  Var bb = variable(TensorType(DType::Float64, {false, false}), "bb");
  const NDArray rhs = random_array({2, 3}, DType::Float64, -1, 1, 34);
  EXPECT_ALLCLOSE(run1({t4, bb}, tensordot(t4, tensorsolve(t4, bb), 2), {big, rhs}), rhs, 1e-10, 1e-10);
}

TEST(Linalg, ErrorsNameTheOpAndTheShapes) {
  Var a = variable(TensorType(DType::Float64, {false, false}), "a");
  Var b = variable(TensorType(DType::Float64, {false}), "b");
  Function inv = function({a}, {matrix_inverse(a)});
  EXPECT_ERROR(ValueError, inv({make_array({1, 2, 2, 4}, {2, 2}, DType::Float64)}),
               "MatrixInverse: the matrix is singular");
  EXPECT_ERROR(ValueError, inv({NDArray::zeros({2, 3}, DType::Float64)}), "expected a square matrix, got shape (2, 3)");
  Function ch = function({a}, {cholesky(a)});
  EXPECT_ERROR(ValueError, ch({make_array({1, 2, 2, 1}, {2, 2}, DType::Float64)}), "not positive definite");
  // Theano's on_error='nan': a factor of NaN instead (and its gradient NaN); a good matrix as before.
  Function chn = function({a}, {cholesky(a, true, "nan"), grad(sum(cholesky(a, true, "nan")), a)});
  for (const NDArray& r : chn({make_array({1, 2, 2, 1}, {2, 2}, DType::Float64)}))
    for (int64_t i = 0; i < r.size(); ++i) EXPECT_TRUE(std::isnan(r.get_flat(i)));
  EXPECT_ALLCLOSE(chn({make_array({4, 2, 2, 5}, {2, 2}, DType::Float64)})[0],
                  make_array({2, 0, 1, 2}, {2, 2}, DType::Float64));
  EXPECT_ERROR(ValueError, cholesky(a, true, "ignore"), "on_error must be 'raise' or 'nan'");
  Function sv = function({a, b}, {solve(a, b)});
  EXPECT_ERROR(ValueError, sv({shifted(3, DType::Float64, 3, 1), NDArray::zeros({4}, DType::Float64)}), "b has 4 rows");
  Function ev = function({a}, {eig(a)[0]});
  EXPECT_ERROR(ValueError, ev({make_array({0, 1, -1, 0}, {2, 2}, DType::Float64)}), "is complex");
  Var t3 = variable(TensorType(DType::Float64, {false, false, false}), "t3");
  EXPECT_ERROR(TypeError, matrix_inverse(t3), "expected A to be a matrix");
  // Integers are computed as float64 (numpy's result dtype), float16 as float32.
  Var ai = variable(TensorType(DType::Int32, {false, false}), "ai");
  EXPECT_EQ(matrix_inverse(ai)->dtype(), DType::Float64);
  Var ah = variable(TensorType(DType::Float16, {false, false}), "ah");
  EXPECT_EQ(det(ah)->dtype(), DType::Float32);
  EXPECT_ERROR(NotDifferentiableError, grad(sum(svd(a, false, false)[0]), {a}), "svd");
}

std::string op_names(const Function& f) {
  std::string r;
  for (const auto& n : f.toposort()) r += n->op->name() + " ";
  return r;
}

TEST(Linalg, RewritesSolveInsteadOfInverting) {
  Var a = variable(TensorType(DType::Float64, {false, false}), "a");
  Var b = variable(TensorType(DType::Float64, {false, false}), "b");
  Var v = variable(TensorType(DType::Float64, {false}), "v");
  const NDArray av = shifted(4, DType::Float64, 4, 40), bv = random_array({4, 3}, DType::Float64, -1, 1, 41);
  const NDArray vv = random_array({4}, DType::Float64, -1, 1, 42), sv = symmetric(4, DType::Float64, 4, 43);
  struct Case {
    Var out;
    std::vector<In> ins;
    std::vector<NDArray> args;
    std::string want, not_want;
  };
  Var l = cholesky(a);
  std::vector<Case> cases = {
      {dot(matrix_inverse(a), b), {a, b}, {av, bv}, "Solve{general}", "MatrixInverse"},
      {dot(matrix_inverse(a), v), {a, v}, {av, vv}, "Solve{general}", "MatrixInverse"},
      {dot(transpose(b), matrix_inverse(a)), {a, b}, {av, bv}, "Solve{general}", "MatrixInverse"},
      {dot(v, matrix_inverse(a)), {a, v}, {av, vv}, "Solve{general}", "MatrixInverse"},
      {matrix_inverse(matrix_inverse(a)), {a}, {av}, "", "MatrixInverse"},
      {solve(l, b), {a, b}, {sv, bv}, "SolveTriangular{lower}", "Solve{general}"},
      {solve(transpose(l), b), {a, b}, {sv, bv}, "SolveTriangular{upper}", "Solve{general}"},
      // det beside cholesky stays a determinant (the factor reads one triangle of a).
      {add(det(a), sum(l)), {a}, {sv}, "Det", "nothing"},
  };
  for (const Case& c : cases) {
    Function fast = function(c.ins, {c.out});
    Function plain = function(c.ins, {c.out}, {.mode = "FAST_COMPILE"});
    const std::string names = op_names(fast);
    if (!c.want.empty()) {
      EXPECT_NE(names.find(c.want), std::string::npos) << names;
    }
    EXPECT_EQ(names.find(c.not_want), std::string::npos) << names;
    EXPECT_ALLCLOSE(fast(c.args)[0], plain(c.args)[0], 1e-10, 1e-10);
  }
}

}  // namespace
}  // namespace hypatia
