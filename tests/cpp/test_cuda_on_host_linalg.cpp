// The CUDA backend's linear-algebra helper kernels (cuda_linalg_source.cpp: zeroing and mirroring
// triangles, the checks of a factor's diagonal and of cuSOLVER's info word, and the rest that
// cuda_linalg_kernels.cpp launches around cuSOLVER's calls) run on the host on column-major
// matrices, as in test_cuda_on_host.cpp (cuda_host/host_kernels.h).
#include <bit>
#include <cmath>
#include <limits>
#include <utility>
#include <vector>

#include "cuda_host/host_kernels.h"
#include "hypatia/hypatia.h"
#include "test_util.h"

namespace hypatia {
namespace {

unsigned long long ptr(const NDArray& a) { return reinterpret_cast<unsigned long long>(a.raw()); }

TEST(CudaKernelsOnHost, LinalgHelpersZeroMirrorAndCheckColumnMajorMatrices) {
  // Column-major 3 x 3: element (i, j) at j * 3 + i holds 10 * i + j + 1.
  for (const HostLinalgKernels& k : kHostLinalgKernels) {
    SCOPED_TRACE(dtype_name(k.dt));
    const int64_t n = 3;
    auto set = [&](NDArray& m, int64_t t, double v) {
      if (k.dt == DType::Float32)
        m.data<float>()[t] = static_cast<float>(v);
      else
        m.data<double>()[t] = v;
    };
    auto fresh = [&] {
      NDArray m = NDArray::empty({n * n}, k.dt);
      for (int64_t j = 0; j < n; ++j)
        for (int64_t i = 0; i < n; ++i) set(m, j * n + i, static_cast<double>(10 * i + j + 1));
      return m;
    };
    auto at = [&](const NDArray& m, int64_t i, int64_t j) { return m.get_flat(j * n + i); };
    NDArray info = NDArray::zeros({1}, DType::Int32);
    for (bool lower : {true, false}) {
      // The factor's other triangle zeroed.
      NDArray m = fresh();
      struct {
        long long n, lower, nan;
        unsigned long long a, info;
      } tri{n, lower, 1, ptr(m), ptr(info)};
      k.tri(&tri);
      for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < n; ++j)
          EXPECT_EQ(at(m, i, j), (lower ? j > i : i > j) ? 0.0 : 10.0 * i + j + 1) << i << "," << j;
      // The kept triangle mirrored into the other.
      NDArray s = fresh();
      struct {
        long long n, lower;
        unsigned long long a;
      } sym{n, lower, ptr(s)};
      k.sym(&sym);
      for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < n; ++j) {
          const bool kept = lower ? i >= j : i <= j;
          EXPECT_EQ(at(s, i, j), kept ? 10.0 * i + j + 1 : 10.0 * j + i + 1) << i << "," << j;
        }
    }
    // A failed factorization with nan_on_error: NaN throughout; without, only the triangle.
    info.data<int32_t>()[0] = 2;
    NDArray m = fresh();
    struct {
      long long n, lower, nan;
      unsigned long long a, info;
    } tri{n, 1, 1, ptr(m), ptr(info)};
    k.tri(&tri);
    for (int64_t t = 0; t < n * n; ++t) EXPECT_TRUE(std::isnan(m.get_flat(t))) << t;
    // devInfo into the check block: nothing for 0, else (1, info, code).
    long long err[4] = {0, 0, 0, 0};
    struct {
      unsigned long long info, err;
      long long code;
    } ia{ptr(info), reinterpret_cast<unsigned long long>(err), 2};
    k.info(&ia);
    EXPECT_EQ(err[0], 1);
    EXPECT_EQ(err[1], 2);
    EXPECT_EQ(err[2], 2);
    long long none[4] = {0, 0, 0, 0};
    info.data<int32_t>()[0] = 0;
    ia.err = reinterpret_cast<unsigned long long>(none);
    k.info(&ia);
    EXPECT_EQ(none[0], 0);
    // The first zero on the diagonal (index + 1), none when there is none.
    NDArray d = fresh();
    long long derr[4] = {0, 0, 0, 0};
    struct {
      long long n;
      unsigned long long a, err;
    } da{n, ptr(d), reinterpret_cast<unsigned long long>(derr)};
    k.diag(&da);
    EXPECT_EQ(derr[0], 0);
    set(d, 1 * n + 1, 0.0);
    set(d, 2 * n + 2, 0.0);
    k.diag(&da);
    EXPECT_EQ(derr[0], 1);
    EXPECT_EQ(derr[1], 2);  // diagonal element 1
    EXPECT_EQ(derr[2], 3);
    // The determinant: the diagonal's product (1 * 12 * 23 of fresh()), negated per exchange.
    NDArray f = fresh(), out = NDArray::zeros({}, k.dt);
    NDArray piv = NDArray::empty({n}, DType::Int32);
    for (const auto& [p, sign] :
         std::vector<std::pair<std::vector<int32_t>, double>>{{{1, 2, 3}, 1}, {{2, 2, 3}, -1}, {{3, 3, 3}, 1}}) {
      std::copy(p.begin(), p.end(), piv.data<int32_t>());
      struct {
        long long n;
        unsigned long long a, piv, out;
      } det{n, ptr(f), ptr(piv), ptr(out)};
      k.det(&det);
      EXPECT_EQ(out.get_flat(0), sign * 1 * 12 * 23);
    }
    // Qr's R from column-major factors of a 3 x 2 matrix (element (i, j) at j * 3 + i: 10 i + j + 1),
    // 'complete' (3 rows) and reduced (2): the upper triangle, zeros below.
    NDArray fac = NDArray::empty({6}, k.dt);
    for (int64_t j = 0; j < 2; ++j)
      for (int64_t i = 0; i < 3; ++i) set(fac, j * 3 + i, static_cast<double>(10 * i + j + 1));
    for (long long rr : {3LL, 2LL}) {
      NDArray r = NDArray::full({rr, 2}, k.dt, 7.0);
      struct {
        long long m, n, rr;
        unsigned long long a, out;
      } ra{3, 2, rr, ptr(fac), ptr(r)};
      k.r(&ra);
      for (int64_t i = 0; i < rr; ++i)
        for (int64_t j = 0; j < 2; ++j) EXPECT_EQ(r.get_flat(i * 2 + j), j >= i ? 10.0 * i + j + 1 : 0.0) << i << j;
    }
    // Pinv's scaling: U's (column-major 2 x 3) columns over s = (4, 2, 1e-20), the last dropped
    // (below rcond * 4).
    NDArray u = NDArray::empty({6}, k.dt), sv = NDArray::empty({3}, k.dt);
    for (int64_t t = 0; t < 6; ++t) set(u, t, 8.0);
    set(sv, 0, 4.0);
    set(sv, 1, 2.0);
    set(sv, 2, 1e-20);
    struct {
      long long count, div, mod;
      unsigned long long u, s;
      double rcond;
    } sa{6, 2, 3, ptr(u), ptr(sv), 1e-15};
    k.scale(&sa);
    for (int64_t t = 0; t < 6; ++t) EXPECT_EQ(u.get_flat(t), t < 2 ? 2.0 : t < 4 ? 4.0 : 0.0) << t;
    // ... and Lstsq's rows (column-major 3 x 2: div 1, row t % 3).
    for (int64_t t = 0; t < 6; ++t) set(u, t, 8.0);
    sa.div = 1;
    k.scale(&sa);
    for (int64_t t = 0; t < 6; ++t) EXPECT_EQ(u.get_flat(t), t % 3 == 0 ? 2.0 : t % 3 == 1 ? 4.0 : 0.0) << t;
    // Lstsq's rank (the values above rcond * the largest) and residuals (each column's sum of squares).
    NDArray rank = NDArray::zeros({}, DType::Int64);
    struct {
      long long k;
      unsigned long long s;
      double rcond;
      unsigned long long out;
    } rk{3, ptr(sv), 1e-15, ptr(rank)};
    k.rank(&rk);
    EXPECT_EQ(rank.data<int64_t>()[0], 2);
    rk.rcond = 0.6;  // (2 is not above 0.6 * 4)
    k.rank(&rk);
    EXPECT_EQ(rank.data<int64_t>()[0], 1);
    NDArray sums = NDArray::zeros({2}, k.dt);
    struct {
      long long m, n;
      unsigned long long r, out;
    } sq{3, 2, ptr(fac), ptr(sums)};
    k.sumsq(&sq);
    EXPECT_EQ(sums.get_flat(0), 1.0 + 121 + 441);
    EXPECT_EQ(sums.get_flat(1), 4.0 + 144 + 484);
    // Expm's helpers, in double: fresh() to double, its columns' sums of magnitudes (one entry
    // negated), their largest (NaN once one is NaN), y += s x, the diagonal, back to T in C order.
    NDArray d64 = NDArray::empty({n * n}, DType::Float64);
    NDArray src = fresh();
    set(src, 1, -11.0);
    struct {
      long long count;
      unsigned long long in, out;
    } tf{n * n, ptr(src), ptr(d64)};
    k.to_f64(&tf);
    EXPECT_EQ(d64.get_flat(1), -11.0);
    NDArray cols = NDArray::empty({n}, DType::Float64), mx = NDArray::empty({1}, DType::Float64);
    struct {
      long long n;
      unsigned long long a, out;
    } cs{n, ptr(d64), ptr(cols)};
    k.colsum(&cs);
    EXPECT_EQ(cols.get_flat(0), 1.0 + 11 + 21);  // column 0: rows 0..2 of (10 i + 1)
    EXPECT_EQ(cols.get_flat(2), 3.0 + 13 + 23);
    struct {
      long long n;
      unsigned long long in, out;
    } mxa{n, ptr(cols), ptr(mx)};
    k.max(&mxa);
    EXPECT_EQ(mx.get_flat(0), 39.0);
    cols.data<double>()[1] = std::nan("");
    k.max(&mxa);
    EXPECT_TRUE(std::isnan(mx.get_flat(0)));
    NDArray y64 = NDArray::zeros({n * n}, DType::Float64);
    struct {
      long long count;
      double s;
      unsigned long long x, y;
    } ax{n * n, 0.5, ptr(d64), ptr(y64)};
    k.axpy(&ax);
    EXPECT_EQ(y64.get_flat(4), 0.5 * 12);
    struct {
      long long n;
      double s;
      unsigned long long y;
    } ad{n, 100.0, ptr(y64)};
    k.adddiag(&ad);
    EXPECT_EQ(y64.get_flat(4), 0.5 * 12 + 100);
    EXPECT_EQ(y64.get_flat(3), 0.5 * 2);
    NDArray back = NDArray::empty({n, n}, k.dt);
    struct {
      long long n;
      unsigned long long in, out;
    } fb{n, ptr(y64), ptr(back)};
    k.from_f64(&fb);
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < n; ++j) EXPECT_EQ(back.get_flat(i * n + j), y64.get_flat(j * n + i)) << i << j;
    struct {
      long long count;
      double v;
      unsigned long long out;
    } fl{n * n, std::nan(""), ptr(back)};
    k.fill(&fl);
    for (int64_t t = 0; t < n * n; ++t) EXPECT_TRUE(std::isnan(back.get_flat(t))) << t;
    // Eig: the first eigenvalue with an imaginary part (W: 3 real parts, then 3 imaginary ones),
    // its index and both parts (float32 bits) into the check block; none for real ones.
    NDArray wv = NDArray::zeros({6}, k.dt);
    set(wv, 0, 2.0);
    set(wv, 1, 1.5);
    set(wv, 2, 1.5);
    long long cerr[4] = {0, 0, 0, 0};
    struct {
      long long n;
      unsigned long long w, err;
    } ca{3, ptr(wv), reinterpret_cast<unsigned long long>(cerr)};
    k.complex(&ca);
    EXPECT_EQ(cerr[0], 0);
    set(wv, 4, 0.25);
    set(wv, 5, -0.25);
    k.complex(&ca);
    EXPECT_EQ(cerr[0], 1);
    EXPECT_EQ(cerr[1], 1);
    EXPECT_EQ(cerr[2], 9);
    const auto bits = static_cast<uint64_t>(cerr[3]);
    EXPECT_EQ(std::bit_cast<float>(static_cast<uint32_t>(bits >> 32)), 1.5f);
    EXPECT_EQ(std::bit_cast<float>(static_cast<uint32_t>(bits)), 0.25f);
    // The SVD's check of its work copy: a NaN and an infinity flagged (the first's index, code 8)
    // and zeroed there, the finite elements left; a finite matrix neither flagged nor changed.
    NDArray wf = fresh();
    long long ferr[4] = {0, 0, 0, 0};
    struct {
      long long count;
      unsigned long long a, err;
    } fa{n * n, ptr(wf), reinterpret_cast<unsigned long long>(ferr)};
    k.finite(&fa);
    EXPECT_EQ(ferr[0], 0);
    EXPECT_EQ(testing::compare_arrays(wf, fresh(), 0.0, 0.0), "");
    set(wf, 2, std::nan(""));
    set(wf, 5, -std::numeric_limits<double>::infinity());
    k.finite(&fa);
    EXPECT_EQ(ferr[0], 1);
    EXPECT_EQ(ferr[1], 2);
    EXPECT_EQ(ferr[2], 8);
    const NDArray want = fresh();
    for (int64_t t = 0; t < n * n; ++t) EXPECT_EQ(wf.get_flat(t), t == 2 || t == 5 ? 0.0 : want.get_flat(t)) << t;
  }
}

}  // namespace
}  // namespace hypatia
