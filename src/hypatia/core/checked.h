// Overflow-checked integer arithmetic for sizes and indices. Every shape product, byte count, sum
// of lengths and slice length that user values can push past int64 goes through these, so that a
// huge request becomes a clear error instead of a wrapped (small, zero or negative) size.
#pragma once
#include <cstdint>
#include <limits>
#include <optional>

namespace hypatia {

/// a + b, or nullopt when the sum does not fit in int64.
inline std::optional<int64_t> checked_add(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) return std::nullopt;
  return r;
}

/// a - b, or nullopt when the difference does not fit in int64.
inline std::optional<int64_t> checked_sub(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_sub_overflow(a, b, &r)) return std::nullopt;
  return r;
}

/// a * b, or nullopt when the product does not fit in int64.
inline std::optional<int64_t> checked_mul(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) return std::nullopt;
  return r;
}

/// Python's floor division a // b (b != 0), or nullopt for INT64_MIN // -1.
inline std::optional<int64_t> checked_floor_div(int64_t a, int64_t b) {
  if (b == -1 && a == std::numeric_limits<int64_t>::min()) return std::nullopt;
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

/// A slice step as Python's slice.indices sees it: INT64_MIN acts as -INT64_MAX (so that -step
/// fits), which selects the same elements of any array.
inline int64_t clamp_slice_step(int64_t step) {
  return step < -std::numeric_limits<int64_t>::max() ? -std::numeric_limits<int64_t>::max() : step;
}

/// Python's slice.indices(n) for any int64 start, stop and step != 0: `start`/`stop` (absent
/// when not given) become the first index and the end bound on an axis of length n >= 0, and the
/// result is the number of elements the slice takes. Never overflows.
inline int64_t slice_indices(int64_t n, const std::optional<int64_t>& start, const std::optional<int64_t>& stop,
                             int64_t step, int64_t* first, int64_t* end) {
  step = clamp_slice_step(step);
  const int64_t lower = step > 0 ? 0 : -1, upper = step > 0 ? n : n - 1;
  auto clamp = [&](const std::optional<int64_t>& v, int64_t dflt) {
    if (!v) return dflt;
    // v + n cannot overflow: v < 0 <= n.
    const int64_t x = *v < 0 ? *v + n : *v;
    return x < lower ? lower : (x > upper ? upper : x);
  };
  const int64_t a = clamp(start, step > 0 ? 0 : n - 1), b = clamp(stop, step > 0 ? n : -1);
  *first = a;
  *end = b;
  // a and b lie in [-1, n], so b - a - 1 and a - b - 1 fit; (d - 1) / s + 1 is ceil(d / s) without
  // the d + s - 1 that overflows for a huge step.
  if (step > 0) return b > a ? (b - a - 1) / step + 1 : 0;
  return a > b ? (a - b - 1) / -step + 1 : 0;
}

/// The length of a slice (Python's len(range(n)[start:stop:step])) on an axis of length n.
inline int64_t slice_length(int64_t n, const std::optional<int64_t>& start, const std::optional<int64_t>& stop,
                            int64_t step) {
  int64_t a, b;
  return slice_indices(n, start, stop, step, &a, &b);
}

}  // namespace hypatia
