// CPU kernel of CompositeReduce: the fused program is evaluated tile by tile (backends/cpu/
// composite_program.h) and each tile is folded into the accumulators at once, so the elementwise
// result never reaches memory.
//
// The loop runs over the broadcast shape with its dims ordered by the memory order of the largest
// input. The inputs are walked by a StridedLoop (dims merged where the inputs allow, whatever the
// reduced axes), the accumulators by a separate walk over the same positions (AccWalk: dims
// merged where the accumulator allows): a run of the accumulator walk either folds into one
// accumulator (a reduced inner dim: 16 independent lanes, like the Reduce kernel, whose loop is
// also compiled for AVX2 and picked at run time; below 64 elements one) or accumulates
// elementwise into a row of them (a kept inner dim). Short runs are taken many at a time (runs
// that all add into one row of accumulators, column sums of a narrow matrix, column by column in
// registers). Sums and products accumulate in float64, like the Reduce kernel.
//
// Threads (above config().openmp_elemwise_minsize elements, on the thread pool): the shape is cut
// along its outermost dim long enough into boxes, a few per thread, taken dynamically. When that
// dim is kept each box owns its outputs; otherwise (a full reduction, or a reduced outer dim with
// at most 32768 outputs) each box accumulates into private accumulators that are combined in box
// order (with more outputs, the longest kept dim is cut). The cut depends only on the shape and
// the thread count, so the result is the same for the same thread count.
#include <algorithm>
#include <numeric>
#include <vector>

#include "hypatia/backends/cpu/composite_program.h"
#include "hypatia/backends/cpu/thread_pool.h"
#include "hypatia/backends/reference/reduce_common.h"
#include "hypatia/backends/registry.h"
#include "hypatia/core/error.h"
#include "hypatia/core/strided_loop.h"
#include "hypatia/ops/composite.h"

namespace hypatia {
namespace {

using reduce_detail::Reducer;

constexpr int kFoldLanes = 16;
/// Runs of fewer elements per output fold into a single accumulator.
constexpr int64_t kShortFold = 64;
/// Most outputs for which threads use private accumulators rather than a split of the outputs.
constexpr int64_t kMaxPrivateOutputs = 1 << 15;

/// lanes[j] = step(lanes[j], v[b * kFoldLanes + j]) for b < blocks: the hot loop of full and
/// long-run reductions (a fixed-length inner loop the compiler vectorizes).
template <ReduceKind K, class T, class Acc>
[[gnu::always_inline]] inline void fold_blocks_body(Acc* lanes_out, const T* v, int64_t blocks) {
  using R = Reducer<K, T>;
  Acc lanes[kFoldLanes];
  std::copy(lanes_out, lanes_out + kFoldLanes, lanes);
  for (int64_t b = 0; b < blocks; ++b, v += kFoldLanes)
    for (int j = 0; j < kFoldLanes; ++j) lanes[j] = R::step(lanes[j], v[j]);
  std::copy(lanes, lanes + kFoldLanes, lanes_out);
}

template <ReduceKind K, class T, class Acc>
void fold_blocks_default(Acc* lanes, const T* v, int64_t blocks) {
  fold_blocks_body<K, T>(lanes, v, blocks);
}

#if defined(__x86_64__) && defined(__GNUC__)
// The same loop compiled for AVX2 (4 doubles per add instead of 2), picked at run time. Each lane
// sees the same operations in the same order, so the result is bitwise the same.
template <ReduceKind K, class T, class Acc>
[[gnu::target("avx2")]] void fold_blocks_avx2(Acc* lanes, const T* v, int64_t blocks) {
  fold_blocks_body<K, T>(lanes, v, blocks);
}

inline bool has_avx2() {
  static const bool yes = __builtin_cpu_supports("avx2");
  return yes;
}
#endif

template <ReduceKind K, class T, class Acc>
void fold_blocks(Acc* lanes, const T* v, int64_t blocks) {
#if defined(__x86_64__) && defined(__GNUC__)
  if (has_avx2()) return fold_blocks_avx2<K, T>(lanes, v, blocks);
#endif
  fold_blocks_default<K, T>(lanes, v, blocks);
}

/// The accumulators of a box, visited in the order of the box's positions (C order over its
/// shape): the accumulator's dims merged where its strides allow, an inner run of `len`
/// positions (byte stride `inner`, 0 when they all fold into one accumulator) and an odometer
/// over the outer dims.
struct AccWalk {
  int nd = 0;
  std::array<int64_t, kMaxNdim> shape{}, stride{}, idx{};
  int64_t len = 1, inner = 0;
  std::byte* row;
  int64_t pos = 0;

  AccWalk(const Shape& s, const Strides& acc, std::byte* base) : row(base) {
    std::array<int64_t, kMaxNdim> sh{}, st{};
    int n = 0;
    for (int d = 0; d < s.size(); ++d) {
      if (s[d] == 1) continue;
      if (n > 0 && st[n - 1] == acc[d] * s[d]) {
        sh[n - 1] *= s[d];
        st[n - 1] = acc[d];
        continue;
      }
      sh[n] = s[d];
      st[n] = acc[d];
      ++n;
    }
    if (n > 0) {
      len = sh[n - 1];
      inner = st[n - 1];
      nd = n - 1;
      std::copy(sh.begin(), sh.begin() + nd, shape.begin());
      std::copy(st.begin(), st.begin() + nd, stride.begin());
    }
  }

  void next_row() {
    pos = 0;
    for (int d = nd - 1; d >= 0; --d) {
      if (++idx[d] < shape[d]) {
        row += stride[d];
        return;
      }
      idx[d] = 0;
      row -= (shape[d] - 1) * stride[d];
    }
  }
};

/// Folds the values of a box, in position order, into its accumulators.
template <ReduceKind K, class T>
class Folder {
 public:
  using R = Reducer<K, T>;
  using Acc = typename R::Acc;

  explicit Folder(AccWalk w) : w_(w), lanes_mode_(w.len >= kShortFold) { reset(); }

  void consume(const T* v, int64_t m) {
    int64_t i = 0;
    while (i < m) {
      if (w_.pos == 0 && w_.nd > 0 && w_.len < kShortFold && m - i >= w_.len) {
        i += short_rows(v + i, m - i);
        continue;
      }
      const int64_t seg = std::min(m - i, w_.len - w_.pos);
      if (w_.inner == 0)
        fold(v + i, seg);
      else
        accumulate(v + i, seg);
      w_.pos += seg;
      i += seg;
      if (w_.pos == w_.len) {
        if (w_.inner == 0) flush();
        w_.next_row();
      }
    }
  }

 private:
  void reset() {
    single_ = R::init();
    for (auto& l : lanes_) l = R::init();
  }

  void fold(const T* v, int64_t n) {
    if (!lanes_mode_) {
      Acc a = single_;
      for (int64_t k = 0; k < n; ++k) a = R::step(a, v[k]);
      single_ = a;
      return;
    }
    int64_t k = 0;
    const int64_t p = w_.pos;
    for (; k < n && (p + k) % kFoldLanes != 0; ++k) {
      Acc& l = lanes_[(p + k) % kFoldLanes];
      l = R::step(l, v[k]);
    }
    const int64_t blocks = (n - k) / kFoldLanes;
    fold_blocks<K, T>(lanes_, v + k, blocks);
    k += blocks * kFoldLanes;
    for (; k < n; ++k) {
      Acc& l = lanes_[(p + k) % kFoldLanes];
      l = R::step(l, v[k]);
    }
  }

  void flush() {
    Acc r = single_;
    if (lanes_mode_) {
      r = R::init();
      for (int j = 0; j < kFoldLanes; ++j) r = R::combine(r, lanes_[j]);
    }
    Acc* a = reinterpret_cast<Acc*>(w_.row);
    *a = R::combine(*a, r);
    reset();
  }

  /// Whole short runs at once (the same result as one at a time, without the per-run
  /// bookkeeping): as many as fit in n values and in what is left of the innermost outer dim, along
  /// which the accumulators advance by a fixed stride. Returns the values used.
  int64_t short_rows(const T* v, int64_t n) {
    const int d = w_.nd - 1;
    const int64_t len = w_.len, s = w_.stride[d];
    const int64_t rows = std::min(n / len, w_.shape[d] - w_.idx[d]);
    if (w_.inner != 0 && s == 0) {
      repeat_rows(v, rows);  // every run adds into the same accumulators
    } else {
      std::byte* row = w_.row;
      for (int64_t r = 0; r < rows; ++r, row += s) {
        const T* x = v + r * len;
        if (w_.inner != 0) {
          accumulate_at(row, x, len);
          continue;
        }
        Acc a = R::init();
        for (int64_t k = 0; k < len; ++k) a = R::step(a, x[k]);
        Acc* p = reinterpret_cast<Acc*>(row);
        *p = R::combine(*p, a);
      }
    }
    w_.row += rows * s;
    w_.idx[d] += rows;
    if (w_.idx[d] == w_.shape[d]) {  // carry into the outer dims
      w_.idx[d] -= 1;
      w_.row -= s;
      w_.next_row();
    }
    return rows * len;
  }

  /// acc[k] = step(acc[k], v[r * len + k]) for r < rows, k < len: column by column, four
  /// accumulators in registers at a time (per accumulator, the same order of additions as run by
  /// run).
  void repeat_rows(const T* v, int64_t rows) {
    const int64_t len = w_.len, st = w_.inner;
    int64_t k = 0;
    for (; k + 4 <= len; k += 4) {
      Acc* p[4];
      Acc a[4];
      for (int j = 0; j < 4; ++j) {
        p[j] = reinterpret_cast<Acc*>(w_.row + (k + j) * st);
        a[j] = *p[j];
      }
      for (int64_t r = 0; r < rows; ++r)
        for (int j = 0; j < 4; ++j) a[j] = R::step(a[j], v[r * len + k + j]);
      for (int j = 0; j < 4; ++j) *p[j] = a[j];
    }
    for (; k < len; ++k) {
      Acc* p = reinterpret_cast<Acc*>(w_.row + k * st);
      Acc a = *p;
      for (int64_t r = 0; r < rows; ++r) a = R::step(a, v[r * len + k]);
      *p = a;
    }
  }

  void accumulate(const T* v, int64_t n) { accumulate_at(w_.row + w_.pos * w_.inner, v, n); }

  void accumulate_at(std::byte* a0, const T* v, int64_t n) {
    if (w_.inner == static_cast<int64_t>(sizeof(Acc))) {
      Acc* __restrict a = reinterpret_cast<Acc*>(a0);
#pragma omp simd
      for (int64_t k = 0; k < n; ++k) a[k] = R::step(a[k], v[k]);
      return;
    }
    for (int64_t k = 0; k < n; ++k) {
      Acc* a = reinterpret_cast<Acc*>(a0 + k * w_.inner);
      *a = R::step(*a, v[k]);
    }
  }

  AccWalk w_;
  bool lanes_mode_;
  Acc single_;
  Acc lanes_[kFoldLanes];
};

/// One box: a sub-shape of the (permuted) loop with its base pointers.
struct Box {
  Shape shape;
  std::array<std::byte*, TileProgram::kMaxInputs> in{};
  std::byte* acc = nullptr;
};

class CompositeReduceCpuKernel final : public Kernel {
 public:
  explicit CompositeReduceCpuKernel(const Apply& node)
      : op_(static_cast<const CompositeReduce&>(*node.op)),
        prog_(op_.name(), op_, {}, TileProgram::scalar_inputs(node)),
        bc_(node) {}

  void run(const KernelArgs& args) override {
    reduce_detail::dispatch_reduce_kind(op_.kind, [&](auto kind) {
      constexpr ReduceKind K = decltype(kind)::value;
      if constexpr (K == ReduceKind::Sum || K == ReduceKind::Prod || K == ReduceKind::Max || K == ReduceKind::Min) {
        if (op_.dtype == DType::Float32)
          run_typed<K, float>(args);
        else
          run_typed<K, double>(args);
      } else {
        HYP_ASSERT(false, op_.name(), ": unsupported reduction");
      }
    });
  }

 private:
  template <ReduceKind K, class T>
  void run_typed(const KernelArgs& args) {
    using R = Reducer<K, T>;
    using Acc = typename R::Acc;
    const Shape shape = elemwise_broadcast_shape(op_, args.in, bc_);
    const Shape out_shape = reduce_detail::reduced_shape(shape, op_.axes);
    if ((K == ReduceKind::Max || K == ReduceKind::Min) && out_shape.prod() > 0 &&
        reduce_detail::reduced_count(shape, op_.axes) == 0)
      fail<ValueError>(op_.name(), ": zero-size array to reduction operation ",
                       K == ReduceKind::Max ? "maximum" : "minimum", " which has no identity (shape ", shape.str(),
                       ")");
    NDArray& out = prepare_output(*args.out[0], out_shape, op_.out_dtype);
    const bool direct = dtype_of<Acc>() == op_.out_dtype;
    NDArray& acc = direct ? out : prepare_output(scratch_, out_shape, dtype_of<Acc>());
    Acc* accp = acc.data<Acc>();
    std::fill(accp, accp + acc.size(), R::init());
    if (shape.prod() > 0) reduce_all<K, T>(args, shape, acc);
    if (!direct) out.assign(acc);
  }

  /// The loop's dims in the memory order of the input with the most non-broadcast dims.
  std::vector<int> dim_order(const KernelArgs& args, const Shape& shape) const {
    int primary = 0, best = -1;
    for (int i = 0; i < op_.nin; ++i) {
      int full = 0;
      for (int d = 0; d < shape.size(); ++d) full += shape[d] > 1 && args.in[i]->shape(d) == shape[d];
      if (full > best) {
        best = full;
        primary = i;
      }
    }
    const NDArray& p = *args.in[primary];
    auto stride = [&](int d) { return p.shape(d) == shape[d] ? std::llabs(p.strides()[d]) : 0; };
    std::vector<int> order(shape.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return stride(a) > stride(b); });
    return order;
  }

  template <ReduceKind K, class T>
  void reduce_all(const KernelArgs& args, const Shape& shape, NDArray& acc) {
    using R = Reducer<K, T>;
    using Acc = typename R::Acc;
    const int nd = shape.size(), nin = op_.nin;
    const std::vector<int> order = dim_order(args, shape);
    // Permuted shape and strides: operand 0 the accumulator, 1.. the inputs.
    Shape sh;
    Strides acc_st;
    std::array<Strides, TileProgram::kMaxInputs> in_st{};
    std::vector<bool> kept;
    {
      std::vector<int64_t> full(nd, 0);
      int64_t s = sizeof(Acc);
      for (int d = nd - 1; d >= 0; --d)
        if (!std::binary_search(op_.axes.begin(), op_.axes.end(), d)) {
          full[d] = s;
          s *= shape[d];
        }
      for (int d : order) {
        sh.push_back(shape[d]);
        acc_st.push_back(full[d]);
        kept.push_back(!std::binary_search(op_.axes.begin(), op_.axes.end(), d));
        for (int i = 0; i < nin; ++i) {
          const NDArray& a = *args.in[i];
          in_st[i].push_back(a.shape(d) == shape[d] ? a.strides()[d] : 0);
        }
      }
    }
    Box whole{sh, {}, acc.raw()};
    for (int i = 0; i < nin; ++i) whole.in[i] = args.in[i]->raw();

    const int nt = parallel_worth(shape.prod()) ? parallel_threads() : 1;
    const int64_t n_out = acc.size();
    // Where to cut: the outermost dim long enough (boxes stay contiguous), giving each thread its
    // own outputs when that dim is kept, private accumulators otherwise; with too many outputs
    // for private copies, the longest kept dim.
    int split = -1;
    bool priv = false;
    if (nt > 1) {
      int outer = -1, kd = -1;
      for (int d = 0; d < nd; ++d) {
        if (outer < 0 && sh[d] >= nt) outer = d;
        if (kept[d] && (kd < 0 || sh[d] > sh[kd])) kd = d;
      }
      if (outer < 0)
        for (int d = 0; d < nd; ++d)
          if (outer < 0 || sh[d] > sh[outer]) outer = d;
      if (kept[outer]) {
        split = outer;
      } else if (n_out <= kMaxPrivateOutputs) {
        split = outer;
        priv = true;
      } else {
        split = kd;
      }
    }
    // A few boxes per thread (private accumulators: at most two per thread, since each is
    // combined at the end).
    const int64_t tasks =
        priv ? std::min<int64_t>(parallel_task_count(shape.prod(), nt), 2 * nt) : parallel_task_count(shape.prod(), nt);
    const int chunks = split < 0 ? 1 : static_cast<int>(std::min<int64_t>(tasks, sh[split]));
    if (chunks <= 1) return run_box<K, T>(whole, acc_st, in_st);

    std::vector<Acc> part(priv ? static_cast<size_t>(chunks) * n_out : 0, R::init());
    auto box_of = [&](int c) {
      const int64_t b = sh[split] * c / chunks, e = sh[split] * (c + 1) / chunks;
      Box box = whole;
      box.shape[split] = e - b;
      for (int i = 0; i < nin; ++i) box.in[i] += b * in_st[i][split];
      box.acc = priv ? reinterpret_cast<std::byte*>(part.data() + c * n_out) : whole.acc + b * acc_st[split];
      return box;
    };
    parallel_for(chunks, nt, [&](int64_t c) { run_box<K, T>(box_of(static_cast<int>(c)), acc_st, in_st); });
    if (!priv) return;
    Acc* a = acc.data<Acc>();
    for (int c = 0; c < chunks; ++c)
      for (int64_t i = 0; i < n_out; ++i) a[i] = R::combine(a[i], part[c * n_out + i]);
  }

  template <ReduceKind K, class T>
  void run_box(const Box& box, const Strides& acc_st, const std::array<Strides, TileProgram::kMaxInputs>& in_st) const {
    if (box.shape.prod() == 0) return;
    Folder<K, T> folder(AccWalk(box.shape, acc_st, box.acc));
    if (op_.nin <= 2) return walk<2, K, T>(box, in_st, folder);
    if (op_.nin <= 4) return walk<4, K, T>(box, in_st, folder);
    return walk<TileProgram::kMaxInputs, K, T>(box, in_st, folder);
  }

  template <int M, ReduceKind K, class T>
  void walk(const Box& box, const std::array<Strides, TileProgram::kMaxInputs>& in_st, Folder<K, T>& folder) const {
    std::array<const Strides*, M> sp;
    std::array<std::byte*, M> b;
    for (int k = 0; k < M; ++k) {
      sp[k] = &in_st[k];
      b[k] = box.in[k];
    }
    const TileProgram& prog = prog_;
    const int nin = op_.nin;
    TileProgram::Buffers& buf = TileProgram::scratch();
    StridedLoop<M>(box.shape, sp)
        .run(b, [&](const std::array<std::byte*, M>& p, const std::array<int64_t, M>& s, int64_t n) {
          std::array<const std::byte*, TileProgram::kMaxInputs> in{};
          for (int64_t off = 0; off < n; off += TileProgram::kTile) {
            const int64_t m = std::min<int64_t>(TileProgram::kTile, n - off);
            for (int i = 0; i < nin; ++i) in[i] = p[i] + off * s[i];
            prog.eval(in.data(), s.data(), nullptr, nullptr, m, buf);
            folder.consume(prog.result<T>(buf), m);
          }
        });
  }

  const CompositeReduce& op_;
  TileProgram prog_;
  BroadcastPattern bc_;
  NDArray scratch_;
};

}  // namespace

void register_composite_reduce_cpu_kernel() {
  register_kernel(kCpuBackend, typeid(CompositeReduce), [](const Apply& node) -> std::unique_ptr<Kernel> {
    return std::make_unique<CompositeReduceCpuKernel>(node);
  });
}

}  // namespace hypatia
