// Runs a StridedLoop's runs on the thread pool (backends/cpu/thread_pool.h) above
// config().openmp_elemwise_minsize elements: the work is cut into tasks of whole runs, or, when
// there are fewer runs than tasks (a long flat array), each run is cut into pieces; the tasks are
// claimed dynamically, so a thread slowed by other load takes fewer. body(p, s, n) processes n
// elements from pointers p with byte strides s.
#pragma once
#include <algorithm>
#include <array>
#include <cstddef>
#include <span>

#include "hypatia/backends/cpu/thread_pool.h"
#include "hypatia/core/ndarray.h"
#include "hypatia/core/strided_loop.h"

namespace hypatia {

/// `cost`: the work of one element against an add's (scalar_op_cost): the threshold goes by
/// total * cost, so an expensive loop threads at fewer elements.
template <int M, class Body>
void run_strided_parallel(const StridedLoop<M>& loop, const std::array<std::byte*, M>& b, int64_t total,
                          const Body& body, int64_t cost = 1) {
  if (loop.empty()) return;
  const int64_t work = parallel_work(total, cost);
  if (!parallel_worth(work)) return loop.run(b, body);
  const int nt = parallel_threads();
  // Tasks by elements, not work: a task costs about a microsecond to hand out (claim, timing,
  // dispatch), which 16 tasks of a 20 us exp over 230K float32 showed (1.5x slower than 2).
  const int64_t tasks = parallel_task_count(total, nt);
  const int64_t outer = loop.outer_size();
  if (outer >= tasks) {
    parallel_for(tasks, nt, [&](int64_t t) { loop.run(b, body, outer * t / tasks, outer * (t + 1) / tasks); });
    return;
  }
  const int64_t len = loop.inner_size();
  const int64_t per_run = (tasks + outer - 1) / outer;
  parallel_for(outer * per_run, nt, [&](int64_t t) {
    const int64_t r = t / per_run, c = t % per_run;
    // Piece bounds at multiples of 16 elements keep every piece's vectors as aligned as the
    // arrays.
    const int64_t lo = c == 0 ? 0 : len * c / per_run / 16 * 16;
    const int64_t hi = c + 1 == per_run ? len : len * (c + 1) / per_run / 16 * 16;
    if (hi <= lo) return;
    loop.run(
        b,
        [&](const std::array<std::byte*, M>& p, const std::array<int64_t, M>& s, int64_t) {
          std::array<std::byte*, M> q;
          for (int k = 0; k < M; ++k) q[k] = p[k] + lo * s[k];
          body(q, s, hi - lo);
        },
        r, r + 1);
  });
}

/// The operands of a broadcasting elementwise loop: operand 0 is the output, operands 1.. the
/// inputs with stride 0 on the dims where they have length 1 and the output does not.
template <size_t K>
struct BroadcastOperands {
  std::array<Strides, K> strides;
  std::array<std::byte*, K> base{};

  BroadcastOperands(const NDArray& out, std::span<const NDArray* const> in) {
    strides[0] = out.strides();
    base[0] = out.raw();
    for (size_t i = 0; i < in.size(); ++i) {
      const NDArray& a = *in[i];
      strides[i + 1] = a.strides();
      for (int d = 0; d < out.ndim(); ++d)
        if (a.shape(d) != out.shape(d)) strides[i + 1][d] = 0;
      base[i + 1] = a.raw();
    }
  }

  /// run_strided_parallel over the first M operands, the axes in the output's memory order
  /// (sort_axes_by_first: the elements are independent).
  template <int M, class Body>
  void run_parallel(const Shape& shape, const Body& body, int64_t cost = 1) const {
    Shape sh = shape;
    std::array<Strides, M> st;
    std::array<const Strides*, M> sp;
    std::array<std::byte*, M> b;
    for (int k = 0; k < M; ++k) {
      st[k] = strides[k];
      sp[k] = &st[k];
      b[k] = base[k];
    }
    sort_axes_by_first(sh, st, M);
    run_strided_parallel<M>(StridedLoop<M>(sh, sp), b, sh.prod(), body, cost);
  }
};

}  // namespace hypatia
