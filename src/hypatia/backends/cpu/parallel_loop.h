// Runs a StridedLoop's runs, on OpenMP threads above config().openmp_elemwise_minsize elements:
// the outer runs are split among threads, or, when there are fewer runs than threads (a long
// flat array), each run is cut into chunks. body(p, s, n) processes n elements from pointers p
// with byte strides s.
#pragma once
#include <omp.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <span>

#include "hypatia/core/config.h"
#include "hypatia/core/ndarray.h"
#include "hypatia/core/strided_loop.h"

namespace hypatia {

template <int M, class Body>
void run_strided_parallel(const StridedLoop<M>& loop, const std::array<std::byte*, M>& b, int64_t total,
                          const Body& body) {
  if (loop.empty()) return;
  const Config& cfg = config();
  if (total < cfg.openmp_elemwise_minsize) return loop.run(b, body);
  const int nt = cfg.num_threads > 0 ? cfg.num_threads : omp_get_max_threads();
  if (nt <= 1) return loop.run(b, body);
  const int64_t outer = loop.outer_size();
  if (outer >= nt) {
#pragma omp parallel for num_threads(nt) schedule(static)
    for (int t = 0; t < nt; ++t) loop.run(b, body, outer * t / nt, outer * (t + 1) / nt);
    return;
  }
  // Long runs go out in chunks of at least 256K elements, up to 8 per thread, taken dynamically:
  // a thread slowed by other load (a busy neighbour on a VM) takes fewer. On the 16M six-op chain
  // (2-core VM) the median of 10 runs went from 1.37x to 1.29x a memcpy with static halves.
  const int64_t len = loop.inner_size();
  const int64_t split = std::clamp<int64_t>(len * outer / (int64_t{nt} << 18), 1, 8);
  const int64_t per_run = (nt * split + outer - 1) / outer;
  const int64_t tasks = outer * per_run;
#pragma omp parallel for num_threads(nt) schedule(dynamic, 1)
  for (int64_t t = 0; t < tasks; ++t) {
    const int64_t r = t / per_run, c = t % per_run;
    // Chunk bounds at multiples of 16 elements keep every chunk's vectors as aligned as the
    // arrays.
    const int64_t lo = c == 0 ? 0 : len * c / per_run / 16 * 16;
    const int64_t hi = c + 1 == per_run ? len : len * (c + 1) / per_run / 16 * 16;
    if (hi <= lo) continue;
    loop.run(
        b,
        [&](const std::array<std::byte*, M>& p, const std::array<int64_t, M>& s, int64_t) {
          std::array<std::byte*, M> q;
          for (int k = 0; k < M; ++k) q[k] = p[k] + lo * s[k];
          body(q, s, hi - lo);
        },
        r, r + 1);
  }
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

  /// run_strided_parallel over the first M operands.
  template <int M, class Body>
  void run_parallel(const Shape& shape, const Body& body) const {
    std::array<const Strides*, M> sp;
    std::array<std::byte*, M> b;
    for (int k = 0; k < M; ++k) {
      sp[k] = &strides[k];
      b[k] = base[k];
    }
    run_strided_parallel<M>(StridedLoop<M>(shape, sp), b, shape.prod(), body);
  }
};

}  // namespace hypatia
