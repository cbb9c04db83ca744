// Linear algebra: Theano's nlinalg and slinalg (numpy.linalg / scipy.linalg semantics) on
// matrices. One op class, Linalg, whose kind says which decomposition or solver it is (its
// kernels call LAPACK through OpenBLAS: backends/linalg_kernels.cpp); the rest (diag, trace,
// tril, matrix_power, norm, kron, tensorinv, tensorsolve) are built from other ops, so their
// gradients come from those. Inputs are float32 or float64 matrices; the builders convert
// integers to float64 and float16 to float32 (numpy's results), and refuse other ranks.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "hypatia/graph/graph.h"

namespace hypatia {

enum class LinalgKind : uint8_t {
  Inverse,   ///< numpy.linalg.inv: (n, n) -> (n, n); a singular matrix is a ValueError
  Det,       ///< numpy.linalg.det: (n, n) -> () (LU with partial pivoting; 0 for a singular matrix)
  Eig,       ///< numpy.linalg.eig of a real matrix: w (n,), v (n, n); complex results are refused
  Eigh,      ///< numpy.linalg.eigh (one input; reads the `lower` triangle): w ascending (n,), v (n, n);
             ///< with a second input B (positive definite): the generalized problem A v = w B v
  Svd,       ///< numpy.linalg.svd: U, s, Vt (full_matrices, compute_uv) or s alone
  Qr,        ///< numpy.linalg.qr: Q, R ('reduced', 'complete'), R ('r'), or (h, tau) ('raw')
  Lstsq,     ///< numpy.linalg.lstsq(a, b, rcond): x, residuals, rank (int64 ()), s
  Pinv,      ///< numpy.linalg.pinv(a, rcond) (SVD; singular values <= rcond * largest are dropped)
  Cholesky,  ///< scipy.linalg.cholesky: L (lower) or U (upper) with A = L L^T = U^T U
  Solve,     ///< scipy.linalg.solve / solve_triangular: x with op(A) x = b, b of shape (n,) or (n, k)
  Expm,      ///< scipy.linalg.expm: the matrix exponential (scaling and squaring, Pade 13)
};

/// How Solve reads A (scipy's assume_a, Theano's A_structure).
enum class SolveStructure : uint8_t {
  General,           ///< LU with partial pivoting (gesv)
  Symmetric,         ///< only the `lower` (or upper) triangle is read (sysv)
  PositiveDefinite,  ///< only the `lower` (or upper) triangle is read, Cholesky (posv)
  Triangular,        ///< A is `lower` or upper triangular (trtrs): the other triangle is not read
};

enum class QrMode : uint8_t { Reduced, Complete, R, Raw };

struct LinalgAttrs {
  bool lower = true;  ///< Cholesky, Eigh (UPLO), Solve (which triangle)
  SolveStructure structure = SolveStructure::General;
  bool trans = false;                ///< Solve: solve A^T x = b (Triangular only)
  bool unit_diagonal = false;        ///< Solve, Triangular: A's diagonal is taken as ones
  bool full_matrices = true;         ///< Svd
  bool compute_uv = true;            ///< Svd
  QrMode qr_mode = QrMode::Reduced;  ///< Qr
  double rcond = -1;                 ///< Pinv: < 0 means numpy's default (1e-15)
  bool nan_on_error = false;         ///< Cholesky (Theano's on_error='nan'): a matrix that is not
                                     ///< positive definite gives a factor of NaN instead of a ValueError
  auto key() const {
    return std::make_tuple(lower, structure, trans, unit_diagonal, full_matrices, compute_uv, qr_mode, rcond,
                           nan_on_error);
  }
};

class Linalg : public OpWithProps<Linalg> {
 public:
  LinalgKind kind;
  LinalgAttrs attrs;

  explicit Linalg(LinalgKind k, LinalgAttrs a = {}) : kind(k), attrs(a) {}
  auto props() const { return std::make_tuple(kind, attrs.key()); }
  /// "MatrixInverse", "Det", "Eigh{lower}", "Svd{full_matrices, compute_uv}", "Solve{general}",
  /// "SolveTriangular{lower, trans}", ... (Theano's names where it had the op).
  std::string name() const override;
  std::vector<TensorType> make_output_types(const std::vector<Var>& inputs) const override;
  std::vector<ShapeVars> infer_shape(const Apply& node, const std::vector<ShapeVars>& in) const override;
  /// Inverse, Det, Eigh (values and vectors; generalized too), Cholesky, Solve and Expm have
  /// gradients; Eig, Svd, Qr, Lstsq and Pinv say their gradient is not implemented (Theano had
  /// none either).
  std::vector<Var> grad(const Apply& node, const std::vector<Var>& output_grads) const override;
  std::vector<std::vector<bool>> connection_pattern(const Apply& node) const override;
};

// ---- nlinalg
Var matrix_inverse(Var a);
Var det(Var a);
/// (w, v) of a real matrix with real eigenvalues (a complex one is a ValueError at run time).
std::vector<Var> eig(Var a);
/// (w, v): eigenvalues ascending and orthonormal eigenvectors (columns) of the symmetric matrix
/// whose `lower` ("L") or upper triangle is read.
std::vector<Var> eigh(Var a, bool lower = true);
/// numpy.linalg.svd: (U, s, Vt) or {s}.
std::vector<Var> svd(Var a, bool full_matrices = true, bool compute_uv = true);
/// numpy.linalg.qr with mode "reduced", "complete", "r" or "raw".
std::vector<Var> qr(Var a, const std::string& mode = "reduced");
/// numpy.linalg.lstsq(a, b, rcond): (x, residuals, rank, s); rcond < 0: max(M, N) * eps.
std::vector<Var> lstsq(Var a, Var b, Var rcond);
Var pinv(Var a, double rcond = -1);
/// Sum of the main diagonal of a matrix.
Var trace(Var a);
/// numpy.diagonal(a, offset, axis1, axis2): the diagonal as the last axis (an indexing view).
Var extract_diag(Var a, int64_t offset = 0, int axis1 = 0, int axis2 = 1);
/// The square matrix with v on diagonal `offset` and zeros elsewhere.
Var alloc_diag(Var v, int64_t offset = 0);
/// numpy.diag: a vector's diagonal matrix, or a matrix's diagonal (offset k).
Var diag(Var a, int64_t k = 0);
/// Lower (upper) triangle on and below (above) diagonal k; the rest zero. Any ndim >= 2 (the last
/// two axes).
Var tril(Var a, int64_t k = 0);
Var triu(Var a, int64_t k = 0);
/// a @ a @ ... (n times; n < 0: of the inverse; n == 0: the identity), by repeated squaring.
Var matrix_power(Var a, int64_t n);
/// numpy.linalg.norm for vectors (ord: "", "inf", "-inf", or a number as text, "0", "1", "2", ...)
/// and matrices ("", "fro", "nuc", "inf", "-inf", "1", "-1", "2", "-2"); "" is the default
/// (2-norm / Frobenius).
Var norm(Var x, const std::string& ord = "");
/// numpy.linalg.tensorinv(a, ind) / tensorsolve(a, b).
Var tensorinv(Var a, int ind = 2);
Var tensorsolve(Var a, Var b);

// ---- slinalg
/// on_error: "raise" (a ValueError naming the failing minor) or "nan" (a factor of NaN, Theano's
/// on_error='nan'; its gradient is NaN there too).
Var cholesky(Var a, bool lower = true, const std::string& on_error = "raise");
/// scipy.linalg.solve(a, b) with a structure (Theano's A_structure / scipy's assume_a).
Var solve(Var a, Var b, SolveStructure structure = SolveStructure::General, bool lower = true);
/// scipy.linalg.solve_triangular(a, b, trans, lower, unit_diagonal); lower defaults to false as in scipy.
Var solve_triangular(Var a, Var b, bool lower = false, bool trans = false, bool unit_diagonal = false);
/// Eigenvalues of the symmetric a (b null), or of the generalized problem a v = w b v.
Var eigvalsh(Var a, Var b = nullptr, bool lower = true);
Var expm(Var a);
/// The Kronecker product of two arrays (numpy.kron for matrices; vectors too).
Var kron(Var a, Var b);

}  // namespace hypatia
