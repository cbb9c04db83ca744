// The CUDA backend's generated kernels that call no GPU library (sort, MRG, indexing with its
// checks, CheckLabels, ArgReduce, the upload, Eye, Repeat, ARange, the cumulative ops and the draws
// from uniforms) run on the host against the CPU kernels: cuda_host/write_kernels.cpp compiles them
// for the host at build time (cuda_host/host_kernels.h), one host thread plays the whole grid
// (gridDim = blockDim = 1, so each grid-stride loop covers every element), the arguments are the
// ones the backend's launch builds. Bit for bit where the kernels sum in the CPU's order. This
// tests their arithmetic and indexing where no GPU is; test_cuda.cpp runs them on one. Pooling,
// the cross-entropy and the im2col convolutions: test_cuda_on_host_nnet.cpp; the linear algebra's
// helpers: test_cuda_on_host_linalg.cpp.
#include <cmath>
#include <map>
#include <random>

#include "cuda_host/elem_cases.h"
#include "cuda_host/host_kernels.h"
#include "hypatia/backends/cuda/cuda_kernel_util.h"
#include "hypatia/backends/cuda/sort_network.h"
#include "hypatia/backends/reference/nnet_common.h"
#include "hypatia/backends/shape_kernels_impl.h"
#include "hypatia/hypatia.h"
#include "hypatia/ops/random.h"
#include "hypatia/ops/shape.h"
#include "hypatia/ops/sort.h"
#include "hypatia/testing/opinfo.h"
#include "test_util.h"

namespace hypatia {
namespace {

/// The backend's MrgArgs and SortArgs (cuda_random_kernels.cpp, cuda_sort_kernels.cpp).
struct MrgArgs {
  long long streams, n;
  unsigned long long state, out;
};

struct SortArgs {
  long long rows, n, inner, p, k, j, indices;
  unsigned long long x, val, idx, out;
};

unsigned long long ptr(const NDArray& a) { return reinterpret_cast<unsigned long long>(a.raw()); }

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

/// `n` values of `dt` (in [-2, 2) for floats, [0, 256) otherwise), starting `offset` elements into
/// their buffer (which starts 64-byte aligned).
NDArray elem_operand(int64_t n, int64_t offset, DType dt, std::mt19937& rng) {
  std::vector<double> v(static_cast<size_t>(n + offset));
  std::uniform_real_distribution<double> real(-2, 2);
  std::uniform_int_distribution<int> byte(0, 255);
  for (double& x : v) x = is_float(dt) ? real(rng) : byte(rng);
  return NDArray::from_vector<double>(v).astype(dt).slice(0, offset, n + offset, 1);
}

TEST(CudaKernelsOnHost, TheElementwiseVectorLoopIsTheScalarLoopBitForBit) {
  // Each module of elem_cases.h: its contiguous kernel's vector loop (V elements per thread, one
  // vector load or store per operand) against the scalar loop of the same kernel (nd 0) and the
  // strided kernel, on lengths around V (the tail), a broadcast scalar last input, and operands
  // a whole vector (the loop taken) or one element (not taken) past a vector boundary.
  const auto cases = hypatia::testing::host_elem_cases();
  ASSERT_EQ(cases.size(), kHostElemKernels.size());
  std::mt19937 rng(11);
  int vector_runs = 0;
  for (size_t c = 0; c < cases.size(); ++c) {
    const auto& [label, spec] = cases[c];
    ASSERT_EQ(label, kHostElemKernels[c].label);
    const int V = cuda::elem_vector_width(spec);
    // 16 bytes of the widest dtype, at most 8; halved for a long body (the fused chain).
    const std::map<std::string, int> widths = {{"exp float32", 4}, {"add float32", 4},    {"mul float64", 2},
                                               {"lt float32", 4},  {"add uint8", 8},      {"copy float16", 8},
                                               {"sub int64", 2},   {"switch float32", 4}, {"fused float16", 2}};
    EXPECT_EQ(V, widths.at(label)) << label;
    for (int64_t n : {int64_t{1}, int64_t{V - 1}, int64_t{V}, int64_t{4 * V + 3}, int64_t{4099}})
      for (bool broadcast : {false, true})
        for (int64_t offset : {int64_t{0}, int64_t{V}, int64_t{1}}) {
          if (n == 0 || (broadcast && spec.in.size() < 2)) continue;
          SCOPED_TRACE(label + " n=" + std::to_string(n) + (broadcast ? " broadcast" : "") +
                       " offset=" + std::to_string(offset));
          std::vector<NDArray> in, out_v, out_s, out_strided;
          for (size_t j = 0; j < spec.in.size(); ++j)
            in.push_back(elem_operand(broadcast && j + 1 == spec.in.size() ? 1 : n, offset, spec.in[j], rng));
          auto fresh = [&](std::vector<NDArray>& outs) {
            for (DType dt : spec.out) {
              outs.push_back(NDArray::zeros({n + offset}, dt).slice(0, offset, n + offset, 1));
              std::memset(outs.back().raw(), 0xA5, static_cast<size_t>(n) * itemsize(dt));
            }
          };
          fresh(out_v);
          fresh(out_s);
          fresh(out_strided);
          auto ptrs = [](std::vector<NDArray>& v) {
            std::vector<NDArray*> p;
            for (NDArray& a : v) p.push_back(&a);
            return p;
          };
          const std::vector<NDArray*> ins = ptrs(in), ov = ptrs(out_v), os = ptrs(out_s);
          std::vector<int64_t> args;
          cuda::contiguous_elem_args(args, Shape{n}, ov, ins, V);
          // The loop is asked for where every whole operand starts on a vector boundary.
          const bool aligned = offset % V == 0;
          EXPECT_EQ(args[1], aligned ? V : 0);
          vector_runs += aligned && n >= V;
          kHostElemKernels[c].contiguous(args.data());
          std::vector<int64_t> scalar;
          cuda::contiguous_elem_args(scalar, Shape{n}, os, ins, V);
          scalar[1] = 0;
          kHostElemKernels[c].contiguous(scalar.data());
          std::vector<void*> sop;
          std::vector<const void*> sip;
          std::vector<std::vector<int64_t>> sost, sist;
          for (NDArray& o : out_strided) {
            sop.push_back(o.raw());
            sost.push_back({static_cast<int64_t>(itemsize(o.dtype()))});
          }
          for (const NDArray& x : in) {
            sip.push_back(x.raw());
            sist.push_back({x.size() == n ? static_cast<int64_t>(itemsize(x.dtype())) : 0});
          }
          std::vector<int64_t> strided = cuda::elem_args(n, {n}, sop, sost, sip, sist);
          kHostElemKernels[c].strided(strided.data());
          for (size_t k = 0; k < spec.out.size(); ++k) {
            const size_t bytes = static_cast<size_t>(n) * itemsize(spec.out[k]);
            EXPECT_EQ(std::memcmp(out_v[k].raw(), out_s[k].raw(), bytes), 0) << "output " << k;
            EXPECT_EQ(std::memcmp(out_v[k].raw(), out_strided[k].raw(), bytes), 0) << "output " << k;
          }
          // In place (an Elemwise's output in its first input's buffer, as the backend runs it):
          // each vector read before it is written, the same result.
          if (spec.out.size() == 1 && spec.out[0] == spec.in[0] && in[0].size() == n) {
            NDArray buf = in[0].copy();
            std::vector<NDArray*> io = ins, oo = {&buf};
            io[0] = &buf;
            std::vector<int64_t> inplace;
            cuda::contiguous_elem_args(inplace, Shape{n}, oo, io, V);
            kHostElemKernels[c].contiguous(inplace.data());
            EXPECT_EQ(std::memcmp(buf.raw(), out_s[0].raw(), static_cast<size_t>(n) * itemsize(spec.out[0])), 0)
                << "in place";
          }
        }
  }
  EXPECT_GT(vector_runs, 40);
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
  // A uint64 label past int64's range: the kernel writes the label's bits, and the message made
  // from them names the value the user gave, as the CPU's check does.
  const uint64_t huge = (uint64_t{1} << 63) + 5;
  const char* said = "label 9223372036854775813 at row 1 is out of range for 4 classes";
  for (const HostArangeKernel& k : kHostCheckLabelsKernels) {
    if (k.dt != DType::UInt64) continue;
    NDArray labels = NDArray::zeros({3}, DType::UInt64);
    labels.data<uint64_t>()[1] = huge;
    long long err[4] = {0, 0, 0, 0};
    struct {
      long long n, classes, st;
      unsigned long long labels, err;
    } a{3, 4, labels.strides()[0], ptr(labels), reinterpret_cast<unsigned long long>(err)};
    k.run(&a);
    ASSERT_EQ(err[0], 1);
    EXPECT_EQ(err[1], 1);
    EXPECT_EQ(static_cast<uint64_t>(err[2]), huge);
    EXPECT_ERROR(IndexError, nnet_detail::label_out_of_range("CheckLabels", err[2], k.dt, err[1], err[3]), said);
    const NDArray x = NDArray::zeros({3, 4}, DType::Float32), b = NDArray::zeros({4}, DType::Float32);
    Var xv = variable(TensorType::of_value(x), "x"), bv = variable(TensorType::of_value(b), "b");
    Var lv = variable(TensorType::of_value(labels), "y");
    FunctionOptions cpu;
    cpu.backend = "cpu";
    Function f = function({xv, bv, lv}, {crossentropy_softmax_1hot_with_bias(xv, bv, lv)[0]}, cpu);
    EXPECT_ERROR(IndexError, f({x, b, labels}), said);
    ++checked;
  }
  EXPECT_EQ(checked, 4 * 3 * 2 + 1);
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
    for (const auto& [n, m, diag] : {std::tuple<int64_t, int64_t, int64_t>{4, 4, 0},
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

}  // namespace
}  // namespace hypatia
