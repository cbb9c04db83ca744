// The CUDA backend's generated pooling, sort, MRG, indexing and arange kernels compiled for the host and run against
// the CPU kernels (tests/cpp/cuda_host/write_kernels.cpp writes them at build time): one host thread plays the whole
// grid (gridDim = blockDim = 1, so each grid-stride loop covers every element), the arguments are the ones the
// backend's launch builds. Bit for bit: the kernels sum in the CPU's order. This tests their arithmetic and indexing
// where no GPU is; test_cuda.cpp runs them on one.
#include <cmath>
#include <random>

#include "hypatia/backends/cuda/cuda_kernel_util.h"
#include "hypatia/backends/cuda/sort_network.h"
#include "hypatia/backends/pool_geometry.h"
#include "hypatia/backends/shape_kernels_impl.h"
#include "hypatia/hypatia.h"
#include "hypatia/ops/conv.h"
#include "hypatia/ops/pool.h"
#include "hypatia/ops/random.h"
#include "hypatia/ops/shape.h"
#include "hypatia/ops/sort.h"
#include "hypatia/testing/opinfo.h"
#include "pool_cases.h"
#include "test_util.h"

// What the generated code expects of CUDA: the thread coordinates, __device__ (empty here), and
// the math builtins the NVRTC shim (backends/cuda/nvrtc_std.cuh) forwards to.
struct HostDim3 {
  unsigned x;
};
inline HostDim3 blockIdx{0}, threadIdx{0}, gridDim{1}, blockDim{1};
using std::isinf;
using std::isnan;

struct HostPoolKernel {
  hypatia::DType dt;
  const char* mode;
  int which;  // cuda::PoolKernel: 0 forward, 1 max gradient, 2 average gradient, 3 max second-order
  void (*run)(const void* args);
};

struct HostSortKernels {
  hypatia::DType dt;
  void (*init)(const void* args);
  void (*pass)(const void* args);
  void (*final)(const void* args);
};

struct HostIndexKernel {
  hypatia::DType dt;
  const char* index_dtypes;  // "int64,int32"
  bool scatter;
  void (*run)(const void* args);
};

struct HostArangeKernel {
  hypatia::DType dt;
  void (*run)(const void* args);
};

struct HostArgReduceKernel {
  hypatia::DType dt;
  bool is_max;
  void (*run)(const void* args);
  bool (*before)(double v, long long i, double b, long long j);  // the merge order
};

struct HostXentKernel {
  hypatia::DType dt, label_dt;
  bool grad;
  void (*run)(const void* args);
};

struct HostConvGemmKernels {
  hypatia::DType dt;
  void (*im2col)(const void* args);
  void (*col2im)(const void* args);
  void (*swap01)(const void* args);
};

struct HostCumKernels {
  hypatia::DType in;
  void (*chunks)(const void* args);
  void (*offsets)(const void* args);
};

struct HostFromUniformKernel {
  hypatia::DType pvals;
  int which;  // cuda::FromUniform
  void (*run)(const void* args);
};

// What a block-per-output kernel expects (one host thread: its block of one).
#define __shared__
inline void __syncthreads() {}

// The atomics the indexing kernels use, for one host thread.
inline unsigned long long atomicCAS(unsigned long long* p, unsigned long long expected, unsigned long long v) {
  const unsigned long long old = *p;
  if (old == expected) *p = v;
  return old;
}
template <class T>
T atomicAdd(T* p, T v) {
  const T old = *p;
  *p = old + v;
  return old;
}

#define __device__
#include "cuda_host_kernels.inc"
#undef __device__

namespace hypatia {
namespace {

/// The backends' PoolArgs and MrgArgs (cuda_pool_kernels.cpp, cuda_random_kernels.cpp).
struct PoolArgs {
  long long slices, in[3], out[3], ws[3], st[3], pad[3];
  unsigned long long x, m, gz, y;
};
struct MrgArgs {
  long long streams, n;
  unsigned long long state, out;
};
struct SortArgs {
  long long rows, n, inner, p, k, j, indices;
  unsigned long long x, val, idx, out;
};

unsigned long long ptr(const NDArray& a) { return reinterpret_cast<unsigned long long>(a.raw()); }

/// The launch arguments the CUDA backend builds for x (cuda_pool_kernels.cpp: the pooling geometry).
PoolArgs pool_args(const PoolParams& p, const Shape& x) {
  const pool_geometry::Geometry g = pool_geometry::geometry(p, x);
  PoolArgs a{};
  a.slices = g.slices;
  for (int i = 0; i < 3; ++i) {
    a.in[i] = g.in[i];
    a.out[i] = g.out[i];
    a.ws[i] = g.ws[i];
    a.st[i] = g.st[i];
    a.pad[i] = g.pad[i];
  }
  return a;
}

void (*pool_kernel(DType dt, const std::string& mode, int which))(const void*) {
  for (const HostPoolKernel& k : kHostPoolKernels)
    if (k.dt == dt && k.mode == mode && k.which == which) return k.run;
  return nullptr;
}

TEST(CudaKernelsOnHost, PoolingAndItsGradientsAreTheCpusBitForBit) {
  uint64_t seed = 1;
  int checked = 0;
  for (DType dt : {DType::Float32, DType::Float64})
    for (const char* mode : testing::kPoolModes)
      for (const testing::PoolCase& c : testing::pool_cases()) {
        const PoolParams p = c.params(mode);
        SCOPED_TRACE(p.str() + " " + c.x.str() + " " + std::string(dtype_name(dt)));
        const testing::PoolGraph pg = testing::pool_graph(p, c.x, dt, seed);
        seed += 2;
        FunctionOptions cpu;
        cpu.backend = "cpu";
        const auto want = function({pg.x}, {pg.y, pg.gx}, cpu)({pg.xv});
        const NDArray &xv = pg.xv, &r = pg.r, &want_y = want[0], &want_g = want[1];

        NDArray got_y = NDArray::zeros(want_y.shape(), dt), got_g = NDArray::zeros(xv.shape(), dt);
        PoolArgs a = pool_args(p, xv.shape());
        a.x = ptr(xv);
        a.y = ptr(got_y);
        pool_kernel(dt, mode, 0)(&a);
        const bool max = std::string(mode) == "max";
        PoolArgs b = pool_args(p, xv.shape());
        b.x = max ? ptr(xv) : 0;
        b.m = max ? ptr(want_y) : 0;
        b.gz = ptr(r);
        b.y = ptr(got_g);
        pool_kernel(dt, mode, max ? 1 : 2)(&b);
        EXPECT_ALLCLOSE(got_y, want_y, 0.0, 0.0);
        EXPECT_ALLCLOSE(got_g, want_g, 0.0, 0.0);
        ++checked;
        if (!max) continue;
        // The second-order gradient (DownsampleFactorMaxGradGrad): ggx at each window's max.
        Var out = variable(TensorType::of_value(want_y), "out"), ggx = variable(TensorType::of_value(xv), "ggx");
        const NDArray ggv = testing::random_array(xv.shape(), dt, -1, 1, seed++);
        const NDArray want_gg =
            function({pg.x, out, ggx}, {max_pool_grad_grad(pg.x, out, ggx, p)}, cpu)({xv, want_y, ggv})[0];
        NDArray got_gg = NDArray::zeros(want_y.shape(), dt);
        PoolArgs c = pool_args(p, xv.shape());
        c.x = ptr(xv);
        c.m = ptr(want_y);
        c.gz = ptr(ggv);
        c.y = ptr(got_gg);
        pool_kernel(dt, mode, 3)(&c);
        EXPECT_ALLCLOSE(got_gg, want_gg, 0.0, 0.0);
        ++checked;
      }
  EXPECT_EQ(checked, 60);  // 48 forward and gradient pairs, 12 second-order gradients
}

/// sort (indices false) or argsort of x along axis by the generated kernels, launched as
/// cuda_sort_kernels.cpp launches them.
NDArray host_sort(const NDArray& x, int axis, bool indices) {
  const HostSortKernels* k = nullptr;
  for (const HostSortKernels& s : kHostSortKernels)
    if (s.dt == x.dtype()) k = &s;
  EXPECT_NE(k, nullptr) << dtype_name(x.dtype());
  NDArray out = NDArray::zeros(x.shape(), indices ? DType::Int64 : x.dtype());
  const int64_t n = x.shape(axis), p = cuda::sort_network::padded(n), rows = x.size() / n;
  int64_t inner = 1;
  for (int d = axis + 1; d < x.ndim(); ++d) inner *= x.shape(d);
  NDArray val = NDArray::zeros({rows * p}, x.dtype()), idx = NDArray::zeros({rows * p}, DType::Int64);
  SortArgs a{rows, n, inner, p, 0, 0, indices, ptr(x), ptr(val), ptr(idx), ptr(out)};
  k->init(&a);
  cuda::sort_network::for_each_pass(p, [&](int64_t kk, int64_t j) {
    a.k = kk;
    a.j = j;
    k->pass(&a);
  });
  k->final(&a);
  return out;
}

TEST(CudaKernelsOnHost, SortAndArgsortAreTheCpusStableNanLastOrder) {
  std::mt19937_64 rng(7);
  int checked = 0;
  for (DType dt : {DType::Float32, DType::Float64, DType::Int64, DType::Int32, DType::UInt8, DType::Bool})
    for (const Shape& shape : {Shape{1}, Shape{5}, Shape{37}, Shape{4, 9}, Shape{3, 16, 5}, Shape{2, 1, 7}})
      for (int axis = 0; axis < shape.size(); ++axis) {
        // Few distinct values (ties: the stable order shows), and for floats NaNs, -0.0 and infinities.
        NDArray x = NDArray::empty(shape, DType::Float64);
        std::uniform_int_distribution<int> pick(0, 11);
        for (int64_t i = 0; i < x.size(); ++i) {
          const int c = pick(rng);
          const double v = c == 0 ? NAN : c == 1 ? -0.0 : c == 2 ? INFINITY : c == 3 ? -INFINITY : double(c % 5);
          x.data<double>()[i] = is_float(dt) ? v : std::isfinite(v) ? std::fabs(v) : 3.0;
        }
        x = x.astype(dt);
        SCOPED_TRACE(std::string(dtype_name(dt)) + " " + shape.str() + " axis " + std::to_string(axis));
        Var xv = variable(TensorType::of_value(x), "x");
        FunctionOptions cpu;
        cpu.backend = "cpu";
        const auto want = function({xv}, {sort(xv, axis), argsort(xv, axis)}, cpu)({x});
        EXPECT_EQ(testing::compare_arrays(host_sort(x, axis, false), want[0], 0.0, 0.0), "");
        EXPECT_ALLCLOSE(host_sort(x, axis, true), want[1], 0.0, 0.0);
        ++checked;
      }
  EXPECT_EQ(checked, 6 * 11);
}

TEST(CudaKernelsOnHost, MrgStreamsAreTheCpusBitForBit) {
  for (int64_t streams : {1, 37, 256})
    for (DType dt : {DType::Float32, DType::Float64}) {
      SCOPED_TRACE(std::to_string(streams) + " streams, " + std::string(dtype_name(dt)));
      NDArray state0 = NDArray::empty({streams, 6}, DType::Int32);
      for (int64_t i = 0; i < state0.size(); ++i)
        state0.data<int32_t>()[i] = static_cast<int32_t>(12345 + 7919 * i % 1000003);
      Var st = shared(state0, "rstate");
      Var size = constant(NDArray::from_vector(std::vector<int64_t>{5, 41}));
      auto [next_state, sample] = mrg_uniform(st, size, dt, 2);
      FunctionOptions cpu;
      cpu.backend = "cpu";
      cpu.updates = {{st, next_state}};
      Function f = function({}, {sample}, cpu);
      NDArray state = state0.copy();
      for (int call = 0; call < 3; ++call) {
        const NDArray want = f({})[0];
        NDArray got = NDArray::empty({5, 41}, dt);
        MrgArgs a{streams, 205, ptr(state), ptr(got)};
        (dt == DType::Float32 ? mrg32::run : mrg64::run)(&a);
        EXPECT_ALLCLOSE(got, want, 0.0, 0.0) << "call " << call;
        EXPECT_ALLCLOSE(state, get_value(st), 0.0, 0.0) << "call " << call;
      }
    }
}

/// An index vector of `len` values in [-n, n) (negative ones count from the end) as `dt`, for
/// unsigned dtypes in [0, n); `bad`: element 2 out of range (bad_index). `strided`: a view with
/// stride 2 into an array twice as long.
int64_t bad_index(DType dt, int64_t n) { return is_unsigned_int(dt) ? n + 3 : -n - 2; }
NDArray index_vector(DType dt, int64_t len, int64_t n, std::mt19937_64& rng, bool bad, bool strided) {
  NDArray v = NDArray::zeros({strided ? 2 * len : len}, DType::Int64);
  std::uniform_int_distribution<int64_t> pick(is_unsigned_int(dt) ? 0 : -n, n - 1);
  const int64_t step = strided ? 2 : 1;
  for (int64_t i = 0; i < len; ++i) v.data<int64_t>()[i * step] = pick(rng);
  if (bad) v.data<int64_t>()[2 * step] = bad_index(dt, n);
  v = v.astype(dt);
  return strided ? v.slice(0, 0, 2 * len, 2) : v;
}

std::vector<DType> parse_dtypes(const std::string& names) {
  std::vector<DType> r;
  size_t at = 0;
  while (at <= names.size()) {
    const size_t comma = std::min(names.find(',', at), names.size());
    r.push_back(dtype_from_name(names.substr(at, comma - at)));
    at = comma + 1;
  }
  return r;
}

TEST(CudaKernelsOnHost, AdvancedIndexingChecksItsIndicesOnTheDeviceAndMatchesTheCpu) {
  std::mt19937_64 rng(11);
  int checked = 0, failures_found = 0;
  for (const HostIndexKernel& k : kHostIndexKernels) {
    const std::vector<DType> idt = parse_dtypes(k.index_dtypes);
    const int nk = static_cast<int>(idt.size());
    for (bool bad : {false, true})
      for (bool strided : {false, true}) {
        SCOPED_TRACE(std::string(dtype_name(k.dt)) + " [" + k.index_dtypes + "] " + (k.scatter ? "scatter" : "gather") +
                     (bad ? " with an index out of range" : "") + (strided ? ", strided x and indices" : ""));
        // x: (5, 4, 3); its leading nk axes indexed by vectors of length 7 (the second, when there
        // are two, of length 1: it broadcasts); the first holds the bad index.
        const Shape xs{5, 4, 3};
        NDArray base = testing::random_array(strided ? Shape{5, 4, 6} : xs, DType::Float64, -4.0, 4.0, 3).astype(k.dt);
        NDArray x = strided ? base.slice(2, 0, 6, 2) : base;
        std::vector<NDArray> idx;
        for (int d = 0; d < nk; ++d)
          idx.push_back(index_vector(idt[d], d == 1 ? 1 : 7, xs[d], rng, bad && d == 0, strided));
        std::vector<NDArray*> in{&x};
        for (NDArray& v : idx) in.push_back(&v);
        const cuda::IndexVectors iv = cuda::index_vectors(AdvancedSubtensor(IndexSpec{}), x, in, 1);
        Shape region{iv.L};
        for (int d = nk; d < 3; ++d) region.push_back(xs[d]);
        long long err[4] = {0, 0, 0, 0};
        const auto err_words = reinterpret_cast<unsigned long long>(err);
        // The CPU's answer (its IndexError when an index is out of range).
        Var xv = variable(TensorType::of_value(x), "x");
        std::vector<Index> ix;
        std::vector<In> args{In(xv)};
        std::vector<NDArray> argv{x};
        for (int d = 0; d < nk; ++d) {
          Var i = variable(TensorType::of_value(idx[d]), "i");
          ix.emplace_back(i);
          args.push_back(In(i));
          argv.push_back(idx[d]);
        }
        FunctionOptions cpu;
        cpu.backend = "cpu";
        Var want;
        NDArray got;
        if (k.scatter) {
          const NDArray y = testing::random_array(region, DType::Float64, -4.0, 4.0, 5).astype(k.dt);
          Var yv = variable(TensorType::of_value(y), "y");
          args.push_back(In(yv));
          argv.push_back(y);
          want = inc_subtensor(subtensor(xv, ix), yv);
          got = x.copy();
          const std::vector<int64_t> a = cuda::index_args(got, iv, &y, err_words);
          k.run(a.data());
        } else {
          want = subtensor(xv, ix);
          got = NDArray::empty(region, k.dt);
          const std::vector<int64_t> a = cuda::index_args(x, iv, &got, err_words);
          k.run(a.data());
        }
        Function f = function(args, {want}, cpu);
        if (bad) {
          EXPECT_THROW(f(argv), IndexError);
          // The check block: the flag, the axis, the index as given, the axis's size.
          EXPECT_EQ(err[0], 1);
          EXPECT_EQ(err[1], 0);
          EXPECT_EQ(err[2], bad_index(idt[0], xs[0]));
          EXPECT_EQ(err[3], xs[0]);
          ++failures_found;
          // The gather's row of the bad index is zeros (the scatter leaves it out).
          const int64_t row = region.prod() / iv.L;
          if (!k.scatter) {
            for (int64_t r = 0; r < row; ++r) EXPECT_EQ(got.get_flat(2 * row + r), 0.0);
          }
        } else {
          EXPECT_ALLCLOSE(got, f(argv)[0], 0.0, 0.0);
          EXPECT_EQ(err[0], 0);
        }
        ++checked;
      }
  }
  EXPECT_EQ(checked, 9 * 4);  // 5 gathers and 4 scatters (float x), each 4 ways
  EXPECT_EQ(failures_found, 9 * 2);
}

TEST(CudaKernelsOnHost, CheckLabelsFindsALabelOutOfRangeOnTheDevice) {
  int checked = 0;
  for (const HostArangeKernel& k : kHostCheckLabelsKernels)
    for (int64_t bad_row : {-1, 0, 5})
      for (bool strided : {false, true}) {
        SCOPED_TRACE(std::string(dtype_name(k.dt)) + " bad row " + std::to_string(bad_row) +
                     (strided ? " strided" : ""));
        const int64_t n = 6, classes = 4;
        NDArray base = NDArray::zeros({2 * n}, DType::Int64);
        for (int64_t i = 0; i < n; ++i) base.data<int64_t>()[strided ? 2 * i : i] = (i * 3) % classes;
        const int64_t bad_label = is_unsigned_int(k.dt) ? classes : -1;
        if (bad_row >= 0) base.data<int64_t>()[strided ? 2 * bad_row : bad_row] = bad_label;
        const NDArray labels = strided ? base.astype(k.dt).slice(0, 0, 2 * n, 2) : base.astype(k.dt).slice(0, 0, n, 1);
        long long err[4] = {0, 0, 0, 0};
        struct {
          long long n, classes, st;
          unsigned long long labels, err;
        } a{n, classes, labels.strides()[0], ptr(labels), reinterpret_cast<unsigned long long>(err)};
        k.run(&a);
        if (bad_row < 0) {
          EXPECT_EQ(err[0], 0);
        } else {
          EXPECT_EQ(err[0], 1);
          EXPECT_EQ(err[1], bad_row);
          EXPECT_EQ(err[2], bad_label);
          EXPECT_EQ(err[3], classes);
        }
        ++checked;
      }
  EXPECT_EQ(checked, 4 * 3 * 2);
}

TEST(CudaKernelsOnHost, ArgmaxAndArgminAreTheCpusFirstNanThenFirstExtreme) {
  std::mt19937_64 rng(5);
  int checked = 0;
  for (const HostArgReduceKernel& k : kHostArgReduceKernels)
    for (const Shape& shape : {Shape{7}, Shape{4, 9}, Shape{3, 5, 6}, Shape{1, 1}})
      for (int axis = -1; axis < shape.size(); ++axis) {
        // Few distinct values (ties), and for floats NaNs and infinities.
        NDArray x = NDArray::empty(shape, DType::Float64);
        std::uniform_int_distribution<int> pick(0, 9);
        for (int64_t i = 0; i < x.size(); ++i) {
          const int c = pick(rng);
          const double v = c == 0 ? NAN : c == 1 ? INFINITY : c == 2 ? -INFINITY : double(c % 4);
          x.data<double>()[i] = is_float(k.dt) ? v : std::isfinite(v) ? v : 1.0;
        }
        x = x.astype(k.dt);
        const std::optional<int> ax = axis < 0 ? std::nullopt : std::optional<int>(axis);
        SCOPED_TRACE(std::string(dtype_name(k.dt)) + (k.is_max ? " argmax " : " argmin ") + shape.str() + " axis " +
                     std::to_string(axis));
        Var xv = variable(TensorType::of_value(x), "x");
        FunctionOptions cpu;
        cpu.backend = "cpu";
        const NDArray want = function({xv}, {k.is_max ? argmax(xv, ax) : argmin(xv, ax)}, cpu)({x})[0];
        // The launch's arguments, as ArgReduceKernel builds them.
        std::vector<int64_t> oshape, ost, rshape, rst;
        for (int d = 0; d < x.ndim(); ++d) {
          const bool reduced = axis < 0 || axis == d;
          (reduced ? rshape : oshape).push_back(x.shape(d));
          (reduced ? rst : ost).push_back(x.strides()[d]);
        }
        NDArray got = NDArray::empty(want.shape(), DType::Int64);
        const std::vector<int64_t> a =
            cuda::arg_reduce_args(want.size(), Shape(rshape).prod(), oshape, ost, rshape, rst, x.raw(), got.raw());
        k.run(a.data());
        EXPECT_ALLCLOSE(got, want, 0.0, 0.0);
        // The blocks' tree merges partial results in another order: any merge order gives the
        // same answer (the order is total: NaN first, then the extreme, then the smaller index).
        if (ax == std::nullopt) {
          std::vector<std::pair<double, long long>> parts;
          for (int64_t i = 0; i < x.size(); ++i) parts.push_back({x.get_flat(i), i});
          std::shuffle(parts.begin(), parts.end(), rng);
          while (parts.size() > 1) {
            std::vector<std::pair<double, long long>> next;
            for (size_t i = 0; i + 1 < parts.size(); i += 2) {
              const auto &p = parts[i], &q = parts[i + 1];
              next.push_back(k.before(q.first, q.second, p.first, p.second) ? q : p);
            }
            if (parts.size() % 2) next.push_back(parts.back());
            parts = std::move(next);
          }
          EXPECT_EQ(parts[0].second, want.get_flat_int(0));
        }
        ++checked;
      }
  EXPECT_EQ(checked, 12 * (2 + 3 + 4 + 3));
}

TEST(CudaKernelsOnHost, UploadWritesTheBytesOfItsArgumentBlock) {
  // GpuFromHost of at most kMaxRecordedHostBytes (a recordable transfer).
  for (size_t n : {size_t{0}, size_t{1}, size_t{8}, size_t{13}, kMaxRecordedHostBytes}) {
    SCOPED_TRACE(std::to_string(n) + " bytes");
    std::vector<unsigned char> src(n), dst(kMaxRecordedHostBytes + 1, 0xAA);
    for (size_t i = 0; i < n; ++i) src[i] = static_cast<unsigned char>(i * 37 + 11);
    std::vector<int64_t> args = cuda::upload_args(dst.data(), src.data(), n);
    upload::run(args.data());
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(dst[i], src[i]) << "byte " << i;
    EXPECT_EQ(dst[n], 0xAA) << "a byte past the value was written";
  }
  std::vector<unsigned char> big(kMaxRecordedHostBytes + 1);
  EXPECT_THROW(cuda::upload_args(big.data(), big.data(), big.size()), InternalError);
}

TEST(CudaKernelsOnHost, EyeIsTheCpus) {
  int checked = 0;
  for (const HostArangeKernel& k : kHostEyeKernels)
    for (const auto [n, m, diag] : {std::tuple<int64_t, int64_t, int64_t>{4, 4, 0},
                                    {3, 5, 1},
                                    {5, 3, -2},
                                    {2, 3, 7},
                                    {3, 2, -9},
                                    {1, 6, -1},
                                    {6, 1, 0}}) {
      SCOPED_TRACE(std::string(dtype_name(k.dt)) + " " + std::to_string(n) + "x" + std::to_string(m) + " k " +
                   std::to_string(diag));
      Var nv = scalar("n", DType::Int64), mv = scalar("m", DType::Int64), kv = scalar("k", DType::Int64);
      FunctionOptions cpu;
      cpu.backend = "cpu";
      const NDArray want = function({nv, mv, kv}, {eye(nv, mv, kv, k.dt)}, cpu)(
          {NDArray::scalar_int64(n), NDArray::scalar_int64(m), NDArray::scalar_int64(diag)})[0];
      NDArray got = NDArray::empty({n, m}, k.dt);
      struct {
        long long n, m, k;
        unsigned long long out;
      } a{n, m, diag, ptr(got)};
      k.run(&a);
      EXPECT_EQ(testing::compare_arrays(got, want, 0.0, 0.0), "");
      ++checked;
    }
  EXPECT_EQ(checked, 4 * 7);
}

TEST(CudaKernelsOnHost, RepeatByOneCountIsTheCpus) {
  int checked = 0;
  for (DType dt : {DType::Float32, DType::Float64, DType::Float16, DType::Bool, DType::Int16})
    for (const Shape& shape : {Shape{5}, Shape{3, 4}, Shape{2, 3, 4}})
      for (int axis = 0; axis < shape.size(); ++axis)
        for (int64_t r : {1, 2, 3})
          for (bool strided : {false, true}) {
            SCOPED_TRACE(std::string(dtype_name(dt)) + " " + shape.str() + " axis " + std::to_string(axis) + " r " +
                         std::to_string(r) + (strided ? " strided" : ""));
            NDArray x = testing::random_array(shape, DType::Float64, -3.0, 3.0, 17).astype(dt);
            if (strided) x = x.slice(0, shape[0] - 1, -1, -1);  // reversed rows (normalized bounds)
            ASSERT_EQ(x.shape(), shape);
            if (strided) {
              ASSERT_LT(x.strides()[0], 0);
            }
            Var xv = variable(TensorType::of_value(x), "x");
            FunctionOptions cpu;
            cpu.backend = "cpu";
            const NDArray want = function({xv}, {repeat(xv, r, axis)}, cpu)({x})[0];
            NDArray got = NDArray::empty(want.shape(), dt);
            const std::vector<int64_t> a = cuda::repeat_args(x, got, axis, r);
            kHostRepeatKernels[itemsize(dt) - 1](a.data());
            EXPECT_EQ(testing::compare_arrays(got, want, 0.0, 0.0), "");
            ++checked;
          }
  EXPECT_EQ(checked, 5 * 6 * 3 * 2);
}

TEST(CudaKernelsOnHost, RepeatByAVectorOfCountsIsTheCpus) {
  // Counts with zeros, short (their running sums in the argument block) and long (in memory).
  int checked = 0;
  uint64_t seed = 1100;
  for (DType dt : {DType::Float32, DType::Float64, DType::Bool, DType::Int16})
    for (const Shape& shape : {Shape{6}, Shape{3, 5}, Shape{2, 600}, Shape{700, 2}})
      for (int axis = 0; axis < shape.size(); ++axis) {
        SCOPED_TRACE(std::string(dtype_name(dt)) + " " + shape.str() + " axis " + std::to_string(axis));
        const NDArray x = testing::random_array(shape, DType::Float64, -3.0, 3.0, seed++).astype(dt);
        NDArray counts = NDArray::empty({shape[axis]}, DType::Int64);
        for (int64_t j = 0; j < shape[axis]; ++j) counts.data<int64_t>()[j] = (j * 7 + seed) % 4;  // 0..3
        Var xv = variable(TensorType::of_value(x), "x"), cv = variable(TensorType::of_value(counts), "c");
        FunctionOptions cpu;
        cpu.backend = "cpu";
        const NDArray want = function({xv, cv}, {repeat(xv, cv, axis)}, cpu)({x, counts})[0];
        NDArray got = NDArray::empty(want.shape(), dt);
        const std::vector<int64_t> c(counts.data<int64_t>(), counts.data<int64_t>() + counts.size());
        const std::vector<int64_t> ends = cuda::repeat_ends(c);
        const std::vector<int64_t> a = cuda::repeat_args(x, got, axis, c, ends.data());
        kHostRepeatByVectorKernels[itemsize(dt) - 1](a.data());
        EXPECT_EQ(testing::compare_arrays(got, want, 0.0, 0.0), "");
        ++checked;
      }
  EXPECT_EQ(checked, 4 * 7);
}

TEST(CudaKernelsOnHost, CrossentropyOfOneHotLabelsAndItsGradientAreTheCpus) {
  int checked = 0;
  for (const HostXentKernel& k : kHostXentKernels)
    for (int64_t bad_row : {-1, 2}) {
      SCOPED_TRACE(std::string(dtype_name(k.dt)) + (k.grad ? " gradient" : "") + " bad row " + std::to_string(bad_row));
      const int64_t n = 5, classes = 4;
      // Clipped probabilities: the stability rewrite leaves the cross-entropy as it is.
      const NDArray coding = testing::random_array({n, classes}, k.dt, 0.05, 1.0, 23);
      NDArray labels = NDArray::empty({n}, DType::Int64);
      for (int64_t i = 0; i < n; ++i) labels.data<int64_t>()[i] = (i * 3) % classes;
      if (bad_row >= 0) labels.data<int64_t>()[bad_row] = classes;
      labels = labels.astype(k.label_dt);
      const NDArray r = testing::random_array({n}, k.dt, -1.0, 1.0, 29);
      Var cv = variable(TensorType::of_value(coding), "coding"), lv = variable(TensorType::of_value(labels), "y");
      Var xent = categorical_crossentropy(clip(cv, constant(0.01, k.dt), constant(1.0, k.dt)), lv);
      Var out = k.grad ? grad(sum(mul(xent, constant(r))), cv) : xent;
      FunctionOptions cpu;
      cpu.backend = "cpu";
      Function f = function({cv, lv}, {out}, cpu);
      NDArray got = NDArray::empty(k.grad ? Shape{n, classes} : Shape{n}, k.dt);
      long long err[4] = {0, 0, 0, 0};
      const std::vector<int64_t> a = {n,
                                      classes,
                                      coding.strides()[0],
                                      coding.strides()[1],
                                      labels.strides()[0],
                                      k.grad ? r.strides()[0] : 0,
                                      static_cast<int64_t>(ptr(coding)),
                                      static_cast<int64_t>(ptr(labels)),
                                      k.grad ? static_cast<int64_t>(ptr(r)) : 0,
                                      static_cast<int64_t>(ptr(got)),
                                      static_cast<int64_t>(reinterpret_cast<uintptr_t>(err))};
      k.run(a.data());
      if (bad_row >= 0) {
        EXPECT_ERROR(IndexError, f({coding, labels}), "label 4 at row 2 is out of range for 4 classes");
        EXPECT_EQ(err[0], 1);
        EXPECT_EQ(err[1], bad_row);
        EXPECT_EQ(err[2], classes);
        EXPECT_EQ(err[3], classes);
      } else {
        EXPECT_EQ(err[0], 0);
        EXPECT_ALLCLOSE(got, f({coding, labels})[0], 0.0, 0.0);
      }
      ++checked;
    }
  EXPECT_EQ(checked, 4 * 2);
}

TEST(CudaKernelsOnHost, ArangeIsTheCpusBitForBit) {
  struct Range {
    double start, stop, step;
    bool ints;
  };
  const Range ranges[] = {{0, 10, 1, true},
                          {3, -7, -2, true},
                          {-5, 6, 4, true},
                          {0, 0, 1, true},
                          {-9.2e18, 9.2e18, 3e17, true},
                          {0.5, 3.2, 0.3, false},
                          {1.0, -2.0, -0.25, false},
                          {0, 1e-3, 1e-4, false}};
  int checked = 0;
  for (const HostArangeKernel& k : kHostArangeKernels)
    for (const Range& r : ranges) {
      const DType in_dt = r.ints ? DType::Int64 : DType::Float64;
      NDArray start = NDArray::scalar(r.start, in_dt), stop = NDArray::scalar(r.stop, in_dt),
              step = NDArray::scalar(r.step, in_dt);
      SCOPED_TRACE(std::string(dtype_name(k.dt)) + " " + std::to_string(r.start) + ":" + std::to_string(r.stop) + ":" +
                   std::to_string(r.step));
      ARange op(k.dt);
      NDArray want;
      std::vector<NDArray*> in{&start, &stop, &step}, out{&want};
      const KernelArgs args{in, out};
      kernel_util::arange_run(op, args);
      const kernel_util::ArangePlan p = kernel_util::arange_plan(op, args);
      NDArray got = NDArray::empty({p.n}, k.dt);
      struct {
        long long n, ints, start_i, step_i;
        double start_d, step_d;
        unsigned long long out;
      } a{p.n, p.ints, p.start_i, p.step_i, p.start_d, p.step_d, ptr(got)};
      k.run(&a);
      EXPECT_EQ(testing::compare_arrays(got, want, 0.0, 0.0), "");
      ++checked;
    }
  EXPECT_EQ(checked, 4 * 8);
}

/// The im2col path's device on the host: its generated kernels run by one thread, the products
/// by plain loops (in the row-major, strided-batched terms cuBLAS is called with).
class HostConvGemmDevice final : public cuda::ConvGemmDevice {
 public:
  explicit HostConvGemmDevice(DType dt) : dt_(dt) {
    for (const HostConvGemmKernels& k : kHostConvGemmKernels)
      if (k.dt == dt) k_ = &k;
  }
  void launch(cuda::ConvGemmKernel which, int64_t, std::vector<int64_t>& args) override {
    (which == cuda::ConvGemmKernel::Im2col   ? k_->im2col
     : which == cuda::ConvGemmKernel::Col2im ? k_->col2im
                                             : k_->swap01)(args.data());
    ++launches;
  }
  void gemm(const cuda::StridedGemm& g) override {
    if (dt_ == DType::Float32)
      product<float>(g);
    else
      product<double>(g);
    ++gemms;
  }
  int launches = 0, gemms = 0;

 private:
  template <class T>
  static void product(const cuda::StridedGemm& g) {
    for (int64_t b = 0; b < g.batch; ++b) {
      const T* A = static_cast<const T*>(g.A) + b * g.sa;
      const T* B = static_cast<const T*>(g.B) + b * g.sb;
      T* C = static_cast<T*>(g.C) + b * g.sc;
      for (int64_t i = 0; i < g.m; ++i)
        for (int64_t j = 0; j < g.n; ++j) {
          double acc = 0;
          for (int64_t l = 0; l < g.k; ++l)
            acc += static_cast<double>(g.ta ? A[l * g.lda + i] : A[i * g.lda + l]) *
                   static_cast<double>(g.tb ? B[j * g.ldb + l] : B[l * g.ldb + j]);
          T& c = C[i * g.ldc + j];
          c = static_cast<T>(acc + (g.beta == 0 ? 0.0 : g.beta * static_cast<double>(c)));
        }
    }
  }
  DType dt_;
  const HostConvGemmKernels* k_ = nullptr;
};

TEST(CudaKernelsOnHost, ConvolutionsThroughIm2colAndAProductAreTheCpus) {
  // 2-d and 3-d convolutions and both gradients by conv_gemm_run (what the CUDA backend runs
  // without cuDNN), with the batch in one chunk, in chunks of two (the last one short) and of one.
  struct Case {
    int nsp;
    std::string border;
    std::array<int64_t, 3> pad, pad_end, stride, dil;
    int64_t groups;
    bool flip;
    Shape img, kern;
  };
  const std::vector<Case> cases = {
      {2, "valid", {}, {}, {1, 1, 1}, {1, 1, 1}, 1, true, {3, 3, 9, 8}, {4, 3, 3, 3}},
      {2, "full", {}, {}, {1, 1, 1}, {1, 1, 1}, 1, false, {2, 3, 7, 7}, {5, 3, 3, 2}},
      {2, "half", {}, {}, {0, 2, 2}, {1, 1, 1}, 1, true, {3, 4, 11, 10}, {6, 4, 5, 5}},
      {2, "pad", {0, 2, 1}, {}, {0, 2, 3}, {0, 2, 1}, 1, false, {3, 2, 12, 13}, {3, 2, 3, 3}},
      {2, "pad", {0, 1, 0}, {0, 2, 3}, {1, 1, 1}, {1, 1, 1}, 1, true, {2, 2, 6, 7}, {2, 2, 3, 2}},  // asymmetric
      {2, "valid", {}, {}, {1, 1, 1}, {1, 1, 1}, 2, true, {3, 4, 8, 8}, {6, 2, 3, 3}},
      {2, "half", {}, {}, {1, 1, 1}, {0, 3, 3}, 1, true, {1, 3, 15, 15}, {2, 3, 3, 3}},
      {2, "valid", {}, {}, {1, 1, 1}, {1, 1, 1}, 2, false, {3, 4, 5, 6}, {4, 2, 1, 1}},  // pointwise: no columns
      {3, "valid", {}, {}, {1, 1, 1}, {1, 1, 1}, 1, true, {3, 3, 5, 6, 7}, {4, 3, 2, 3, 3}},
      {3, "half", {}, {}, {1, 2, 2}, {1, 1, 1}, 2, true, {2, 4, 6, 7, 7}, {4, 2, 3, 3, 3}},
      {3, "pad", {2, 1, 1}, {}, {2, 1, 1}, {1, 1, 1}, 1, false, {3, 2, 6, 6, 5}, {2, 2, 3, 3, 3}},
  };
  FunctionOptions cpu;
  cpu.backend = "cpu";
  uint64_t seed = 700;
  int checked = 0;
  for (DType dt : {DType::Float32, DType::Float64})
    for (const Case& c : cases) {
      Conv2dParams p2;
      p2.border = c.border;
      p2.pad_h = c.pad[1];
      p2.pad_w = c.pad[2];
      if (c.pad_end[1] || c.pad_end[2]) {
        p2.pad_h_end = c.pad_end[1];
        p2.pad_w_end = c.pad_end[2];
      }
      p2.stride_h = c.stride[1];
      p2.stride_w = c.stride[2];
      p2.dil_h = c.dil[1];
      p2.dil_w = c.dil[2];
      p2.groups = c.groups;
      p2.flip = c.flip;
      Conv3dParams p3{.hw = p2, .pad_d = c.pad[0], .stride_d = c.stride[0], .dil_d = c.dil[0]};
      SCOPED_TRACE((c.nsp == 2 ? p2.str() : "3-d " + p2.str()) + " " + c.img.str() + " " + c.kern.str() + " " +
                   std::string(dtype_name(dt)));
      const std::vector<bool> bc(c.img.size(), false);
      Var img = variable(TensorType(dt, bc), "img"), kern = variable(TensorType(dt, bc), "kern");
      const NDArray iv = testing::random_array(c.img, dt, -2, 2, seed++),
                    kv = testing::random_array(c.kern, dt, -2, 2, seed++);
      // The geometry as the backend builds it (cuda_conv_kernels.cpp), from the op's shape function.
      cuda::ConvGemmShape s{.n = c.img[0], .c = c.img[1], .o = c.kern[0], .g = c.groups, .flip = c.flip};
      Var out, gx, gw;
      Var top = variable(TensorType(dt, bc), "top");
      if (c.nsp == 2) {
        const Conv2dShape q = conv2d_shape("test", p2, c.img, c.kern);
        s.in = {1, q.h, q.w};
        s.k = {1, q.kh, q.kw};
        s.out = {1, q.ho, q.wo};
        s.pad = {0, q.ph, q.pw};
        s.stride = {1, p2.stride_h, p2.stride_w};
        s.dil = {1, p2.dil_h, p2.dil_w};
        out = conv2d(img, kern, p2);
        gx = conv2d_grad_wrt_inputs(kern, top, int_constant(q.h), int_constant(q.w), p2);
        gw = conv2d_grad_wrt_weights(img, top, int_constant(q.kh), int_constant(q.kw), p2);
      } else {
        const Conv3dShape q = conv3d_shape("test", p3, c.img, c.kern);
        s.in = {q.d, q.hw.h, q.hw.w};
        s.k = {q.kd, q.hw.kh, q.hw.kw};
        s.out = {q.od, q.hw.ho, q.hw.wo};
        s.pad = {q.pd, q.hw.ph, q.hw.pw};
        s.stride = {p3.stride_d, p2.stride_h, p2.stride_w};
        s.dil = {p3.dil_d, p2.dil_h, p2.dil_w};
        out = conv3d(img, kern, p3);
        gx = conv3d_grad_wrt_inputs(kern, top, int_constant(q.d), int_constant(q.hw.h), int_constant(q.hw.w), p3);
        gw = conv3d_grad_wrt_weights(img, top, int_constant(q.kd), int_constant(q.hw.kh), int_constant(q.hw.kw), p3);
      }
      const NDArray want_y = function({img, kern}, {out}, cpu)({iv, kv})[0];
      const NDArray tv = testing::random_array(want_y.shape(), dt, -2, 2, seed++);
      const NDArray want_gx = function({kern, top}, {gx}, cpu)({kv, tv})[0];
      const NDArray want_gw = function({img, top}, {gw}, cpu)({iv, tv})[0];
      const double tol = dt == DType::Float32 ? 1e-5 : 1e-12;
      const size_t isz = itemsize(dt);
      const int64_t per_image = s.c * s.k[0] * s.k[1] * s.k[2] * s.out[0] * s.out[1] * s.out[2] * int64_t(isz);
      for (int64_t budget :
           {int64_t{1} << 40, 2 * per_image + int64_t(isz) * s.o * 2 * s.out[1] * s.out[2] * s.out[0], int64_t{1}})
        for (cuda::ConvPass pass : {cuda::ConvPass::Forward, cuda::ConvPass::Data, cuda::ConvPass::Filter}) {
          SCOPED_TRACE("pass " + std::to_string(static_cast<int>(pass)) + " budget " + std::to_string(budget));
          const cuda::ConvGemmWork w = cuda::conv_gemm_work(pass, s, budget, isz);
          const NDArray& want = pass == cuda::ConvPass::Forward ? want_y
                                : pass == cuda::ConvPass::Data  ? want_gx
                                                                : want_gw;
          const NDArray& in0 = pass == cuda::ConvPass::Data ? kv : iv;
          const NDArray& in1 = pass == cuda::ConvPass::Forward ? kv : tv;
          NDArray got = NDArray::full(want.shape(), dt, 1e30);  // every element must be written
          NDArray col = NDArray::full({std::max<int64_t>(w.col_elems, 1)}, dt, 7.0),
                  tmp = NDArray::full({std::max<int64_t>(w.tmp_elems, 1)}, dt, 7.0);
          HostConvGemmDevice dev(dt);
          cuda::conv_gemm_run(pass, s, w, in0.raw(), in1.raw(), got.raw(), col.raw(), tmp.raw(), isz, dev);
          EXPECT_ALLCLOSE(got, want, tol, tol);
          const int64_t chunks = (s.n + w.chunk - 1) / w.chunk;
          EXPECT_EQ(dev.gemms, chunks * s.g);  // one product per group and chunk
          if (w.direct) EXPECT_EQ(dev.launches, 0);
          ++checked;
        }
    }
  EXPECT_EQ(checked, 2 * 11 * 3 * 3);
}

TEST(CudaKernelsOnHost, CumulativeSumsAndProductsAreTheCpusInChunksOrNot) {
  // The launches CumKernelImpl makes (cuda_cum_kernels.cpp), against the CPU's CumOp: bit for bit
  // for integers and for lines in one chunk; floats in chunks within a few roundings.
  struct Case {
    Shape shape;
    int axis;
  };
  const std::vector<Case> cases = {{{5, 20}, 1}, {{5, 20}, 0},   {{3, 1000}, 1},   {{1000, 3}, 0},
                                   {{7}, 0},     {{4, 9, 6}, 1}, {{2, 300, 5}, 1}, {{1, 2000}, 1}};
  FunctionOptions cpu;
  cpu.backend = "cpu";
  int checked = 0, chunked = 0;
  uint64_t seed = 900;
  for (const HostCumKernels& k : kHostCumKernels)
    for (const Case& c : cases)
      for (bool mul : {false, true})
        for (bool rev : {false, true}) {
          SCOPED_TRACE(std::string(dtype_name(k.in)) + " " + c.shape.str() + " axis " + std::to_string(c.axis) +
                       (mul ? " prod" : " sum") + (rev ? " reversed" : ""));
          // Values near 1 for products of floats (no overflow), small integers otherwise.
          NDArray xv = mul && is_float(k.in) ? testing::random_array(c.shape, DType::Float64, 0.9, 1.1, seed++)
                                             : testing::random_array(c.shape, DType::Float64, -3, 4, seed++);
          if (!is_float(k.in))
            for (int64_t i = 0; i < xv.size(); ++i) xv.data<double>()[i] = std::floor(xv.data<double>()[i]);
          xv = xv.astype(k.in);
          Var x = variable(TensorType(k.in, std::vector<bool>(c.shape.size(), false)), "x");
          Var y = apply_op1(std::make_shared<CumOp>(mul, c.axis, rev), {x});
          const NDArray want = function({x}, {y}, cpu)({xv})[0];
          int64_t outer = 1, inner = 1;
          for (int d = 0; d < c.axis; ++d) outer *= c.shape[d];
          for (int d = c.axis + 1; d < c.shape.size(); ++d) inner *= c.shape[d];
          const int64_t n = c.shape[c.axis];
          const cuda::CumPlan p = cuda::cum_plan(outer, n, inner);
          NDArray got = NDArray::full(want.shape(), want.dtype(), 7.0);
          NDArray part = NDArray::zeros({outer * inner * p.m}, DType::Float64);
          struct {
            long long outer, n, inner, chunk, m, mul, rev, write;
            unsigned long long x, y, part;
          } a{outer, n, inner, p.chunk, p.m, mul, rev, 0, ptr(xv), ptr(got), ptr(part)};
          if (p.m > 1) {
            k.chunks(&a);
            k.offsets(&a);
            ++chunked;
          }
          a.write = 1;
          k.chunks(&a);
          const bool exact = !is_float(k.in) || p.m == 1;
          EXPECT_EQ(testing::compare_arrays(got, want, exact ? 0.0 : 1e-12, exact ? 0.0 : 1e-12), "");
          ++checked;
        }
  EXPECT_EQ(checked, 6 * 8 * 4);
  EXPECT_EQ(chunked, 6 * 4 * 4);  // the four shapes of few long lines
}

TEST(CudaKernelsOnHost, MultinomialAndChoiceFromUniformsAreTheCpusDraws) {
  // Rows of random probabilities (normalized), uniforms for n rounds: the counts and indices the
  // CPU kernels give, bit for bit, with replacement and without (the rows renormalized).
  FunctionOptions cpu;
  cpu.backend = "cpu";
  int checked = 0;
  uint64_t seed = 1000;
  for (const HostFromUniformKernel& k : kHostFromUniformKernels)
    for (auto [rows, outcomes, n] : {std::tuple{5, 7, 1}, std::tuple{3, 40, 4}, std::tuple{1, 1000, 3}}) {
      const auto which = static_cast<cuda::FromUniform>(k.which);
      SCOPED_TRACE(std::string(dtype_name(k.pvals)) + " kind " + std::to_string(k.which) + " rows " +
                   std::to_string(rows) + " outcomes " + std::to_string(outcomes) + " n " + std::to_string(n));
      NDArray p = testing::random_array({rows, outcomes}, DType::Float64, 0.0, 1.0, seed++);
      for (int r = 0; r < rows; ++r) {
        double s = 0;
        for (int m = 0; m < outcomes; ++m) s += p.data<double>()[r * outcomes + m];
        for (int m = 0; m < outcomes; ++m) p.data<double>()[r * outcomes + m] /= s;
      }
      const NDArray pv = p.astype(k.pvals);
      const NDArray uv = testing::random_array({rows * n}, DType::Float64, 0.0, 1.0, seed++).astype(k.pvals);
      Var P = variable(TensorType(k.pvals, {false, false}), "p"), U = variable(TensorType(k.pvals, {false}), "u");
      Var N = variable(scalar_type(DType::Int64), "n");
      std::shared_ptr<Op> op;
      if (which == cuda::FromUniform::Multinomial)
        op = std::make_shared<MultinomialFromUniform>(DType::Int64);
      else
        op = std::make_shared<ChoiceFromUniform>(DType::Int64, which == cuda::FromUniform::ChoiceWithReplacement);
      const NDArray want = function({P, U, N}, {apply_op1(op, {P, U, N})}, cpu)({pv, uv, NDArray::scalar_int64(n)})[0];
      NDArray got = NDArray::full(want.shape(), DType::Int64, 99.0);
      NDArray scratch = pv.copy();  // (the rows the kernel renormalizes)
      struct {
        long long rows, outcomes, n;
        unsigned long long p, u, z;
      } a{rows, outcomes, n, ptr(scratch), ptr(uv), ptr(got)};
      k.run(&a);
      EXPECT_EQ(testing::compare_arrays(got, want, 0.0, 0.0), "");
      ++checked;
    }
  EXPECT_EQ(checked, 2 * 3 * 3);
}

TEST(CudaKernelsOnHost, TheIm2colPathCutsTheBatchToItsBudgetAndRefusesSizesBeyondCublas) {
  cuda::ConvGemmShape s{.n = 10, .c = 3, .o = 8, .g = 1};
  s.in = {1, 32, 32};
  s.k = {1, 3, 3};
  s.out = {1, 30, 30};
  const int64_t col = 3 * 9 * 900;  // elements per image
  EXPECT_EQ(cuda::conv_gemm_work(cuda::ConvPass::Forward, s, 4 * col * 4, 4).chunk, 4);
  EXPECT_EQ(cuda::conv_gemm_work(cuda::ConvPass::Forward, s, 4 * col * 4, 4).col_elems, 4 * col);
  EXPECT_EQ(cuda::conv_gemm_work(cuda::ConvPass::Forward, s, 1, 4).chunk, 1);
  EXPECT_EQ(cuda::conv_gemm_work(cuda::ConvPass::Forward, s, int64_t{1} << 40, 4).chunk, 10);
  const cuda::ConvGemmWork f = cuda::conv_gemm_work(cuda::ConvPass::Filter, s, (col + 8 * 900) * 4 * 3, 4);
  EXPECT_EQ(f.chunk, 3);
  EXPECT_EQ(f.tmp_elems, 3 * 8 * 900);
  s.k = {1, 1, 1};
  s.out = s.in;
  EXPECT_TRUE(cuda::conv_gemm_work(cuda::ConvPass::Forward, s, 1, 4).direct);
  EXPECT_EQ(cuda::conv_gemm_work(cuda::ConvPass::Forward, s, 1, 4).chunk, 10);
  EXPECT_FALSE(cuda::conv_gemm_work(cuda::ConvPass::Filter, s, 1, 4).direct);
  s.c = 1 << 20;
  s.k = {1, 50, 50};  // c * kh * kw beyond cuBLAS's int
  s.in = {1, 60, 60};
  s.out = {1, 11, 11};
  EXPECT_ERROR(NotImplementedError, cuda::conv_gemm_work(cuda::ConvPass::Forward, s, 1, 4),
               "filter size 2621440000 exceeds cuBLAS's int sizes");
}

}  // namespace
}  // namespace hypatia
