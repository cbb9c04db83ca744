// Accumulation rules shared by the reduction kernels (reference and CPU): accumulator types,
// identities and steps per ReduceKind, and the run-time to compile-time dispatch.
#pragma once
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "hypatia/backends/registry.h"
#include "hypatia/core/ndarray.h"
#include "hypatia/ops/reduce.h"

namespace hypatia::reduce_detail {

/// Sums and products accumulate floats in double and integers in wrapping uint64 arithmetic
/// (two's complement: the low bits equal numpy's wrapping int64 result).
template <class In>
using SumAcc = std::conditional_t<std::is_floating_point_v<In>, double, uint64_t>;

template <ReduceKind K, class In>
struct Reducer;

template <class In>
struct Reducer<ReduceKind::Sum, In> {
  using Acc = SumAcc<In>;
  static Acc init() { return Acc(0); }
  static Acc step(Acc a, In x) { return a + static_cast<Acc>(x); }
  static Acc combine(Acc a, Acc b) { return a + b; }
};

template <class In>
struct Reducer<ReduceKind::Prod, In> {
  using Acc = SumAcc<In>;
  static Acc init() { return Acc(1); }
  static Acc step(Acc a, In x) { return a * static_cast<Acc>(x); }
  static Acc combine(Acc a, Acc b) { return a * b; }
};

template <class In>
struct Reducer<ReduceKind::ProdWithoutZeros, In> {
  using Acc = SumAcc<In>;
  static Acc init() { return Acc(1); }
  static Acc step(Acc a, In x) { return x == In(0) ? a : a * static_cast<Acc>(x); }
  static Acc combine(Acc a, Acc b) { return a * b; }
};

/// The lowest value of In (-inf for floats): the identity of max.
template <class In>
constexpr In lowest_value() {
  if constexpr (std::is_floating_point_v<In>)
    return -std::numeric_limits<In>::infinity();
  else
    return std::numeric_limits<In>::lowest();
}
template <class In>
constexpr In highest_value() {
  if constexpr (std::is_floating_point_v<In>)
    return std::numeric_limits<In>::infinity();
  else
    return std::numeric_limits<In>::max();
}

template <class In>
struct Reducer<ReduceKind::Max, In> {
  using Acc = In;
  static Acc init() { return lowest_value<In>(); }
  /// NaN propagates (numpy): a NaN x (x != x) replaces the accumulator, a NaN accumulator stays.
  static Acc step(Acc a, In x) {
    if constexpr (std::is_floating_point_v<In>)
      return (x > a || x != x) ? x : a;
    else
      return x > a ? x : a;
  }
  static Acc combine(Acc a, Acc b) { return step(a, b); }
};

template <class In>
struct Reducer<ReduceKind::Min, In> {
  using Acc = In;
  static Acc init() { return highest_value<In>(); }
  static Acc step(Acc a, In x) {
    if constexpr (std::is_floating_point_v<In>)
      return (x < a || x != x) ? x : a;
    else
      return x < a ? x : a;
  }
  static Acc combine(Acc a, Acc b) { return step(a, b); }
};

template <class In>
struct Reducer<ReduceKind::All, In> {
  using Acc = bool;
  static Acc init() { return true; }
  static Acc step(Acc a, In x) { return a && x != In(0); }
  static Acc combine(Acc a, Acc b) { return a && b; }
};

template <class In>
struct Reducer<ReduceKind::Any, In> {
  using Acc = bool;
  static Acc init() { return false; }
  static Acc step(Acc a, In x) { return a || x != In(0); }
  static Acc combine(Acc a, Acc b) { return a || b; }
};

/// Calls f(std::integral_constant<ReduceKind, k>{}).
template <class F>
decltype(auto) dispatch_reduce_kind(ReduceKind k, F&& f) {
  using RK = ReduceKind;
  switch (k) {
    case RK::Sum:
      return f(std::integral_constant<RK, RK::Sum>{});
    case RK::Prod:
      return f(std::integral_constant<RK, RK::Prod>{});
    case RK::Max:
      return f(std::integral_constant<RK, RK::Max>{});
    case RK::Min:
      return f(std::integral_constant<RK, RK::Min>{});
    case RK::All:
      return f(std::integral_constant<RK, RK::All>{});
    case RK::Any:
      return f(std::integral_constant<RK, RK::Any>{});
    case RK::ProdWithoutZeros:
      return f(std::integral_constant<RK, RK::ProdWithoutZeros>{});
  }
  __builtin_unreachable();
}

/// The input a reduction kernel works on: x itself, or x cast to the op's dtype when the op asks
/// for a dtype other than the default one (numpy casts each element first: sum(int8, dtype=int8)
/// wraps in int8).
NDArray reduce_input(const Reduce& op, const NDArray& x);
/// Output shape of reducing `axes` of `shape`.
Shape reduced_shape(const Shape& shape, const std::vector<int>& axes);
/// Number of elements combined into each output element.
int64_t reduced_count(const Shape& shape, const std::vector<int>& axes);
/// Throws ValueError for max/min over a zero-length axis when the output is not empty.
void check_identity(const Reduce& op, const NDArray& x);
/// Throws ValueError when an ArgReduce would look for the extreme of an empty sequence.
void check_arg_reduce_input(const ArgReduce& op, const NDArray& x);
/// Output dtype of a cumulative op on input dtype `in`.
DType cum_dtype(const CumOp& op, DType in);

/// Reference (naive) kernels: the test oracle.
void reduce_reference(const Reduce& op, const KernelArgs& args);
void arg_reduce_reference(const ArgReduce& op, const KernelArgs& args);
void cum_op_reference(const CumOp& op, const KernelArgs& args);
/// CPU kernels: threaded, vectorizable inner loops.
void reduce_cpu(const Reduce& op, const KernelArgs& args);
void arg_reduce_cpu(const ArgReduce& op, const KernelArgs& args);
void cum_op_cpu(const CumOp& op, const KernelArgs& args);

}  // namespace hypatia::reduce_detail
