// CPU kernels of the reduce family: one strided pass over the input in memory order, with
// vectorizable inner loops (a contiguous run folded into one accumulator, or accumulated into a
// contiguous row of accumulators) and OpenMP threads above a size threshold.
#include <omp.h>

#include <algorithm>
#include <cstdlib>
#include <numeric>
#include <vector>

#include "hypatia/backends/reference/reduce_common.h"
#include "hypatia/core/config.h"
#include "hypatia/core/strided_loop.h"

namespace hypatia::reduce_detail {
namespace {

/// Folds n elements of q (byte stride `stride`) into v.
template <ReduceKind K, class In, class Acc>
Acc fold_run(Acc v, const std::byte* q, int64_t stride, int64_t n) {
  using R = Reducer<K, In>;
  if (stride == static_cast<int64_t>(sizeof(In))) {
    const In* p = reinterpret_cast<const In*>(q);
    if constexpr (K == ReduceKind::Sum) {
#pragma omp simd reduction(+ : v)
      for (int64_t i = 0; i < n; ++i) v += static_cast<Acc>(p[i]);
    } else if constexpr (K == ReduceKind::Prod) {
#pragma omp simd reduction(* : v)
      for (int64_t i = 0; i < n; ++i) v *= static_cast<Acc>(p[i]);
    } else if constexpr ((K == ReduceKind::Max || K == ReduceKind::Min) && !std::is_floating_point_v<In>) {
      if constexpr (K == ReduceKind::Max) {
#pragma omp simd reduction(max : v)
        for (int64_t i = 0; i < n; ++i) v = p[i] > v ? p[i] : v;
      } else {
#pragma omp simd reduction(min : v)
        for (int64_t i = 0; i < n; ++i) v = p[i] < v ? p[i] : v;
      }
    } else {
      for (int64_t i = 0; i < n; ++i) v = R::step(v, p[i]);
    }
    return v;
  }
  for (int64_t i = 0; i < n; ++i, q += stride) v = R::step(v, *reinterpret_cast<const In*>(q));
  return v;
}

/// acc[i] = step(acc[i], x[i]) over n elements.
template <ReduceKind K, class In, class Acc>
void accumulate_run(std::byte* a, int64_t sa, const std::byte* q, int64_t sq, int64_t n) {
  using R = Reducer<K, In>;
  if (sa == static_cast<int64_t>(sizeof(Acc)) && sq == static_cast<int64_t>(sizeof(In))) {
    Acc* __restrict acc = reinterpret_cast<Acc*>(a);
    const In* __restrict p = reinterpret_cast<const In*>(q);
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) acc[i] = R::step(acc[i], p[i]);
    return;
  }
  for (int64_t i = 0; i < n; ++i, a += sa, q += sq)
    *reinterpret_cast<Acc*>(a) = R::step(*reinterpret_cast<Acc*>(a), *reinterpret_cast<const In*>(q));
}

int max_threads() { return config().num_threads > 0 ? config().num_threads : omp_get_max_threads(); }

/// Reduces x (any strides) over `axes` into acc, a C-contiguous array of the kept shape.
template <ReduceKind K, class In>
void reduce_into(const NDArray& x, const std::vector<int>& axes, const NDArray& acc) {
  using R = Reducer<K, In>;
  using Acc = typename R::Acc;
  const int nd = x.ndim();
  const int64_t n_out = acc.size();
  Acc* accp = acc.data<Acc>();
  std::fill(accp, accp + n_out, R::init());
  if (x.size() == 0) return;

  // The accumulator seen through x's index space: stride 0 on reduced axes.
  Strides acc_str;
  {
    int64_t s = sizeof(Acc);
    std::vector<int64_t> st(nd, 0);
    for (int d = nd - 1; d >= 0; --d)
      if (!std::binary_search(axes.begin(), axes.end(), d)) {
        st[d] = s;
        s *= x.shape(d);
      }
    acc_str = Strides(std::span<const int64_t>(st));
  }
  // Walk x in memory order: largest stride outermost, so the inner run is the smallest stride.
  std::vector<int> order(nd);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return std::llabs(x.strides()[a]) > std::llabs(x.strides()[b]); });
  Shape shape;
  Strides xs, as;
  std::vector<bool> kept;
  for (int d : order) {
    shape.push_back(x.shape(d));
    xs.push_back(x.strides()[d]);
    as.push_back(acc_str[d]);
    kept.push_back(!std::binary_search(axes.begin(), axes.end(), d));
  }
  const int threads = x.size() >= config().openmp_elemwise_minsize ? max_threads() : 1;

  auto inner = [](const std::array<std::byte*, 2>& p, const std::array<int64_t, 2>& s, int64_t n) {
    if (s[0] == 0) {
      Acc* a = reinterpret_cast<Acc*>(p[0]);
      *a = fold_run<K, In, Acc>(*a, p[1], s[1], n);
    } else {
      accumulate_run<K, In, Acc>(p[0], s[0], p[1], s[1], n);
    }
  };

  if (n_out == 1) {
    StridedLoop<1> loop(shape, {&xs});
    const int64_t runs = loop.outer_size();
    auto fold = [&](Acc& v, int64_t begin, int64_t end) {
      loop.run(
          {x.raw()},
          [&v](const std::array<std::byte*, 1>& p, const std::array<int64_t, 1>& s, int64_t n) {
            v = fold_run<K, In, Acc>(v, p[0], s[0], n);
          },
          begin, end);
    };
    if (threads <= 1) {
      Acc v = R::init();
      fold(v, 0, runs);
      accp[0] = v;
      return;
    }
    // One cache line per thread's partial result.
    struct alignas(64) Slot {
      Acc v;
    };
    std::vector<Slot> part(threads, Slot{R::init()});
    if (runs >= threads) {
#pragma omp parallel for num_threads(threads) schedule(static)
      for (int t = 0; t < threads; ++t) fold(part[t].v, runs * t / threads, runs * (t + 1) / threads);
    } else {
      // Few long runs (a contiguous array is one run): split each run across the threads.
      loop.run({x.raw()}, [&](const std::array<std::byte*, 1>& p, const std::array<int64_t, 1>& s, int64_t n) {
#pragma omp parallel for num_threads(threads) schedule(static)
        for (int t = 0; t < threads; ++t) {
          int64_t b = n * t / threads, e = n * (t + 1) / threads;
          part[t].v = fold_run<K, In, Acc>(part[t].v, p[0] + b * s[0], s[0], e - b);
        }
      });
    }
    Acc v = R::init();
    for (const Slot& pv : part) v = R::combine(v, pv.v);
    accp[0] = v;
    return;
  }

  // Split the kept axis with the largest extent across threads: each thread owns its outputs.
  int split = -1;
  for (int d = 0; d < nd; ++d)
    if (kept[d] && (split < 0 || shape[d] > shape[split])) split = d;
  const int chunks = threads <= 1 ? 1 : static_cast<int>(std::min<int64_t>(threads, shape[split]));
  if (chunks <= 1) {
    StridedLoop<2> loop(shape, {&as, &xs});
    loop.run({acc.raw(), x.raw()}, inner);
    return;
  }
#pragma omp parallel for num_threads(chunks) schedule(static)
  for (int c = 0; c < chunks; ++c) {
    const int64_t b = shape[split] * c / chunks, e = shape[split] * (c + 1) / chunks;
    Shape sub = shape;
    sub[split] = e - b;
    StridedLoop<2> loop(sub, {&as, &xs});
    loop.run({acc.raw() + b * as[split], x.raw() + b * xs[split]}, inner);
  }
}

template <class In>
void arg_reduce_last_axis(const ArgReduce& op, const NDArray& x, NDArray& out, int64_t rows, int64_t n) {
  // x is C-contiguous, viewed as (rows, n).
  const In* base = x.data<In>();
  int64_t* o = out.data<int64_t>();
  const int threads = x.size() >= config().openmp_elemwise_minsize ? max_threads() : 1;
#pragma omp parallel for num_threads(threads) schedule(static) if (threads > 1)
  for (int64_t r = 0; r < rows; ++r) {
    const In* p = base + r * n;
    int64_t best = 0;
    In bv = p[0];
    bool stop = false;
    if constexpr (std::is_floating_point_v<In>) stop = std::isnan(bv);
    for (int64_t i = 1; i < n && !stop; ++i) {
      In v = p[i];
      if constexpr (std::is_floating_point_v<In>) {
        if (std::isnan(v)) {
          best = i;
          break;
        }
      }
      if (op.is_max ? v > bv : v < bv) {
        best = i;
        bv = v;
      }
    }
    o[r] = best;
  }
}

}  // namespace

void reduce_cpu(const Reduce& op, const KernelArgs& args) {
  const NDArray& x0 = *args.in[0];
  check_identity(op, x0);
  NDArray x = reduce_input(op, x0);
  Shape out_shape = reduced_shape(x.shape(), op.axes);
  NDArray& out = prepare_output(*args.out[0], out_shape, op.dtype);
  dispatch_reduce_kind(op.kind, [&](auto kind) {
    dispatch_dtype(x.dtype(), [&](auto t) {
      using In = decltype(t);
      constexpr ReduceKind K = decltype(kind)::value;
      using Acc = typename Reducer<K, In>::Acc;
      if (dtype_of<Acc>() == op.dtype) {
        reduce_into<K, In>(x, op.axes, out);
      } else {
        NDArray acc = NDArray::empty(out_shape, dtype_of<Acc>());
        reduce_into<K, In>(x, op.axes, acc);
        out.assign(acc);
      }
    });
  });
}

void arg_reduce_cpu(const ArgReduce& op, const KernelArgs& args) {
  const NDArray& x = *args.in[0];
  const bool last = !op.axis || *op.axis == x.ndim() - 1;
  if (!last || !x.is_c_contiguous() || x.size() == 0) {
    arg_reduce_reference(op, args);
    return;
  }
  check_arg_reduce_input(op, x);
  Shape out_shape = op.axis ? reduced_shape(x.shape(), {*op.axis}) : Shape{};
  NDArray& out = prepare_output(*args.out[0], out_shape, DType::Int64);
  const int64_t n = op.axis ? x.shape(*op.axis) : x.size();
  dispatch_dtype(x.dtype(), [&](auto t) { arg_reduce_last_axis<decltype(t)>(op, x, out, x.size() / n, n); });
}

}  // namespace hypatia::reduce_detail
