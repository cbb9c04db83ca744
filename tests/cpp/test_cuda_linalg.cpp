// Linalg on the CUDA backend (backends/cuda/cuda_linalg_kernels.cpp) against the CPU's, on a GPU
// (they skip without one, and run on a GPU machine: DEVELOPERS.md, bench/cuda/device_check.sh);
// without a GPU only which calls go to the CPU's kernel. The helper kernels run on the host in
// test_cuda_on_host_linalg.cpp, placement without a GPU in test_cuda_modules.cpp.
#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "backend_conformance.h"
#include "hypatia/backends/backend.h"
#include "hypatia/backends/cuda/cuda_api.h"
#include "hypatia/backends/cuda/cuda_kernel_util.h"
#include "hypatia/ops/linalg.h"
#include "hypatia/ops/reduce.h"
#include "test_cuda_util.h"

namespace hypatia {
namespace {

using testing::error_of;
using testing::fn;
using testing::on;

using testing::seeded_array;

TEST(CudaLinalg, CallsBeyondCusolversIntCountsAreTheCpusAndTheRestTheGpus) {
  // (No GPU needed: which calls the kernel hands to the CPU's. 46341^2 is past 2^31 - 1, 46340^2
  // is not.)
  const Linalg chol(LinalgKind::Cholesky), solve(LinalgKind::Solve);
  const std::vector<Shape> fits = {Shape{46340, 46340}}, past = {Shape{46341, 46341}};
  EXPECT_FALSE(cuda::beyond_cusolver_counts(chol, fits));
  EXPECT_TRUE(cuda::beyond_cusolver_counts(chol, past));
  EXPECT_FALSE(cuda::beyond_cusolver_counts(solve, std::vector<Shape>{Shape{8, 8}, Shape{8, 4}}));
  EXPECT_TRUE(cuda::beyond_cusolver_counts(solve, std::vector<Shape>{Shape{8, 8}, Shape{8, int64_t{1} << 28}}));
  // A tall matrix's full factors are square: U of Svd (full_matrices), Q of Qr ('complete').
  const std::vector<Shape> tall = {Shape{50000, 10}};
  LinalgAttrs full, reduced, complete;
  reduced.full_matrices = false;
  complete.qr_mode = QrMode::Complete;
  EXPECT_TRUE(cuda::beyond_cusolver_counts(Linalg(LinalgKind::Svd, full), tall));
  EXPECT_FALSE(cuda::beyond_cusolver_counts(Linalg(LinalgKind::Svd, reduced), tall));
  EXPECT_TRUE(cuda::beyond_cusolver_counts(Linalg(LinalgKind::Qr, complete), tall));
  EXPECT_FALSE(cuda::beyond_cusolver_counts(Linalg(LinalgKind::Qr), tall));
  EXPECT_FALSE(cuda::beyond_cusolver_counts(Linalg(LinalgKind::Pinv), tall));
  LinalgAttrs values_only;
  values_only.compute_uv = false;
  EXPECT_FALSE(cuda::beyond_cusolver_counts(Linalg(LinalgKind::Svd, values_only), tall));
}

TEST(CudaRun, CholeskySolveInverseDetAndEighRunThroughCusolverAndMatchTheCpu) {
  REQUIRE_GPU();
  for (DType dt : {DType::Float64, DType::Float32}) {
    SCOPED_TRACE(dtype_name(dt));
    Var a = matrix("a", dt), b = matrix("b", dt), v = vector("v", dt);
    // A positive definite matrix from a (8 x 8): a a^T + 8 I; a transposed view as an operand too.
    Var spd = dot(a, transpose(a)) + constant(8.0, dt) * eye(8, dt);
    std::vector<Out> outs = {cholesky(spd), cholesky(spd, /*lower=*/false), solve(a, b), solve(a, v),
                             solve(transpose(a), b), solve(spd, b, SolveStructure::Symmetric, /*lower=*/true),
                             solve(spd, v, SolveStructure::Symmetric, /*lower=*/false),
                             solve(spd, b, SolveStructure::PositiveDefinite, /*lower=*/true),
                             solve(spd, b, SolveStructure::PositiveDefinite, /*lower=*/false),
                             solve_triangular(cholesky(spd), b, /*lower=*/true),
                             solve_triangular(cholesky(spd), v, /*lower=*/true, /*trans=*/true),
                             solve_triangular(cholesky(spd, false), b, /*lower=*/false, false, /*unit_diagonal=*/true),
                             matrix_inverse(a), det(a), det(spd),
                             // Eigh: the values, and (an eigenvector's sign being the library's)
                             // V diag(w) V^T and V^T V, which do not depend on the signs.
                             eigh(spd)[0], dot(eigh(spd)[1] * eigh(spd)[0], transpose(eigh(spd)[1])),
                             dot(transpose(eigh(spd, false)[1]), eigh(spd, false)[1]),
                             // A v = w B v (sygvd): the values, from either triangle.
                             eigvalsh(a + transpose(a), spd), eigvalsh(a + transpose(a), spd, false)};
    Function fc = fn({a, b, v}, outs, on("cpu")), fg = fn({a, b, v}, outs, on("cuda"));
    int on_gpu = 0;
    for (const auto& n : fg.toposort())
      if (dynamic_cast<const Linalg*>(n->op.get())) {
        EXPECT_EQ(get_backend("cuda").provider(*n)->name(), "cuda") << n->op->name();
        ++on_gpu;
      }
    EXPECT_GE(on_gpu, 18);
    const NDArray av = seeded_array({8, 8}, dt, 11, -1, 1), bv = seeded_array({8, 3}, dt, 12, -1, 1),
                  vv = seeded_array({8}, dt, 13, -1, 1);
    const auto want = fc({av, bv, vv}), got = fg({av, bv, vv});
    const double tol = dt == DType::Float64 ? 1e-10 : 2e-4;
    for (size_t k = 0; k < outs.size(); ++k) EXPECT_ALLCLOSE(got[k], want[k], tol, tol) << "output " << k;
  }
  // Errors found on the device, raised with the CPU's words once the call waits.
  Var a = matrix("a", DType::Float64), b = matrix("b", DType::Float64);
  Function chol = fn({a}, {cholesky(a)}, on("cuda")), chol_nan = fn({a}, {cholesky(a, true, "nan")}, on("cuda"));
  const NDArray not_pd = testing::make_array({1, 2, 2, 1}, {2, 2}, DType::Float64);
  EXPECT_ERROR(ValueError, chol({not_pd}), "is not positive definite (its leading minor of order 2");
  const NDArray nan = chol_nan({not_pd})[0];
  for (int64_t t = 0; t < 4; ++t) EXPECT_TRUE(std::isnan(nan.get_flat(t))) << t;
  const NDArray singular = testing::make_array({1, 2, 2, 4}, {2, 2}, DType::Float64);
  EXPECT_ERROR(ValueError, fn({a}, {matrix_inverse(a)}, on("cuda"))({singular}), "the matrix is singular (U[1, 1]");
  EXPECT_ERROR(ValueError, fn({a, b}, {solve(a, b)}, on("cuda"))({singular, singular}), "A is singular (U[1, 1]");
  EXPECT_EQ(fn({a}, {det(a)}, on("cuda"))({singular})[0].get_flat(0), 0.0);  // (no error: 0, as on the CPU)
  const NDArray zero_diag = testing::make_array({1, 0, 3, 0}, {2, 2}, DType::Float64);
  EXPECT_ERROR(ValueError, fn({a, b}, {solve_triangular(a, b, true)}, on("cuda"))({zero_diag, singular}),
               "its diagonal element 1 is zero");
  EXPECT_ERROR(ValueError, fn({a, b}, {eigvalsh(a, b)}, on("cuda"))({singular, not_pd}),
               "B is not positive definite (its leading minor of order 2");
  // And the next call runs.
  EXPECT_ALLCLOSE(chol({testing::make_array({4, 2, 2, 3}, {2, 2}, DType::Float64)})[0],
                  testing::make_array({2, 0, 1, std::sqrt(2.0)}, {2, 2}, DType::Float64), 1e-12, 1e-12);
}

TEST(CudaRun, SvdPinvQrAndLstsqRunThroughCusolverAndMatchTheCpu) {
  REQUIRE_GPU();
  for (DType dt : {DType::Float64, DType::Float32}) {
    const double tol = dt == DType::Float64 ? 1e-10 : 3e-4;
    for (const Shape& shape : {Shape{7, 4}, Shape{4, 7}, Shape{5, 5}, Shape{0, 3}, Shape{3, 0}}) {
      SCOPED_TRACE(std::string(dtype_name(dt)) + " " + shape.str());
      Var a = matrix("a", dt);
      const int64_t k = std::min(shape[0], shape[1]);
      // A singular vector's sign, and an orthonormal factor's, are the library's: compared through
      // products that do not depend on them (U diag(s) Vt, U^T U, Q R, Q^T Q, |R|), the singular
      // values and the pseudo-inverse directly.
      const std::vector<Var> full = svd(a), thin = svd(a, false), q = qr(a), qc = qr(a, "complete");
      std::vector<Out> outs = {full[1], svd(a, true, false)[0], dot(thin[0] * thin[1], thin[2]),
                               dot(transpose(full[0]), full[0]), dot(full[2], transpose(full[2])), pinv(a),
                               pinv(a, 0.5), dot(q[0], q[1]), dot(transpose(q[0]), q[0]), abs(q[1]), dot(qc[0], qc[1]),
                               dot(transpose(qc[0]), qc[0]), abs(qr(a, "r")[0]),
                               // 'raw': the factors and tau as LAPACK's (Householder's signs are its)
                               qr(a, "raw")[0], qr(a, "raw")[1]};
      Function fc = fn({a}, outs, on("cpu")), fg = fn({a}, outs, on("cuda"));
      int on_gpu = 0;
      for (const auto& n : fg.toposort())
        if (dynamic_cast<const Linalg*>(n->op.get())) {
          EXPECT_EQ(get_backend("cuda").provider(*n)->name(), "cuda") << n->op->name();
          ++on_gpu;
        }
      EXPECT_GE(on_gpu, 7);
      const NDArray av = seeded_array(shape, dt, 21, -1, 1);
      const auto want = fc({av}), got = fg({av});
      for (size_t i = 0; i < outs.size(); ++i) EXPECT_ALLCLOSE(got[i], want[i], tol, tol) << "output " << i;
      if (k > 0) {
        EXPECT_ALLCLOSE(got[2], av, tol, tol);  // (U diag(s) Vt is A)
      }
    }
  }
  // A rank-deficient matrix: pinv drops the zero singular value as numpy does.
  Var a = matrix("a", DType::Float64);
  const NDArray r1 = testing::make_array({1, 2, 2, 4, 3, 6}, {3, 2}, DType::Float64);
  EXPECT_ALLCLOSE(fn({a}, {pinv(a)}, on("cuda"))({r1})[0], fn({a}, {pinv(a)}, on("cpu"))({r1})[0], 1e-12, 1e-12);
  // Lstsq: x, residuals (only for a full-rank tall A), rank and s, as gelsd's on the CPU: tall,
  // wide, square, rank-deficient, a vector b and a matrix of right-hand sides, empty ones.
  for (DType dt : {DType::Float64, DType::Float32}) {
    const double tol = dt == DType::Float64 ? 1e-9 : 2e-3;
    Var am = matrix("am", dt), bm = matrix("bm", dt), bv = vector("bv", dt), rc = scalar("rc", DType::Float64);
    const std::vector<Var> lm = lstsq(am, bm, rc), lv = lstsq(am, bv, rc);
    std::vector<Out> outs(lm.begin(), lm.end());
    outs.insert(outs.end(), lv.begin(), lv.end());
    Function fc = fn({am, bm, bv, rc}, outs, on("cpu")), fg = fn({am, bm, bv, rc}, outs, on("cuda"));
    for (const auto& [shape, nrhs] : std::vector<std::pair<Shape, int64_t>>{
             {{9, 4}, 3}, {{4, 9}, 2}, {{5, 5}, 1}, {{6, 3}, 0}, {{0, 3}, 2}, {{3, 0}, 2}}) {
      for (double rcv : {-1.0, 0.5, 0.0, 1.5}) {  // (0 and 1.5: gelsd's unit roundoff)
        SCOPED_TRACE(std::string(dtype_name(dt)) + " " + shape.str() + " nrhs " + std::to_string(nrhs) + " rcond " +
                     std::to_string(rcv));
        const NDArray av = seeded_array(shape, dt, 31, -1, 1), bmv = seeded_array({shape[0], nrhs}, dt, 32, -1, 1),
                      bvv = seeded_array({shape[0]}, dt, 33, -1, 1), rcv_a = NDArray::scalar(rcv, DType::Float64);
        const auto want = fc({av, bmv, bvv, rcv_a}), got = fg({av, bmv, bvv, rcv_a});
        for (size_t i = 0; i < outs.size(); ++i) {
          EXPECT_EQ(got[i].shape(), want[i].shape()) << "output " << i;
          EXPECT_ALLCLOSE(got[i], want[i], tol, tol) << "output " << i;
        }
      }
    }
    // Rank-deficient (a repeated column): rank 2, no residuals, the least-norm x.
    const NDArray d = testing::make_array({1, 1, 2, 2, 2, 4, 3, 3, 1, 4, 4, 0}, {4, 3}, dt);
    const NDArray bd = seeded_array({4, 2}, dt, 34, -1, 1), bdv = seeded_array({4}, dt, 35, -1, 1);
    const auto want = fc({d, bd, bdv, NDArray::scalar(-1.0, DType::Float64)}),
               got = fg({d, bd, bdv, NDArray::scalar(-1.0, DType::Float64)});
    EXPECT_EQ(got[2].get_flat(0), 2);
    for (size_t i = 0; i < outs.size(); ++i) EXPECT_ALLCLOSE(got[i], want[i], tol, tol) << "output " << i;
    // A NaN or an infinity: the CPU's error, found on the device.
    NDArray bad = seeded_array({4, 3}, dt, 36);
    if (dt == DType::Float64)
      bad.data<double>()[5] = std::nan("");
    else
      bad.data<float>()[5] = std::numeric_limits<float>::infinity();
    EXPECT_ERROR(ValueError, fg({bad, bd, bdv, NDArray::scalar(-1.0, DType::Float64)}),
                 "the matrix has a NaN or an infinity");
    EXPECT_ERROR(ValueError, fn({am}, {svd(am)[1]}, on("cuda"))({bad}), "the matrix has a NaN or an infinity");
    EXPECT_ERROR(ValueError, fn({am}, {pinv(am)}, on("cuda"))({bad}), "the matrix has a NaN or an infinity");
  }
}

TEST(CudaRun, EigRunsThroughXgeevAndMatchesTheCpu) {
  REQUIRE_GPU();
  if (!cuda::cusolver_has_geev()) GTEST_SKIP() << "libcusolver has no Xgeev (CUDA before 12.6): Eig runs on the CPU";
  for (DType dt : {DType::Float64, DType::Float32}) {
    SCOPED_TRACE(dtype_name(dt));
    Var a = matrix("a", dt);
    const std::vector<Var> e = eig(a);
    // The values (sorted: their order is the library's), A V - V diag(w) and V's column norms
    // (each eigenvector's sign being the library's).
    std::vector<Out> outs = {e[0], dot(a, e[1]) - e[1] * e[0], sqrt(sum(e[1] * e[1], Axes{0}))};
    Function fc = fn({a}, outs, on("cpu")), fg = fn({a}, outs, on("cuda"));
    for (const auto& [n, seed] : std::vector<std::pair<int64_t, uint64_t>>{{6, 51}, {1, 52}, {0, 53}}) {
      // A symmetric matrix plus a small skew part: real, distinct eigenvalues, not symmetric.
      const NDArray s = seeded_array({n, n}, DType::Float64, seed, -1, 1);
      NDArray a64 = NDArray::empty({n, n}, DType::Float64);
      for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < n; ++j)
          a64.data<double>()[i * n + j] = s.get_flat(i * n + j) + s.get_flat(j * n + i) + 0.01 * (i < j ? 1 : -1);
      const NDArray av = a64.astype(dt);
      const auto want = fc({av}), got = fg({av});
      const double tol = dt == DType::Float64 ? 1e-9 : 2e-3;
      auto sorted = [](const NDArray& v) {
        std::vector<double> x(static_cast<size_t>(v.size()));
        for (int64_t i = 0; i < v.size(); ++i) x[static_cast<size_t>(i)] = v.get_flat(i);
        std::sort(x.begin(), x.end());
        return x;
      };
      const std::vector<double> gw = sorted(got[0]), ww = sorted(want[0]);
      for (size_t i = 0; i < ww.size(); ++i) EXPECT_NEAR(gw[i], ww[i], tol * (1 + std::abs(ww[i]))) << i;
      EXPECT_ALLCLOSE(got[1], want[1], tol, tol);
      EXPECT_ALLCLOSE(got[2], want[2], tol, tol);
    }
    // A rotation: complex eigenvalues, refused as on the CPU.
    EXPECT_ERROR(ValueError, fg({testing::make_array({0, -1, 1, 0}, {2, 2}, dt)}), "is complex");
  }
}

TEST(CudaRun, ExpmRunsOnTheGpuInDoubleAndMatchesTheCpu) {
  REQUIRE_GPU();
  // Each Pade degree (norms from 0.01 to 40: scaled and squared), float32 and float64, an empty
  // matrix and a non-finite one (NaN throughout, as the CPU gives).
  for (DType dt : {DType::Float64, DType::Float32}) {
    Var a = matrix("a", dt);
    Function fc = fn({a}, {expm(a)}, on("cpu")), fg = fn({a}, {expm(a)}, on("cuda"));
    for (const auto& [n, scale] : std::vector<std::pair<int64_t, double>>{
             {6, 0.002}, {6, 0.05}, {6, 0.15}, {6, 0.3}, {6, 1.0}, {12, 3.0}, {5, 40.0}, {0, 1.0}}) {
      SCOPED_TRACE(std::string(dtype_name(dt)) + " n " + std::to_string(n) + " scale " + std::to_string(scale));
      const NDArray av = seeded_array({n, n}, dt, 41, -scale, scale);
      const double tol = dt == DType::Float64 ? 1e-10 : 1e-5;  // (cuBLAS's and OpenBLAS's rounding, squared)
      EXPECT_ALLCLOSE(fg({av})[0], fc({av})[0], tol, tol);
    }
    for (double v : {std::numeric_limits<double>::infinity(), std::nan("")}) {
      NDArray bad = seeded_array({3, 3}, dt, 42);
      if (dt == DType::Float64)
        bad.data<double>()[4] = v;
      else
        bad.data<float>()[4] = static_cast<float>(v);
      const NDArray r = fg({bad})[0];
      for (int64_t t = 0; t < 9; ++t) EXPECT_TRUE(std::isnan(r.get_flat(t))) << t;
    }
  }
  // The gradient (through the expm of a block matrix) on the GPU too.
  Var a = matrix("a", DType::Float64);
  Var c = sum(expm(a) * expm(a));
  Function gc = fn({a}, {grad(c, a)}, on("cpu")), gg = fn({a}, {grad(c, a)}, on("cuda"));
  const NDArray av = seeded_array({4, 4}, DType::Float64, 43, -0.5, 0.5);
  EXPECT_ALLCLOSE(gg({av})[0], gc({av})[0], 1e-10, 1e-10);
}

}  // namespace
}  // namespace hypatia
