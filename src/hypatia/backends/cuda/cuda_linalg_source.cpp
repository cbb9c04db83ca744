// The helper kernels of Linalg on the GPU (cuda_kernel_util.h: linalg_source), whose launches are in
// cuda_linalg_kernels.cpp: the text NVRTC compiles for a dtype (and the host tests compile too:
// tests/cpp/cuda_host).
#include <string>

#include "hypatia/backends/cuda/cuda_kernel_util.h"

namespace hypatia::cuda {

std::string linalg_source(DType dt) {
  const std::string T = cuda_type(dt);
  std::string s = kCheckFailed;
  // devInfo into the check block (word 1 the info, word 2 what failed).
  s += "struct LaInfoArgs { unsigned long long info, err; long long code; };\n"
       "extern \"C\" __global__ void hyp_la_info(const LaInfoArgs a) {\n"
       "  if (blockIdx.x == 0 && threadIdx.x == 0) {\n"
       "    const int v = *(const int*)a.info;\n"
       "    if (v != 0) hyp_check_failed(a.err, v, a.code, 0);\n  }\n}\n";
  // Column-major n x n: element (i, j) at j * n + i. The triangle a factor does not use is
  // zeroed, or everything is NaN when the factorization failed and nan_on_error says so.
  s += "struct LaTriArgs { long long n, lower, nan; unsigned long long a, info; };\n";
  s += grid_stride_head("hyp_la_tri", "LaTriArgs", "a.n * a.n");
  s += "    " + T + "* m = (" + T + "*)a.a;\n    const long long i = t % a.n, j = t / a.n;\n";
  s += "    if (a.nan && *(const int*)a.info > 0) m[t] = (" + T + ")0 / (" + T + ")0;\n";
  s += "    else if (a.lower ? j > i : i > j) m[t] = (" + T + ")0;\n  }\n}\n";
  // The other triangle from the `lower` (or upper) one: a symmetric matrix in full.
  s += "struct LaSymArgs { long long n, lower; unsigned long long a; };\n";
  s += grid_stride_head("hyp_la_sym", "LaSymArgs", "a.n * a.n");
  s += "    " + T + "* m = (" + T + "*)a.a;\n    const long long i = t % a.n, j = t / a.n;\n";
  s += "    if (a.lower ? j > i : i > j) m[t] = m[i * a.n + j];\n  }\n}\n";
  // The determinant from getrf's factors and pivots (one thread, in double as the CPU).
  s += "struct LaDetArgs { long long n; unsigned long long a, piv, out; };\n"
       "extern \"C\" __global__ void hyp_la_det(const LaDetArgs a) {\n"
       "  if (blockIdx.x != 0 || threadIdx.x != 0) return;\n"
       "  const " +
       T + "* m = (const " + T +
       "*)a.a;\n"
       "  const int* piv = (const int*)a.piv;\n"
       "  double d = 1;\n"
       "  for (long long i = 0; i < a.n; ++i) {\n"
       "    d *= (double)m[i * a.n + i];\n"
       "    if (piv[i] != i + 1) d = -d;\n  }\n"
       "  *(" +
       T + "*)a.out = (" + T + ")d;\n}\n";
  // Qr's R (rr x n, C order) from geqrf's column-major m x n factors: their upper triangle.
  s += "struct LaRArgs { long long m, n, rr; unsigned long long a, out; };\n";
  s += grid_stride_head("hyp_la_r", "LaRArgs", "a.rr * a.n");
  s += "    const long long i = t / a.n, j = t % a.n;\n";
  s +=
      "    ((" + T + "*)a.out)[t] = j >= i && i < a.m ? ((const " + T + "*)a.a)[j * a.m + i] : (" + T + ")0;\n  }\n}\n";
  // Pinv and Lstsq: a column-major matrix's columns (div = its rows) or rows (div = 1) times 1/s
  // where s > rcond * s[0] (the largest), else 0.
  s += "struct LaScaleArgs { long long count, div, mod; unsigned long long u, s; double rcond; };\n";
  s += grid_stride_head("hyp_la_scale", "LaScaleArgs", "a.count");
  s += "    const " + T + "* sv = (const " + T + "*)a.s;\n    const long long l = t / a.div % a.mod;\n";
  s += "    " + T + "* u = (" + T + "*)a.u;\n";
  s += "    u[t] = (double)sv[l] > a.rcond * (double)sv[0] ? u[t] / sv[l] : (" + T + ")0;\n  }\n}\n";
  // Lstsq's rank: the singular values above rcond * the largest (one thread).
  s += "struct LaRankArgs { long long k; unsigned long long s; double rcond; unsigned long long out; };\n"
       "extern \"C\" __global__ void hyp_la_rank(const LaRankArgs a) {\n"
       "  if (blockIdx.x != 0 || threadIdx.x != 0) return;\n"
       "  const " +
       T + "* s = (const " + T +
       "*)a.s;\n"
       "  long long r = 0;\n"
       "  for (long long i = 0; i < a.k; ++i) r += (double)s[i] > a.rcond * (double)s[0];\n"
       "  *(long long*)a.out = r;\n}\n";
  // Lstsq's residuals: each column's sum of squares (column-major m x n), in double.
  s += "struct LaSumsqArgs { long long m, n; unsigned long long r, out; };\n";
  s += grid_stride_head("hyp_la_sumsq", "LaSumsqArgs", "a.n");
  s += "    const " + T + "* c = (const " + T + "*)a.r + t * a.m;\n    double acc = 0;\n";
  s += "    for (long long i = 0; i < a.m; ++i) acc += (double)c[i] * (double)c[i];\n";
  s += "    ((" + T + "*)a.out)[t] = (" + T + ")acc;\n  }\n}\n";
  // Expm, computed in double: the column-major input to double; the column-major result to C
  // order in T; each column's sum of magnitudes and their largest (NaN skipped, as std::max);
  // y += s x; the diagonal += s; a fill. (A NaN column sum makes the norm NaN: the result is NaN.)
  s += "struct LaF64Args { long long count; unsigned long long in, out; };\n";
  s += grid_stride_head("hyp_la_to_f64", "LaF64Args", "a.count");
  s += "    ((double*)a.out)[t] = (double)((const " + T + "*)a.in)[t];\n  }\n}\n";
  s += "struct LaFromF64Args { long long n; unsigned long long in, out; };\n";
  s += grid_stride_head("hyp_la_from_f64_t", "LaFromF64Args", "a.n * a.n");
  s += "    ((" + T + "*)a.out)[t] = (" + T + ")((const double*)a.in)[(t % a.n) * a.n + t / a.n];\n  }\n}\n";
  s += "struct LaColsumArgs { long long n; unsigned long long a, out; };\n";
  s += grid_stride_head("hyp_la_colsum", "LaColsumArgs", "a.n");
  s += "    const double* c = (const double*)a.a + t * a.n;\n    double acc = 0;\n";
  s += "    for (long long i = 0; i < a.n; ++i) acc += c[i] < 0 ? -c[i] : c[i];\n";
  s += "    ((double*)a.out)[t] = acc;\n  }\n}\n";
  s += "struct LaMaxArgs { long long n; unsigned long long in, out; };\n"
       "extern \"C\" __global__ void hyp_la_max(const LaMaxArgs a) {\n"
       "  if (blockIdx.x != 0 || threadIdx.x != 0) return;\n"
       "  const double* v = (const double*)a.in;\n"
       "  double m = 0;\n"
       "  for (long long i = 0; i < a.n; ++i) m = v[i] != v[i] || m < v[i] ? v[i] : m;\n"
       "  *(double*)a.out = m;\n}\n";
  s += "struct LaAxpyArgs { long long count; double s; unsigned long long x, y; };\n";
  s += grid_stride_head("hyp_la_axpy", "LaAxpyArgs", "a.count");
  s += "    ((double*)a.y)[t] += a.s * ((const double*)a.x)[t];\n  }\n}\n";
  s += "struct LaAddDiagArgs { long long n; double s; unsigned long long y; };\n";
  s += grid_stride_head("hyp_la_adddiag", "LaAddDiagArgs", "a.n");
  s += "    ((double*)a.y)[t * a.n + t] += a.s;\n  }\n}\n";
  s += "struct LaFillArgs { long long count; double v; unsigned long long out; };\n";
  s += grid_stride_head("hyp_la_fill", "LaFillArgs", "a.count");
  s += "    ((" + T + "*)a.out)[t] = (" + T + ")a.v;\n  }\n}\n";
  // A NaN or an infinity among `count` elements of a work copy (x - x is not 0 for them only),
  // into the check block (word 1 its index), and replaced by 0 there: the library then factors a
  // finite matrix (LAPACK's SVD may never converge on an infinity, and cuSOLVER's fails on a NaN
  // with an execution error), whose results the check's error discards.
  s += "struct LaFiniteArgs { long long count; unsigned long long a, err; };\n";
  s += grid_stride_head("hyp_la_finite", "LaFiniteArgs", "a.count");
  s += "    const " + T + " v = ((const " + T + "*)a.a)[t];\n";
  s += "    if (v - v != (" + T + ")0) {\n      hyp_check_failed(a.err, t, 8, 0);\n      ((" + T + "*)a.a)[t] = (" + T +
       ")0;\n    }\n  }\n}\n";
  // Eig: the first complex eigenvalue (W's imaginary parts, after its n real ones), its real and
  // imaginary parts as float32 bits in word 3 (one thread).
  s += "struct LaComplexArgs { long long n; unsigned long long w, err; };\n"
       "extern \"C\" __global__ void hyp_la_complex(const LaComplexArgs a) {\n"
       "  if (blockIdx.x != 0 || threadIdx.x != 0) return;\n"
       "  const " +
       T + "* w = (const " + T +
       "*)a.w;\n"
       "  for (long long i = 0; i < a.n; ++i)\n"
       "    if (w[a.n + i] != (" +
       T +
       ")0) {\n"
       "      const float re = (float)w[i], im = (float)w[a.n + i];\n"
       "      const unsigned long long bits = ((unsigned long long)__float_as_uint(re) << 32) | __float_as_uint(im);\n"
       "      hyp_check_failed(a.err, i, 9, (long long)bits);\n"
       "      return;\n    }\n}\n";
  // The first zero on a triangular matrix's diagonal (one thread: trtrs reports the first).
  s += "struct LaDiagArgs { long long n; unsigned long long a, err; };\n"
       "extern \"C\" __global__ void hyp_la_diag(const LaDiagArgs a) {\n"
       "  if (blockIdx.x != 0 || threadIdx.x != 0) return;\n"
       "  const " +
       T + "* m = (const " + T +
       "*)a.a;\n"
       "  for (long long i = 0; i < a.n; ++i)\n"
       "    if (m[i * a.n + i] == (" +
       T + ")0) { hyp_check_failed(a.err, i + 1, 3, 0); return; }\n}\n";
  return s;
}

}  // namespace hypatia::cuda
