// Reference kernels of the reduce family: naive loops over multi-indices (the test oracle).
#include <algorithm>
#include <vector>

#include "hypatia/backends/reference/reduce_common.h"

namespace hypatia::reduce_detail {

NDArray reduce_input(const Reduce& op, const NDArray& x) {
  if (op.dtype == reduce_default_dtype(op.kind, x.dtype()) || op.dtype == x.dtype()) return x;
  return x.astype(op.dtype);
}

Shape reduced_shape(const Shape& shape, const std::vector<int>& axes) {
  Shape out;
  for (int d = 0; d < shape.size(); ++d)
    if (!std::binary_search(axes.begin(), axes.end(), d)) out.push_back(shape[d]);
  return out;
}

int64_t reduced_count(const Shape& shape, const std::vector<int>& axes) {
  int64_t n = 1;
  for (int a : axes) n *= shape[a];
  return n;
}

void check_identity(const Reduce& op, const NDArray& x) {
  if (op.kind != ReduceKind::Max && op.kind != ReduceKind::Min) return;
  if (reduced_count(x.shape(), op.axes) == 0 && reduced_shape(x.shape(), op.axes).prod() > 0)
    fail<ValueError>(op.name(), ": zero-size array to reduction operation ",
                     op.kind == ReduceKind::Max ? "maximum" : "minimum", " which has no identity (input ", x.describe(),
                     ")");
}

void check_arg_reduce_input(const ArgReduce& op, const NDArray& x) {
  std::vector<int> moved;
  if (op.axis)
    moved = {*op.axis};
  else
    for (int d = 0; d < x.ndim(); ++d) moved.push_back(d);
  if (reduced_count(x.shape(), moved) == 0 && reduced_shape(x.shape(), moved).prod() > 0)
    fail<ValueError>(op.name(), ": attempt to get ", op.is_max ? "argmax" : "argmin", " of an empty sequence (input ",
                     x.describe(), ")");
}

DType cum_dtype(const CumOp& op, DType in) {
  return reduce_default_dtype(op.is_mul ? ReduceKind::Prod : ReduceKind::Sum, in);
}

namespace {

/// Address of element `flat` (C order over a's shape) of a.
std::byte* element(const NDArray& a, int64_t flat) {
  std::byte* p = a.raw();
  for (int d = a.ndim() - 1; d >= 0; --d) {
    p += (flat % a.shape(d)) * a.strides()[d];
    flat /= a.shape(d);
  }
  return p;
}

/// x viewed with the axes in `moved` last (in order), the others first.
NDArray move_axes_last(const NDArray& x, const std::vector<int>& moved) {
  std::vector<int> perm;
  for (int d = 0; d < x.ndim(); ++d)
    if (std::find(moved.begin(), moved.end(), d) == moved.end()) perm.push_back(d);
  perm.insert(perm.end(), moved.begin(), moved.end());
  return x.transpose(perm);
}

}  // namespace

void reduce_reference(const Reduce& op, const KernelArgs& args) {
  const NDArray& x0 = *args.in[0];
  check_identity(op, x0);
  NDArray x = reduce_input(op, x0);
  Shape out_shape = reduced_shape(x.shape(), op.axes);
  NDArray& out = prepare_output(*args.out[0], out_shape, op.dtype);
  const int64_t n_out = out_shape.prod();
  const int64_t n_red = reduced_count(x.shape(), op.axes);
  NDArray xt = move_axes_last(x, op.axes);
  dispatch_reduce_kind(op.kind, [&](auto kind) {
    dispatch_dtype(x.dtype(), [&](auto t) {
      using In = decltype(t);
      using R = Reducer<decltype(kind)::value, In>;
      using Acc = typename R::Acc;
      NDArray acc = NDArray::empty(out_shape, dtype_of<Acc>());
      for (int64_t o = 0; o < n_out; ++o) {
        Acc v = R::init();
        for (int64_t r = 0; r < n_red; ++r) v = R::step(v, *reinterpret_cast<const In*>(element(xt, o * n_red + r)));
        acc.data<Acc>()[o] = v;
      }
      out.assign(acc);
    });
  });
}

void arg_reduce_reference(const ArgReduce& op, const KernelArgs& args) {
  const NDArray& x = *args.in[0];
  check_arg_reduce_input(op, x);
  std::vector<int> moved;
  if (op.axis)
    moved = {*op.axis};
  else
    for (int d = 0; d < x.ndim(); ++d) moved.push_back(d);
  Shape out_shape = reduced_shape(x.shape(), moved);
  NDArray& out = prepare_output(*args.out[0], out_shape, DType::Int64);
  const int64_t n_out = out_shape.prod();
  const int64_t n = reduced_count(x.shape(), moved);
  NDArray xt = move_axes_last(x, moved);
  dispatch_dtype(x.dtype(), [&](auto t) {
    using In = decltype(t);
    for (int64_t o = 0; o < n_out; ++o) {
      int64_t best = 0;
      In bv = *reinterpret_cast<const In*>(element(xt, o * n));
      for (int64_t i = 1; i < n; ++i) {
        if constexpr (std::is_floating_point_v<In>)
          if (std::isnan(bv)) break;
        In v = *reinterpret_cast<const In*>(element(xt, o * n + i));
        bool better = op.is_max ? v > bv : v < bv;
        if constexpr (std::is_floating_point_v<In>) better = better || std::isnan(v);
        if (better) {
          best = i;
          bv = v;
        }
      }
      out.data<int64_t>()[o] = best;
    }
  });
}

void cum_op_reference(const CumOp& op, const KernelArgs& args) {
  const NDArray& x = *args.in[0];
  NDArray& out = prepare_output(*args.out[0], x.shape(), cum_dtype(op, x.dtype()));
  NDArray xt = move_axes_last(x, {op.axis});
  NDArray ot = move_axes_last(out, {op.axis});
  const int64_t n = x.shape(op.axis);
  const int64_t rows = n == 0 ? 0 : x.size() / n;
  dispatch_dtype(x.dtype(), [&](auto t) {
    using In = decltype(t);
    using Acc = SumAcc<In>;
    dispatch_dtype(out.dtype(), [&](auto u) {
      using Out = decltype(u);
      for (int64_t r = 0; r < rows; ++r) {
        Acc acc = op.is_mul ? Acc(1) : Acc(0);
        for (int64_t k = 0; k < n; ++k) {
          int64_t i = op.reverse ? n - 1 - k : k;
          Acc v = static_cast<Acc>(*reinterpret_cast<const In*>(element(xt, r * n + i)));
          acc = op.is_mul ? acc * v : acc + v;
          *reinterpret_cast<Out*>(element(ot, r * n + i)) = static_cast<Out>(acc);
        }
      }
    });
  });
}

}  // namespace hypatia::reduce_detail
