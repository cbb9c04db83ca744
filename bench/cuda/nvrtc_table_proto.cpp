// Groundwork for issue 13 (the CUDA backend), not part of the library: a prototype that answers,
// on a real GPU, the questions the backend's design rests on.
//
// 1. Can every row of ops/scalar_ops.def be compiled by NVRTC from the same text the CPU uses
//    (the Fn column and scalar_math in ops/scalar_functors.h, plus core/half.h), with a small
//    std shim (device_std.h) instead of libcu++'s headers? How long does NVRTC take for the whole
//    table, and for one small fused kernel?
// 2. How far do the GPU results of each row lie from the CPU's (ScalarFn<K>::apply, compiled into
//    this program from the same header), in ulps, float32 and float64?
// 3. Anchor timings for the issue's benchmarks, measured with CUDA events: a device-to-device
//    copy (the bandwidth ceiling), a generated six-op fused chain over 64M float32, seed 001's
//    exp over 230,400 float32 x 1000 calls (device result, and host result against a bare copy),
//    seed 000's raw cuBLAS loop (y = m x + b, 1000^3, 500 iterations), and the host cost of one
//    kernel launch.
//
// Without a GPU it still runs part 1 (NVRTC needs no device) and says so.
//
// Build (here or on the device machine):
//   nvcc -std=c++20 -O2 -I src bench/cuda/nvrtc_table_proto.cpp -o proto \
//        -lnvrtc -lcublas -cudart static
// Run from the repository root: ./proto [--compile-only]
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <nvrtc.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "hypatia/ops/scalar_functors.h"

namespace {

using hypatia::ScalarFn;
using hypatia::ScalarOpKind;

#define CHECK_CUDA(call)                                                                         \
  do {                                                                                           \
    cudaError_t e_ = (call);                                                                     \
    if (e_ != cudaSuccess) {                                                                     \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
      std::exit(1);                                                                              \
    }                                                                                            \
  } while (0)
#define CHECK_NVRTC(call)                                                                         \
  do {                                                                                            \
    nvrtcResult r_ = (call);                                                                      \
    if (r_ != NVRTC_SUCCESS) {                                                                    \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #call, nvrtcGetErrorString(r_)); \
      std::exit(1);                                                                               \
    }                                                                                             \
  } while (0)
#define CHECK_CUBLAS(call)                                                               \
  do {                                                                                   \
    cublasStatus_t s_ = (call);                                                          \
    if (s_ != CUBLAS_STATUS_SUCCESS) {                                                   \
      std::fprintf(stderr, "%s:%d %s: status %d\n", __FILE__, __LINE__, #call, int(s_)); \
      std::exit(1);                                                                      \
    }                                                                                    \
  } while (0)

// ---- the table, as text and as CPU functions
struct Row {
  ScalarOpKind kind;
  const char* name;
  int arity;
  const char* rule;
  const char* fn;
};
const Row kRows[] = {
#define HYP_SCALAR_OP(Kind, Name, Arity, Rule, Cost, Simd, Build, Cpp, Core, Py, Doc, Fn, Grad) \
  {ScalarOpKind::Kind, Name, Arity, #Rule, #Fn},
#include "hypatia/ops/scalar_ops.def"
};

bool row_on_floats(const Row& r) {
  const std::string rule = r.rule;
  return r.arity <= 2 && rule != "Bitwise" && rule != "Cast" && rule != "Select";
}

std::string read_file(const std::string& path) {
  std::ifstream f(path);
  if (!f) {
    std::fprintf(stderr, "cannot read %s (run from the repository root)\n", path.c_str());
    std::exit(1);
  }
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  for (size_t p = s.find(from); p != std::string::npos; p = s.find(from, p + to.size())) s.replace(p, from.size(), to);
  return s;
}

std::string drop_preprocessor_lines(const std::string& s) {
  std::stringstream in(s), out;
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("#include", 0) != 0 && line.rfind("#pragma", 0) != 0) out << line << "\n";
  return out.str();
}

std::string between(const std::string& s, const std::string& begin, const std::string& end) {
  const size_t b = s.find(begin);
  const size_t e = s.find(end, b);
  if (b == std::string::npos || e == std::string::npos) {
    std::fprintf(stderr, "marker not found: %s\n", begin.c_str());
    std::exit(1);
  }
  return s.substr(b, e + end.size() - b);
}

// The common prefix of every generated module: the shim, half.h and scalar_math, std -> hstd, then
// one device function per row, named op_<name>, whose body is the row's Fn text.
std::string table_prefix() {
  std::string half = drop_preprocessor_lines(read_file("src/hypatia/core/half.h"));
  half = between(half, "namespace hypatia {", "}  // namespace hypatia");
  half = half.substr(std::strlen("namespace hypatia {"));
  half = half.substr(0, half.rfind("}"));
  std::string math =
      between(read_file("src/hypatia/ops/scalar_functors.h"), "namespace scalar_math {", "}  // namespace scalar_math");
  std::string s = read_file("src/hypatia/backends/cuda/nvrtc_std.cuh");
  s += "namespace hypatia {\n" + replace_all(half, "std::", "hstd::") + "\n" + replace_all(math, "std::", "hstd::");
  s += "\nnamespace fn {\n";
  for (const Row& r : kRows) {
    if (!row_on_floats(r)) continue;
    std::string body = replace_all(r.fn, "std::", "hstd::");
    if (r.arity == 1)
      s += std::string("template <class T> inline auto op_") + r.name + "(T x) { return " + body + "; }\n";
    else
      s += std::string("template <class T> inline auto op_") + r.name + "(T a, T b) { return " + body + "; }\n";
  }
  s += "}  // namespace fn\n}  // namespace hypatia\nusing namespace hypatia::fn;\n";
  return s;
}

struct Compiled {
  std::vector<char> cubin;
  double ms = 0;
  std::string log;
};

Compiled nvrtc_compile(const std::string& src, int arch) {
  const auto t0 = std::chrono::steady_clock::now();
  nvrtcProgram prog;
  CHECK_NVRTC(nvrtcCreateProgram(&prog, src.c_str(), "hypatia_kernels.cu", 0, nullptr, nullptr));
  const std::string arch_opt = "--gpu-architecture=sm_" + std::to_string(arch);
  const char* opts[] = {arch_opt.c_str(), "--std=c++20", "-default-device", "--use_fast_math=false"};
  nvrtcResult r = nvrtcCompileProgram(prog, 3, opts);
  size_t log_size = 0;
  nvrtcGetProgramLogSize(prog, &log_size);
  Compiled c;
  c.log.resize(log_size);
  nvrtcGetProgramLog(prog, c.log.data());
  if (r != NVRTC_SUCCESS) {
    std::fprintf(stderr, "NVRTC failed:\n%s\n", c.log.c_str());
    std::ofstream("/tmp/hypatia_failed_kernel.cu") << src;
    std::fprintf(stderr, "(source in /tmp/hypatia_failed_kernel.cu)\n");
    std::exit(1);
  }
  size_t n = 0;
  CHECK_NVRTC(nvrtcGetCUBINSize(prog, &n));
  c.cubin.resize(n);
  CHECK_NVRTC(nvrtcGetCUBIN(prog, c.cubin.data()));
  nvrtcDestroyProgram(&prog);
  c.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return c;
}

// ---- part 1: every float row, float32 and float64, one kernel each
const char* type_name(bool f64) { return f64 ? "double" : "float"; }

std::string row_kernels(const std::string& prefix) {
  std::string s = prefix;
  for (int f64 = 0; f64 < 2; ++f64)
    for (const Row& r : kRows) {
      if (!row_on_floats(r)) continue;
      const std::string T = type_name(f64);
      s += "extern \"C\" __global__ void row_" + std::string(r.name) + "_" + T + "(const " + T + "* a, const " + T +
           "* b, double* out, int n) {\n  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i < n) out[i] = "
           "double(op_" +
           r.name + (r.arity == 1 ? "(a[i])" : "(a[i], b[i])") + ");\n}\n";
    }
  return s;
}

// Six ops fused as the fusion pass's code generator would emit them: one line per scalar node.
// out = -log(exp(a * b) * c + 1), float32, 4 elements per thread with 16-byte loads.
std::string chain_kernel(const std::string& prefix) {
  return prefix + R"(
extern "C" __global__ void chain6_f32(const float4* a, const float4* b, const float4* c, float4* out, long n4) {
  for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n4; i += (long)gridDim.x * blockDim.x) {
    float4 va = a[i], vb = b[i], vc = c[i], r;
#define HYP_LANE(f) { float t0 = op_mul(va.f, vb.f); float t1 = op_exp(t0); float t2 = op_mul(t1, vc.f); \
    float t3 = op_add(t2, 1.0f); float t4 = op_log(t3); r.f = op_neg(t4); }
    HYP_LANE(x) HYP_LANE(y) HYP_LANE(z) HYP_LANE(w)
    out[i] = r;
  }
}
extern "C" __global__ void exp_f32(const float4* a, float4* out, long n4) {
  for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n4; i += (long)gridDim.x * blockDim.x) {
    float4 v = a[i];
    out[i] = make_float4(op_exp(v.x), op_exp(v.y), op_exp(v.z), op_exp(v.w));
  }
}
extern "C" __global__ void copy_f32(const float4* a, float4* out, long n4) {
  for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n4; i += (long)gridDim.x * blockDim.x) out[i] = a[i];
}
extern "C" __global__ void empty_kernel(float* p) { if (p) p[0] = 1.0f; }
)";
}

// ---- helpers for the device part
template <class T>
double ulp_distance(T got, T want) {
  if (std::isnan(got) && std::isnan(want)) return 0;
  if (std::isnan(got) || std::isnan(want)) return 1e30;
  if (got == want) return 0;
  if (std::isinf(got) || std::isinf(want)) return 1e30;
  const T scale = std::max(std::abs(want), std::numeric_limits<T>::min());
  const T ulp = std::nextafter(scale, std::numeric_limits<T>::infinity()) - scale;
  return std::abs(double(got) - double(want)) / double(ulp);
}

template <ScalarOpKind K, class T>
double cpu_apply(T a, T b) {
  if constexpr (!ScalarFn<K>::template supports<T>)
    return 0;
  else if constexpr (requires { ScalarFn<K>::apply(a); })
    return double(ScalarFn<K>::apply(a));
  else if constexpr (requires { ScalarFn<K>::apply(a, b); })
    return double(ScalarFn<K>::apply(a, b));
  else
    return 0;
}

template <class T>
double cpu_row(ScalarOpKind k, T a, T b) {
  switch (k) {
#define HYP_SCALAR_OP(Kind, Name, Arity, Rule, Cost, Simd, Build, Cpp, Core, Py, Doc, Fn, Grad) \
  case ScalarOpKind::Kind:                                                                      \
    if constexpr (Arity <= 2 && std::string_view(#Rule) != "Cast")                              \
      return cpu_apply<ScalarOpKind::Kind, T>(a, b);                                            \
    else                                                                                        \
      return 0;
#include "hypatia/ops/scalar_ops.def"
    default:
      return 0;
  }
}

struct Timer {
  cudaEvent_t a, b;
  Timer() {
    CHECK_CUDA(cudaEventCreate(&a));
    CHECK_CUDA(cudaEventCreate(&b));
  }
  void start(cudaStream_t s = 0) { CHECK_CUDA(cudaEventRecord(a, s)); }
  float stop(cudaStream_t s = 0) {
    CHECK_CUDA(cudaEventRecord(b, s));
    CHECK_CUDA(cudaEventSynchronize(b));
    float ms = 0;
    CHECK_CUDA(cudaEventElapsedTime(&ms, a, b));
    return ms;
  }
};

template <class F>
float median_ms(int reps, F&& f) {
  std::vector<float> v;
  for (int r = 0; r < reps; ++r) v.push_back(f());
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

void launch(cudaKernel_t k, int grid, int block, std::vector<void*> args, cudaStream_t s = 0) {
  CHECK_CUDA(cudaLaunchKernel((const void*)k, dim3(grid), dim3(block), args.data(), 0, s));
}

}  // namespace

int main(int argc, char** argv) {
  const bool compile_only = argc > 1 && std::string(argv[1]) == "--compile-only";
  int ndev = 0;
  const bool have_gpu = !compile_only && cudaGetDeviceCount(&ndev) == cudaSuccess && ndev > 0;
  int arch = 90;
  cudaDeviceProp prop{};
  if (have_gpu) {
    CHECK_CUDA(cudaGetDeviceProperties(&prop, 0));
    arch = prop.major * 10 + prop.minor;
    int drv = 0, rt = 0;
    cudaDriverGetVersion(&drv);
    cudaRuntimeGetVersion(&rt);
    std::printf("device: %s, sm_%d, %d SMs, %.1f GiB, L2 %d MB, driver API %d, runtime %d\n", prop.name, arch,
                prop.multiProcessorCount, prop.totalGlobalMem / 1073741824.0, prop.l2CacheSize >> 20, drv, rt);
  } else {
    std::printf("no GPU: NVRTC compile checks only (sm_%d)\n", arch);
  }
  int nv_major = 0, nv_minor = 0;
  nvrtcVersion(&nv_major, &nv_minor);

  // ---- part 1: compile
  const std::string prefix = table_prefix();
  int nrows = 0;
  for (const Row& r : kRows) nrows += row_on_floats(r);
  const Compiled rows = nvrtc_compile(row_kernels(prefix), arch);
  const Compiled chain = nvrtc_compile(chain_kernel(prefix), arch);
  const Compiled chain2 = nvrtc_compile(chain_kernel(prefix), arch);  // warm NVRTC: the steady-state cost
  std::printf(
      "NVRTC %d.%d: %d rows x {float32, float64} = %d kernels in %.0f ms (cubin %zu KB); "
      "fused chain module (table prefix + 4 kernels) %.0f ms, again %.0f ms; prefix %zu bytes\n",
      nv_major, nv_minor, nrows, 2 * nrows, rows.ms, rows.cubin.size() / 1024, chain.ms, chain2.ms, prefix.size());
  if (!have_gpu) return 0;

  // ---- part 2: every row on the GPU against the CPU
  cudaLibrary_t lib_rows, lib_chain;
  CHECK_CUDA(cudaLibraryLoadData(&lib_rows, rows.cubin.data(), nullptr, nullptr, 0, nullptr, nullptr, 0));
  CHECK_CUDA(cudaLibraryLoadData(&lib_chain, chain.cubin.data(), nullptr, nullptr, 0, nullptr, nullptr, 0));

  const int n = 1 << 16;
  std::vector<double> base;
  const double specials[] = {0.0,   -0.0,  1.0,    -1.0,  0.5,    -0.5,     2.0,       30.0, -30.0, 88.0,
                             -88.0, 700.0, -700.0, 1e-30, 1e-300, INFINITY, -INFINITY, NAN,  3.0,   10.0};
  for (double s : specials) base.push_back(s);
  unsigned long long seed = 12345;
  auto rnd = [&] {
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    return double(seed >> 11) / double(1ull << 53);
  };
  while ((int)base.size() < n) {
    const double u = rnd();
    const double mag = std::pow(10.0, rnd() * 8 - 4);  // 1e-4 .. 1e4
    base.push_back(u < 0.5 ? -mag : mag);
  }
  std::vector<double> base_b(n);
  for (int i = 0; i < n; ++i) base_b[i] = base[(i * 7919 + 13) % n];

  std::printf("\nrow-by-row GPU vs CPU (ScalarFn<K>::apply), %d inputs incl. 0, +-inf, NaN, 1e-300..700:\n", n);
  std::printf("%-14s %12s %12s   (max ulps; 'nan!' = NaN disagreement)\n", "op", "float32", "float64");
  double* d_out;
  void *d_a, *d_b;
  CHECK_CUDA(cudaMalloc(&d_out, n * sizeof(double)));
  CHECK_CUDA(cudaMalloc(&d_a, n * sizeof(double)));
  CHECK_CUDA(cudaMalloc(&d_b, n * sizeof(double)));
  std::vector<double> out(n);
  int bad_rows = 0;
  for (const Row& r : kRows) {
    if (!row_on_floats(r)) continue;
    double worst[2] = {0, 0};
    for (int f64 = 0; f64 < 2; ++f64) {
      std::vector<float> af(n), bf(n);
      for (int i = 0; i < n; ++i) {
        af[i] = float(base[i]);
        bf[i] = float(base_b[i]);
      }
      if (f64) {
        CHECK_CUDA(cudaMemcpy(d_a, base.data(), n * 8, cudaMemcpyHostToDevice));
        CHECK_CUDA(cudaMemcpy(d_b, base_b.data(), n * 8, cudaMemcpyHostToDevice));
      } else {
        CHECK_CUDA(cudaMemcpy(d_a, af.data(), n * 4, cudaMemcpyHostToDevice));
        CHECK_CUDA(cudaMemcpy(d_b, bf.data(), n * 4, cudaMemcpyHostToDevice));
      }
      CHECK_CUDA(cudaMemset(d_out, 0xff, n * sizeof(double)));  // poison
      cudaKernel_t k;
      const std::string kname = std::string("row_") + r.name + "_" + type_name(f64);
      CHECK_CUDA(cudaLibraryGetKernel(&k, lib_rows, kname.c_str()));
      int nn = n;
      launch(k, (n + 255) / 256, 256, {&d_a, &d_b, &d_out, &nn});
      CHECK_CUDA(cudaGetLastError());
      CHECK_CUDA(cudaMemcpy(out.data(), d_out, n * 8, cudaMemcpyDeviceToHost));
      for (int i = 0; i < n; ++i) {
        double want, got = out[i], d;
        if (f64) {
          want = cpu_row<double>(r.kind, base[i], base_b[i]);
          d = ulp_distance<double>(got, want);
        } else {
          want = cpu_row<float>(r.kind, af[i], bf[i]);
          d = ulp_distance<float>(float(got), float(want));
        }
        worst[f64] = std::max(worst[f64], d);
      }
    }
    auto fmt = [](double u, char* buf) {
      if (u >= 1e30)
        std::snprintf(buf, 32, "nan!");
      else
        std::snprintf(buf, 32, "%.3g", u);
    };
    char b0[32], b1[32];
    fmt(worst[0], b0);
    fmt(worst[1], b1);
    if (worst[0] > 4 || worst[1] > 4) ++bad_rows;
    std::printf("%-14s %12s %12s\n", r.name, b0, b1);
  }
  std::printf("rows over 4 ulps somewhere: %d of %d\n", bad_rows, nrows);

  // ---- part 3: anchor timings
  std::printf("\nanchor timings (CUDA events, median of 20 unless said):\n");
  Timer t;
  cudaKernel_t k_chain, k_exp, k_copy, k_empty;
  CHECK_CUDA(cudaLibraryGetKernel(&k_chain, lib_chain, "chain6_f32"));
  CHECK_CUDA(cudaLibraryGetKernel(&k_exp, lib_chain, "exp_f32"));
  CHECK_CUDA(cudaLibraryGetKernel(&k_copy, lib_chain, "copy_f32"));
  CHECK_CUDA(cudaLibraryGetKernel(&k_empty, lib_chain, "empty_kernel"));
  const int sms = prop.multiProcessorCount;
  {
    const long N = 64l << 20;
    const long n4 = N / 4;
    float *a, *b, *c, *o;
    CHECK_CUDA(cudaMalloc(&a, N * 4));
    CHECK_CUDA(cudaMalloc(&b, N * 4));
    CHECK_CUDA(cudaMalloc(&c, N * 4));
    CHECK_CUDA(cudaMalloc(&o, N * 4));
    std::vector<float> h(N);
    for (long i = 0; i < N; ++i) h[i] = float(rnd() * 2 - 1);
    CHECK_CUDA(cudaMemcpy(a, h.data(), N * 4, cudaMemcpyHostToDevice));
    CHECK_CUDA(cudaMemcpy(b, h.data(), N * 4, cudaMemcpyHostToDevice));
    CHECK_CUDA(cudaMemcpy(c, h.data(), N * 4, cudaMemcpyHostToDevice));
    const float memcpy_ms = median_ms(20, [&] {
      t.start();
      CHECK_CUDA(cudaMemcpyAsync(o, a, N * 4, cudaMemcpyDeviceToDevice));
      return t.stop();
    });
    for (int grid_mult : {4, 8, 16}) {
      const int grid = sms * grid_mult;
      const float copy_ms = median_ms(20, [&] {
        t.start();
        launch(k_copy, grid, 256, {&a, &o, (void*)&n4});
        return t.stop();
      });
      const float chain_ms = median_ms(20, [&] {
        t.start();
        launch(k_chain, grid, 256, {&a, &b, &c, &o, (void*)&n4});
        return t.stop();
      });
      // bytes: copy moves 2 arrays, the chain 4 (three read, one written)
      const double copy_gbs = 2.0 * N * 4 / copy_ms / 1e6, chain_gbs = 4.0 * N * 4 / chain_ms / 1e6;
      std::printf(
          "64M float32, grid %d x 256: cudaMemcpy D2D %.3f ms (%.0f GB/s), copy kernel %.3f ms (%.0f GB/s), "
          "fused 6-op chain %.3f ms (%.0f GB/s; %.2fx the copy kernel's time per byte)\n",
          grid, memcpy_ms, 2.0 * N * 4 / memcpy_ms / 1e6, copy_ms, copy_gbs, chain_ms, chain_gbs, copy_gbs / chain_gbs);
    }
    // check the chain's values on a sample
    CHECK_CUDA(cudaMemcpy(h.data(), o, 4096 * 4, cudaMemcpyDeviceToHost));
    std::vector<float> hin(4096);
    CHECK_CUDA(cudaMemcpy(hin.data(), a, 4096 * 4, cudaMemcpyDeviceToHost));
    double err = 0;
    for (int i = 0; i < 4096; ++i) {
      const double x = hin[i];
      const double want = -std::log(std::exp(x * x) * x + 1);
      if (std::isfinite(want)) err = std::max(err, std::abs(h[i] - want) / std::max(1.0, std::abs(want)));
    }
    std::printf("fused chain check: max |error| / max(1, |exact|) %.2e against float64 on 4096 samples\n", err);
    cudaFree(a);
    cudaFree(b);
    cudaFree(c);
    cudaFree(o);
  }
  {  // seed 001: exp of 230,400 float32, 1000 calls
    const long N = 230400, n4 = N / 4;
    float *a, *o;
    CHECK_CUDA(cudaMalloc(&a, N * 4));
    CHECK_CUDA(cudaMalloc(&o, N * 4));
    std::vector<float> h(N, 0.5f);
    CHECK_CUDA(cudaMemcpy(a, h.data(), N * 4, cudaMemcpyHostToDevice));
    const int grid = std::min<long>(sms * 8, (n4 + 255) / 256);
    for (int i = 0; i < 10; ++i) launch(k_exp, grid, 256, {&a, &o, (void*)&n4});
    const float dev_ms = median_ms(5, [&] {
      t.start();
      for (int i = 0; i < 1000; ++i) launch(k_exp, grid, 256, {&a, &o, (void*)&n4});
      return t.stop();
    });
    auto wall = [&](auto&& body) {
      std::vector<double> v;
      for (int r = 0; r < 5; ++r) {
        const auto t0 = std::chrono::steady_clock::now();
        body();
        v.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
      }
      std::sort(v.begin(), v.end());
      return v[2];
    };
    const double dev_wall = wall([&] {
      for (int i = 0; i < 1000; ++i) launch(k_exp, grid, 256, {&a, &o, (void*)&n4});
      CHECK_CUDA(cudaDeviceSynchronize());
    });
    const double host_wall = wall([&] {
      for (int i = 0; i < 1000; ++i) {
        launch(k_exp, grid, 256, {&a, &o, (void*)&n4});
        CHECK_CUDA(cudaMemcpy(h.data(), o, N * 4, cudaMemcpyDeviceToHost));
      }
    });
    const double copy_wall = wall([&] {
      for (int i = 0; i < 1000; ++i) CHECK_CUDA(cudaMemcpy(h.data(), o, N * 4, cudaMemcpyDeviceToHost));
    });
    std::printf(
        "seed 001, exp of 230400 float32 x 1000 calls: device result %.2f ms (events), %.2f ms wall; "
        "host result (pageable) %.2f ms wall vs bare D2H copies %.2f ms (%.2fx)\n",
        dev_ms, dev_wall, host_wall, copy_wall, host_wall / copy_wall);
    const double launch_wall = wall([&] {
      for (int i = 0; i < 10000; ++i) launch(k_empty, 1, 32, {(void*)&o});
      CHECK_CUDA(cudaDeviceSynchronize());
    });
    const double sync_wall = wall([&] {
      for (int i = 0; i < 1000; ++i) {
        launch(k_empty, 1, 32, {(void*)&o});
        CHECK_CUDA(cudaStreamSynchronize(0));
      }
    });
    std::printf("launch cost: %.2f us per cudaLaunchKernel (10000 queued), %.2f us launch + synchronize\n",
                launch_wall / 10.0, sync_wall);
    cudaFree(a);
    cudaFree(o);
  }
  {  // seed 000: y = m x + b, 1000^3 float32, 500 iterations, everything on the device
    const int N = 1000;
    float *m, *x, *b, *y;
    CHECK_CUDA(cudaMalloc(&m, N * N * 4));
    CHECK_CUDA(cudaMalloc(&x, N * N * 4));
    CHECK_CUDA(cudaMalloc(&b, N * N * 4));
    CHECK_CUDA(cudaMalloc(&y, N * N * 4));
    std::vector<float> h(N * N);
    for (auto& v : h) v = float(rnd() * 2 - 1);
    CHECK_CUDA(cudaMemcpy(m, h.data(), N * N * 4, cudaMemcpyHostToDevice));
    CHECK_CUDA(cudaMemcpy(x, h.data(), N * N * 4, cudaMemcpyHostToDevice));
    CHECK_CUDA(cudaMemcpy(b, h.data(), N * N * 4, cudaMemcpyHostToDevice));
    cublasHandle_t hdl;
    CHECK_CUBLAS(cublasCreate(&hdl));
    const float one = 1, zero = 0;
    for (int tf32 = 0; tf32 < 2; ++tf32) {
      CHECK_CUBLAS(cublasSetMathMode(hdl, tf32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_PEDANTIC_MATH));
      for (int i = 0; i < 5; ++i)
        CHECK_CUBLAS(cublasSgemm(hdl, CUBLAS_OP_N, CUBLAS_OP_N, N, N, N, &one, x, N, m, N, &zero, y, N));
      const float gemm_ms = median_ms(5, [&] {
        t.start();
        for (int i = 0; i < 500; ++i)
          CHECK_CUBLAS(cublasSgemm(hdl, CUBLAS_OP_N, CUBLAS_OP_N, N, N, N, &one, x, N, m, N, &zero, y, N));
        return t.stop();
      });
      const float loop_ms = median_ms(5, [&] {
        t.start();
        for (int i = 0; i < 500; ++i) {
          CHECK_CUDA(cudaMemcpyAsync(y, b, N * N * 4, cudaMemcpyDeviceToDevice));
          CHECK_CUBLAS(cublasSgemm(hdl, CUBLAS_OP_N, CUBLAS_OP_N, N, N, N, &one, x, N, m, N, &one, y, N));
        }
        return t.stop();
      });
      std::printf(
          "seed 000 raw cuBLAS (%s): 500 x sgemm 1000^3 %.2f ms (%.1f TFLOP/s); 500 x (copy b; sgemm "
          "beta=1) %.2f ms = %.1f us per step\n",
          tf32 ? "TF32 tensor ops" : "pedantic float32", gemm_ms, 500 * 2e9 / gemm_ms / 1e9, loop_ms, loop_ms * 2);
    }
    cublasDestroy(hdl);
    cudaFree(m);
    cudaFree(x);
    cudaFree(b);
    cudaFree(y);
  }
  {  // design probes: CUDA graph replay of a compiled function's launches; stream-ordered allocation
    float* o;
    CHECK_CUDA(cudaMalloc(&o, 1024));
    cudaStream_t st;
    CHECK_CUDA(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
    const int kLaunches = 25;  // about an MLP training step's kernels
    auto step = [&] {
      for (int i = 0; i < kLaunches; ++i) launch(k_empty, 1, 32, {(void*)&o}, st);
    };
    auto wall_ms = [&](auto&& body, int reps) {
      std::vector<double> v;
      for (int r = 0; r < 5; ++r) {
        const auto t0 = std::chrono::steady_clock::now();
        for (int i = 0; i < reps; ++i) body();
        CHECK_CUDA(cudaStreamSynchronize(st));
        v.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
      }
      std::sort(v.begin(), v.end());
      return v[2] / reps;
    };
    const double direct = wall_ms(step, 1000);
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    CHECK_CUDA(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal));
    step();
    CHECK_CUDA(cudaStreamEndCapture(st, &graph));
    CHECK_CUDA(cudaGraphInstantiate(&exec, graph, 0));
    const double replay = wall_ms([&] { CHECK_CUDA(cudaGraphLaunch(exec, st)); }, 1000);
    const double replay_sync = wall_ms(
        [&] {
          CHECK_CUDA(cudaGraphLaunch(exec, st));
          CHECK_CUDA(cudaStreamSynchronize(st));
        },
        500);
    std::printf(
        "\n%d tiny kernels per step: direct launches %.1f us/step, CUDA graph replay %.1f us/step "
        "(%.1f us with a synchronize per step)\n",
        kLaunches, direct * 1e3, replay * 1e3, replay_sync * 1e3);
    for (size_t bytes : {size_t(1) << 12, size_t(1) << 20, size_t(64) << 20}) {
      const double plain = wall_ms(
          [&] {
            void* p;
            CHECK_CUDA(cudaMalloc(&p, bytes));
            CHECK_CUDA(cudaFree(p));
          },
          200);
      const double async = wall_ms(
          [&] {
            void* p;
            CHECK_CUDA(cudaMallocAsync(&p, bytes, st));
            CHECK_CUDA(cudaFreeAsync(p, st));
          },
          200);
      std::printf("allocation of %zu KB: cudaMalloc+cudaFree %.2f us, cudaMallocAsync+cudaFreeAsync %.2f us\n",
                  bytes >> 10, plain * 1e3, async * 1e3);
    }
    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(graph);
    cudaStreamDestroy(st);
    cudaFree(o);
  }
  return 0;
}
