// Runs a StridedLoop's runs, on OpenMP threads above config().openmp_elemwise_minsize elements:
// the outer runs are split among threads, or, when there are fewer runs than threads (a long
// flat array), each run is cut into chunks. body(p, s, n) processes n elements from pointers p
// with byte strides s.
#pragma once
#include <omp.h>

#include <array>
#include <cstddef>

#include "hypatia/core/config.h"
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
  const int64_t per_run = (nt + outer - 1) / outer;
  const int64_t tasks = outer * per_run;
  const int64_t len = loop.inner_size();
#pragma omp parallel for num_threads(nt) schedule(static)
  for (int64_t t = 0; t < tasks; ++t) {
    const int64_t r = t / per_run, c = t % per_run;
    const int64_t lo = len * c / per_run, hi = len * (c + 1) / per_run;
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

}  // namespace hypatia
