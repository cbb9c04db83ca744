// The CUDA backend's Linalg kernel (cuda_linalg.h): its decompositions through cuSOLVER (Svd and
// Pinv by gesvd, Lstsq from the SVD, Qr by geqrf and orgqr, Eig by Xgeev or on the CPU) and Expm
// (scipy's Pade algorithm in double, with cuBLAS products and cuSOLVER's LU).
#include <algorithm>
#include <cmath>
#include <limits>

#include "hypatia/backends/cuda/cuda_linalg.h"
#include "hypatia/backends/expm_pade.h"
#include "hypatia/core/messages.h"

namespace hypatia::cuda::la {

void LinalgKernel::fill(NDArray& out, bool identity) {
  if (out.size() == 0) return;
  if (!identity) {
    check(cudaMemsetAsync(out.raw(), 0, out.nbytes(), stream()), "cudaMemsetAsync (zeros)");
    return;
  }
  std::vector<int64_t> args = {out.shape(0), out.shape(1), 0, ptr(out.raw())};
  launch(eye_kernel_, grid_for(out.size()), args, op_.name().c_str());
}

void LinalgKernel::gesvd(NDArray& w, int m, int n, bool uv, bool full, NDArray& s, NDArray& u, NDArray& vt) {
  {  // (a NaN or an infinity: the CPU's error, found here, and zeroed in the work copy, which
     // cuSOLVER then factors, its results discarded for the error)
    std::vector<int64_t> args = {int64_t{m} * n, ptr(w.raw()), static_cast<int64_t>(check_.device())};
    launch(finite_kernel_, grid_for(int64_t{m} * n), args, op_.name().c_str());
  }
  const int ucols = full ? m : n;
  const signed char jobu = !uv ? 'N' : full ? 'A' : 'S', jobvt = uv ? 'A' : 'N';
  if (uv) {
    u = NDArray::empty({ucols, m}, dt_, Device::cuda());
    vt = NDArray::empty({n, n}, dt_, Device::cuda());
  }
  by_dtype(dt_, [&]<class T>() {
    Solver sv;
    int lwork = 0;
    check_cusolver(pick<T>(sv->cusolverDnSgesvd_bufferSize, sv->cusolverDnDgesvd_bufferSize)(sv.handle(), m, n, &lwork),
                   "cusolverDn<t>gesvd_bufferSize");
    NDArray ws = workspace(lwork), rwork = workspace(n - 1);
    check_cusolver(pick<T>(sv->cusolverDnSgesvd, sv->cusolverDnDgesvd)(
                       sv.handle(), jobu, jobvt, m, n, w.data<T>(), m, s.data<T>(), uv ? u.data<T>() : nullptr, m,
                       uv ? vt.data<T>() : nullptr, n, ws.data<T>(), lwork, rwork.data<T>(), info_.data<int>()),
                   "cusolverDn<t>gesvd");
  });
  check_info(kSvdNoConvergence);
}

void LinalgKernel::svd(const NDArray& x, const KernelArgs& a) {
  const int64_t rows = x.shape(0), cols = x.shape(1);
  const bool wide = rows < cols, pinv = op_.kind == LinalgKind::Pinv;
  const bool uv = pinv || op_.attrs.compute_uv, full = !pinv && op_.attrs.full_matrices;
  const int m = lapack_dim(op_, wide ? cols : rows), n = lapack_dim(op_, wide ? rows : cols);  // M's, m >= n
  const int64_t k = n;
  if (pinv) {
    NDArray& out = prepare_device_output(*a.out[0], Shape{cols, rows}, dt_);
    if (k == 0) return fill(out, false);
    NDArray w = wide ? device_copy(x) : column_major(x), s = NDArray::empty({k}, dt_, Device::cuda()), u, vt;
    gesvd(w, m, n, true, false, s, u, vt);
    // U's columns times 1/s where s > rcond * s[0] (else 0), then V diag U^T as one product,
    // written column-major as A's pinv transposed: C order (cols, rows).
    scale_by_inverse(u, int64_t{m} * k, m, k, s, op_.attrs.rcond < 0 ? 1e-15 : op_.attrs.rcond);
    // Tall: out (rows x cols, col-major) = U_s (m x k) VT (k x n). Wide (M = A^T): out = VT^T U_s^T.
    const bool t = wide;
    gemm(t, t, static_cast<int>(rows), static_cast<int>(cols), static_cast<int>(k), 1, wide ? vt : u, wide ? n : m,
         wide ? u : vt, wide ? m : n, 0, out, static_cast<int>(rows));
    return;
  }
  NDArray& s = prepare_device_output(*a.out[uv ? 1 : 0], Shape{k}, dt_);
  const int64_t ucols = full ? rows : k, vrows = full ? cols : k;
  if (k == 0) {  // an empty matrix: U and Vt are identities of their shapes (the CPU's)
    if (uv) {
      fill(prepare_device_output(*a.out[0], Shape{rows, ucols}, dt_), true);
      fill(prepare_device_output(*a.out[2], Shape{vrows, cols}, dt_), true);
    }
    return;
  }
  NDArray w = wide ? device_copy(x) : column_major(x), u, vt;
  gesvd(w, m, n, uv, full, s, u, vt);
  if (!uv) return;
  if (wide) {  // U = V' (VT' as a C-order buffer), Vt = U'^T (U' as one)
    *a.out[0] = vt;
    *a.out[2] = u;
  } else {
    *a.out[0] = device_copy(u.transpose());
    *a.out[2] = device_copy(vt.transpose());
  }
}

void LinalgKernel::gemm(bool ta, bool tb, int m, int n, int k, double alpha, const NDArray& A, int lda,
                        const NDArray& B, int ldb, double beta, NDArray& C, int ldc) {
  if (m == 0 || n == 0) return;
  const Cublas& cb = cublas();
  by_dtype(C.dtype(), [&]<class T>() {
    const T al = static_cast<T>(alpha), be = static_cast<T>(beta);
    check_cublas(pick<T>(cb.sgemm, cb.dgemm)(
                     cublas_handle(), ta ? CUBLAS_OP_T : CUBLAS_OP_N, tb ? CUBLAS_OP_T : CUBLAS_OP_N, m, n, k, &al,
                     A.data<T>(), std::max(1, lda), B.data<T>(), std::max(1, ldb), &be, C.data<T>(), std::max(1, ldc)),
                 "cublas<t>gemm");
  });
  after_launch("cuBLAS gemm");
}

void LinalgKernel::scale_by_inverse(NDArray& u, int64_t count, int64_t div, int64_t mod, const NDArray& s,
                                    double rcond) {
  if (count == 0) return;
  std::vector<int64_t> args = {count, div, mod, ptr(u.raw()), ptr(s.raw()), std::bit_cast<int64_t>(rcond)};
  launch(scale_kernel_, grid_for(count), args, op_.name().c_str());
}

void LinalgKernel::lstsq(const NDArray& x, const NDArray& y, double rc, const KernelArgs& a) {
  const int64_t rows = x.shape(0), cols = x.shape(1);
  if (y.shape(0) != rows)
    fail<ValueError>(op_.name(), ": a has ", rows, " rows but b has ", y.shape(0), " (shapes ", x.shape().str(),
                     " and ", y.shape().str(), ")");
  const bool vec = y.ndim() == 1, wide = rows < cols;
  const int m = lapack_dim(op_, wide ? cols : rows), n = lapack_dim(op_, wide ? rows : cols);  // M's, m >= n
  const int k = n, nrhs = vec ? 1 : lapack_dim(op_, y.shape(1));
  if (rc < 0) rc = (dt_ == DType::Float32 ? 0x1p-23 : 0x1p-52) * static_cast<double>(std::max(rows, cols));
  // (As gelsd's xLALSD: rcond, in the dtype, outside (0, 1) is the unit roundoff.)
  if (dt_ == DType::Float32) rc = static_cast<float>(rc);
  if (!(rc > 0 && rc < 1)) rc = dt_ == DType::Float32 ? 0x1p-24 : 0x1p-53;
  NDArray& xo = prepare_device_output(*a.out[0], vec ? Shape{cols} : Shape{cols, nrhs}, dt_);
  NDArray& rank = prepare_device_output(*a.out[2], Shape{}, DType::Int64);
  NDArray& s = prepare_device_output(*a.out[3], Shape{k}, dt_);
  const NDArray b = column_major(y);                               // rows x nrhs
  NDArray xc = NDArray::empty({nrhs, cols}, dt_, Device::cuda());  // column-major cols x nrhs
  if (k == 0) {
    fill(xc, false);
    check(cudaMemsetAsync(rank.raw(), 0, sizeof(int64_t), stream()), "cudaMemsetAsync (rank)");
  } else {
    NDArray w = wide ? device_copy(x) : column_major(x), u, vt;
    gesvd(w, m, n, true, false, s, u, vt);
    std::vector<int64_t> args = {k, ptr(s.raw()), std::bit_cast<int64_t>(rc), ptr(rank.raw())};
    launch(rank_kernel_, 1, args, op_.name().c_str());
    // t = U^T b (tall) or VT' b (wide: A = V' S U'^T), its rows over s, then x = V t or U' t.
    NDArray t = NDArray::empty({nrhs, k}, dt_, Device::cuda());
    gemm(!wide, false, k, nrhs, static_cast<int>(rows), 1, wide ? vt : u, wide ? k : m, b, static_cast<int>(rows), 0, t,
         k);
    scale_by_inverse(t, int64_t{k} * nrhs, 1, k, s, rc);
    gemm(!wide, false, static_cast<int>(cols), nrhs, k, 1, wide ? u : vt, wide ? m : n, t, k, 0, xc,
         static_cast<int>(cols));
  }
  xo = vec ? xc.reshape({cols}) : device_copy(xc.transpose());
  // numpy: residuals only when the rank is N and M > N (read on the host: it sizes the output).
  bool res = false;
  if (rows > cols && nrhs > 0) {
    int64_t r = 0;
    device_memory(rank.device()).copy_to_host(&r, rank.raw(), sizeof r);
    res = r == cols;
  }
  NDArray& ro = prepare_device_output(*a.out[1], Shape{res ? int64_t{nrhs} : 0}, dt_);
  if (!res) return;
  NDArray resid = device_copy(b);  // b - A x, column-major rows x nrhs
  gemm(false, false, static_cast<int>(rows), nrhs, static_cast<int>(cols), -1, column_major(x), static_cast<int>(rows),
       xc, static_cast<int>(cols), 1, resid, static_cast<int>(rows));
  std::vector<int64_t> args = {rows, nrhs, ptr(resid.raw()), ptr(ro.raw())};
  launch(sumsq_kernel_, grid_for(nrhs), args, op_.name().c_str());
}

void LinalgKernel::axpy(NDArray& y, double s, const NDArray& x) {
  std::vector<int64_t> args = {y.size(), std::bit_cast<int64_t>(s), ptr(x.raw()), ptr(y.raw())};
  launch(axpy_kernel_, grid_for(y.size()), args, op_.name().c_str());
}

void LinalgKernel::add_diagonal(NDArray& y, double s) {
  std::vector<int64_t> args = {y.shape(0), std::bit_cast<int64_t>(s), ptr(y.raw())};
  launch(adddiag_kernel_, grid_for(y.shape(0)), args, op_.name().c_str());
}

void LinalgKernel::expm(const NDArray& x, const KernelArgs& a) {
  const int n = lapack_dim(op_, x.shape(0));
  NDArray& out = prepare_device_output(*a.out[0], x.shape(), dt_);
  if (n == 0) return;
  const int64_t nn = int64_t{n} * n;
  auto mat = [&] { return NDArray::empty({n, n}, DType::Float64, Device::cuda()); };
  auto zeros = [&] {
    NDArray z = mat();
    fill(z, false);
    return z;
  };
  auto mm = [&](const NDArray& l, const NDArray& r) {
    NDArray p = mat();
    gemm(false, false, n, n, n, 1, l, n, r, n, 0, p, n);
    return p;
  };
  const std::string name = op_.name();
  const char* who = name.c_str();
  NDArray A = mat();
  {
    const NDArray w = column_major(x);
    std::vector<int64_t> args = {nn, ptr(w.raw()), ptr(A.raw())};
    launch(f64_kernel_, grid_for(nn), args, who);
  }
  double norm1 = 0;
  {
    NDArray sums = NDArray::empty({n}, DType::Float64, Device::cuda()),
            m = NDArray::empty({1}, DType::Float64, Device::cuda());
    std::vector<int64_t> cs = {n, ptr(A.raw()), ptr(sums.raw())}, mx = {n, ptr(sums.raw()), ptr(m.raw())};
    launch(colsum_kernel_, grid_for(n), cs, who);
    launch(max_kernel_, 1, mx, who);
    device_memory(m.device()).copy_to_host(&norm1, m.raw(), sizeof norm1);
  }
  if (!std::isfinite(norm1)) {
    std::vector<int64_t> args = {nn, std::bit_cast<int64_t>(std::numeric_limits<double>::quiet_NaN()), ptr(out.raw())};
    launch(fill_kernel_, grid_for(nn), args, who);
    return;
  }
  const int deg_index = expm_pade::degree_index(norm1);
  int squarings = 0;
  NDArray u, v = zeros();
  if (deg_index >= 0) {
    // U = A sum_{odd} b_k A^{k-1}, V = sum_{even} b_k A^k.
    const int deg = expm_pade::kDegrees[deg_index];
    const double* b = expm_pade::kB[deg_index];
    const NDArray a2 = mm(A, A);
    NDArray u_acc = zeros(), pw;  // (pw: A^k; the identity while k = 0)
    for (int k = 0; k <= deg; k += 2) {
      if (k == 0) {
        add_diagonal(v, b[0]);
        add_diagonal(u_acc, b[1]);
      } else {
        axpy(v, b[k], pw);
        axpy(u_acc, b[k + 1], pw);
      }
      if (k + 2 <= deg) pw = k == 0 ? a2 : mm(pw, a2);
    }
    u = mm(A, u_acc);
  } else {
    squarings = expm_pade::squarings(norm1);
    NDArray scaled = zeros();
    axpy(scaled, std::ldexp(1.0, -squarings), A);
    A = scaled;
    const NDArray a2 = mm(A, A), a4 = mm(a2, a2), a6 = mm(a2, a4);
    auto add_powers = [&](NDArray& dst, int k) {
      axpy(dst, expm_pade::kB13[k], a6);
      axpy(dst, expm_pade::kB13[k - 2], a4);
      axpy(dst, expm_pade::kB13[k - 4], a2);
    };
    // U = A [A6 (b13 A6 + b11 A4 + b9 A2) + b7 A6 + b5 A4 + b3 A2 + b1 I]
    NDArray t1 = zeros();
    add_powers(t1, 13);
    NDArray t = mm(a6, t1);
    add_powers(t, 7);
    add_diagonal(t, expm_pade::kB13[1]);
    u = mm(A, t);
    // V = A6 (b12 A6 + b10 A4 + b8 A2) + b6 A6 + b4 A4 + b2 A2 + b0 I
    NDArray t2 = zeros();
    add_powers(t2, 12);
    v = mm(a6, t2);
    add_powers(v, 6);
    add_diagonal(v, expm_pade::kB13[0]);
  }
  // (V - U) R = (V + U)
  NDArray p = zeros(), q = zeros();
  axpy(p, 1.0, v);
  axpy(p, 1.0, u);
  axpy(q, 1.0, v);
  axpy(q, -1.0, u);
  const NDArray pivots = getrf(q, n);
  check_info(kPadeSingular);
  {
    Solver s;
    check_cusolver(s->cusolverDnDgetrs(s.handle(), CUBLAS_OP_N, n, n, q.data<double>(), n, pivots.data<int>(),
                                       p.data<double>(), n, info_.data<int>()),
                   "cusolverDnDgetrs");
  }
  for (int s = 0; s < squarings; ++s) p = mm(p, p);
  std::vector<int64_t> args = {n, ptr(p.raw()), ptr(out.raw())};
  launch(from_f64_kernel_, grid_for(nn), args, who);
}

void LinalgKernel::eig(const NDArray& x, const KernelArgs& a) {
  const int n = lapack_dim(op_, x.shape(0));
  NDArray& wo = prepare_device_output(*a.out[0], Shape{n}, dt_);
  if (n == 0) {
    prepare_device_output(*a.out[1], x.shape(), dt_);
    return;
  }
  std::atomic<bool>& refused = g_geev_refused[dt_ == DType::Float64 ? 1 : 0];
  if (refused.load(std::memory_order_relaxed)) return on_host(a);
  NDArray w = column_major(x), values = NDArray::empty({2 * int64_t{n}}, dt_, Device::cuda()),
          vr = NDArray::empty({n, n}, dt_, Device::cuda());
  const cudaDataType t = dt_ == DType::Float32 ? CUDA_R_32F : CUDA_R_64F;
  cusolverStatus_t st = CUSOLVER_STATUS_SUCCESS;
  {
    Solver s;
    const Cusolver& c = cusolver();
    const cusolverDnParams_t params = s.params();
    size_t dev_bytes = 0, host_bytes = 0;
    st = c.geev_buffer_size(s.handle(), params, CUSOLVER_EIG_MODE_NOVECTOR, CUSOLVER_EIG_MODE_VECTOR, n, t, w.raw(), n,
                            t, values.raw(), t, nullptr, 1, t, vr.raw(), n, t, &dev_bytes, &host_bytes);
    if (st == CUSOLVER_STATUS_SUCCESS) {
      NDArray ws = NDArray::empty({static_cast<int64_t>(std::max<size_t>(1, dev_bytes))}, DType::UInt8, Device::cuda());
      if (host_workspace_.size() < host_bytes) host_workspace_.resize(host_bytes);
      st = c.geev(s.handle(), params, CUSOLVER_EIG_MODE_NOVECTOR, CUSOLVER_EIG_MODE_VECTOR, n, t, w.raw(), n, t,
                  values.raw(), t, nullptr, 1, t, vr.raw(), n, t, ws.raw(), dev_bytes,
                  host_workspace_.empty() ? nullptr : host_workspace_.data(), host_bytes, info_.data<int>());
    }
  }
  if (st == CUSOLVER_STATUS_INVALID_VALUE || st == CUSOLVER_STATUS_NOT_SUPPORTED ||
      st == CUSOLVER_STATUS_ARCH_MISMATCH) {
    // This library's Xgeev refuses real matrices of this dtype (another cuSOLVER than the one
    // it was written for): Eig of this dtype runs on the CPU from now on, as without Xgeev.
    if (!refused.exchange(true))
      warn("CUDA backend: cusolverDnXgeev refused a real " + std::string(dtype_name(dt_)) + " matrix (status " +
           std::to_string(static_cast<int>(st)) + "): Eig of " + std::string(dtype_name(dt_)) + " runs on the CPU");
    return on_host(a);
  }
  check_cusolver(st, "cusolverDnXgeev");  // (any other failure is the device's: an error)
  check_info(kEigNoConvergence);
  std::vector<int64_t> args = {n, ptr(values.raw()), static_cast<int64_t>(check_.device())};
  launch(complex_kernel_, 1, args, op_.name().c_str());
  wo = device_copy(values.slice(0, 0, n, 1));
  *a.out[1] = c_order(vr, x.shape());
}

void LinalgKernel::qr(const NDArray& x, const KernelArgs& a) {
  const int m = lapack_dim(op_, x.shape(0)), n = lapack_dim(op_, x.shape(1)), k = std::min(m, n);
  const QrMode mode = op_.attrs.qr_mode;
  const bool raw = mode == QrMode::Raw;
  const int rrows = mode == QrMode::Complete ? m : k, qcols = mode == QrMode::Complete ? m : k;
  // The reflectors' buffer: column-major m x max(qcols, n), A in its first n columns.
  const int wcols = mode == QrMode::R || raw ? n : std::max(qcols, n);
  NDArray w = NDArray::empty({wcols, m}, dt_, Device::cuda());
  if (x.size() > 0) {
    const NDArray xt = column_major(x);
    device_memory(w.device()).copy_on_device(w.raw(), xt.raw(), xt.nbytes());
  }
  NDArray tau = NDArray::empty({k}, dt_, Device::cuda());
  if (k > 0)
    by_dtype(dt_, [&]<class T>() {
      Solver s;
      int lwork = 0;
      check_cusolver(pick<T>(s->cusolverDnSgeqrf_bufferSize, s->cusolverDnDgeqrf_bufferSize)(s.handle(), m, n,
                                                                                             w.data<T>(), m, &lwork),
                     "cusolverDn<t>geqrf_bufferSize");
      NDArray ws = workspace(lwork);
      check_cusolver(pick<T>(s->cusolverDnSgeqrf, s->cusolverDnDgeqrf)(s.handle(), m, n, w.data<T>(), m, tau.data<T>(),
                                                                       ws.data<T>(), lwork, info_.data<int>()),
                     "cusolverDn<t>geqrf");
    });
  if (raw) {  // numpy: h is the factored matrix transposed (the column-major buffer in C order), and tau
    *a.out[0] = w;
    *a.out[1] = tau;
    return;
  }
  NDArray& r = prepare_device_output(*a.out[mode == QrMode::R ? 0 : 1], Shape{rrows, n}, dt_);
  if (r.size() > 0) {
    std::vector<int64_t> args = {m, n, rrows, ptr(w.raw()), ptr(r.raw())};
    launch(r_kernel_, grid_for(r.size()), args, op_.name().c_str());
  }
  if (mode == QrMode::R) return;
  NDArray& q = prepare_device_output(*a.out[0], Shape{m, qcols}, dt_);
  if (q.size() == 0) return;
  if (k == 0) return fill(q, true);  // (no reflector: the identity, as orgqr gives)
  by_dtype(dt_, [&]<class T>() {
    Solver s;
    int lwork = 0;
    check_cusolver(pick<T>(s->cusolverDnSorgqr_bufferSize, s->cusolverDnDorgqr_bufferSize)(
                       s.handle(), m, qcols, k, w.data<T>(), m, tau.data<T>(), &lwork),
                   "cusolverDn<t>orgqr_bufferSize");
    NDArray ws = workspace(lwork);
    check_cusolver(pick<T>(s->cusolverDnSorgqr, s->cusolverDnDorgqr)(
                       s.handle(), m, qcols, k, w.data<T>(), m, tau.data<T>(), ws.data<T>(), lwork, info_.data<int>()),
                   "cusolverDn<t>orgqr");
  });
  // Q's C order: the first qcols columns of the column-major buffer, transposed.
  q = device_copy(w.slice(0, 0, qcols, 1).transpose());
}

}  // namespace hypatia::cuda::la
